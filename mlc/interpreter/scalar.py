"""Numeric semantics of scalar (and elementwise vector) arithmetic, shared by arith, math and llvm.

Every function takes and returns numpy arrays (any shape: lanes, vectors, tiles) of the exact
dtype of the IR type, so the same code serves the SIMT engine, `tile.map` and the llvm level.

Precision: `+ - * /`, `sqrt`, `fma`, rounding and comparisons are computed in the type itself
(numpy's float32/float16 arithmetic is correctly rounded, as IEEE hardware is). Transcendental
functions (`exp`, `tanh`, `erf`, ...) are computed in float64 and rounded once to the type, the
most accurate reference a compiled kernel can be compared with (`element_types.tolerance`).

Integers are signless: values are stored as signed numpy integers of the type's width and
reinterpreted as unsigned (`view`) by the unsigned ops, so overflow wraps. `i1` is bool, and where
LLVM treats it as a one-bit integer (`true` is -1 when sign-extended) that is reproduced.
Undefined behaviour (division by zero, shifts by the width or more, out-of-range float-to-int
conversion) gives a fixed value (0, or the clamped value) instead of trapping, since lanes
computing under a false mask may hit it harmlessly.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.values import unsigned_dtype

Array = np.ndarray


def _unsigned(a: Array) -> Array:
    a = np.asarray(a)
    return a.view(unsigned_dtype(a.dtype)) if a.dtype != np.bool_ else a.astype(np.uint8)


def _bits(dtype: np.dtype) -> int:
    return 1 if dtype == np.bool_ else dtype.itemsize * 8


def _signed_bool(a: Array) -> Array:
    """An i1 as the signed one-bit integer LLVM sees: true is -1."""
    return np.where(a, np.int8(-1), np.int8(0))


def _nonzero_divisor(b: Array) -> Array:
    return np.where(b == 0, np.ones((), dtype=np.asarray(b).dtype), b)


# Integer arithmetic ------------------------------------------------------------------------------


def addi(a: Array, b: Array) -> Array:
    return np.logical_xor(a, b) if np.asarray(a).dtype == np.bool_ else np.add(a, b)


def subi(a: Array, b: Array) -> Array:
    return np.logical_xor(a, b) if np.asarray(a).dtype == np.bool_ else np.subtract(a, b)


def muli(a: Array, b: Array) -> Array:
    return np.logical_and(a, b) if np.asarray(a).dtype == np.bool_ else np.multiply(a, b)


def divsi(a: Array, b: Array) -> Array:
    """Division truncating toward zero (C's); 0 for a zero divisor."""
    if np.asarray(a).dtype == np.bool_:
        return np.logical_and(a, b)
    divisor = _nonzero_divisor(b)
    quotient = np.floor_divide(a, divisor)
    remainder = np.subtract(a, np.multiply(quotient, divisor))
    quotient = np.where((remainder != 0) & ((np.asarray(a) < 0) != (divisor < 0)), quotient + 1, quotient)
    return np.where(b == 0, np.zeros((), quotient.dtype), quotient).astype(np.asarray(a).dtype)


def divui(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.logical_and(a, b)
    ua, ub = _unsigned(a), _unsigned(b)
    return np.where(ub == 0, 0, ua // _nonzero_divisor(ub)).astype(ua.dtype).view(dtype)


def remsi(a: Array, b: Array) -> Array:
    """Remainder with the sign of the dividend (C's); 0 for a zero divisor."""
    if np.asarray(a).dtype == np.bool_:
        return np.zeros(np.shape(a), dtype=bool)
    return np.where(b == 0, 0, np.fmod(a, _nonzero_divisor(b))).astype(np.asarray(a).dtype)


def remui(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.logical_and(a, np.logical_not(b))
    ua, ub = _unsigned(a), _unsigned(b)
    return np.where(ub == 0, 0, ua % _nonzero_divisor(ub)).astype(ua.dtype).view(dtype)


def floordivsi(a: Array, b: Array) -> Array:
    return np.where(b == 0, 0, np.floor_divide(a, _nonzero_divisor(b))).astype(np.asarray(a).dtype)


def ceildivsi(a: Array, b: Array) -> Array:
    divisor = _nonzero_divisor(b)
    quotient = np.floor_divide(a, divisor)
    quotient = np.where(np.subtract(a, quotient * divisor) != 0, quotient + 1, quotient)
    return np.where(b == 0, 0, quotient).astype(np.asarray(a).dtype)


def ceildivui(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    ua, ub = _unsigned(a), _unsigned(b)
    divisor = _nonzero_divisor(ub)
    quotient = ua // divisor
    quotient = np.where(ua % divisor != 0, quotient + 1, quotient)
    return np.where(ub == 0, 0, quotient).astype(ua.dtype).view(dtype)


def andi(a: Array, b: Array) -> Array:
    return np.bitwise_and(a, b)


def ori(a: Array, b: Array) -> Array:
    return np.bitwise_or(a, b)


def xori(a: Array, b: Array) -> Array:
    return np.bitwise_xor(a, b)


def _shift_amount(a: Array, b: Array) -> tuple[Array, Array]:
    width = _bits(np.asarray(a).dtype)
    amount = _unsigned(b).astype(np.uint64)
    return amount >= width, np.minimum(amount, width - 1).astype(
        np.asarray(a).dtype if np.asarray(a).dtype != np.bool_ else np.uint8
    )


def shli(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.logical_and(a, np.asarray(b) == 0)
    too_far, amount = _shift_amount(a, b)
    return np.where(too_far, 0, np.left_shift(a, amount)).astype(dtype)


def shrsi(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.asarray(a)  # shifting a one-bit value right by 0 keeps it; by more is poison
    too_far, amount = _shift_amount(a, b)
    return np.where(too_far, np.where(np.asarray(a) < 0, -1, 0), np.right_shift(a, amount)).astype(dtype)


def shrui(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.logical_and(a, np.asarray(b) == 0)
    too_far, amount = _shift_amount(a, b)
    ua = _unsigned(a)
    return np.where(too_far, 0, np.right_shift(ua, amount.view(ua.dtype))).astype(ua.dtype).view(dtype)


def maxsi(a: Array, b: Array) -> Array:
    if np.asarray(a).dtype == np.bool_:
        return np.logical_and(a, b)  # -1 is the smaller one-bit value
    return np.maximum(a, b)


def minsi(a: Array, b: Array) -> Array:
    if np.asarray(a).dtype == np.bool_:
        return np.logical_or(a, b)
    return np.minimum(a, b)


def maxui(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.logical_or(a, b)
    return np.maximum(_unsigned(a), _unsigned(b)).view(dtype)


def minui(a: Array, b: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.bool_:
        return np.logical_and(a, b)
    return np.minimum(_unsigned(a), _unsigned(b)).view(dtype)


INTEGER_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
"""arith.cmpi and llvm.icmp predicates, in the order of their integer encoding."""


def compare_integers(predicate: str, a: Array, b: Array) -> Array:
    a, b = np.asarray(a), np.asarray(b)
    if predicate in ("eq", "ne"):
        return np.equal(a, b) if predicate == "eq" else np.not_equal(a, b)
    if predicate[0] == "s":
        if a.dtype == np.bool_:
            a, b = _signed_bool(a), _signed_bool(b)
    else:
        a, b = _unsigned(a), _unsigned(b)
    operation = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}[predicate[1:]]
    return operation(a, b)


# Integer conversions ------------------------------------------------------------------------------


def extend_signed(a: Array, dtype: np.dtype) -> Array:
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return _signed_bool(a).astype(dtype)
    return a.astype(dtype)


def extend_unsigned(a: Array, dtype: np.dtype) -> Array:
    a = np.asarray(a)
    if dtype == np.bool_:
        return a.astype(bool)
    return _unsigned(a).astype(unsigned_dtype(dtype)).view(dtype)


def truncate_integer(a: Array, dtype: np.dtype) -> Array:
    a = np.asarray(a)
    if dtype == np.bool_:
        return (a & 1).astype(bool) if a.dtype != np.bool_ else a
    return a.astype(dtype)


def cast_integer(a: Array, dtype: np.dtype, signed: bool = True) -> Array:
    """Sign- (or zero-) extension or truncation to `dtype`, whichever the widths call for."""
    a = np.asarray(a)
    if _bits(dtype) < _bits(a.dtype):
        return truncate_integer(a, dtype)
    return extend_signed(a, dtype) if signed else extend_unsigned(a, dtype)


def signed_to_float(a: Array, dtype: np.dtype) -> Array:
    a = np.asarray(a)
    if a.dtype == np.bool_:
        a = _signed_bool(a)
    return a.astype(dtype)


def unsigned_to_float(a: Array, dtype: np.dtype) -> Array:
    return _unsigned(a).astype(dtype)


def float_to_integer(a: Array, dtype: np.dtype, signed: bool = True) -> Array:
    """Truncation toward zero; NaN gives 0 and out-of-range values clamp (LLVM: poison)."""
    truncated = np.trunc(np.asarray(a, dtype=np.float64))
    truncated = np.where(np.isnan(truncated), 0.0, truncated)
    if dtype == np.bool_:
        return truncated != 0
    target = dtype if signed else unsigned_dtype(dtype)
    info = np.iinfo(target)
    clamped = np.clip(truncated, float(info.min), float(info.max))
    # float(info.max) of a 64-bit type rounds up past the range: clamp again after the cast.
    result = np.where(clamped >= float(info.max), info.max, clamped.astype(target))
    return result.astype(target).view(dtype) if not signed else result.astype(dtype)


def bitcast(a: Array, dtype: np.dtype) -> Array:
    a = np.ascontiguousarray(a)
    if a.dtype.itemsize != dtype.itemsize:
        raise InterpreterError(f"cannot bitcast {a.dtype} to {dtype}: the widths differ")
    return a.view(dtype)


# Floating point -----------------------------------------------------------------------------------


def maximumf(a: Array, b: Array) -> Array:
    """IEEE maximum: NaN if either is NaN, and +0 is larger than -0."""
    result = np.maximum(a, b)
    both_zero = (np.asarray(a) == 0) & (np.asarray(b) == 0)
    return np.where(both_zero, np.where(np.signbit(a), b, a), result)


def minimumf(a: Array, b: Array) -> Array:
    result = np.minimum(a, b)
    both_zero = (np.asarray(a) == 0) & (np.asarray(b) == 0)
    return np.where(both_zero, np.where(np.signbit(a), a, b), result)


FLOAT_PREDICATES = (
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
)
"""arith.cmpf and llvm.fcmp predicates, in the order of their integer encoding."""


def compare_floats(predicate: str, a: Array, b: Array) -> Array:
    a, b = np.asarray(a), np.asarray(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    if predicate == "false":
        return np.zeros(shape, dtype=bool)
    if predicate == "true":
        return np.ones(shape, dtype=bool)
    unordered = np.isnan(a) | np.isnan(b)
    if predicate == "ord":
        return ~unordered
    if predicate == "uno":
        return unordered
    operation = {
        "eq": np.equal,
        "gt": np.greater,
        "ge": np.greater_equal,
        "lt": np.less,
        "le": np.less_equal,
        "ne": np.not_equal,
    }[predicate[1:]]
    result = operation(a, b)
    if predicate[0] == "o":
        return result & ~unordered
    return result | unordered


def in_double(function: Callable[..., Array]) -> Callable[..., Array]:
    """`function` computed in float64 and rounded once to the dtype of the first operand."""

    def evaluate(*operands: Array) -> Array:
        dtype = np.asarray(operands[0]).dtype
        wide = [np.asarray(x, dtype=np.float64) for x in operands]
        return np.asarray(function(*wide)).astype(dtype)

    return evaluate


def _ieee_power(base: Array, exponent: Array) -> Array:
    """`np.power` with IEEE's sign for a zero base: numpy's vectorised loops give pow(-0, 0.5) = -0
    where its scalar path (and C's pow) gives +0; IEEE keeps the sign only for odd integer powers."""
    result = np.power(base, exponent)
    odd_integer = (np.abs(np.fmod(exponent, 2.0)) == 1.0)
    zero_base = (base == 0) & (exponent > 0)
    return np.where(zero_base & ~odd_integer, np.abs(result), result)


_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _round_half_away(x: Array) -> Array:
    truncated = np.trunc(x)
    fraction = np.subtract(x, truncated)
    return np.where(np.abs(fraction) >= 0.5, truncated + np.sign(x), truncated).astype(np.asarray(x).dtype)


def fma(a: Array, b: Array, c: Array) -> Array:
    dtype = np.asarray(a).dtype
    if dtype == np.float64:
        return np.add(np.multiply(a, b), c)
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(dtype)


FLOAT_UNARY: dict[str, Callable[[Array], Array]] = {
    "abs": np.abs,
    "neg": np.negative,
    "ceil": np.ceil,
    "floor": np.floor,
    "trunc": np.trunc,
    "roundeven": np.rint,
    "rint": np.rint,
    "nearbyint": np.rint,
    "round": _round_half_away,
    "sqrt": in_double(np.sqrt),
    "rsqrt": in_double(lambda x: 1.0 / np.sqrt(x)),
    "cbrt": in_double(np.cbrt),
    "exp": in_double(np.exp),
    "exp2": in_double(np.exp2),
    "exp10": in_double(lambda x: np.power(10.0, x)),
    "expm1": in_double(np.expm1),
    "log": in_double(np.log),
    "log2": in_double(np.log2),
    "log10": in_double(np.log10),
    "log1p": in_double(np.log1p),
    "sin": in_double(np.sin),
    "cos": in_double(np.cos),
    "tan": in_double(np.tan),
    "asin": in_double(np.arcsin),
    "acos": in_double(np.arccos),
    "atan": in_double(np.arctan),
    "sinh": in_double(np.sinh),
    "cosh": in_double(np.cosh),
    "tanh": in_double(np.tanh),
    "asinh": in_double(np.arcsinh),
    "acosh": in_double(np.arccosh),
    "atanh": in_double(np.arctanh),
    "erf": in_double(lambda x: np.asarray(_erf(x), dtype=np.float64)),
    "erfc": in_double(lambda x: np.asarray(_erfc(x), dtype=np.float64)),
    "sigmoid": in_double(lambda x: 1.0 / (1.0 + np.exp(-x))),
}

FLOAT_BINARY: dict[str, Callable[[Array, Array], Array]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "rem": np.fmod,
    "maximum": maximumf,
    "minimum": minimumf,
    "maxnum": np.fmax,
    "minnum": np.fmin,
    "copysign": np.copysign,
    "pow": in_double(lambda x, y: _ieee_power(x, y)),
    "atan2": in_double(np.arctan2),
    "hypot": in_double(np.hypot),
}


def powi(a: Array, exponent: Array) -> Array:
    """A float to an integer power."""
    return in_double(np.power)(a, np.asarray(exponent, dtype=np.float64))


# Bit counting -------------------------------------------------------------------------------------


def ctpop(a: Array) -> Array:
    dtype = np.asarray(a).dtype
    value = _unsigned(a).astype(np.uint64)
    count = np.zeros(np.shape(value), dtype=np.uint64)
    for _ in range(_bits(dtype)):
        count += value & np.uint64(1)
        value = value >> np.uint64(1)
    return count.astype(dtype)


def ctlz(a: Array) -> Array:
    dtype = np.asarray(a).dtype
    width = _bits(dtype)
    value = _unsigned(a).astype(np.uint64)
    count = np.full(np.shape(value), width, dtype=np.int64)
    for bit in range(width):
        set_here = (value >> np.uint64(bit)) & np.uint64(1) == 1
        count = np.where(set_here, width - 1 - bit, count)
    return count.astype(dtype)


def cttz(a: Array) -> Array:
    dtype = np.asarray(a).dtype
    width = _bits(dtype)
    value = _unsigned(a).astype(np.uint64)
    count = np.full(np.shape(value), width, dtype=np.int64)
    for bit in reversed(range(width)):
        set_here = (value >> np.uint64(bit)) & np.uint64(1) == 1
        count = np.where(set_here, bit, count)
    return count.astype(dtype)


def absi(a: Array) -> Array:
    return np.abs(a)


def ipowi(a: Array, exponent: Array) -> Array:
    """Integer power with wrap-around; a negative exponent gives 1/a^-n in integers."""
    a = np.asarray(a)
    exponent = np.asarray(exponent).astype(np.int64)
    result = np.ones(np.broadcast_shapes(a.shape, exponent.shape), dtype=a.dtype)
    base = np.broadcast_to(a, result.shape).copy()
    remaining = np.broadcast_to(np.maximum(exponent, 0), result.shape).copy()
    while remaining.any():
        result = np.where(remaining & 1, result * base, result).astype(a.dtype)
        base = (base * base).astype(a.dtype)
        remaining >>= 1
    negative = exponent < 0
    if negative.any():
        odd = (np.abs(exponent) & 1) == 1
        inverse = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
        result = np.where(negative, inverse, result).astype(a.dtype)
    return result
