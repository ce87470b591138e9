"""The block order that lockstep execution of unstructured control flow follows.

Lanes of a multi-block region run in lockstep by "minimum program counter": the lanes waiting at
the lowest-numbered block run it next. That reconverges divergent lanes exactly when the numbering
is a topological order of the forward edges in which every loop is contiguous (its header first,
its exits after all of its blocks): lanes that left a loop early wait at the exit until the last
lane leaves, so a barrier after the loop is reached by all of them at once.

A plain reverse post-order does not guarantee this: with `header -> [body, exit]`, a depth-first
search that visits `body` first numbers `exit` before `body`, and early-exiting lanes would run
the code after the loop while the others still loop. So `block_order` numbers the loop nest
recursively (a weak topological order, as in Bourdoncle's): natural loops are found from back
edges (edges to a dominator), each loop is collapsed into its header, the collapsed graph is
numbered in reverse post-order, and each loop is expanded in place by the same procedure.

Irreducible control flow (not produced by mlc's lowerings) still gets an order, in which lanes run
correctly but may reconverge later than the hardware would.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import Block, Region


def successors(block: Block) -> list[Block]:
    terminator = block.last_op
    if terminator is None:
        return []
    result: list[Block] = []
    for successor in terminator.successors:
        if successor not in result:
            result.append(successor)
    return result


def _reverse_post_order(entry: Block, edges: dict[Block, list[Block]]) -> list[Block]:
    visited: set[Block] = {entry}
    order: list[Block] = []
    stack: list[tuple[Block, int]] = [(entry, 0)]
    while stack:
        block, position = stack.pop()
        targets = edges.get(block, [])
        if position < len(targets):
            stack.append((block, position + 1))
            target = targets[position]
            if target not in visited:
                visited.add(target)
                stack.append((target, 0))
        else:
            order.append(block)
    order.reverse()
    return order


def _dominators(order: list[Block], predecessors: dict[Block, list[Block]]) -> dict[Block, set[Block]]:
    everything = set(order)
    dominators = {block: set(everything) for block in order}
    dominators[order[0]] = {order[0]}
    changed = True
    while changed:
        changed = False
        for block in order[1:]:
            incoming = [dominators[p] for p in predecessors[block] if p in dominators]
            new = set.intersection(*incoming) | {block} if incoming else {block}
            if new != dominators[block]:
                dominators[block] = new
                changed = True
    return dominators


def _natural_loops(order: list[Block], predecessors: dict[Block, list[Block]]) -> dict[Block, set[Block]]:
    dominators = _dominators(order, predecessors)
    loops: dict[Block, set[Block]] = {}
    for block in order:
        for target in successors(block):
            if target in dominators[block]:  # a back edge block -> target
                body = loops.setdefault(target, {target})
                pending = [block]
                while pending:
                    member = pending.pop()
                    if member not in body:
                        body.add(member)
                        pending.extend(p for p in predecessors[member] if p in dominators)
    return loops


def _layout(
    nodes: set[Block], header: Block, loops: dict[Block, set[Block]], rank: dict[Block, int]
) -> list[Block]:
    inner = [h for h in loops if h is not header and h in nodes and loops[h] <= nodes]
    outermost = [h for h in inner if not any(h in loops[o] and o is not h for o in inner)]
    representative = {node: node for node in nodes}
    for loop_header in outermost:
        for member in loops[loop_header]:
            representative[member] = loop_header
    edges: dict[Block, list[Block]] = {}
    for node in sorted(nodes, key=rank.__getitem__):
        for target in successors(node):
            if target not in nodes or target is header:
                continue
            source, destination = representative[node], representative[target]
            if source is not destination and destination not in edges.setdefault(source, []):
                edges[source].append(destination)
    result: list[Block] = []
    for node in _reverse_post_order(header, edges):
        if node in outermost:
            result.extend(_layout(loops[node], node, loops, rank))
        else:
            result.append(node)
    return result


def block_order(region: Region) -> list[Block]:
    """The reachable blocks of `region`, entry first, each loop contiguous and before its exits."""
    entry = region.blocks.first
    if entry is None:
        return []
    plain = _reverse_post_order(entry, {b: successors(b) for b in region.blocks})
    predecessors: dict[Block, list[Block]] = {block: [] for block in plain}
    for block in plain:
        for target in successors(block):
            predecessors[target].append(block)
    loops = _natural_loops(plain, predecessors)
    rank = {block: index for index, block in enumerate(plain)}
    order = _layout(set(plain), entry, loops, rank)
    missing = [block for block in plain if block not in set(order)]
    return order + missing


def blocks_of(order: Iterable[Block]) -> dict[Block, int]:
    return {block: index for index, block in enumerate(order)}
