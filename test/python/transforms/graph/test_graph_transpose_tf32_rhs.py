"""graph-transpose-tf32-rhs{wgmma=true} preserves what TF32 matmuls compute.

Hypothesis draws a TF32 matmul (M, N any; K from 33 to 140, a multiple of 4 or not: the pass
applies only to 16-byte rows deeper than one 32-wide K step), whether its precision is stated or
given by the pass's option, an epilogue (none, or relu) and the `swap-operands` option, and
interprets the rewritten function, then graph-fuse's kernels of it, with the graph interpreter
against the original: a transpose copies values and `mlc.swap_operands` only marks the matmul, so
the results must be bit-identical. A product without the relu whose N is a multiple of 4 too is
marked (with `swap-operands`, opt-in) and nothing is transposed; otherwise graph-fuse must
write B transposed in one kernel and read it back in place in the product's (`mlc.operand_major`).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mlc.interpreter import run
from programs import lower, matmul_relu_program, random_inputs


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 20),
    n=st.integers(1, 40),
    k=st.integers(33, 140),
    relu=st.booleans(),
    stated=st.booleans(),
    swap=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@example(m=5, n=9, k=96, relu=True, stated=False, swap=True, seed=1)  # rewritten: K a 16-byte multiple
@example(m=3, n=40, k=98, relu=False, stated=True, swap=True, seed=2)  # left alone: K = 98
@example(m=7, n=40, k=96, relu=False, stated=True, swap=True, seed=3)  # computed transposed
def test_transposed_rhs_preserves_the_product(m: int, n: int, k: int, relu: bool, stated: bool, swap: bool, seed: int):
    text = matmul_relu_program((), m, n, k, "f32", relu, '{precision = "tf32"}' if stated else "")
    rewrite = "graph-transpose-tf32-rhs{wgmma=true" + ("" if stated else " precision=tf32") + (" swap-operands=true" if swap else "") + "}"
    rewritten = lower(text, rewrite)
    swapped = swap and k % 4 == 0 and n % 4 == 0 and not relu
    assert ("graph.transpose" in str(rewritten)) == (k % 4 == 0 and not swapped)
    assert ("mlc.swap_operands" in str(rewritten)) == swapped
    fused = lower(text, rewrite + ",graph-fuse")
    if k % 4 == 0 and not swapped:
        assert str(fused).count("graph.fusion") == 2 and 'mlc.operand_major = ["k", "k"]' in str(fused)
    inputs = random_inputs(text, seed)
    expected = run(lower(text, ""), "main", [x.copy() for x in inputs])
    for module in (rewritten, fused):
        for want, got in zip(expected, run(module, "main", [x.copy() for x in inputs])):
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
