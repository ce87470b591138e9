"""convert-math-to-llvm: `math` ops inside kernels become LLVM intrinsics or library calls.

Option `library`: `libm` (the CPU, the C library's functions) or `libdevice` (NVVM, CUDA's
`__nv_*` functions, linked by the backend).

* **Intrinsics**, on scalars and 1-d vectors: `sqrt absf floor ceil copysign fma` become
  `llvm.intr.sqrt fabs floor ceil copysign fma`; `trunc roundeven ctlz cttz ctpop fpowi` become
  `llvm.call_intrinsic` of `llvm.trunc.f32`, `llvm.roundeven.v4f32`, `llvm.ctlz.i32` (with
  `is_zero_poison = false`, since `math.ctlz` of zero is the bit width), `llvm.powi.f32.i32` ...
  `absi` is computed as `(x xor s) - s` with `s = x >>a (width - 1)`.
* **Library calls**: `exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan atan2 sinh
  cosh tanh asinh acosh atanh erf powf cbrt round` call the library function of the float type:
  `expf` / `exp` for f32 / f64 with libm, `__nv_expf` / `__nv_exp` with libdevice (`powf` is
  `pow`). `rsqrt` calls `__nv_rsqrtf` with libdevice; libm has none, so it is `1 / sqrt(x)`
  computed in f64 and truncated (in f32 the two roundings would be off by up to 2 ulps; the CPU
  pipeline's expand-math-for-cpu takes f32 rsqrt first, as 1 / sqrt in f32 lanes, within the op's
  error bound at half the cost of f64 lanes). Each function is declared once per module as an external `llvm.func`, next to the
  other declarations at the top of the module. f16 and bf16 operands are extended to f32 and the
  result truncated (neither library has half-precision versions); vectors are unrolled per
  element (`llvm.extractelement`, the call, `llvm.insertelement`).

Fast-math flags are dropped (they permit, never require, a transformation, and xDSL's llvmlite
translator rejects them on intrinsic calls). Preconditions and scope: see `llvm_conversion`.
Limits: `math.ipowi` has no LLVM counterpart and is refused; library calls on f80 / f128 are
refused; an existing symbol of a library function's name with another type is an error. The
results of library calls are those of the library, so interpreting the module before and after
this pass agrees up to the library's accuracy (exactly for intrinsics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, ModuleOp, VectorType, f32, f64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable

from mlc.dialects import llvm_extra
from mlc.transforms.lowering.llvm_conversion import (
    OpLowering,
    RejectRemainingOps,
    bit_width,
    convert_kernel_ops,
    element_type_of,
    enclosing_module,
    intrinsic_suffix,
    with_element_type,
)

LIBRARIES = ("libm", "libdevice")

_LIBRARY_FUNCTIONS: dict[type[Operation], str] = {
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.ExpM1Op: "expm1",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.Log10Op: "log10",
    math.Log1pOp: "log1p",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.TanOp: "tan",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AtanOp: "atan",
    math.Atan2Op: "atan2",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.TanhOp: "tanh",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
    math.ErfOp: "erf",
    math.PowFOp: "pow",
    math.CbrtOp: "cbrt",
    math.RoundOp: "round",
}

_CALLED_INTRINSICS: dict[type[Operation], str] = {
    math.TruncOp: "llvm.trunc",
    math.RoundEvenOp: "llvm.roundeven",
    math.CtPopOp: "llvm.ctpop",
    math.CountLeadingZerosOp: "llvm.ctlz",
    math.CountTrailingZerosOp: "llvm.cttz",
}


_REASONS = {"math.ipowi": "cannot lower math.ipowi: LLVM has no integer power"}


def library_function_name(function: str, float_type: Attribute, library: str) -> str:
    """`expf` / `exp` (libm) or `__nv_expf` / `__nv_exp` (libdevice) for f32 / f64."""
    name = function + "f" if isinstance(float_type, Float32Type) else function
    return "__nv_" + name if library == "libdevice" else name


def _declare_function(lowering: OpLowering, name: str, function_type: llvm.LLVMFunctionType) -> None:
    """Declares the external function `name` in the module, unless it is declared already."""
    module = enclosing_module(lowering.op)
    existing = SymbolTable.lookup_symbol(module, name)
    if existing is not None:
        if not isinstance(existing, llvm.FuncOp) or existing.function_type != function_type:
            raise lowering.fail(f"cannot call '{name}': the module defines '{name}' with another type")
        return
    # Declarations go together at the top of the module, in the order of their first use.
    insert_point = InsertPoint.at_start(module.body.block)
    for op in module.body.block.ops:
        if not (isinstance(op, llvm.FuncOp) and not op.body.blocks):
            break
        insert_point = InsertPoint.after(op)
    declaration = llvm.FuncOp(name, function_type, linkage=llvm.LinkageAttr("external"))
    lowering.rewriter.insert(declaration, insert_point)


def _call(lowering: OpLowering, name: str, arguments: Sequence[SSAValue], result_type: Attribute) -> SSAValue:
    function_type = llvm.LLVMFunctionType([a.type for a in arguments], result_type)
    _declare_function(lowering, name, function_type)
    call = lowering.emit(llvm.CallOp(name, *arguments, return_type=result_type))
    assert call.returned is not None
    return call.returned


def _call_intrinsic(lowering: OpLowering, name: str, arguments: Sequence[SSAValue], result_type: Attribute) -> SSAValue:
    call = lowering.emit(llvm.CallIntrinsicOp(name, arguments, [result_type]))
    assert call.ress is not None
    return call.ress


def _scalar_library_call(lowering: OpLowering, function: str, library: str, arguments: Sequence[SSAValue]) -> SSAValue:
    float_type = arguments[0].type
    if isinstance(float_type, Float32Type | Float64Type):
        return _call(lowering, library_function_name(function, float_type, library), arguments, float_type)
    if isinstance(float_type, Float16Type | BFloat16Type):
        extended = [lowering.emit(llvm.FPExtOp(a, f32)).result for a in arguments]
        result = _call(lowering, library_function_name(function, f32, library), extended, f32)
        return lowering.emit(llvm.FPTruncOp(result, float_type)).result
    raise lowering.fail(f"{library} has no '{function}' for {float_type}")


def library_call(lowering: OpLowering, function: str, library: str, arguments: Sequence[SSAValue]) -> SSAValue:
    """Calls the library's `function` on scalars, or on each element of 1-d vectors."""
    vector_type = arguments[0].type
    if not isinstance(vector_type, VectorType):
        return _scalar_library_call(lowering, function, library, arguments)
    result = lowering.emit(llvm.UndefOp(vector_type)).res
    for lane in range(vector_type.get_shape()[0]):
        position = lowering.index_constant(lane)
        elements = [lowering.emit(llvm_extra.ExtractElementOp(a, position)).res for a in arguments]
        value = _scalar_library_call(lowering, function, library, elements)
        result = lowering.emit(llvm.InsertElementOp(result, value, position)).res
    return result


@dataclass
class LibraryCallLowering(RewritePattern):
    library: str

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: math.ExpOp
        | math.Exp2Op
        | math.ExpM1Op
        | math.LogOp
        | math.Log2Op
        | math.Log10Op
        | math.Log1pOp
        | math.SinOp
        | math.CosOp
        | math.TanOp
        | math.AsinOp
        | math.AcosOp
        | math.AtanOp
        | math.Atan2Op
        | math.SinhOp
        | math.CoshOp
        | math.TanhOp
        | math.AsinhOp
        | math.AcoshOp
        | math.AtanhOp
        | math.ErfOp
        | math.PowFOp
        | math.CbrtOp
        | math.RoundOp,
        rewriter: PatternRewriter,
    ) -> None:
        lowering = OpLowering(op, rewriter)
        arguments = lowering.operands()
        lowering.replace([library_call(lowering, _LIBRARY_FUNCTIONS[type(op)], self.library, arguments)])


@dataclass
class RsqrtLowering(RewritePattern):
    library: str

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.RsqrtOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        (operand,) = lowering.operands()
        if self.library == "libdevice":
            lowering.replace([library_call(lowering, "rsqrt", self.library, [operand])])
            return
        # libm has no rsqrt. 1 / sqrt(x) in f64, rounded once to the operand's type, is within
        # half an ulp (plus a double rounding) of the true value; in f32 it would be within two.
        wide_type = with_element_type(operand.type, f64)
        wide = operand if operand.type == wide_type else lowering.emit(llvm.FPExtOp(operand, wide_type)).result
        root = lowering.emit(llvm.FSqrtOp(wide)).res
        one = lowering.constant(1.0, wide_type)
        result = lowering.emit(llvm.FDivOp(one, root)).res
        if result.type != operand.type:
            result = lowering.emit(llvm.FPTruncOp(result, operand.type)).result
        lowering.replace([result])


class IntrinsicLowering(RewritePattern):
    """The math ops that xDSL's llvm dialect has an `llvm.intr.*` op for."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: math.SqrtOp | math.AbsFOp | math.FloorOp | math.CeilOp | math.CopySignOp | math.FmaOp,
        rewriter: PatternRewriter,
    ) -> None:
        lowering = OpLowering(op, rewriter)
        operands = lowering.operands()
        new_op: Operation
        match op:
            case math.SqrtOp():
                new_op = llvm.FSqrtOp(operands[0])
            case math.AbsFOp():
                new_op = llvm.FAbsOp(operands[0], operands[0].type)
            case math.FloorOp():
                new_op = llvm.FFloorOp(operands[0])
            case math.CeilOp():
                new_op = llvm.FCeilOp(operands[0])
            case math.CopySignOp():
                new_op = llvm.FCopySignOp(operands[0], operands[1])
            case math.FmaOp():
                new_op = llvm.FMAOp(operands[0], operands[1], operands[2])
        lowering.replace([lowering.emit(new_op).results[0]])


class CalledIntrinsicLowering(RewritePattern):
    """The math ops that become `llvm.call_intrinsic` (no dedicated op in xDSL)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: math.TruncOp | math.RoundEvenOp | math.CtPopOp | math.CountLeadingZerosOp | math.CountTrailingZerosOp,
        rewriter: PatternRewriter,
    ) -> None:
        lowering = OpLowering(op, rewriter)
        (operand,) = lowering.operands()
        arguments = [operand]
        if isinstance(op, math.CountLeadingZerosOp | math.CountTrailingZerosOp):
            # is_zero_poison = false: counting the zeros of 0 gives the bit width, as math defines.
            arguments.append(lowering.boolean(False))
        name = f"{_CALLED_INTRINSICS[type(op)]}.{intrinsic_suffix(operand.type)}"
        lowering.replace([_call_intrinsic(lowering, name, arguments, operand.type)])


class FPowILowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.FPowIOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        base, exponent = lowering.operands()
        name = f"llvm.powi.{intrinsic_suffix(base.type)}.{intrinsic_suffix(exponent.type)}"
        lowering.replace([_call_intrinsic(lowering, name, [base, exponent], base.type)])


class AbsILowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: math.AbsIOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        (operand,) = lowering.operands()
        width = bit_width(element_type_of(operand.type))
        # s is 0 for x >= 0 and -1 for x < 0, so (x xor s) - s is x or -x (INT_MIN stays INT_MIN).
        sign = lowering.emit(llvm.AShrOp(operand, lowering.constant(width - 1, operand.type))).res
        flipped = lowering.emit(llvm.XOrOp(operand, sign)).res
        lowering.replace([lowering.emit(llvm.SubOp(flipped, sign)).res])


@dataclass(frozen=True)
class ConvertMathToLLVM(ModulePass):
    """Lower math ops inside kernels to LLVM intrinsics and calls of libm or libdevice functions.

    `library=libm` (the CPU) or `library=libdevice` (NVVM) picks the function names.
    """

    name = "convert-math-to-llvm"

    library: str = "libm"

    def __post_init__(self) -> None:
        if self.library not in LIBRARIES:
            raise ValueError(f"library must be one of {', '.join(LIBRARIES)}, got '{self.library}'")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_kernel_ops(
            op,
            [
                LibraryCallLowering(self.library),
                RsqrtLowering(self.library),
                IntrinsicLowering(),
                CalledIntrinsicLowering(),
                FPowILowering(),
                AbsILowering(),
                RejectRemainingOps("math", self.name, _REASONS),
            ],
            dialect="math",
        )

