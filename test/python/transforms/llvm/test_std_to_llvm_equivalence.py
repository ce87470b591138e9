"""Equivalence of the standard-to-LLVM conversions under the reference interpreter.

Each case is one kernel in the standard dialects (an scf.for over the elements, memref or vector
loads and stores, the op under test) inside an `llvm.func` whose pointer parameters are cast to
memrefs, as the kernel lowerings leave it. Hypothesis draws the data (with NaNs, infinities and
signed zeros for floats; extreme integers); the kernel runs before and after the conversions
(`convert-scf-to-cf` through `reconcile-unrealized-casts`), and the outputs must agree bit for
bit, NaNs in the same places. Inputs that are undefined behaviour in both dialects (division by
zero, signed overflow of a division, over-wide shifts, out-of-range float-to-integer
conversions) are not drawn.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.passes import build_pipeline
from mlc.transforms import all_passes

interpreter = pytest.importorskip("mlc.interpreter")

PIPELINE = (
    "convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm,"
    "convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts"
)
LANES = 4

KERNEL = """
llvm.func @k(%pa: !llvm.ptr, %pb: !llvm.ptr, %pout: !llvm.ptr) {{
  %ma = builtin.unrealized_conversion_cast %pa : !llvm.ptr to memref<{n}x{t}>
  %mb = builtin.unrealized_conversion_cast %pb : !llvm.ptr to memref<{n}x{t}>
  %mout = builtin.unrealized_conversion_cast %pout : !llvm.ptr to memref<{n}x{rt}>
  %c0 = arith.constant 0 : index
  %step = arith.constant {step} : index
  %end = arith.constant {n} : index
  scf.for %i = %c0 to %end step %step {{
    {load_a}
    {load_b}
    {body}
    {store}
  }}
  llvm.return
}}
"""

# The op under test, from %a and %b (element type T) to %r (result type R, default T).
FLOAT_BODIES = {
    "addf": "%r = arith.addf %a, %b : T",
    "subf": "%r = arith.subf %a, %b : T",
    "mulf": "%r = arith.mulf %a, %b : T",
    "divf": "%r = arith.divf %a, %b : T",
    "negf": "%r = arith.negf %a : T",
    "maximumf": "%r = arith.maximumf %a, %b : T",
    "minimumf": "%r = arith.minimumf %a, %b : T",
    "maxnumf": "%r = arith.maxnumf %a, %b : T",
    "minnumf": "%r = arith.minnumf %a, %b : T",
    "sqrt": "%r = math.sqrt %a : T",
    "absf": "%r = math.absf %a : T",
    "floor": "%r = math.floor %a : T",
    "ceil": "%r = math.ceil %a : T",
    "trunc": "%r = math.trunc %a : T",
    "roundeven": "%r = math.roundeven %a : T",
    "round": "%r = math.round %a : T",
    "copysign": "%r = math.copysign %a, %b : T",
    "fma": "%r = math.fma %a, %b, %a : T",
    "exp": "%r = math.exp %a : T",
    "log": "%r = math.log %a : T",
    "tanh": "%r = math.tanh %a : T",
    "rsqrt": "%r = math.rsqrt %a : T",
    "powf": "%r = math.powf %a, %b : T",
    "extf_truncf": "%w = arith.extf %a : T to f64\n%r = arith.truncf %w : f64 to T",
}
SCALAR_FLOAT_BODIES = {
    **{
        f"cmpf_{predicate}": f"%c = arith.cmpf {predicate}, %a, %b : T\n%r = arith.select %c, %a, %b : T"
        for predicate in ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord")
        + ("ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")
    },
    "fptosi_sitofp": "%s = arith.fptosi %a : T to i32\n%r = arith.sitofp %s : i32 to T",
    "fptoui_uitofp": "%s = arith.fptoui %b : T to i16\n%r = arith.uitofp %s : i16 to T",
}
INTEGER_BODIES = {
    "addi": "%r = arith.addi %a, %b : T",
    "subi": "%r = arith.subi %a, %b : T",
    "muli": "%r = arith.muli %a, %b : T",
    "divsi": "%r = arith.divsi %a, %b : T",
    "divui": "%r = arith.divui %a, %b : T",
    "remsi": "%r = arith.remsi %a, %b : T",
    "remui": "%r = arith.remui %a, %b : T",
    "floordivsi": "%r = arith.floordivsi %a, %b : T",
    "ceildivsi": "%r = arith.ceildivsi %a, %b : T",
    "ceildivui": "%r = arith.ceildivui %a, %b : T",
    "maxsi": "%r = arith.maxsi %a, %b : T",
    "minsi": "%r = arith.minsi %a, %b : T",
    "maxui": "%r = arith.maxui %a, %b : T",
    "minui": "%r = arith.minui %a, %b : T",
    "andi": "%r = arith.andi %a, %b : T",
    "ori": "%r = arith.ori %a, %b : T",
    "xori": "%r = arith.xori %a, %b : T",
    "shifts": "%l = arith.shli %a, %b : T\n%s = arith.shrsi %l, %b : T\n%r = arith.shrui %s, %b : T",
    "absi": "%r = math.absi %a : T",
    "ctlz": "%r = math.ctlz %a : T",
    "cttz": "%r = math.cttz %a : T",
    "ctpop": "%r = math.ctpop %a : T",
    "mulsi_extended": "%low, %r = arith.mulsi_extended %a, %b : T",
    "mului_extended": "%low, %r = arith.mului_extended %a, %b : T",
}
SCALAR_INTEGER_BODIES = {
    **{
        f"cmpi_{predicate}": f"%c = arith.cmpi {predicate}, %a, %b : T\n%r = arith.select %c, %a, %b : T"
        for predicate in ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
    },
    "addui_extended": "%s, %c = arith.addui_extended %a, %b : T, i1\n%r = arith.extui %c : i1 to T",
    "index_arithmetic": (
        "%x = arith.index_cast %a : T to index\n%y = arith.index_cast %b : T to index\n"
        "%z = arith.addi %x, %y : index\n%r = arith.index_cast %z : index to T"
    ),
    "sitofp_to_f64": "%r = arith.sitofp %a : T to f64",
}
SHIFTS = ("shifts",)
DIVISIONS = ("divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "ceildivui")


def _kernel(body: str, element: str, result: str, vector: bool, n: int, nontemporal: bool = False) -> str:
    shape = f"vector<{LANES}x{element}>" if vector else element
    result_shape = f"vector<{LANES}x{result}>" if vector else result
    body = body.replace(": T", f": {shape}").replace("to T", f"to {result_shape}")
    if vector:
        loads = [f"%{v} = vector.load %m{v}[%i] : memref<{n}x{element}>, {shape}" for v in "ab"]
        streaming = " {nontemporal = true}" if nontemporal else ""  # a CPU row kernel's result stores
        store = f"vector.store %r, %mout[%i]{streaming} : memref<{n}x{result}>, {result_shape}"
    else:
        loads = [f"%{v} = memref.load %m{v}[%i] : memref<{n}x{element}>" for v in "ab"]
        store = f"memref.store %r, %mout[%i] : memref<{n}x{result}>"
    return KERNEL.format(
        n=n, t=element, rt=result, step=LANES if vector else 1, load_a=loads[0], load_b=loads[1], body=body, store=store
    )


def _run_before_and_after(source: str, inputs: list[np.ndarray], result_dtype: np.dtype) -> tuple[np.ndarray, ...]:
    context = make_context()
    before, _ = parse_module(source, context)
    after = before.clone()
    for conversion in build_pipeline(PIPELINE, all_passes(), mlir_syntax=False):
        conversion.apply(context, after)
        after.verify()
    assert all(op.name.startswith("llvm.") for op in after.walk() if op.name != "builtin.module")
    output = np.zeros(inputs[0].shape, result_dtype)
    expected = interpreter.run_kernel(before, "k", [*inputs, output])[-1]
    actual = interpreter.run_kernel(after, "k", [*inputs, output])[-1]
    return expected, actual


def _assert_same(expected: np.ndarray, actual: np.ndarray) -> None:
    np.testing.assert_array_equal(actual, expected)
    if expected.dtype.kind == "f":
        both = ~np.isnan(expected)
        np.testing.assert_array_equal(np.signbit(actual[both]), np.signbit(expected[both]))


_SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, float("inf"), float("-inf"), float("nan"), 1e-30, 70000.0]


def _floats(rng: np.random.Generator, n: int, dtype: type) -> np.ndarray:
    values = rng.standard_normal(n) * rng.choice([1.0, 10.0, 1000.0], n)
    special = rng.random(n) < 0.3
    values[special] = rng.choice(_SPECIAL_FLOATS, int(special.sum()))
    with np.errstate(over="ignore"):  # 70000 is infinite in f16, on purpose
        return values.astype(dtype)


def _integers(rng: np.random.Generator, n: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(np.int32)
    extremes = np.array([0, 1, -1, 2, info.min, info.max, 31, 32], np.int64)
    a = rng.integers(info.min, info.max, n, endpoint=True)
    b = rng.integers(-100, 100, n, endpoint=True)
    a[rng.random(n) < 0.3] = rng.choice(extremes)
    b[rng.random(n) < 0.3] = rng.choice(extremes)
    if name in DIVISIONS:
        b[b == 0] = 7
        a[(a == info.min) & (b == -1)] = 5
    if name in SHIFTS:
        b &= 31
    return a.astype(np.int32), b.astype(np.int32)


def _float_case(name: str, vector: bool, seed: int, blocks: int, dtype: type, element: str, nontemporal: bool = False) -> None:
    bodies = FLOAT_BODIES | SCALAR_FLOAT_BODIES
    n = blocks * LANES
    rng = np.random.default_rng(seed)
    a, b = _floats(rng, n, dtype), _floats(rng, n, dtype)
    if name == "fptosi_sitofp":
        a = np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0).clip(-1e9, 1e9).astype(dtype)
    if name == "fptoui_uitofp":
        b = np.nan_to_num(np.abs(b), nan=0.0, posinf=0.0).clip(0, 65535).astype(dtype)
    expected, actual = _run_before_and_after(_kernel(bodies[name], element, element, vector, n, nontemporal), [a, b], dtype)
    _assert_same(expected, actual)


@pytest.mark.parametrize("name", sorted(FLOAT_BODIES | SCALAR_FLOAT_BODIES))
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), blocks=st.integers(1, 3))
def test_float_ops_on_scalars(name: str, seed: int, blocks: int) -> None:
    _float_case(name, False, seed, blocks, np.float32, "f32")


@pytest.mark.parametrize("name", sorted(FLOAT_BODIES))
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), blocks=st.integers(1, 3), nontemporal=st.booleans())
def test_float_ops_on_vectors(name: str, seed: int, blocks: int, nontemporal: bool) -> None:
    """Also with the result stores `nontemporal` (which convert-vector-to-llvm keeps), which must
    not change what is stored."""
    _float_case(name, True, seed, blocks, np.float32, "f32", nontemporal)


@pytest.mark.parametrize("name", ["addf", "maximumf", "exp", "tanh", "sqrt", "floor", "extf_truncf"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_half_precision(name: str, seed: int) -> None:
    _float_case(name, False, seed, 2, np.float16, "f16")


INTEGER_CASES = [(name, False) for name in sorted(INTEGER_BODIES | SCALAR_INTEGER_BODIES)] + [
    (name, True) for name in sorted(INTEGER_BODIES)
]


@pytest.mark.parametrize(("name", "vector"), INTEGER_CASES)
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), blocks=st.integers(1, 3))
def test_integer_ops(name: str, vector: bool, seed: int, blocks: int) -> None:
    bodies = INTEGER_BODIES | SCALAR_INTEGER_BODIES
    n = blocks * LANES
    a, b = _integers(np.random.default_rng(seed), n, name)
    result, dtype = ("f64", np.float64) if name == "sitofp_to_f64" else ("i32", np.int32)
    expected, actual = _run_before_and_after(_kernel(bodies[name], "i32", result, vector, n), [a, b], dtype)
    _assert_same(expected, actual)
