"""Translation of mlc's `llvm`-dialect IR into an llvmlite module (mlc's own `mlir-translate`).

`translate_module(module, target)` returns an `llvmlite.ir.Module` with one function per
`llvm.func` and one global variable per `llvm.mlir.global` of `module`. Every other top-level op is
host code (`func.func`, launches, `memref.global`, ...) that the runtime executes itself, and is
skipped.

Algorithm:

1. Globals first, so that `llvm.mlir.addressof` always finds them; then every function is
   declared, so that calls may precede the callee's definition; then the bodies.
2. A body gets one llvmlite block per xDSL block reachable from the entry (blocks that cannot run
   are dropped) and a phi per argument of each non-entry block. Blocks are translated in reverse
   post-order, so every dominating definition is translated before its uses; the phis' incoming
   values are filled in last, from the edges the branches recorded.
3. Each op goes to this module's own handler when it has one, and otherwise to xDSL's
   `convert_op` for the ops that xDSL translates correctly (integer and float arithmetic,
   `icmp`, `select`, `fneg`, aggregate and vector element ops, `unreachable`, masked stores and
   vector reductions). Our handlers replace xDSL's where xDSL 0.74 is wrong or incomplete: GEP
   and `addressof` on opaque pointers in any address space (xDSL bitcasts to typed pointers),
   alignment of globals, loads and stores, the ops of `mlc.dialects.llvm_extra`, intrinsic
   names mangled with their overload types (`llvm.exp.f32`, not `llvm.exp`), calls and
   intrinsics with fast-math flags, casts and constants of every type including `bf16`.

Non-temporal stores. An `llvm.store` with `nontemporal` gets `!nontemporal !{i32 1}` on x86
targets (LLVM emits `vmovntps` for it: one per vector when the store states the vector's size of
alignment, 16-byte ones when it states 16), and every `ret` of a function holding one is preceded
by `call void @llvm.x86.sse.sfence()`: streaming stores are weakly ordered (they bypass the caches
through write-combining buffers and are not ordered with later stores), so without the fence the
runtime's completion signal (the pool's counter, another thread's read of the result, the
caller's) could be seen before the data is in memory. On other targets the hint is dropped (no
fence is emitted for them), so the store stays ordered.

Pointers are opaque (`ptr addrspace(N)`) everywhere, as LLVM 22 requires. For the GPU
(`TargetDescription.gpu`) an `llvm.func` carrying the unit attribute `nvvm.kernel` becomes a
kernel: calling convention `ptx_kernel` and an `nvvm.annotations` `kernel` entry (LLVM 22
accepts both); `nvvm.maxntid`/`nvvm.reqntid` (`array<i32: x, y, z>`) and `nvvm.minctasm`/
`nvvm.maxnreg` (i32) become the matching annotations, which LLVM turns into `.maxntid`,
`.reqntid`, `.minnctapersm` and `.maxnreg`. The module flag `nvvm-reflect-ftz = 0` tells
libdevice not to flush denormals (Triton does the same). On the CPU these attributes are ignored.
Kernels (`nvvm.kernel`, or `mlc.kernel` for the CPU) are entry points that the runtime looks up
by name, so they always get external linkage. LLVM aborts the process (rather than failing) on
intrinsics a target cannot lower, so when the translation feeds code generation every intrinsic
call is first checked by the target's `unsupported_intrinsic` (defined in `nvptx.py`, `cpu.py`).

Preconditions: the module verifies; `index` has been lowered to `i64`; function bodies hold only
`llvm` dialect ops. Limits: no atomics, volatile accesses, `switch`, indirect calls, operand
bundles, allocas outside address space 0, scalable or multi-dimensional vectors, or region
initializers of globals; argument attributes other than those in `_ARGUMENT_FLAGS` and
`_ARGUMENT_INTEGERS` (hints such as `llvm.readonly`) are dropped; cast flags (`nsw`, `nneg`) are
dropped too, which only forgoes optimizations. Each limit is reported as a `TranslationError`
naming the op.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from llvmlite.ir._utils import DuplicatedNameError
from xdsl.backend.llvm.convert_op import convert_op as xdsl_convert_op
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NoneType,
    StringAttr,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import LLVMTranslationException

from mlc.backend.errors import BackendError, TranslationError
from mlc.dialects import attributes, llvm_extra

NVVM_KERNEL = "nvvm.kernel"
MLC_KERNEL = attributes.KERNEL.name
NVVM_REFLECT_FTZ = "nvvm-reflect-ftz"

_NVVM_THREAD_BOUNDS = {"nvvm.maxntid": "maxntid", "nvvm.reqntid": "reqntid"}
_NVVM_INTEGER_ANNOTATIONS = {"nvvm.minctasm": "minctasm", "nvvm.maxnreg": "maxnreg"}
_NVVM_ATTRIBUTES = (NVVM_KERNEL, *_NVVM_THREAD_BOUNDS, *_NVVM_INTEGER_ANNOTATIONS)

_MODULE_FLAG_OVERRIDE = 4  # llvm::Module::Override: this module's value wins when linking

_ARGUMENT_FLAGS = {
    "llvm.noalias": "noalias",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.nocapture": "captures(none)",
    "llvm.nofree": "nofree",
    "llvm.signext": "signext",
    "llvm.zeroext": "zeroext",
}
_ARGUMENT_INTEGERS = {"llvm.align": "align", "llvm.dereferenceable": "dereferenceable"}

_DECLARATION_LINKAGES = ("external", "extern_weak")


IntrinsicCheck = Callable[[str, ir.Type, Sequence[str]], str | None]
"""(intrinsic name, result type, fast-math flags) → why the target cannot lower it, or None."""


@dataclass(frozen=True)
class TargetDescription:
    """What the translation needs to know of the target machine."""

    triple: str
    data_layout: str
    gpu: bool
    """Whether `nvvm.*` function attributes mark kernels (NVPTX) or are ignored (CPU)."""
    unsupported_intrinsic: IntrinsicCheck | None = None
    """LLVM aborts the whole process on some intrinsics it cannot lower for a target; the
    target's check lets the translation report them as errors instead."""


class UnsupportedTypeError(BackendError):
    """A type has no LLVM counterpart here; the op using it is named by the caller."""


class BFloatType(ir.types._BaseFloatType):
    """LLVM's `bfloat`, which llvmlite 0.50 lacks."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        # LLVM spells bfloat constants as 0xR and the 16 raw bits; round the f32 to nearest even.
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        if value != value:  # NaN: keep it a quiet NaN after truncation
            return "0xR7FC0"
        bits += 0x7FFF + ((bits >> 16) & 1)
        return f"0xR{(bits >> 16) & 0xFFFF:04X}"


BFloatType._create_instance()


def convert_type(type_attr: Attribute) -> ir.Type:
    """The llvmlite type of an xDSL type; pointers are opaque and keep their address space."""
    match type_attr:
        case IntegerType():
            return ir.IntType(type_attr.width.data)
        case Float16Type():
            return ir.HalfType()
        case BFloat16Type():
            return BFloatType()
        case Float32Type():
            return ir.FloatType()
        case Float64Type():
            return ir.DoubleType()
        case llvm.LLVMVoidType() | NoneType():
            return ir.VoidType()
        case llvm.LLVMPointerType():
            return ir.PointerType(addrspace=address_space(type_attr))
        case VectorType():
            if type_attr.get_num_scalable_dims() or type_attr.get_num_dims() != 1:
                raise UnsupportedTypeError(f"type {type_attr} is not a fixed-size 1-d vector")
            return ir.VectorType(convert_type(type_attr.element_type), type_attr.get_shape()[0])
        case llvm.LLVMArrayType():
            return ir.ArrayType(convert_type(type_attr.type), type_attr.size.data)
        case llvm.LLVMStructType():
            return ir.LiteralStructType([convert_type(t) for t in type_attr.types.data])
        case llvm.LLVMFunctionType():
            return ir.FunctionType(
                convert_type(type_attr.output),
                [convert_type(t) for t in type_attr.inputs.data],
                var_arg=type_attr.is_variadic,
            )
        case IndexType():
            raise UnsupportedTypeError("type index cannot be translated; lower index to i64 first")
        case _:
            raise UnsupportedTypeError(f"type {type_attr} has no LLVM IR counterpart")


def address_space(pointer_type: llvm.LLVMPointerType) -> int:
    return pointer_type.addr_space.data if isinstance(pointer_type.addr_space, IntAttr) else 0


def is_kernel(function: llvm.FuncOp) -> bool:
    """Whether `function` is an entry point the runtime launches (GPU) or calls (CPU)."""
    return NVVM_KERNEL in function.attributes or MLC_KERNEL in function.attributes


def intrinsic_type_suffix(type_: ir.Type) -> str:
    """The mangling of an overloaded intrinsic's type: `f32`, `v4f32`, `p3`, `i64`."""
    if isinstance(type_, ir.VectorType):
        return f"v{type_.count}{intrinsic_type_suffix(type_.element)}"
    if isinstance(type_, ir.PointerType):
        return f"p{type_.addrspace}"
    return type_.intrinsic_name


# ---------------------------------------------------------------------------------------------
# Constants


def _scalar(element_type: ir.Type, value: object) -> object:
    if isinstance(element_type, ir.IntType):
        number = int(value)  # type: ignore[call-overload]
        # xDSL stores i1 `true` as -1 (signless); LLVM wants 1 for i1, any sign for wider ints.
        return int(bool(number)) if element_type.width == 1 else number
    return float(value)  # type: ignore[arg-type]


def _shaped_constant(type_: ir.Type, values: Sequence[object]) -> ir.Constant:
    """A constant of `type_` from its elements in row-major order (a splat when one value)."""
    if isinstance(type_, ir.VectorType | ir.ArrayType):
        count = type_.count
        element = type_.element
        inner = _leaf_count(element)
        if len(values) == 1 and count * inner > 1:
            values = list(values) * (count * inner)
        if len(values) != count * inner:
            raise UnsupportedTypeError(f"{len(values)} values cannot initialize {type_}")
        parts = [values[i * inner : (i + 1) * inner] for i in range(count)]
        return ir.Constant(type_, [_shaped_constant(element, part) for part in parts])
    if len(values) != 1:
        raise UnsupportedTypeError(f"{len(values)} values cannot initialize {type_}")
    return ir.Constant(type_, _scalar(type_, values[0]))


def _leaf_count(type_: ir.Type) -> int:
    if isinstance(type_, ir.VectorType | ir.ArrayType):
        return type_.count * _leaf_count(type_.element)
    return 1


def constant(type_: ir.Type, value: Attribute) -> ir.Constant:
    """The constant of `type_` described by an integer, float or dense attribute."""
    if isinstance(value, IntegerAttr | FloatAttr):
        return _shaped_constant(type_, [value.value.data])
    if isinstance(value, DenseIntOrFPElementsAttr):
        return _shaped_constant(type_, list(value.get_values()))
    if isinstance(value, StringAttr) and isinstance(type_, ir.ArrayType):
        raw = value.data.encode("utf-8")
        return ir.Constant(type_, bytearray(raw))
    raise UnsupportedTypeError(f"the attribute {value} cannot become a constant of type {type_}")


# ---------------------------------------------------------------------------------------------
# Module level: globals, declarations, kernel marks


def _translate_global(op: llvm.GlobalOp, module: ir.Module) -> None:
    if op.body.blocks:
        raise TranslationError(op, "initializer regions are not supported; give the global a value attribute")
    space = op.addr_space.value.data
    value_type = convert_type(op.global_type)
    variable = ir.GlobalVariable(module, value_type, op.sym_name.data, addrspace=space)
    # Every use goes through GEP, load and store with explicit types: the global is an opaque
    # pointer (llvmlite would otherwise make it a typed pointer that LLVM 22 rejects in stores).
    variable.type = ir.PointerType(addrspace=space)
    linkage = op.linkage.linkage.data
    variable.linkage = "" if linkage == "external" else linkage  # llvmlite decides declaration or definition
    variable.global_constant = op.constant is not None
    if op.alignment is not None:
        variable.align = op.alignment.value.data
    if op.unnamed_addr is not None and op.unnamed_addr.value.data != 0:
        variable.unnamed_addr = True
    if op.section is not None:
        variable.section = op.section.data
    if op.value is not None:
        variable.initializer = constant(value_type, op.value)
    elif linkage not in _DECLARATION_LINKAGES:
        variable.initializer = ir.Constant(value_type, ir.Undefined)  # shared memory is never initialized


def _declare_function(op: llvm.FuncOp, module: ir.Module, target: TargetDescription) -> None:
    function = ir.Function(module, convert_type(op.function_type), op.sym_name.data)
    linkage = op.linkage.linkage.data
    has_body = bool(op.body.blocks)
    kernel = is_kernel(op)
    if kernel:
        if not has_body:
            raise TranslationError(op, f"kernel @{op.sym_name.data} has no body")
        if not isinstance(op.function_type.output, llvm.LLVMVoidType):
            raise TranslationError(op, f"kernel @{op.sym_name.data} must return void")
        linkage = "external"
    if not has_body and linkage not in _DECLARATION_LINKAGES:
        raise TranslationError(op, f"declaration @{op.sym_name.data} cannot have {linkage} linkage")
    function.linkage = "" if linkage == "external" else linkage
    convention = op.CConv.convention.data
    function.calling_convention = "" if convention == "ccc" else convention
    if op.no_inline is not None:
        function.attributes.add("noinline")
    if op.no_unwind is not None:
        function.attributes.add("nounwind")
    _add_argument_attributes(op, function)
    if target.gpu:
        _mark_nvvm_function(op, function, module)


def _add_argument_attributes(op: llvm.FuncOp, function: ir.Function) -> None:
    if op.arg_attrs is None:
        return
    for argument, argument_attributes in zip(function.args, op.arg_attrs.data):
        for name, value in argument_attributes.data.items():
            if name in _ARGUMENT_FLAGS:
                argument.add_attribute(_ARGUMENT_FLAGS[name])
            elif name in _ARGUMENT_INTEGERS and isinstance(value, IntegerAttr):
                setattr(argument.attributes, _ARGUMENT_INTEGERS[name], value.value.data)


def _mark_nvvm_function(op: llvm.FuncOp, function: ir.Function, module: ir.Module) -> None:
    """Turns the `nvvm.*` attributes of a function into its calling convention and annotations."""
    nvvm = {name: value for name, value in op.attributes.items() if name.startswith("nvvm.")}
    for name in nvvm:
        if name not in _NVVM_ATTRIBUTES:
            known = ", ".join(_NVVM_ATTRIBUTES)
            raise TranslationError(op, f"@{op.sym_name.data} has unknown attribute '{name}' (known: {known})")
    if NVVM_KERNEL not in nvvm:
        if nvvm:
            raise TranslationError(op, f"'{next(iter(nvvm))}' is only allowed on kernels ('{NVVM_KERNEL}')")
        return
    if not isinstance(nvvm[NVVM_KERNEL], UnitAttr):
        raise TranslationError(op, f"'{NVVM_KERNEL}' must be a unit attribute")
    function.calling_convention = "ptx_kernel"
    _annotate(module, function, "kernel", 1)
    for name, annotation in _NVVM_THREAD_BOUNDS.items():
        if name in nvvm:
            for axis, size in zip("xyz", _thread_bounds(op, name, nvvm[name])):
                _annotate(module, function, annotation + axis, size)
    for name, annotation in _NVVM_INTEGER_ANNOTATIONS.items():
        if name in nvvm:
            value = nvvm[name]
            if not isinstance(value, IntegerAttr) or value.value.data <= 0:
                raise TranslationError(op, f"'{name}' must be a positive integer, got {value}")
            _annotate(module, function, annotation, value.value.data)


def _thread_bounds(op: llvm.FuncOp, name: str, value: Attribute) -> tuple[int, int, int]:
    sizes = tuple(value.get_values()) if isinstance(value, DenseArrayBase) else ()
    if not 1 <= len(sizes) <= 3 or any(not isinstance(s, int) or s <= 0 for s in sizes):
        raise TranslationError(
            op, f"'{name}' must be an array of 1 to 3 positive i32, e.g. array<i32: 128, 1, 1>; got {value}"
        )
    padded = tuple(sizes) + (1,) * (3 - len(sizes))
    return padded  # type: ignore[return-value]


def _annotate(module: ir.Module, function: ir.Function, key: str, value: int) -> None:
    # An opaque `ptr @k` reference: llvmlite would print the function's typed pointer type.
    reference = ir.FormattedConstant(ir.PointerType(), function.get_reference())
    entry = [reference, ir.MetaDataString(module, key), ir.Constant(ir.IntType(32), value)]
    module.add_named_metadata("nvvm.annotations", entry)


def _add_module_flag(module: ir.Module, key: str, value: int) -> None:
    i32 = ir.IntType(32)
    flag = [ir.Constant(i32, _MODULE_FLAG_OVERRIDE), ir.MetaDataString(module, key), ir.Constant(i32, value)]
    module.add_named_metadata("llvm.module.flags", flag)


def _check_triple(module: ModuleOp, target: TargetDescription) -> None:
    triple = module.attributes.get("llvm.target_triple")
    if triple is None:
        return
    # Vendor and OS spellings vary ("x86_64-pc-linux-gnu"); the architecture must agree.
    if not isinstance(triple, StringAttr) or triple.data.split("-")[0] != target.triple.split("-")[0]:
        raise TranslationError(module, f"'llvm.target_triple' is {triple}, but the target is '{target.triple}'")


def translate_module(module: ModuleOp, target: TargetDescription) -> ir.Module:
    """Translates the `llvm.func`s and `llvm.mlir.global`s of `module` for `target`."""
    _check_triple(module, target)
    llvm_module = ir.Module(name=module.sym_name.data if module.sym_name else "mlc")
    llvm_module.triple = target.triple
    llvm_module.data_layout = target.data_layout
    globals_ = [op for op in module.ops if isinstance(op, llvm.GlobalOp)]
    functions = [op for op in module.ops if isinstance(op, llvm.FuncOp)]
    for op in [*globals_, *functions]:
        with reported_as(op):
            if isinstance(op, llvm.GlobalOp):
                _translate_global(op, llvm_module)
            else:
                _declare_function(op, llvm_module, target)
    for function in functions:
        if function.body.blocks:
            _FunctionTranslator(function, llvm_module.get_global(function.sym_name.data), target).translate()
    if target.gpu:
        _add_module_flag(llvm_module, NVVM_REFLECT_FTZ, 0)
    return llvm_module


@contextmanager
def reported_as(op: Operation) -> Iterator[None]:
    """Turns type errors and llvmlite's complaints while translating `op` into errors naming `op`."""
    try:
        yield
    except TranslationError:
        raise
    except (UnsupportedTypeError, LLVMTranslationException, NotImplementedError) as error:
        raise TranslationError(op, str(error)) from None
    except DuplicatedNameError as error:
        raise TranslationError(op, f"the symbol {error} is defined twice") from None
    except (TypeError, ValueError) as error:  # llvmlite's checks of operand types
        raise TranslationError(op, f"cannot be translated to LLVM IR: {error}") from None


# ---------------------------------------------------------------------------------------------
# Function bodies


def reverse_post_order(entry: Block) -> list[Block]:
    """The blocks reachable from `entry`, each after all of its dominators."""
    order: list[Block] = []
    visited = {entry}
    stack: list[tuple[Block, Iterator[Block]]] = [(entry, iter(_successors(entry)))]
    while stack:
        block, successors = stack[-1]
        successor = next(successors, None)
        if successor is None:
            order.append(block)
            stack.pop()
        elif successor not in visited:
            visited.add(successor)
            stack.append((successor, iter(_successors(successor))))
    order.reverse()
    return order


def _successors(block: Block) -> Sequence[Block]:
    terminator = block.last_op
    return terminator.successors if terminator is not None else ()


_UNARY_INTRINSICS: dict[type[Operation], str] = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FExpOp: "llvm.exp",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FLogOp: "llvm.log",
    llvm.FLog2Op: "llvm.log2",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FFloorOp: "llvm.floor",
}

_BINARY_INTRINSICS: dict[type[Operation], str] = {
    llvm.FPowOp: "llvm.pow",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
    llvm.FCopySignOp: "llvm.copysign",
}

_CASTS: dict[type[Operation], str] = {
    llvm.TruncOp: "trunc",
    llvm.ZExtOp: "zext",
    llvm.SExtOp: "sext",
    llvm.FPTruncOp: "fptrunc",
    llvm.FPExtOp: "fpext",
    llvm.SIToFPOp: "sitofp",
    llvm.PtrToIntOp: "ptrtoint",
    llvm.IntToPtrOp: "inttoptr",
    llvm.BitcastOp: "bitcast",
    llvm_extra.FPToSIOp: "fptosi",
    llvm_extra.FPToUIOp: "fptoui",
    llvm_extra.UIToFPOp: "uitofp",
    llvm_extra.AddrSpaceCastOp: "addrspacecast",
}

# Ops whose translation in xDSL 0.74 is correct: they only combine already translated values.
_DELEGATED: tuple[type[Operation], ...] = (
    llvm.AddOp,
    llvm.SubOp,
    llvm.MulOp,
    llvm.UDivOp,
    llvm.SDivOp,
    llvm.URemOp,
    llvm.SRemOp,
    llvm.ShlOp,
    llvm.LShrOp,
    llvm.AShrOp,
    llvm.AndOp,
    llvm.OrOp,
    llvm.XOrOp,
    llvm.FAddOp,
    llvm.FSubOp,
    llvm.FMulOp,
    llvm.FDivOp,
    llvm.FRemOp,
    llvm.FNegOp,
    llvm.ICmpOp,
    llvm.SelectOp,
    llvm.ExtractValueOp,
    llvm.InsertValueOp,
    llvm.InsertElementOp,
    llvm.ShuffleVectorOp,
    llvm.UnreachableOp,
    llvm.MaskedStoreOp,
    llvm.VectorReduceFAddOp,
    llvm.VectorReduceFMulOp,
)


def _fast_math(op: Operation) -> list[str]:
    flags = getattr(op, "fastmathFlags", None)
    if not isinstance(flags, llvm.FastMathAttr):
        return []
    return sorted(flag.value for flag in flags.data)


X86_ARCHITECTURES = ("x86_64", "i386", "i686")
"""Triples' architectures whose non-temporal stores are emitted and fenced."""
SFENCE_INTRINSIC = "llvm.x86.sse.sfence"


class _FunctionTranslator:
    """Translates the body of one `llvm.func` into its declared llvmlite function."""

    def __init__(self, op: llvm.FuncOp, function: ir.Function, target: TargetDescription):
        self.op = op
        self.function = function
        self.target = target
        self.module: ir.Module = function.module
        self.values: dict[SSAValue, ir.Value] = {}
        self.blocks: dict[Block, ir.Block] = {}
        self.phi_edges: list[tuple[ir.PhiInstr, SSAValue, ir.Block, Operation]] = []
        self.streams = target.triple.startswith(X86_ARCHITECTURES) and any(
            isinstance(o, llvm.StoreOp) and o.nontemporal is not None for o in op.walk()
        )
        """Whether the function's non-temporal stores are emitted (x86), each `ret` fenced."""

    def translate(self) -> None:
        region_blocks = list(self.op.body.blocks)
        order = reverse_post_order(region_blocks[0])
        reachable = set(order)
        for index, block in enumerate(b for b in region_blocks if b in reachable):
            self.blocks[block] = self.function.append_basic_block("entry" if index == 0 else f"bb{index}")
        for argument, value in zip(region_blocks[0].args, self.function.args):
            self.bind(argument, value)
        for block in order[1:]:
            builder = ir.IRBuilder(self.blocks[block])
            for argument in block.args:
                with reported_as(self.op):
                    self.bind(argument, builder.phi(convert_type(argument.type)))
        for block in order:
            builder = ir.IRBuilder(self.blocks[block])
            for op in block.ops:
                with reported_as(op):
                    self.translate_op(op, builder)
        for phi, value, predecessor, branch in self.phi_edges:
            phi.add_incoming(self.value(value, branch), predecessor)

    def value(self, value: SSAValue, user: Operation) -> ir.Value:
        try:
            return self.values[value]
        except KeyError:
            raise TranslationError(user, "uses a value that is not defined before it in dominance order") from None

    def operands(self, op: Operation) -> list[ir.Value]:
        return [self.value(operand, op) for operand in op.operands]

    def translate_op(self, op: Operation, builder: ir.IRBuilder) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is not None:
            handler(self, op, builder)
        elif type(op) in _CASTS:
            self.cast(op, builder)
        elif type(op) in _UNARY_INTRINSICS or type(op) in _BINARY_INTRINSICS:
            self.math_intrinsic(op, builder)
        elif isinstance(op, _DELEGATED):
            for operand in op.operands:
                self.value(operand, op)  # report undefined operands as ours, not as a KeyError
            xdsl_convert_op(op, builder, self.values)
            for result in op.results:
                self.bind(result, self.values[result])
        elif op.dialect_name() != "llvm":
            raise TranslationError(op, "is not an llvm dialect op; lower it before translating to LLVM IR")
        else:
            raise TranslationError(op, "cannot be translated to LLVM IR (not supported by mlc's translator)")

    def bind(self, value: SSAValue, translated: ir.Value) -> None:
        """Records the translation of `value`, named after it when it is a new instruction."""
        self.values[value] = translated
        if value.name_hint and isinstance(translated, ir.Instruction | ir.Argument):
            translated.name = value.name_hint  # llvmlite makes names unique per function

    def define(self, op: Operation, translated: ir.Value) -> None:
        self.bind(op.results[0], translated)

    # Memory --------------------------------------------------------------------------------

    def load(self, op: llvm.LoadOp, builder: ir.IRBuilder) -> None:
        if op.ordering.value.data != 0:
            raise TranslationError(op, "atomic loads are not supported")
        instruction = builder.load(self.value(op.ptr, op), typ=convert_type(op.dereferenced_value.type))
        if op.alignment is not None:
            instruction.align = op.alignment.value.data
        self.define(op, instruction)

    def store(self, op: llvm.StoreOp, builder: ir.IRBuilder) -> None:
        if op.ordering is not None and op.ordering.value.data != 0:
            raise TranslationError(op, "atomic stores are not supported")
        if op.volatile_ is not None:
            raise TranslationError(op, "volatile stores are not supported")
        instruction = builder.store(self.value(op.value, op), self.value(op.ptr, op))
        if op.alignment is not None:
            instruction.align = op.alignment.value.data
        if self.streams and op.nontemporal is not None:
            instruction.set_metadata("nontemporal", self.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))

    def alloca(self, op: llvm.AllocaOp, builder: ir.IRBuilder) -> None:
        result_type = op.res.type
        if isinstance(result_type, llvm.LLVMPointerType) and address_space(result_type) != 0:
            raise TranslationError(op, "allocas outside address space 0 are not supported")
        instruction = builder.alloca(convert_type(op.elem_type), size=self.value(op.size, op))
        instruction.type = ir.PointerType()  # llvmlite makes a typed pointer
        if op.alignment is not None:
            instruction.align = op.alignment.value.data
        self.define(op, instruction)

    def getelementptr(self, op: llvm.GEPOp, builder: ir.IRBuilder) -> None:
        # Opaque pointers need no bitcast: the source element type travels with the GEP.
        dynamic = iter(op.ssa_indices)
        indices = [
            self.value(next(dynamic), op) if index == llvm.GEP_USE_SSA_VAL else ir.Constant(ir.IntType(32), index)
            for index in op.rawConstantIndices.iter_values()
        ]
        pointer = self.value(op.ptr, op)
        source_type = convert_type(op.elem_type)
        self.define(op, builder.gep(pointer, indices, inbounds=op.inbounds is not None, source_etype=source_type))

    def address_of(self, op: llvm.AddressOfOp, builder: ir.IRBuilder) -> None:
        name = op.global_name.root_reference.data
        symbol = self.module.globals.get(name)
        if symbol is None:
            raise TranslationError(op, f"@{name} is not an llvm.mlir.global or llvm.func of this module")
        if isinstance(symbol, ir.Function):
            # Functions keep their typed pointer type (calls need it): refer to them opaquely.
            symbol = ir.FormattedConstant(ir.PointerType(), symbol.get_reference())
        self.define(op, symbol)

    # Values --------------------------------------------------------------------------------

    def constant(self, op: llvm.ConstantOp, builder: ir.IRBuilder) -> None:
        self.define(op, constant(convert_type(op.result.type), op.value))

    def zero(self, op: llvm.ZeroOp, builder: ir.IRBuilder) -> None:
        self.define(op, ir.Constant(convert_type(op.res.type), None))

    def undef(self, op: llvm.UndefOp, builder: ir.IRBuilder) -> None:
        self.define(op, ir.Constant(convert_type(op.res.type), ir.Undefined))

    def cast(self, op: Operation, builder: ir.IRBuilder) -> None:
        (value,) = self.operands(op)
        self.define(op, getattr(builder, _CASTS[type(op)])(value, convert_type(op.results[0].type)))

    def select(self, op: llvm_extra.SelectOp, builder: ir.IRBuilder) -> None:
        condition, when_true, when_false = self.operands(op)
        self.define(op, builder.select(condition, when_true, when_false))

    def fcmp(self, op: llvm.FCmpOp | llvm_extra.FCmpOp, builder: ir.IRBuilder) -> None:
        predicate = llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value.lstrip("_")
        lhs, rhs = self.operands(op)
        # llvmlite passes a predicate it does not abbreviate ('oeq', 'true', 'uno', ...) through.
        self.define(op, builder.fcmp_ordered(predicate, lhs, rhs, flags=_fast_math(op)))

    def extract_element(self, op: llvm_extra.ExtractElementOp, builder: ir.IRBuilder) -> None:
        self.define(op, builder.extract_element(self.value(op.vector, op), self.value(op.position, op)))

    def inline_asm(self, op: llvm.InlineAsmOp, builder: ir.IRBuilder) -> None:
        arguments = self.operands(op)
        result_type = convert_type(op.res.type) if op.res is not None else ir.VoidType()
        function_type = ir.FunctionType(result_type, [a.type for a in arguments])
        assembly = ir.InlineAsm(
            function_type, op.asm_string.data, op.constraints.data, side_effect=op.has_side_effects is not None
        )
        result = builder.call(assembly, arguments)
        if op.res is not None:
            self.define(op, result)

    # Calls and intrinsics ------------------------------------------------------------------

    def check_intrinsic(self, op: Operation, name: str, result_type: ir.Type) -> None:
        check = self.target.unsupported_intrinsic
        problem = check(name, result_type, _fast_math(op)) if check is not None and name.startswith("llvm.") else None
        if problem is not None:
            raise TranslationError(op, f"calls @{name}, which {problem}")

    def declared(self, op: Operation, name: str, function_type: ir.FunctionType) -> ir.Function:
        """The function `name` of `function_type`, declared now unless it exists already."""
        self.check_intrinsic(op, name, function_type.return_type)
        existing = self.module.globals.get(name)
        if existing is None:
            return ir.Function(self.module, function_type, name)
        if not isinstance(existing, ir.Function):
            raise TranslationError(op, f"@{name} is a global variable, not a function")
        if existing.function_type != function_type:
            raise TranslationError(
                op, f"calls @{name} as '{function_type}', but it is declared as '{existing.function_type}'"
            )
        return existing

    def math_intrinsic(self, op: Operation, builder: ir.IRBuilder) -> None:
        arguments = self.operands(op)
        result_type = convert_type(op.results[0].type)
        base = _UNARY_INTRINSICS.get(type(op)) or _BINARY_INTRINSICS[type(op)]
        name = f"{base}.{intrinsic_type_suffix(result_type)}"
        function = self.declared(op, name, ir.FunctionType(result_type, [a.type for a in arguments]))
        self.define(op, builder.call(function, arguments, fastmath=_fast_math(op)))

    def fma(self, op: llvm.FMAOp, builder: ir.IRBuilder) -> None:
        arguments = self.operands(op)
        result_type = convert_type(op.res.type)
        name = f"llvm.fma.{intrinsic_type_suffix(result_type)}"
        function = self.declared(op, name, ir.FunctionType(result_type, [result_type] * 3))
        self.define(op, builder.call(function, arguments, fastmath=_fast_math(op)))

    def call_intrinsic(self, op: llvm.CallIntrinsicOp, builder: ir.IRBuilder) -> None:
        if op.op_bundle_operands:
            raise TranslationError(op, "operand bundles are not supported")
        arguments = [self.value(a, op) for a in op.args]
        result_type = convert_type(op.ress.type) if op.ress is not None else ir.VoidType()
        # The caller has mangled overloaded names (`llvm.maximum.f32`); LLVM checks the signature.
        function = self.declared(op, op.intrin.data, ir.FunctionType(result_type, [a.type for a in arguments]))
        result = builder.call(function, arguments, fastmath=_fast_math(op))
        if op.ress is not None:
            self.bind(op.ress, result)

    def call(self, op: llvm.CallOp, builder: ir.IRBuilder) -> None:
        if op.callee is None:
            raise TranslationError(op, "indirect calls are not supported")
        if op.op_bundle_operands:
            raise TranslationError(op, "operand bundles are not supported")
        name = op.callee.string_value()
        callee = self.module.globals.get(name)
        if not isinstance(callee, ir.Function):
            raise TranslationError(op, f"@{name} is not an llvm.func of this module")
        self.check_intrinsic(op, name, callee.function_type.return_type)
        arguments = [self.value(a, op) for a in op.args]
        fixed = len(callee.function_type.args)
        if len(arguments) < fixed or (len(arguments) > fixed and not callee.function_type.var_arg):
            raise TranslationError(op, f"passes {len(arguments)} arguments to @{name}, which takes {fixed}")
        convention = op.CConv.convention.data
        tail = op.TailCallKind.data.value
        result = builder.call(
            callee,
            arguments,
            cconv=None if convention == "ccc" else convention,  # None: the callee's own convention
            tail=False if tail == "none" else tail,
            fastmath=_fast_math(op) if op.returned is not None else [],
        )
        if op.returned is not None:
            self.bind(op.returned, result)

    # Control flow --------------------------------------------------------------------------

    def branch_to(self, op: Operation, successor: Block, arguments: Sequence[SSAValue]) -> ir.Block:
        parent = op.parent_block()
        assert parent is not None
        for argument, value in zip(successor.args, arguments):
            phi = self.values[argument]
            assert isinstance(phi, ir.PhiInstr)
            self.phi_edges.append((phi, value, self.blocks[parent], op))
        return self.blocks[successor]

    def br(self, op: llvm.BrOp, builder: ir.IRBuilder) -> None:
        builder.branch(self.branch_to(op, op.successor, op.arguments))

    def cond_br(self, op: llvm.CondBrOp, builder: ir.IRBuilder) -> None:
        if op.then_block is op.else_block and (op.then_arguments or op.else_arguments):
            raise TranslationError(op, "both successors are the same block with arguments; LLVM has one phi per edge")
        then_block = self.branch_to(op, op.then_block, op.then_arguments)
        else_block = self.branch_to(op, op.else_block, op.else_arguments)
        builder.cbranch(self.value(op.cond, op), then_block, else_block)

    def return_(self, op: llvm.ReturnOp, builder: ir.IRBuilder) -> None:
        if self.streams:  # see Non-temporal stores in the module docstring
            builder.call(self.declared(op, SFENCE_INTRINSIC, ir.FunctionType(ir.VoidType(), [])), [])
        if op.arg is not None:
            builder.ret(self.value(op.arg, op))
        else:
            builder.ret_void()


_HANDLERS = {
    llvm.LoadOp: _FunctionTranslator.load,
    llvm.StoreOp: _FunctionTranslator.store,
    llvm.AllocaOp: _FunctionTranslator.alloca,
    llvm.GEPOp: _FunctionTranslator.getelementptr,
    llvm.AddressOfOp: _FunctionTranslator.address_of,
    llvm.ConstantOp: _FunctionTranslator.constant,
    llvm.ZeroOp: _FunctionTranslator.zero,
    llvm.UndefOp: _FunctionTranslator.undef,
    llvm.FCmpOp: _FunctionTranslator.fcmp,
    llvm_extra.FCmpOp: _FunctionTranslator.fcmp,
    llvm_extra.SelectOp: _FunctionTranslator.select,
    llvm_extra.ExtractElementOp: _FunctionTranslator.extract_element,
    llvm.InlineAsmOp: _FunctionTranslator.inline_asm,
    llvm.FMAOp: _FunctionTranslator.fma,
    llvm.CallIntrinsicOp: _FunctionTranslator.call_intrinsic,
    llvm.CallOp: _FunctionTranslator.call,
    llvm.BrOp: _FunctionTranslator.br,
    llvm.CondBrOp: _FunctionTranslator.cond_br,
    llvm.ReturnOp: _FunctionTranslator.return_,
}
