"""The persistent grid (`mlc-lower-to-gpu{... persistent-tiles=P}`, loop-persistent-tiles) on the
GPU: f16, bf16 and TF32 products whose warp-specialized kernels loop over their tiles, P blocks
each taking the tiles b, b + P, ... with the producer's stage and phase counters running on across
tiles. P is drawn so that the tile count is not a multiple of it (a block's last lap is partial),
on ragged shapes (masked stores, zero-filled boxes) and at 4096^3 with the device's
multiprocessors; the results within the derived bound of numpy (`assert_compiled_matches`)."""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

import mlc
from mlc.compiler import HOPPER_STAGING
from programs import assert_compiled_matches, lower

GPU = pytest.mark.gpu
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32}


def persistent(blocks: int) -> str:
    """mlc.compile's sm_90 pipeline with the persistent grid of `blocks` blocks, TF32 products on a
    row-major B through the transpose kernel (the grid leaves a product computed transposed alone:
    its consumers' K loop runs two steps an iteration, the producer's one)."""
    staging = " ".join(option for option in HOPPER_STAGING if option != "tf32-swap=true")
    return "mlc-lower-to-gpu{arch=sm_90 " + staging + f" persistent-tiles={blocks}}}"


def program(m: int, n: int, k: int, element: str) -> str:
    precision = ' {precision = "tf32"}' if element == "f32" else ""
    a, b, c = (f"tensor<{shape}x{element}>" for shape in (f"{m}x{k}", f"{k}x{n}", f"{m}x{n}"))
    return f"""func.func @main(%a: {a}, %b: {b}) -> {c} {{
      %0 = graph.matmul %a, %b{precision} : ({a}, {b}) -> {c}
      func.return %0 : {c}
    }}"""


def _multiprocessors() -> int:
    """The GPU's multiprocessors (skips off sm_90: the persistent grid is for warp-specialized products)."""
    from mlc.runtime import get_device

    device = get_device()
    if device.arch != "sm_90":
        pytest.skip("not an sm_90 GPU")
    return device.properties.multiprocessor_count


SHAPES = [
    pytest.param(1000, 1000, 1000, 5, ("f16", "bf16", "f32"), id="1000^3-5-blocks"),  # f16: 8 x 4 tiles of 128 x 256, 32 = 6 * 5 + 2
    pytest.param(300, 203, 131, 2, ("f16", "bf16"), id="300x203x131-padded-2-blocks"),  # ragged rows padded to 16 bytes: 3 tiles
    pytest.param(333, 252, 516, 2, ("f32",), id="333x252x516-ragged-2-blocks"),  # TF32 (K a multiple of 4): ragged M and N
    pytest.param(2048, 2048, 520, 7, ("f16", "bf16", "f32"), id="2048x2048x520-7-blocks"),  # a ragged K step
    pytest.param(4096, 4096, 4096, 0, ("f16", "bf16", "f32"), id="4096^3-every-multiprocessor"),  # 512 tiles on 132 (H100 SXM)
]
CASES = [pytest.param(*shape.values[:4], element, id=f"{shape.id}-{element}") for shape in SHAPES for element in shape.values[4]]


@GPU
@pytest.mark.parametrize("m, n, k, blocks, element", CASES)
def test_persistent_products(m: int, n: int, k: int, blocks: int, element: str, request: pytest.FixtureRequest):
    multiprocessors = _multiprocessors()
    blocks = blocks or multiprocessors
    text = program(m, n, k, element)
    pipeline = persistent(blocks)
    lowered = str(lower(text, pipeline))
    assert f"mlc.persistent_tiles = {blocks}" in lowered and f"grid [{blocks}, 1, 1]" in lowered, "the persistent grid did not apply"
    rng = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    arrays = [rng.standard_normal(shape).astype(NUMPY[element]) for shape in ((m, k), (k, n))]
    got = mlc.compile(text, device="cuda", pipeline=pipeline)(*arrays)
    expected = arrays[0].astype(np.float64) @ arrays[1].astype(np.float64)
    assert_compiled_matches(text, arrays, got, [expected])
