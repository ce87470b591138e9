"""FX import, op by op: each ATen op traced from a small PyTorch function, imported, and its
eager PyTorch result checked against the graph interpreter's within the derived error bound (the
importer's mapping is what is tested: a wrong axis, operand order or constant shows as a result
out of bound). Plus the importer's contract: types checked against PyTorch's, parameters as
constants or arguments, clear errors, and the missing-torch error."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from mlc.frontend.torch import MissingTorchError, TorchImportError, import_graph  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from torch_cases import aten_graph, assert_within_bounds  # noqa: E402


def _randn(*shape: int, seed: int = 0, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _positive(*shape: int, seed: int = 0) -> torch.Tensor:
    return _randn(*shape, seed=seed).abs() + 0.5


X = _randn(3, 4)
Y = _randn(3, 4, seed=1)
ROW = _randn(4, seed=2)
IMAGE = _randn(2, 3, 6, 6, seed=3)

CASES = {
    "add_alpha": (lambda x, y: torch.add(x, y, alpha=2.0), [X, Y]),
    "sub_scalar": (lambda x: x - 1.5, [X]),
    "rsub": (lambda x: 2.0 - x, [X]),
    "mul_broadcast": (lambda x, r: x * r, [X, ROW]),
    "div": (lambda x, y: x / y, [X, _positive(3, 4)]),
    "pow_scalar": (lambda x: x**2, [X]),
    "maximum_minimum": (lambda x, y: torch.maximum(x, y) - torch.minimum(x, y), [X, Y]),
    "unary": (lambda x: torch.exp(x) + torch.tanh(x) + torch.sigmoid(x) + torch.abs(x) + torch.neg(x), [X]),
    "log_sqrt_rsqrt": (lambda x: torch.log(x) + torch.sqrt(x) + torch.rsqrt(x) + torch.reciprocal(x), [_positive(3, 4)]),
    "relu_erf": (lambda x: torch.relu(x) + torch.erf(x), [X]),
    "gelu": (lambda x: F.gelu(x) + F.gelu(x, approximate="tanh"), [X]),
    "silu_leaky_hardtanh": (lambda x: F.silu(x) + F.leaky_relu(x, 0.1) + F.hardtanh(x, -0.5, 0.5), [X]),
    "clamp": (lambda x: torch.clamp(x, -0.3, 0.4), [X]),
    "compare_where": (lambda x, y: torch.where(x > y, x, y * 2), [X, Y]),
    "cast": (lambda x: (x * 4).to(torch.int32).to(torch.float32), [X]),
    "mm": (lambda a, b: a @ b, [X, _randn(4, 5, seed=4)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [_randn(2, 3, 4), _randn(2, 4, 5, seed=5)]),
    "matmul_vector": (lambda a, v: a @ v, [X, ROW]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [X, _randn(5, 4, seed=6), _randn(5, seed=7)]),
    "addmm": (lambda b, x, w: torch.addmm(b, x, w, beta=0.5, alpha=2.0), [_randn(5), X, _randn(4, 5, seed=8)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [IMAGE, _randn(4, 3, 3, 3, seed=9), _randn(4)]),
    "conv2d_groups_dilation": (lambda x, w: F.conv2d(x, w, dilation=2, groups=3), [IMAGE, _randn(3, 1, 2, 2, seed=10)]),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), [_randn(2, 3, 7), _randn(4, 3, 3, seed=11)]),
    "max_pool": (lambda x: F.max_pool2d(x, 2), [IMAGE]),
    "avg_pool": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), [IMAGE]),
    "adaptive_avg_pool": (lambda x: F.adaptive_avg_pool2d(x, 1) + F.adaptive_avg_pool2d(x, 3).mean(), [IMAGE]),
    "softmax": (lambda x: F.softmax(x, dim=0) + F.log_softmax(x, dim=-1), [X]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (4,), w, b, 1e-5), [X, _randn(4, seed=12), _randn(4, seed=13)]),
    "batch_norm": (
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False, eps=1e-5),
        [IMAGE, _randn(3), _positive(3), _randn(3, seed=14), _randn(3, seed=15)],
    ),
    "reductions": (lambda x: x.sum(0) + x.mean(0) + x.amax(0) + x.amin(0) + x.max(dim=0).values, [X]),
    "var": (lambda x: torch.var(x, dim=1, keepdim=True) + x.sum(), [X]),
    "views": (lambda x: x.view(2, 6).reshape(4, 3).unsqueeze(0).squeeze(0).flatten(), [X]),
    "permute_transpose": (lambda x: x.permute(1, 0) + x.t() + x.transpose(0, 1), [X]),
    "expand": (lambda r: r.expand(3, 4) * 1.0, [ROW]),
    "cat_slice_select": (lambda x, y: torch.cat([x[1:, ::2], y[:2, 1:3]], dim=0)[:, 0] + x.select(1, 2)[:2].sum(), [X, Y]),
    "split_chunk": (lambda x: x.chunk(2, dim=1)[0] - x.split([1, 3], dim=1)[1][:, :2], [X]),
    "embedding": (lambda w, i: F.embedding(i, w), [_randn(10, 4), torch.tensor([[1, 3], [9, 0]])]),
    "attention": (
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        [_randn(1, 2, 5, 4), _randn(1, 2, 5, 4, seed=1), _randn(1, 2, 5, 4, seed=2)],
    ),
    "constants": (lambda x: x + torch.arange(4, dtype=torch.float32) + torch.ones(3, 4), [X]),
    "f16": (lambda x, w: torch.relu(x @ w) + 1, [X.half(), _randn(4, 5, seed=3).half()]),
    "conv2d_f16_bias": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [IMAGE.half(), _randn(4, 3, 3, 3, seed=9).half(), _randn(4).half()]),
    "matmul_transposed_batch": (lambda a, w: a.transpose(0, 1) @ w, [_randn(2, 3, 4), _randn(4, 5, seed=4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_eager_pytorch_within_the_error_bound(name: str):
    function, inputs = CASES[name]
    gm = aten_graph(function, inputs)
    module = import_graph(gm, inputs)
    module.verify()
    with torch.no_grad():
        expected = function(*inputs)
    assert_within_bounds(module, inputs, [expected])


def test_f16_convolution_adds_its_bias_after_the_product():
    """As PyTorch's CUDA convolution does (cuDNN's product, then `add_`): the f16 product stays
    on mlc's f16 matmul path (tensor cores) instead of widening to f32 for one rounding."""
    function, inputs = CASES["conv2d_f16_bias"]
    text = str(import_graph(aten_graph(function, inputs), inputs))
    conv = next(line for line in text.splitlines() if "graph.conv2d" in line)
    assert "tensor<4xf16>" not in conv and "graph.add" in text.split("graph.conv2d", 1)[1]
    function, inputs = CASES["conv2d"]  # f32: the bias stays in the convolution
    assert "tensor<4xf32>) ->" in next(line for line in str(import_graph(aten_graph(function, inputs), inputs)).splitlines() if "graph.conv2d" in line)


def test_a_batch_times_one_broadcast_matrix_is_one_product():
    """Core ATen's matmul of a non-contiguous 3-D lhs and a matrix is `bmm` of the lhs and the
    matrix expanded over the batch: imported as one 2-D product, the matrix never copied."""
    function, inputs = CASES["matmul_transposed_batch"]
    gm = aten_graph(function, inputs)
    assert any(node.target == torch.ops.aten.bmm.default for node in gm.graph.nodes)
    matmuls = [line for line in str(import_graph(gm, inputs)).splitlines() if "graph.matmul" in line]
    assert len(matmuls) == 1 and "(tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>" in matmuls[0]


@pytest.mark.parametrize("op", ["_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"])
def test_pytorchs_fused_attention_ops_import_as_attention(op: str):
    """What the dispatcher makes of SDPA on CUDA (traced here with fake tensors, as the backend
    sees it), with an additive mask and `is_causal`: the output, against the math on the CPU."""
    q, k, v = (_randn(1, 2, 5, 4, seed=seed) for seed in range(3))
    bias = _randn(1, 2, 5, 5, seed=3)
    fused = getattr(torch.ops.aten, op).default
    gm = make_fx(lambda q, k, v, b: fused(q, k, v, b, False, 0.0, True)[0], tracing_mode="fake")(q, k, v, bias)
    module = import_graph(gm, [q, k, v, bias])
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    scores = (q @ k.transpose(-1, -2) / 2.0 + bias).masked_fill(~causal, float("-inf"))
    assert_within_bounds(module, [q, k, v, bias], [torch.softmax(scores, -1) @ v])


def test_parameters_are_constants_or_arguments():
    model = torch.nn.Linear(4, 3)
    gm = make_fx(model)(X)  # the module's weight and bias are get_attr nodes
    with_constants = import_graph(gm, [X])
    with_arguments = import_graph(gm, [X], parameters="arguments")
    shapes = [tuple(a.type.get_shape()) for a in next(iter(with_arguments.body.block.ops)).body.block.args]
    assert len(next(iter(with_constants.body.block.ops)).body.block.args) == 1
    assert sorted(shapes[1:]) == [(3,), (3, 4)] and shapes[0] == (3, 4)
    assert "graph.constant" in str(with_constants) and "graph.constant" not in str(with_arguments)
    attributes = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    parameters = [getattr(gm, name) for name in attributes]
    with torch.no_grad():
        assert_within_bounds(with_constants, [X], [model(X)])
        assert_within_bounds(with_arguments, [X, *parameters], [model(X)])


def test_an_op_without_mapping_is_an_error_naming_the_node():
    gm = aten_graph(lambda x: torch.cumsum(x, 0), [X])
    with pytest.raises(TorchImportError, match=r"node 'cumsum' \(aten\.cumsum\.default\): .* no graph-dialect mapping"):
        import_graph(gm, [X])


def test_unsupported_dtype_and_bad_arguments_are_errors():
    gm = aten_graph(lambda x: x + 1, [X.double()])
    with pytest.raises(TorchImportError, match="dtype float64 is not supported"):
        import_graph(gm, [X.double()])
    with pytest.raises(TorchImportError, match="expected a torch.fx.GraphModule"):
        import_graph(lambda x: x, [X])
    with pytest.raises(TorchImportError, match="parameters must be one of"):
        import_graph(gm, [X.double()], parameters="weights")


def test_without_torch_the_frontend_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    from mlc.frontend import torch as frontend

    with pytest.raises(MissingTorchError, match=r"pip install 'mlc\[torch\]'"):
        frontend.import_graph(None, [])
    with pytest.raises(ImportError):
        frontend.mlc_backend(None, [])
