"""convert-vector-to-llvm: 1-d `vector` ops inside kernels become `llvm` vector operations.

* `vector.load` / `vector.store` on a memref: the address of the first element, as for
  `memref.load` (row-major linear index, `llvm.getelementptr inbounds` on the element type),
  then `llvm.load` / `llvm.store` of the whole vector. The alignment is the op's `alignment`
  attribute when present (the tile-to-loop lowering sets `alignment = 16` on accesses it knows
  to be 16-byte aligned), else the element's natural alignment: a vector access is only known
  to be element-aligned.
  An access with `mlc.cpu_prefetch_bytes = B > 0` (convert-tile-rows-to-cpu's, on the streams of
  elementwise kernels) is preceded by `llvm.prefetch` of the address B bytes further on (a read
  for a load, a write for a store: x86's prefetcht0 / prefetchw), through an `llvm.getelementptr`
  without `inbounds` (the last iterations' prefetches point past the buffer, which a prefetch
  never faults on).
  A `vector.store` with `nontemporal = true` (convert-tile-rows-to-cpu's, `mlc.cpu_store_kind`)
  becomes an `llvm.store` with `nontemporal`: the translation gives it `!nontemporal` and ends
  the function with the `sfence` that orders such stores (`llvm_translate`).
  Vectors of i1 are loaded and stored as vectors of i8 (`llvm.trunc` / `llvm.zext` around the
  access): mlc keeps one byte per boolean in memory, as numpy does, while LLVM packs a
  `<16 x i1>` in memory into 16 bits.
* `vector.extract` / `vector.insert` of one element at a static or dynamic position:
  `llvm.extractelement` / `llvm.insertelement` (position as an `i64`).
* `vector.broadcast` of a scalar: a splat `llvm.mlir.constant` when the scalar is a constant,
  else `llvm.insertelement` into lane 0 of an undef vector and an all-zero `llvm.shufflevector`;
  of a `vector<1xT>`: the shuffle alone; of a vector of the result type: nothing.
* `vector.fma`: `llvm.intr.fma`.
* `vector.reduction`: `llvm.intr.vector.reduce.fadd` / `fmul` for float `add` / `mul` (ordered,
  starting from the accumulator, or from -0.0 / 1.0), and `llvm.vector.reduce.<kind>.v4i32` ...
  through `llvm.call_intrinsic` for the other kinds, combined with the accumulator by the
  matching scalar op.

Preconditions and scope: see `llvm_conversion`. Limits: vectors of rank 1 only (xDSL's
translator has no multi-dimensional vectors); masked and transfer ops, `vector.shuffle`,
`vector.bitcast`, `vector.create_mask` and `vector.print` are refused with a diagnostic (the
tile-to-loop lowering does not produce them).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    VectorType,
    i1,
    i8,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mlc.dialects import attributes, llvm_extra
from mlc.transforms.lowering.llvm_conversion import (
    OpLowering,
    RejectRemainingOps,
    convert_kernel_ops,
    element_pointer,
    intrinsic_suffix,
    natural_alignment,
)


def access_alignment(op: Operation, element_type: Attribute) -> int:
    """The op's `alignment` (a property or a discardable attribute), else the element's."""
    alignment = op.properties.get("alignment") or op.attributes.get("alignment")
    if isinstance(alignment, IntegerAttr):
        return alignment.value.data
    return natural_alignment(element_type)


def _position(lowering: OpLowering, op: vector.ExtractOp | vector.InsertOp) -> SSAValue:
    positions = op.get_mixed_position()
    if len(positions) != 1:
        raise lowering.fail("only one position into a 1-d vector can be lowered")
    (position,) = positions
    if isinstance(position, int):
        return lowering.index_constant(position)
    return lowering.operand(position)


def _is_bool_vector(vector_type: Attribute) -> bool:
    return isinstance(vector_type, VectorType) and vector_type.element_type == i1


def _as_bytes(vector_type: VectorType) -> VectorType:
    """The vector of i8 that holds a vector of i1 in memory, one byte per element."""
    return VectorType(i8, vector_type.get_shape())


PREFETCH_INTRINSIC = "llvm.prefetch.p0"
"""llvm.prefetch(address, read 0 / write 1, locality 3: keep in every cache level, data cache 1)."""


def _prefetch(lowering: OpLowering, op: vector.LoadOp | vector.StoreOp, address: SSAValue, element_type: Attribute, write: bool) -> None:
    """`llvm.prefetch` of the address `mlc.cpu_prefetch_bytes` further on, where the op has it."""
    distance = attributes.CPU_PREFETCH_BYTES.read(op)
    if not isinstance(distance, IntegerAttr) or distance.value.data == 0:
        return
    elements = max(1, distance.value.data // natural_alignment(element_type))
    ahead = lowering.emit(
        llvm.GEPOp(address, [elements], element_type, result_type=address.type)  # type: ignore[arg-type]
    ).result
    flags = [lowering.constant(value, i32) for value in (int(write), 3, 1)]
    lowering.emit(llvm.CallIntrinsicOp(PREFETCH_INTRINSIC, [ahead, *flags], []))


class LoadLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.LoadOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        address = element_pointer(lowering, op.base, op.indices)
        alignment = access_alignment(op, lowering.type(op.result.type.element_type))
        _prefetch(lowering, op, address, lowering.type(op.result.type.element_type), write=False)
        if _is_bool_vector(result_type):
            load = lowering.emit(llvm.LoadOp(address, _as_bytes(result_type), alignment=alignment))
            lowering.replace([lowering.emit(llvm.TruncOp(load.dereferenced_value, result_type)).res])
            return
        load = lowering.emit(llvm.LoadOp(address, result_type, alignment=alignment))
        lowering.replace([load.dereferenced_value])


class StoreLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.StoreOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        vector_type = lowering.type(op.vector.type)
        assert isinstance(vector_type, VectorType)
        address = element_pointer(lowering, op.base, op.indices)
        value = lowering.operand(op.vector)
        alignment = access_alignment(op, vector_type.element_type)
        _prefetch(lowering, op, address, vector_type.element_type, write=True)
        if _is_bool_vector(vector_type):
            value = lowering.emit(llvm.ZExtOp(value, _as_bytes(vector_type))).res
        nontemporal = op.nontemporal is not None and bool(op.nontemporal.value.data)
        lowering.emit(llvm.StoreOp(value, address, alignment=alignment, nontemporal=nontemporal))
        lowering.erase()


class ExtractLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ExtractOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        lowering.result_type()
        source = lowering.operand(op.vector)
        if op.result.type == op.vector.type:
            lowering.replace([source])
            return
        position = _position(lowering, op)
        lowering.replace([lowering.emit(llvm_extra.ExtractElementOp(source, position)).res])


class InsertLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.InsertOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        lowering.result_type()
        value = lowering.operand(op.source)
        if op.source.type == op.dest.type:
            lowering.replace([value])
            return
        destination = lowering.operand(op.dest)
        position = _position(lowering, op)
        lowering.replace([lowering.emit(llvm.InsertElementOp(destination, value, position)).res])


def _constant_scalar(value: SSAValue) -> IntegerAttr | FloatAttr | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp | llvm.ConstantOp) and isinstance(owner.value, IntegerAttr | FloatAttr):
        return owner.value
    return None


class BroadcastLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.BroadcastOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        assert isinstance(result_type, VectorType)
        lanes = result_type.get_shape()[0]
        source_type = lowering.type(op.source.type)
        if source_type == result_type:
            lowering.replace([lowering.operand(op.source)])
            return
        if isinstance(source_type, VectorType):
            if source_type.get_shape() != (1,):
                raise lowering.fail(f"cannot broadcast {op.source.type} to {op.vector.type}")
            source = lowering.operand(op.source)
            splat = llvm.ShuffleVectorOp(source, source, DenseArrayBase.from_list(i32, [0] * lanes), result_type)
            lowering.replace([lowering.emit(splat).res])
            return
        scalar = lowering.operand(op.source)
        constant = _constant_scalar(op.source) or _constant_scalar(scalar)
        if constant is not None:
            dense = DenseIntOrFPElementsAttr.from_list(result_type, [constant.value.data])  # type: ignore[arg-type]
            lowering.replace([lowering.emit(llvm.ConstantOp(dense, result_type)).result])
            return
        undef = lowering.emit(llvm.UndefOp(result_type)).res
        first = lowering.emit(llvm.InsertElementOp(undef, scalar, lowering.index_constant(0))).res
        splat = llvm.ShuffleVectorOp(first, undef, DenseArrayBase.from_list(i32, [0] * lanes), result_type)
        lowering.replace([lowering.emit(splat).res])


class FmaLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.FMAOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs, accumulator = lowering.operands()
        lowering.replace([lowering.emit(llvm.FMAOp(lhs, rhs, accumulator)).res])


# vector.reduction kinds other than float add / mul: LLVM's reduction intrinsic, and how the
# accumulator is combined with its result.
_REDUCTIONS: dict[str, tuple[str, str]] = {
    "add": ("add", "add"),
    "mul": ("mul", "mul"),
    "and": ("and", "and"),
    "or": ("or", "or"),
    "xor": ("xor", "xor"),
    "minsi": ("smin", "llvm.smin"),
    "maxsi": ("smax", "llvm.smax"),
    "minui": ("umin", "llvm.umin"),
    "maxui": ("umax", "llvm.umax"),
    "minnumf": ("fmin", "minnum"),
    "maxnumf": ("fmax", "maxnum"),
    "minimumf": ("fminimum", "llvm.minimum"),
    "maximumf": ("fmaximum", "llvm.maximum"),
}

_INTEGER_COMBINERS: dict[str, type[llvm.ArithmeticBinOperation | llvm.ArithmeticBinOpOverflow]] = {
    "add": llvm.AddOp,
    "mul": llvm.MulOp,
    "and": llvm.AndOp,
    "xor": llvm.XOrOp,
}


def _combine(lowering: OpLowering, combiner: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    """`lhs <combiner> rhs` on scalars."""
    if combiner in _INTEGER_COMBINERS:
        return lowering.emit(_INTEGER_COMBINERS[combiner](lhs, rhs)).results[0]
    if combiner == "or":
        return lowering.emit(llvm.OrOp(lhs, rhs)).res
    if combiner == "maxnum":
        return lowering.emit(llvm.VectorFMaxOp(lhs, rhs)).res
    if combiner == "minnum":
        return lowering.emit(llvm.VectorFMinOp(lhs, rhs)).res
    call = lowering.emit(llvm.CallIntrinsicOp(f"{combiner}.{intrinsic_suffix(lhs.type)}", [lhs, rhs], [lhs.type]))
    assert call.ress is not None
    return call.ress


class ReductionLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ReductionOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        operands = lowering.operands()
        source, accumulator = operands[0], (operands[1] if len(operands) > 1 else None)
        kind = op.kind.data.value
        if isinstance(result_type, AnyFloat) and kind in ("add", "mul"):
            # Ordered reductions from the accumulator; -0.0 and 1.0 are the neutral starts.
            neutral = -0.0 if kind == "add" else 1.0
            start = accumulator if accumulator is not None else lowering.constant(neutral, result_type)
            reduce_class = llvm.VectorReduceFAddOp if kind == "add" else llvm.VectorReduceFMulOp
            lowering.replace([lowering.emit(reduce_class(start, source)).res])
            return
        if kind not in _REDUCTIONS:
            raise lowering.fail(f"cannot lower a '{kind}' reduction of {op.vector.type}")
        intrinsic, combiner = _REDUCTIONS[kind]
        name = f"llvm.vector.reduce.{intrinsic}.{intrinsic_suffix(source.type)}"
        call = lowering.emit(llvm.CallIntrinsicOp(name, [source], [result_type]))
        assert call.ress is not None
        result = call.ress
        if accumulator is not None:
            result = _combine(lowering, combiner, accumulator, result)
        lowering.replace([result])


@dataclass(frozen=True)
class ConvertVectorToLLVM(ModulePass):
    """Lower 1-d vector ops inside kernels (loads, stores, element access, broadcasts) to llvm ops.

    Vector loads and stores use the op's `alignment` attribute when it has one.
    """

    name = "convert-vector-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_kernel_ops(
            op,
            [
                LoadLowering(),
                StoreLowering(),
                ExtractLowering(),
                InsertLowering(),
                BroadcastLowering(),
                FmaLowering(),
                ReductionLowering(),
                RejectRemainingOps("vector", self.name),
            ],
            dialect="vector",
        )

