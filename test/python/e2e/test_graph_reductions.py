"""Reductions and normalisations compiled from the graph level agree with numpy.

Every case runs on the CPU (in CI) and on the GPU (marked `gpu`, run on the GPU machine), with
random inputs seeded by the test's name. References are numpy expressions computed in float64.
Maxima, minima and integer sums are compared exactly. Floats are compared within the error bound
`error_bounds.result_bounds` derives from the program and its data (`programs.assert_compiled_matches`:
the compiled result within the bound of the graph interpreter's, and the float64 reference rounded
once within it too): a sum of n terms within gamma(n) * sum|x| of the exact one (its rounding error
grows with the terms, not the result, and with their number; any summation order), softmax and
layer norm through their definitions, f16 results computed in f32 and rounded once. A result a few
bounds off fails.

Rows longer than the 65536 elements a program holds in registers (`LONG_ROWS`) are reduced chunk
by chunk, each lane of a 16384-element accumulator summing a few elements before the tree over
the lanes: another summation order, under the same bound.
"""

from __future__ import annotations


import numpy as np
import pytest

import mlc
from mlc.dialects.tile import ops as tile
from programs import assert_compiled_matches, lower

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
AWKWARD_ROWS = [1, 31, 33, 1000, 4097]
LONG_ROWS = [(2, 100000), (3, 70001)]
"""Rows of more than 65536 elements: 100000 is a multiple of the vector width, 70001 is odd, so the
last chunk of its rows is partial down to single elements."""


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, axes: tuple[int, ...], epsilon: float) -> np.ndarray:
    centered = x - x.mean(axis=axes, keepdims=True)
    variance = (centered * centered).mean(axis=axes, keepdims=True)
    return centered / np.sqrt(variance + epsilon) * scale + bias


def kernel_count(text: str) -> int:
    return sum(isinstance(op, tile.KernelOp) for op in lower(text, "graph-decompose,graph-fuse,convert-graph-to-tile").walk())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(37, columns) for columns in AWKWARD_ROWS] + LONG_ROWS[:1])
def test_fused_softmax_of_an_affine_relu(device: str, shape: tuple[int, int], rng: np.random.Generator):
    """softmax(relu(2x + 1)): one kernel, x read once and the result written once (three times and
    once when rows are longer than a program holds)."""
    t = tensor(shape)
    text = f"""func.func @main(%x: {t}) -> {t} {{
      %two = graph.constant dense<2.0> : tensor<f32>
      %one = graph.constant dense<1.0> : tensor<f32>
      %0 = graph.mul %x, %two : ({t}, tensor<f32>) -> {t}
      %1 = graph.add %0, %one : ({t}, tensor<f32>) -> {t}
      %2 = graph.relu %1 : {t}
      %3 = graph.softmax %2 axis 1 : {t}
      func.return %3 : {t}
    }}"""
    assert kernel_count(text) == 1
    compiled = mlc.compile(text, device=device)
    x = rng.standard_normal(shape).astype(np.float32)
    expected = _softmax(np.maximum(2 * x.astype(np.float64) + 1, 0), axis=1)
    assert_compiled_matches(text, [x], compiled(x), [expected])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("columns", AWKWARD_ROWS)
def test_layer_norm_rows(device: str, columns: int, rng: np.random.Generator):
    x_type, p_type = tensor((19, columns)), tensor((columns,))
    text = f"""func.func @main(%x: {x_type}, %s: {p_type}, %b: {p_type}) -> {x_type} {{
      %0 = graph.layer_norm %x, %s, %b axis -1 epsilon 1.0e-05 : ({x_type}, {p_type}, {p_type}) -> {x_type}
      func.return %0 : {x_type}
    }}"""
    x = (rng.standard_normal((19, columns)) * 3 + 1).astype(np.float32)
    scale, bias = (rng.standard_normal(columns).astype(np.float32) for _ in range(2))
    expected = _layer_norm(x.astype(np.float64), scale, bias, (1,), 1e-5)
    result = mlc.compile(text, device=device)(x, scale, bias)
    assert_compiled_matches(text, [x, scale, bias], result, [expected])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean"])
@pytest.mark.parametrize(
    "shape, axes", [((64, 4097), (1,)), ((1000, 33), (0,)), ((3, 2, 2), (1,)), ((6, 31, 5), (0, 2)), ((7,), (0,))]
)
def test_reductions_keepdims_false(device: str, kind: str, shape, axes, rng: np.random.Generator):
    """Over the last axis, a non-last axis (coalesced along the rows; also one so short that a thread
    holds several rows), two axes, everything."""
    out = tuple(size for axis, size in enumerate(shape) if axis not in axes)
    axes_text = ", ".join(map(str, axes))
    text = f"""func.func @main(%x: {tensor(shape)}) -> {tensor(out)} {{
      %0 = graph.{kind} %x axes [{axes_text}] keepdims false : {tensor(shape)} to {tensor(out)}
      func.return %0 : {tensor(out)}
    }}"""
    x = rng.standard_normal(shape).astype(np.float32)
    _check_reduction(text, kind, x, axes, mlc.compile(text, device=device)(x))


def _check_reduction(text: str, kind: str, x: np.ndarray, axes: tuple[int, ...], result: np.ndarray) -> None:
    """Sums and means within the derived bound (gamma(n) * sum|x|, the mean's division rounding);
    maxima and minima exactly."""
    reference = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_mean": np.mean}[kind]
    expected = reference(x.astype(np.float64), axis=axes)
    assert result.shape == expected.shape
    if kind in ("reduce_max", "reduce_min"):
        np.testing.assert_array_equal(result, expected.astype(np.float32))
    else:
        assert_compiled_matches(text, [x], result, [expected])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind, identity", [("reduce_sum", 0.0), ("reduce_max", -np.inf), ("reduce_min", np.inf)])
def test_empty_reductions_give_the_identity(device: str, kind: str, identity: float):
    text = f"""func.func @main(%x: {tensor((2, 0, 4))}) -> {tensor((2, 4))} {{
      %0 = graph.{kind} %x axes [1] keepdims false : {tensor((2, 0, 4))} to {tensor((2, 4))}
      func.return %0 : {tensor((2, 4))}
    }}"""
    result = mlc.compile(text, device=device)(np.empty((2, 0, 4), np.float32))
    np.testing.assert_array_equal(result, np.full((2, 4), identity, np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_f16_softmax_accumulates_in_f32(device: str, rng: np.random.Generator):
    t = tensor((8, 4097), "f16")
    text = f"""func.func @main(%x: {t}) -> {t} {{
      %0 = graph.softmax %x axis 1 : {t}
      func.return %0 : {t}
    }}"""
    x = (rng.standard_normal((8, 4097)) * 4).astype(np.float16)
    result = mlc.compile(text, device=device)(x)
    assert result.dtype == np.float16
    assert_compiled_matches(text, [x], result, [_softmax(x.astype(np.float64), axis=1)])


@pytest.mark.parametrize("device", DEVICES)
def test_integer_row_sum_wraps_and_max_is_exact(device: str, rng: np.random.Generator):
    t, r = tensor((5, 1000), "i32"), tensor((5, 1), "i32")
    text = f"""func.func @main(%x: {t}) -> ({r}, {r}) {{
      %0 = graph.reduce_sum %x axes [1] keepdims true : {t} to {r}
      %1 = graph.reduce_max %x axes [-1] keepdims true : {t} to {r}
      func.return %0, %1 : {r}, {r}
    }}"""
    x = rng.integers(-(2**30), 2**30, size=(5, 1000), dtype=np.int32)
    total, maximum = mlc.compile(text, device=device)(x)
    np.testing.assert_array_equal(total, x.sum(axis=1, keepdims=True, dtype=np.int32))
    np.testing.assert_array_equal(maximum, x.max(axis=1, keepdims=True))


@pytest.mark.parametrize("device", DEVICES)
def test_statistics_and_normalised_rows_from_one_kernel(device: str, rng: np.random.Generator):
    """A row's mean is returned beside x - mean: both outputs come from one kernel."""
    t, r = tensor((300, 100)), tensor((300, 1))
    text = f"""func.func @main(%x: {t}) -> ({t}, {r}) {{
      %m = graph.reduce_mean %x axes [1] keepdims true : {t} to {r}
      %d = graph.sub %x, %m : ({t}, {r}) -> {t}
      func.return %d, %m : {t}, {r}
    }}"""
    assert kernel_count(text) == 1
    compiled = mlc.compile(text, device=device)
    x = rng.standard_normal((300, 100)).astype(np.float32)
    centered, mean = compiled(x)
    mean_reference = x.astype(np.float64).mean(axis=1, keepdims=True)
    # The interpreter centres on the f32 mean (the value %m holds): so does the reference.
    centered_reference = x - mean_reference.astype(np.float32).astype(np.float64)
    assert_compiled_matches(text, [x], (centered, mean), [centered_reference, mean_reference])


def _long_row_case(kind: str, shape: tuple[int, int]) -> tuple[str, int]:
    """`@main` applying `kind` along the rows of `shape`, and its number of parameters."""
    t, p, r = tensor(shape), tensor(shape[1:]), tensor((shape[0], 1))
    if kind == "softmax":
        return f"%0 = graph.softmax %x axis 1 : {t}\n      func.return %0 : {t}", 1
    if kind == "layer_norm":
        operation = f"graph.layer_norm %x, %s, %b axis 1 epsilon 1.0e-05 : ({t}, {p}, {p}) -> {t}"
        return f"%0 = {operation}\n      func.return %0 : {t}", 3
    return f"%0 = graph.{kind} %x axes [1] keepdims true : {t} to {r}\n      func.return %0 : {r}", 1


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", LONG_ROWS)
@pytest.mark.parametrize("kind", ["softmax", "layer_norm", "reduce_sum", "reduce_max"])
def test_rows_longer_than_a_program_holds(device: str, kind: str, shape: tuple[int, int], rng: np.random.Generator):
    """Each kind over rows of more than 65536 elements: one kernel whose stages loop over chunks."""
    body, parameters = _long_row_case(kind, shape)
    result_type = tensor(shape) if kind in ("softmax", "layer_norm") else tensor((shape[0], 1))
    arguments = f"%x: {tensor(shape)}" + (f", %s: {tensor(shape[1:])}, %b: {tensor(shape[1:])}" if parameters == 3 else "")
    text = f"""func.func @main({arguments}) -> {result_type} {{
      {body}
    }}"""
    assert kernel_count(text) == 1
    x = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    scale, bias = (rng.standard_normal(shape[1:]).astype(np.float32) for _ in range(2))
    result = mlc.compile(text, device=device)(*([x, scale, bias][:parameters]))
    wide = x.astype(np.float64)
    inputs = [x, scale, bias][:parameters]
    if kind == "softmax":
        assert_compiled_matches(text, inputs, result, [_softmax(wide, axis=1)])
    elif kind == "layer_norm":
        assert_compiled_matches(text, inputs, result, [_layer_norm(wide, scale, bias, (1,), 1e-5)])
    elif kind == "reduce_sum":
        assert_compiled_matches(text, inputs, result, [wide.sum(axis=1, keepdims=True)])
    else:
        np.testing.assert_array_equal(result, x.max(axis=1, keepdims=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind, shape, axes", [("reduce_mean", (70001, 33), (0,)), ("reduce_min", (3, 2, 70001), (0, 2))])
def test_long_reductions_over_other_axes(device: str, kind: str, shape, axes, rng: np.random.Generator):
    """Columns longer than a program holds (chunks of 2048 rows by 16 columns), and two reduced axes
    that do not merge (a loop over each: one program per kept index)."""
    out = tuple(size for axis, size in enumerate(shape) if axis not in axes)
    text = f"""func.func @main(%x: {tensor(shape)}) -> {tensor(out)} {{
      %0 = graph.{kind} %x axes [{", ".join(map(str, axes))}] keepdims false : {tensor(shape)} to {tensor(out)}
      func.return %0 : {tensor(out)}
    }}"""
    x = rng.standard_normal(shape).astype(np.float32)
    _check_reduction(text, kind, x, axes, mlc.compile(text, device=device)(x))


@pytest.mark.parametrize("device", DEVICES)
def test_long_integer_rows_wrap_and_f16_rows_accumulate_in_f32(device: str, rng: np.random.Generator):
    """An i32 row sum beyond 65536 elements wraps exactly as numpy's; an f16 softmax of such rows
    is computed in f32 and rounded once (its kernel moves 8 elements a vector, not 4)."""
    integers, sums, halves = tensor((2, 70001), "i32"), tensor((2, 1), "i32"), tensor((2, 100000), "f16")
    text = f"""func.func @main(%x: {integers}, %h: {halves}) -> ({sums}, {halves}) {{
      %0 = graph.reduce_sum %x axes [1] keepdims true : {integers} to {sums}
      %1 = graph.softmax %h axis 1 : {halves}
      func.return %0, %1 : {sums}, {halves}
    }}"""
    x = rng.integers(-(2**30), 2**30, size=(2, 70001), dtype=np.int32)
    h = (rng.standard_normal((2, 100000)) * 4).astype(np.float16)
    total, softmax = mlc.compile(text, device=device)(x, h)
    np.testing.assert_array_equal(total, x.sum(axis=1, keepdims=True, dtype=np.int32))
    assert softmax.dtype == np.float16
    assert_compiled_matches(text, [x, h], (total, softmax), [None, _softmax(h.astype(np.float64), axis=1)])
