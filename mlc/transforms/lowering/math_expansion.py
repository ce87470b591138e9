"""Branch-free f32 arithmetic for exp, log, tanh, erf and the exact GELU (expand-math-for-cpu's).

`MathEmitter(block, type, scaling)` appends to `block` the `arith`/`math` ops (fma, roundeven,
integer bit operations, lane masks; no branches, no arith.cmpf, which xDSL 0.74 builds for
scalars only) that compute one of these functions of an f32 scalar or vector, constants splatted
to its shape, so that LLVM vectorizes them with the loop around them.

Algorithms (f32 scalars and vectors; other types are left to convert-math-to-llvm):

* exp(x): x is clamped to [-104, 89] (beyond it the result is 0 or +inf anyway);
  n = roundeven(x * log2(e)); r = x - n*ln2 with ln2 split in two f32 parts (each product taken
  exactly by an fma), so |r| <= ln2/2; e^r = 1 + r + r^2 * P(r), P Cephes' degree-5 minimax
  polynomial (`expf.c`); the result is e^r * 2^n1 * 2^n2 with n1 = n >> 1, n2 = n - n1, two
  scalings that are exact until the last, which rounds once into the subnormal range; with
  `scaling=ldexp` (AVX-512's `vscalefps` computes it in one instruction; elsewhere LLVM would
  call libm's ldexpf per element) it is `llvm.ldexp(e^r, n)`, rounded once: the same value. The
  integer n is read from the mantissa of n + 1.5 * 2^23 (xDSL's arith.fptosi takes no vectors),
  which LLVM's ldexp converts back to f32 for `vscalefps`: with `scaling=scalef` (the default
  where the host has AVX-512) a 16-lane exp calls `vscalefps` (`llvm.x86.avx512.mask.scalef.ps.512`)
  on the f32 n itself, three instructions fewer per 16 exps (softmax's exp loop: 25 -> 22), the
  same value; other types, and hosts without AVX-512, take `llvm.ldexp`.
  The clamps propagate NaN, so a NaN operand gives NaN. Where the argument is known to lie in
  the clamps' range or be NaN (erf's -a^2), they are left out.
* log(x): x = m * 2^e with m in [0.5, 1) read from the bits (subnormals scaled by 2^23 first),
  m < sqrt(1/2) taken as 2m with e - 1; with f = m - 1 (exact), log x = f - f^2 / 2 +
  f^3 P(f) + e ln2, P Cephes' degree-8 polynomial (`logf.c`), ln2 in two parts (Cephes').
  Choices between forms (subnormal or not, m below sqrt(1/2), the special values: NaN below 0
  and for NaN, -inf at +-0, +inf at +inf) are integer lane masks (`x - bound >> 31`) and
  and/or of the bits: xDSL 0.74 builds `arith.cmpf` for scalars only.
* tanh(x): for |x| < 0.625, x + x * z * Q(z) with z = x^2 (Cephes' `tanhf.c` polynomial);
  otherwise 1 - 2 / (exp(2|x|) + 1) with the exp above (1 when exp(2|x|) overflows; NaN for
  NaN), chosen by a lane mask of |x|'s bits; the sign of x is copied onto either (so
  tanh(-0) = -0).
* erf(x): for |x| < 1, x + x * Q(x^2) (Q a degree-6 polynomial fitted for this pass: the
  leading 2/sqrt(pi) - 1 carries an eighth of the rounding error that 2/sqrt(pi) would);
  otherwise, with a = min(|x|, 4) (erf rounds to 1 beyond), 1 - e^(-a^2) R(1/a) rounded once by
  an fma, R a degree-8 polynomial in 1/a fitted for this pass (erfc(a) e^(a^2) ~ 1 / (a sqrt(pi))
  is smooth in 1/a), e^(-a^2) by the exp above (its error, and a^2's rounding, scaled by erfc(a)
  <= 0.16, count for less than 1 u of erf); the sign of x copied onto it. The two forms are
  chosen by a lane mask of |x|'s bits (NaN takes the second, which keeps it). The polynomials:
  Lawson's iteratively reweighted least squares toward the relative minimax in float64,
  coefficients rounded to f32 (`ERF_SMALL_COEFFICIENTS`, `ERF_LARGE_COEFFICIENTS`).

* gelu_erf(x) = x Phi(x) (graph.gelu's exact form, 0.5 x (1 + erf(x / sqrt 2)), which the pass
  finds and replaces whole): with a = |x| and Q(a) = 1 - Phi(a) = erfc(a / sqrt 2) / 2 in
  (0, 1/2], Phi(x) is Q(a) for x < 0 (-0 included) and 1 - Q(a) otherwise, and
  Q(a) = 2^L, L = -a^2 log2(e) / 2 + R(min(a, 5.7)), R a degree-8 polynomial (R is smooth:
  -1 at 0, about -log2(a sqrt(2 pi)) for large a), L held at -150 or above; 2^L = 2^f * 2^n with
  n = roundeven(L), f = L - n exactly, 2^f a degree-6 polynomial and the scaling of exp. No
  division, no second form to pick from (erf's composition computes two and an exp): 27 vector
  ops per 16 elements instead of ~45, and the tails saturate by themselves (1 - Q rounds to 1
  for a > 5.4, 2^L underflows to 0 for a beyond ~13.2, -inf x 0 = NaN at x = -inf as in the
  definition). The error is stated relative to |x| (as error_bounds.py states gelu's): Phi's
  absolute error (R's, each rounding of L, 2^f's, 1 - Q's) times |x|.

Accuracy (stated, and checked by test/python/transforms/llvm/test_expand_math_for_cpu.py
against numpy in float64 over the whole f32 range and the special values): relative error at most
`RELATIVE_ERROR_BOUND` (in units of u = 2^-24) from the exact value, where the exact value is a
normal f32, and at most 2^-149 (one subnormal step) absolute below. This is within the ACCURACY
table of `mlc/dialects/graph/error_bounds.py` (exp, tanh and erf: 1 + 4 u of correct rounding;
log: 1 + 2 u; measured 1.32 u over 2^22 bit patterns; erf: stated 3 u, measured 1.30 u over 2^23 values: 2^22 bit patterns and 2^22 points of [-4.5, 4.5]).

gelu_erf: at most `GELU_ERROR_BOUND` u * |x| from the exact x Phi(x) (measured 1.97 u over
2^23 values: 2^22 bit patterns and 2^22 points of [-12, 12]; the composition with the 3 u erf
above measures 1.9 u and guarantees about 3.7 u * |x|: 0.5 |x| times erf's 3 u, 1 + erf's rounding
and the argument's; PyTorch's vectorized erf, Abramowitz-Stegun 7.1.26, measures 6.3 u * |x|).

Preconditions: f32 scalars or vectors of f32. Limits: `scaling=scalef` applies to 16-lane
vectors only (others take llvm.ldexp, the same value); the intrinsic exists on x86 with
AVX-512 only (the pass checks the host).
"""

from __future__ import annotations

import math as pymath
import struct

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, FloatAttr, IntegerAttr, VectorType, f32, i16, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue

RELATIVE_ERROR_BOUND = {"exp": 3.0, "log": 2.0, "tanh": 4.0, "erf": 3.0}
"""The stated maximum relative error of each expansion from the exact value, in units of 2^-24."""
GELU_ERROR_BOUND = 2.5
"""The stated maximum error of gelu_erf(x) from the exact x Phi(x), in units of 2^-24 times |x|."""

LOG2_E = 1.4426950408889634
LN2_HIGH = struct.unpack("<f", struct.pack("<f", pymath.log(2.0)))[0]
LN2_LOW = pymath.log(2.0) - LN2_HIGH
EXP_LOWEST, EXP_HIGHEST = -104.0, 89.0
EXP_COEFFICIENTS = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
"""Cephes expf: e^r = 1 + r + r^2 * P(r) on [-ln2/2, ln2/2], highest degree first."""
TANH_COEFFICIENTS = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
"""Cephes tanhf: tanh(x) = x + x * z * Q(z), z = x^2, for |x| < 0.625, highest degree first."""
TANH_POLYNOMIAL_LIMIT = 0.625
ROUNDING_SHIFT = 12582912.0
"""1.5 * 2^23: integers of magnitude below 2^22 added to it fill the low bits of its mantissa."""
ROUNDING_SHIFT_BITS = 0x4B400000
LOG_COEFFICIENTS = (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
)
"""Cephes logf: log(1 + f) = f - f^2 / 2 + f^3 * P(f) for f in [sqrt(1/2) - 1, sqrt(2) - 1],
highest degree first."""
ERF_SMALL_COEFFICIENTS = (
    7.85400188760832e-05, -8.010239689610898e-04, 5.188333801925182e-03, -2.6853814721107483e-02,
    1.128358542919159e-01, -3.761262595653534e-01, 1.2837916612625122e-01,
)
"""erf(x) = x + x * Q(x^2) for |x| < 1 (Q = erf(x) / x - 1, a degree-6 fit in x^2 of this
project: Lawson's weighted minimax, relative), highest degree first."""
ERF_LARGE_COEFFICIENTS = (
    -1.1374641209840775e-02, 3.7999145686626434e-02, 4.028272349387407e-03, -2.1907082200050354e-01,
    4.8094043135643005e-01, -4.6466749906539917e-01, 4.015978053212166e-02, 5.593158006668091e-01,
    2.5309488410130143e-04,
)
"""erfc(a) = e^(-a^2) * R(1/a) for a in [1, 4] (R a degree-8 fit in 1/a of this project, as
above), highest degree first."""
ERF_POLYNOMIAL_LIMIT, ERF_HIGHEST = 1.0, 4.0
"""Below 1 the odd polynomial; beyond 4 erf rounds to +-1 in f32 (erfc(3.9) < 2^-25)."""
GELU_TAIL_COEFFICIENTS = (
    -2.772049356281059e-06, 3.862075027427636e-05, -1.8254760652780533e-04, -1.4587014447897673e-04,
    7.075471803545952e-03, -5.250502750277519e-02, 2.621425986289978e-01, -1.1511057615280151, -1.0,
)
"""R(b) = log2 Q(b) + b^2 log2(e) / 2 for b in [0, 5.7], Q(b) = erfc(b / sqrt 2) / 2 the upper
tail of the standard normal distribution (a degree-8 fit in b of this project, highest degree
first: Lawson's reweighted least squares toward the minimax of the error it causes in Phi,
|R error| * Q(b) ln 2, at 4000 Chebyshev points in float64, coefficients rounded to f32)."""
GELU_POLYNOMIAL_HIGHEST, GELU_LOWEST_LOG2 = 5.7, -150.0
"""R's argument is clamped at 5.7 (beyond, Q < 6e-9 and the clamp's error in Q is below Q
itself); log2 Q is held at -150 (2^-150 rounds to 0)."""
EXP2_COEFFICIENTS = (
    1.5345810970757157e-04, 1.3399930903688073e-03, 9.618489071726799e-03, 5.550328642129898e-02,
    2.4022646248340607e-01, 6.931471824645996e-01, 1.0,
)
"""2^f for f in [-1/2, 1/2], a degree-6 fit of the relative error (as above; 0.03 u in float64),
highest degree first."""
LN2_LOG_HIGH, LN2_LOG_LOW = 0.693359375, -2.12194440e-4
"""ln 2 = HIGH + LOW, HIGH with few bits so that e * HIGH is exact (Cephes logf)."""
SMALLEST_NORMAL_BITS, SQRT_HALF_BITS, INFINITY_BITS = 0x00800000, 0x3F3504F3, 0x7F800000
SCALINGS = ("scalef", "ldexp", "multiply")
SCALEF_LANES = 16
SCALEF_INTRINSIC = "llvm.x86.avx512.mask.scalef.ps.512"
"""vscalefps zmm (a, b, passthrough, lane mask, rounding): a * 2^floor(b) per lane, rounded once
(rounding 4: the current mode, MXCSR's round-to-nearest-even)."""

class MathEmitter:
    """Appends ops to `block`, with constants splatted to the operand's shape."""

    def __init__(self, block: Block, float_type: Attribute, scaling: str = "multiply"):
        self.block = block
        self.float_type = float_type
        shape = float_type.get_shape() if isinstance(float_type, VectorType) else None
        # vscalefps of a whole zmm register only: other widths take llvm.ldexp (the same value).
        self.scaling = "ldexp" if scaling == "scalef" and shape != (SCALEF_LANES,) else scaling
        self.int_type = VectorType(i32, shape) if shape is not None else i32

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def constant(self, value: float | int, value_type: Attribute) -> SSAValue:
        """`value` of `value_type` (f32 or i32), splatted when it is a vector."""
        if isinstance(value_type, VectorType):
            attribute: Attribute = DenseIntOrFPElementsAttr.from_list(value_type, [value])
        elif isinstance(value, float):
            attribute = FloatAttr(value, f32)
        else:
            attribute = IntegerAttr(value, value_type)
        return self.emit(arith.ConstantOp(attribute, value_type))

    def real(self, value: float) -> SSAValue:
        return self.constant(float(value), self.float_type)

    def integer(self, value: int) -> SSAValue:
        return self.constant(value, self.int_type)

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.emit(math.FmaOp(a, b, c))

    def horner(self, coefficients: tuple[float, ...], x: SSAValue) -> SSAValue:
        result = self.real(coefficients[0])
        for coefficient in coefficients[1:]:
            result = self.fma(result, x, self.real(coefficient))
        return result

    def integral_to_integer(self, value: SSAValue) -> SSAValue:
        """An integral f32 of magnitude below 2^22 as i32: adding 1.5 * 2^23 puts it in the low
        mantissa bits, exactly (xDSL's arith.fptosi takes no vectors)."""
        shifted = self.emit(arith.AddfOp(value, self.real(ROUNDING_SHIFT)))
        bits = self.emit(arith.BitcastOp(shifted, self.int_type))
        return self.emit(arith.SubiOp(bits, self.integer(ROUNDING_SHIFT_BITS)))

    def power_of_two(self, exponent: SSAValue) -> SSAValue:
        """2^exponent as f32, for an i32 exponent in [-126, 127]."""
        biased = self.emit(arith.AddiOp(exponent, self.integer(127)))
        bits = self.emit(arith.ShLIOp(biased, self.integer(23)))
        return self.emit(arith.BitcastOp(bits, self.float_type))

    def exp(self, x: SSAValue, in_range: bool = False) -> SSAValue:
        """e^x (see the module docstring); NaN for NaN. `in_range`: the caller knows x is in
        [EXP_LOWEST, EXP_HIGHEST] or NaN, so the clamps are left out."""
        # maximumf/minimumf keep a NaN: it reaches the polynomial, and NaN times any scale is NaN.
        clamped = x
        if not in_range:
            clamped = self.emit(arith.MaximumfOp(clamped, self.real(EXP_LOWEST)))
            clamped = self.emit(arith.MinimumfOp(clamped, self.real(EXP_HIGHEST)))
        n = self.emit(math.RoundEvenOp(self.emit(arith.MulfOp(clamped, self.real(LOG2_E)))))
        r = self.fma(n, self.real(-LN2_HIGH), clamped)
        r = self.fma(n, self.real(-LN2_LOW), r)
        p = self.horner(EXP_COEFFICIENTS, r)
        p = self.fma(p, self.emit(arith.MulfOp(r, r)), r)
        p = self.emit(arith.AddfOp(p, self.real(1.0)))
        return self.scale(p, n)

    def scale(self, p: SSAValue, n: SSAValue) -> SSAValue:
        """p * 2^n rounded once, for an integral f32 n in [-150, 127] (see `scaling`)."""
        if self.scaling == "scalef":  # p * 2^n straight from the f32 n: no integer round trip
            every_lane, current_rounding = self.constant(-1, i16), self.constant(4, i32)
            return self.emit(llvm.CallIntrinsicOp(SCALEF_INTRINSIC, [p, n, p, every_lane, current_rounding], [self.float_type]))
        exponent = self.integral_to_integer(n)
        if self.scaling == "ldexp":
            return self.emit(llvm.CallIntrinsicOp(f"llvm.ldexp.{_suffix(self.float_type)}.{_suffix(self.int_type)}", [p, exponent], [self.float_type]))
        half = self.emit(arith.ShRSIOp(exponent, self.integer(1)))
        rest = self.emit(arith.SubiOp(exponent, half))
        scaled = self.emit(arith.MulfOp(p, self.power_of_two(half)))
        return self.emit(arith.MulfOp(scaled, self.power_of_two(rest)))


    def bits(self, value: SSAValue) -> SSAValue:
        return self.emit(arith.BitcastOp(value, self.int_type))

    def real_of(self, bits: SSAValue) -> SSAValue:
        return self.emit(arith.BitcastOp(bits, self.float_type))

    def below(self, bits: SSAValue, bound: int) -> SSAValue:
        """All ones where the i32 `bits` < `bound` (signed), else zero: a lane mask without
        arith.cmpf (which xDSL 0.74 builds for scalars only)."""
        return self.emit(arith.ShRSIOp(self.emit(arith.SubiOp(bits, self.integer(bound))), self.integer(31)))

    def pick(self, mask: SSAValue, chosen: SSAValue, other: SSAValue) -> SSAValue:
        """`chosen` (f32) where the i32 mask is all ones, `other` where it is zero."""
        inverse = self.emit(arith.XOrIOp(mask, self.integer(-1)))
        kept = self.emit(arith.AndIOp(self.bits(chosen), mask))
        return self.real_of(self.emit(arith.OrIOp(kept, self.emit(arith.AndIOp(self.bits(other), inverse)))))

    def log(self, x: SSAValue) -> SSAValue:
        """ln x (see the module docstring); NaN below 0 and for NaN, -inf at +-0, +inf at +inf."""
        bits = self.bits(x)
        subnormal = self.below(bits, SMALLEST_NORMAL_BITS)  # also 0 and negatives: fixed below
        bits = self.bits(self.pick(subnormal, self.emit(arith.MulfOp(x, self.real(2.0**23))), x))
        exponent = self.emit(arith.SubiOp(self.emit(arith.ShRSIOp(bits, self.integer(23))), self.integer(126)))
        exponent = self.emit(arith.AddiOp(exponent, self.emit(arith.AndIOp(subnormal, self.integer(-23)))))
        mantissa_bits = self.emit(arith.OrIOp(self.emit(arith.AndIOp(bits, self.integer(0x007FFFFF))), self.integer(0x3F000000)))
        m = self.real_of(mantissa_bits)  # x = m * 2^exponent, m in [0.5, 1)
        low = self.below(mantissa_bits, SQRT_HALF_BITS)  # m < sqrt(1/2): use 2m, exponent - 1
        exponent = self.emit(arith.AddiOp(exponent, low))
        one = self.real(1.0)
        f = self.pick(low, self.emit(arith.SubfOp(self.emit(arith.AddfOp(m, m)), one)), self.emit(arith.SubfOp(m, one)))
        e = self.emit(arith.SubfOp(self.real_of(self.emit(arith.AddiOp(exponent, self.integer(ROUNDING_SHIFT_BITS)))), self.real(ROUNDING_SHIFT)))
        z = self.emit(arith.MulfOp(f, f))
        y = self.emit(arith.MulfOp(self.emit(arith.MulfOp(self.horner(LOG_COEFFICIENTS, f), f)), z))
        y = self.fma(e, self.real(LN2_LOG_LOW), y)
        y = self.fma(z, self.real(-0.5), y)
        result = self.fma(e, self.real(LN2_LOG_HIGH), self.emit(arith.AddfOp(f, y)))
        original = self.bits(x)
        result = self.pick(self.emit(arith.XOrIOp(self.below(original, INFINITY_BITS), self.integer(-1))), x, result)
        result = self.pick(self.emit(arith.ShRSIOp(original, self.integer(31))), self.real(float("nan")), result)
        magnitude = self.emit(arith.AndIOp(original, self.integer(0x7FFFFFFF)))
        return self.pick(self.below(magnitude, 1), self.real(float("-inf")), result)

    def tanh(self, x: SSAValue) -> SSAValue:
        """tanh x (see the module docstring); NaN for NaN, the sign of x (tanh(-0) = -0)."""
        magnitude = self.emit(math.AbsFOp(x))
        z = self.emit(arith.MulfOp(magnitude, magnitude))
        q = self.emit(arith.MulfOp(self.horner(TANH_COEFFICIENTS, z), z))
        small = self.fma(q, magnitude, magnitude)
        e = self.exp(self.emit(arith.AddfOp(magnitude, magnitude)))
        fraction = self.emit(arith.DivfOp(self.real(2.0), self.emit(arith.AddfOp(e, self.real(1.0)))))
        large = self.emit(arith.SubfOp(self.real(1.0), fraction))
        # |x| < 0.625 as a lane mask of the bits (a NaN's bits are above: the exp form, NaN).
        is_small = self.below(self.bits(magnitude), _f32_bits(TANH_POLYNOMIAL_LIMIT))
        # Both forms are >= 0 for |x|: tanh is odd, copysign gives the sign of x (and -0).
        return self.emit(math.CopySignOp(self.pick(is_small, small, large), x))

    def erf(self, x: SSAValue) -> SSAValue:
        """erf x (see the module docstring); NaN for NaN, +-1 at +-inf, the sign of x (-0 too)."""
        magnitude = self.emit(math.AbsFOp(x))
        z = self.emit(arith.MulfOp(x, x))
        small = self.fma(x, self.horner(ERF_SMALL_COEFFICIENTS, z), x)
        clamped = self.emit(arith.MinimumfOp(magnitude, self.real(ERF_HIGHEST)))  # keeps a NaN
        inverse = self.emit(arith.DivfOp(self.real(1.0), clamped))
        square = self.emit(arith.MulfOp(clamped, clamped))
        gaussian = self.exp(self.emit(arith.NegfOp(square)), in_range=True)  # -a^2 in [-16, 0] or NaN
        # erfc(a) = e^(-a^2) R(1/a); 1 - erfc(a) rounded once.
        large = self.fma(self.emit(arith.NegfOp(gaussian)), self.horner(ERF_LARGE_COEFFICIENTS, inverse), self.real(1.0))
        is_small = self.below(self.bits(magnitude), _f32_bits(ERF_POLYNOMIAL_LIMIT))
        return self.pick(is_small, small, self.emit(math.CopySignOp(large, x)))


    def gelu_erf(self, x: SSAValue) -> SSAValue:
        """x * Phi(x), Phi the standard normal distribution (the exact GELU, see the module
        docstring); NaN for NaN and -inf, +inf at +inf, -0 at -0."""
        magnitude = self.emit(math.AbsFOp(x))
        clamped = self.emit(arith.MinimumfOp(magnitude, self.real(GELU_POLYNOMIAL_HIGHEST)))  # keeps a NaN
        correction = self.horner(GELU_TAIL_COEFFICIENTS, clamped)
        square = self.emit(arith.MulfOp(magnitude, magnitude))
        # log2 Q(|x|) = -x^2 log2(e) / 2 + R(|x|), held above -150 (Q = 0 in f32 there, and
        # the scaling's range); an infinite |x| gives -inf, held too; NaN stays NaN.
        log_tail = self.fma(square, self.real(-LOG2_E / 2), correction)
        log_tail = self.emit(arith.MaximumfOp(log_tail, self.real(GELU_LOWEST_LOG2)))
        n = self.emit(math.RoundEvenOp(log_tail))
        fraction = self.emit(arith.SubfOp(log_tail, n))  # exact, in [-1/2, 1/2]
        tail = self.scale(self.horner(EXP2_COEFFICIENTS, fraction), n)  # Q(|x|) in (0, 1/2]
        below_zero = self.emit(arith.ShRSIOp(self.bits(x), self.integer(31)))  # -0 too: Phi = 1/2
        distribution = self.pick(below_zero, tail, self.emit(arith.SubfOp(self.real(1.0), tail)))
        return self.emit(arith.MulfOp(x, distribution))

def _f32_bits(value: float) -> int:
    return struct.unpack("<i", struct.pack("<f", value))[0]


def _suffix(value_type: Attribute) -> str:
    """LLVM's name of a scalar or vector type in an overloaded intrinsic's name (`v16f32`, `i32`)."""
    if isinstance(value_type, VectorType):
        return f"v{value_type.get_shape()[0]}{_suffix(value_type.element_type)}"
    return "f32" if isinstance(value_type, Float32Type) else f"i{value_type.width.data}"  # type: ignore[attr-defined]
