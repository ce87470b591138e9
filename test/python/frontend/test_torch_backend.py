"""The torch.compile backend "mlc" and the torch.export path, on the CPU: small modules compiled
by mlc (PyTorch running what mlc does not compile yet) match eager PyTorch within the error bound
derived from the whole model's graph; unsupported ops fall back with one log line each; dynamic
shapes compile per concrete shape; an exported program round-trips through mlc-opt. The same
modules run on CUDA tensors in the gpu-marked test."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")

import mlc  # noqa: E402
from mlc.frontend.torch import compile_exported, explain, import_exported  # noqa: E402
from torch_cases import assert_within_bounds  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test starts from dynamo's empty cache: what one test compiled (and the recompilation
    limit of the frame all `torch.nn` modules share) does not change how the next one is traced."""
    torch._dynamo.reset()


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class SmallCnn(torch.nn.Module):
    """conv-bn-relu, max pooling, global average pooling, a linear classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.norm(self.conv(x))), 2)
        return torch.log_softmax(self.head(x.mean(dim=(2, 3))), dim=-1)


def _seeded(make_model):
    """The model `make_model` builds with weights from a fixed seed (not the test order's state)."""
    torch.manual_seed(0)
    return make_model()


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()


def _reference_module(model: torch.nn.Module, inputs):
    """The model's whole graph, imported: the interpreter's results and bounds come from it."""
    return import_exported(torch.export.export(model, tuple(inputs)))


def _compiled_partitions(explanation) -> int:
    return len(explanation.in_mlc)


MODELS = {
    "mlp": (_mlp, lambda: [_randn(2, 8)]),
    "cnn": (lambda: _seeded(lambda: SmallCnn().eval()), lambda: [_randn(2, 3, 6, 6)]),
    "transformer": (
        lambda: _seeded(lambda: torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()),
        lambda: [_randn(1, 4, 8)],
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_modules_match_eager_through_the_backend(name: str, device: str = "cpu"):
    make_model, make_inputs = MODELS[name]
    model, inputs = make_model().to(device), [x.to(device) for x in make_inputs()]
    with torch.no_grad():
        explanation = explain(model, inputs)
        eager = model(*inputs)
    assert _compiled_partitions(explanation) > 0, str(explanation)
    compiled = explanation.outputs
    reference = _reference_module(model.cpu(), [x.cpu() for x in inputs])
    assert_within_bounds(reference, [x.cpu() for x in inputs], [eager.cpu()])
    assert_within_bounds(reference, [x.cpu() for x in inputs], [compiled.cpu()])


class MaskedAttention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_decomposed_attention_is_one_chain_kernel(monkeypatch):
    """SDPA with a boolean mask as torch.compile hands it over on the CPU (core ATen: bmm on
    flattened batches, the guard zeroing rows that see no key): one chain kernel, matching eager
    PyTorch within the bound, a query row with every key masked included (0, as PyTorch gives)."""
    q, k, v = _randn(2, 4, 32, 16), _randn(2, 4, 48, 16, seed=1), _randn(2, 4, 48, 16, seed=2)
    mask = _randn(32, 48, seed=3) > -0.8
    mask[3] = False
    compiled_modules = []
    compile_module = mlc.compile

    def recording_compile(module, **options):
        compiled = compile_module(module, **options)
        compiled_modules.append(str(compiled.lowered_module))
        return compiled

    monkeypatch.setattr(mlc, "compile", recording_compile)
    inputs = [q, k, v, mask]
    with torch.no_grad():
        result = torch.compile(MaskedAttention(), backend="mlc")(*inputs)
        eager = MaskedAttention()(*inputs)
    assert sum(text.count("chain0_attention") > 0 for text in compiled_modules) == 1
    assert torch.all(result[:, :, 3] == 0) and torch.all(eager[:, :, 3] == 0)
    reference = _reference_module(MaskedAttention(), inputs)
    assert_within_bounds(reference, inputs, [eager])
    assert assert_within_bounds(reference, inputs, [result]) == result.numel()  # masked rows too


class CausalAttention(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


class GroupedQueryAttention(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)


@pytest.mark.parametrize(("model", "key_heads", "whole"), [(CausalAttention, 4, True), (GroupedQueryAttention, 2, False)])
def test_exported_attention_is_imported_whole(model, key_heads: int, whole: bool):
    """torch.export programs keep scaled_dot_product_attention whole (not its math fallback, which
    scales q and Kt by sqrt(scale) each): its scores product marked `mlc.fused_attention`, so its
    chain computes as PyTorch's fused kernels do; grouped-query heads, which the importer does not
    map, take the decomposition. Both compile and match eager within the bound."""
    q, k, v = _randn(1, 4, 24, 16), _randn(1, key_heads, 24, 16, seed=1), _randn(1, key_heads, 24, 16, seed=2)
    exported = torch.export.export(model(), (q, k, v))
    module = import_exported(exported)
    assert ("mlc.fused_attention" in str(module)) == whole
    with torch.no_grad():
        eager = model()(q, k, v)
    assert_within_bounds(module, [q, k, v], [eager])
    assert_within_bounds(module, [q, k, v], [compile_exported(exported)(q, k, v)])


def test_explain_traces_static_shapes_after_another_module(monkeypatch):
    """Regression (CUDA, issue 18's transformer test): a model compiled after another in the same
    process ran wholly in PyTorch. Dynamo traces every `torch.nn` module through one shared frame;
    the second module's recompilation made its sizes dynamic, and PyTorch's fused
    TransformerEncoderLayer op broke the graph before mlc saw any op. explain() asks for static
    shapes, which this shows on the CPU with two small modules of different ranks."""
    from mlc.frontend.torch import backend

    symbolic: list[bool] = []
    original = backend._has_symbolic_sizes
    monkeypatch.setattr(backend, "_has_symbolic_sizes", lambda inputs: symbolic.append(original(inputs)) or symbolic[-1])
    for module, x in ((torch.nn.ReLU(), _randn(2, 8)), (torch.nn.Sigmoid(), _randn(1, 4, 8))):
        with torch.no_grad():
            explanation = explain(module, [x])
        assert explanation.graphs == 1 and len(explanation.in_mlc) == 1, str(explanation)
    assert symbolic == [False, False]


def test_the_backend_is_registered_as_mlc():
    assert "mlc" in torch._dynamo.list_backends(exclude_tags=())
    model, x = _mlp(), _randn(3, 8)
    with torch.no_grad():
        result = torch.compile(model, backend="mlc")(x)
        assert_within_bounds(_reference_module(model, [x]), [x], [result])


def test_an_unsupported_op_runs_in_pytorch_with_one_log_line(caplog):
    def model(x: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.cumsum(x * 2, dim=0)) + 1  # cumsum has no graph op

    x = _randn(4, 3)
    with caplog.at_level(logging.WARNING, logger="mlc.frontend.torch"), torch.no_grad():
        explanation = explain(model, [x])
    torch.testing.assert_close(explanation.outputs, model(x), rtol=0, atol=1e-6)
    lines = [r.getMessage() for r in caplog.records if "cumsum" in r.getMessage()]
    assert len(lines) == 1 and "runs in PyTorch" in lines[0] and "no graph-dialect mapping" in lines[0]
    where = {record.op: record.ran_in for record in explanation.records}
    assert where["aten.cumsum.default"] == "pytorch" and where["aten.relu.default"] == "mlc"
    assert "aten.cumsum.default" in str(explanation)


def test_dynamic_shapes_compile_once_per_concrete_shape():
    model = _mlp()
    compiled = torch.compile(model, backend=lambda gm, inputs: _counting_backend(gm, inputs), dynamic=True)
    with torch.no_grad():
        for rows in (2, 3, 2):
            x = _randn(rows, 8, seed=rows)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert _counting_backend.compilations == 2  # rows 2, then 3; the second call of 2 reuses the first


def _counting_backend(gm, inputs):
    from mlc.frontend.torch.backend import PerShapeGraph, mlc_backend

    compiled = mlc_backend(gm, inputs)
    assert isinstance(compiled, PerShapeGraph)  # dynamo marked the batch dimension dynamic

    def call(*args):
        before = set(compiled.compiled)
        result = compiled(*args)
        _counting_backend.compilations += len(set(compiled.compiled) - before)
        return result

    return call


_counting_backend.compilations = 0


def test_exported_program_round_trips_through_mlc_opt(tmp_path):
    from mlc.tools import mlc_import_torch, mlc_opt

    source = tmp_path / "tiny_model.py"
    source.write_text(
        "import torch\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())\n"
    )
    written = tmp_path / "model.mlir"
    assert mlc_import_torch.main([f"{source}:model", "--example-shapes", "2x8", "-o", str(written)]) == 0
    optimised = tmp_path / "optimised.mlir"
    assert mlc_opt.main([str(written), "-p", "graph-simplify,graph-fold-constants,cse", "-o", str(optimised)]) == 0
    x = _randn(2, 8)
    namespace: dict = {}
    exec(source.read_text(), namespace)  # noqa: S102 - the test's own model file
    with torch.no_grad():
        expected = namespace["model"](x)
    result = mlc.interpret(optimised.read_text(), x.numpy())
    torch.testing.assert_close(torch.from_numpy(result), expected, rtol=1e-5, atol=1e-6)
    function = compile_exported(torch.export.export(namespace["model"], (x,)))
    assert_within_bounds(import_exported(torch.export.export(namespace["model"], (x,))), [x], [function(x)])


def test_the_import_tool_reports_errors_without_traceback(tmp_path, capsys):
    from mlc.tools import mlc_import_torch

    assert mlc_import_torch.main(["no_such_module_here:model", "--example-shapes", "2"]) == 1
    assert "cannot import 'no_such_module_here'" in capsys.readouterr().err
    source = tmp_path / "cumulative.py"
    source.write_text("import torch\ndef f(x):\n    return torch.cumsum(x, 0)\n")
    assert mlc_import_torch.main([f"{source}:f", "--example-shapes", "3"]) == 1
    error = capsys.readouterr().err
    assert "aten.cumsum.default has no graph-dialect mapping" in error and "Traceback" not in error


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_modules_match_eager_on_cuda(name: str):
    if not torch.cuda.is_available() or "cuda" not in mlc.available_devices():
        pytest.skip("needs a CUDA device")
    test_modules_match_eager_through_the_backend(name, device="cuda")


@pytest.mark.gpu
def test_the_backend_runs_on_pytorchs_current_stream():
    """Inside `torch.cuda.stream(side)`, the compiled MLP reads an input written late on that stream
    (after a long spin), with no synchronization in between."""
    if not torch.cuda.is_available() or "cuda" not in mlc.available_devices():
        pytest.skip("needs a CUDA device")
    from mlc.frontend.torch import mlc_backend

    model, values = _mlp().cuda(), _randn(3, 8).cuda()
    compiled = torch.compile(model, backend=mlc_backend)  # the callable: the GPU machine may not install mlc
    side = torch.cuda.Stream()
    with torch.no_grad():
        compiled(values)  # compiled here, outside the measured ordering
        x = torch.zeros(3, 8, device="cuda")
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(50_000_000)
            x.copy_(values)
            result = compiled(x)
        side.synchronize()
    assert_within_bounds(_reference_module(model.cpu(), [values.cpu()]), [values.cpu()], [result.cpu()])


@pytest.mark.gpu
def test_auto_attention_keeps_a_short_sequence_layer_in_mlc_on_cuda():
    """attention='auto' on CUDA: a layer of 64 tokens (one head of 64, f32: PyTorch's fused
    memory-efficient kernel) whose attention costs less in mlc's chain kernel than a split around
    it: that node runs in mlc, explain says why, and nothing but the hoisted parameter work is
    left to PyTorch; the result is within the bound derived from the layer's graph."""
    if not torch.cuda.is_available() or "cuda" not in mlc.available_devices():
        pytest.skip("needs a CUDA device")
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 1, 128, dropout=0.0, batch_first=True).eval()
    x = _randn(1, 64, 64)
    with torch.no_grad():
        explanation = explain(layer.cuda(), [x.cuda()])
    fused = [r for r in explanation.records if "_scaled_dot_product" in r.op]
    assert fused and all(r.ran_in == "mlc" and "mlc's chain kernel" in (r.note or "") for r in fused), str(explanation)
    assert all(r.reason.startswith("computed from parameters") for r in explanation.in_pytorch), str(explanation)
    assert_within_bounds(_reference_module(layer.cpu(), [x]), [x], [explanation.outputs.cpu()])
