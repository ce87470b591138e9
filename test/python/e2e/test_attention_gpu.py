"""Attention cores compiled for the GPU agree with PyTorch (issue 16), fused and as separate kernels.

Each case is an attention core as PyTorch exports it (`programs.attention_program`: matmul(Q, Kt),
the 1/sqrt(d) scale, an optional additive mask, softmax, matmul(P, V)), batch x heads 4 to 8,
sequence lengths 256 to 1024 (some not a multiple of any block), head dims 64 and 128, f16 and
f32, causal or not. Causal masking is the additive mask argument filled with 0 / -inf (upper
triangle), as a model passes it; a constant [S, S] mask would be folded into the program text.

The reference is PyTorch's `softmax(q @ kt / sqrt(d) + mask) @ v` in float64 on the GPU, rounded
once to the result type; it and mlc's result must both be within the error bound
`error_bounds.result_bounds` derives from the program and the data (`assert_compiled_matches`:
the online softmax's rescalings are covered by the softmax bound), and a result moved by a few
bounds is caught. The fused cases compile with bytes alone deciding (`graph-fuse` without the
GPU's compute model, which would choose separate kernels for these head dims) and check that the
program became one chain kernel; the `separate` cases force the fallback
(`graph-fuse{on-chip-bytes=0}`: the blocks cannot fit) and check the three-kernel path against
the same bound. The `tensor_core` cases compile with the default GPU pipeline, whose compute
model fuses f16 and bf16 chains onto the tensor-core chain kernel (`chain_mma.py`), causal ones as
the importer writes `is_causal` (`graph.where` of a key <= query comparison), boolean padding
masks through `graph.where`; some with graph-fuse's opt-in fast math, some with K stored [N, D]
and transposed in the program (the chain reads it in place); the head split of multi-head
attention (q, k, v sliced from the in-projection's result, O transposed back), which the chain
reads and writes in place.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from programs import assert_compiled_matches, attention_program, head_split_attention_program, random_inputs

import mlc
from mlc.transforms.pipelines import GPU_FUSE, GPU_PIPELINE, gpu_fuse

pytestmark = pytest.mark.gpu

FUSED = GPU_PIPELINE.replace(GPU_FUSE, "graph-fuse")
"""The chain kernel on the GPU: bytes alone decide (with the GPU's measured rates the model falls
back to separate kernels for these head dims: `test_attention_chain.py`)."""
SEPARATE = GPU_PIPELINE.replace(GPU_FUSE, "graph-fuse{on-chip-bytes=0}")

CASES = [
    # element, batch x heads, sequence, head dim, causal
    pytest.param("f16", 8, 1024, 64, False, id="f16-bh8-s1024-d64"),
    pytest.param("f16", 8, 1024, 64, True, id="f16-bh8-s1024-d64-causal"),
    pytest.param("f16", 4, 1000, 128, False, id="f16-bh4-s1000-d128"),
    pytest.param("f16", 4, 777, 128, True, id="f16-bh4-s777-d128-causal"),
    pytest.param("f32", 4, 256, 64, True, id="f32-bh4-s256-d64-causal"),
    pytest.param("f32", 6, 300, 128, False, id="f32-bh6-s300-d128"),
    pytest.param("f32", 4, 513, 64, False, id="f32-bh4-s513-d64"),
]


def _case(element: str, heads: int, sequence: int, depth: int, causal: bool, seed: int):
    program = attention_program(element, (heads,), sequence, sequence, depth, depth, "additive" if causal else "none", True)
    inputs = random_inputs(program.text, seed)
    if causal:  # the additive mask argument holds the causal pattern
        above = np.arange(sequence)[None, :] > np.arange(sequence)[:, None]
        inputs[3] = np.where(above, -np.inf, 0.0).astype(inputs[3].dtype)
    elif len(inputs) > 3:
        inputs = inputs[:3]
    return program, inputs


def _pytorch_reference(inputs: list[np.ndarray], depth: int) -> np.ndarray:
    torch = pytest.importorskip("torch")
    q, kt, v, *mask = (torch.from_numpy(np.asarray(x, np.float64)).cuda() for x in inputs)
    scores = q @ kt / np.sqrt(depth)
    if mask:
        scores = scores + mask[0]
    return (torch.softmax(scores, dim=-1) @ v).cpu().numpy()


def _chain_kernels(compiled) -> int:
    """The chain kernels (named `<function>_chain<i>_attention`) among the lowered module's functions."""
    return len(re.findall(r"func @\w+_chain\d+_attention\(", str(compiled.lowered_module)))


@pytest.mark.parametrize(("element", "heads", "sequence", "depth", "causal"), CASES)
def test_fused_attention_against_pytorch(element: str, heads: int, sequence: int, depth: int, causal: bool):
    program, inputs = _case(element, heads, sequence, depth, causal, seed=sequence + depth)
    compiled = mlc.compile(program.text, device="cuda", pipeline=FUSED)
    assert _chain_kernels(compiled) == 1
    result = compiled(*inputs)
    assert_compiled_matches(program.text, inputs, result, references=[_pytorch_reference(inputs, depth)])


@pytest.mark.parametrize("element", ["f16", "f32"])
def test_separate_kernels_against_pytorch(element: str):
    program, inputs = _case(element, 4, 333, 64, True, seed=7)
    compiled = mlc.compile(program.text, device="cuda", pipeline=SEPARATE)
    assert _chain_kernels(compiled) == 0
    result = compiled(*inputs)
    assert_compiled_matches(program.text, inputs, result, references=[_pytorch_reference(inputs, 64)])


FAST_MATH = GPU_PIPELINE.replace(GPU_FUSE, gpu_fuse("fast-math=true"))
"""The default GPU pipeline with graph-fuse's opt-in fast math (f32 scores, exp2)."""

TENSOR_CORE_CASES = [
    # element, batch x heads, sequence, head dim, mask, fast math, K stored [N, D] (read in place)
    pytest.param("f16", 4, 1000, 64, "none", False, True, id="bh4-s1000-d64-stored-k"),
    pytest.param("f16", 4, 777, 128, "causal-where", False, False, id="bh4-s777-d128-causal"),
    pytest.param("f16", 2, 300, 128, "additive", False, False, id="bh2-s300-d128-additive"),
    pytest.param("f16", 3, 130, 33, "causal-where", False, True, id="bh3-s130-d33-causal-stored-k"),
    pytest.param("f16", 4, 1000, 128, "none", True, False, id="bh4-s1000-d128-fast"),
    pytest.param("f16", 3, 517, 64, "padding", True, True, id="bh3-s517-d64-padding-fast-stored-k"),
    pytest.param("bf16", 4, 777, 128, "causal-where", True, False, id="bf16-bh4-s777-d128-causal-fast"),
    pytest.param("bf16", 2, 300, 64, "additive", False, False, id="bf16-bh2-s300-d64-additive"),
    # 256 programs of 128 rows: the plan's warps of 32 rows (`attention_cost.warp_rows_for`)
    pytest.param("f16", 32, 1000, 64, "none", True, True, id="bh32-s1000-d64-fast-stored-k-warps-of-32"),
]


WGMMA_FAST_MATH = FAST_MATH.replace("convert-tile-to-loop{tensor-cores=true}", "convert-tile-to-loop{tensor-cores=true wgmma=true}")
"""Fast math with convert-tile-to-loop's `wgmma` (what `mlc-lower-to-gpu{arch=sm_90}` sets)."""

WGMMA_CASES = [
    # 128-row blocks (two consumer warpgroups), K stored [N, D]: B K-major
    pytest.param("f16", 32, 1000, 64, "none", True, True, id="wgmma-bh32-s1000-d64-fast-stored-k"),
    pytest.param("bf16", 4, 777, 128, "causal-where", True, True, id="wgmma-bf16-bh4-s777-d128-causal-fast-stored-k"),
    pytest.param("f16", 3, 517, 64, "padding", True, True, id="wgmma-bh3-s517-d64-padding-fast-stored-k"),
    # Kt given [D, S] (B N-major): S a multiple of 8, so that its rows can be staged by 16-byte copies
    pytest.param("f16", 2, 304, 128, "additive", True, False, id="wgmma-bh2-s304-d128-additive-fast"),
]


def _expected_products(depth: int, sequence: int, stored_keys: bool, pipeline: str | None) -> str:
    """The chain's product instruction: warpgroup products on sm_90 where the plan asks for them
    (head dims of 64 or 128 here, `attention_cost.wgmma_chain_fits`), the pipeline lowers them and
    the K or Kt rows are 16-byte multiples (`chain_wgmma_applies`)."""
    from mlc.runtime import get_device
    from mlc.targets import WGMMA_ARCHS

    wgmma = pipeline == WGMMA_FAST_MATH or (pipeline is None and get_device().arch in WGMMA_ARCHS)
    aligned = stored_keys or sequence % 8 == 0
    return "wgmma.mma_async" if wgmma and depth in (64, 128) and aligned else "llvm.nvvm.mma.m16n8k16"


@pytest.mark.parametrize(("element", "heads", "sequence", "depth", "mask", "fast_math", "stored_keys"), TENSOR_CORE_CASES)
def test_tensor_core_chain_against_pytorch(element: str, heads: int, sequence: int, depth: int, mask: str, fast_math: bool, stored_keys: bool):
    """f16 and bf16 chains on the default GPU pipeline (or with fast math): one chain kernel, on
    mma.sync (or, by default on sm_90, warpgroup products), within the bound; K given stored
    [N, D] is read in place by the chain (ldmatrix without trans)."""
    _check_tensor_core_chain(element, heads, sequence, depth, mask, fast_math, stored_keys, FAST_MATH if fast_math else None)


@pytest.mark.parametrize(("element", "heads", "sequence", "depth", "mask", "fast_math", "stored_keys"), WGMMA_CASES)
def test_wgmma_chain_against_pytorch(element: str, heads: int, sequence: int, depth: int, mask: str, fast_math: bool, stored_keys: bool):
    """The chain on warpgroup products (`chain_wgmma.py`: S = Q Kt and P V with A from registers,
    K and V staged swizzled), with fast math: one chain kernel within the bound."""
    _check_tensor_core_chain(element, heads, sequence, depth, mask, fast_math, stored_keys, WGMMA_FAST_MATH)


def _check_tensor_core_chain(element: str, heads: int, sequence: int, depth: int, mask: str, fast_math: bool, stored_keys: bool, pipeline: str | None) -> None:
    program = attention_program(element, (heads,), sequence, sequence, depth, depth, mask, True, stored_keys)
    inputs = random_inputs(program.text, seed=sequence)
    compiled = mlc.compile(program.text, device="cuda", pipeline=pipeline)
    assert _chain_kernels(compiled) == 1
    lowered = str(compiled.lowered_module)
    assert _expected_products(depth, sequence, stored_keys, pipeline) in lowered
    assert ("exp2" in lowered) == fast_math
    result = compiled(*inputs)
    reference_inputs = list(inputs)
    if stored_keys:
        reference_inputs[1] = np.swapaxes(inputs[1], -1, -2)
    if mask == "causal-where":
        above = np.arange(sequence)[None, :] > np.arange(sequence)[:, None]
        reference_inputs.append(np.where(above, -np.inf, 0.0))
    elif mask == "padding":  # the boolean keep mask as an additive one
        reference_inputs[3] = np.where(inputs[3], 0.0, -np.inf)
    assert_compiled_matches(program.text, inputs, result, references=[_pytorch_reference(reference_inputs, depth)])


@pytest.mark.parametrize(
    ("sequence", "batch", "heads", "batch_first"),
    [pytest.param(512, 8, 16, True, id="s512-b8-h16-d64-batch-first"), pytest.param(300, 3, 4, False, id="s300-b3-h4-d64")],
)
def test_head_split_read_in_place_against_pytorch(sequence: int, batch: int, heads: int, batch_first: bool):
    """The transformer block's attention as exported (the projection [S*B, 3E] or [B*S, 3E]
    split into heads, O transposed back to rows of E): one kernel, the tensor-core chain reading
    q, k and v from the projection and writing O's transpose, within the bound of PyTorch's SDPA
    in float64."""
    torch = pytest.importorskip("torch")
    text = head_split_attention_program("f16", sequence, batch, heads, 64, batch_first, merge_heads=True)
    inputs = random_inputs(text, seed=sequence)
    compiled = mlc.compile(text, device="cuda")
    layout_kernels = [name for name in re.findall(r"func @(\w+)\(", str(compiled.lowered_module)) if "slice" in name or "transpose" in name]
    assert _chain_kernels(compiled) == 1 and not layout_kernels, layout_kernels
    outer = (batch, sequence) if batch_first else (sequence, batch)
    parts = torch.from_numpy(np.asarray(inputs[0], np.float64)).cuda().reshape(*outer, 3, heads, 64)
    order = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    q, k, v = (parts[:, :, index].permute(*order) for index in range(3))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    reference = o.permute(*((0, 2, 1, 3) if batch_first else (2, 0, 1, 3))).reshape(sequence * batch, heads * 64).cpu().numpy()
    assert_compiled_matches(text, inputs, compiled(*inputs), references=[reference])
