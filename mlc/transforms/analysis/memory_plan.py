"""Static memory plans of graph functions: liveness, greedy-by-size offsets, and the IR attributes
that hold them.

`plan_memory(function)` computes a `MemoryPlan` (the algorithm, what is planned and its limits are
in graph-plan-memory's docstring, `mlc/transforms/graph/graph_plan_memory.py`); `annotate` writes
it as `mlc.buffer` / `mlc.memory_plan` attributes, `buffer_of` reads one value's place back, and
`forget_memory_plan` removes a plan that no longer describes its function (passes that regroup
ops call it). Nothing here decides when to plan: the pass does.

`read_recorded_plan(function)` is the reading side for a lowering (convert-graph-to-tile): the
plan as the IR records it, which a person may have edited, checked entry by entry against the
function before anything is built. A malformed attribute, a `size` that is not the value's bytes,
an offset that is not a multiple of the plan's alignment (or of the element size), bytes past
`arena_bytes`, an arena larger than any target addresses, or a reshape placed elsewhere than its
operand is a `PassFailure` naming the op. That buffers whose lifetimes overlap do not share
bytes is not checked here: it depends on the order in which the lowering runs its kernels, so the
lowering checks it on what it built (`lowering/host_arena.py`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, TensorType, i8, i64
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.traits import ConstantLike

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.buffer_limits import buffer_size_problem
from mlc.dialects.element_types import byte_width
from mlc.dialects.graph import ops as graph

BUFFER_ATTR = attributes.BUFFER.name
"""The discardable attribute of an op whose results live in the arena."""
PLAN_ATTR = attributes.MEMORY_PLAN.name
"""The discardable attribute of a planned function: the arena's summary."""


@dataclass(frozen=True)
class Buffer:
    """One allocation in the arena: a planned value and the reshape views of it.

    `values[0]` is the value an op computes, the rest are views sharing its bytes. The buffer is
    live from step `first` to step `last` (indices of top-level ops, both included).
    """

    values: tuple[SSAValue, ...]
    size: int
    first: int
    last: int
    offset: int = 0

    def overlaps_in_time(self, other: Buffer) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class MemoryPlan:
    """Offsets in one arena for the intermediates of a function (see the module docstring)."""

    alignment: int
    buffers: tuple[Buffer, ...]
    """In the order of definition."""
    arena_bytes: int
    unplanned_bytes: int
    _by_value: dict[SSAValue, Buffer] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_value = {value: buffer for buffer in self.buffers for value in buffer.values}
        object.__setattr__(self, "_by_value", by_value)

    def buffer_of(self, value: SSAValue) -> Buffer | None:
        """The buffer holding `value`, or None when it lives outside the arena."""
        return self._by_value.get(value)


def check_alignment(alignment: int) -> None:
    if alignment < 1 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a positive power of two, got {alignment}")


def align_up(size: int, alignment: int) -> int:
    return -(-size // alignment) * alignment


def _tensor_bytes(value_type: Attribute) -> int | None:
    """Bytes of a static tensor of a storable element type, else None."""
    if not isinstance(value_type, TensorType) or not value_type.has_static_shape():
        return None
    try:
        element_bytes = byte_width(value_type.element_type)
    except NotImplementedError:
        return None
    return math.prod(value_type.get_shape()) * element_bytes


def is_plannable(function: Operation) -> bool:
    """A graph function: one block; its arguments, results and top-level values static tensors."""
    if not isinstance(function, func.FuncOp) or len(function.body.blocks) != 1:
        return False
    function_type = function.function_type
    results = [result.type for op in function.body.block.ops for result in op.results]
    types = [*function_type.inputs.data, *function_type.outputs.data, *results]
    # Functions of other levels (memrefs, scalars) and empty ones have nothing to plan here.
    return bool(types) and all(_tensor_bytes(t) is not None for t in types)


def _top_level_step(op: Operation, body: Block, steps: dict[Operation, int]) -> int:
    """The step of the top-level op of `body` that holds `op` (a use in a region counts there)."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not body:
        current = current.parent_op()
    assert current is not None, "a use outside the function"
    return steps[current]


def _returned_values(body: Block) -> set[SSAValue]:
    terminator = body.last_op
    return set(terminator.operands) if isinstance(terminator, func.ReturnOp) else set()


def _group_values(body: Block) -> list[list[SSAValue]]:
    """The planned values, grouped into buffers (a value, then its reshape views), in order."""
    returned = _returned_values(body)
    group_of: dict[SSAValue, list[SSAValue]] = {}
    groups: list[list[SSAValue]] = []
    for op in body.ops:
        if op.has_trait(ConstantLike):
            continue
        for result in op.results:
            if not isinstance(result.type, TensorType) or result in returned:
                continue
            if isinstance(op, graph.ReshapeOp):
                # A view: of a planned buffer (join it), or of memory outside the arena (skip).
                if op.x in group_of:
                    group_of[op.x].append(result)
                    group_of[result] = group_of[op.x]
                continue
            group_of[result] = [result]
            groups.append(group_of[result])
    return groups


def _make_buffer(values: Sequence[SSAValue], body: Block, steps: dict[Operation, int]) -> Buffer:
    owner = values[0].owner
    assert isinstance(owner, Operation)
    first = steps[owner]
    uses = (_top_level_step(use.operation, body, steps) for value in values for use in value.uses)
    size = _tensor_bytes(values[0].type)
    assert size is not None
    return Buffer(tuple(values), size, first, max(uses, default=first))


def _best_offset(buffer: Buffer, conflicts: Iterable[Buffer], alignment: int) -> int:
    """Pisarchyk & Lee: the smallest gap between conflicting buffers that fits, else the top."""
    size = align_up(buffer.size, alignment)
    best: int | None = None
    best_gap = 0
    top = 0
    for other in sorted(conflicts, key=lambda b: b.offset):
        gap = other.offset - top
        if gap >= size and (best is None or gap < best_gap):
            best, best_gap = top, gap
        top = max(top, other.offset + align_up(other.size, alignment))
    return top if best is None else best


def assign_offsets(buffers: Sequence[Buffer], alignment: int) -> list[Buffer]:
    """Greedy by size: largest first, each into the best-fitting gap among its conflicts."""
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, buffers[i].first, i))
    placed: list[Buffer] = []
    result = list(buffers)
    for index in order:
        buffer = buffers[index]
        conflicts = [other for other in placed if other.overlaps_in_time(buffer)]
        result[index] = replace(buffer, offset=_best_offset(buffer, conflicts, alignment))
        placed.append(result[index])
    return result


def plan_memory(function: func.FuncOp, alignment: int = 256) -> MemoryPlan:
    """The memory plan of a graph function (see `is_plannable`); reads and changes no attribute."""
    check_alignment(alignment)
    if not is_plannable(function):
        raise ValueError(f"@{function.sym_name.data} is not a graph function with static tensors")
    body = function.body.block
    steps = {op: index for index, op in enumerate(body.ops)}
    buffers = [_make_buffer(values, body, steps) for values in _group_values(body)]
    buffers = assign_offsets(buffers, alignment)
    ends = [b.offset + align_up(b.size, alignment) for b in buffers]
    unplanned = sum(align_up(b.size, alignment) for b in buffers)
    return MemoryPlan(alignment, tuple(buffers), max(ends, default=0), unplanned)


def _integer(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def _buffer_entry(plan: MemoryPlan, value: SSAValue) -> DictionaryAttr:
    buffer = plan.buffer_of(value)
    if buffer is None:
        return DictionaryAttr({})
    return DictionaryAttr({"offset": _integer(buffer.offset), "size": _integer(buffer.size)})


def annotate(function: func.FuncOp, plan: MemoryPlan) -> None:
    """Writes `plan` into the attributes of `function` and its top-level ops (overwriting)."""
    for op in function.body.block.ops:
        op.attributes.pop(BUFFER_ATTR, None)
        entries = [_buffer_entry(plan, result) for result in op.results]
        if not any(entry.data for entry in entries):
            continue
        op.attributes[BUFFER_ATTR] = entries[0] if len(entries) == 1 else ArrayAttr(entries)
    function.attributes[PLAN_ATTR] = DictionaryAttr(
        {
            "arena_bytes": _integer(plan.arena_bytes),
            "unplanned_bytes": _integer(plan.unplanned_bytes),
            "buffers": _integer(len(plan.buffers)),
            "alignment": _integer(plan.alignment),
        }
    )


def forget_memory_plan(function: func.FuncOp) -> None:
    """Removes the plan's attributes from `function` and every op in it.

    Passes that regroup a function's ops (graph-fuse, graph-inline-fusion) call it: the plan no
    longer describes the function's steps, and graph-plan-memory must run again.
    """
    function.attributes.pop(PLAN_ATTR, None)
    for op in function.body.walk():
        op.attributes.pop(BUFFER_ATTR, None)


def buffer_of(value: OpResult) -> tuple[int, int] | None:
    """(offset, size) of `value` in its function's arena, read from `mlc.buffer`; None if none."""
    attribute = value.op.attributes.get(BUFFER_ATTR)
    if isinstance(attribute, ArrayAttr):
        attribute = attribute.data[value.index]
    if not isinstance(attribute, DictionaryAttr) or not attribute.data:
        return None
    offset, size = attribute.data["offset"], attribute.data["size"]
    assert isinstance(offset, IntegerAttr) and isinstance(size, IntegerAttr)
    return offset.value.data, size.value.data


def format_bytes(count: int) -> str:
    """`512 B`, `12.0 KiB`, `3.5 MiB`, ..."""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def format_report(name: str, plan: MemoryPlan) -> str:
    """`@f: peak 12.0 KiB in an arena, 40.0 KiB unplanned (3.33x less), 7 intermediates`."""
    ratio = f" ({plan.unplanned_bytes / plan.arena_bytes:.2f}x less)" if plan.arena_bytes else ""
    count = len(plan.buffers)
    plural = "" if count == 1 else "s"
    return (
        f"@{name}: peak {format_bytes(plan.arena_bytes)} in an arena, "
        f"{format_bytes(plan.unplanned_bytes)} unplanned{ratio}, {count} intermediate{plural}"
    )


@dataclass(frozen=True)
class RecordedPlan:
    """A function's plan as its attributes record it: the arena, and the place of each result."""

    arena_bytes: int
    alignment: int
    places: dict[SSAValue, tuple[int, int]]
    """(offset, size in bytes) of each top-level result in the arena."""


def _plan_integer(entry: DictionaryAttr, key: str, owner: Operation, attribute: str) -> int:
    value = entry.data.get(key)
    if not isinstance(value, IntegerAttr) or value.value.data < 0:
        raise PassFailure(owner, f"'{attribute}' needs a non-negative integer '{key}', got {entry}")
    return value.value.data


def _recorded_places(op: Operation) -> list[tuple[OpResult, DictionaryAttr]]:
    """The `mlc.buffer` entries of `op` that place a result (`{}` places none), checked for form."""
    attribute = op.attributes.get(BUFFER_ATTR)
    if attribute is None:
        return []
    entries = attribute.data if isinstance(attribute, ArrayAttr) else (attribute,)
    if isinstance(attribute, ArrayAttr) and len(entries) != len(op.results):
        raise PassFailure(op, f"'{BUFFER_ATTR}' has {len(entries)} entries for {len(op.results)} results")
    if len(entries) != len(op.results) or not all(isinstance(e, DictionaryAttr) for e in entries):
        raise PassFailure(op, f"'{BUFFER_ATTR}' must be one {{offset, size}} dictionary per result, got {attribute}")
    return [(result, entry) for result, entry in zip(op.results, entries) if entry.data]  # type: ignore[misc]


def _checked_place(result: OpResult, entry: DictionaryAttr, arena_bytes: int, alignment: int) -> tuple[int, int]:
    op = result.op
    offset = _plan_integer(entry, "offset", op, BUFFER_ATTR)
    size = _plan_integer(entry, "size", op, BUFFER_ATTR)
    which = f"result #{result.index}" if len(op.results) > 1 else "the result"
    expected = _tensor_bytes(result.type)
    if expected is None:
        raise PassFailure(op, f"the memory plan places {which}, a {result.type}, which has no static size in bytes")
    if size != expected:
        raise PassFailure(
            op,
            f"the memory plan gives {which} {size} bytes, but its type {result.type} has {expected}; "
            "the plan is stale (run graph-plan-memory again)",
        )
    element_bytes = byte_width(result.type.element_type)  # type: ignore[attr-defined]
    for needed, what in ((alignment, "the plan's alignment"), (element_bytes, "its element size")):
        if offset % needed:
            raise PassFailure(op, f"the memory plan puts {which} at offset {offset}, not a multiple of {what} ({needed})")
    if offset + size > arena_bytes:
        raise PassFailure(
            op, f"the memory plan puts {which} at bytes [{offset}, {offset + size}), past the arena's {arena_bytes} bytes"
        )
    return offset, size


def read_recorded_plan(function: func.FuncOp) -> RecordedPlan | None:
    """The plan recorded on `function` and its top-level ops, each place checked against the value
    it places (see the module docstring); None when the function has no `mlc.memory_plan`."""
    summary = function.attributes.get(PLAN_ATTR)
    if summary is None:
        return None
    if not isinstance(summary, DictionaryAttr):
        raise PassFailure(function, f"'{PLAN_ATTR}' must be a dictionary, got {summary}")
    arena_bytes = _plan_integer(summary, "arena_bytes", function, PLAN_ATTR)
    alignment = _plan_integer(summary, "alignment", function, PLAN_ATTR)
    too_large = buffer_size_problem((arena_bytes,), i8, f"memref<{arena_bytes}xi8>")
    if too_large is not None:
        raise PassFailure(function, f"'{PLAN_ATTR}': the arena {too_large}")
    try:
        check_alignment(alignment)
    except ValueError as error:
        raise PassFailure(function, f"'{PLAN_ATTR}': {error}") from None
    places: dict[SSAValue, tuple[int, int]] = {}
    for op in function.body.block.ops:
        for result, entry in _recorded_places(op):
            places[result] = _checked_place(result, entry, arena_bytes, alignment)
    for op in function.body.block.ops:
        if isinstance(op, graph.ReshapeOp) and op.result in places and places.get(op.x) != places[op.result]:
            source = places.get(op.x)
            where = f"at offset {source[0]}" if source is not None else "outside the arena"
            raise PassFailure(
                op,
                f"a reshape shares its operand's bytes, but the memory plan puts it at offset "
                f"{places[op.result][0]} and its operand {where}",
            )
    return RecordedPlan(arena_bytes, alignment, places)
