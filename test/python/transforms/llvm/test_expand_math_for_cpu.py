"""expand-math-for-cpu: equivalence under the interpreter, and the stated accuracy.

Hypothesis: a kernel applying f32 `math.exp`, `math.log`, `math.tanh` or `math.erf` (scalars and vectors of 4) to drawn
f32 values (any bit pattern, so NaNs, infinities, signed zeros and subnormals too) runs in the
reference interpreter before and after the pass; the expansion must be within the pass's stated
bound (`RELATIVE_ERROR_BOUND` units of 2^-24 of the exact value, computed in float64; one
subnormal step absolute where the exact value is below the smallest normal), infinite exactly
where the exact value rounds to an infinity, NaN exactly where the interpreter's is, and of the
same sign (tanh(-0) = -0, erf(-0) = -0).

The whole range: compiled end to end on the CPU (the polynomials as LLVM vectorizes them), 2^20
bit patterns spread evenly over all f32 values plus the special values, against numpy in
float64 (the standard library's `math.erf` for erf), under the same bound; and the bound is within what error_bounds.ACCURACY allows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mlc
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.error_bounds import ACCURACY
from mlc.interpreter import run_kernel
from mlc.transforms.pipelines import CPU_PIPELINE
from mlc.transforms.llvm.expand_math_for_cpu import (
    RELATIVE_ERROR_BOUND,
    ExpandMathForCpu,
)

U = 2.0**-24
SMALLEST_NORMAL = 2.0**-126
SUBNORMAL_STEP = 2.0**-149
LARGEST = float(np.finfo(np.float32).max)
EXACT = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "erf": np.frompyfunc(math.erf, 1, 1)}
"""The exact functions in float64 (numpy's; the standard library's erf, numpy having none)."""
LANES = 4

KERNEL = """
llvm.func @k(%pin: !llvm.ptr, %pout: !llvm.ptr) {{
  %min = builtin.unrealized_conversion_cast %pin : !llvm.ptr to memref<{n}xf32>
  %mout = builtin.unrealized_conversion_cast %pout : !llvm.ptr to memref<{n}xf32>
  %c0 = arith.constant 0 : index
  %step = arith.constant {step} : index
  %end = arith.constant {n} : index
  scf.for %i = %c0 to %end step %step {{
    {body}
  }}
  llvm.return
}}
"""


def _kernel(function: str, vector: bool, n: int) -> str:
    if vector:
        body = (
            f"%x = vector.load %min[%i] : memref<{n}xf32>, vector<{LANES}xf32>\n"
            f"%y = math.{function} %x : vector<{LANES}xf32>\n"
            f"vector.store %y, %mout[%i] : memref<{n}xf32>, vector<{LANES}xf32>"
        )
    else:
        body = f"%x = memref.load %min[%i] : memref<{n}xf32>\n%y = math.{function} %x : f32\nmemref.store %y, %mout[%i] : memref<{n}xf32>"
    return KERNEL.format(n=n, step=LANES if vector else 1, body=body)


def assert_within_stated_bound(function: str, x: np.ndarray, got: np.ndarray) -> None:
    """`got` = function(x) in f32 within the pass's stated error (see the module docstring)."""
    with np.errstate(all="ignore"):
        exact = np.asarray(EXACT[function](x.astype(np.float64)), dtype=np.float64)
    nan = np.isnan(exact)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{function}: NaN in other places")
    overflows = np.abs(exact) > LARGEST * (1 + U)  # rounds to infinity in f32
    np.testing.assert_array_equal(np.isinf(got), overflows, err_msg=f"{function}: infinities in other places")
    finite = ~nan & ~overflows
    np.testing.assert_array_equal(np.signbit(got[finite & (exact != 0)]), np.signbit(exact[finite & (exact != 0)]))
    zero = finite & (x == 0)
    odd = function in ("tanh", "erf")  # odd functions keep the sign of zero
    np.testing.assert_array_equal(np.signbit(got[zero & odd]), np.signbit(x[zero & odd]))
    if not np.any(finite):  # all NaN or infinite (log of zeros): compared above
        return
    error = np.abs(got[finite].astype(np.float64) - exact[finite])
    magnitude = np.abs(exact[finite])
    allowed = np.where(magnitude >= SMALLEST_NORMAL, RELATIVE_ERROR_BOUND[function] * U * magnitude, SUBNORMAL_STEP)
    worst = np.argmax(error - allowed)
    assert error[worst] <= allowed[worst], (
        f"{function}({x[finite][worst]!r}) = {got[finite][worst]!r}, exact {exact[finite][worst]!r}: "
        f"error {error[worst] / max(magnitude[worst], SMALLEST_NORMAL) / U:.2f} u, stated {RELATIVE_ERROR_BOUND[function]} u"
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
    assert not any(op.name == f"math.{function}" for op in after.walk())
    expected = run_kernel(before, "k", [x.copy(), np.zeros_like(x)])[-1]
    actual = run_kernel(after, "k", [x.copy(), np.zeros_like(x)])[-1]
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected))
    assert_within_stated_bound(function, x, actual)


SPECIAL_VALUES = [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229, -87.33655, -103.97, -104.0, 89.0,
                  1e-45, -1e-45, 2.0**-126, 0.625, -0.625, 0.62499994, 9.01, -9.01, 1e-20, 12582912.0,
                  1.0, -1.0, 0.99999994, 3.9, 3.92, 4.0, -4.0, 4.0000005]


@pytest.mark.parametrize("function", sorted(EXACT))
def test_whole_float_range_compiled(function: str):
    """The scalings of exp (vscalefps of the f32 n on 16 lanes where the host has AVX-512, else
    `llvm.ldexp`; two multiplications) give the same bits. (`llvm.ldexp` of the i32 n is compared
    with the multiplications under the interpreter above.)"""
    count = 1 << 20
    bits = (np.arange(count, dtype=np.uint64) * ((1 << 32) // count) + 2027).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), np.array(SPECIAL_VALUES, np.float32), np.linspace(-20, 20, 4096, dtype=np.float32), np.linspace(-4.5, 4.5, 16384, dtype=np.float32)])
    source = (
        f"func.func @f(%x: tensor<{x.size}xf32>) -> tensor<{x.size}xf32> {{\n"
        f"  %0 = graph.{function} %x : tensor<{x.size}xf32>\n  func.return %0 : tensor<{x.size}xf32>\n}}"
    )
    results = {
        scaling: mlc.compile(source, device="cpu", pipeline=CPU_PIPELINE.replace("expand-math-for-cpu", f"expand-math-for-cpu{{scaling={scaling}}}"))(x)
        for scaling in ("scalef", "multiply")
    }
    assert_within_stated_bound(function, x, results["scalef"])
    np.testing.assert_array_equal(results["multiply"], results["scalef"])  # one rounding either way


@pytest.mark.parametrize(("function", "op"), [("exp", graph.ExpOp), ("log", graph.LogOp), ("tanh", graph.TanhOp), ("erf", graph.ErfOp)])
def test_stated_bound_within_error_bounds_accuracy(function: str, op: type):
    # error_bounds allows (1 + ACCURACY) u relative beyond the interpreter's own rounding.
    assert RELATIVE_ERROR_BOUND[function] <= 1 + ACCURACY[op]
