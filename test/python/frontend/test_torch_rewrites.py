"""The PyTorch backend's graph rewrites, on small ATen graphs traced with fake tensors (no mlc
compile): work on parameters hoisted and redone only when a parameter changes, elementwise ops
sunk below views, views whose users run in PyTorch moved there, batched matmuls unflattened."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from mlc.frontend.torch.graph_rewrites import (  # noqa: E402
    PYTORCH_VIEW_REASON,
    layout_ops_for_pytorch,
    sink_views_below_elementwise,
    unflatten_batched_matmuls,
)
from mlc.frontend.torch.parameters import ParameterWork, hoist_parameter_work  # noqa: E402

aten = torch.ops.aten


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _targets(gm: torch.fx.GraphModule) -> list[object]:
    return [node.target for node in gm.graph.nodes if node.op == "call_function"]


def linear_relu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(torch.addmm(b, x, w.t()))


def test_parameter_work_is_hoisted_and_redone_only_when_a_parameter_changes():
    x, w, b = _randn(3, 4), _randn(5, 4, seed=1), _randn(5, seed=2)
    gm = make_fx(linear_relu, tracing_mode="fake")(x, w, b)
    hoisted = hoist_parameter_work(gm, {1, 2})
    assert hoisted is not None and [n.target for n in hoisted.derived] == [aten.t.default]
    assert aten.t.default not in _targets(gm)  # the transpose left the graph
    work = ParameterWork(hoisted.prefix, gm, [1, 2])
    for seed in (3, 4):
        x = _randn(3, 4, seed=seed)
        torch.testing.assert_close(work(x, w, b), linear_relu(x, w, b))
    assert work.computations == 1
    with torch.no_grad():
        w.mul_(2)  # an in-place write bumps the version counter
    torch.testing.assert_close(work(x, w, b), linear_relu(x, w, b))
    other = w.clone()  # another tensor with the same values and version
    torch.testing.assert_close(work(x, other, b), linear_relu(x, other, b))
    assert work.computations == 3


def test_parameter_work_hands_main_aliases_that_follow_the_parameters():
    # The parameters reach the graph as detached aliases made once (no detach per call), and an
    # in-place write or a new `.data` behind the same Parameter object is still what main reads.
    x, w, b = _randn(3, 4), torch.nn.Parameter(_randn(5, 4, seed=1)), torch.nn.Parameter(_randn(5, seed=2))
    gm = make_fx(linear_relu, tracing_mode="fake")(x, w.detach(), b.detach())
    hoisted = hoist_parameter_work(gm, {1, 2})
    assert hoisted is not None
    grads: list[bool] = []

    def main(*arguments: torch.Tensor) -> torch.Tensor:
        grads.extend(a.requires_grad for a in arguments)
        return gm(*arguments)

    work = ParameterWork(hoisted.prefix, main, [1, 2])
    with torch.no_grad():
        for change in (lambda: None, lambda: b.add_(1.0), lambda: setattr(b, "data", _randn(5, seed=3))):
            change()
            torch.testing.assert_close(work(x, w, b), linear_relu(x, w, b))
    assert not any(grads) and work.computations == 3


def test_nothing_is_hoisted_from_a_graph_without_parameter_work():
    x, w = _randn(3, 4), _randn(4, 5, seed=1)
    gm = make_fx(lambda x, w: torch.relu(x @ w), tracing_mode="fake")(x, w)
    before = _targets(gm)
    assert hoist_parameter_work(gm, {1}) is None and _targets(gm) == before
    # A result computed from parameters alone is not cached (the caller could write it).
    gm = make_fx(lambda x, w: (x + 1, w.t()), tracing_mode="fake")(x, w)
    assert hoist_parameter_work(gm, {1}) is None


def test_broadcasts_of_parameters_stay_in_the_graph():
    x, w = _randn(2, 3, 4), _randn(5, 4, seed=1)
    gm = make_fx(lambda x, w: torch.bmm(x, w.t().expand(2, 4, 5)), tracing_mode="fake")(x, w)
    hoisted = hoist_parameter_work(gm, {1})
    assert hoisted is not None and [n.target for n in hoisted.derived] == [aten.t.default]
    assert aten.expand.default in _targets(gm)


def test_an_elementwise_op_is_sunk_below_a_view():
    x, w = _randn(6, 4), _randn(4, 5, seed=1)

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.relu((x @ w).view(2, 3, 5)) * 2.0

    gm = make_fx(f, tracing_mode="fake")(x, w)
    assert sink_views_below_elementwise(gm) == 2
    users = [n for n in gm.graph.nodes if n.target == aten.mm.default][0].users
    assert [u.target for u in users] == [aten.relu.default]  # relu now reads the product
    torch.testing.assert_close(gm(x, w), f(x, w), rtol=0, atol=0)
    view = next(n for n in gm.graph.nodes if n.target == aten.view.default)
    assert tuple(view.meta["val"].shape) == (2, 3, 5)


def test_a_batched_matmul_is_unflattened():
    """core ATen's `view(bmm(view(expand(a)), view(expand(b))))` becomes `matmul` on the batch
    dimensions (exactly: the same products); a bmm whose operands' batches differ stays."""
    a, b = _randn(2, 3, 4, 5), _randn(2, 3, 5, 6, seed=1)
    gm = make_fx(lambda a, b: a @ b, tracing_mode="fake", decomposition_table=torch._decomp.core_aten_decompositions())(a, b)
    assert aten.bmm.default in _targets(gm)
    assert unflatten_batched_matmuls(gm) == 1
    assert aten.bmm.default not in _targets(gm) and aten.matmul.default in _targets(gm)
    matmul = next(n for n in gm.graph.nodes if n.target == aten.matmul.default)
    assert tuple(matmul.meta["val"].shape) == (2, 3, 4, 6)
    torch.testing.assert_close(gm(a, b), a @ b, rtol=0, atol=0)
    broadcast = make_fx(lambda a, b: a @ b, tracing_mode="fake", decomposition_table=torch._decomp.core_aten_decompositions())(a, _randn(5, 6))
    assert unflatten_batched_matmuls(broadcast) == 0


def test_views_feeding_pytorch_move_to_pytorch():
    x = _randn(4, 6)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(torch.relu(x).t().unsqueeze(0), 1)

    gm = make_fx(f, tracing_mode="fake")(x)
    reasons = {n: None for n in gm.graph.nodes if n.op == "call_function"}
    cumsum = next(n for n in reasons if n.target == aten.cumsum.default)
    reasons[cumsum] = "no mapping"
    assert layout_ops_for_pytorch(gm, reasons) == 2  # the unsqueeze, then the transpose before it
    moved = {n.target for n, reason in reasons.items() if reason == PYTORCH_VIEW_REASON}
    assert aten.relu.default not in moved and aten.t.default in moved


def test_the_backends_attention_option_is_checked():
    import mlc
    from mlc.frontend.torch.backend import mlc_backend

    gm = make_fx(torch.relu, tracing_mode="fake")(_randn(2))
    with pytest.raises(mlc.ArgumentError, match="attention='flash': expected one of 'pytorch', 'mlc'"):
        mlc_backend(gm, [_randn(2)], attention="flash")


def _fused_attention_graph(batch_heads: int, tokens: int, head_dim: int) -> torch.fx.GraphModule:
    """A graph of one cuDNN attention node (its fake values alone: traced on the CPU's meta device)."""

    def cudnn_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return aten._scaled_dot_product_cudnn_attention.default(q, k, v, None, False, 0.0, False, False)[0]

    shape = (batch_heads // 16, 16, tokens, head_dim)
    return make_fx(cudnn_attention, tracing_mode="fake")(*(torch.empty(shape, dtype=torch.float16, device="meta") for _ in range(3)))


@pytest.mark.parametrize(
    ("batch_heads", "tokens", "head_dim", "wgmma", "in_pytorch"),
    [
        (16, 512, 64, True, False),  # TransformerEncoderLayer at batch 1: host-bound, one partition
        (128, 512, 64, True, False),  # batch 8: the chain's ~12 us extra < the split's ~70 us
        (128, 512, 64, False, False),
        (64, 4096, 64, True, True),  # 64 x 4096 tokens: the chain ~370 us slower, the split ~200 us
        (64, 2048, 128, False, True),  # d 128 on mma.sync: 2.2x the fused kernel
        (64, 1024, 128, True, False),
        (64, 4096, 32, True, True),  # d 32 is not a warpgroup block: the mma.sync chain's 1.6x
    ],
)
def test_auto_attention_weighs_the_chains_extra_time_against_a_split(batch_heads, tokens, head_dim, wgmma, in_pytorch):
    """attention='auto': mlc takes a fused attention unless its chain kernel's estimated extra
    time (FLOPs 4*BH*S*S*d at the fused kernel's rate, times the slowdown - 1) exceeds the cost of
    a split (q, k, v and the output through HBM SPLIT_PASSES more times, plus the host's share)."""
    from mlc.frontend.torch import attention_choice as rule
    from mlc.frontend.torch.backend import attention_placements

    gm = _fused_attention_graph(batch_heads, tokens, head_dim)
    (node, choice), = attention_placements(gm, "cuda", "auto", wgmma=wgmma).items()
    flops = 4.0 * batch_heads * tokens * tokens * head_dim
    slowdown = (rule.WGMMA_SLOWDOWN if wgmma and head_dim >= 64 else rule.MMA_SYNC_SLOWDOWN)[max(head_dim, 64)]
    assert choice.chain_extra_s == pytest.approx(flops / rule.FUSED_ATTENTION_RATE * (slowdown - 1))
    boundary = 4 * batch_heads * tokens * head_dim * 2
    assert choice.split_s == pytest.approx(rule.SPLIT_PASSES * boundary / rule.HBM_BANDWIDTH + rule.SPLIT_HOST_S)
    assert choice.in_pytorch == in_pytorch == (choice.chain_extra_s > choice.split_s)
    assert ("PyTorch's fused attention kernel" in choice.why()) == in_pytorch
    assert attention_placements(gm, "cuda", "mlc") == {node: None} == attention_placements(gm, "cpu", "auto")
    assert attention_placements(gm, "cuda", "pytorch") == {node: None}
