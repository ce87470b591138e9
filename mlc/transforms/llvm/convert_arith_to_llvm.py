"""convert-arith-to-llvm: `arith` ops inside kernels become `llvm` ops.

Every arith op of xDSL 0.74 is lowered, on scalars and on 1-d vectors alike (where arith allows
vectors). `index` becomes `i64`. The mapping is one op to one op where LLVM has the operation:

    addi subi muli divsi divui remsi remui andi ori xori shli shrsi shrui
        -> add sub mul sdiv udiv srem urem and or xor shl ashr lshr  (overflow flags kept)
    addf subf mulf divf negf -> fadd fsub fmul fdiv fneg              (fast-math flags kept)
    extf truncf extsi extui trunci sitofp uitofp fptosi fptoui
        -> fpext fptrunc sext zext trunc sitofp uitofp fptosi fptoui
    index_cast -> sext / trunc / nothing;  bitcast -> bitcast (or nothing when the types agree)
    cmpi cmpf select constant -> icmp fcmp select mlir.constant  (cmpf false/true: a constant)
    maxnumf minnumf -> llvm.intr.maxnum / minnum                   (NaN-ignoring, like arith)
    maximumf minimumf -> llvm.call_intrinsic "llvm.maximum.f32" / "llvm.minimum.v4f32" ...
    maxsi minsi maxui minui -> icmp + select on scalars; "llvm.smax.v4i32" ... on vectors

and a few ops are expanded:

    ceildivui(a, b)  = udiv(a, b) + (urem(a, b) != 0)
    ceildivsi(a, b)  = sdiv(a, b) + (srem(a, b) != 0 and a, b of the same sign)
    floordivsi(a, b) = sdiv(a, b) - (srem(a, b) != 0 and a, b of opposite signs)
    addui_extended   = add, and the carry as `sum <u lhs`
    mului_extended / mulsi_extended = zext / sext to twice the width, mul, trunc of low and high

The corrections are added as extended i1 values rather than selected, which works the same on
vectors without a vector of i1 (which `arith.cmpi` cannot give in xDSL 0.74).

Preconditions: see `llvm_conversion` for the scope (kernels only) and the casts at the boundary
with unconverted ops; an arith result goes to its arith users without a cast (every arith op in
a kernel is converted, or the pass fails naming it). Limits: `arith.cmpi` / `arith.cmpf` on vectors are refused, because xDSL 0.74
types their result `i1` instead of a vector of `i1`; `arith.truncf` with a rounding mode and
constants stored as resources are refused too. xDSL 0.74 has no `arith.remf`, so there is none
to lower.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp, VectorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from mlc.dialects import llvm_extra
from mlc.transforms.lowering.llvm_conversion import (
    INDEX_TYPE,
    OpLowering,
    RejectRemainingOps,
    bit_width,
    convert_kernel_ops,
    create,
    element_type_of,
    intrinsic_suffix,
    with_element_type,
)

_INTEGER_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}

_FLOAT_BINARY: dict[type[Operation], type[llvm.AbstractFloatArithOp]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}

_CASTS: dict[type[Operation], type[Operation]] = {
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.UIToFPOp: llvm_extra.UIToFPOp,
    arith.FPToSIOp: llvm_extra.FPToSIOp,
    arith.FPToUIOp: llvm_extra.FPToUIOp,
}

# arith.max* / min* on integers: the predicate that selects the left operand, and the intrinsic
# used on vectors.
_INTEGER_MIN_MAX: dict[type[Operation], tuple[str, str]] = {
    arith.MaxSIOp: ("sgt", "llvm.smax"),
    arith.MinSIOp: ("slt", "llvm.smin"),
    arith.MaxUIOp: ("ugt", "llvm.umax"),
    arith.MinUIOp: ("ult", "llvm.umin"),
}

_NAN_PROPAGATING_MIN_MAX: dict[type[Operation], str] = {
    arith.MaximumfOp: "llvm.maximum",
    arith.MinimumfOp: "llvm.minimum",
}


def _icmp(lowering: OpLowering, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    flag = IntegerAttr(llvm.ICmpPredicateFlag(predicate).to_int(), 64)
    return lowering.emit(llvm.ICmpOp(lhs, rhs, flag)).res


_NO_OVERFLOW_FLAGS = IntegerAttr(0, 32)


def _overflow_flags(op: Operation) -> IntegerAttr:  # the llvm op's property, as its initialiser sets it
    flags = op.properties.get("overflowFlags")
    if not isinstance(flags, arith.IntegerOverflowAttr) or not flags.data:
        return _NO_OVERFLOW_FLAGS
    return IntegerAttr(llvm.OverflowAttr([llvm.OverflowFlag(flag.value) for flag in flags.data]).to_int(), 32)


class ConstantLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        value = op.value
        converted: Attribute
        if isinstance(value, IntegerAttr):
            converted = IntegerAttr(value.value.data, INDEX_TYPE) if isinstance(value.type, IndexType) else value
        elif isinstance(value, FloatAttr):
            converted = value
        elif isinstance(value, DenseIntOrFPElementsAttr) and isinstance(result_type, VectorType):
            values = list(value.get_values())
            converted = DenseIntOrFPElementsAttr.from_list(result_type, values)  # type: ignore[arg-type]
        else:
            raise lowering.fail(f"cannot lower a constant {value} to LLVM")
        lowering.replace([lowering.emit(create(llvm.ConstantOp, [], [result_type], {"value": converted})).result])


class IntegerBinaryLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.AddiOp
        | arith.SubiOp
        | arith.MuliOp
        | arith.ShLIOp
        | arith.DivSIOp
        | arith.DivUIOp
        | arith.RemSIOp
        | arith.RemUIOp
        | arith.AndIOp
        | arith.OrIOp
        | arith.XOrIOp
        | arith.ShRSIOp
        | arith.ShRUIOp,
        rewriter: PatternRewriter,
    ) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operands()
        llvm_class = _INTEGER_BINARY[type(op)]
        overflow = issubclass(llvm_class, llvm.ArithmeticBinOpOverflow)  # add sub mul shl: what their __init__ sets
        new_op = create(llvm_class, [lhs, rhs], [lhs.type], {"overflowFlags": _overflow_flags(op)} if overflow else {})
        lowering.replace([lowering.emit(new_op).results[0]])


class FloatBinaryLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.AddfOp | arith.SubfOp | arith.MulfOp | arith.DivfOp, rewriter: PatternRewriter
    ) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operands()
        new_op = create(_FLOAT_BINARY[type(op)], [lhs, rhs], [lhs.type], {"fastmathFlags": llvm.FastMathAttr(op.fastmath.data)})
        lowering.replace([lowering.emit(new_op).res])


class NegfLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        (operand,) = lowering.operands()
        lowering.replace([lowering.emit(llvm.FNegOp(operand, llvm.FastMathAttr(op.fastmath.data))).res])


class FloatMinMaxLowering(RewritePattern):
    """maxnumf/minnumf ignore a NaN operand (LLVM's maxnum); maximumf/minimumf propagate it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.MaxnumfOp | arith.MinnumfOp | arith.MaximumfOp | arith.MinimumfOp, rewriter: PatternRewriter
    ) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operands()
        if isinstance(op, arith.MaxnumfOp):
            result = lowering.emit(llvm.VectorFMaxOp(lhs, rhs)).res
        elif isinstance(op, arith.MinnumfOp):
            result = lowering.emit(llvm.VectorFMinOp(lhs, rhs)).res
        else:
            name = f"{_NAN_PROPAGATING_MIN_MAX[type(op)]}.{intrinsic_suffix(lhs.type)}"
            call = lowering.emit(llvm.CallIntrinsicOp(name, [lhs, rhs], [lhs.type]))
            assert call.ress is not None
            result = call.ress
        lowering.replace([result])


class IntegerMinMaxLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.MaxSIOp | arith.MinSIOp | arith.MaxUIOp | arith.MinUIOp, rewriter: PatternRewriter
    ) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operands()
        predicate, intrinsic = _INTEGER_MIN_MAX[type(op)]
        if isinstance(lhs.type, VectorType):
            # Vectors use LLVM's min/max intrinsics: one call instead of a compare and a select.
            name = f"{intrinsic}.{intrinsic_suffix(lhs.type)}"
            call = lowering.emit(llvm.CallIntrinsicOp(name, [lhs, rhs], [lhs.type]))
            assert call.ress is not None
            lowering.replace([call.ress])
            return
        condition = _icmp(lowering, predicate, lhs, rhs)
        lowering.replace([lowering.emit(llvm_extra.SelectOp(condition, lhs, rhs)).res])


class ComparisonLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp | arith.CmpfOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        if isinstance(op.lhs.type, VectorType):
            raise lowering.fail("cannot lower a comparison of vectors: xDSL types its result i1, not a vector of i1")
        lhs, rhs = lowering.operands()
        if isinstance(op, arith.CmpiOp):
            predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            lowering.replace([_icmp(lowering, predicate, lhs, rhs)])
            return
        predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        if predicate in ("false", "true"):
            lowering.replace([lowering.boolean(predicate == "true")])
            return
        lowering.replace([lowering.emit(llvm_extra.FCmpOp(lhs, rhs, predicate)).res])


class SelectLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        condition, lhs, rhs = lowering.operands()
        lowering.replace([lowering.emit(llvm_extra.SelectOp(condition, lhs, rhs)).res])


class CastLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.ExtFOp
        | arith.TruncFOp
        | arith.ExtSIOp
        | arith.ExtUIOp
        | arith.TruncIOp
        | arith.SIToFPOp
        | arith.UIToFPOp
        | arith.FPToSIOp
        | arith.FPToUIOp,
        rewriter: PatternRewriter,
    ) -> None:
        lowering = OpLowering(op, rewriter)
        if "roundingmode" in op.attributes or "roundingmode" in op.properties:
            raise lowering.fail("cannot lower a rounding mode other than the default (to nearest even)")
        result_type = lowering.result_type()
        (operand,) = lowering.operands()
        # fpext, fptrunc, sitofp, ... have no properties; sext, zext (nneg), trunc (overflow) set theirs.
        llvm_class = _CASTS[type(op)]
        generic = issubclass(llvm_class, llvm.GenericCastOp)
        new_op = create(llvm_class, [operand], [result_type]) if generic else llvm_class(operand, result_type)  # type: ignore[call-arg]
        lowering.replace([lowering.emit(new_op).results[0]])


class IndexCastLowering(RewritePattern):
    """index_cast sign-extends or truncates; between `index` and `i64` it is nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        (operand,) = lowering.operands()
        source_width = bit_width(element_type_of(operand.type))
        target_width = bit_width(element_type_of(result_type))
        if source_width < target_width:
            operand = lowering.emit(llvm.SExtOp(operand, result_type)).res
        elif source_width > target_width:
            operand = lowering.emit(llvm.TruncOp(operand, result_type)).res
        lowering.replace([operand])


class BitcastLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.BitcastOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        (operand,) = lowering.operands()
        if operand.type != result_type:
            operand = lowering.emit(llvm.BitcastOp(operand, result_type)).result
        lowering.replace([operand])


class RoundingDivisionLowering(RewritePattern):
    """ceildivui, ceildivsi, floordivsi: the truncating quotient, corrected by one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.CeilDivUIOp | arith.CeilDivSIOp | arith.FloorDivSIOp, rewriter: PatternRewriter
    ) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operands()
        signed = not isinstance(op, arith.CeilDivUIOp)
        quotient = lowering.emit(llvm.SDivOp(lhs, rhs) if signed else llvm.UDivOp(lhs, rhs)).res
        # On i1 the divisor must be 1 (anything else is division by zero): the quotient is exact.
        if bit_width(element_type_of(lhs.type)) == 1:
            lowering.replace([quotient])
            return
        remainder = lowering.emit(llvm.SRemOp(lhs, rhs) if signed else llvm.URemOp(lhs, rhs)).res
        zero = lowering.constant(0, lhs.type)
        inexact = _icmp(lowering, "ne", remainder, zero)
        if signed:
            # The signs agree exactly when lhs xor rhs is not negative.
            sign_bits = lowering.emit(llvm.XOrOp(lhs, rhs)).res
            rounds = _icmp(lowering, "sge" if isinstance(op, arith.CeilDivSIOp) else "slt", sign_bits, zero)
            inexact = lowering.emit(llvm.AndOp(inexact, rounds)).res
        correction = lowering.emit(llvm.ZExtOp(inexact, lhs.type)).res
        if isinstance(op, arith.FloorDivSIOp):
            result = lowering.emit(llvm.SubOp(quotient, correction)).res
        else:
            result = lowering.emit(llvm.AddOp(quotient, correction)).res
        lowering.replace([result])


class ExtendedArithmeticLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: arith.AddUIExtendedOp | arith.MulUIExtendedOp | arith.MulSIExtendedOp, rewriter: PatternRewriter
    ) -> None:
        lowering = OpLowering(op, rewriter)
        lhs, rhs = lowering.operands()
        if isinstance(op, arith.AddUIExtendedOp):
            total = lowering.emit(llvm.AddOp(lhs, rhs)).res
            lowering.replace([total, _icmp(lowering, "ult", total, lhs)])
            return
        width = bit_width(element_type_of(lhs.type))
        wide_type = with_element_type(lhs.type, IntegerType(2 * width))
        extend = llvm.SExtOp if isinstance(op, arith.MulSIExtendedOp) else llvm.ZExtOp
        wide_lhs = lowering.emit(extend(lhs, wide_type)).res
        wide_rhs = lowering.emit(extend(rhs, wide_type)).res
        product = lowering.emit(llvm.MulOp(wide_lhs, wide_rhs)).res
        high = lowering.emit(llvm.LShrOp(product, lowering.constant(width, wide_type))).res
        low_half = lowering.emit(llvm.TruncOp(product, lhs.type)).res
        high_half = lowering.emit(llvm.TruncOp(high, lhs.type)).res
        lowering.replace([low_half, high_half])


@dataclass(frozen=True)
class ConvertArithToLLVM(ModulePass):
    """Lower arith ops inside kernels to the llvm dialect (index becomes i64).

    Host functions (`func.func`) are left alone; values crossing to ops not yet converted pass
    through `builtin.unrealized_conversion_cast`.
    """

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_kernel_ops(
            op,
            [
                ConstantLowering(),
                IntegerBinaryLowering(),
                FloatBinaryLowering(),
                NegfLowering(),
                FloatMinMaxLowering(),
                IntegerMinMaxLowering(),
                ComparisonLowering(),
                SelectLowering(),
                CastLowering(),
                IndexCastLowering(),
                BitcastLowering(),
                RoundingDivisionLowering(),
                ExtendedArithmeticLowering(),
                RejectRemainingOps("arith", self.name),
            ],
            dialect="arith",
            converts_all=True,
        )
