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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.ops import broadcast_shapes
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS
from mlc.transforms.lowering.elementwise_expansion import splat_constant_value

REDUCTIONS = (graph.ReduceSumOp, graph.ReduceMaxOp, graph.ReduceMinOp)
"""The reductions a group computes; graph-decompose rewrites the others into these."""
FUSIBLE_OPS = (*graph.ELEMENTWISE_OPS, graph.BroadcastOp, graph.ReshapeOp, *REDUCTIONS, *LAYOUT_OPS)
CHAIN_OPS = (*LAYOUT_OPS, graph.BroadcastOp, graph.ReshapeOp)
"""What a layout op's operand may be inside its group: the index maps compose down to the inputs."""


@dataclass(frozen=True)
class FusionRules:
    """What a partition may put into groups (see the module docstring)."""

    fusible: tuple[type[Operation], ...]
    """Ops that belong to groups; every other op is left out."""
    reductions: tuple[type[Operation], ...]
    """The fusible ops that reduce their operand `x` over the axes `reduction_axes` gives."""
    anchors: tuple[type[Operation], ...] = ()
    """The fusible ops that absorb an elementwise epilogue and nothing else."""


KERNEL_RULES = FusionRules(FUSIBLE_OPS, REDUCTIONS)
"""The groups convert-graph-to-tile lowers, one kernel each."""

EPILOGUE_OPS = (*graph.ELEMENTWISE_OPS, graph.BroadcastOp)
"""What a matmul's kernel computes after its product (an anchor's group holds nothing else)."""


def shape_of(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_shape()


def is_splat_constant(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, graph.ConstantOp) and splat_constant_value(owner) is not None


@dataclass(eq=False)
class FusionGroup:
    domain: tuple[int, ...]
    reduced_axes: tuple[int, ...] = ()
    """The axes of the domain that the group's reductions reduce (none for elementwise groups)."""
    ops: list[Operation] = field(default_factory=list)
    inputs: list[tuple[SSAValue, tuple[int, ...]]] = field(default_factory=list)
    """Values read from memory, each with the shape the kernel sees it as."""
    outputs: list[SSAValue] = field(default_factory=list)
    anchor: Operation | None = None
    """The group's matmul or convolution, under rules with anchors."""

    def contains(self, op: Operation) -> bool:
        return op in self.ops

    def ops_set(self) -> set[Operation]:
        """The ops of the group so far (during the partition, the ops assigned to it)."""
        return self.members

    members: set[Operation] = field(default_factory=set)
    """The ops assigned to the group while partitioning (`ops` is filled in program order after)."""

    @property
    def reduced_domain(self) -> tuple[int, ...]:
        """The shape of the group's reduced values (the domain itself without reductions)."""
        return reduced_shape(self.domain, self.reduced_axes)

    def output_shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shapes a group output may have."""
        return (self.domain, self.reduced_domain)


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if dim in axes else size for dim, size in enumerate(shape))


def reduction_axes(op: Operation) -> tuple[int, ...]:
    """The axes of `op.x` that a reduction or normalisation reduces over, sorted."""
    if isinstance(op, graph.SoftmaxOp):
        return (op.normalized_axis(),)
    if isinstance(op, graph.LayerNormOp):
        return tuple(range(op.normalized_axis(), len(shape_of(op.x))))
    assert isinstance(op, graph.ReductionOp)
    return tuple(sorted(set(op.normalized_axes())))


def _broadcasts_to(shape: tuple[int, ...], domain: tuple[int, ...]) -> bool:
    return broadcast_shapes(shape, domain) == domain


def live_ops(function: func.FuncOp) -> set[Operation]:
    """Ops whose results reach the function's return (the others compute nothing needed)."""
    terminator = function.body.block.last_op
    live: set[Operation] = set()
    worklist = [terminator] if terminator is not None else []
    while worklist:
        op = worklist.pop()
        if op in live:
            continue
        live.add(op)
        worklist += [v.owner for v in op.operands if isinstance(v.owner, Operation)]
    return live


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
    return group if _broadcasts_to(shape, group.domain) else None


def in_layout_chain(op: Operation, members: set[Operation]) -> bool:
    """Whether `op` is a layout op of a group, or a broadcast or reshape read by one there: the
    group reads it through index maps (`layout_maps.py`), so its operands come from memory."""
    if isinstance(op, LAYOUT_OPS):
        return True
    if not isinstance(op, (graph.BroadcastOp, graph.ReshapeOp)):
        return False
    return any(use.operation in members and in_layout_chain(use.operation, members) for use in op.results[0].uses)


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


def returned_view(value: SSAValue) -> graph.ReshapeOp | None:
    """The reshape through which a kernel output is returned, when that is its only use.

    The kernel then writes straight into a buffer of the reshaped type (a free reinterpretation
    of a contiguous buffer), and the reshape needs no copy kernel.
    """
    uses = list(value.uses)
    # A reshape of a reshape is not a kernel's output: the inner one may be a view of an argument.
    if len(uses) != 1 or not isinstance(value.owner, FUSIBLE_OPS) or isinstance(value.owner, graph.ReshapeOp):
        return None
    reshape = uses[0].operation
    if not isinstance(reshape, graph.ReshapeOp) or not reshape.result.uses:
        return None
    if all(isinstance(use.operation, func.ReturnOp) for use in reshape.result.uses):
        return reshape
    return None


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
    groups = _merge_siblings(groups, group_of, position)
    for group in groups:
        _collect_inputs_and_outputs(group, group_of, live)
    return _in_dependency_order(groups, group_of)


def _reads(group: FusionGroup) -> set[SSAValue]:
    """The values a group's ops use that the group does not compute (splat constants aside)."""
    inside = set(group.ops)
    return {
        operand
        for op in group.ops
        for operand in op.operands
        if operand.owner not in inside and not is_splat_constant(operand)
    }


def _dependency_masks(
    groups: list[FusionGroup], group_of: dict[Operation, FusionGroup], reads: dict[int, set[SSAValue]]
) -> dict[int, int]:
    """For each group (by id), the bit mask of the groups it depends on, directly or through others.

    Bit `i` stands for `groups[i]`. Masks are computed once, in post order (iteratively: chains of
    groups can be longer than Python's recursion limit), so that a merge check is one `&`.
    """
    index = {id(group): number for number, group in enumerate(groups)}
    outside: dict[Operation, frozenset[int]] = {}
    producers = {
        id(group): {
            producer
            for value in reads[id(group)]
            if isinstance(value.owner, Operation)
            for producer in _producing_groups(value.owner, group_of, outside)
        }
        - {id(group)}
        for group in groups
    }
    masks: dict[int, int] = {}
    for group in groups:
        stack = [id(group)]
        while stack:
            current = stack[-1]
            if current in masks:
                stack.pop()
                continue
            pending = [producer for producer in producers[current] if producer not in masks]
            if pending:
                stack += pending
                continue
            stack.pop()
            masks[current] = 0
            for producer in producers[current]:
                masks[current] |= masks[producer] | (1 << index[producer])
    return masks


def _producing_groups(
    op: Operation, group_of: dict[Operation, FusionGroup], outside: dict[Operation, frozenset[int]]
) -> frozenset[int]:
    """The groups (by id) whose results `op`'s result is computed from: its own group, or for an op
    outside every group (a matmul, a kernel of its own) the groups feeding it, through such ops.

    Without looking through them, two groups on either side of a matmul would look independent, and
    merging them would make a group that both feeds and consumes the matmul. `outside` memoises.
    """
    if op in group_of:
        return frozenset({id(group_of[op])})
    if op not in outside:
        found: set[int] = set()
        seen, stack = {op}, [op]
        while stack:
            for operand in stack.pop().operands:
                owner = operand.owner
                if not isinstance(owner, Operation) or owner in seen:
                    continue
                seen.add(owner)
                if owner in group_of:
                    found.add(id(group_of[owner]))
                else:
                    stack.append(owner)
        outside[op] = frozenset(found)
    return outside[op]


def _compatible_reductions(group: FusionGroup, other: FusionGroup) -> bool:
    """Whether one kernel can compute both groups: the same reduced axes, or at most one reduces."""
    return not group.reduced_axes or not other.reduced_axes or group.reduced_axes == other.reduced_axes


def _merge_siblings(
    groups: list[FusionGroup], group_of: dict[Operation, FusionGroup], position: dict[Operation, int]
) -> list[FusionGroup]:
    """Multi-output fusion: independent groups of one domain that read a common value become one.

    The shared value is then read once. Neither group may depend on the other, even through a
    third group, or the merged group would form a cycle.
    """
    reads = {id(group): _reads(group) for group in groups}
    depends_on = _dependency_masks(groups, group_of, reads)
    bits = {id(group): 1 << index for index, group in enumerate(groups)}
    merged: list[FusionGroup] = []
    for group in groups:
        for candidate in merged:
            if (
                candidate.domain == group.domain
                and candidate.anchor is None
                and group.anchor is None
                and _compatible_reductions(candidate, group)
                and reads[id(candidate)] & reads[id(group)]
                and not depends_on[id(candidate)] & bits[id(group)]
                and not depends_on[id(group)] & bits[id(candidate)]
            ):
                candidate.ops = sorted(candidate.ops + group.ops, key=position.__getitem__)
                candidate.reduced_axes = candidate.reduced_axes or group.reduced_axes
                for op in group.ops:
                    group_of[op] = candidate
                _merge_dependencies(candidate, group, reads, depends_on, bits)
                break
        else:
            merged.append(group)
    return merged


def _merge_dependencies(
    into: FusionGroup,
    group: FusionGroup,
    reads: dict[int, set[SSAValue]],
    depends_on: dict[int, int],
    bits: dict[int, int],
) -> None:
    """Updates the merge bookkeeping once `group` is part of `into` (two independent groups).

    Neither computes what the other reads, so the merged group reads the union. It is one node
    now: whatever depended on either depends on both and on everything either depends on.
    """
    reads[id(into)] |= reads[id(group)]
    merged_bits = bits[id(into)] | bits[id(group)]
    bits[id(into)] = merged_bits
    depends_on[id(into)] |= depends_on[id(group)]
    for other, mask in depends_on.items():
        if mask & merged_bits:
            depends_on[other] = mask | merged_bits | depends_on[id(into)]


def _collect_inputs_and_outputs(
    group: FusionGroup, group_of: dict[Operation, FusionGroup], live: set[Operation]
) -> None:
    seen: set[tuple[SSAValue, tuple[int, ...]]] = set()
    for op in group.ops:
        for operand in op.operands:
            if is_splat_constant(operand):
                continue
            producer = operand.owner
            if isinstance(producer, Operation) and group_of.get(producer) is group:
                continue
            seen_as = shape_of(op.results[0]) if isinstance(op, graph.ReshapeOp) else shape_of(operand)
            if (operand, seen_as) not in seen:
                seen.add((operand, seen_as))
                group.inputs.append((operand, seen_as))
        for result in op.results:
            if any(group_of.get(use.operation) is not group and use.operation in live for use in result.uses):
                group.outputs.append(result)


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


class GroupProblem(Exception):
    """Why a given set of ops cannot be one kernel's group: `op` is the op at fault."""

    def __init__(self, op: Operation, reason: str):
        super().__init__(reason)
        self.op = op
        self.reason = reason


def group_from_ops(ops: list[Operation], live: set[Operation]) -> FusionGroup:
    """The group of exactly `ops` (in program order; no anchor): its domain, reduced axes, inputs
    and outputs, checked against what one kernel computes. Raises `GroupProblem` naming the op
    and the reason when the ops cannot be one kernel (how convert-graph-to-tile reads a
    `graph.fusion` that a person or another tool wrote)."""
    members = set(ops)
    for op in ops:
        if not isinstance(op, FUSIBLE_OPS):
            raise GroupProblem(op, f"'{op.name}' cannot be fused with other ops into one kernel")
        if isinstance(op, graph.ReshapeOp) and op.x.owner in members:
            raise GroupProblem(
                op,
                "a reshape can only read a value from outside its group (it reinterprets memory; "
                "a reduction that drops its axes leaves one: run graph-decompose before graph-fuse)",
            )
    chain_only = _check_layout_chains(ops)
    reductions = [op for op in ops if isinstance(op, REDUCTIONS)]
    if reductions:
        first = reductions[0]
        domain, axes = shape_of(first.x), reduction_axes(first)  # type: ignore[attr-defined]
        for op in reductions:
            if (shape_of(op.x), reduction_axes(op)) != (domain, axes):  # type: ignore[attr-defined]
                raise GroupProblem(op, "the reductions of one kernel must reduce the same axes of the same shape")
            if shape_of(op.results[0]) != reduced_shape(domain, axes):
                raise GroupProblem(op, "a reduction that drops its axes cannot be fused (run graph-decompose first)")
    else:
        domain, axes = (), ()
        for op in ops:
            if op in chain_only:
                continue
            shape = broadcast_shapes(domain, shape_of(op.results[0]))
            if shape is None:
                raise GroupProblem(op, f"its result does not broadcast with the group's shape {list(domain)}")
            domain = shape
    group = FusionGroup(domain=domain, reduced_axes=axes, ops=list(ops))
    for op in ops:
        if op in chain_only:
            continue
        shape = shape_of(op.results[0])
        if not _broadcasts_to(shape, domain) and shape != group.reduced_domain:
            raise GroupProblem(op, f"its result's shape {list(shape)} does not fit the kernel's domain {list(domain)}")
    _collect_inputs_and_outputs(group, {op: group for op in ops}, live)
    for output in group.outputs:
        if shape_of(output) not in group.output_shapes():
            raise GroupProblem(output.owner, f"a kernel stores values of its domain {list(domain)} or reduced shape only")  # type: ignore[arg-type]
    return group


def _check_layout_chains(ops: list[Operation]) -> set[Operation]:
    """The ops of a given group read only through layout ops' index maps (their shapes need not
    fit the domain); raises `GroupProblem` where a layout chain reads a value computed in the group."""
    members = set(ops)
    chained = {op for op in ops if in_layout_chain(op, members)}
    for op in chained:
        for operand in op.operands:
            producer = operand.owner
            if producer in members and not isinstance(producer, CHAIN_OPS):
                raise GroupProblem(
                    producer,
                    f"'{op.name}' reads it through an index map, from memory: a layout op's operand "  # type: ignore[union-attr]
                    "cannot be computed in its group",
                )
    return {op for op in chained if all(use.operation in chained for use in op.results[0].uses)}
