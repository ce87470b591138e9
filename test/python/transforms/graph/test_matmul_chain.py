"""Plain two-matmul chains as one kernel (issue 16): `matmul(f(matmul(A, B)), C)` with graph-fuse's
opt-in `matmul-chains`.

Hypothesis draws chains (`programs.matmul_chain_programs`: f32, f16 or bf16, 0 or 1 batch
dimension, row and hidden sizes that are not multiples of the blocks, inner and output dims 8 to
64, no activation, relu, gelu or tanh, with or without a bias) and checks:

* graph-fuse{matmul-chains=true} makes one `chain` region with `mlc.chain = "matmul"` (or says
  why the model falls back), the interpreter's result unchanged;
* convert-graph-to-tile makes one `tile.kernel` for it (the hidden dimension walked in blocks, the
  accumulator carried, f's result 0 past the hidden size), within the error bound that
  `error_bounds.result_bounds` derives from the source;
* f16/bf16 chains on the GPU pipeline up to gpu-insert-barriers (the tensor-core chain kernel,
  `chain_mma.py` without the softmax, where the dims pad to 16; else what the model chooses),
  interpreted with its barriers within that bound;
* compiled for the CPU and (`gpu`-marked) the GPU, within the bound and against numpy;
* without the option, no plain chain is formed (the default pipelines are unchanged).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from programs import assert_compiled_matches, assert_within_bounds, lower, matmul_chain_program, matmul_chain_programs, random_inputs

import mlc
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.interpreter import run
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_FUSE, GPU_PIPELINE, gpu_fuse

GRAPH = "graph-simplify,graph-fold-constants,cse,graph-decompose,cse,graph-fuse{matmul-chains=true}"
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
GPU_CHAINS = GPU_PIPELINE.replace(GPU_FUSE, gpu_fuse("matmul-chains=true"))
_PASSES = GPU_CHAINS.split(",")
TENSOR_CORE_PREFIX = ",".join(_PASSES[: [name.split("{")[0] for name in _PASSES].index("gpu-insert-barriers") + 1])


def _run(module, inputs: list[np.ndarray]):
    return run(module, "main", [x.copy() for x in inputs])


def _chains(module) -> list[graph.FusionOp]:
    return [op for op in module.walk() if isinstance(op, graph.FusionOp) and op.kind.data == "chain"]


def _reference(text: str, inputs: list[np.ndarray]) -> np.ndarray:
    """The chain in float64 numpy (activation and bias read back from the program text)."""
    a, b, c, *bias = (np.asarray(x, np.float64) for x in inputs)
    hidden = a @ b + (bias[0] if bias else 0.0)
    if "graph.relu" in text:
        hidden = np.maximum(hidden, 0.0)
    elif "graph.gelu" in text:
        from math import erf

        hidden = hidden * 0.5 * (1.0 + np.vectorize(erf)(hidden / np.sqrt(2.0)))
    elif "graph.tanh" in text:
        hidden = np.tanh(hidden)
    return hidden @ c


@settings(max_examples=4, **SETTINGS)
@given(text=matmul_chain_programs(), seed=st.integers(0, 2**32 - 1))
def test_chain_region_and_kernels(text: str, seed: int):
    inputs = random_inputs(text, seed)
    fused = lower(text, GRAPH)
    assert_within_bounds(text, inputs, _run(fused, inputs))
    chains = _chains(fused)
    if not chains:  # the model may find that fusion does not pay: it says so
        (reason,) = [op.attributes["mlc.chain_fallback"].data for op in fused.walk() if "mlc.chain_fallback" in op.attributes]
        assert "does not pay" in reason
        event("fell back: fusion does not pay")
        return
    (chain,) = chains
    assert chain.attributes["mlc.chain"].data == "matmul"
    tiled = lower(text, f"{GRAPH},graph-plan-memory,convert-graph-to-tile")
    (kernel,) = [op for op in tiled.walk() if isinstance(op, tile.KernelOp)]
    assert kernel.attributes["mlc.chain"].data == "matmul"
    assert_compiled_matches(text, inputs, _run(tiled, inputs), references=[_reference(text, inputs)])
    if "xf32>" not in text.splitlines()[0]:  # the GPU's model: tensor cores where the dims pad to 16
        module = lower(text, TENSOR_CORE_PREFIX)
        lowered = str(module)
        tensor_cores = "mlc_gpu.func @main_chain0_matmul" in lowered and "loop.mma_sync" in lowered
        event("tensor cores" if tensor_cores else "GPU: CUDA cores or separate kernels")
        assert_compiled_matches(text, inputs, _run(module, inputs), references=[_reference(text, inputs)])


@pytest.mark.parametrize("element", ["f32", "bf16"])
def test_cpu_end_to_end(element: str):
    text = matmul_chain_program(element, (2,), 19, 16, 70, 8, "relu", True)
    inputs = random_inputs(text, 5)
    compiled = mlc.compile(text, device="cpu", pipeline=CPU_PIPELINE.replace("graph-fuse", "graph-fuse{matmul-chains=true}", 1))
    assert "_chain0_matmul" in str(compiled.lowered_module)
    assert_compiled_matches(text, inputs, compiled(*inputs), references=[_reference(text, inputs)])


def test_not_formed_without_the_option():
    text = matmul_chain_program("f16", (), 64, 32, 256, 32, "relu", True)
    assert not _chains(lower(text, GRAPH.replace("{matmul-chains=true}", "")))
    assert not _chains(lower(text, GRAPH.replace("{matmul-chains=true}", "{compute-model=gpu}")))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("element", "batch", "rows", "inner", "hidden", "columns"),
    [("f16", (), 1000, 64, 700, 128), ("bf16", (3,), 333, 128, 1000, 64)],
)
def test_tensor_core_chain_on_the_gpu(element: str, batch: tuple[int, ...], rows: int, inner: int, hidden: int, columns: int):
    text = matmul_chain_program(element, batch, rows, inner, hidden, columns, "relu", True)
    inputs = random_inputs(text, rows)
    compiled = mlc.compile(text, device="cuda", pipeline=GPU_CHAINS)
    lowered = str(compiled.lowered_module)
    assert "_chain0_matmul" in lowered and "llvm.nvvm.mma.m16n8k16" in lowered
    assert_compiled_matches(text, inputs, compiled(*inputs), references=[_reference(text, inputs)])
