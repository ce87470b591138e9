"""Branch-free f32 sin and cos for expand-math-for-cpu: f32 lanes with one polynomial per lane,
f64 lanes beyond.

Functions of a `MathEmitter` (math_expansion.py) that append the `arith`/`math` ops computing sin x
or cos x of an f32 scalar or vector x, for the lanes of |x| <= a limit; each also returns the i32
lane mask of the lanes beyond, which the caller computes otherwise (expand-math-for-cpu: `trig`
after `narrow_trig`, then libm).

`narrow_trig`, |x| <= NARROW_TRIG_LIMIT = 2^17, in f32 lanes, one odd polynomial per lane (as
SLEEF's and Cephes' sinf / cosf): with a = |x| (sin x = sign(x) sin a, cos x = cos a),

* sin: n = roundeven(a f32(1/pi)), r = a - n pi, sin a = (-1)^n sin r: one fma computes
  a f32(1/pi) + 1.5 2^23, rounded once to an integer (ulp 1 there; its bit 0 is n's), and a
  subtraction of 1.5 2^23 gives n exactly;
* cos: m = roundeven(fma(a, f32(1/pi), -1/2)), n = 2m + 1 (odd), r = a - n pi/2,
  cos a = cos(r + m pi + pi/2) = (-1)^(m + 1) sin r.

n is within 0.5 + 0.0036 of a/pi (sin: 0.5 + 0.0017, f32(1/pi)'s error times a/pi < 41723;
cos: that and half an ulp of the rounded fma, 2^-9), so |r| <= pi (1/2 + 0.0036) < 1.5825
(`SINE_REDUCED_LIMIT`); n < 2^17. r = a - n P1 - n P2 - n P3 with P = `PI_NARROW_PARTS` (sin) or
`HALF_PI_NARROW_PARTS` (cos), the f32 parts of pi (pi/2): each the rounding of what the earlier
ones leave, the rest 2.2e-23 (1.1e-23) times n < 2^17 below 2^-58.

* The first step, exact = fma(-n, P1, a), is exact where n P1 and a are multiples of 2^-23 (their
  difference, below 2 in magnitude, then fits 24 bits): P1 is a multiple of 2^-22 (pi) or 2^-23
  (pi/2), and a >= 1 (so a multiple of 2^-23) wherever sin's n >= 1 (a/pi > 0.49) or cos's
  n >= 3 (a/pi > 1.49), and where cos's n = 1 with a >= 1.
  sin with n = 0: exact = a. cos with n = 1 and a < 1 is the exception (a just above 0.5 gives
  |r| > 1, whose ulp is 2^-23, but a's bits go to 2^-24 and below): there P1 = f32(pi/2) >= a
  and n P1 = P1 exactly, so Fast2Sum(-P1, a) recovers what the rounding lost,
  a - RN(P1 + exact), RN(P1 + exact) being exact; written a - fma(n, P1, exact) for every lane
  (branch-free): for every other lane exact is exact, fma(n, P1, exact) = a and the term is 0.
* n P2 = product + product_low exactly (an fma), and exact - product by Fast2Sum: exact is a
  multiple of 2^-24, no finer than product's ulp (|product| < 2^-7), so high = RN(exact -
  product) and lost = (exact - high) - product exactly; r = high + low with low = lost -
  product_low (+ cos's recovered part) - n P3, rounded twice: within about 2^-48 |r|.

sin(high + low) = high + (high^3 P(z) + low cos(high)), z = high^2, P = `SINE_NARROW_COEFFICIENTS`
(a relative minimax fit of degree 9, 0.116 u on |r| <= 1.5825; see the constant). Near |r| = pi/2
the correction is about 0.57 of the result, so its rounding errors count: measured over dense
samples, the plain form fl(fl(high z) P(z) + low) reached 3.3 u, of which low cos(high) taken as
low (up to 0.4 u where cos(high) ~ 0.08), z's rounding (0.57 u), P's last rounding times high^3
(0.5 u) and w's below (0.3 u). So the correction is z w + low with

* w = high c0 + (high (z P'(z)) + low c) rounded once (an fma; P = c0 + z P'(z)), so that P's
  leading term carries no separate rounding;
* low cos(high) = low + z (low c) to within 0.053 |low| |sin high| / |high| (`LOW_COSINE_FACTOR`
  c = -0.4163, between -1/2 and the chord's -0.405: the minimax of |cos h - 1 - c h^2| h / sin h);
* z w + low = fma(z, w, fma(z_low, w, low)), z_low = high^2 - z exactly (an fma).

The sign: bit 0 of n (sin) or of m + 1 (cos), read from the mantissa of n + 1.5 2^23 (m + 1.5
2^23 + 1), shifted to the sign bit and, for sin, xor-ed with x's sign; the value's sign bit is
flipped by it. sin(-0) = -0 (sin(+0) = +0 takes x's sign), cos(+-0) = 1; NaN and +-inf give NaN
(n is NaN or inf, so exact = NaN). The returned mask is of the lanes whose |x|'s bits are above
2^17's: the finite ones beyond and, so that the test is one compare (vpcmpgtd, kortestw), +-inf
and NaN, which `trig` turns into NaN as well (a chunk holding them takes the f64 block).

Within `NARROW_ERROR_BOUND` (1.5) u of the exact value (u = 2^-24, relative): measured at most
1.262 u for sin (x = 32388.166) and 1.281 u for cos (x = 91376.4375) over every f32 of [0, 2^17],
1.21e9 values each (`bench/trig_accuracy.py`: compiled, against numpy's float64, 1.5-2 minutes a
function on two cores); negative x give the same magnitudes, bit for bit (the lanes compute on
|x|). The two-series form it replaces measured 1.27 u. The rest of the error, roughly: the last
rounding (0.5 u, up to 1 u of the exact value just above a power of two), the correction's
rounding (up to 0.5 u where it is above 1/2), w's rounding times z, P's approximation (0.116 u)
and low's factor (0.053 u).

`trig`, |x| <= TRIG_REDUCTION_LIMIT = 2^40, in f64 lanes (x extended exactly): j = roundeven(x *
2/pi) and r = x - j pi/2 by three fmas of -j and `HALF_PI_PARTS` (the first exact: x - j P1 is a
multiple of 2^-52 below 2 in magnitude; the rest of pi/2 beyond the parts, 5.6e-50, times j <
2^40, is negligible even against the smallest remainder); j mod 4 = j - 4 floor(j / 4) exactly.
Both sin r = r + r^3 P(r^2) and cos r = 1 + r^2 Q(r^2) (Taylor to degree 11 and 12: the rest below
2^-36 relative on |r| <= pi/4) in f64, each rounded once to f32; the quadrant (+1 for cos) picks
cos r for odd quadrants and negates quadrants 2 and 3 (bit 1 moved to the sign). Within
u (1 + 2^-12) of the exact value (WIDE_ERROR_BOUND). +-0 keeps its sign for sin; NaN and +-inf give
NaN (x - inf * pi/2).

Preconditions: an emitter of f32 scalars or vectors of f32. Limits: beyond 2^17 (`narrow_trig`)
and 2^40 (`trig`) the lanes are the caller's (the returned masks).
"""

from __future__ import annotations

import math as pymath

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from mlc.transforms.lowering.math_expansion import ROUNDING_SHIFT, WIDE_ERROR_BOUND, MathEmitter

__all__ = ["NARROW_ERROR_BOUND", "NARROW_TRIG_LIMIT", "TRIG_REDUCTION_LIMIT", "WIDE_ERROR_BOUND", "narrow_trig", "trig"]

TWO_OVER_PI = 0.6366197723675814
"""2/pi rounded to f64."""
HALF_PI_PARTS = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)
"""pi/2 as the sum of three f64 (each the rounding of what the earlier ones leave; the rest is
5.6e-50): the Cody-Waite steps of `trig`, each product taken exactly by an fma."""
TRIG_REDUCTION_LIMIT = 2.0**40
"""sin and cos reduce |x| <= this in f64 lanes (the f64 quotient's rounding leaves j within one of
the nearest multiple; the three-part reduction is exact but for its last two roundings); beyond,
lanes take libm (`ExpandMathForCpu`)."""
NARROW_TRIG_LIMIT = 2.0**17
"""sin and cos reduce |x| <= this in f32 lanes (`narrow_trig`: n < 2^17, |r| < 1.5825, the first
reduction step exact). Beyond, lanes take the f64 reduction (`trig`)."""
INVERSE_PI_NARROW = 0.31830987334251404
"""1/pi rounded to f32."""
HALF_PI_NARROW_PARTS = (1.5707963705062866, -4.371138828673793e-08, -1.7151245100058819e-15)
"""pi/2 as the sum of three f32 (each the rounding of what the earlier ones leave; the rest is
1.1e-23, times n < 2^17, below 2^-59): cos's reduction."""
PI_NARROW_PARTS = tuple(2.0 * part for part in HALF_PI_NARROW_PARTS)
"""pi as the sum of three f32 (twice the parts of pi/2, exactly): sin's reduction."""
NARROW_ERROR_BOUND = 1.5
"""sin and cos in f32 lanes (|x| <= NARROW_TRIG_LIMIT): the stated relative error, in u = 2^-24
(see the module docstring for the measurement)."""
SINE_REDUCED_LIMIT = 1.5825
"""|r| < pi (1/2 + 0.0036) after `narrow_trig`'s reduction: the interval of the fit below."""
SINE_NARROW_COEFFICIENTS = (2.6048369363707025e-06, -1.9809331570286304e-04, 8.333065547049046e-03, -1.6666659712791443e-01)
"""sin r = r + r^3 P(z), z = r^2, on |r| <= SINE_REDUCED_LIMIT, highest degree first: fitted for
this project by Lawson's iteratively reweighted least squares toward the minimax of the relative
error (r^3 (P - (sin r - r) / r^3) / sin r) at 4000 Chebyshev points of z in [0, 1.5825^2], in
float64, the coefficients rounded to f32 from the lowest degree up, the higher ones refitted after
each: 0.116 u at most (0.110 before the rounding)."""
LOW_COSINE_FACTOR = -0.4163
"""low cos(high) ~ low (1 + c high^2): c minimizes max |cos h - 1 - c h^2| h / sin h over
|h| <= SINE_REDUCED_LIMIT (0.053; c = -1/2, Taylor's, gives 0.37 at pi/2), so that low's term adds
at most 0.053 u relative (|low| is within about an ulp of high)."""
SIN_COEFFICIENTS = tuple((-1) ** k / pymath.factorial(2 * k + 1) for k in range(5, 0, -1))
"""sin r = r + r z P(z), z = r^2, P Taylor's -1/3! + z/5! - ... - z^4/11! in f64, highest degree
first: for |r| <= pi/4 the rest is below r^13/13! < 1.1e-11 |sin r| (2^-36)."""
COS_COEFFICIENTS = tuple((-1) ** k / pymath.factorial(2 * k) for k in range(6, 0, -1))
"""cos r = 1 + z P(z), P Taylor's -1/2! + z/4! - ... + z^5/12! in f64, highest degree first: the
rest is below z^7/14! < 4e-13 for |r| <= pi/4."""
SIGN_BIT = -0x80000000
"""The f32 sign bit as an i32."""


def narrow_trig(emitter: MathEmitter, x: SSAValue, cosine: bool) -> tuple[SSAValue, SSAValue]:
    """sin x (or cos x) in f32 lanes where |x| <= NARROW_TRIG_LIMIT, NaN for NaN and +-inf,
    sin(-0) = -0; and the i32 lane mask of the finite x beyond, whose lanes the caller takes from
    `trig` (see the module docstring)."""
    e = emitter
    a = e.emit(math.AbsFOp(x))
    if cosine:  # n = 2m + 1, m = roundeven(a/pi - 1/2): r = a - n pi/2
        m = e.emit(math.RoundEvenOp(e.fma(a, e.real(INVERSE_PI_NARROW), e.real(-0.5))))
        n = e.fma(m, e.real(2.0), e.real(1.0))
        parity = e.emit(arith.AddfOp(m, e.real(ROUNDING_SHIFT + 1.0)))  # bit 0: m + 1's
        parts = HALF_PI_NARROW_PARTS
    else:  # n = roundeven(a/pi): r = a - n pi; a f32(1/pi) + 1.5 2^23 rounded once to an integer
        parity = e.fma(a, e.real(INVERSE_PI_NARROW), e.real(ROUNDING_SHIFT))  # bit 0: n's
        n = e.emit(arith.SubfOp(parity, e.real(ROUNDING_SHIFT)))  # exact
        parts = PI_NARROW_PARTS
    high, low = _reduce(e, a, n, parts, cosine)
    sine = _sine(e, high, low)
    sign = e.emit(arith.ShLIOp(e.bits(parity), e.integer(31)))
    if not cosine:  # sin x = sign(x) sin |x|
        sign = e.emit(arith.AndIOp(e.emit(arith.XOrIOp(sign, e.bits(x))), e.integer(SIGN_BIT)))
    value = e.real_of(e.emit(arith.XOrIOp(e.bits(sine), sign)))
    return value, e.beyond(x, NARROW_TRIG_LIMIT)


def _reduce(e: MathEmitter, a: SSAValue, n: SSAValue, parts: tuple[float, ...], recover: bool) -> tuple[SSAValue, SSAValue]:
    """(high, low) with high + low = a - n (P1 + P2 + P3) to about 2^-48 relative; `recover`: add
    what the first step lost where it rounds (cos's n = 1, a < 1; see the module docstring)."""
    negated = e.emit(arith.NegfOp(n))
    first, second, third = (e.real(part) for part in parts)
    exact = e.fma(negated, first, a)
    # n P2 = product + product_low exactly; exact - product by Fast2Sum (exact is a multiple of
    # 2^-24, at least ulp(product) as |product| < 2^-7): high + (lost - product_low) exactly.
    product = e.emit(arith.MulfOp(n, second))
    product_low = e.fma(n, second, e.emit(arith.NegfOp(product)))
    high = e.emit(arith.SubfOp(exact, product))
    lost = e.emit(arith.SubfOp(e.emit(arith.SubfOp(exact, high)), product))
    tail = e.emit(arith.SubfOp(lost, product_low))
    if recover:  # Fast2Sum(-P1, a) where the first step rounded; 0 elsewhere
        tail = e.emit(arith.AddfOp(tail, e.emit(arith.SubfOp(a, e.fma(n, first, exact)))))
    return high, e.fma(negated, third, tail)


def _sine(e: MathEmitter, high: SSAValue, low: SSAValue) -> SSAValue:
    """sin(high + low) for |high + low| < SINE_REDUCED_LIMIT, |low| within about ulp(high): high +
    (z w + low), w = high P(z) + c low (see the module docstring)."""
    z = e.emit(arith.MulfOp(high, high))
    z_low = e.fma(high, high, e.emit(arith.NegfOp(z)))  # high^2 = z + z_low exactly
    *rest, leading = SINE_NARROW_COEFFICIENTS
    z_rest = e.emit(arith.MulfOp(z, e.horner(tuple(rest), z)))  # z P'(z), P = c0 + z P'(z)
    w = e.fma(high, z_rest, e.emit(arith.MulfOp(low, e.real(LOW_COSINE_FACTOR))))
    w = e.fma(high, e.real(leading), w)  # high P(z) + c low, rounded once
    correction = e.fma(z, w, e.fma(z_low, w, low))
    return e.emit(arith.AddfOp(high, correction))


def reduce_by_half_pi(emitter: MathEmitter, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(r, j mod 4) with r = x - j pi/2 and j = roundeven(x 2/pi), in f64 (see `trig`)."""
    e = emitter
    j = e.emit(math.RoundEvenOp(e.emit(arith.MulfOp(x, e.wide_real(TWO_OVER_PI)))))
    negated = e.emit(arith.NegfOp(j))
    remainder = x
    for part in HALF_PI_PARTS:  # x - j pi/2: exact but for the last two fmas' roundings
        remainder = e.fma(negated, e.wide_real(part), remainder)
    quarter = e.emit(math.FloorOp(e.emit(arith.MulfOp(j, e.wide_real(0.25)))))
    return remainder, e.fma(quarter, e.wide_real(-4.0), j)  # j mod 4, exactly (|j| < 2^53)


def by_quadrant(emitter: MathEmitter, x: SSAValue, quadrant_bits: SSAValue, sine: SSAValue, cosine_value: SSAValue, cosine: bool) -> SSAValue:
    """sin r for even quadrants, cos r for odd ones, negated in quadrants 2 and 3; sin(+-0)
    keeps x's sign."""
    e = emitter
    odd = e.emit(arith.SubiOp(e.integer(0), e.emit(arith.AndIOp(quadrant_bits, e.integer(1)))))
    value = e.pick(odd, cosine_value, sine)
    # Quadrants 2 and 3 negate: the quadrant's bit 1 moved to the sign bit.
    sign = e.emit(arith.ShLIOp(e.emit(arith.AndIOp(quadrant_bits, e.integer(2))), e.integer(30)))
    value = e.real_of(e.emit(arith.XOrIOp(e.bits(value), sign)))
    if not cosine:  # +-0 keeps its sign (the reduction's x - 0 * pi/2 gives +0 for -0)
        value = e.pick(e.below(e.magnitude(x), 1), x, value)
    return value


def trig(emitter: MathEmitter, x: SSAValue, cosine: bool) -> tuple[SSAValue, SSAValue]:
    """sin x (or cos x) where |x| <= TRIG_REDUCTION_LIMIT, NaN for NaN and +-inf, sin(-0) = -0;
    and the i32 lane mask of the finite x beyond the limit, whose lanes the caller computes
    otherwise (see the module docstring)."""
    e = emitter
    remainder, quadrant = reduce_by_half_pi(e, e.emit(arith.ExtFOp(x, e.wide_type)))
    if cosine:  # cos x = sin(x + pi/2)
        quadrant = e.emit(arith.AddfOp(quadrant, e.wide_real(1.0)))
    quadrant_bits = e.integral_to_integer(e.emit(arith.TruncFOp(quadrant, e.float_type)))
    # Both series in f64 (|r| <= pi/4 (1 + 2^-40)), each rounded once to f32.
    z = e.emit(arith.MulfOp(remainder, remainder))
    cube = e.emit(arith.MulfOp(remainder, z))
    sine = e.fma(cube, e.horner(SIN_COEFFICIENTS, z, wide=True), remainder)
    cosine_value = e.fma(z, e.horner(COS_COEFFICIENTS, z, wide=True), e.wide_real(1.0))
    sine = e.emit(arith.TruncFOp(sine, e.float_type))
    cosine_value = e.emit(arith.TruncFOp(cosine_value, e.float_type))
    value = by_quadrant(e, x, quadrant_bits, sine, cosine_value, cosine)
    return value, e.finite_beyond(x, TRIG_REDUCTION_LIMIT)
