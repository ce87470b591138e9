"""graph-decompose preserves what softmax, layer_norm and reductions compute.

Hypothesis draws functions around one composite or reduction (`programs.reduction_programs`:
producers, the op over random axes, keepdims either way, consumers; f32, f16 and i32; rows of 1 to
4097 elements; layer norms with epsilon 1e-5, 1e-3 or 0) and interprets the decomposed function.
The interpreter evaluates a composite in float64 and rounds once, while the decomposition rounds
to f32 after each of its ops and sums in its own order, so floats are compared with the graph
interpreter on the original program within the error bound that `error_bounds.result_bounds`
derives from the ops and the data (`programs.assert_within_bounds`), integers exactly. The bound
is finite wherever the result is determined: for a layer norm it follows the mean, the centring,
the variance plus epsilon and the rsqrt, so epsilon 0 needs no special case unless a row's
variance is 0; then the interpreter's result is 0/0 = NaN, and an implementation may equally give
NaN or +-scale + bias (the sign of the rounding error of the row's mean): the drawn programs
exclude that input (`_zero_variance_rows_without_epsilon`), and
`test_layer_norm_without_epsilon_of_constant_rows` states what each side gives there.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph import interpret
from mlc.dialects.graph import ops as graph
from mlc.interpreter import run
from programs import (
    main_function,
    assert_perturbation_caught,
    assert_within_bounds,
    bounded_comparison,
    comparison_event,
    lower,
    random_inputs,
    reduction_programs,
)

COMPOSITES = (graph.SoftmaxOp, graph.LayerNormOp, graph.ReduceMeanOp)


def _assert_close(after, inputs: list[np.ndarray], program: str):
    """`after` (the decomposed module) against the graph interpreter on `program`, within the bound;
    a result moved by a few bounds fails. Returns the comparison (how many elements it compared)."""
    actual = run(after, "main", [x.copy() for x in inputs])
    comparison = assert_within_bounds(program, inputs, actual)
    assert_perturbation_caught(program, inputs, actual)
    return comparison


def _zero_variance_rows_without_epsilon(program: str, inputs: list[np.ndarray]) -> bool:
    """Whether a layer norm of `program` with epsilon 0 normalises a row of equal values."""
    block = main_function(program).body.block
    values = dict(zip(block.args, inputs))
    for op in block.ops:
        if isinstance(op, graph.LayerNormOp) and float(op.epsilon.value.data) == 0.0:
            x = np.asarray(values[op.operands[0]], np.float64)
            axes = tuple(range(op.normalized_axis(), x.ndim))
            with np.errstate(all="ignore"):  # rows with infinities have a NaN variance
                if np.any(np.var(x, axis=axes) == 0.0):
                    return True
        if op.results:
            values[op.results[0]] = interpret.evaluate(op, [values[operand] for operand in op.operands])
    return False


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(program=reduction_programs(), seed=st.integers(0, 2**32 - 1))
def test_decomposition_preserves_results(program: str, seed: int):
    after = lower(program, "graph-decompose")
    remaining = [op for op in after.walk() if isinstance(op, COMPOSITES)]
    assert not remaining, f"left undecomposed: {[op.name for op in remaining]}"
    for op in after.walk():
        if isinstance(op, graph.ReductionOp):
            assert op.keeps_dims() and str(op.x.type.element_type) != "f16"
    inputs = random_inputs(program, seed)
    assume(not _zero_variance_rows_without_epsilon(program, inputs))
    event(comparison_event(_assert_close(after, inputs, program)))


@pytest.mark.parametrize(
    ("length", "epsilon"),
    # A row of one element has variance 0: with epsilon 0 that is the degenerate input of
    # `test_layer_norm_without_epsilon_of_constant_rows`.
    [(length, epsilon) for length in (1, 31, 33, 1000, 4097) for epsilon in ("1.0e-05", "0.0") if (length, epsilon) != (1, "0.0")],
)
def test_softmax_and_layer_norm_rows_of_awkward_lengths(length: int, epsilon: str):
    """Every element is compared within a finite bound, epsilon 0 included."""
    program = f"""
func.func @main(%x: tensor<3x{length}xf32>, %s: tensor<{length}xf32>, %b: tensor<{length}xf32>) -> (tensor<3x{length}xf32>, tensor<3x{length}xf32>) {{
  %y = graph.softmax %x axis 1 : tensor<3x{length}xf32>
  %z = graph.layer_norm %x, %s, %b axis 1 epsilon {epsilon} : (tensor<3x{length}xf32>, tensor<{length}xf32>, tensor<{length}xf32>) -> tensor<3x{length}xf32>
  func.return %y, %z : tensor<3x{length}xf32>, tensor<3x{length}xf32>
}}"""
    comparison = _assert_close(lower(program, "graph-decompose"), random_inputs(program, length), program)
    assert comparison.compared == 2 * 3 * length


def test_the_bound_catches_a_wrong_epsilon_and_a_dropped_element():
    """The bounds decide: a decomposition with epsilon 1e-3 instead of 1e-5, or one that leaves out
    the last element of each row, is outside them (rows of 33 values of size about 2)."""
    program = """
func.func @main(%x: tensor<3x33xf32>, %s: tensor<33xf32>, %b: tensor<33xf32>) -> (tensor<3x33xf32>, tensor<3x33xf32>) {
  %y = graph.softmax %x axis 1 : tensor<3x33xf32>
  %z = graph.layer_norm %x, %s, %b axis 1 epsilon 1.0e-05 : (tensor<3x33xf32>, tensor<33xf32>, tensor<33xf32>) -> tensor<3x33xf32>
  func.return %y, %z : tensor<3x33xf32>, tensor<3x33xf32>
}"""
    inputs = random_inputs(program, 5)
    _assert_close(lower(program, "graph-decompose"), inputs, program)
    wrong_epsilon = run(lower(program.replace("1.0e-05", "1.0e-03"), "graph-decompose"), "main", [x.copy() for x in inputs])
    assert bounded_comparison(program, inputs, wrong_epsilon).failure.startswith("result #1")
    expected = run(lower(program, ""), "main", [x.copy() for x in inputs])
    dropped = [x.copy() for x in inputs]
    dropped[0][:, -1] = -np.inf  # exp(-inf) = 0: the softmax's sum misses the last element of each row
    short_sum = run(lower(program, "graph-decompose"), "main", dropped)[0]
    short_sum[:, -1] = expected[0][:, -1]  # only the other elements, each too large by the missing share
    assert bounded_comparison(program, inputs, [short_sum, expected[1]]).failure.startswith("result #0")


LAYER_NORM_WITHOUT_EPSILON = """
func.func @main(%x: tensor<2x{n}xf32>, %s: tensor<{n}xf32>, %b: tensor<{n}xf32>) -> tensor<2x{n}xf32> {{
  %z = graph.layer_norm %x, %s, %b axis 1 epsilon 0.0 : (tensor<2x{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>) -> tensor<2x{n}xf32>
  func.return %z : tensor<2x{n}xf32>
}}"""

ROUNDED_MEAN = np.float32(0.94708097)
"""3 * x rounds in f32 and (3 * x) / 3 != x: the decomposition's mean of [x, x, x] is not x."""


@pytest.mark.parametrize(
    ("length", "value"),
    [
        (1, np.float32(0.7)),  # one element: the decomposition's mean is the element itself
        (33, np.float32(0.5)),  # a sum of 33 halves is exact in f32, and so is its mean
        pytest.param(
            3,
            ROUNDED_MEAN,
            marks=pytest.mark.xfail(
                strict=True,
                reason="the f32 mean of a constant row that rounds leaves x - mean a tiny nonzero d, so the "
                "decomposition gives d * rsqrt(d * d) = +-1 (times scale, plus bias) where the interpreter's "
                "0/0 is NaN; reported with issue 13",
            ),
        ),
    ],
)
def test_layer_norm_without_epsilon_of_constant_rows(length: int, value: np.float32):
    """The degenerate input the Hypothesis test excludes: epsilon 0 and a row of equal values.

    The variance is 0, so the interpreter's result is 0 * rsqrt(0) = NaN on every element of the
    row (the bound is infinite there: nothing to compare by value), and the decomposition must give
    NaN too wherever its f32 mean is exact.
    """
    program = LAYER_NORM_WITHOUT_EPSILON.format(n=length)
    x = np.full((2, length), value, np.float32)
    x[1] = np.arange(length, dtype=np.float32)  # a second row with a variance (0 only when length is 1)
    inputs = [x, np.full(length, 2.0, np.float32), np.full(length, 0.25, np.float32)]
    expected = run(lower(program, ""), "main", [a.copy() for a in inputs])[0]
    actual = run(lower(program, "graph-decompose"), "main", [a.copy() for a in inputs])[0]
    assert np.isnan(expected[0]).all()
    assert np.isnan(actual[0]).all(), f"decomposed layer norm of a constant row: {actual[0]}"
    if length > 1:  # the other row is determined, and compared within its bound
        assert bounded_comparison(program, inputs, [actual]).compared == length
        assert_within_bounds(program, inputs, [actual])
