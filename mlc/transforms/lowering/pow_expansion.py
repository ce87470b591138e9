"""pow(x, y) for expand-math-for-cpu, in f64 lanes.

A function of a `MathEmitter` (math_expansion.py) that appends the `arith`/`math` ops computing
x^y of f32 scalars or vectors, for the lanes with x > 0 and both finite; it also returns the i32
lane mask of the other lanes, which the caller computes otherwise.

* pow(x, y) = 2^(y log2 x) (`power`), in f64 lanes (x, y extended exactly; x > 0 and finite, f32
  subnormals normal in f64): x = m 2^k with m in [sqrt(1/2), sqrt(2)) from the bits (musl's
  offset trick), ln m = 2 atanh(s) = 2s + 2s z P(z), s = (m - 1) / (m + 1), z = s^2
  (`POW_LOG_COEFFICIENTS`), log2 x = ln m log2(e) + k (relative error ~2^-50); t = y log2 x held in
  [-160, 160]; n = roundeven(t), e^g with g = (t - n) ln 2 by Taylor's series
  (`POW_EXP_COEFFICIENTS`), times 2^n built from the bits of n + 1023 (exact in f64); rounded once
  to f32 (subnormal results too). The error of t, at most ~160 * 2^-50 absolute, is a relative
  error of the power below 2^-40: within u (1 + 2^-12) (WIDE_ERROR_BOUND). `power` also returns the
  i32 lane mask of x <= 0, infinite or NaN x and infinite or NaN y, whose lanes the caller
  computes otherwise (expand-math-for-cpu: libm, for C's special values).

Preconditions: an emitter of f32 scalars or vectors of f32. Limits: x <= 0, infinities and NaNs
are the caller's (the returned mask).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from mlc.transforms.lowering.math_expansion import INFINITY_BITS, MathEmitter

__all__ = ["power"]

POW_LOG_COEFFICIENTS = tuple(1.0 / (2 * k + 1) for k in range(8, 0, -1))
"""log m = 2 atanh(s) = 2s + 2s z P(z), s = (m - 1) / (m + 1), z = s^2, P = 1/3 + z/5 + ... +
z^7/17 in f64, highest degree first: for m in [sqrt(1/2), sqrt(2)), |s| <= 0.1716 and the rest is
below z^8 / 19 < 2^-45 relative."""
POW_EXP_COEFFICIENTS = tuple(1.0 / pymath.factorial(k) for k in range(11, -1, -1))
"""e^g = sum of g^k / k!, k <= 11, in f64, highest degree first: the rest is below 2^-46 relative
for |g| <= ln2 / 2."""
POW_LOG_OFFSET_BITS = 0x3FE6A09E667F3BCD
"""The f64 bits of sqrt(1/2): subtracted before the exponent is read, so that the mantissa lands
in [sqrt(1/2), sqrt(2)) (musl's log)."""
POW_LOWEST, POW_HIGHEST = -160.0, 160.0
"""y log2 x is held within these: 2^-160 rounds to 0 in f32 and 2^160 to +inf, as the exact
powers beyond do."""
WIDE_ROUNDING_SHIFT = 6755399441055744.0
"""1.5 * 2^52: integers of magnitude below 2^51 added to it fill the low bits of its mantissa."""
WIDE_ROUNDING_SHIFT_BITS = 0x4338000000000000
LOG2_E_WIDE = 1.4426950408889634
LN2_WIDE = 0.6931471805599453


def power(emitter: MathEmitter, x: SSAValue, y: SSAValue) -> tuple[SSAValue, SSAValue]:
    """x^y where x > 0 and both are finite (see the module docstring), and the i32 lane mask
    of the other lanes (x <= 0, -0, infinities, NaNs), whose lanes the caller computes
    otherwise."""
    e = emitter
    wide_x = e.emit(arith.ExtFOp(x, e.wide_type))  # exact, and normal: f32 subnormals too
    wide_y = e.emit(arith.ExtFOp(y, e.wide_type))
    t = e.emit(arith.MulfOp(wide_y, _wide_log2(e, wide_x)))
    t = e.emit(arith.MinimumfOp(e.emit(arith.MaximumfOp(t, e.wide_real(POW_LOWEST))), e.wide_real(POW_HIGHEST)))
    value = e.emit(arith.TruncFOp(_wide_exp2(e, t), e.float_type))  # the one rounding (into subnormals too)
    x_bits, y_magnitude = e.bits(x), e.magnitude(y)
    # x <= +0 (bits <= 0 as i32: zeros and negatives, NaNs with the sign), x >= +inf (and NaN),
    # y infinite or NaN.
    special = e.emit(arith.OrIOp(e.below(x_bits, 1), e.inverted(e.below(x_bits, INFINITY_BITS))))
    special = e.emit(arith.OrIOp(special, e.inverted(e.below(y_magnitude, INFINITY_BITS))))
    return value, special

def _wide_log2(e: MathEmitter, x: SSAValue) -> SSAValue:
    """log2 x in f64 for a positive normal f64 x, within ~2^-50 relative (pow's)."""
    # x = m 2^k, m in [sqrt(1/2), sqrt(2)): the offset moves the exponent's step to sqrt(1/2).
    bits = e.emit(arith.BitcastOp(x, e.wide_int_type))
    k_bits = e.emit(arith.ShRSIOp(e.emit(arith.SubiOp(bits, e.wide_integer(POW_LOG_OFFSET_BITS))), e.wide_integer(52)))
    m = e.emit(arith.BitcastOp(e.emit(arith.SubiOp(bits, e.emit(arith.ShLIOp(k_bits, e.wide_integer(52))))), e.wide_type))
    shifted_k = e.emit(arith.AddiOp(k_bits, e.wide_integer(WIDE_ROUNDING_SHIFT_BITS)))
    k = e.emit(arith.SubfOp(e.emit(arith.BitcastOp(shifted_k, e.wide_type)), e.wide_real(WIDE_ROUNDING_SHIFT)))
    one = e.wide_real(1.0)
    s = e.emit(arith.DivfOp(e.emit(arith.SubfOp(m, one)), e.emit(arith.AddfOp(m, one))))
    twice_s = e.emit(arith.AddfOp(s, s))
    z = e.emit(arith.MulfOp(s, s))
    log_m = e.fma(e.emit(arith.MulfOp(twice_s, z)), e.horner(POW_LOG_COEFFICIENTS, z, wide=True), twice_s)
    return e.fma(log_m, e.wide_real(LOG2_E_WIDE), k)

def _wide_exp2(e: MathEmitter, t: SSAValue) -> SSAValue:
    """2^t in f64 for t in [POW_LOWEST, POW_HIGHEST], within ~2^-50 relative (pow's)."""
    n = e.emit(math.RoundEvenOp(t))
    g = e.emit(arith.MulfOp(e.emit(arith.SubfOp(t, n)), e.wide_real(LN2_WIDE)))  # t - n exact
    p = e.horner(POW_EXP_COEFFICIENTS, g, wide=True)
    # 2^n from the bits: (n + 1023) << 52, n + 1023 read from the mantissa of n + 1023 + 1.5 * 2^52.
    biased = e.emit(arith.BitcastOp(e.emit(arith.AddfOp(n, e.wide_real(1023.0 + WIDE_ROUNDING_SHIFT))), e.wide_int_type))
    scale_bits = e.emit(arith.ShLIOp(e.emit(arith.SubiOp(biased, e.wide_integer(WIDE_ROUNDING_SHIFT_BITS))), e.wide_integer(52)))
    return e.emit(arith.MulfOp(p, e.emit(arith.BitcastOp(scale_bits, e.wide_type))))  # exact: normal f64
