"""Fused elementwise functions compiled from the graph level agree with numpy.

Every case runs on the CPU (in CI) and on the GPU (marked `gpu`, run on the GPU machine), with
random inputs seeded by the test's name; outputs are compared with a numpy expression of the same
function: exactly where the compiled code computes what numpy does (one correctly rounded f32 op
per element, integers, selections), else within the error bound `error_bounds.result_bounds`
derives from the program and its data (`programs.assert_compiled_matches`: the graph
interpreter's result within the bound, and the float64 numpy expression rounded once within it too).
"""

from __future__ import annotations


import numpy as np
import pytest

import mlc
from programs import assert_compiled_matches

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def compile_and_run(text: str, device: str, *arrays: np.ndarray):
    return mlc.compile(text, device=device)(*arrays)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", [1, 7, 1000, 1001, 4096, 2**20 + 3])
def test_add_of_any_size(device: str, size: int, rng: np.random.Generator):
    t = tensor((size,), "f32")
    text = f"""func.func @main(%a: {t}, %b: {t}) -> {t} {{
      %0 = graph.add %a, %b : ({t}, {t}) -> {t}
      func.return %0 : {t}
    }}"""
    a, b = rng.standard_normal(size, dtype=np.float32), rng.standard_normal(size, dtype=np.float32)
    np.testing.assert_array_equal(compile_and_run(text, device, a, b), a + b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(64, 1024), (33, 65), (3, 5, 7)])
def test_chain_with_bias_broadcast(device: str, shape: tuple[int, ...], rng: np.random.Generator):
    x_type, b_type = tensor(shape, "f32"), tensor(shape[-1:], "f32")
    text = f"""func.func @main(%x: {x_type}, %b: {b_type}) -> {x_type} {{
      %two = graph.constant dense<2.0> : tensor<f32>
      %one = graph.constant dense<1.0> : tensor<f32>
      %0 = graph.mul %x, %two : ({x_type}, tensor<f32>) -> {x_type}
      %1 = graph.add %0, %one : ({x_type}, tensor<f32>) -> {x_type}
      %2 = graph.relu %1 : {x_type}
      %3 = graph.mul %2, %b : ({x_type}, {b_type}) -> {x_type}
      func.return %3 : {x_type}
    }}"""
    x = rng.standard_normal(shape, dtype=np.float32)
    b = rng.standard_normal(shape[-1:], dtype=np.float32)
    reference = np.maximum(2 * x.astype(np.float64) + 1, 0) * b
    assert_compiled_matches(text, [x, b], compile_and_run(text, device, x, b), [reference])


@pytest.mark.parametrize("device", DEVICES)
def test_column_and_row_broadcast(device: str, rng: np.random.Generator):
    text = """func.func @main(%col: tensor<37x1xf32>, %row: tensor<1x129xf32>) -> tensor<37x129xf32> {
      %0 = graph.sub %col, %row : (tensor<37x1xf32>, tensor<1x129xf32>) -> tensor<37x129xf32>
      %1 = graph.tanh %0 : tensor<37x129xf32>
      func.return %1 : tensor<37x129xf32>
    }"""
    col = rng.standard_normal((37, 1), dtype=np.float32)
    row = rng.standard_normal((1, 129), dtype=np.float32)
    reference = np.tanh(col.astype(np.float64) - row)
    assert_compiled_matches(text, [col, row], compile_and_run(text, device, col, row), [reference])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(1000,), (17, 33)])
def test_half_precision_gelu_and_sigmoid(device: str, shape: tuple[int, ...], rng: np.random.Generator):
    t = tensor(shape, "f16")
    text = f"""func.func @main(%x: {t}) -> ({t}, {t}) {{
      %0 = graph.gelu %x : {t}
      %1 = graph.sigmoid %0 : {t}
      func.return %0, %1 : {t}, {t}
    }}"""
    x = rng.standard_normal(shape).astype(np.float16)
    gelu, sigmoid = compile_and_run(text, device, x)
    from math import erf

    x64 = x.astype(np.float64)
    gelu_reference = 0.5 * x64 * (1 + np.vectorize(erf)(x64 / np.sqrt(2)))
    assert gelu.dtype == np.float16 and sigmoid.dtype == np.float16
    sigmoid_reference = 1 / (1 + np.exp(-gelu_reference.astype(np.float16).astype(np.float64)))
    assert_compiled_matches(text, [x], (gelu, sigmoid), [gelu_reference, sigmoid_reference])


@pytest.mark.parametrize("device", DEVICES)
def test_integers_comparisons_and_casts(device: str, rng: np.random.Generator):
    text = """func.func @main(%a: tensor<300xi32>, %b: tensor<300xi32>, %x: tensor<300xf32>) -> (tensor<300xi32>, tensor<300xf32>, tensor<300xi32>) {
      %q = graph.div %a, %b : (tensor<300xi32>, tensor<300xi32>) -> tensor<300xi32>
      %gt = graph.cmp gt, %a, %b : (tensor<300xi32>, tensor<300xi32>) -> tensor<300xi1>
      %neg = graph.neg %x : tensor<300xf32>
      %w = graph.where %gt, %x, %neg : (tensor<300xi1>, tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
      %scaled = graph.mul %x, %x : (tensor<300xf32>, tensor<300xf32>) -> tensor<300xf32>
      %i = graph.cast %scaled : tensor<300xf32> to tensor<300xi32>
      func.return %q, %w, %i : tensor<300xi32>, tensor<300xf32>, tensor<300xi32>
    }"""
    a = rng.integers(-50, 50, 300).astype(np.int32)
    b = rng.integers(-5, 5, 300).astype(np.int32)
    x = (rng.standard_normal(300) * 10).astype(np.float32)
    quotient, chosen, truncated = compile_and_run(text, device, a, b, x)
    with np.errstate(all="ignore"):
        expected_quotient = np.where(b == 0, 0, np.trunc(a / np.where(b == 0, 1, b))).astype(np.int32)
    np.testing.assert_array_equal(quotient, expected_quotient)
    np.testing.assert_array_equal(chosen, np.where(a > b, x, -x))
    np.testing.assert_array_equal(truncated, (x * x).astype(np.int32))


@pytest.mark.parametrize("device", DEVICES)
def test_constants_reshapes_and_returned_arguments(device: str, rng: np.random.Generator):
    text = """func.func @main(%x: tensor<6xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>, tensor<2x2xf32>) {
      %c = graph.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
      %fill = graph.constant dense<7.0> : tensor<2x2xf32>
      %r = graph.reshape %x : tensor<6xf32> to tensor<2x3xf32>
      %s = graph.add %r, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %t = graph.mul %s, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %t, %x, %fill : tensor<2x3xf32>, tensor<6xf32>, tensor<2x2xf32>
    }"""
    x = rng.standard_normal(6, dtype=np.float32)
    y = rng.standard_normal((2, 3), dtype=np.float32)
    product, same_x, fill = compile_and_run(text, device, x, y)
    constant = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(product, (x.reshape(2, 3) + constant) * y)
    np.testing.assert_array_equal(same_x, x)
    np.testing.assert_array_equal(fill, np.full((2, 2), 7.0, np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_constants_keep_signed_zeros_and_nan(device: str, rng: np.random.Generator):
    """[0.0, -0.0] is no splat (dividing by it gives inf and -inf); a NaN splat is one."""
    text = """func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
      %zeros = graph.constant dense<[0.0, -0.0]> : tensor<2xf32>
      %nan = graph.constant dense<0x7FC00000> : tensor<2xf32>
      %0 = graph.div %x, %zeros : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      %1 = graph.add %x, %nan : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      func.return %0, %1 : tensor<2xf32>, tensor<2xf32>
    }"""
    x = rng.uniform(1, 2, 2).astype(np.float32)
    quotient, with_nan = mlc.compile(text, device=device)(x)
    np.testing.assert_array_equal(quotient, [np.inf, -np.inf])
    assert np.isnan(with_nan).all()


@pytest.mark.parametrize("device", DEVICES)
def test_wrong_arguments_raise_value_error_naming_them(device: str):
    text = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = graph.exp %a : tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }"""
    f = mlc.compile(text, device=device)
    with pytest.raises(ValueError, match="argument"):
        f(np.ones(5, np.float32))
    with pytest.raises(ValueError, match="float32"):
        f(np.ones(4, np.float64))
    with pytest.raises(ValueError):
        f()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("element", ["f32", "f16"])
def test_sine_and_cosine(device: str, element: str, rng: np.random.Generator):
    t = tensor((257,), element)
    text = f"""func.func @main(%x: {t}) -> ({t}, {t}) {{
      %s = graph.sin %x : {t}
      %c = graph.cos %x : {t}
      func.return %s, %c : {t}, {t}
    }}"""
    # Arguments up to 1e4 exercise the argument reduction, not only the first period.
    x = (rng.standard_normal(257) * np.where(rng.random(257) < 0.8, 3.0, 1e4)).astype(element.replace("f", "float"))
    sine, cosine = compile_and_run(text, device, x)
    x64 = x.astype(np.float64)
    assert_compiled_matches(text, [x], (sine, cosine), [np.sin(x64), np.cos(x64)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("element", ["i32", "i64"])
def test_integer_power_wraps_and_truncates_negative_exponents(device: str, element: str, rng: np.random.Generator):
    t = tensor((400,), element)
    text = f"""func.func @main(%a: {t}, %b: {t}) -> {t} {{
      %p = graph.pow %a, %b : ({t}, {t}) -> {t}
      func.return %p : {t}
    }}"""
    dtype = np.int32 if element == "i32" else np.int64
    a = rng.integers(-5, 6, 400).astype(dtype)
    b = rng.integers(-3, 70, 400).astype(dtype)  # exponents past the type's width wrap
    power = compile_and_run(text, device, a, b)
    expected = np.array([_wrapped_power(int(x), int(y), np.dtype(dtype).itemsize * 8) for x, y in zip(a, b)], dtype=dtype)
    np.testing.assert_array_equal(power, expected)


def _wrapped_power(base: int, exponent: int, bits: int) -> int:
    """Python's exact power reduced to a signed `bits`-bit integer; a negative exponent truncates."""
    if exponent < 0:
        return 1 if base == 1 else (-1) ** exponent if base == -1 else 0
    value = pow(base, exponent, 1 << bits)
    return value - (1 << bits) if value >= 1 << (bits - 1) else value
