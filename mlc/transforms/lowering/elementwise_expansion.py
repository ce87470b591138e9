"""How each elementwise graph op computes one element, written in scalar `arith`/`math` ops.

`convert-graph-to-tile` builds the body of a `tile.map` by calling `expand_elementwise` for
every graph op of a fusion group, in order, on scalar SSA values. The expansions reproduce the
graph interpreter's semantics (mlc/dialects/graph/interpret.py), which the equivalence tests
check:

* f16 and bf16 arithmetic is computed in f32 and rounded back after *every* op, so each op's
  result is the correctly rounded result of the op, as numpy's is; comparisons of widened values
  are exact. Casts convert directly.
* Float max/min propagate NaN (`arith.maximumf`), comparisons are ordered except `ne` (NaN != x).
* Integer division truncates toward zero, gives 0 for a zero divisor (also keeps padded
  lanes of masked tiles from trapping on the CPU) and wraps INT_MIN / -1 to INT_MIN, as numpy
  does; no target's division instruction sees either case, so none traps.
* Float-to-integer casts truncate toward zero and saturate; NaN becomes 0.
* Casts from or to bf16 go through f32 (the only type LLVM converts bf16 to and from on every
  target), which is what PyTorch and ml_dtypes compute: an integer rounds to f32, then to bf16.

* Integer `pow` is square-and-multiply over the exponent's bits, wrapping; a negative exponent
  gives the truncated reciprocal (the interpreter's total definition, `_integer_power` there).

`expand_elementwise(..., keep_f32=True)` (fast math: the attention chain's score ops under
`fast_math`, `attention_kernel.py`) takes the float operands of narrow float ops already in f32
and leaves the result in f32: the per-op rounding to f16/bf16 is skipped.

Limits: integer `pow` costs about four ops per bit of the type (63 steps for i64), unrolled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    BFloat16Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    i1,
)
from xdsl.ir import Attribute, Operation, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects.element_types import is_bool, is_float
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import splat_scalar

_SQRT_HALF = 0.7071067811865476
_SQRT_TWO_OVER_PI = 0.7978845608028654


class ScalarBuilder:
    """Appends scalar ops at an insertion point and hands back their results."""

    def __init__(self, builder: Builder):
        self.builder = builder

    def emit(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    def constant(self, value: float | int | bool, element_type: Attribute) -> SSAValue:
        if is_float(element_type):
            return self.emit(arith.ConstantOp(FloatAttr(float(value), element_type)))  # type: ignore[arg-type]
        assert isinstance(element_type, IntegerType)
        return self.emit(arith.ConstantOp(IntegerAttr(int(value), element_type)))


def element_type_of(value: SSAValue) -> Attribute:
    tensor_type = value.type
    assert isinstance(tensor_type, TensorType)
    return tensor_type.element_type


def _in_f32(
    b: ScalarBuilder,
    element_type: Attribute,
    operands: Sequence[SSAValue],
    compute: Callable[[list[SSAValue]], SSAValue],
) -> SSAValue:
    """Computes `compute` in f32 for narrow floats and rounds the result back once."""
    if not is_float(element_type) or element_type.bitwidth >= 32:  # type: ignore[attr-defined]
        return compute(list(operands))
    widened = [b.emit(arith.ExtFOp(x, f32)) for x in operands]
    return b.emit(arith.TruncFOp(compute(widened), element_type))


def _float_binary(op: Operation, b: ScalarBuilder, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    builders: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
        graph.AddOp: arith.AddfOp,
        graph.SubOp: arith.SubfOp,
        graph.MulOp: arith.MulfOp,
        graph.DivOp: arith.DivfOp,
        graph.MaxOp: arith.MaximumfOp,
        graph.MinOp: arith.MinimumfOp,
        graph.PowOp: math.PowFOp,
    }
    return b.emit(builders[type(op)](lhs, rhs))


def _integer_divide(b: ScalarBuilder, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    """Truncating division, total: x / 0 = 0 and INT_MIN / -1 = INT_MIN (wrapped), as the interpreter.

    The hardware division never sees either case (x86's idiv traps on both, and LLVM's sdiv is
    undefined for them): the divisor becomes 1 where it is 0, and where the quotient would
    overflow, so that INT_MIN / 1 gives the wrapped INT_MIN itself.
    """
    element_type = lhs.type
    assert isinstance(element_type, IntegerType)
    zero = b.constant(0, element_type)
    one = b.constant(1, element_type)
    smallest = b.constant(-(2 ** (element_type.width.data - 1)), element_type)
    divisor_is_zero = b.emit(arith.CmpiOp(rhs, zero, "eq"))
    overflows = b.emit(
        arith.AndIOp(
            b.emit(arith.CmpiOp(lhs, smallest, "eq")),
            b.emit(arith.CmpiOp(rhs, b.constant(-1, element_type), "eq")),
        )
    )
    safe_divisor = b.emit(arith.SelectOp(b.emit(arith.OrIOp(divisor_is_zero, overflows)), one, rhs))
    quotient = b.emit(arith.DivSIOp(lhs, safe_divisor))
    return b.emit(arith.SelectOp(divisor_is_zero, zero, quotient))


def _integer_power(b: ScalarBuilder, base: SSAValue, exponent: SSAValue) -> SSAValue:
    """`base ** exponent` by square-and-multiply over every bit of the exponent (branch-free,
    wrapping as the interpreter does); a negative exponent gives the truncated reciprocal: 1 for
    base 1, +-1 for base -1 (by the exponent's parity), else 0."""
    element_type = base.type
    assert isinstance(element_type, IntegerType)
    zero, one = b.constant(0, element_type), b.constant(1, element_type)
    result, square = one, base
    for bit in range(element_type.width.data - 1):
        mask = b.constant(1 << bit, element_type)
        is_set = b.emit(arith.CmpiOp(b.emit(arith.AndIOp(exponent, mask)), zero, "ne"))
        result = b.emit(arith.SelectOp(is_set, b.emit(arith.MuliOp(result, square)), result))
        square = b.emit(arith.MuliOp(square, square))
    odd = b.emit(arith.CmpiOp(b.emit(arith.AndIOp(exponent, one)), zero, "ne"))
    minus_one = b.constant(-1, element_type)
    sign = b.emit(arith.SelectOp(odd, minus_one, one))
    reciprocal = b.emit(
        arith.SelectOp(
            b.emit(arith.CmpiOp(base, one, "eq")),
            one,
            b.emit(arith.SelectOp(b.emit(arith.CmpiOp(base, minus_one, "eq")), sign, zero)),
        )
    )
    return b.emit(arith.SelectOp(b.emit(arith.CmpiOp(exponent, zero, "slt")), reciprocal, result))


def _integer_binary(op: Operation, b: ScalarBuilder, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    if isinstance(op, graph.DivOp):
        return _integer_divide(b, lhs, rhs)
    if isinstance(op, graph.PowOp):
        return _integer_power(b, lhs, rhs)
    builders: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
        graph.AddOp: arith.AddiOp,
        graph.SubOp: arith.SubiOp,
        graph.MulOp: arith.MuliOp,
        graph.MaxOp: arith.MaxSIOp,
        graph.MinOp: arith.MinSIOp,
    }
    return b.emit(builders[type(op)](lhs, rhs))


_FLOAT_PREDICATES = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_SIGNED_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_UNSIGNED_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def _compare(op: graph.CmpOp, b: ScalarBuilder, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    element_type = element_type_of(op.lhs)
    predicate = op.predicate.data
    if is_float(element_type):
        if element_type.bitwidth < 32:  # type: ignore[attr-defined]
            lhs, rhs = b.emit(arith.ExtFOp(lhs, f32)), b.emit(arith.ExtFOp(rhs, f32))
        return b.emit(arith.CmpfOp(lhs, rhs, _FLOAT_PREDICATES[predicate]))
    table = _UNSIGNED_PREDICATES if is_bool(element_type) else _SIGNED_PREDICATES
    return b.emit(arith.CmpiOp(lhs, rhs, table[predicate]))


def _float_unary(op: Operation, b: ScalarBuilder, x: SSAValue) -> SSAValue:
    element_type = x.type
    if isinstance(op, graph.NegOp):
        return b.emit(arith.NegfOp(x))
    if isinstance(op, graph.AbsOp):
        return b.emit(math.AbsFOp(x))
    if isinstance(op, graph.ReluOp):
        return b.emit(arith.MaximumfOp(x, b.constant(0.0, element_type)))
    simple: dict[type[Operation], Callable[[SSAValue], Operation]] = {
        graph.ExpOp: math.ExpOp,
        graph.LogOp: math.LogOp,
        graph.SqrtOp: math.SqrtOp,
        graph.RsqrtOp: math.RsqrtOp,
        graph.TanhOp: math.TanhOp,
        graph.ErfOp: math.ErfOp,
        graph.SinOp: math.SinOp,
        graph.CosOp: math.CosOp,
    }
    if type(op) in simple:
        return b.emit(simple[type(op)](x))
    one = b.constant(1.0, element_type)
    if isinstance(op, graph.ReciprocalOp):
        return b.emit(arith.DivfOp(one, x))
    if isinstance(op, graph.SigmoidOp):
        exp_of_negative = b.emit(math.ExpOp(b.emit(arith.NegfOp(x))))
        return b.emit(arith.DivfOp(one, b.emit(arith.AddfOp(one, exp_of_negative))))
    if isinstance(op, graph.GeluOp):
        return _gelu(op.approximate.data, b, x)
    raise PassFailure(op, "no scalar expansion for this op")


def _gelu(approximate: str, b: ScalarBuilder, x: SSAValue) -> SSAValue:
    element_type = x.type
    one = b.constant(1.0, element_type)
    half_x = b.emit(arith.MulfOp(b.constant(0.5, element_type), x))
    if approximate == "tanh":
        cube = b.emit(arith.MulfOp(b.emit(arith.MulfOp(x, x)), x))
        inner = b.emit(arith.AddfOp(x, b.emit(arith.MulfOp(b.constant(0.044715, element_type), cube))))
        scaled = b.emit(arith.MulfOp(b.constant(_SQRT_TWO_OVER_PI, element_type), inner))
        shape = b.emit(math.TanhOp(scaled))
    else:
        shape = b.emit(math.ErfOp(b.emit(arith.MulfOp(x, b.constant(_SQRT_HALF, element_type)))))
    return b.emit(arith.MulfOp(half_x, b.emit(arith.AddfOp(one, shape))))


def _integer_unary(op: Operation, b: ScalarBuilder, x: SSAValue) -> SSAValue:
    zero = b.constant(0, x.type)
    if isinstance(op, graph.NegOp):
        return b.emit(arith.SubiOp(zero, x))
    if isinstance(op, graph.AbsOp):
        return b.emit(math.AbsIOp(x))
    if isinstance(op, graph.ReluOp):
        return b.emit(arith.MaxSIOp(x, zero))
    raise PassFailure(op, "no scalar expansion for this op")


def _float_to_integer(b: ScalarBuilder, x: SSAValue, target: IntegerType) -> SSAValue:
    """Truncating, saturating conversion; NaN becomes 0 (the interpreter's definition)."""
    source = x.type
    if source != f32 and source.bitwidth < 32:  # type: ignore[attr-defined]
        x = b.emit(arith.ExtFOp(x, f32))
        source = f32
    width = target.width.data
    low, high = -(2 ** (width - 1)), 2 ** (width - 1) - 1
    converted = b.emit(arith.FPToSIOp(x, target))
    too_low = b.emit(arith.CmpfOp(x, b.constant(float(low), source), "olt"))
    too_high = b.emit(arith.CmpfOp(x, b.constant(float(high), source), "oge"))
    is_nan = b.emit(arith.CmpfOp(x, x, "uno"))
    result = b.emit(arith.SelectOp(too_low, b.constant(low, target), converted))
    result = b.emit(arith.SelectOp(too_high, b.constant(high, target), result))
    return b.emit(arith.SelectOp(is_nan, b.constant(0, target), result))


def _cast(b: ScalarBuilder, x: SSAValue, target: Attribute) -> SSAValue:
    source = x.type
    if source == target:
        return x
    if (isinstance(source, BFloat16Type) or isinstance(target, BFloat16Type)) and f32 not in (source, target):
        # bf16 converts through f32 (exact from bf16, f16, i1; one rounding from i32/i64), as
        # PyTorch and ml_dtypes do; f16 <-> bf16 has no single arith op.
        return _cast(b, _cast(b, x, f32), target)
    if is_bool(target):
        if is_float(source):
            return b.emit(arith.CmpfOp(x, b.constant(0.0, source), "une"))
        return b.emit(arith.CmpiOp(x, b.constant(0, source), "ne"))
    if is_float(source) and is_float(target):
        if source.bitwidth < target.bitwidth:  # type: ignore[attr-defined]
            return b.emit(arith.ExtFOp(x, target))
        return b.emit(arith.TruncFOp(x, target))
    if is_float(source):
        assert isinstance(target, IntegerType)
        return _float_to_integer(b, x, target)
    if is_float(target):
        if is_bool(source):
            return b.emit(arith.UIToFPOp(x, target))
        return b.emit(arith.SIToFPOp(x, target))
    assert isinstance(source, IntegerType) and isinstance(target, IntegerType)
    if is_bool(source):
        return b.emit(arith.ExtUIOp(x, target))
    if source.width.data < target.width.data:
        return b.emit(arith.ExtSIOp(x, target))
    return b.emit(arith.TruncIOp(x, target))


def expand_elementwise(op: Operation, operands: Sequence[SSAValue], b: ScalarBuilder, *, keep_f32: bool = False) -> SSAValue:
    """Emits the scalar computation of one element of `op` from its operands' elements; with
    `keep_f32`, narrow floats are f32 values on both sides (see the module docstring)."""
    if keep_f32 and _narrow_float(op):
        return _in_wide_f32(op, operands, b)
    if isinstance(op, graph.CmpOp):
        return _compare(op, b, operands[0], operands[1])
    if isinstance(op, graph.WhereOp):
        return b.emit(arith.SelectOp(operands[0], operands[1], operands[2]))
    if isinstance(op, graph.CastOp):
        return _cast(b, operands[0], element_type_of(op.result))
    if isinstance(op, graph.BroadcastOp | graph.ReshapeOp):
        return operands[0]
    element_type = element_type_of(op.operands[0])
    if is_bool(element_type):
        raise PassFailure(op, "arithmetic on i1 is not supported")
    if isinstance(op, graph.BINARY_OPS):
        if is_float(element_type):
            return _in_f32(b, element_type, operands, lambda xs: _float_binary(op, b, xs[0], xs[1]))
        return _integer_binary(op, b, operands[0], operands[1])
    if isinstance(op, graph.UNARY_OPS):
        if is_float(element_type):
            return _in_f32(b, element_type, operands, lambda xs: _float_unary(op, b, xs[0]))
        return _integer_unary(op, b, operands[0])
    raise PassFailure(op, "is not an elementwise op")


def _narrow_float(op: Operation) -> bool:
    types = [element_type_of(v) for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)]
    return any(is_float(t) and t.bitwidth < 32 for t in types)  # type: ignore[attr-defined]


def _in_wide_f32(op: Operation, operands: Sequence[SSAValue], b: ScalarBuilder) -> SSAValue:
    """`op` on f32 stand-ins of its narrow float operands, its float result left in f32."""
    if isinstance(op, graph.CastOp):
        target = element_type_of(op.result)
        return _cast(b, operands[0], f32 if is_float(target) and target.bitwidth < 32 else target)  # type: ignore[attr-defined]
    if isinstance(op, graph.CmpOp) and is_float(operands[0].type):
        return b.emit(arith.CmpfOp(operands[0], operands[1], _FLOAT_PREDICATES[op.predicate.data]))
    if isinstance(op, graph.WhereOp | graph.BroadcastOp | graph.ReshapeOp):
        return expand_elementwise(op, operands, b)
    if isinstance(op, graph.BINARY_OPS):
        return _float_binary(op, b, operands[0], operands[1])
    if isinstance(op, graph.UNARY_OPS):
        return _float_unary(op, b, operands[0])
    raise PassFailure(op, "is not an elementwise op")


def splat_constant_value(op: graph.ConstantOp) -> float | int | None:
    """The single value of a splat constant, or None when the constant is not a splat.

    Bitwise: [0.0, -0.0] is not a splat (1/x tells them apart), a tensor of one NaN is."""
    value = splat_scalar(op.value)
    if value is None:
        return None
    return int(value) if op.value.get_element_type() == i1 else value.item()
