"""expand-math-for-cpu: equivalence under the interpreter, and the stated accuracy.

Hypothesis: a kernel applying f32 `math.exp`, `math.log`, `math.tanh`, `math.erf`, `math.sin`, `math.cos` or
`math.rsqrt` (scalars and vectors of 4) to drawn
f32 values (any bit pattern, so NaNs, infinities, signed zeros and subnormals too) runs in the
reference interpreter before and after the pass; the expansion must be within the pass's stated
bound (`RELATIVE_ERROR_BOUND` units of 2^-24 of the exact value, computed in float64; one
subnormal step absolute where the exact value is below the smallest normal), infinite exactly
where the exact value rounds to an infinity, NaN exactly where the interpreter's is, and of the
same sign (tanh(-0) = -0, erf(-0) = -0).

The exact GELU's chain, 0.5 x (1 + erf(x sqrt(1/2))) as the elementwise expansion writes it,
becomes one call of the fused x Phi(x) = max(x, -0) - |x| Q(|x|): under the interpreter
(Hypothesis, drawn bit patterns) and compiled end to end over a dense sweep of f32 inputs (2^20
bit patterns, 2^20 points of [-16, 16] and the special values), whose errors are counted in
units of 2^-24 |x| against x Phi(x) in float64 (Phi from the standard library's erfc, exact in
the tails): each within `GELU_ERROR_BOUND`, 99.9% within 1 u, the same bits from AVX-512's
vrangeps/vreduceps/vscalefps form and the portable one. The stated bound itself is checked
against a running error analysis of the two Horner evaluations and the last fma, recomputed from
the coefficients.

The whole range: compiled end to end on the CPU (the polynomials as LLVM vectorizes them), 2^20
bit patterns spread evenly over all f32 values plus the special values, against numpy in
float64 (the standard library's `math.erf` for erf), under the same bound; and the bound is within what error_bounds.ACCURACY allows.
sin and cos: in f32 lanes (|x| <= 2^17) within NARROW_ERROR_BOUND (1.5 u), in f64 lanes up to 2^40
within WIDE_ERROR_BOUND (1.001 u), libm's lanes beyond, and a chunk mixing all three gives each
lane its own kind's value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from xdsl.dialects import llvm

import mlc
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.error_bounds import ACCURACY
from mlc.interpreter import run_kernel
from mlc.transforms.pipelines import CPU_PIPELINE
from mlc.transforms.llvm.expand_math_for_cpu import (
    GELU_ERROR_BOUND,
    RELATIVE_ERROR_BOUND,
    ExpandMathForCpu,
    host_has_avx512,
)
from mlc.transforms.lowering.math_expansion import EXP2_COEFFICIENTS, GELU_LOG_TAIL_COEFFICIENTS
from mlc.transforms.lowering.trig_expansion import (
    LOW_COSINE_FACTOR,
    NARROW_ERROR_BOUND,
    NARROW_TRIG_LIMIT,
    SINE_NARROW_COEFFICIENTS,
    SINE_REDUCED_LIMIT,
    TRIG_REDUCTION_LIMIT,
    WIDE_ERROR_BOUND,
)

U = 2.0**-24
SMALLEST_NORMAL = 2.0**-126
SUBNORMAL_STEP = 2.0**-149
LARGEST = float(np.finfo(np.float32).max)
EXACT = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "erf": np.frompyfunc(math.erf, 1, 1), "sin": np.sin, "cos": np.cos,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
}
"""The exact functions in float64 (numpy's; the standard library's erf, numpy having none;
rsqrt's two float64 roundings are far below 2^-24)."""
LANES = 4
NEWTON_RSQRT_BOUND = 1.594
"""rsqrt on AVX-512's 16 lanes (vrsqrt14ps, one Newton step): the error analysis of
math_expansion's docstring, in units of 2^-24."""

KERNEL = """
llvm.func @k({arguments}) {{
  {casts}
  %c0 = arith.constant 0 : index
  %step = arith.constant {step} : index
  %end = arith.constant {n} : index
  scf.for %i = %c0 to %end step %step {{
    {body}
  }}
  llvm.return
}}
"""


def _kernel_text(names: tuple[str, ...], n: int, step: int, body: str) -> str:
    """KERNEL with a pointer %pNAME and a memref<n x f32> %mNAME of it for each name."""
    arguments = ", ".join(f"%p{name}: !llvm.ptr" for name in names)
    casts = "\n  ".join(f"%m{name} = builtin.unrealized_conversion_cast %p{name} : !llvm.ptr to memref<{n}xf32>" for name in names)
    return KERNEL.format(arguments=arguments, casts=casts, n=n, step=step, body=body)


def _kernel(function: str, vector: bool, n: int) -> str:
    if vector:
        body = (
            f"%x = vector.load %min[%i] : memref<{n}xf32>, vector<{LANES}xf32>\n"
            f"%y = math.{function} %x : vector<{LANES}xf32>\n"
            f"vector.store %y, %mout[%i] : memref<{n}xf32>, vector<{LANES}xf32>"
        )
    else:
        body = f"%x = memref.load %min[%i] : memref<{n}xf32>\n%y = math.{function} %x : f32\nmemref.store %y, %mout[%i] : memref<{n}xf32>"
    return _kernel_text(("in", "out"), n, LANES if vector else 1, body)


def assert_within_stated_bound(function: str, x: np.ndarray, got: np.ndarray, bound: float | None = None) -> None:
    """`got` = function(x) in f32 within the pass's stated error (see the module docstring), or
    within `bound` units of 2^-24 when given."""
    bound = RELATIVE_ERROR_BOUND[function] if bound is None else bound
    with np.errstate(all="ignore"):
        exact = np.asarray(EXACT[function](x.astype(np.float64)), dtype=np.float64)
    nan = np.isnan(exact)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{function}: NaN in other places")
    overflows = np.abs(exact) > LARGEST * (1 + U)  # rounds to infinity in f32
    np.testing.assert_array_equal(np.isinf(got), overflows, err_msg=f"{function}: infinities in other places")
    finite = ~nan & ~overflows
    np.testing.assert_array_equal(np.signbit(got[finite & (exact != 0)]), np.signbit(exact[finite & (exact != 0)]))
    zero = finite & (x == 0)
    odd = function in ("tanh", "erf", "sin")  # odd functions keep the sign of zero
    np.testing.assert_array_equal(np.signbit(got[zero & odd]), np.signbit(x[zero & odd]))
    _assert_relative_error(f"{function}({{}})", [x[finite]], got[finite], exact[finite], bound)


def _assert_relative_error(call: str, arguments: list[np.ndarray], got: np.ndarray, exact: np.ndarray, bound: float) -> None:
    """Each `got` within `bound` units of 2^-24 of `exact` (relative where that is a normal f32, one
    subnormal step absolute below); `call` formats the worst element's arguments for the message."""
    if got.size == 0:  # every element special (pow(0, -1) = inf ...): its caller compared them
        return
    error = np.abs(got.astype(np.float64) - exact)
    magnitude = np.abs(exact)
    allowed = np.where(magnitude >= SMALLEST_NORMAL, bound * U * magnitude, SUBNORMAL_STEP)
    worst = np.argmax(error - allowed)
    assert error[worst] <= allowed[worst], (
        f"{call.format(', '.join(repr(a[worst]) for a in arguments))} = {got[worst]!r}, exact {exact[worst]!r}: "
        f"error {error[worst] / max(magnitude[worst], SMALLEST_NORMAL) / U:.2f} u, stated {bound} u"
    )


@settings(max_examples=40, deadline=None)
@given(
    function=st.sampled_from(sorted(EXACT)),
    vector=st.booleans(),
    scaling=st.sampled_from(("ldexp", "multiply")),
    bits=st.lists(st.integers(0, 2**32 - 1), min_size=LANES, max_size=8 * LANES).map(
        lambda values: values[: len(values) // LANES * LANES]
    ),
)
def test_expansion_within_stated_bound_under_the_interpreter(function: str, vector: bool, scaling: str, bits: list[int]):
    x = np.array(bits, np.uint32).view(np.float32)
    context = make_context()
    before, _ = parse_module(_kernel(function, vector, x.size), context)
    after = before.clone()
    ExpandMathForCpu(scaling=scaling).apply(context, after)
    after.verify()
    kernel = next(op for op in after.body.block.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == "k")
    assert not any(op.name == f"math.{function}" for op in kernel.walk())  # sin, cos: libm's beyond the limit
    expected = run_kernel(before, "k", [x.copy(), np.zeros_like(x)])[-1]
    actual = run_kernel(after, "k", [x.copy(), np.zeros_like(x)])[-1]
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    assert_within_stated_bound(function, x, actual)


SPECIAL_VALUES = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229, -87.33655, -103.97, -104.0, 89.0,
                  1e-45, -1e-45, 2.0**-126, 0.625, -0.625, 0.62499994, 9.01, -9.01, 1e-20, 12582912.0,
                  1.0, -1.0, 0.99999994, 3.9, 3.92, 4.0, -4.0, 4.0000005]


def _spread_bit_patterns(count: int = 1 << 20) -> np.ndarray:
    """`count` f32 bit patterns spread evenly over all 2^32."""
    bits = (np.arange(count, dtype=np.uint64) * ((1 << 32) // count) + 2027).astype(np.uint32)
    return bits.view(np.float32)


def _compiled_with_each_scaling(op: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """`op` (of %x) applied to `x`, compiled for the CPU with each scaling of exp."""
    source = f"func.func @f(%x: tensor<{x.size}xf32>) -> tensor<{x.size}xf32> {{\n  %0 = {op} : tensor<{x.size}xf32>\n  func.return %0 : tensor<{x.size}xf32>\n}}"
    return {
        scaling: mlc.compile(source, device="cpu", pipeline=CPU_PIPELINE.replace("expand-math-for-cpu", f"expand-math-for-cpu{{scaling={scaling}}}"))(x)
        for scaling in ("scalef", "multiply")
    }


def _pow_kernel(vector: bool, n: int) -> str:
    """%mout[i] = math.powf(%mx[i], %my[i]) over n f32 (vectors of LANES or scalars)."""
    load, store, access, t = (
        ("vector.load", "vector.store", f", vector<{LANES}xf32>", f"vector<{LANES}xf32>") if vector else ("memref.load", "memref.store", "", "f32")
    )
    body = (
        f"%x = {load} %mx[%i] : memref<{n}xf32>{access}\n%y = {load} %my[%i] : memref<{n}xf32>{access}\n"
        f"%z = math.powf %x, %y : {t}\n{store} %z, %mout[%i] : memref<{n}xf32>{access}"
    )
    return _kernel_text(("x", "y", "out"), n, LANES if vector else 1, body)


def assert_pow_within_bound(x: np.ndarray, y: np.ndarray, got: np.ndarray, bound: float) -> None:
    """`got` = x^y in f32 within `bound` units of 2^-24 of float64's x^y where that is a normal
    f32 (one subnormal step below), and C's special values: NaN, infinities and zeros (with their
    signs) where numpy's f32 power (C's powf) has them."""
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        expected = np.power(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg="pow: NaN in other places")
    np.testing.assert_array_equal(got[np.isinf(expected)], expected[np.isinf(expected)])
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(exact[finite]))
    _assert_relative_error("pow({})", [x[finite], y[finite]], got[finite], exact[finite], bound)


POW_SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -3.0, 10.0]


@settings(max_examples=15, deadline=None)
@given(
    vector=st.booleans(),
    pairs=st.lists(
        st.tuples(st.integers(0, 2**32 - 1) | st.sampled_from([int(np.float32(v).view(np.uint32)) for v in POW_SPECIAL]),
                  st.floats(-40, 40, width=32) | st.sampled_from(POW_SPECIAL)),
        min_size=LANES, max_size=8 * LANES,
    ).map(lambda values: values[: len(values) // LANES * LANES]),
)
@example(vector=False, pairs=[(0, -1.0), (0, -1.0), (0, -np.inf), (0, -np.inf)])  # every result infinite: none to bound
def test_pow_within_stated_bound_under_the_interpreter(vector: bool, pairs: list[tuple[int, float]]):
    """pow's expansion (f64 lanes; libm's for x <= 0, infinities and NaNs) under the interpreter,
    before and after the pass: within the stated bound of float64's x^y, C's special values."""
    x = np.array([bits for bits, _ in pairs], np.uint32).view(np.float32)
    x[np.isnan(x)] = np.nan  # quiet NaNs (see test_pow_whole_float_range_compiled)
    y = np.array([value for _, value in pairs], np.float32)
    context = make_context()
    before, _ = parse_module(_pow_kernel(vector, x.size), context)
    after = before.clone()
    ExpandMathForCpu(scaling="multiply").apply(context, after)
    after.verify()
    kernel = next(op for op in after.body.block.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == "k")
    assert not any(op.name == "math.powf" for op in kernel.walk())
    expected = run_kernel(before, "k", [x.copy(), y.copy(), np.zeros_like(x)])[-1]
    actual = run_kernel(after, "k", [x.copy(), y.copy(), np.zeros_like(x)])[-1]
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    assert_pow_within_bound(x, y, actual, RELATIVE_ERROR_BOUND["powf"])


def test_pow_whole_float_range_compiled():
    """pow end to end: every base of bit patterns spread over all f32 (and the special values)
    with exponents of [-40, 40], integers and halves among them, and dense bases of (0, 4] with
    exponents of [-90, 90]: within the stated bound; where x > 0 and both are finite (the f64
    lanes) within WIDE_ERROR_BOUND; C's special values (pow(x, 0) = 1, pow(1, y) = 1, negative
    bases with integer exponents, zeros and infinities) as numpy's powf."""
    rng = np.random.default_rng(5)
    bases = np.concatenate([_spread_bit_patterns(), np.array(POW_SPECIAL, np.float32), np.linspace(1e-6, 4, 1 << 18, dtype=np.float32)])
    exponents = rng.uniform(-40, 40, bases.size).astype(np.float32)
    exponents[::3] = np.round(exponents[::3])
    exponents[1::7] = np.round(exponents[1::7] * 2) / 2
    exponents[-(1 << 18):] = rng.uniform(-90, 90, 1 << 18).astype(np.float32)
    special = np.array(POW_SPECIAL, np.float32)
    bases[np.isnan(bases)] = np.nan  # quiet NaNs: glibc's powf(signalling NaN, 0) is NaN, numpy's 1
    x = np.concatenate([bases, np.repeat(special, special.size)])
    y = np.concatenate([exponents, np.tile(special, special.size)])
    t = f"tensor<{x.size}xf32>"
    source = f"func.func @f(%x: {t}, %y: {t}) -> {t} {{\n  %0 = graph.pow %x, %y : ({t}, {t}) -> {t}\n  func.return %0 : {t}\n}}"
    got = mlc.compile(source, device="cpu")(x, y)
    assert_pow_within_bound(x, y, got, RELATIVE_ERROR_BOUND["powf"])
    on_vectors = (x > 0) & np.isfinite(x) & np.isfinite(y)
    assert_pow_within_bound(x[on_vectors], y[on_vectors], got[on_vectors], WIDE_ERROR_BOUND)


def _compiled(function: str, x: np.ndarray) -> np.ndarray:
    source = f"func.func @f(%x: tensor<{x.size}xf32>) -> tensor<{x.size}xf32> {{\n  %0 = graph.{function} %x : tensor<{x.size}xf32>\n  func.return %0 : tensor<{x.size}xf32>\n}}"
    return mlc.compile(source, device="cpu")(x)


@pytest.mark.parametrize("function", ["sin", "cos"])
def test_sin_cos_whole_float_range_compiled(function: str):
    """sin and cos end to end over the whole range (bit patterns spread over all f32, dense
    points of [-8, 8], of [2^17 - 16, 2^17 + 16] and of [2^20, 2^20 + 64], the edges of the
    reductions' ranges, the special values): in f32 lanes (|x| <= NARROW_TRIG_LIMIT) within
    NARROW_ERROR_BOUND; in f64 lanes (up to TRIG_REDUCTION_LIMIT) within WIDE_ERROR_BOUND (rounded
    once from f64); beyond, lanes of libm's within the stated bound; NaN for NaN and +-inf,
    sin(-0) = -0; the f32 lanes odd (sin) or even (cos) to the bit, as they compute on |x|. A chunk
    with lanes of all three (every fourth element beyond 2^40, every fourth beyond 2^17) gives each
    lane what a chunk of its own kind gives."""
    narrow, limit = np.float32(NARROW_TRIG_LIMIT), np.float32(TRIG_REDUCTION_LIMIT)
    special = [limit, -limit, np.nextafter(limit, np.float32(np.inf)), narrow, -narrow, np.nextafter(narrow, np.float32(np.inf)),
               LARGEST, -LARGEST, 1e-45, -1e-45, 2.0**-126, np.pi / 4, np.pi / 2, np.pi, 3 * np.pi / 2, 1e4, 1e6, 12582912.0,
               5164.7783, 2.6165783, 14682.764,  # near a multiple of pi, and the largest errors of the two-series form
               0.50000006, 0.5000001, 0.57, 1.5707963, 1.5707964, 3.1415925, 3.1415927,  # cos's n = 1 with a rounded first step; the ends of n's
               32388.166, 91376.4375]  # the largest errors of the sweep of every f32 (bench/trig_accuracy.py)
    x = np.concatenate([
        _spread_bit_patterns(), np.array(SPECIAL_VALUES + special, np.float32), np.linspace(-8, 8, 1 << 18, dtype=np.float32),
        np.linspace(narrow - 16, narrow + 16, 1 << 14, dtype=np.float32), np.linspace(2.0**20, 2.0**20 + 64, 1 << 14, dtype=np.float32),
    ])
    got = _compiled(function, x)
    assert_within_stated_bound(function, x, got)
    on_narrow, on_wide = np.abs(x) <= narrow, (np.abs(x) > narrow) & (np.abs(x) <= limit)
    assert_within_stated_bound(function, x[on_narrow], got[on_narrow], NARROW_ERROR_BOUND)
    assert_within_stated_bound(function, x[on_wide], got[on_wide], WIDE_ERROR_BOUND)
    # The spread bit patterns come first, element k + 2^19 being element k with the sign bit set.
    half, sign = 1 << 19, np.uint32(0x80000000)
    np.testing.assert_array_equal(x[half : 2 * half].view(np.uint32), x[:half].view(np.uint32) ^ sign)
    mirrored = np.abs(x[:half]) <= narrow
    flip = sign if function == "sin" else np.uint32(0)
    np.testing.assert_array_equal(got[half : 2 * half].view(np.uint32)[mirrored], got[:half].view(np.uint32)[mirrored] ^ flip)
    narrow_x = x[on_narrow & ~np.isnan(x)][: 2 << 13].reshape(-1, 2)
    wide_x = x[on_wide][: narrow_x.shape[0]]
    beyond_x = x[(np.abs(x) > limit) & np.isfinite(x)][: narrow_x.shape[0]]
    rows = min(narrow_x.shape[0], wide_x.size, beyond_x.size)
    mixed = np.concatenate([narrow_x[:rows], wide_x[:rows, None], beyond_x[:rows, None]], axis=1).ravel()
    alone = [narrow_x[:rows].ravel(), wide_x[:rows], beyond_x[:rows]]
    separate = dict(zip(np.concatenate(alone).view(np.uint32).tolist(), np.concatenate([_compiled(function, part) for part in alone]).view(np.uint32).tolist()))
    np.testing.assert_array_equal(_compiled(function, mixed).view(np.uint32), [separate[bits] for bits in mixed.view(np.uint32).tolist()])


def test_sine_polynomial_and_low_factor_within_their_stated_errors():
    """The narrow lanes' fitted sine, r + r^3 P(r^2), within 0.116 u of sin r on |r| <=
    SINE_REDUCED_LIMIT (the constant's docstring), and low's factor 1 + c r^2 within 0.053 of
    cos r, relative to sin r / r (`LOW_COSINE_FACTOR`), at 10^5 points in float64."""
    r = np.linspace(2.0**-12, SINE_REDUCED_LIMIT, 100_000)
    z = r * r
    polynomial = np.polyval(np.array(SINE_NARROW_COEFFICIENTS, dtype=np.float32).astype(np.float64), z)
    assert np.max(np.abs(r + r**3 * polynomial - np.sin(r)) / np.sin(r)) <= 0.116 * U
    assert np.max(np.abs(np.cos(r) - 1 - LOW_COSINE_FACTOR * z) * r / np.sin(r)) <= 0.053


def test_rsqrt_whole_float_range_compiled():
    """rsqrt end to end over bit patterns spread over all f32 (subnormals among them) and the
    special values, each repeated over a whole 16-lane vector: within the stated 2 u; +inf at +0,
    -inf at -0, +0 at +inf, NaN below 0 and for NaN, bit for bit. With AVX-512 (vrsqrt14ps and a
    Newton step) within the step's error analysis, NEWTON_RSQRT_BOUND, and not 1 / sqrt's bits;
    elsewhere 1 / sqrt in f32, two correct roundings: numpy's f32 bits."""
    special = np.repeat(np.array(SPECIAL_VALUES + [3.4e38, 1e-38], np.float32), 16)
    x = np.concatenate([special, _spread_bit_patterns()])
    got = _compiled("rsqrt", x)
    assert_within_stated_bound("rsqrt", x, got)
    for argument, expected in ((0.0, np.inf), (-0.0, -np.inf), (np.inf, 0.0)):
        np.testing.assert_array_equal(got[x.view(np.uint32) == np.float32(argument).view(np.uint32)].view(np.uint32), np.float32(expected).view(np.uint32))
    with np.errstate(all="ignore"):
        two_roundings = np.float32(1) / np.sqrt(x)
    regular = (x > 0) & (x < np.inf)
    if host_has_avx512():
        assert_within_stated_bound("rsqrt", x[regular], got[regular], NEWTON_RSQRT_BOUND)
        assert np.any(got[regular] != two_roundings[regular])
    else:
        np.testing.assert_array_equal(got[regular].view(np.uint32), two_roundings[regular].view(np.uint32))


@pytest.mark.parametrize("function", ["erf", "exp", "log", "tanh"])
def test_whole_float_range_compiled(function: str):
    """The scalings of exp (vscalefps of the f32 n on 16 lanes where the host has AVX-512, else
    `llvm.ldexp`; two multiplications) give the same bits. (`llvm.ldexp` of the i32 n is compared
    with the multiplications under the interpreter above.)"""
    x = np.concatenate([_spread_bit_patterns(), np.array(SPECIAL_VALUES, np.float32), np.linspace(-20, 20, 4096, dtype=np.float32), np.linspace(-4.5, 4.5, 16384, dtype=np.float32)])
    results = _compiled_with_each_scaling(f"graph.{function} %x", x)
    assert_within_stated_bound(function, x, results["scalef"])
    np.testing.assert_array_equal(results["multiply"], results["scalef"])  # one rounding either way


@pytest.mark.parametrize(
    ("function", "op"),
    [("exp", graph.ExpOp), ("log", graph.LogOp), ("tanh", graph.TanhOp), ("erf", graph.ErfOp), ("sin", graph.SinOp), ("cos", graph.CosOp),
     ("rsqrt", graph.RsqrtOp), ("powf", graph.PowOp)],
)
def test_stated_bound_within_error_bounds_accuracy(function: str, op: type):
    # error_bounds allows (1 + ACCURACY) u relative beyond the interpreter's own rounding.
    assert RELATIVE_ERROR_BOUND[function] <= 1 + ACCURACY[op]


GELU_CHAIN = """{load}
%one = arith.constant 1.0 : f32
%half = arith.constant 0.5 : f32
%root = arith.constant 0.707106769 : f32
{constants}
%h = arith.mulf %halfs, %x : {t}
%s = arith.mulf %x, %roots : {t}
%e = math.erf %s : {t}
%sum = arith.addf %ones, %e : {t}
%y = arith.mulf %h, %sum : {t}
{store}
{extra}"""
"""The exact GELU as the elementwise expansion writes it (constants broadcast for vectors)."""


def _gelu_kernel(vector: bool, n: int, erf_used_elsewhere: bool = False) -> str:
    t = f"vector<{LANES}xf32>" if vector else "f32"
    if vector:
        load = f"%x = vector.load %min[%i] : memref<{n}xf32>, {t}"
        store = f"vector.store %y, %mout[%i] : memref<{n}xf32>, {t}"
        constants = "\n".join(f"%{name}s = vector.broadcast %{name} : f32 to {t}" for name in ("one", "half", "root"))
        extra = f"vector.store %e, %min[%i] : memref<{n}xf32>, {t}" if erf_used_elsewhere else ""
    else:
        load = f"%x = memref.load %min[%i] : memref<{n}xf32>"
        store = f"memref.store %y, %mout[%i] : memref<{n}xf32>"
        constants = "%ones = arith.constant 1.0 : f32\n%halfs = arith.constant 0.5 : f32\n%roots = arith.constant 0.70710678118 : f32"
        extra = f"memref.store %e, %min[%i] : memref<{n}xf32>" if erf_used_elsewhere else ""
    body = GELU_CHAIN.format(t=t, load=load, store=store, constants=constants, extra=extra)
    return _kernel_text(("in", "out"), n, LANES if vector else 1, body)


_ERFC = np.frompyfunc(math.erfc, 1, 1)


def assert_gelu_within_stated_bound(x: np.ndarray, got: np.ndarray) -> np.ndarray:
    """`got` = x Phi(x) within GELU_ERROR_BOUND u |x| (NaN where x is NaN or -inf, the sign of
    x); returns each finite element's error in units of u |x|."""
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)  # signalling NaNs among the bit patterns
        exact = wide * 0.5 * _ERFC(-wide / math.sqrt(2.0)).astype(np.float64)
    nan = np.isnan(wide) | (wide == -np.inf)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg="gelu: NaN in other places")
    np.testing.assert_array_equal(got[wide == np.inf], np.inf)
    compared = ~nan & np.isfinite(wide)
    np.testing.assert_array_equal(np.signbit(got[compared]), np.signbit(x[compared]))
    with np.errstate(all="ignore"):
        error = np.abs(got[compared].astype(np.float64) - exact[compared]) / np.maximum(np.abs(wide[compared]), SMALLEST_NORMAL) / U
    worst = int(np.argmax(error)) if error.size else 0
    assert not error.size or error[worst] <= GELU_ERROR_BOUND, (
        f"gelu({x[compared][worst]!r}) = {got[compared][worst]!r}, exact {exact[compared][worst]!r}: "
        f"error {error[worst]:.2f} u |x|, stated {GELU_ERROR_BOUND} u |x|"
    )
    return error


@settings(max_examples=15, deadline=None)
@given(
    vector=st.booleans(),
    scaling=st.sampled_from(("ldexp", "multiply")),
    bits=st.lists(st.integers(0, 2**32 - 1), min_size=LANES, max_size=8 * LANES).map(
        lambda values: values[: len(values) // LANES * LANES]
    ),
)
def test_gelu_chain_becomes_one_call_within_stated_bound(vector: bool, scaling: str, bits: list[int]):
    x = np.array(bits, np.uint32).view(np.float32)
    context = make_context()
    before, _ = parse_module(_gelu_kernel(vector, x.size), context)
    after = before.clone()
    ExpandMathForCpu(scaling=scaling).apply(context, after)
    after.verify()
    kernel = next(op for op in after.body.block.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == "k")
    names = [op.name for op in kernel.walk()]
    assert "math.erf" not in names and "arith.addf" not in names  # the chain is gone
    assert [op.callee.string_value() for op in kernel.walk() if op.name == "llvm.call"] == [f"mlc.gelu_erf.{'v4' if vector else ''}f32"]
    actual = run_kernel(after, "k", [x.copy(), np.zeros_like(x)])[-1]
    assert_gelu_within_stated_bound(x, actual)


@pytest.mark.parametrize("vector", [False, True])
def test_gelu_chain_whose_erf_is_used_elsewhere_is_kept(vector: bool):
    context = make_context()
    module, _ = parse_module(_gelu_kernel(vector, 2 * LANES, erf_used_elsewhere=True), context)
    ExpandMathForCpu(scaling="multiply").apply(context, module)
    callees = [op.callee.string_value() for op in module.walk() if op.name == "llvm.call"]
    assert callees == [f"mlc.erf.{'v4' if vector else ''}f32"]


def test_gelu_dense_sweep_compiled():
    """The exact GELU end to end (graph.gelu through the CPU pipeline), errors counted over
    2^20 bit patterns, 2^20 points of [-16, 16] and the special values (the tails' ends, where
    x Phi(x) underflows and keeps x's sign, the largest finite values, L = -1 at 0): each within
    the stated bound, 99.9% within 1 u (the earlier form: 99.4%); the two scalings (AVX-512's
    vrangeps/vreduceps/vscalefps where the host has it, the portable form) give the same bits."""
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 2.0**-126, 5.4, -5.4, 5.5, -5.5, 5.7, -5.7, 13.3, -13.3,
               -20.0, -1e4, 1e4, 3.4e38, -3.4e38, LARGEST, -LARGEST]
    x = np.concatenate([_spread_bit_patterns(), np.linspace(-16, 16, 1 << 20, dtype=np.float32), np.array(special, np.float32)])
    results = _compiled_with_each_scaling('graph.gelu %x {approximate = "none"}', x)
    error = assert_gelu_within_stated_bound(x, results["scalef"])
    within_one_u = np.count_nonzero(error <= 1.0)
    assert within_one_u >= 0.999 * error.size, f"{error.size - within_one_u} of {error.size} elements beyond 1 u |x|"
    np.testing.assert_array_equal(results["multiply"], results["scalef"])  # one rounding either way


def _horner_with_rounding_bound(coefficients: tuple[float, ...], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """f32 Horner's value (in float64) and a running bound of its rounding error: each fma rounds
    once, by at most half an f32 ulp of its result, and carries the earlier steps' error times |x|."""
    value, bound = np.full_like(x, coefficients[0]), np.zeros_like(x)
    for coefficient in coefficients[1:]:
        value = value * x + coefficient
        bound = bound * np.abs(x) + np.spacing(np.abs(value).astype(np.float32)).astype(np.float64) / 2
    return value, bound


def test_gelu_stated_bound_covers_the_running_error_analysis():
    """GELU_ERROR_BOUND against the error analysis of the module docstring, from the
    coefficients: with a = |x|, Q = erfc(a / sqrt 2) / 2 and Q' computed, the error is at most
    the last fma's rounding ((1 - Q) u |x| for x >= 0, Q u |x| below) plus |x| |Q' - Q|;
    Q' = 2^L' (1 + e) with L' - log2 Q bounded by the polynomial's error and its Horner rounding
    (which reaches f = L' - floor(L') exactly), e by 2^f's approximation and rounding. Over
    a in [0, 6]; beyond, Q < 2^-30 and L' must stay low enough for |Q' - Q| to fit the bound."""
    a = np.linspace(0.0, 6.0, 300_001)
    tail = 0.5 * _ERFC(a / math.sqrt(2.0)).astype(np.float64)
    log_tail, log_rounding = _horner_with_rounding_bound(GELU_LOG_TAIL_COEFFICIENTS, a)
    log_error = np.abs(log_tail - np.log2(tail)) + log_rounding
    fraction = log_tail - np.floor(log_tail)
    power, power_rounding = _horner_with_rounding_bound(EXP2_COEFFICIENTS, fraction)
    power_error = np.abs(power / np.exp2(fraction) - 1) + power_rounding / power
    tail_error = np.expm1(math.log(2.0) * log_error) + power_error * np.exp2(log_error)  # relative, of Q'
    for rounding in (1 - tail, tail):  # x >= 0, x < 0
        derived = float(np.max(rounding + tail * tail_error / U))
        assert derived <= GELU_ERROR_BOUND, f"the analysis gives {derived:.3f} u |x|, stated {GELU_ERROR_BOUND}"
    beyond = np.geomspace(6.0, LARGEST, 4096).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        log_beyond = beyond * 0 + np.float32(GELU_LOG_TAIL_COEFFICIENTS[0])
        for coefficient in GELU_LOG_TAIL_COEFFICIENTS[1:]:  # f32 Horner (fma emulated in float64)
            log_beyond = (log_beyond.astype(np.float64) * beyond + coefficient).astype(np.float32)
    assert not np.any(np.isnan(log_beyond))
    assert 1 + 2.0 ** float(np.max(log_beyond)) / U <= GELU_ERROR_BOUND  # 1: the fma's rounding


def test_gelu_stated_bound_within_error_bounds_accuracy():
    # error_bounds allows (1 + ACCURACY) u of |x| beyond the interpreter's own rounding.
    assert GELU_ERROR_BOUND <= 1 + ACCURACY[graph.GeluOp]
