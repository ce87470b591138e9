"""Helpers of the PyTorch frontend tests: ATen graphs of functions, and comparisons under derived
error bounds (`mlc/dialects/graph/error_bounds.py`): the graph interpreter's results on the same
inputs, with the bound within which any correct implementation (PyTorch's eager kernels, mlc's
compiled code) must agree with them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from mlc.dialects.graph.error_bounds import check_results, result_bounds
from mlc.frontend.torch.decompositions import decompositions
from mlc.frontend.torch.emitter import tensor_to_numpy


def aten_graph(function: Callable[..., torch.Tensor], inputs: Sequence[torch.Tensor]) -> torch.fx.GraphModule:
    """`function` traced to core ATen, as the backend sees graphs."""
    return make_fx(function, decomposition_table=decompositions())(*inputs)


def numpy_inputs(inputs: Sequence[torch.Tensor]) -> list[np.ndarray]:
    return [tensor_to_numpy(x) for x in inputs]


def assert_within_bounds(module, inputs: Sequence[torch.Tensor], actual: Sequence[torch.Tensor]) -> int:
    """`actual` (torch results) agree with the interpreter on `module` within the derived bounds;
    returns how many elements were compared (so that a test sees it compared something)."""
    function = next(iter(module.body.block.ops))
    expected, bounds = result_bounds(function, numpy_inputs(inputs))
    got = [tensor_to_numpy(t) for t in actual]
    comparison = check_results(got, expected, bounds)
    assert comparison.failure is None, comparison.failure
    assert comparison.compared > 0
    return comparison.compared
