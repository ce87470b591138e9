"""Rewrites of the backend's ATen graphs that make mlc's partitions cheaper, and the placement of
layout ops between mlc and PyTorch.

1. `sink_views_below_elementwise(gm)`: `u = f(view(y))` with `f` elementwise on one tensor (relu,
   gelu, a multiply by a scalar...) becomes `view(f(y))`. A linear layer on a 3-D input is
   `view(addmm(b, view(x), w))`, so its activation comes after a view; sunk, the activation meets
   the matmul and `graph-fuse` makes it the matmul's epilogue instead of a kernel of its own
   (TransformerEncoderLayer's relu, issue 18). Exact: an elementwise function commutes with any
   view. The rewritten node keeps its name; its `meta["val"]` is recomputed on the fake tensor.
2. `layout_ops_for_pytorch(gm, reasons)`: a view-like op (view, permute, expand, getitem of a
   split, ...) whose users all run in PyTorch (or are the graph's output) is moved to PyTorch: there
   it is free (a strided view), while in mlc it would be a copy kernel writing a contiguous tensor
   for PyTorch to read (the q, k, v head transposes feeding PyTorch's SDPA kernel). Walks the nodes
   backwards so that chains of views move together; `reasons` (node -> None when mlc compiles it,
   else why not) is updated in place.

3. `unflatten_batched_matmuls(gm)`: `view(bmm(view(a), view(b)), (*B, M, N))`, the batch
   dimensions B of `a` (*B, M, K) and `b` (*B, K, N) flattened into one for `bmm` and split again,
   becomes `matmul(a, b)` on B directly. It undoes core ATen's decomposition of a batched matmul
   (SDPA's two products arrive so): mlc's attention chain (`graph-fuse`) needs the score ops and
   both products on one batch shape. Exact: the same products, element by element.

Preconditions: functional ATen graphs with `meta["val"]` on every node (as AOT autograd hands the
backend's forward compiler). Limits: only elementwise ops with one tensor operand are sunk (a
binary op would need its other operand viewed too).
"""

from __future__ import annotations

import operator
from contextlib import nullcontext
from typing import Any

import torch

aten = torch.ops.aten

ELEMENTWISE_ON_ONE_TENSOR = {
    aten.relu.default,
    aten.gelu.default,
    aten.silu.default,
    aten.sigmoid.default,
    aten.tanh.default,
    aten.exp.default,
    aten.neg.default,
    aten.abs.default,
    aten.erf.default,
    aten.sqrt.default,
    aten.rsqrt.default,
    aten.hardtanh.default,
    aten.leaky_relu.default,
    aten.clamp.default,
    aten.mul.Scalar,
    aten.mul.Tensor,  # with a number as the other operand (checked)
    aten.add.Tensor,
    aten.sub.Tensor,
    aten.div.Tensor,
    aten.add.Scalar,
    aten.sub.Scalar,
    aten.div.Scalar,
    aten.pow.Tensor_Scalar,
}
"""ATen ops computing each element from the same element of their one tensor operand."""

ORDER_KEEPING_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
"""Views that keep the elements' order: an elementwise op commutes with them."""

VIEW_OPS = ORDER_KEEPING_VIEWS | {
    aten.permute.default,
    aten.transpose.int,
    aten.t.default,
    aten.expand.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.unsqueeze.default,
    aten.slice.Tensor,
    aten.select.int,
    aten.split.Tensor,
    aten.split_with_sizes.default,
    aten.alias.default,
    aten.detach.default,
}
"""ATen ops whose result PyTorch returns as a view of their input, without copying."""

PYTORCH_VIEW_REASON = "a view whose users run in PyTorch: free there, a copy in mlc"


def _traced_value(target: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    """`target(value, *args)` computed as the trace computes it: under `value`'s fake mode, if any,
    for the new node's `meta["val"]`."""
    with getattr(value, "fake_mode", None) or nullcontext():
        return target(value, *args, **kwargs)


def _recompiled(gm: torch.fx.GraphModule, rewrites: int) -> int:
    """`rewrites`, after checking and regenerating `gm`'s code if there were any."""
    if rewrites:
        gm.graph.lint()
        gm.recompile()
    return rewrites


def _only_tensor_operand(node: torch.fx.Node) -> bool:
    operands = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, torch.fx.Node)]
    return len(operands) == 1 and node.args and node.args[0] is operands[0]


def sink_views_below_elementwise(gm: torch.fx.GraphModule) -> int:
    """Rewrites `f(view(y))` to `view(f(y))` (see the module docstring); returns how many."""
    sunk = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in ELEMENTWISE_ON_ONE_TENSOR or not _only_tensor_operand(node):
            continue
        view = node.args[0]
        if view.op != "call_function" or view.target not in ORDER_KEEPING_VIEWS or len(view.users) != 1:
            continue
        source, value = view.args[0], view.meta.get("val")
        source_value = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
        if not isinstance(source_value, torch.Tensor) or not isinstance(value, torch.Tensor):
            continue
        with gm.graph.inserting_before(view):
            applied = gm.graph.call_function(node.target, (source, *node.args[1:]), dict(node.kwargs))
        applied.meta["val"] = _traced_value(node.target, source_value, *node.args[1:], **node.kwargs)
        # The view now reads the elementwise result: same shape and type as `node`'s.
        view.replace_input_with(source, applied)
        view.meta["val"] = node.meta["val"]
        node.replace_all_uses_with(view)
        gm.graph.erase_node(node)
        sunk += 1
    return _recompiled(gm, sunk)


def _is_view(node: torch.fx.Node) -> bool:
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:  # a piece of a split; never of a multi-result op's tuple
        source = node.args[0]
        return isinstance(source, torch.fx.Node) and source.target in VIEW_OPS
    return node.target in VIEW_OPS


def layout_ops_for_pytorch(gm: torch.fx.GraphModule, reasons: dict[torch.fx.Node, str | None]) -> int:
    """Moves to PyTorch the view ops whose users all run there (see the module docstring); returns
    how many moved."""
    moved = 0
    for node in reversed(list(gm.graph.nodes)):
        if not _is_view(node) or reasons.get(node) is not None or not node.users:
            continue
        if all(user.op == "output" or reasons.get(user) is not None for user in node.users):
            reasons[node] = PYTORCH_VIEW_REASON
            moved += 1
    return moved


def _flattened_batch(view: torch.fx.Node, batch: tuple[int, ...]) -> torch.fx.Node | None:
    """The tensor `view` flattens to bmm's 3-D operand, if its batch dimensions are `batch` and its
    last two are the operand's: then `view` only merges them."""
    if view.op != "call_function" or view.target not in ORDER_KEEPING_VIEWS or len(view.users) != 1:
        return None
    source = view.args[0]
    value, source_value = view.meta.get("val"), source.meta.get("val") if isinstance(source, torch.fx.Node) else None
    if not isinstance(value, torch.Tensor) or not isinstance(source_value, torch.Tensor):
        return None
    shape = tuple(source_value.shape)
    return source if shape[:-2] == batch and shape[-2:] == tuple(value.shape)[-2:] else None


def unflatten_batched_matmuls(gm: torch.fx.GraphModule) -> int:
    """Rewrites `view(bmm(view(a), view(b)))` to `matmul(a, b)` (see the module docstring);
    returns how many."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in ORDER_KEEPING_VIEWS:
            continue
        product, value = node.args[0], node.meta.get("val")
        if not isinstance(product, torch.fx.Node) or product.target != aten.bmm.default or len(product.users) != 1:
            continue
        if not isinstance(value, torch.Tensor) or value.dim() < 4:
            continue
        batch = tuple(value.shape)[:-2]
        operands = [_flattened_batch(view, batch) for view in product.args[:2]]
        if any(operand is None for operand in operands):
            continue
        with gm.graph.inserting_before(node):
            matmul = gm.graph.call_function(aten.matmul.default, tuple(operands))
        values = [operand.meta["val"] for operand in operands]  # type: ignore[union-attr]
        matmul.meta["val"] = _traced_value(aten.matmul.default, *values)
        node.replace_all_uses_with(matmul)
        for dead in (node, product, *product.args[:2]):
            gm.graph.erase_node(dead)
        rewritten += 1
    return _recompiled(gm, rewritten)
