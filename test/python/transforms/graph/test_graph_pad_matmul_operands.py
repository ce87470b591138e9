"""graph-pad-matmul-operands{wgmma=true} preserves what f16/bf16 matmuls compute.

Hypothesis draws a matmul with ragged K and N (K from 65 to 140, so that the padded K gives wgmma
a K loop, N from 1 to 40, batch dimensions or not), an epilogue (none, or relu) and the element
type, and interprets the rewritten function with the graph interpreter against the original.
The padded terms are 0 * 0, but the interpreter sums the longer rows in float64 in numpy's order,
which may round differently once in a while, so the results are held to the error bound the
graph derives (`programs.assert_within_bounds`) rather than bit for bit; the check is shown to
decide (a result moved by a few bounds fails it).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.interpreter import run
from programs import assert_perturbation_caught, assert_within_bounds, lower, matmul_relu_program, random_inputs


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batch=st.booleans(),
    m=st.integers(1, 20),
    n=st.integers(1, 40),
    k=st.integers(65, 140),
    relu=st.booleans(),
    element=st.sampled_from(["f16", "bf16"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_padding_preserves_the_product(batch: bool, m: int, n: int, k: int, relu: bool, element: str, seed: int):
    text = matmul_relu_program((2,) if batch else (), m, n, k, element, relu)
    padded = lower(text, "graph-pad-matmul-operands{wgmma=true}")
    ragged = k % 8 or n % 8
    assert ("graph.concat" in str(padded)) == bool(ragged)
    inputs = random_inputs(text, seed)
    results = run(padded, "main", [x.copy() for x in inputs])
    assert_within_bounds(text, inputs, results)
    assert_perturbation_caught(text, inputs, results)
