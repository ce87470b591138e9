"""expand-math-for-cpu: f32 `math.exp`, `log`, `tanh` and `erf` become branch-free arithmetic.

On the CPU a libm call per element keeps every loop that contains one scalar: LLVM cannot
vectorize across an opaque call. Written as `arith`/`math` arithmetic without branches (fma,
roundeven, integer bit operations and selects), the same functions vectorize with the loop
around them (LLVM's SLP and loop vectorizers, at the host's vector width), and cost a few
instructions per element instead of a call.

Each (function, type) pair is expanded once per module, as an internal `llvm.func`
(`@mlc.exp.f32`, `@mlc.exp.v4f32`, `@mlc.tanh.v16f32`), and every op becomes an `llvm.call` of it:
LLVM's inliner puts the body back at each call before vectorizing, while the passes after this one
see a few ops per call instead of ~30 per exp (unrolled loops hold many: expanding each in place
doubled the compile time of softmax over long rows).

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

Accuracy (stated, and checked by test/python/transforms/llvm/test_expand_math_for_cpu.py
against numpy in float64 over the whole f32 range and the special values): relative error at most
`RELATIVE_ERROR_BOUND` (in units of u = 2^-24) from the exact value, where the exact value is a
normal f32, and at most 2^-149 (one subnormal step) absolute below. This is within the ACCURACY
table of `mlc/dialects/graph/error_bounds.py` (exp, tanh and erf: 1 + 4 u of correct rounding;
log: 1 + 2 u; measured 1.32 u over 2^22 bit patterns; erf: stated 3 u, measured 1.30 u over 2^23 values: 2^22 bit patterns and 2^22 points of [-4.5, 4.5]).

Preconditions: none beyond valid IR; ops on other element types (f16, bf16, f64) are untouched.
Limits: only exp, log, tanh and erf (sin, cos, pow and the rest still call libm); the CPU
pipeline runs this pass, the GPU's keeps libdevice.
"""

from __future__ import annotations

import math as pymath
import struct
from dataclasses import dataclass

from llvmlite import binding
from xdsl.context import Context
from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    VectorType,
    f32,
    i16,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

RELATIVE_ERROR_BOUND = {"exp": 3.0, "log": 2.0, "tanh": 4.0, "erf": 3.0}
"""The stated maximum relative error of each expansion from the exact value, in units of 2^-24."""

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
LN2_LOG_HIGH, LN2_LOG_LOW = 0.693359375, -2.12194440e-4
"""ln 2 = HIGH + LOW, HIGH with few bits so that e * HIGH is exact (Cephes logf)."""
SMALLEST_NORMAL_BITS, SQRT_HALF_BITS, INFINITY_BITS = 0x00800000, 0x3F3504F3, 0x7F800000
SCALINGS = ("scalef", "ldexp", "multiply")
SCALEF_LANES = 16
SCALEF_INTRINSIC = "llvm.x86.avx512.mask.scalef.ps.512"
"""vscalefps zmm (a, b, passthrough, lane mask, rounding): a * 2^floor(b) per lane, rounded once
(rounding 4: the current mode, MXCSR's round-to-nearest-even)."""
EXPANDED = (math.ExpOp, math.LogOp, math.TanhOp, math.ErfOp)
"""The math ops this pass expands (on f32 scalars and vectors)."""


class _Emitter:
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


def _f32_bits(value: float) -> int:
    return struct.unpack("<i", struct.pack("<f", value))[0]


def _suffix(value_type: Attribute) -> str:
    """LLVM's name of a scalar or vector type in an overloaded intrinsic's name (`v16f32`, `i32`)."""
    if isinstance(value_type, VectorType):
        return f"v{value_type.get_shape()[0]}{_suffix(value_type.element_type)}"
    return "f32" if isinstance(value_type, Float32Type) else f"i{value_type.width.data}"  # type: ignore[attr-defined]


def host_has_avx512() -> bool:
    try:
        return bool(binding.get_host_cpu_features().get("avx512f"))
    except RuntimeError:  # LLVM cannot tell
        return False


def host_scaling() -> str:
    """`scalef` where the host has AVX-512 (one `vscalefps`), else `multiply`."""
    return "scalef" if host_has_avx512() else "multiply"


def _is_f32(value_type: Attribute) -> bool:
    element = value_type.element_type if isinstance(value_type, VectorType) else value_type
    return isinstance(element, Float32Type)


def _expandable(op: Operation) -> bool:
    """An f32 exp, log, tanh or erf, scalar or vector."""
    return isinstance(op, EXPANDED) and _is_f32(op.result.type)


def _function_name(op: math.ExpOp | math.LogOp | math.TanhOp | math.ErfOp) -> str:
    value_type = op.result.type
    lanes = f"v{value_type.get_shape()[0]}" if isinstance(value_type, VectorType) else ""
    return f"mlc.{op.name.removeprefix('math.')}.{lanes}f32"


def _expansion_function(op: math.ExpOp | math.LogOp | math.TanhOp | math.ErfOp, scaling: str) -> llvm.FuncOp:
    """`name(x) = op(x)` as arithmetic, with internal linkage so that LLVM inlines and then
    vectorizes it at every call."""
    value_type = op.result.type
    body = Block(arg_types=[value_type])
    emitter = _Emitter(body, value_type, scaling)
    argument = body.args[0]
    expansions = {math.ExpOp: emitter.exp, math.LogOp: emitter.log, math.TanhOp: emitter.tanh, math.ErfOp: emitter.erf}
    result = expansions[type(op)](argument)
    body.add_op(llvm.ReturnOp(result))
    return llvm.FuncOp(
        _function_name(op),
        llvm.LLVMFunctionType([value_type], value_type),
        linkage=llvm.LinkageAttr("internal"),
        body=Region(body),
    )


@dataclass(frozen=True)
class ExpandMathForCpu(ModulePass):
    """Rewrite f32 math.exp, math.log, math.tanh and math.erf as calls of one branch-free
    arithmetic function each, which LLVM inlines and vectorizes."""

    name = "expand-math-for-cpu"

    scaling: str = ""
    """How exp scales by 2^n: `scalef` (AVX-512's vscalefps of the f32 n, on 16-lane vectors;
    llvm.ldexp on other types), `ldexp` (one llvm.ldexp of an i32 n) or `multiply` (two
    multiplications by powers of two); by default the host's choice (`host_scaling`)."""

    def __post_init__(self) -> None:
        if self.scaling not in ("", *SCALINGS):
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {self.scaling}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        scaling = self.scaling or host_scaling()
        if scaling == "scalef" and not host_has_avx512():
            scaling = "ldexp"  # LLVM cannot select the x86 intrinsic (it would abort): the same value
        functions: dict[str, llvm.FuncOp] = {}
        rewriter = Rewriter()
        for math_op in [inner for inner in op.walk() if _expandable(inner)]:
            name = _function_name(math_op)
            if name not in functions:
                functions[name] = _expansion_function(math_op, scaling)
            call = llvm.CallOp(name, math_op.operand, return_type=math_op.result.type)
            rewriter.replace_op(math_op, call)
        module_block, first = op.body.block, op.body.block.first_op
        for function in functions.values():  # ahead of the code, in the order of first use
            if first is None:
                module_block.add_op(function)
            else:
                module_block.insert_op_before(function, first)
