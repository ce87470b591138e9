"""Shared machinery of the conversions from the standard dialects to the xDSL `llvm` dialect.

The passes `convert-arith-to-llvm`, `convert-math-to-llvm`, `convert-memref-to-llvm`,
`convert-vector-to-llvm` and `convert-cf-to-llvm` follow MLIR's *partial conversion* model, so
that they can run in any order:

* **Type conversion** (`convert_type`). `index` becomes `i64`; a static, identity-layout memref
  becomes a bare pointer, `!llvm.ptr<space>` (memory space 5, private, becomes a plain
  `!llvm.ptr`: private buffers are `llvm.alloca`s); 1-d vectors, signless integers, floats and
  llvm types stay as they are (vectors of `index` become vectors of `i64`). Everything else has
  no LLVM equivalent here, and a pass that meets it reports a `PassFailure`.
* **Boundary casts.** Each pass converts its own ops. An operand produced by an op that is not
  converted yet is cast into its llvm type with `builtin.unrealized_conversion_cast`, and a
  result whose type changes is cast back for the users that are not converted yet
  (`OpLowering`). When the operand is itself such a cast of an llvm value (a kernel's
  `!llvm.ptr` parameter cast to a memref at entry, the result of an op converted earlier), the
  llvm value is used directly. `reconcile-unrealized-casts` removes the pairs that cancel once
  everything is converted; each pass already folds the round trips it creates and erases dead
  casts (`remove_redundant_casts`), so that its own output stays readable. A pass that converts
  every op of its dialect (`converts_all`: convert-arith-to-llvm) hands a result to the users it
  converts later in llvm type directly, and casts it back only for the others.
* **Cost.** The conversions build thousands of ops in a large kernel (the fp16 MLP's epilogues):
  they insert and replace through the blocks directly rather than through xDSL's notifying
  rewriter, and the ops built most often are built by `Operation.create` (`create`).
* **Scope.** Only ops *inside kernels* are converted: ops nested in a function-like op (an
  `llvm.func`, or a kernel of a higher level) that is not a `func.func`. Host functions
  (`func.func`) allocate buffers and launch kernels for the runtime and stay untouched, and
  so do ops at module level (`memref.global`, ...), which are declarations, not kernel code.
* **Failures.** A pattern that cannot lower an op raises `PassFailure`, before it changes the IR
  where it can; `convert_kernel_ops` stops there and the pass reports it. (It applies the
  patterns itself rather than through xDSL's rewrite driver, which would catch the exception and
  print the whole module into it.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.transforms.analysis.tile_sizes import next_power_of_two

INDEX_TYPE = i64
"""`index` is 64 bits wide on every mlc target (NVPTX64 and the 64-bit CPUs)."""

PRIVATE_MEMORY_SPACE = 5
"""NVVM's number for thread-private memory (3 is shared memory, 1 global)."""

_LLVM_TYPES = (
    llvm.LLVMPointerType,
    llvm.LLVMStructType,
    llvm.LLVMArrayType,
    llvm.LLVMVoidType,
    llvm.LLVMFunctionType,
)

OpT = TypeVar("OpT", bound=Operation)


# ----------------------------------------------------------------------------------------------
# Types


def memory_space(memref_type: MemRefType) -> int | None:
    """The memref's memory space as a number (none is 0), or None if it is not a number."""
    space = memref_type.memory_space
    if isinstance(space, NoneAttr):
        return 0
    if isinstance(space, IntegerAttr):
        return space.value.data
    return None


def pointer_type(memref_type: MemRefType) -> llvm.LLVMPointerType | None:
    """The bare pointer a memref becomes, or None for a memref that cannot be a bare pointer."""
    space = memory_space(memref_type)
    if space is None or not memref_type.has_static_shape() or not isinstance(memref_type.layout, NoneAttr):
        return None
    element_type = convert_type(memref_type.element_type)
    # Elements are loaded and stored one by one: scalars, 1-d vectors or pointers, not aggregates.
    if element_type is None or not isinstance(element_type, IntegerType | AnyFloat | VectorType | llvm.LLVMPointerType):
        return None
    # Private buffers are allocas in the generic address space; NVPTX infers `.local` itself.
    if space in (0, PRIVATE_MEMORY_SPACE):
        return llvm.LLVMPointerType()  # `!llvm.ptr`, which xDSL distinguishes from `!llvm.ptr<0>`
    return llvm.LLVMPointerType(IntAttr(space))


def _is_scalar(type_: Attribute) -> bool:
    if isinstance(type_, IntegerType):
        return type_.signedness.data == Signedness.SIGNLESS
    return isinstance(type_, AnyFloat | IndexType)


def convert_type(type_: Attribute) -> Attribute | None:
    """The llvm type that values of `type_` have after conversion, or None if there is none."""
    if isinstance(type_, IndexType):
        return INDEX_TYPE
    if isinstance(type_, MemRefType):
        return pointer_type(type_)
    if isinstance(type_, VectorType):
        element_type = type_.element_type
        if type_.get_num_dims() != 1 or type_.get_num_scalable_dims() or not _is_scalar(element_type):
            return None
        if isinstance(element_type, IndexType):
            return VectorType(INDEX_TYPE, type_.get_shape())
        return type_
    if _is_scalar(type_) or isinstance(type_, _LLVM_TYPES):
        return type_
    return None


def is_llvm_type(type_: Attribute) -> bool:
    """Whether values of `type_` need no conversion."""
    return convert_type(type_) == type_


def element_type_of(type_: Attribute) -> Attribute:
    return type_.element_type if isinstance(type_, VectorType) else type_


def bit_width(type_: Attribute) -> int:
    """The width of a scalar integer, index or float type."""
    if isinstance(type_, IndexType):
        return INDEX_TYPE.width.data
    if isinstance(type_, IntegerType):
        return type_.width.data
    assert isinstance(type_, AnyFloat)
    return type_.bitwidth


def natural_alignment(type_: Attribute) -> int:
    """The ABI alignment LLVM gives `type_` on mlc's targets, in bytes."""
    if isinstance(type_, VectorType):
        return next_power_of_two(max(1, (bit_width(type_.element_type) * type_.element_count() + 7) // 8))
    if isinstance(type_, llvm.LLVMPointerType):
        return 8
    return next_power_of_two(max(1, (bit_width(type_) + 7) // 8))


def intrinsic_suffix(type_: Attribute) -> str:
    """LLVM's mangling of an overloaded intrinsic's type: `f32`, `i64`, `v4f32`, ..."""
    if isinstance(type_, VectorType):
        return f"v{type_.get_shape()[0]}{intrinsic_suffix(type_.element_type)}"
    if isinstance(type_, IntegerType | IndexType):
        return f"i{bit_width(type_)}"
    if isinstance(type_, AnyFloat) and type_.name == "bf16":
        return "bf16"
    return f"f{bit_width(type_)}"


def with_element_type(type_: Attribute, element_type: Attribute) -> Attribute:
    """`type_` with its (vector) element type replaced."""
    if isinstance(type_, VectorType):
        return VectorType(element_type, type_.get_shape())
    return element_type


# ----------------------------------------------------------------------------------------------
# Scope


def is_in_kernel(op: Operation) -> bool:
    """Whether `op` is kernel code: nested in a function-like op, but not in a `func.func`."""
    parent = op.parent_op()
    if parent is None or isinstance(parent, ModuleOp):
        return False
    while parent is not None:
        if isinstance(parent, func.FuncOp):
            return False
        parent = parent.parent_op()
    return True


class ConversionRewriter(PatternRewriter):
    """The rewriter `convert_kernel_ops` hands the patterns: it knows which ops the pass is still
    going to convert, so that `OpLowering.replace` casts a result back only for other users."""

    def __init__(self, op: Operation, converted_later: Callable[[Operation], bool]):
        super().__init__(op)
        self.converted_later = converted_later


def convert_kernel_ops(
    module: ModuleOp, patterns: Sequence[RewritePattern], dialect: str | None = None, converts_all: bool = False
) -> None:
    """Applies `patterns` once to every op inside a kernel (of `dialect`, when given: the ops the
    patterns convert); raises the first `PassFailure`.

    The patterns produce llvm ops only, which no pattern matches: one walk over the ops there are
    at the start suffices. Offering each pattern only the ops of the pass's dialect, and deciding
    once per block whether it is kernel code, is what keeps this fast: xDSL's rewrite walker
    offered every op of the module to every pattern, after walking up from it to its function.

    `converts_all` promises that the patterns convert every op of `dialect` in a kernel or fail
    the pass (the last one is a `RejectRemainingOps`): a result is then handed to its users of
    `dialect` in llvm type directly, without a cast back that their own conversion would look
    through (most of the casts the conversion of a long arith chain would build and erase)."""
    in_kernel: dict[Block, bool] = {}

    def kernel_block(block: Block, op: Operation) -> bool:
        if block not in in_kernel:
            in_kernel[block] = is_in_kernel(op)
        return in_kernel[block]

    def converted_later(user: Operation) -> bool:
        # An op of the dialect not converted yet: the ops converted so far are llvm ops now.
        block = user.parent
        return converts_all and block is not None and user.dialect_name() == dialect and kernel_block(block, user)

    candidates = [op for op in module.walk() if dialect is None or op.dialect_name() == dialect]
    for op in candidates:
        block = op.parent
        if block is None or not kernel_block(block, op):
            continue  # erased by an earlier rewrite, or host code
        # No DCE: an unused op is converted like any other, never silently dropped.
        rewriter = ConversionRewriter(op, converted_later)
        for pattern in patterns:
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                break
    remove_redundant_casts(module)


def _single_cast_input(value: SSAValue) -> SSAValue | None:
    owner = value.owner
    if isinstance(owner, UnrealizedConversionCastOp) and len(owner.inputs) == 1 and len(owner.outputs) == 1:
        return owner.inputs[0]
    return None


def remove_redundant_casts(module: ModuleOp) -> None:
    """Folds cast round trips (`A -> B -> A`) inside kernels and erases unused casts there."""
    casts = [op for op in module.walk() if isinstance(op, UnrealizedConversionCastOp) and is_in_kernel(op)]
    for cast in casts:
        if len(cast.inputs) != 1 or len(cast.outputs) != 1:
            continue
        source = _single_cast_input(cast.inputs[0])
        if source is not None and source.type == cast.outputs[0].type:
            cast.outputs[0].replace_all_uses_with(source)
    # Users come after their producers: erasing in reverse order also frees the producers.
    for cast in reversed(casts):
        if not any(result.uses for result in cast.results):
            Rewriter.erase_op(cast)


# ----------------------------------------------------------------------------------------------
# Building the replacement of one op


def create(
    op_class: type[OpT],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: dict[str, Attribute] | None = None,
) -> OpT:
    """An op built by `Operation.create`, which sets exactly what it is given: cheaper than the
    op class's own initialiser (IRDL's, which checks and sorts every argument again), for the ops
    a conversion builds by the thousand. The caller passes what that initialiser would set."""
    return op_class.create(operands=operands, result_types=result_types, properties=properties or {})


def unrealized_cast(value: SSAValue, target: Attribute) -> SSAValue:
    """`UnrealizedConversionCastOp.cast_one(value, target)`'s result, built by `create`."""
    result = create(UnrealizedConversionCastOp, [value], [target]).results[0]
    if value.name_hint is not None:
        result.name_hint = value.name_hint
    return result


def cast_to_llvm(value: SSAValue, rewriter: PatternRewriter, insert_point: InsertPoint, op: Operation) -> SSAValue:
    """`value` as an llvm-typed value, inserting a cast at `insert_point` if it is needed.

    `op` is the op being converted; it is named in the failure when `value` has no llvm type.
    """
    target = convert_type(value.type)
    if target is None:
        raise PassFailure(op, f"cannot convert a value of type {value.type} to an LLVM type")
    if target == value.type:
        return value
    source = _single_cast_input(value)
    if source is not None and (
        source.type == target
        # A memref cast from a kernel's pointer parameter: that pointer *is* the buffer, whatever
        # its address space (a kernel may take `!llvm.ptr<1>` for a memref without a space).
        or (isinstance(value.type, MemRefType) and isinstance(source.type, llvm.LLVMPointerType))
    ):
        return source
    result = unrealized_cast(value, target)
    rewriter.insert(result.owner, insert_point)  # type: ignore[arg-type]
    return result


def cast_from_llvm(
    value: SSAValue, original_type: Attribute, rewriter: PatternRewriter, insert_point: InsertPoint
) -> SSAValue:
    """`value` (llvm-typed) as a value of `original_type`, for users not converted yet."""
    if value.type == original_type:
        return value
    source = _single_cast_input(value)
    if source is not None and source.type == original_type:
        return source
    result = unrealized_cast(value, original_type)
    rewriter.insert(result.owner, insert_point)  # type: ignore[arg-type]
    return result


class OpLowering:
    """Builds the llvm replacement of one op, before it: operands cast in, results cast back.

        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operand(op.lhs), lowering.operand(op.rhs)
        lowering.replace([lowering.emit(llvm.AddOp(lhs, rhs)).res])
    """

    def __init__(self, op: Operation, rewriter: PatternRewriter):
        self.op = op
        self.rewriter = rewriter

    def fail(self, reason: str) -> PassFailure:
        return PassFailure(self.op, reason)

    def type(self, type_: Attribute) -> Attribute:
        """The llvm type of `type_`; fails the pass if there is none."""
        converted = convert_type(type_)
        if converted is None:
            raise self.fail(f"cannot convert type {type_} to an LLVM type")
        return converted

    def result_type(self, index: int = 0) -> Attribute:
        return self.type(self.op.results[index].type)

    def operand(self, value: SSAValue) -> SSAValue:
        return cast_to_llvm(value, self.rewriter, InsertPoint.before(self.op), self.op)

    def operands(self) -> list[SSAValue]:
        # Convert every type first, so that a failure leaves the IR untouched.
        for value in self.op.operands:
            self.type(value.type)
        return [self.operand(value) for value in self.op.operands]

    def emit(self, new_op: OpT) -> OpT:
        assert self.op.parent is not None
        self.op.parent.insert_op_before(new_op, self.op)
        self.rewriter.has_done_action = True
        return new_op

    def constant(self, value: int | float, type_: Attribute) -> SSAValue:
        """A constant of scalar or (splat) vector type `type_`, which must be an llvm type."""
        element_type = element_type_of(type_)
        scalar: IntegerAttr | FloatAttr = (
            FloatAttr(float(value), element_type)  # type: ignore[arg-type]
            if isinstance(element_type, AnyFloat)
            else IntegerAttr(int(value), element_type)  # type: ignore[arg-type]
        )
        if isinstance(type_, VectorType):
            dense = DenseIntOrFPElementsAttr.from_list(type_, [scalar.value.data])  # type: ignore[arg-type]
            return self.emit(create(llvm.ConstantOp, [], [type_], {"value": dense})).result
        return self.emit(create(llvm.ConstantOp, [], [type_], {"value": scalar})).result

    def index_constant(self, value: int) -> SSAValue:
        return self.constant(value, INDEX_TYPE)

    def boolean(self, value: bool) -> SSAValue:
        return self.constant(1 if value else 0, i1)

    def replace(self, values: Sequence[SSAValue]) -> None:
        """Replaces the op by `values`, cast back to the op's result types where they differ
        (except for users that the running pass converts later, see `convert_kernel_ops`)."""
        op, rewriter = self.op, self.rewriter
        converted_later = rewriter.converted_later if isinstance(rewriter, ConversionRewriter) else None
        insert_point = InsertPoint.before(op)
        for value, result in zip(values, op.results, strict=True):
            if value.name_hint is None:
                value.name_hint = result.name_hint  # keeps the IR readable across the conversion
            if value.type == result.type:
                result.replace_all_uses_with(value)
                continue
            if converted_later is not None and all(converted_later(use.operation) for use in result.uses):
                result.replace_all_uses_with(value)
                continue
            cast_back = cast_from_llvm(value, result.type, rewriter, insert_point)
            if not cast_back.name_hint:
                cast_back.name_hint = result.name_hint
            result.replace_all_uses_with(cast_back)
        assert op.parent is not None
        op.parent.erase_op(op)
        rewriter.has_done_action = True

    def erase(self) -> None:
        self.rewriter.erase(self.op)


def row_major_strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for dim in range(len(shape) - 2, -1, -1):
        strides[dim] = strides[dim + 1] * shape[dim + 1]
    return strides


def bare_pointer_type(lowering: OpLowering, memref_type: Attribute) -> llvm.LLVMPointerType:
    """The pointer type of a memref operand; fails naming what keeps it from being a bare pointer."""
    if not isinstance(memref_type, MemRefType):
        raise lowering.fail(f"expected a memref, got {memref_type}")
    if not memref_type.has_static_shape():
        raise lowering.fail(f"cannot lower {memref_type}: memrefs must have a static shape")
    if not isinstance(memref_type.layout, NoneAttr):
        raise lowering.fail(f"cannot lower {memref_type}: memrefs must have the identity layout")
    if memory_space(memref_type) is None:
        raise lowering.fail(f"cannot lower {memref_type}: the memory space must be an integer")
    pointer = pointer_type(memref_type)
    if pointer is None:
        raise lowering.fail(f"cannot lower {memref_type}: its element type has no LLVM equivalent")
    return pointer


def element_pointer(lowering: OpLowering, memref: SSAValue, indices: Sequence[SSAValue]) -> SSAValue:
    """The address of `memref[indices]`: a GEP by the row-major linear index, in elements.

    The GEP is `inbounds`: accessing a memref outside its bounds is undefined behaviour anyway.
    """
    memref_type = memref.type
    bare_pointer_type(lowering, memref_type)
    assert isinstance(memref_type, MemRefType)
    element_type = lowering.type(memref_type.element_type)
    for index in indices:
        lowering.type(index.type)
    pointer = lowering.operand(memref)
    if not indices:
        return pointer
    offset: SSAValue | None = None
    for index, stride in zip(indices, row_major_strides(memref_type.get_shape()), strict=True):
        term = lowering.operand(index)
        if stride != 1:
            term = lowering.emit(llvm.MulOp(term, lowering.index_constant(stride))).res
        offset = term if offset is None else lowering.emit(llvm.AddOp(offset, term)).res
    assert offset is not None and isinstance(pointer.type, llvm.LLVMPointerType)
    gep = llvm.GEPOp(
        pointer, [llvm.GEP_USE_SSA_VAL], element_type, ssa_indices=[offset], result_type=pointer.type, inbounds=True
    )
    return lowering.emit(gep).result


@dataclass
class RejectRemainingOps(RewritePattern):
    """The last pattern of a pass: an op of `dialect` that no pattern lowered is an error.

    `reasons` gives a specific explanation for some ops, by name.
    """

    dialect: str
    pass_name: str
    reasons: dict[str, str] = field(default_factory=dict[str, str])

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if op.dialect_name() != self.dialect:
            return
        reason = self.reasons.get(op.name, f"has no lowering to LLVM in {self.pass_name}")
        raise PassFailure(op, reason)


def enclosing_module(op: Operation) -> ModuleOp:
    """The innermost `builtin.module` around `op`: where symbols such as library functions go."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    assert parent is not None, "every op being converted lives in a module"
    return parent
