"""A convolution's NCHW <-> NHWC transposes with their padding or slice: one shared-memory kernel.

Hypothesis draws the two layout kernels around an implicit GEMM (`window_decomposition.py`): an
NCHW input transposed to NHWC and zero-padded (paddings of 0 to 2 on each side), and a padded
NHWC grid (read through a reshape of its flattened rows, as the product is) sliced and transposed
back to NCHW, with grids that are and are not multiples of the block, f32 and f16. Each lowers
through the GPU pipeline to one windowed transpose kernel (`transpose_kernel.py`: a `tile.gather`
through the window map, `tile.transpose`, `tile.store`), and every stage (tile, loop, GPU
dialect with barriers) must give the graph interpreter's result bit for bit. A group with an
elementwise consumer keeps the gather kernel.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.transpose_kernel import WindowedTranspose, windowed_transpose
from programs import assert_equivalent, lower, random_inputs

TO_TILE = "graph-simplify,graph-fuse,graph-plan-memory,convert-graph-to-tile,cse,canonicalize"
TO_LOOP = f"{TO_TILE},convert-tile-to-loop{{tensor-cores=true}},cse,canonicalize"
TO_GPU = f"{TO_LOOP},loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers"


def _type(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "x".join(map(str, shape)) + f"x{element}>"


def padded_input(shape: tuple[int, int, int, int], pads: tuple[int, int, int, int], element: str) -> str:
    """NCHW `shape` transposed to NHWC, then padded by (top, left, bottom, right) zeros."""
    n, c, h, w = shape
    top, left, bottom, right = pads
    lines = [f"%t = graph.transpose %x perm [0, 2, 3, 1] : {_type(shape, element)} to {_type((n, h, w, c), element)}"]
    lines.append(f"%zero = graph.constant dense<0.0> : tensor<{element}>")
    current, value = (n, h, w, c), "%t"
    for axis, before, after in ((1, top, bottom), (2, left, right)):
        if not before and not after:
            continue
        pieces, types = [], []
        for count, name in ((before, f"%b{axis}"), (0, value), (after, f"%a{axis}")):
            if name == value:
                pieces.append(value)
                types.append(_type(current, element))
            elif count:
                side = tuple(count if d == axis else s for d, s in enumerate(current))
                lines.append(f"{name} = graph.broadcast %zero : tensor<{element}> to {_type(side, element)}")
                pieces.append(name)
                types.append(_type(side, element))
        grown = tuple(s + before + after if d == axis else s for d, s in enumerate(current))
        lines.append(f"%p{axis} = graph.concat {', '.join(pieces)} axis {axis} : ({', '.join(types)}) -> {_type(grown, element)}")
        current, value = grown, f"%p{axis}"
    return _function(_type(shape, element), lines, value, _type(current, element))


def sliced_output(grid: tuple[int, int, int, int], window: tuple[int, int, int, int], element: str, flat: bool = True) -> str:
    """A padded NHWC `grid` (given as its N*Hp*Wp x C rows when `flat`, as the product is) sliced
    at (oa, ob) to (A, B) and transposed to NCHW."""
    n, hp, wp, c = grid
    oa, ob, a, b = window
    source = (n * hp * wp, c) if flat else grid
    lines = [f"%g = graph.reshape %x : {_type(source, element)} to {_type(grid, element)}"] if flat else []
    lines += [
        f"%s = graph.slice {'%g' if flat else '%x'} starts [0, {oa}, {ob}, 0] ends [{n}, {oa + a}, {ob + b}, {c}] steps [1, 1, 1, 1] : "
        f"{_type(grid, element)} to {_type((n, a, b, c), element)}",
        f"%t = graph.transpose %s perm [0, 3, 1, 2] : {_type((n, a, b, c), element)} to {_type((n, c, a, b), element)}",
    ]
    return _function(_type(source, element), lines, "%t", _type((n, c, a, b), element))


def _function(source: str, lines: list[str], result: str, result_type: str) -> str:
    body = "\n  ".join(lines)
    return f"func.func @main(%x: {source}) -> {result_type} {{\n  {body}\n  func.return {result} : {result_type}\n}}\n"


def _windowed(text: str) -> WindowedTranspose | None:
    """The recognised window of the function's layout ops taken as one group."""
    from xdsl.dialects import func

    from mlc.dialects.graph import ops as graph
    from mlc.transforms.analysis.fusion_groups import group_from_ops, live_ops

    function = next(op for op in lower(text, "graph-simplify").walk() if isinstance(op, func.FuncOp))
    ops = [op for op in function.body.block.ops if not isinstance(op, graph.ConstantOp | func.ReturnOp)]
    return windowed_transpose(group_from_ops(ops, live_ops(function)))


def _check_every_stage(text: str, seed: int, moves_elements: bool) -> None:
    """`moves_elements`: the transpose swaps two axes of more than one element each (otherwise
    graph-simplify makes it a reshape, and no shared-memory transpose is expected)."""
    before = lower(text, "")
    inputs = random_inputs(text, seed)
    tiled = lower(text, TO_TILE)
    if moves_elements:
        gathers = [op for op in tiled.walk() if isinstance(op, tile.GatherOp)]
        assert len(gathers) == 1 and any(isinstance(op, tile.TransposeOp) for op in tiled.walk())
    for stage in (tiled, lower(text, TO_LOOP), lower(text, TO_GPU)):
        assert_equivalent(before, stage, inputs)


SIDES = st.sampled_from((1, 2, 5, 8, 9))
CHANNELS = st.sampled_from((1, 3, 8, 16, 70))


@settings(max_examples=6, deadline=None)
@given(
    batch=st.integers(1, 2), channels=CHANNELS, height=SIDES, width=SIDES,
    pads=st.tuples(*(st.integers(0, 2),) * 4), element=st.sampled_from(("f32", "f16")), seed=st.integers(0, 2**16),
)
def test_padded_input_transpose_matches_at_every_stage(batch, channels, height, width, pads, element, seed):
    text = padded_input((batch, channels, height, width), pads, element)
    _check_every_stage(text, seed, moves_elements=channels > 1 and height * width > 1)


@settings(max_examples=6, deadline=None)
@given(
    batch=st.integers(1, 2), channels=CHANNELS, height=SIDES, width=SIDES,
    extra=st.tuples(*(st.integers(0, 2),) * 4), element=st.sampled_from(("f32", "f16")), seed=st.integers(0, 2**16),
)
def test_sliced_output_transpose_matches_at_every_stage(batch, channels, height, width, extra, element, seed):
    grid = (batch, height + extra[0] + extra[2], width + extra[1] + extra[3], channels)
    text = sliced_output(grid, (extra[0], extra[1], height, width), element)
    _check_every_stage(text, seed, moves_elements=channels > 1 and height * width > 1)


def test_windows_are_recognised_with_their_offsets():
    padded = _windowed(padded_input((2, 8, 5, 6), (1, 2, 0, 1), "f32"))
    assert padded is not None and padded.to_channels_last and padded.offsets == (-1, -2) and not padded.contained()
    sliced = _windowed(sliced_output((2, 7, 8, 16), (0, 1, 5, 6), "f16", flat=False))
    assert sliced is not None and not sliced.to_channels_last and sliced.offsets == (0, 1) and sliced.contained()
    assert _windowed(sliced_output((2, 7, 8, 16), (0, 1, 5, 6), "f16").replace("perm [0, 3, 1, 2]", "perm [0, 3, 2, 1]").replace("16x5x6", "16x6x5")) is None
    fewer_channels = sliced_output((2, 7, 8, 16), (0, 1, 5, 6), "f16", flat=False).replace("ends [2, 5, 7, 16]", "ends [2, 5, 7, 8]")
    assert _windowed(fewer_channels.replace("2x5x6x16", "2x5x6x8").replace("2x16x5x6", "2x8x5x6")) is None


def test_an_elementwise_consumer_keeps_the_gather():
    text = sliced_output((1, 4, 4, 8), (0, 0, 3, 3), "f32")
    text = text.replace("func.return %t", "%r = graph.relu %t : tensor<1x8x3x3xf32>\n  func.return %r")
    assert not any(isinstance(op, tile.TransposeOp) for op in lower(text, TO_TILE).walk())
