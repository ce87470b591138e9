"""Whole models from ONNX (examples/onnx_models.py) compiled end to end agree with the interpreter
and with onnxruntime.

An MLP, a ResNet-style CNN (conv-bn-relu, a residual block, max and global pooling, a strided and
a depthwise convolution) and a transformer encoder block (embedding Gather, causal multi-head
attention, layer norms, a GELU MLP), each imported with `import_model`, compiled for the CPU
(CI) or the GPU (`gpu`), and compared element by element with mlc's interpreter within the bound
derived from the imported program (`error_bounds.result_bounds`); onnxruntime's answer must lie
within the same bound of the interpreter's (any implementation of the program that rounds as the
bound allows does).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")

import mlc  # noqa: E402
from mlc.compiler import select_entry  # noqa: E402
from mlc.dialects.graph.error_bounds import check_results, result_bounds  # noqa: E402
from mlc.frontend.onnx import import_model  # noqa: E402

_SPEC = importlib.util.spec_from_file_location("onnx_models", Path(__file__).parents[3] / "examples" / "onnx_models.py")
assert _SPEC is not None and _SPEC.loader is not None
onnx_models = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(onnx_models)

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", onnx_models.MODELS)
def test_model_matches_interpreter_and_onnxruntime(name: str, device: str):
    model, feeds = onnx_models.build(name, batch=2)
    inputs = list(feeds.values())
    expected, bounds = result_bounds(select_entry(import_model(model), None), inputs)
    result = mlc.compile(import_model(model), device=device)(*inputs)
    comparison = check_results([result], expected, bounds)
    assert comparison.failure is None, comparison.failure
    assert comparison.compared == np.size(result)
    onnxruntime = pytest.importorskip("onnxruntime")
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    reference = session.run(None, feeds)
    comparison = check_results(reference, expected, bounds)
    assert comparison.failure is None, f"onnxruntime: {comparison.failure}"
