"""Partitions a graph function's fusible ops into fusion groups: one future kernel each.

A group is a set of elementwise, broadcast, reshape and reduction ops that one tile kernel
computes over a single iteration space, its *domain*. Its inputs are read once and its outputs
written once. A group without reductions computes every value at the domain's shape. A group with
reductions (all over the same `reduced_axes`, keepdims, see `graph-decompose`) has the shape of
their input as its domain: one program holds whole rows, so the reduced values and everything
computed from them stay in registers; its outputs have the domain's shape or the reduced shape.

Algorithm (greedy, sinks first; TVM's FuseOps rules for elementwise/injective chains and
reductions). Walk the ops in reverse program order. An op joins the group G of its users when
all of them are in G, none of those users is a reshape (a reshape reinterprets memory, it does not
broadcast), and:

* an elementwise or broadcast op: its result broadcasts to G's domain;
* a reduction of input shape S over axes A: G has no reductions and its domain is S or the
  reduced shape (G's consumers of the reduction; the domain grows to S), or G reduces over A
  with domain S (the second reduction of a softmax or a layer norm).

It may also join when its only other users are `func.return`: it becomes a second output, which
must have G's domain or reduced shape, since a program stores only what it computes whole. A
consumer of a reduction is visited before the reduction, so an output of a smaller shape is
accepted on trust; if no reduction makes it G's reduced shape, the partition is redone with that
op starting a group of its own. Otherwise an op starts a new group whose domain is its own shape
(its input's, for a reduction). Because an op joins only when every user is already inside, no
path leaves a group and comes back: groups never form a cycle.

Ops whose results the function does not return, directly or through other ops, are dropped
(graph ops have no side effects). Independent groups of the same domain that read a common value
are then merged (multi-output, or sibling, fusion) when neither depends on the other (also through
ops outside every group, such as a matmul's kernel) and they do not reduce over different axes, so
that the value is read once.

Splat constants are never members: every group inlines them as scalars. Other constants and
values from outside are inputs. A reshape's operand is always an input, seen with the reshape's
result shape (a free reinterpretation of a contiguous buffer); a reshape alone in a group is a
copy kernel, except when it only returns a kernel's output: that kernel then writes straight into
the returned buffer (`returned_view`).

Rules. Which ops are fusible, which of them reduce, and which are *anchors* is a `FusionRules`
value. `KERNEL_RULES`, the default, are what convert-graph-to-tile lowers (after graph-decompose).
`graph-fuse` partitions undecomposed graph IR with its own rules: softmax, layer_norm and
reduce_mean count as reductions (their axes are the ones they reduce over; a reduction that drops
its axes takes no consumers, which would index its result differently), and matmul and conv2d are
anchors. An anchor absorbs an elementwise epilogue: it joins the group of its users when that group
has no reductions and no anchor yet and its domain is the anchor's result shape; after that no
reduction or second anchor joins, nor does any producer of the anchor (an anchor fuses with its
consumers only), and groups with anchors are not merged with siblings.

This module is the partition; the rules, `FusionGroup` and the check of a group given as ops are
`fusion_rules.py`, the sibling merge `sibling_fusion.py`. The names passes and lowerings use are
importable from here (`__all__`).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Operation

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.fusion_rules import (
    CHAIN_OPS,
    EPILOGUE_OPS,
    FUSIBLE_OPS,
    KERNEL_RULES,
    REDUCTIONS,
    FusionGroup,
    FusionRules,
    GroupProblem,
    broadcasts_to,
    collect_inputs_and_outputs,
    group_from_ops,
    in_layout_chain,
    is_splat_constant,
    live_ops,
    reduced_shape,
    reduction_axes,
    returned_view,
    shape_of,
)
from mlc.transforms.analysis.sibling_fusion import merge_siblings


def _choose_group(
    op: Operation, group_of: dict[Operation, FusionGroup], live: set[Operation], rules: FusionRules
) -> FusionGroup | None:
    users = [use.operation for result in op.results for use in result.uses if use.operation in live]
    groups = {id(group_of[u]): group_of[u] for u in users if u in group_of}
    if len(groups) != 1:
        return None
    group = next(iter(groups.values()))
    outside = [u for u in users if group_of.get(u) is not group]
    inside = [u for u in users if u not in outside]
    if any(isinstance(u, graph.ReshapeOp) or u is group.anchor for u in inside):
        return None
    if outside and not all(isinstance(u, func.ReturnOp) for u in outside):
        return None
    chained = [u for u in inside if in_layout_chain(u, group.ops_set())]
    if chained and not isinstance(op, CHAIN_OPS):
        return None  # a layout op reads its operand through an index map: from memory
    if chained and len(chained) == len(inside) and not outside:
        return group  # read only through index maps: its shape need not fit the domain
    if isinstance(op, rules.anchors):  # its kernel stores the epilogue's outputs, not the product
        return None if outside else _anchor_joins(op, group)
    if isinstance(op, rules.reductions):
        if group.anchor is not None:
            return None
        return _reduction_joins(op, group)
    shape = shape_of(op.results[0])
    if outside and group.reduced_axes:
        return group if shape in group.output_shapes() else None
    # An output of a smaller shape is accepted on trust: a reduction that joins later may make it
    # the group's reduced shape (see `partition`).
    return group if broadcasts_to(shape, group.domain) else None


def _reduction_joins(op: Operation, group: FusionGroup) -> FusionGroup | None:
    """Whether reduction `op` joins `group`, growing its domain to op's input (see the docstring)."""
    shape, axes = shape_of(op.x), reduction_axes(op)  # type: ignore[attr-defined]
    if shape_of(op.results[0]) not in (shape, reduced_shape(shape, axes)):
        return None  # it drops the reduced axes: its consumers index the result differently
    if group.reduced_axes:
        return group if group.domain == shape and group.reduced_axes == axes else None
    if group.domain not in (shape, reduced_shape(shape, axes)):
        return None
    group.domain, group.reduced_axes = shape, axes
    return group


def _anchor_joins(op: Operation, group: FusionGroup) -> FusionGroup | None:
    """Whether a matmul or convolution takes `group` as its epilogue (see the module docstring)."""
    if group.anchor is not None or group.reduced_axes:
        return None
    if group.domain != shape_of(op.results[0]):
        return None
    group.anchor = op
    return group


def _new_group(op: Operation, rules: FusionRules) -> FusionGroup:
    if isinstance(op, rules.reductions):
        return FusionGroup(domain=shape_of(op.x), reduced_axes=reduction_axes(op))
    anchor = op if isinstance(op, rules.anchors) else None
    return FusionGroup(domain=shape_of(op.results[0]), anchor=anchor)


def partition(function: func.FuncOp, rules: FusionRules = KERNEL_RULES) -> list[FusionGroup]:
    """The fusion groups of `function`, in an order in which each group's inputs exist."""
    alone: set[Operation] = set()
    while True:
        groups = _partition(function, alone, rules)
        # A reduction's own result always fits: the group has its input's shape and its axes.
        misfits = {
            output.owner
            for group in groups
            for output in group.outputs
            if shape_of(output) not in group.output_shapes() and not isinstance(output.owner, rules.reductions)
        }
        # An anchor's kernel computes an elementwise epilogue only (a reshape may enter other groups).
        misfits |= {
            group.anchor
            for group in groups
            if group.anchor is not None and not all(isinstance(op, EPILOGUE_OPS) for op in group.ops if op is not group.anchor)
        }
        if not misfits:
            return groups
        alone |= misfits  # type: ignore[arg-type]


def _partition(function: func.FuncOp, alone: set[Operation], rules: FusionRules) -> list[FusionGroup]:
    """One greedy partition; the ops in `alone` start groups of their own."""
    group_of: dict[Operation, FusionGroup] = {}
    live = live_ops(function)
    for op in reversed(list(function.body.block.ops)):
        if not isinstance(op, rules.fusible) or op not in live:
            continue
        if isinstance(op, graph.ReshapeOp) and returned_view(op.x) is op:
            continue
        group = None if op in alone else _choose_group(op, group_of, live, rules)
        if group is None:
            group = _new_group(op, rules)
        group_of[op] = group
        group.members.add(op)
    groups = list({id(g): g for g in group_of.values()}.values())
    for op in function.body.block.ops:
        if op in group_of:
            group_of[op].ops.append(op)
    position = {op: index for index, op in enumerate(function.body.block.ops)}
    groups.sort(key=lambda g: position[g.ops[0]])
    groups = merge_siblings(groups, group_of, position)
    for group in groups:
        collect_inputs_and_outputs(group, group_of, live)
    return _in_dependency_order(groups, group_of)


def _in_dependency_order(groups: list[FusionGroup], group_of: dict[Operation, FusionGroup]) -> list[FusionGroup]:
    ordered: list[FusionGroup] = []
    placed: set[int] = set()

    def place(group: FusionGroup) -> None:
        if id(group) in placed:
            return
        placed.add(id(group))
        for value, _ in group.inputs:
            producer = value.owner
            if isinstance(producer, Operation) and producer in group_of:
                place(group_of[producer])
        ordered.append(group)

    for group in groups:
        place(group)
    return ordered


__all__ = [
    "EPILOGUE_OPS", "FUSIBLE_OPS", "KERNEL_RULES", "REDUCTIONS", "FusionGroup", "FusionRules",
    "GroupProblem", "group_from_ops", "in_layout_chain", "is_splat_constant", "live_ops", "partition",
    "reduced_shape", "reduction_axes", "returned_view", "shape_of",
]
