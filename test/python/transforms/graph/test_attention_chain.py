"""Attention as one kernel (issue 16): graph-fuse's chain region, its kernel, and every later pass.

Hypothesis draws attention cores as PyTorch exports them (`programs.attention_programs`: f32 or
f16, bf16 for the tensor-core kernel, 0 to 2 batch dimensions, query and key lengths that are not multiples of the blocks, head
dimensions 1 to 256, no mask, an additive mask, a causal constant mask or a boolean padding mask
through `graph.where`, K given transposed or stored [..., N, D] and transposed in the program,
which the chain then reads in place) and checks:

* graph-fuse makes one `chain` region with `mlc.chain` and `mlc.chain_plan`, and the graph
  interpreter's result is unchanged (the region means its body);
* convert-graph-to-tile makes one `tile.kernel` for it, whose result (the online softmax: the
  running max and sum rescale the accumulator) is within the error bound that
  `error_bounds.result_bounds` derives from the source program, and a result moved by a few
  bounds is caught;
* with graph-fuse's opt-in `fast-math` (f32 scores, exp2, a reciprocal of the sum), the
  tensor-core kernel and the CPU's chain kernel stay within the same bound; so does the
  tensor-core kernel with warps of 32 query rows (the plan's `warp_rows`);
* after every later pass of the CPU and GPU pipelines, on one small program each (two key
  blocks, so the accumulator is rescaled), the interpreter's result is within that bound (the GPU
  passes are checked by the interpreters only);
* compiled for the CPU, the result is within the bound and matches a float64 numpy reference;
* the head split of multi-head attention (q, k, v sliced and transposed from the in-projection's
  result, O transposed back for the out-projection) is one chain region and one kernel that reads
  the projection and writes O's transpose in place (`chain_operand_views.py`; a head dim that is
  not a power of two keeps the gather), within the bound and against numpy, compiled for the CPU
  and as the tensor-core kernel (interpreted);
* with `on-chip-bytes` too small for the smallest blocks, graph-fuse leaves the chain to
  separate kernels and says why (`mlc.chain_fallback`), and the result is still right.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from programs import (
    AttentionProgram,
    assert_compiled_matches,
    assert_within_bounds,
    attention_program,
    attention_programs,
    head_split_attention_program,
    lower,
    random_inputs,
)

import mlc
from mlc.compiler import lower as lower_module
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.interpreter import run
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_FUSE, GPU_PIPELINE, gpu_fuse

GRAPH = "graph-simplify,graph-fold-constants,cse,graph-decompose,cse,graph-fuse"
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _inputs(program: AttentionProgram, seed: int) -> list[np.ndarray]:
    return random_inputs(program.text, seed)


def _run(module, inputs: list[np.ndarray]):
    return run(module, "main", [x.copy() for x in inputs])


def _reference(program: AttentionProgram, inputs: list[np.ndarray]) -> np.ndarray:
    """softmax(q kt / sqrt(d) + mask) v in float64."""
    q, kt, v, *rest = (np.asarray(x, np.float64) if x.dtype != np.bool_ else x for x in inputs)
    kt = np.swapaxes(kt, -1, -2) if program.stored_keys else kt
    scores = q @ kt / np.sqrt(program.depth)
    if program.mask == "additive":
        scores = scores + rest[0]
    elif program.mask == "causal":
        scores = np.where(np.arange(program.keys)[None, :] > np.arange(program.rows)[:, None], -np.inf, scores)
    elif program.mask in ("padding", "padding-guarded", "padding-aten-guarded"):
        scores = np.where(rest[0], scores, -np.inf)
    elif program.mask == "causal-where":
        scores = np.where(np.arange(program.keys)[None, :] > np.arange(program.rows)[:, None], -np.inf, scores)
    with np.errstate(invalid="ignore"):
        exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probabilities = exponentials / exponentials.sum(axis=-1, keepdims=True)
    if program.mask in ("padding-guarded", "padding-aten-guarded"):  # a fully masked row: 0, not NaN
        probabilities = np.where(np.isnan(probabilities), 0.0, probabilities)
    return probabilities @ v


def _chains(module) -> list[graph.FusionOp]:
    return [op for op in module.walk() if isinstance(op, graph.FusionOp) and op.kind.data == "chain"]


@settings(max_examples=25, **SETTINGS)
@given(program=attention_programs(), seed=st.integers(0, 2**32 - 1))
def test_chain_region_and_kernel(program: AttentionProgram, seed: int):
    inputs = _inputs(program, seed)
    fused = lower(program.text, GRAPH)
    assert_within_bounds(program.text, inputs, _run(fused, inputs))
    chains = _chains(fused)
    if not chains:  # the model may find that fusion does not pay (very few keys): it says so
        (reason,) = [op.attributes["mlc.chain_fallback"].data for op in fused.walk() if "mlc.chain_fallback" in op.attributes]
        assert "does not pay" in reason
        event("fell back: fusion does not pay")
        return
    (chain,) = chains
    assert chain.attributes["mlc.chain"].data == "attention"
    # K stored [..., N, D]: its transpose is the chain's, the kernel reads K in place (at D = 1
    # graph-simplify makes the transpose a reshape)
    assert any(isinstance(op, graph.TransposeOp) for op in chain.body.walk()) == (program.stored_keys and program.depth > 1)
    assert "mlc.chain_plan" in chain.attributes
    tiled = lower(program.text, f"{GRAPH},graph-plan-memory,convert-graph-to-tile")
    kernels = [op for op in tiled.walk() if isinstance(op, tile.KernelOp)]
    assert len(kernels) == 1 and "mlc.chain" in kernels[0].attributes
    assert_compiled_matches(program.text, inputs, _run(tiled, inputs))


@settings(max_examples=6, **SETTINGS)
@given(program=attention_programs(), seed=st.integers(0, 2**32 - 1))
def test_cpu_end_to_end_against_numpy(program: AttentionProgram, seed: int):
    inputs = _inputs(program, seed)
    result = mlc.compile(program.text, device="cpu")(*inputs)
    assert_compiled_matches(program.text, inputs, result, references=[_reference(program, inputs)])


@pytest.mark.parametrize(
    ("pipeline", "program"),
    [
        (CPU_PIPELINE, attention_program("f16", (), 3, 18, 2, 1, "padding-guarded", True)),
        (GPU_PIPELINE.replace(GPU_FUSE, "graph-fuse"), attention_program("f32", (2,), 5, 20, 3, 2, "causal", False)),
    ],
    ids=["cpu-f16-padding-guarded", "gpu-f32-causal"],
)
def test_every_pass_keeps_the_answer(pipeline: str, program: AttentionProgram):
    """Interpreted after each pass from convert-graph-to-tile on (two key blocks: a rescaling)."""
    inputs = _inputs(program, 0)
    passes = pipeline.split(",")
    first_after_graph = [name.split("{")[0] for name in passes].index("convert-graph-to-tile")
    module = lower(program.text, ",".join(passes[:first_after_graph]))
    for index in range(first_after_graph, len(passes)):
        lower_module(module, passes[index])
        assert_within_bounds(program.text, inputs, _run(module, inputs))


TENSOR_CORE_PASSES = GPU_PIPELINE.split(",")
TENSOR_CORE_PREFIX = ",".join(TENSOR_CORE_PASSES[: [name.split("{")[0] for name in TENSOR_CORE_PASSES].index("gpu-insert-barriers") + 1])
"""The GPU pipeline (with its compute model) up to gpu-insert-barriers: the tensor-core chain kernel
as the GPU interpreter runs it, barriers and all."""


@settings(max_examples=5, **SETTINGS)
@given(
    program=attention_programs(max_rows=40, max_keys=90, depths=(16, 33, 64, 128), elements=("f16", "bf16")),
    fast_math=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_tensor_core_chain_kernel(program: AttentionProgram, fast_math: bool, seed: int):
    """f16 and bf16 chains on the GPU pipeline: the chain kernel on tensor cores (loop.mma_sync,
    ldmatrix, quad all_reduce; causal ones skipping key blocks), interpreted with its barriers and
    async copies, within the softmax's error bound (the race checker watching shared memory); with
    graph-fuse's fast math, exp2 and the f32 scores, within the same bound."""
    inputs = _inputs(program, seed)
    prefix = TENSOR_CORE_PREFIX.replace(GPU_FUSE, gpu_fuse("fast-math=true")) if fast_math else TENSOR_CORE_PREFIX
    module = lower(program.text, prefix)
    text = str(module)
    assert "mlc_gpu.func @main_chain0_attention" in text and "mma" in text
    assert ("keys_visited" in text) == (program.mask in ("causal", "causal-where"))
    assert ("math.exp2" in text) == fast_math
    event(f"{program.element}{' fast math' if fast_math else ''}")
    assert_compiled_matches(program.text, inputs, _run(module, inputs), references=[_reference(program, inputs)])


@pytest.mark.parametrize(
    "program",
    [attention_program("f16", (2,), 70, 90, 64, 64, "none", True, True), attention_program("bf16", (), 33, 70, 33, 16, "causal-where", False)],
    ids=["f16-stored-k", "bf16-causal"],
)
def test_tensor_core_chain_kernel_with_warps_of_32_rows(program: AttentionProgram):
    """The chain plan's `warp_rows = 32` (its blocks rewritten to 64 rows: two warps, each of two
    m16 rows sharing the B registers): the same kernel checks, interpreted with its barriers."""
    inputs = _inputs(program, 1)
    passes = TENSOR_CORE_PREFIX.split(",")
    after_fuse = [name.split("{")[0] for name in passes].index("graph-fuse") + 1
    fused = str(lower(program.text, ",".join(passes[:after_fuse])))
    fused = re.sub(r"block_rows = \d+ : i64", "block_rows = 64 : i64, warp_rows = 32 : i64", fused)
    module = lower(fused, ",".join(passes[after_fuse:]))
    assert "mlc.warp_grid = array<i64: 2, 1>" in str(module)
    assert_compiled_matches(program.text, inputs, _run(module, inputs), references=[_reference(program, inputs)])


@pytest.mark.parametrize(("element", "mask"), [("bf16", "causal-where"), ("f32", "additive")])
def test_fast_math_on_the_cpu(element: str, mask: str):
    """Fast math on the CPU pipeline's chain kernel (libm's exp2f): within the bound, against numpy."""
    program = attention_program(element, (2,), 21, 40, 16, 8, mask, True)
    inputs = _inputs(program, 3)
    pipeline = CPU_PIPELINE.replace("graph-fuse", "graph-fuse{fast-math=true}", 1)
    compiled = mlc.compile(program.text, device="cpu", pipeline=pipeline)
    assert "exp2" in str(compiled.lowered_module)
    assert_compiled_matches(program.text, inputs, compiled(*inputs), references=[_reference(program, inputs)])


def _fully_masked_inputs(program: AttentionProgram) -> list[np.ndarray]:
    """Random inputs whose boolean keep mask hides every key of the first batch entry."""
    inputs = _inputs(program, 5)
    inputs[3][0] = False
    return inputs


@pytest.mark.parametrize("guard", ["padding-guarded", "padding-aten-guarded"])
def test_fully_masked_rows_under_a_guard(guard: str):
    """PyTorch's ONNX NaN guard (`padding-guarded`) and core ATen's guard of rows all -inf
    (`padding-aten-guarded`): one chain, whose rows with every key masked give 0 as the guarded
    softmax does, in the tile kernel (interpreted) and compiled for the CPU, with and without fast
    math (where the kernel tests the reciprocal of the sum), compared with the bound (masked rows
    included: their -inf is exact); the unguarded chain gives NaN there, as the unfused softmax."""
    program = attention_program("f32", (2,), 21, 40, 16, 8, guard, True)
    inputs = _fully_masked_inputs(program)
    tiled = lower(program.text, f"{GRAPH},graph-plan-memory,convert-graph-to-tile")
    assert len([op for op in tiled.walk() if isinstance(op, tile.KernelOp)]) == 1
    reference = _reference(program, inputs)
    assert np.all(reference[0] == 0) and np.all(np.isfinite(reference))
    comparison = assert_compiled_matches(program.text, inputs, _run(tiled, inputs), references=[reference])
    assert comparison.compared == reference.size
    for pipeline in (CPU_PIPELINE, CPU_PIPELINE.replace("graph-fuse", "graph-fuse{fast-math=true}", 1)):
        result = mlc.compile(program.text, device="cpu", pipeline=pipeline)(*inputs)
        assert np.all(result[0] == 0)
        assert_compiled_matches(program.text, inputs, result, references=[reference])
    if guard == "padding-guarded":
        unguarded = attention_program("f32", (2,), 21, 40, 16, 8, "padding", True)
        assert np.all(np.isnan(mlc.compile(unguarded.text, device="cpu")(*inputs)[0]))


def test_fallback_when_the_blocks_do_not_fit():
    text = (
        "func.func @main(%q: tensor<2x20x16xf32>, %kt: tensor<2x16x30xf32>, %v: tensor<2x30x8xf32>) -> tensor<2x20x8xf32> {\n"
        "  %s = graph.matmul %q, %kt : (tensor<2x20x16xf32>, tensor<2x16x30xf32>) -> tensor<2x20x30xf32>\n"
        "  %p = graph.softmax %s axis -1 : tensor<2x20x30xf32>\n"
        "  %o = graph.matmul %p, %v : (tensor<2x20x30xf32>, tensor<2x30x8xf32>) -> tensor<2x20x8xf32>\n"
        "  func.return %o : tensor<2x20x8xf32>\n}\n"
    )
    fused = lower(text, GRAPH.replace("graph-fuse", "graph-fuse{on-chip-bytes=4096}"))
    assert not _chains(fused)
    reasons = [op.attributes["mlc.chain_fallback"].data for op in fused.walk() if "mlc.chain_fallback" in op.attributes]
    assert len(reasons) == 1 and "more than 4096" in reasons[0]
    inputs = random_inputs(text, 0)
    assert_within_bounds(text, inputs, _run(fused, inputs))
    assert_within_bounds(text, inputs, mlc.compile(text, device="cpu")(*inputs))


def test_pytorch_onnx_export_is_one_chain(tmp_path):
    """PyTorch's export (Transpose of K, MatMul, Div, Add of the mask, Softmax, MatMul), after the
    graph optimiser: one chain region holding the transpose of K, which its kernel reads in place
    (no layout kernel before it)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from mlc.frontend.onnx import import_model

    class Attention(torch.nn.Module):
        def forward(self, q, k, v, mask):
            scores = q @ k.transpose(-2, -1) / 4.0
            return torch.softmax(scores + mask, dim=-1) @ v

    path = tmp_path / "attention.onnx"
    arguments = (torch.randn(2, 4, 32, 16), torch.randn(2, 4, 48, 16), torch.randn(2, 4, 48, 16), torch.zeros(32, 48))
    torch.onnx.export(Attention(), arguments, str(path), opset_version=17, dynamo=False)
    module = import_model(str(path))
    lower_module(module, GRAPH)
    (chain,) = _chains(module)
    transpose, *_ = chain.body.block.ops
    assert isinstance(transpose, graph.TransposeOp)
    assert not any(isinstance(op, graph.FusionOp) and op is not chain for op in module.walk())
    assert [op.name for op in chain.body.block.ops][1:4] == ["graph.matmul", "graph.div", "graph.add"]


def test_pytorch_onnx_export_of_sdpa_with_a_float_mask_is_one_chain(tmp_path):
    """`F.scaled_dot_product_attention` with a float `attn_mask`, exported to ONNX (opset 17: Q and
    K each scaled by sqrt(scale), MatMul, Add of the mask, Softmax, MatMul): one chain region."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from mlc.frontend.onnx import import_model

    class Attention(torch.nn.Module):
        def forward(self, q, k, v, mask):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    path = tmp_path / "sdpa.onnx"
    arguments = (torch.randn(2, 4, 32, 16), torch.randn(2, 4, 48, 16), torch.randn(2, 4, 48, 16), torch.randn(32, 48))
    torch.onnx.export(Attention(), arguments, str(path), opset_version=17, dynamo=False)
    module = import_model(str(path))
    lower_module(module, GRAPH)
    (chain,) = _chains(module)
    assert [op.name for op in chain.body.block.ops][:2] == ["graph.matmul", "graph.add"]


def test_pytorch_onnx_export_of_sdpa_with_a_boolean_mask_is_one_chain(tmp_path):
    """A boolean `attn_mask` exported to ONNX (opset 17): `Where(mask, 0, -inf)` added to the
    scores, and `Where(IsNaN(P), 0, P)` after the softmax: one chain with the NaN guard; compiled
    for the CPU, against PyTorch, a query row that sees no key included (0, as PyTorch gives)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    from mlc.frontend.onnx import import_model

    class Attention(torch.nn.Module):
        def forward(self, q, k, v, mask):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    path = tmp_path / "sdpa_bool.onnx"
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, n, 16, generator=generator) for n in (32, 48, 48))
    mask = torch.rand(32, 48, generator=generator) < 0.8
    mask[3] = False
    torch.onnx.export(Attention(), (q, k, v, mask), str(path), opset_version=17, dynamo=False)
    module = import_model(str(path))
    text = str(module)
    lower_module(module, GRAPH)
    (chain,) = _chains(module)
    assert [op.name for op in chain.body.block.ops][-4:] == ["graph.cmp", "graph.where", "graph.matmul", "graph.yield"]
    inputs = [x.numpy() for x in (q, k, v, mask)]
    expected = Attention()(q, k, v, mask).numpy()
    assert np.all(expected[:, :, 3] == 0)
    assert_compiled_matches(text, inputs, mlc.compile(text, device="cpu")(*inputs), references=[expected])


@pytest.mark.parametrize("mask", ["float", "bool", "causal"])
def test_pytorch_sdpa_masks_reach_the_tensor_core_chain(mask: str):
    """torch's scaled_dot_product_attention as the torch frontend imports it (`torch.export`, the
    op kept: transpose of K, matmul, scale, an additive float mask, a boolean mask through
    `graph.where`, or `is_causal`), f16 and bf16: one chain region on the GPU's compute model."""
    torch = pytest.importorskip("torch")
    from mlc.frontend.torch import import_exported

    class Attention(torch.nn.Module):
        def forward(self, q, k, v, *masks):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=masks[0] if masks else None, is_causal=not masks)

    for dtype in (torch.float16, torch.bfloat16):
        q, k, v = (torch.randn(2, 4, 64, 32, dtype=dtype) for _ in range(3))
        masks = {"float": (torch.randn(64, 64, dtype=dtype),), "bool": (torch.rand(2, 1, 64, 64) > 0.3,), "causal": ()}[mask]
        module = import_exported(torch.export.export(Attention(), (q, k, v, *masks)), decompose=False)
        lower_module(module, GRAPH.replace("graph-fuse", "graph-fuse{compute-model=gpu}"))
        (chain,) = _chains(module)
        assert chain.attributes["mlc.chain_plan"].data["block_rows"].value.data == 64


def _fallback_reasons(module) -> list[str]:
    return [op.attributes["mlc.chain_fallback"].data for op in module.walk() if "mlc.chain_fallback" in op.attributes]


@pytest.mark.parametrize(
    ("element", "depth", "blocks"),
    [("f16", 64, (128, 64)), ("f16", 128, (128, 64)), ("f16", 2, None), ("f32", 64, None)],
)
def test_gpu_compute_model(element: str, depth: int, blocks: tuple[int, int] | None):
    """With the GPU's measured rates (`compute-model=gpu`, the GPU pipeline's): an f16 attention
    core of a real head dim fuses onto the tensor-core chain kernel with its blocks (BM 128, BN
    64); a tiny head dim (no tensor cores) stays fused on CUDA cores, where the score matrix's round
    trip outweighs the slow products; f32 (CUDA cores) goes to separate kernels, the estimates in
    the reason. Bytes alone fuse all of them (graph-level passes only: nothing is run)."""
    program = attention_program(element, (64,), 1024, 1024, depth, depth, "none", True)
    module = lower(program.text, GRAPH.replace("graph-fuse", "graph-fuse{compute-model=gpu}"))
    if element == "f32":
        assert not _chains(module)
        (reason,) = _fallback_reasons(module)
        assert reason.startswith("the chain kernel's products on CUDA cores: about ") and reason.endswith("fusion does not pay")
    else:
        (chain,) = _chains(module)
        plan = chain.attributes["mlc.chain_plan"]
        if blocks is not None:
            assert (plan.data["block_rows"].value.data, plan.data["block_keys"].value.data) == blocks
    assert len(_chains(lower(program.text, GRAPH))) == 1


def test_unknown_compute_model_is_reported():
    program = attention_program("f32", (), 4, 20, 8, 8, "none", False)
    with pytest.raises(mlc.MlcError, match="unknown compute-model 'tpu'"):
        lower(program.text, GRAPH.replace("graph-fuse", "graph-fuse{compute-model=tpu}"))


def test_query_blocks_are_halved_while_twice_the_programs_fit_one_wave():
    from mlc.transforms.analysis.attention_cost import TENSOR_CORE_MIN_ROWS, wave_filling_rows

    assert wave_filling_rows(16, 512, 128, 132) == 64  # 64 programs of 128 rows -> 128 of 64
    assert wave_filling_rows(128, 512, 128, 132) == 128  # 512 programs fill the GPU already
    assert wave_filling_rows(1, 4096, 128, 132) == 64  # 32 -> 64 programs, not 128 of 32 rows
    assert wave_filling_rows(1, 64, 64, 132) == TENSOR_CORE_MIN_ROWS
    assert wave_filling_rows(16, 512, 128, 0) == 128  # multiprocessors unknown: unchanged


def _head_split_reference(projection: np.ndarray, sequence: int, batch: int, heads: int, depth: int, batch_first: bool, merge_heads: bool) -> np.ndarray:
    """softmax(q kt / sqrt(d)) v in float64 of the projection's q, k and v (`head_split_attention_program`)."""
    outer = (batch, sequence) if batch_first else (sequence, batch)
    parts = np.asarray(projection, np.float64).reshape(*outer, 3, heads, depth)
    q, k, v = (np.moveaxis(parts[:, :, index], (0, 1, 2), (0, 2, 1) if batch_first else (2, 0, 1)) for index in range(3))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(depth)
    exponentials = np.exp(scores - scores.max(axis=-1, keepdims=True))
    o = exponentials / exponentials.sum(axis=-1, keepdims=True) @ v
    if not merge_heads:
        return o
    return np.transpose(o, (0, 2, 1, 3) if batch_first else (2, 0, 1, 3)).reshape(sequence * batch, heads * depth)


HEAD_SPLITS = st.tuples(
    st.sampled_from(("f32", "f16")), st.integers(2, 24), st.integers(1, 3), st.integers(1, 3), st.sampled_from((8, 16, 12)), st.booleans(), st.booleans(),
)


@settings(max_examples=6, **SETTINGS)
@given(shape=HEAD_SPLITS, seed=st.integers(0, 2**32 - 1))
def test_head_split_read_and_written_in_place(shape: tuple, seed: int):
    """One chain region holding the head split (and O's transpose): one kernel reading the
    projection in place, within the bound and against numpy, interpreted and compiled for the CPU."""
    element, sequence, batch, heads, depth, batch_first, merge_heads = shape
    text = head_split_attention_program(*shape)
    inputs = random_inputs(text, seed)
    reference = [_head_split_reference(inputs[0], sequence, batch, heads, depth, batch_first, merge_heads)]
    fused = lower(text, GRAPH)
    assert_within_bounds(text, inputs, _run(fused, inputs))
    if not _chains(fused):
        event("fell back: fusion does not pay")
        return
    fusions = [op for op in fused.walk() if isinstance(op, graph.FusionOp)]
    in_place = depth & (depth - 1) == 0  # a padded head dim would load the next head's columns
    event("read in place" if in_place else "gathered")
    assert (len(fusions) == 1) == in_place
    tiled = lower(text, f"{GRAPH},graph-plan-memory,convert-graph-to-tile")
    names = [op.sym_name.data for op in tiled.walk() if isinstance(op, tile.KernelOp)]
    assert not any(word in name for name in names for word in ("slice", "transpose")) == in_place, names
    assert_compiled_matches(text, inputs, _run(tiled, inputs), references=reference)
    assert_compiled_matches(text, inputs, mlc.compile(text, device="cpu")(*inputs), references=reference)


@pytest.mark.parametrize(
    "shape", [("f16", 20, 3, 2, 16, False, True), ("bf16", 33, 2, 2, 64, True, True)], ids=["sequence-first-f16", "batch-first-bf16"],
)
def test_head_split_on_tensor_cores(shape: tuple):
    """The tensor-core chain kernel reading q, k and v from the projection (ldmatrix at the heads'
    columns of the wide rows, K without .trans) and writing O's transpose, interpreted with its
    barriers and async copies, within the bound and against numpy."""
    text = head_split_attention_program(*shape)
    inputs = random_inputs(text, 3)
    module = lower(text, TENSOR_CORE_PREFIX)
    assert str(module).count("mlc_gpu.func @") == 1 and "mma" in str(module)
    reference = [_head_split_reference(inputs[0], *shape[1:])]
    assert_compiled_matches(text, inputs, _run(module, inputs), references=reference)


def test_exported_transformer_block_has_no_layout_kernels(batch: int = 3):
    """PyTorch's TransformerEncoderLayer (batch first, exported, SDPA kept whole): the in-projection
    reads x's rows in place (graph-simplify's RowsPermutedAfterMatmul), the chain reads q, k and v
    from its result and writes O as the out-projection reads it (chain_operand_views.py), and the
    residual's layer norm reads the out-projection back in place: seven kernels (four products, the
    chain, two layer norms), for the GPU and the CPU, the CPU's result within the bound derived
    from the imported program (at batch 1 the input's permutation is a reshape already)."""
    torch = pytest.importorskip("torch")
    from mlc.frontend.torch import import_exported

    torch.manual_seed(0)
    model = torch.nn.TransformerEncoderLayer(32, 2, 64, dropout=0.0, batch_first=True).eval()
    x = torch.randn(batch, 16, 32)
    programs = {dtype: import_exported(torch.export.export(model.to(dtype), (x.to(dtype),))) for dtype in (torch.float16, torch.float32)}
    for pipeline, dtype in ((GPU_PIPELINE, torch.float16), (CPU_PIPELINE, torch.float32)):  # f32 chains stay on the CPU
        passes = pipeline.split(",")
        tiled = lower(str(programs[dtype]), ",".join(passes[: [name.split("{")[0] for name in passes].index("convert-graph-to-tile") + 1]))
        names = [op.sym_name.data for op in tiled.walk() if isinstance(op, tile.KernelOp)]
        assert len(names) == 7 and sum("chain" in name for name in names) == 1, names
    inputs = [x.numpy()]
    assert_within_bounds(programs[torch.float32], inputs, mlc.compile(programs[torch.float32], device="cpu")(*inputs))
