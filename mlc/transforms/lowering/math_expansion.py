"""Branch-free f32 arithmetic for exp, log, tanh, erf, pow, rsqrt and the exact GELU, and the helpers of sin and cos (trig_expansion.py) (expand-math-for-cpu's).

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
  (0, 1/2], Phi(x) is Q(a) for x < 0 and 1 - Q(a) otherwise, so x Phi(x) = max(x, -0) - a Q(a):
  one fma (rounded once) instead of a select, 1 - Q and a product. Q(a) = 2^L with
  L = P(a) = log2 Q(a), P a degree-8 polynomial (the Gaussian's -a^2 log2(e) / 2 folded in; its
  leading coefficient negative, so that P keeps falling beyond the fitted [0, 5.5] down to -inf:
  no clamp of a); 2^L = 2^f 2^floor(L), f = L - floor(L) in [0, 1] exactly (L <= -1), 2^f a
  degree-6 polynomial and the scaling of exp. With AVX-512 (`scaling=scalef`, 16 lanes): a =
  `vrangeps`(x, largest f32) (|x|, +inf -> the largest f32 so that a Q = 0 there, -inf -> +inf so
  that a Q = NaN), f = `vreduceps`(L) and `vscalefps`(2^f, L), which floors L itself and gives 0
  for L = -inf; elsewhere the same values from |min(x, largest)|, L held at -150, floor, a
  subtraction and the integer scalings. 19 vector ops per 16 elements (two Horner chains of 8 and
  6 fmas, vrangeps, vreduceps, vscalefps, vmaxps and the last fma), against 27 for the earlier
  form (a clamp of a, the quadratic apart, roundeven and a subtraction, a sign mask, a blend,
  1 - Q and the product) and ~45 for erf's composition (two forms, an exp, a division, a
  select). The tails saturate by themselves (1 - Q rounds to 1 beyond a = 5.4, 2^L underflows
  to 0 for a beyond ~13.2); NaN comes through max(x, -0) (x86's max returns its second operand,
  x, for a NaN), gelu(+inf) = +inf - 0, gelu(-inf) = -0 - inf * 0 = NaN as in the definition,
  and an underflowed x Phi(x) keeps x's sign (-0 - 0 = -0). The error is stated relative to |x|
  (as error_bounds.py states gelu's): Phi's absolute error (Q's) times |x|, plus the fma's
  rounding.

* sin(x), cos(x): trig_expansion.py (`narrow_trig` in f32 lanes, `trig` in f64 lanes), with
  this emitter's helpers.
* pow(x, y): pow_expansion.py (`power`, in f64 lanes), with this emitter's helpers.
* rsqrt(x) (`rsqrt`): with `scaling=scalef` (16-lane vectors, AVX-512) y0 = vrsqrt14ps(x)
  (relative error |e| < 2^-14, Intel's SDM; subnormal x as such, MXCSR's DAZ being off) and one
  Newton step in f32: h = x y0 (~sqrt(x): normal for every positive f32, where y0 y0 would
  overflow for subnormal x), r = fma(-h, y0, 1), y1 = fma(y0 / 2, r, y0) (y0 / 2 exact: y0 >=
  2^-64). With h = x y0 (1 + d1), r rounded with d2 and y1 with d3 (each |d| <= u):
  y1 sqrt(x) = (1 - 3e^2/2 - e^3/2 - (1 + e)^3 d1 / 2 + (1 + e) r d2 / 2) (1 + d3), |r| < 2^-12.9,
  so the error is at most 1.5 * 2^-4 u (the step's quadratic term, 2^-27.4) + 0.50009 u (h's
  rounding, halved by the step) + 2^-13.9 u (r's) + u (the last fma's) + their product: 1.594 u,
  within the stated 2 u; measured 1.2541 u over every finite positive f32 (bench/rsqrt_accuracy.py;
  the two-operation form below: 1.5000 u). Lanes of x outside (+0, +inf) (+-0, +inf,
  negatives, NaN, where h is NaN or y0 already exact) keep y0: +inf at +0, -inf at -0, +0 at
  +inf, NaN below 0 and for NaN, as vrsqrt14ps gives them (one llvm.select: LLVM folds it into a
  masked vfmadd). 7 vector instructions per 16 lanes (vrsqrt14ps, 2 vmulps, 2 fmas, vpaddd,
  vpcmpltud) against vsqrtps and vdivps, which issue once per ~5-10 cycles each. Other types (scalars,
  other widths) and scalings: 1 / sqrt(x), two correctly rounded operations, within 2 u.

Accuracy (stated, and checked by test/python/transforms/llvm/test_expand_math_for_cpu.py
against numpy in float64 over the whole f32 range and the special values): relative error at most
`RELATIVE_ERROR_BOUND` (in units of u = 2^-24) from the exact value, where the exact value is a
normal f32, and at most 2^-149 (one subnormal step) absolute below. This is within the ACCURACY
table of `mlc/dialects/graph/error_bounds.py` (exp, tanh and erf: 1 + 4 u of correct rounding;
log: 1 + 2 u; measured 1.32 u over 2^22 bit patterns; erf: stated 3 u, measured 1.30 u over 2^23 values: 2^22 bit patterns and 2^22 points of [-4.5, 4.5]).

gelu_erf: at most `GELU_ERROR_BOUND` (1.6) u * max(|x|, 2^-126) from the exact x Phi(x): a
running error analysis of the evaluation (the fma's rounding, at most (1 - Q) u |x| for x >= 0
and Q u |x| below, plus |x| |Q' - Q|, where Q' / Q - 1 is bounded by P's approximation error,
each Horner step's rounding carried through the later steps, and 2^f's approximation and
rounding) gives 1.55 u |x| at most over a in [0, 6] (beyond, Q' <= 2^-25.7 and Q < 2^-30: at most
1.31 u |x|); measured 1.27 u |x| over 12.6 M values (2^22 bit patterns, 2^22 points of [-16, 16]
and of [-3, 3]). The earlier form stated 2.5 u and measured 2.06 u over the same values; the
composition with the 3 u erf above guarantees about 3.7 u * |x|; PyTorch's vectorized erf
(Abramowitz-Stegun 7.1.26) measures 6.3 u * |x|.

Preconditions: f32 scalars or vectors of f32. Limits: `scaling=scalef` applies to 16-lane
vectors only (others take llvm.ldexp, the same value; rsqrt takes 1 / sqrt); its intrinsics
(vscalefps; vrangeps and vreduceps for gelu_erf; vrsqrt14ps for rsqrt) exist on x86 with AVX-512
F and DQ only (the pass checks the host).
"""

from __future__ import annotations

import math as pymath
import struct

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, FloatAttr, IntegerAttr, VectorType, f64, i16, i32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from mlc.dialects import llvm_extra

RELATIVE_ERROR_BOUND = {"exp": 3.0, "log": 2.0, "tanh": 4.0, "erf": 3.0, "sin": 2.0, "cos": 2.0, "rsqrt": 2.0, "powf": 2.0}
"""The stated maximum relative error of each expansion from the exact value, in units of 2^-24."""
GELU_ERROR_BOUND = 1.6
"""The stated maximum error of gelu_erf(x) from the exact x Phi(x), in units of 2^-24 times
max(|x|, 2^-126) (the running error analysis of the module docstring: 1.55)."""

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
GELU_LOG_TAIL_COEFFICIENTS = (
    -2.8406486762833083e-06, 3.945100979763083e-05, -1.865484518930316e-04, -1.3600228703580797e-04,
    7.062142714858055e-03, -5.249525234103203e-02, -4.5920851826667786e-01, -1.1511051654815674, -1.0,
)
"""L(a) = log2 Q(a) for a = |x| >= 0, Q(a) = erfc(a / sqrt 2) / 2 the upper tail of the standard
normal distribution, a degree-8 polynomial fitted for this project (highest degree first; the
quadratic -a^2 log2(e) / 2 folded in, the constant -1 = log2 Q(0) exact): Lawson's reweighted
least squares toward the minimax of the error it causes in Q, |L error| Q(a) ln 2 (0.135 u at
most), at 6000 Chebyshev points of [0, 5.5] in float64, coefficients rounded to f32 from the
lowest degree up, the higher ones refitted after each. The leading coefficient is negative: beyond
5.5 the polynomial keeps decreasing (L <= -25.7, Q < 2^-25.7, below what the bound notices) down to
-inf as a grows, so no clamp of a is needed."""
EXP2_COEFFICIENTS = (
    2.1565984934568405e-04, 1.2482288293540478e-03, 9.673775173723698e-03, 5.548618361353874e-02,
    2.4022908508777618e-01, 6.931470632553101e-01, 1.0,
)
"""2^f for f in [0, 1], a degree-6 fit of the relative error (as above, rounded from the lowest
degree up; 0.035 u), highest degree first; 2^0 = 1 exactly."""
GELU_LOWEST_LOG2 = -150.0
"""log2 Q is held at -150 where the scaling takes an integer exponent (2^-150 rounds to 0, as
vscalefps's 2^floor(L) does for any L below)."""
LARGEST_F32 = 3.4028234663852886e38
"""The largest finite f32 (gelu_erf's stand-in for |+inf|)."""
LN2_LOG_HIGH, LN2_LOG_LOW = 0.693359375, -2.12194440e-4
"""ln 2 = HIGH + LOW, HIGH with few bits so that e * HIGH is exact (Cephes logf)."""
SMALLEST_NORMAL_BITS, SQRT_HALF_BITS, INFINITY_BITS = 0x00800000, 0x3F3504F3, 0x7F800000
SCALINGS = ("scalef", "ldexp", "multiply")
SCALEF_LANES = 16
SCALEF_INTRINSIC = "llvm.x86.avx512.mask.scalef.ps.512"
"""vscalefps zmm (a, b, passthrough, lane mask, rounding): a * 2^floor(b) per lane, rounded once
(rounding 4: the current mode, MXCSR's round-to-nearest-even)."""
RSQRT14_INTRINSIC = "llvm.x86.avx512.rsqrt14.ps.512"
"""vrsqrt14ps zmm (a, passthrough, lane mask): 1 / sqrt(a) per lane within 2^-14 relative
(Intel's SDM); +-inf at +-0, +0 at +inf, NaN below 0 and for NaN; subnormal a computed as such
unless MXCSR's DAZ is set (mlc never sets it)."""
LARGEST_FINITE_BITS = 0x7F7FFFFF
CURRENT_ROUNDING = 4
"""The rounding operand of the AVX-512 intrinsics: the current mode (MXCSR's round-to-nearest-even)."""
RANGE_MIN_SIGN_CLEARED = 0b1000
"""vrangeps's immediate: the smaller of the two operands (bits 1:0 = 00), the sign cleared (3:2 = 10)."""
REDUCE_FLOOR = 0b1001
"""vreduceps's immediate: x - floor(x) (no fraction bits kept, bits 1:0 = 01 round down; bit 3
suppresses the precision exception)."""

WIDE_ERROR_BOUND = 1.001
"""sin and cos on vectors (|x| <= TRIG_REDUCTION_LIMIT) and pow (x > 0, both finite): rounded
once to f32 from an f64 value within 2^-36 (relative) of the exact one, so within u (1 + 2^-12)
of it."""



class MathEmitter:
    """Appends ops to `block`, with constants splatted to the operand's shape."""

    def __init__(self, block: Block, float_type: Attribute, scaling: str = "multiply"):
        self.block = block
        self.float_type = float_type
        shape = float_type.get_shape() if isinstance(float_type, VectorType) else None
        # vscalefps of a whole zmm register only: other widths take llvm.ldexp (the same value).
        self.scaling = "ldexp" if scaling == "scalef" and shape != (SCALEF_LANES,) else scaling
        self.int_type = VectorType(i32, shape) if shape is not None else i32
        self.wide_type = VectorType(f64, shape) if shape is not None else f64
        self.wide_int_type = VectorType(i64, shape) if shape is not None else i64

    def emit(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def constant(self, value: float | int, value_type: Attribute) -> SSAValue:
        """`value` of `value_type` (f32 or i32), splatted when it is a vector."""
        if isinstance(value_type, VectorType):
            attribute: Attribute = DenseIntOrFPElementsAttr.from_list(value_type, [value])
        elif isinstance(value, float):
            attribute = FloatAttr(value, value_type)
        else:
            attribute = IntegerAttr(value, value_type)
        return self.emit(arith.ConstantOp(attribute, value_type))

    def real(self, value: float) -> SSAValue:
        return self.constant(float(value), self.float_type)

    def wide_real(self, value: float) -> SSAValue:
        return self.constant(float(value), self.wide_type)

    def wide_integer(self, value: int) -> SSAValue:
        return self.constant(value, self.wide_int_type)

    def integer(self, value: int) -> SSAValue:
        return self.constant(value, self.int_type)

    def fma(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        return self.emit(math.FmaOp(a, b, c))

    def horner(self, coefficients: tuple[float, ...], x: SSAValue, wide: bool = False) -> SSAValue:
        """The polynomial of `coefficients` (highest degree first) at x, in f32 (or f64: `wide`)."""
        constant = self.wide_real if wide else self.real
        result = constant(coefficients[0])
        for coefficient in coefficients[1:]:
            result = self.fma(result, x, constant(coefficient))
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
        """p * 2^n rounded once, for an integral f32 n in [-150, 127] (see `scaling`); with
        `scalef`, p * 2^floor(n) for any f32 n (vscalefps floors it; 0 for n = -inf)."""
        if self.scaling == "scalef":  # p * 2^n straight from the f32 n: no integer round trip
            return self.x86(SCALEF_INTRINSIC, [p, n], p)
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

    def inverted(self, mask: SSAValue) -> SSAValue:
        """The i32 lane mask's complement."""
        return self.emit(arith.XOrIOp(mask, self.integer(-1)))

    def magnitude(self, x: SSAValue) -> SSAValue:
        """The bits of |x| as i32 (the sign bit cleared)."""
        return self.emit(arith.AndIOp(self.bits(x), self.integer(0x7FFFFFFF)))

    def beyond(self, x: SSAValue, limit: float) -> SSAValue:
        """All ones where |x| > `limit` (an f32 value), +-inf and NaN too (|x|'s bits are above
        limit's), else zero."""
        return self.inverted(self.below(self.magnitude(x), _f32_bits(limit) + 1))

    def finite_beyond(self, x: SSAValue, limit: float) -> SSAValue:
        """All ones where x is finite and |x| > `limit` (an f32 value), else zero."""
        return self.emit(arith.AndIOp(self.beyond(x, limit), self.below(self.magnitude(x), INFINITY_BITS)))

    def pick(self, mask: SSAValue, chosen: SSAValue, other: SSAValue) -> SSAValue:
        """`chosen` (f32) where the i32 mask is all ones, `other` where it is zero."""
        inverse = self.inverted(mask)
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
        result = self.pick(self.inverted(self.below(original, INFINITY_BITS)), x, result)
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
        docstring), as max(x, -0) - |x| Q(|x|); NaN for NaN and -inf, +inf at +inf, the sign of x
        (-0 at -0 and where x Phi(x) underflows)."""
        one_instruction = self.scaling == "scalef"  # 16 lanes with AVX-512 (F and DQ)
        # |x|, except +inf -> the largest f32 (its product with Q = 0 below is 0, not NaN);
        # -inf -> +inf (inf * 0 = NaN, as the definition's -inf * 0).
        if one_instruction:  # vrangeps: min(x, largest) with the sign cleared (NaN -> largest:
            # the NaN comes through the positive part instead)
            magnitude = self.x86("llvm.x86.avx512.mask.range.ps.512", [x, self.real(LARGEST_F32), self.constant(RANGE_MIN_SIGN_CLEARED, i32)], x)
        else:
            magnitude = self.emit(math.AbsFOp(self.emit(arith.MinimumfOp(x, self.real(LARGEST_F32)))))
        log_tail = self.horner(GELU_LOG_TAIL_COEFFICIENTS, magnitude)  # log2 Q(|x|), -inf for inf
        if one_instruction:
            # f = L - floor(L) (vreduceps, exact for L <= -1; +0 for -inf), and vscalefps scales
            # by 2^floor(L) itself: 0 for L = -inf.
            fraction = self.x86("llvm.x86.avx512.mask.reduce.ps.512", [log_tail, self.constant(REDUCE_FLOOR, i32)], log_tail)
            tail = self.scale(self.horner(EXP2_COEFFICIENTS, fraction), log_tail)
        else:  # the same values: L held where the integer scalings need it (Q rounds to 0 there)
            log_tail = self.emit(arith.MaximumfOp(log_tail, self.real(GELU_LOWEST_LOG2)))  # keeps a NaN
            n = self.emit(math.FloorOp(log_tail))
            fraction = self.emit(arith.SubfOp(log_tail, n))  # exact: L <= -1
            tail = self.scale(self.horner(EXP2_COEFFICIENTS, fraction), n)  # Q(|x|) in [0, 1/2]
        # max(x, -0): x for x >= 0 (+0 too), -0 below (so that an underflowed x Q keeps x's
        # sign), NaN for NaN (one vmaxps: x86's max returns its second operand, x, for NaN and
        # for two zeros).
        positive_part = self.emit(arith.MaximumfOp(x, self.real(-0.0)))
        # x Phi(x) = x - |x| Q for x >= 0 and -|x| Q below: one fma, rounded once.
        return self.fma(self.emit(arith.NegfOp(magnitude)), tail, positive_part)

    def rsqrt(self, x: SSAValue) -> SSAValue:
        """1 / sqrt(x) in f32 (see the module docstring): with `scaling=scalef` (16 lanes,
        AVX-512) vrsqrt14ps and one Newton step, else two correctly rounded operations."""
        if self.scaling != "scalef":
            return self.emit(arith.DivfOp(self.real(1.0), self.emit(math.SqrtOp(x))))
        every_lane = self.constant(-1, i16)
        y0 = self.emit(llvm.CallIntrinsicOp(RSQRT14_INTRINSIC, [x, x, every_lane], [self.float_type]))
        # h = x y0 ~ sqrt(x) stays normal for every positive f32 x (y0 y0 would overflow for
        # subnormal x); r = 1 - h y0 = 1 - x y0^2 (rounded once); y1 = y0 + (y0 / 2) r.
        h = self.emit(arith.MulfOp(x, y0))
        r = self.fma(self.emit(arith.NegfOp(h)), y0, self.real(1.0))
        y1 = self.fma(self.emit(arith.MulfOp(y0, self.real(0.5))), r, y0)
        # Positive finite nonzero x (bits 1 .. 0x7F7FFFFF: bits - 1 below 0x7F7FFFFF unsigned)
        # take the step; +-0, +inf, negative x and NaN keep y0 (+-inf, +0, NaN: h is NaN there).
        decrement = self.emit(arith.SubiOp(self.bits(x), self.integer(1)))
        # llvm.icmp and llvm_extra's llvm.select: xDSL 0.74's arith.cmpi and arith.select take no vectors of i1.
        unsigned_below = IntegerAttr(llvm.ICmpPredicateFlag.ULT.to_int(), i64)
        regular = self.emit(llvm.ICmpOp(decrement, self.integer(LARGEST_FINITE_BITS), unsigned_below))
        return self.emit(llvm_extra.SelectOp(regular, y1, y0))

    def x86(self, intrinsic: str, operands: list[SSAValue], passthrough: SSAValue) -> SSAValue:
        """A masked AVX-512 intrinsic on 16 lanes (the pass checks the host): `operands`, then the
        passthrough, a mask of every lane and the current rounding mode."""
        every_lane, current_rounding = self.constant(-1, i16), self.constant(CURRENT_ROUNDING, i32)
        return self.emit(llvm.CallIntrinsicOp(intrinsic, [*operands, passthrough, every_lane, current_rounding], [self.float_type]))

def _f32_bits(value: float) -> int:
    return struct.unpack("<i", struct.pack("<f", value))[0]


def _suffix(value_type: Attribute) -> str:
    """LLVM's name of a scalar or vector type in an overloaded intrinsic's name (`v16f32`, `i32`)."""
    if isinstance(value_type, VectorType):
        return f"v{value_type.get_shape()[0]}{_suffix(value_type.element_type)}"
    return "f32" if isinstance(value_type, Float32Type) else f"i{value_type.width.data}"  # type: ignore[attr-defined]
