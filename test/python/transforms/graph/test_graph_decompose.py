"""graph-decompose preserves what softmax, layer_norm and reductions compute.

Hypothesis draws functions around one composite or reduction (`programs.reduction_programs`:
producers, the op over random axes, keepdims either way, consumers; f32, f16 and i32; rows of 1 to
4097 elements) and compares the graph interpreter before and after the pass. The interpreter
evaluates a composite in float64 and rounds once, while the decomposition rounds to f32 after each
of its ops, so floats agree within the element type's tolerance (`element_types.tolerance`: a few
f32 ulps, or the one rounding to f16; for layer norm, the error of centring a row of nearly equal
values, `_layer_norm_error`) rather than bit for bit; integers exactly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.dialects.graph import ops as graph
from programs import lower, random_inputs, reduction_programs

COMPOSITES = (graph.SoftmaxOp, graph.LayerNormOp, graph.ReduceMeanOp)


def _assert_close(before, after, inputs: list[np.ndarray], program: str = "") -> None:
    from mlc.interpreter import run

    expected = run(before, "main", [x.copy() for x in inputs])
    actual = run(after, "main", [x.copy() for x in inputs])
    for index, (want, got) in enumerate(zip(expected, actual)):
        assert (want.shape, want.dtype) == (got.shape, got.dtype)
        if not np.issubdtype(want.dtype, np.floating):
            np.testing.assert_array_equal(got, want, err_msg=f"result #{index}")
            continue
        # f16: a composite's f16 result differs by up to an f16 rounding (2^-11 relative), and an
        # exp after it turns that into a relative error of |x| * 2^-11 (x up to ~8 here): 5e-3.
        rtol, atol = (1e-5, 1e-6) if want.dtype == np.float32 else (5e-3, 1e-3)
        layer_norm_error = _layer_norm_error(program, inputs)
        np.testing.assert_allclose(
            got, want, rtol=rtol, atol=max(atol, layer_norm_error), equal_nan=True, err_msg=f"result #{index}"
        )


def _layer_norm_error(program: str, inputs: list[np.ndarray]) -> float:
    """How far a layer norm computed in f32 (f16 ones are too) may be from the float64 reference.

    The mean of a row is rounded to an ulp of its elements, so `x - mean` carries an absolute
    error of about ulp(max|x|) however small the centred values are; `rsqrt(variance + epsilon)`
    multiplies it by up to 1/sqrt(epsilon) (rows of nearly equal values), and `* scale` by the
    scale. Inputs bound x and scale (the drawn producers change magnitudes by small factors).
    """
    epsilons = [float(e) for e in re.findall(r"graph.layer_norm .* epsilon ([-+0-9.e]+)", program)]
    if not epsilons:
        return 0.0
    largest = max((float(np.abs(x[np.isfinite(x)]).max(initial=0.0)) for x in inputs), default=0.0)
    return 8 * float(np.finfo(np.float32).eps) * max(largest, 1.0) ** 2 / np.sqrt(min(epsilons))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(program=reduction_programs(), seed=st.integers(0, 2**32 - 1))
def test_decomposition_preserves_results(program: str, seed: int):
    before = lower(program, "")
    after = lower(program, "graph-decompose")
    remaining = [op for op in after.walk() if isinstance(op, COMPOSITES)]
    assert not remaining, f"left undecomposed: {[op.name for op in remaining]}"
    for op in after.walk():
        if isinstance(op, graph.ReductionOp):
            assert op.keeps_dims() and str(op.x.type.element_type) != "f16"
    _assert_close(before, after, random_inputs(program, seed), program)


@pytest.mark.parametrize("length", [1, 31, 33, 1000, 4097])
def test_softmax_and_layer_norm_rows_of_awkward_lengths(length: int):
    program = f"""
func.func @main(%x: tensor<3x{length}xf32>, %s: tensor<{length}xf32>, %b: tensor<{length}xf32>) -> (tensor<3x{length}xf32>, tensor<3x{length}xf32>) {{
  %y = graph.softmax %x axis 1 : tensor<3x{length}xf32>
  %z = graph.layer_norm %x, %s, %b axis 1 epsilon 1.0e-05 : (tensor<3x{length}xf32>, tensor<{length}xf32>, tensor<{length}xf32>) -> tensor<3x{length}xf32>
  func.return %y, %z : tensor<3x{length}xf32>, tensor<3x{length}xf32>
}}"""
    _assert_close(lower(program, ""), lower(program, "graph-decompose"), random_inputs(program, length), program)
