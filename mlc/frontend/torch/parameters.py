"""Work on a module's parameters and buffers alone, done once in PyTorch rather than at every call.

Dynamo lifts a module's parameters and buffers into graph inputs, so the graph the backend
compiles recomputes whatever depends on them alone at every call: a linear layer's `permute(w)`
(its transposed weight, a copy kernel in mlc since graph values have no strides), a batch norm's
folded scale. `hoist_parameter_work(gm, static)` moves those nodes out: with `static` the positions
of the inputs that are parameters or buffers, a node is *derived* when every input of it is a
static input, a module constant (`get_attr`) or a derived node, and it is neither random nor
otherwise impure nor a broadcast (`expand`: materialized, a weight expanded over a batch would
take the batch's size in memory). The derived nodes used by the rest of the graph (the boundary) become new
inputs of `gm`, after its own; a prefix graph computes them from the original inputs.

`ParameterWork` calls the prefix once and again whenever a static input may have changed: it keeps
the static tensors of its last computation and recomputes when one is another object, or has
another data pointer or version counter (PyTorch bumps a tensor's version at every in-place
write: an optimizer's step, `copy_`, `fill_` under `no_grad`). A tensor without a version counter
(made under `torch.inference_mode`) is recomputed at every call. The static inputs themselves
reach `main` as the detached aliases made at that computation (same storage and version counter,
so an in-place write is seen through them; another object or data pointer makes new ones): a
`detach` per parameter and call was host time of its own, about 0.4 µs each, in the call of a
small batch (issue 18). The results are made contiguous
once (mlc's partitions take contiguous tensors and would copy a view at every call); they are
kept, so the boundary's tensors take device memory once more (a transposed copy of each weight).

Preconditions: `gm` is a functional ATen graph with `meta["val"]` on its nodes (as AOT autograd
hands the forward compiler). Returns None, changing nothing, when nothing is derived, when a
boundary node is not one tensor, or when one is a result of the graph (a cached tensor returned
to the caller could be written by it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Hoisted:
    prefix: torch.fx.GraphModule
    """Takes `gm`'s original inputs, returns the boundary's tensors."""
    boundary: list[torch.fx.Node]
    """The derived nodes the rest of the graph used (now inputs of `gm`), in graph order."""
    derived: list[torch.fx.Node]
    """Every node the prefix computes, in graph order (removed from `gm`)."""


def _hoistable(node: torch.fx.Node) -> bool:
    """Deterministic, pure, and not a broadcast (kept, it would take its expanded size in memory)."""
    tags = getattr(node.target, "tags", ())
    if node.target is torch.ops.aten.expand.default:
        return False
    return not node.is_impure() and torch.Tag.nondeterministic_seeded not in tags


def hoist_parameter_work(gm: torch.fx.GraphModule, static: set[int]) -> Hoisted | None:
    """Moves the work on static inputs out of `gm` (rewritten in place; see the module docstring)."""
    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    constant = {placeholders[i] for i in static} | {n for n in gm.graph.nodes if n.op == "get_attr"}
    derived: list[torch.fx.Node] = []
    derived_set: set[torch.fx.Node] = set()
    for node in gm.graph.nodes:
        inputs = node.all_input_nodes
        if node.op == "call_function" and inputs and _hoistable(node):
            if all(i in constant or i in derived_set for i in inputs):
                derived.append(node)
                derived_set.add(node)
    boundary = [n for n in derived if any(user not in derived_set for user in n.users)]
    if not boundary or not all(isinstance(n.meta.get("val"), torch.Tensor) for n in boundary):
        return None
    if any(user.op == "output" for n in boundary for user in n.users):
        return None  # a result computed from parameters alone: returned fresh, as PyTorch would
    prefix_graph = torch.fx.Graph()
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder" or (node.op == "get_attr" and any(u in derived_set for u in node.users)):
            copies[node] = prefix_graph.node_copy(node, lambda n: copies[n])
        elif node in derived_set:
            copies[node] = prefix_graph.node_copy(node, lambda n: copies[n])
    prefix_graph.output(tuple(copies[n] for n in boundary))
    prefix = torch.fx.GraphModule(gm, prefix_graph)
    anchor = placeholders[-1] if placeholders else next(iter(gm.graph.nodes))
    for index, node in enumerate(boundary):
        with gm.graph.inserting_after(anchor):
            anchor = gm.graph.placeholder(f"hoisted_{index}_{node.name}")
        anchor.meta = dict(node.meta)
        node.replace_all_uses_with(anchor)
    for node in reversed(derived):
        if not node.users:
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return Hoisted(prefix, boundary, derived)


def _state(tensor: Any) -> tuple[int, int] | None:
    """(data pointer, version) of a static input; None when it has no version counter."""
    try:
        return tensor.data_ptr(), tensor._version
    except (RuntimeError, AttributeError):
        return None


class ParameterWork:
    """`main(*inputs, *prefix(*inputs))`, the prefix computed again only when a static input may
    have changed (see the module docstring)."""

    def __init__(self, prefix: Callable[..., Any], main: Callable[..., Any], static: Sequence[int]):
        self.prefix, self.main, self.static = prefix, main, tuple(static)
        self.sources: tuple[Any, ...] = ()
        self.states: tuple[tuple[int, int] | None, ...] = ()
        self.values: tuple[torch.Tensor, ...] = ()
        self.aliases: tuple[tuple[int, Any], ...] = ()
        """(position, the static input there without autograd history), for `main`."""
        # Module.__call__'s hook handling skipped: `main` is the backend's own GraphModule.
        self._main = main.forward if isinstance(main, torch.nn.Module) else main
        self.computations = 0
        """How many times the prefix ran (tests read it)."""

    def _stale(self, inputs: Sequence[Any]) -> bool:
        if len(self.sources) != len(self.static):
            return True
        for source, position, state in zip(self.sources, self.static, self.states):
            current = inputs[position]
            # `_state` inlined (a call per parameter and call): the same object with a version
            # counter, so reading it cannot raise.
            if current is not source or state is None or current._version != state[1] or current.data_ptr() != state[0]:
                return True
        return False

    def __call__(self, *inputs: Any) -> Any:
        if self._stale(inputs):
            self.values = tuple(value.contiguous() for value in self.prefix(*inputs))
            self.sources = tuple(inputs[i] for i in self.static)
            self.states = tuple(_state(source) for source in self.sources)
            self.aliases = tuple(
                (i, inputs[i].detach()) for i in self.static if isinstance(inputs[i], torch.Tensor) and inputs[i].requires_grad
            )
            self.computations += 1
        arguments = list(inputs)
        for position, alias in self.aliases:
            arguments[position] = alias
        return self._main(*arguments, *self.values)


def static_positions(dynamo_graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> set[int]:
    """The positions of the inputs dynamo lifted from a module's parameters and buffers: the
    `torch.nn.Parameter`s, and the inputs dynamo names as buffers (`l_self_buffers_running_mean_`,
    `l_self_modules_bn_buffers_running_var_`)."""
    names = [node.name for node in dynamo_graph.graph.nodes if node.op == "placeholder"]
    if len(names) != len(example_inputs):
        return set()
    return {
        index
        for index, (name, value) in enumerate(zip(names, example_inputs))
        if isinstance(value, torch.nn.Parameter) or (isinstance(value, torch.Tensor) and "_buffers_" in name)
    }
