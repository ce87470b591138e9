"""loop-unroll: fully unrolled loops, and loops unrolled by N, compute what the loops did.

Hypothesis draws loop kernels with a marked loop (drawn bounds, step and carried values, sometimes
nested in an unmarked or a marked loop, sometimes running no iteration) whose body mixes the
counter, the carried values and loads; the loop interpreter runs the kernel before and after the
pass and the results must be bit-identical (the same operations in the same order).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.diagnostics import MlcError
from mlc.interpreter import run_kernel
from programs import lower


def kernel_text(lower_bound: int, upper_bound: int, step: int, carried: int, outer: str, by: int = 0) -> str:
    """y[0..carried) = the carried values after `for j` (inside an outer loop over i when `outer`),
    `for j` marked `mlc.unroll`, or `mlc.unroll_by` = `by` when `by` > 0."""
    arguments = ", ".join(f"%a{n} = %init{n}" for n in range(carried))
    types = ", ".join(["f32"] * carried)
    inits = "\n".join(f"  %init{n} = arith.constant {n + 0.5} : f32" for n in range(carried))
    updates = "\n".join(
        f"""    %offset{n} = arith.constant {n} : index
    %index{n} = arith.addi %ji, %offset{n} : index
    %x{n} = memref.load %x[%index{n}] : memref<64xf32>
    %p{n} = arith.mulf %a{n}, %scale : f32
    %u{n} = arith.addf %p{n}, %x{n} : f32"""
        for n in range(carried)
    )
    yields = ", ".join(f"%u{n}" for n in range(carried))
    inner = f"""    %results:{carried} = scf.for %j = %lb to %ub step %step iter_args({arguments.replace('%init', '%o')}) -> ({types}) {{
    %jf = arith.index_cast %j : index to i32
    %js = arith.sitofp %jf : i32 to f32
    %scale = arith.addf %js, %half : f32
    %ji = arith.addi %j, %i : index
{updates}
    scf.yield {yields} : {types}
  }} {{{f"mlc.unroll_by = {by} : i64" if by else "mlc.unroll"}}}"""
    outer_arguments = ", ".join(f"%o{n} = %init{n}" for n in range(carried))
    outer_yields = ", ".join(f"%results#{n}" for n in range(carried))
    mark = " {mlc.unroll}" if outer == "marked" else ""
    if outer == "none":
        body = inner.replace("%i", "%c0").replace("%o", "%init")
        results = "%results"
    else:
        body = f"""  %outer:{carried} = scf.for %i = %c0 to %c3 step %c1 iter_args({outer_arguments}) -> ({types}) {{
{inner}
    scf.yield {outer_yields} : {types}
  }}{mark}"""
        results = "%outer"
    stores = "\n".join(f"  %at{n} = arith.constant {n} : index\n  memref.store {results}#{n}, %y[%at{n}] : memref<{carried}xf32>" for n in range(carried))
    return f"""
loop.kernel @k(%x: memref<64xf32>, %y: memref<{carried}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %lb = arith.constant {lower_bound} : index
  %ub = arith.constant {upper_bound} : index
  %step = arith.constant {step} : index
  %half = arith.constant 0.5 : f32
{inits}
{body}
{stores}
  loop.return
}}
"""


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lower_bound=st.integers(0, 6),
    length=st.integers(-2, 12),
    step=st.integers(1, 4),
    carried=st.integers(1, 3),
    outer=st.sampled_from(["none", "plain", "marked"]),
    by=st.sampled_from([0, 0, 2, 3]),
    seed=st.integers(0, 2**16),
)
def test_unrolling_preserves_results(lower_bound, length, step, carried, outer, by, seed):
    """Fully (`by` 0) or by 2 or 3 (`mlc.unroll_by`: a loop of copies, the rest after it)."""
    text = kernel_text(lower_bound, lower_bound + length, step, carried, outer, by)
    before = lower(text, "")
    after = lower(text, "loop-unroll")
    assert "mlc.unroll" not in str(after)
    if by and outer != "marked":
        whole = len(range(lower_bound, lower_bound + length, step)) // by
        assert str(after).count("scf.for") == (outer == "plain") + (whole > 0)
    x = np.random.default_rng(seed).standard_normal(64).astype(np.float32)
    expected = run_kernel(before, "k", [x.copy(), np.zeros(carried, np.float32)])[1]
    actual = run_kernel(after, "k", [x.copy(), np.zeros(carried, np.float32)])[1]
    np.testing.assert_array_equal(actual, expected)


def test_unmarked_loops_stay_and_long_loops_are_refused():
    text = kernel_text(0, 4, 1, 1, "plain")
    assert str(lower(text, "loop-unroll")).count("scf.for") == 1  # the unmarked outer loop
    with pytest.raises(MlcError, match="at most 64 iterations"):
        lower(kernel_text(0, 65, 1, 1, "none"), "loop-unroll")
