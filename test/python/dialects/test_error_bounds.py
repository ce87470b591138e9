"""The derived error bounds are sound for real implementations, and tight enough to catch errors.

Soundness: numpy's float32 arithmetic, summing in other orders (pairwise, sequential) and with
other roundings than the interpreter's, must land within the bound of every element. Power: a
result perturbed by a few times the bound is caught, with the element named; comparisons closer
than their operands' errors are uncertain, and operands whose box leaves a function's domain make
the bound infinite; a mask's -inf is exact, so masked softmax rows are compared.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.compiler import select_entry
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph.error_bounds import check_results, result_bounds


def _bounds(text: str, inputs: list[np.ndarray]):
    module, _ = parse_module(text, make_context(), "<test>")
    return result_bounds(select_entry(module, None), inputs)


MATMUL_SOFTMAX = """
func.func @main(%a: tensor<16x{k}xf32>, %b: tensor<{k}x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>) {{
  %0 = graph.matmul %a, %b : (tensor<16x{k}xf32>, tensor<{k}x8xf32>) -> tensor<16x8xf32>
  %1 = graph.softmax %0 axis 1 : tensor<16x8xf32>
  %2 = graph.reduce_sum %a axes [1] keepdims false : tensor<16x{k}xf32> to tensor<16xf32>
  func.return %0, %1, %2 : tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>
}}
"""


def _float32_implementation(a: np.ndarray, b: np.ndarray, sequential: bool) -> list[np.ndarray]:
    """The same program in float32 numpy: another summation order and rounding at every step."""
    if sequential:
        product = np.zeros((a.shape[0], b.shape[1]), np.float32)
        for k in range(a.shape[1]):
            product = (product + np.outer(a[:, k], b[k, :])).astype(np.float32)
        row_sum = np.cumsum(a, axis=1, dtype=np.float32)[:, -1]
    else:
        product, row_sum = np.matmul(a, b), np.sum(a, axis=1, dtype=np.float32)
    shifted = product - product.max(axis=1, keepdims=True)
    exponentials = np.exp(shifted)
    return [product, (exponentials / exponentials.sum(axis=1, keepdims=True)).astype(np.float32), row_sum]


@settings(max_examples=25, deadline=None)
@given(k=st.sampled_from((1, 7, 64, 1000)), seed=st.integers(0, 2**32 - 1), sequential=st.booleans())
def test_float32_implementations_stay_within_the_bound(k: int, seed: int, sequential: bool):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((16, k)).astype(np.float32)
    b = rng.standard_normal((k, 8)).astype(np.float32)
    expected, bounds = _bounds(MATMUL_SOFTMAX.format(k=k), [a, b])
    comparison = check_results(_float32_implementation(a, b, sequential), expected, bounds)
    assert comparison.failure is None, comparison.failure
    assert comparison.compared == 16 * 8 * 2 + 16


def test_a_result_off_by_more_than_its_bound_is_caught_and_named():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 64)).astype(np.float32), rng.standard_normal((64, 8)).astype(np.float32)
    expected, bounds = _bounds(MATMUL_SOFTMAX.format(k=64), [a, b])
    wrong = [x.copy() for x in expected]
    wrong[0][3, 5] += np.float32(4 * bounds[0][3, 5] + 1e-30)
    comparison = check_results(wrong, expected, bounds)
    assert comparison.failure is not None and comparison.failure.startswith("result #0 at [3, 5]")
    # The bound is meaningful: far below the values' own size (a dot product of 64 terms).
    assert float(np.max(bounds[0])) < 1e-3 * float(np.max(np.abs(expected[0])))


def test_close_comparisons_are_uncertain_and_where_takes_either_value():
    text = """
    func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xi1>, tensor<3xf32>) {
      %e = graph.exp %x : tensor<3xf32>
      %c = graph.cmp gt, %e, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
      %w = graph.where %c, %e, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      func.return %c, %w : tensor<3xi1>, tensor<3xf32>
    }"""
    x = np.array([0.0, 1.0, 2.0], np.float32)
    y = np.array([1.0, 0.5, np.float32(np.exp(np.float32(2.0)))], np.float32)  # exp(0) = 1 and exp(2) tie y
    (condition, chosen), (condition_bound, chosen_bound) = _bounds(text, [x, y])
    assert condition_bound.tolist() == [1.0, 0.0, 1.0]
    assert 0 < chosen_bound[1] < 1e-6 * np.e  # the certain choice: exp(1)'s own error
    assert chosen_bound[0] >= chosen_bound[1] / np.e  # either value: their distance plus the larger error


def test_a_box_leaving_the_domain_makes_the_bound_infinite():
    text = """
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %s = graph.sub %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %e = graph.exp %x : tensor<2xf32>
      %t = graph.add %s, %e : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %l = graph.log %t : tensor<2xf32>
      func.return %l : tensor<2xf32>
    }"""
    (_,), (bound,) = _bounds(text, [np.array([-200.0, 0.5], np.float32)])
    assert np.isinf(bound[0]) and np.isfinite(bound[1])  # exp(-200) is 0 in f32: log's box reaches 0


def test_a_comparison_with_an_infinite_constant_is_certain():
    """Masks compare computed scores with a -inf constant (PyTorch's attention does, to find rows
    that are all masked): the constant is exact, so the comparison is certain, and the scores after
    it keep finite bounds; a computed infinity (exp overflowing) is not determined."""
    text = """
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) {
      %m = graph.constant dense<0xFF800000> : tensor<f32>
      %e = graph.exp %x : tensor<3xf32>
      %c = graph.cmp eq, %e, %m : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
      %z = graph.constant dense<0.0> : tensor<f32>
      %w = graph.where %c, %z, %e : (tensor<3xi1>, tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
      func.return %c, %w, %e : tensor<3xi1>, tensor<3xf32>, tensor<3xf32>
    }"""
    (condition, chosen, exponentials), (condition_bound, chosen_bound, exponential_bound) = _bounds(
        text, [np.array([0.5, -1.0, 100.0], np.float32)]
    )
    assert not condition.any() and np.isinf(exponentials[2]) and np.isinf(exponential_bound[2])
    assert condition_bound.tolist() == [0.0, 0.0, 1.0]  # the overflowed exp may be compared either way
    assert np.all(np.isfinite(chosen_bound[:2]))


def test_a_masks_infinity_is_exact_and_masked_softmax_rows_are_compared():
    """A -inf that every implementation computes alike (a constant's, chosen by a certain `where`,
    added to finite scores, moved by a reshape) is exact: bound 0, compared by equality; softmax
    ignores exact -inf inputs, so a masked row keeps finite bounds; an overflowed infinity stays
    unknown."""
    text = """
    func.func @main(%x: tensor<2x3xf32>, %keep: tensor<1x3xi1>) -> (tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
      %m = graph.constant dense<0xFF800000> : tensor<f32>
      %zero = graph.constant dense<0.0> : tensor<f32>
      %additive = graph.where %keep, %zero, %m : (tensor<1x3xi1>, tensor<f32>, tensor<f32>) -> tensor<1x3xf32>
      %masked = graph.add %x, %additive : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
      %flat = graph.reshape %masked : tensor<2x3xf32> to tensor<6xf32>
      %p = graph.softmax %masked axis 1 : tensor<2x3xf32>
      %e = graph.exp %x : tensor<2x3xf32>
      func.return %masked, %flat, %p, %e : tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>, tensor<2x3xf32>
    }"""
    inputs = [np.array([[0.5, -1.0, 2.0], [100.0, 0.25, 1.0]], np.float32), np.array([[True, False, True]])]
    (masked, flat, probabilities, exponentials), (masked_bound, flat_bound, softmax_bound, exp_bound) = _bounds(text, inputs)
    assert np.isneginf(masked[:, 1]).all() and masked_bound[:, 1].tolist() == [0.0, 0.0]
    assert flat_bound[[1, 4]].tolist() == [0.0, 0.0]
    assert np.all(np.isfinite(softmax_bound)) and probabilities[0, 1] == 0.0
    assert np.isinf(exponentials[1, 0]) and np.isinf(exp_bound[1, 0])
    assert check_results([masked], [masked], [masked_bound]).failure is None  # -inf against -inf agrees
    moved = masked.copy()
    moved[0, 1] = np.float32(-3.0e38)
    assert check_results([moved], [masked], [masked_bound]).failure is not None
