"""What may be fused, and what a fusion group is: the rules, `FusionGroup`, and the check of a
group given as ops (`fusion_groups.py` partitions a function into such groups).

What: the op sets (`FUSIBLE_OPS`, `REDUCTIONS`, `CHAIN_OPS`, `EPILOGUE_OPS`) and `FusionRules`
(`KERNEL_RULES` for convert-graph-to-tile); `FusionGroup` (its domain, reduced axes, ops, inputs
and outputs) and the shapes it computes (`reduced_shape`, `reduction_axes`, `broadcasts_to`);
which ops are live, which read through layout index maps (`in_layout_chain`), which reshape
returns a kernel's output (`returned_view`); `collect_inputs_and_outputs` of a group; and
`group_from_ops`, which checks that a given set of ops (a `graph.fusion` someone wrote) is what
one kernel computes, raising `GroupProblem` naming the op at fault.

Preconditions: graph-level IR on static tensor shapes. Limits: a group has at most one set of
reduced axes and at most one anchor; a reshape reads only from outside its group.
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


def broadcasts_to(shape: tuple[int, ...], domain: tuple[int, ...]) -> bool:
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


def in_layout_chain(op: Operation, members: set[Operation]) -> bool:
    """Whether `op` is a layout op of a group, or a broadcast or reshape read by one there: the
    group reads it through index maps (`layout_maps.py`), so its operands come from memory."""
    if isinstance(op, LAYOUT_OPS):
        return True
    if not isinstance(op, (graph.BroadcastOp, graph.ReshapeOp)):
        return False
    return any(use.operation in members and in_layout_chain(use.operation, members) for use in op.results[0].uses)


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


def collect_inputs_and_outputs(
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
        if not broadcasts_to(shape, domain) and shape != group.reduced_domain:
            raise GroupProblem(op, f"its result's shape {list(shape)} does not fit the kernel's domain {list(domain)}")
    collect_inputs_and_outputs(group, {op: group for op in ops}, live)
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
