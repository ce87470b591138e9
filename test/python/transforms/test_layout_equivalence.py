"""Layout ops, pools and convolutions keep their meaning through every pass that touches them.

Hypothesis draws one of: a transpose (any permutation), a slice (random, negative and
out-of-range bounds and steps), a concatenation, a max or average pool (kernel, strides, padding)
or a conv2d (channels, groups including depthwise, kernel, strides, padding, dilations; a second
test draws only those that become implicit GEMMs), often followed by an elementwise consumer, on
small random shapes. The module is interpreted before
and after each pass of the CPU and GPU pipelines from graph-decompose to convert-tile-to-loop.
Passes that reassociate (graph-decompose's sums, convert-graph-to-tile's kernels) are compared
with the graph interpreter within the bound derived from the program (`error_bounds`); the others
exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.compiler import select_entry
from mlc.dialects.graph.error_bounds import check_results, result_bounds
from mlc.dialects.graph.nn_ops import windowed_size
from mlc.interpreter import run
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import random_inputs, stage, transposed_matmul_program

BOUNDED = ("graph-decompose", "convert-graph-to-tile")


def _steps() -> list[tuple[str, str]]:
    """(passes before, the pass) for the passes from graph-decompose to convert-tile-to-loop."""
    steps = []
    for pipeline in (GPU_PIPELINE, CPU_PIPELINE):
        passes = pipeline.split(",")
        names = [name.split("{")[0] for name in passes]  # without options
        for index in range(names.index("graph-decompose"), names.index("convert-tile-to-loop") + 1):
            step = (",".join(passes[:index]), passes[index])
            if step not in steps:
                steps.append(step)
    return steps


STEPS = _steps()


def tensor(shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


KINDS = ("transpose", "slice", "concat", "max_pool2d", "avg_pool2d", "conv2d")


@st.composite
def layout_programs(draw, kinds: tuple[str, ...] = KINDS) -> str:
    """A program of one layout op, pool or convolution (`implicit_conv2d`: one whose channels,
    group and strides make it an implicit GEMM), often followed by an elementwise consumer."""
    kind = draw(st.sampled_from(kinds))
    implicit = kind == "implicit_conv2d"
    kind = "conv2d" if implicit else kind
    arguments, lines = [], []
    if kind in ("transpose", "slice", "concat"):
        shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=4)))
        arguments.append(("x", shape))
        if kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            out = tuple(shape[p] for p in perm)
            lines.append(f"%r = graph.transpose %x perm {list(perm)} : {tensor(shape)} to {tensor(out)}")
        elif kind == "slice":
            starts = [draw(st.integers(-8, 8)) for _ in shape]
            ends = [draw(st.integers(-8, 8)) for _ in shape]
            steps = [draw(st.sampled_from([-3, -2, -1, 1, 2, 3])) for _ in shape]
            out = tuple(len(range(*slice(a, b, c).indices(n))) for a, b, c, n in zip(starts, ends, steps, shape))
            lines.append(f"%r = graph.slice %x starts {starts} ends {ends} steps {steps} : {tensor(shape)} to {tensor(out)}")
        else:
            axis = draw(st.integers(0, len(shape) - 1))
            other = tuple(draw(st.integers(0, 4)) if d == axis else n for d, n in enumerate(shape))
            arguments.append(("y", other))
            out = tuple(2 * n + m if d == axis else n for d, (n, m) in enumerate(zip(shape, other)))
            lines.append(f"%r = graph.concat %x, %y, %x axis {axis} : ({tensor(shape)}, {tensor(other)}, {tensor(shape)}) -> {tensor(out)}")
    else:
        batch, height, width = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7))
        group = 1 if implicit else draw(st.sampled_from([1, 1, 2, 3]))
        channels = 8 if implicit else group * draw(st.integers(1, 2))
        kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        strides = (1, 1) if implicit else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if kind == "conv2d" else (1, 1)
        limit = (lambda axis: kernel[axis % 2] - 1) if kind != "conv2d" else (lambda axis: 2)
        pads = [draw(st.integers(0, limit(axis))) for axis in range(4)]
        extent = [d * (k - 1) + 1 for d, k in zip(dilations, kernel)]
        if extent[0] > height + pads[0] + pads[2] or extent[1] > width + pads[1] + pads[3]:
            pads = [max(p, math.ceil((e - s) / 2)) for p, e, s in zip(pads, extent * 2, (height, width) * 2)]
            if kind != "conv2d" and any(p >= kernel[a % 2] for a, p in enumerate(pads)):
                kernel = (1, 1)
                pads = [0, 0, 0, 0]
        x = (batch, channels, height, width)
        arguments.append(("x", x))
        oh = windowed_size(height, kernel[0], strides[0], pads[0], pads[2], dilations[0])
        ow = windowed_size(width, kernel[1], strides[1], pads[1], pads[3], dilations[1])
        if kind == "conv2d":
            outputs = group * draw(st.integers(1, 2))
            w = (outputs, channels // group, *kernel)
            arguments += [("w", w), ("b", (outputs,))]
            out = (batch, outputs, oh, ow)
            lines.append(
                f"%r = graph.conv2d %x, %w, %b strides {list(strides)} pads {pads} dilations {list(dilations)} group {group} : "
                f"({tensor(x)}, {tensor(w)}, {tensor((outputs,))}) -> {tensor(out)}"
            )
        else:
            out = (batch, channels, oh, ow)
            lines.append(f"%r = graph.{kind} %x kernel {list(kernel)} strides {list(strides)} pads {pads} : {tensor(x)} to {tensor(out)}")
    result = "%r"
    if draw(st.booleans()):
        lines.append(f"%e = graph.relu %r : {tensor(out)}")
        result = "%e"
    parameters = ", ".join(f"%{name}: {tensor(shape)}" for name, shape in arguments)
    body = "\n  ".join(lines)
    return f"func.func @main({parameters}) -> {tensor(out)} {{\n  {body}\n  func.return {result} : {tensor(out)}\n}}\n"


@pytest.mark.parametrize("step", STEPS, ids=lambda step: step[1] if isinstance(step, tuple) else step)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=layout_programs(), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_layout_and_windows(step: tuple[str, str], program: str, seed: int):
    before_passes, name = step
    before = stage(program, before_passes)
    after = stage(program, f"{before_passes},{name}" if before_passes else name)
    inputs = random_inputs(program, seed)
    actual = run(after, "main", [x.copy() for x in inputs])
    if name.split("{")[0] in BOUNDED:
        expected, bounds = result_bounds(select_entry(stage(program, ""), None), inputs)
        comparison = check_results(actual, expected, bounds)
        assert comparison.failure is None, f"{comparison.failure}\n{program}"
    else:
        expected = run(before, "main", [x.copy() for x in inputs])
        for want, got in zip(expected, actual):
            np.testing.assert_array_equal(got, want, err_msg=program)


@pytest.mark.parametrize("step", STEPS, ids=lambda step: step[1] if isinstance(step, tuple) else step)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=layout_programs(("implicit_conv2d",)), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_implicit_gemm(step: tuple[str, str], program: str, seed: int):
    """Convolutions that graph-decompose makes implicit GEMMs (eight channels, one group, stride 1),
    through the same passes: the shifted rows, their fusion and the matmul kernel reading them."""
    test_pass_preserves_layout_and_windows.hypothesis.inner_test(step, program, seed)


@st.composite
def transposed_matmul_programs(draw) -> str:
    """A matmul one or both of whose operands are transposes of the last two dimensions (read in
    place by its kernel, `mlc.operand_major`), batched or not, f32 or f16, often with a bias and
    relu epilogue."""
    element = draw(st.sampled_from(["f32", "f16"]))
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=1)))
    m, k, n = (draw(st.integers(1, 20)) for _ in range(3))
    lhs_t, rhs_t = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    return transposed_matmul_program(batch, m, k, n, lhs_t, rhs_t, element, draw(st.booleans()))


@pytest.mark.parametrize("step", STEPS, ids=lambda step: step[1] if isinstance(step, tuple) else step)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=transposed_matmul_programs(), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_transposed_operands(step: tuple[str, str], program: str, seed: int):
    """Matmuls reading transposed operands in their stored layout, through the same passes: the
    transposes' fusion, the kernel's transposed tiles and every dot lowering's transposed reads."""
    test_pass_preserves_layout_and_windows.hypothesis.inner_test(step, program, seed)
