"""A matmul stored through a layout chain (`tile.scatter`, `scattered_store.py`) keeps its meaning.

graph-fuse{store-layouts=true} (what mlc-lower-to-gpu sets) puts the slice and transpose that bring an
implicit GEMM's padded grid back to NCHW into the matmul's kernel. Hypothesis draws stride-1
convolutions without a bias or a consumer (the ResNet layer before its batch norm: the only ones
whose product is read by the layout chain alone), with random batch, channels (a multiple of 8),
sizes, kernel, paddings and dilations, in f32 and f16, and interprets the module after every pass
of the GPU pipeline from graph-fuse to convert-tile-to-loop: convert-graph-to-tile against the
graph's error bounds, the other passes bit-exactly against the module before them. One fixed
f16 layer also goes the Hopper way (wgmma blocks, its async-copy pipeline, the later GPU passes),
bit-exactly; the GPU tests run the NVVM level.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import lower, random_inputs
from test_tensor_core_equivalence import _check_chain
from test_wgmma_equivalence import STEPS as WGMMA_STEPS

from mlc.compiler import select_entry
from mlc.dialects.graph.error_bounds import check_results, result_bounds
from mlc.dialects.graph.nn_ops import windowed_size
from mlc.interpreter import run
from mlc.transforms.pipelines import GPU_FUSE, GPU_PIPELINE

assert "store-layouts=true" in GPU_FUSE, "the GPU pipeline's graph-fuse stores layouts: what this file checks"
PASSES = GPU_PIPELINE.split(",")
NAMES = [name.split("{")[0] for name in PASSES]
STEPS = [(",".join(PASSES[:index]), PASSES[index]) for index in range(NAMES.index("graph-fuse"), NAMES.index("convert-tile-to-loop") + 1)]
WGMMA_TILE_LEVEL = ",".join(PASSES[: NAMES.index("convert-graph-to-tile")]) + ",convert-graph-to-tile{matmul-tile=64,64,64}," + ",".join(
    PASSES[NAMES.index("convert-graph-to-tile") + 1 : NAMES.index("convert-tile-to-loop")]
)


def conv_program(batch: int, channels: int, outputs: int, size: tuple[int, int], kernel: tuple[int, int], pads: list[int], dilations: tuple[int, int], element: str) -> str:
    height, width = size
    oh = windowed_size(height, kernel[0], 1, pads[0], pads[2], dilations[0])
    ow = windowed_size(width, kernel[1], 1, pads[1], pads[3], dilations[1])
    x, w, out = (f"tensor<{'x'.join(map(str, s))}x{element}>" for s in ((batch, channels, height, width), (outputs, channels, *kernel), (batch, outputs, oh, ow)))
    return (
        f"func.func @main(%x: {x}, %w: {w}) -> {out} {{\n"
        f"  %r = graph.conv2d %x, %w strides [1, 1] pads {pads} dilations {list(dilations)} group 1 : ({x}, {w}) -> {out}\n"
        f"  func.return %r : {out}\n}}\n"
    )


@st.composite
def stored_convolutions(draw) -> str:
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilations = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    extent = [d * (k - 1) + 1 for d, k in zip(dilations, kernel)]
    size = (draw(st.integers(1, 7)), draw(st.integers(1, 7)))
    pads = [draw(st.integers(0, 2)) for _ in range(4)]
    for axis in range(2):  # the window must fit the padded input
        pads[axis + 2] += max(0, extent[axis] - size[axis] - pads[axis] - pads[axis + 2])
    return conv_program(
        draw(st.integers(1, 2)), 8 * draw(st.integers(1, 2)), draw(st.integers(1, 20)), size, kernel, pads, dilations, draw(st.sampled_from(["f32", "f16"]))
    )


@pytest.mark.parametrize("step", STEPS, ids=lambda step: step[1])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=stored_convolutions(), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_stored_layout(step: tuple[str, str], program: str, seed: int):
    before_passes, name = step
    after = lower(program, f"{before_passes},{name}")
    implicit = "mlc.implicit_gemm" in str(after)  # not a 1x1 convolution without padding: a plain matmul
    assert not implicit or "_reshape_slice_transpose" not in str(after), f"the output chain is a kernel of its own\n{program}"
    inputs = random_inputs(program, seed)
    actual = run(after, "main", [x.copy() for x in inputs])
    if name.startswith("convert-graph-to-tile"):
        assert not implicit or "tile.scatter" in str(after), program
        expected, bounds = result_bounds(select_entry(lower(program, ""), None), inputs)
        comparison = check_results(actual, expected, bounds)
        assert comparison.failure is None, f"{comparison.failure}\n{program}"
    else:
        expected = run(lower(program, before_passes), "main", [x.copy() for x in inputs])
        for want, got in zip(expected, actual):
            np.testing.assert_array_equal(got, want, err_msg=program)


def test_wgmma_kernel_scatters_exactly():
    """A 64-channel f16 layer (2 images of 5x6, padding 1: 112 grid rows, ragged against the
    64x64 blocks) through the wgmma lowering and the GPU passes after it, bit-exact."""
    program = conv_program(2, 64, 64, (5, 6), (3, 3), [1, 1, 1, 1], (1, 1), "f16")
    _check_chain(program, "f16", WGMMA_STEPS, 7, tile_level=WGMMA_TILE_LEVEL, path="loop.wgmma")
    assert "tile.scatter" in str(lower(program, WGMMA_TILE_LEVEL))


@st.composite
def stored_chains(draw) -> str:
    """A matmul group whose product (M x N) goes through a random chain: a reshape to a random
    factorisation of M * N (splitting rows, or mixing rows and columns), a unit-step slice, a transpose."""
    rows, columns, depth = draw(st.integers(1, 12)), draw(st.integers(1, 12)), draw(st.integers(1, 5))
    sizes = [rows * columns]
    for _ in range(draw(st.integers(0, 2))):
        divisors = [d for d in range(2, sizes[-1]) if sizes[-1] % d == 0]
        if divisors:
            split = draw(st.sampled_from(divisors))
            sizes[-1:] = [sizes[-1] // split, split]
    if draw(st.booleans()) and len(sizes) == 1:
        sizes = [rows, columns]  # the product's own shape: slice and transpose only
    starts = [draw(st.integers(0, n - 1)) for n in sizes]
    ends = [draw(st.integers(s + 1, n)) for s, n in zip(starts, sizes)]
    perm = draw(st.permutations(range(len(sizes))))
    sliced = [e - s for s, e in zip(starts, ends)]
    out = [sliced[p] for p in perm]

    def t(shape) -> str:
        return f"tensor<{'x'.join(map(str, shape))}xf32>"

    body = [f"%y = graph.matmul %a_1, %b_1 : ({t((rows, depth))}, {t((depth, columns))}) -> {t((rows, columns))}"]
    value, shape = "%y", [rows, columns]
    if sizes != shape:
        body.append(f"%g = graph.reshape %y : {t(shape)} to {t(sizes)}")
        value = "%g"
    body.append(f"%s = graph.slice {value} starts {starts} ends {ends} steps {[1] * len(sizes)} : {t(sizes)} to {t(sliced)}")
    body.append(f"%o = graph.transpose %s perm {list(perm)} : {t(sliced)} to {t(out)}")
    region = "\n      ".join(body)
    return (
        f"func.func @main(%a: {t((rows, depth))}, %b: {t((depth, columns))}) -> {t(out)} {{\n"
        f'  %r = graph.fusion matmul "main_0_matmul" (%a_1 = %a : {t((rows, depth))}, %b_1 = %b : {t((depth, columns))}) -> {t(out)} {{\n'
        f"      {region}\n      graph.yield %o : {t(out)}\n  }}\n  func.return %r : {t(out)}\n}}\n"
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=stored_chains(), seed=st.integers(0, 2**32 - 1))
def test_matmul_scatters_through_any_chain(program: str, seed: int):
    """The inverse maps of reshapes that split rows or mix rows and columns (index maps over the
    whole block), slices and transposes: one matmul kernel with a tile.scatter, through
    convert-graph-to-tile and the loop lowering, within the graph's error bounds."""
    tile_level = str(lower(program, "convert-graph-to-tile"))
    assert tile_level.count("tile.kernel") == 1 and "tile.scatter" in tile_level, program
    lowered = lower(program, "convert-graph-to-tile,cse,canonicalize,convert-tile-to-loop")
    inputs = random_inputs(program, seed)
    actual = run(lowered, "main", [x.copy() for x in inputs])
    expected, bounds = result_bounds(select_entry(lower(program, ""), None), inputs)
    comparison = check_results(actual, expected, bounds)
    assert comparison.failure is None, f"{comparison.failure}\n{program}"
