"""Multi-output (sibling) fusion: independent fusion groups of one domain that read a common value
become one group, so that the value is read once (the last step of `fusion_groups.partition`).

Algorithm: each group's reads (values it uses and does not compute, splat constants aside); for
each group the bit mask of the groups it depends on, directly or through others, also through
ops outside every group (a matmul's kernel), computed once in post order (iteratively: chains of
groups can be longer than Python's recursion limit); then, in program order, a group joins the
first earlier group with its domain, no anchor on either side, compatible reductions, a common
read and no dependency either way; the merged group's reads and dependencies are updated so that
later checks stay one `&` each.

Preconditions: the groups of one partition with their ops in program order and `group_of`
mapping every member op to its group. Limits: greedy (first fit: an earlier merge may keep a
better one from happening), quadratic in the number of groups.
"""

from __future__ import annotations


from xdsl.ir import Operation, SSAValue

from mlc.transforms.analysis.fusion_rules import FusionGroup, is_splat_constant


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


def merge_siblings(
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
