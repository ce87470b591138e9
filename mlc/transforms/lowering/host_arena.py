"""The arena of a host function: its intermediates as views of one allocation, at planned offsets.

convert-graph-to-tile builds host functions; when the graph function carries a memory plan
(graph-plan-memory's `mlc.buffer` / `mlc.memory_plan`, read and checked by
`analysis/memory_plan.read_recorded_plan`), a `HostArena` places each planned kernel output in one
allocation instead of a `memref.alloc` of its own:

    %arena = memref.alloc() {alignment = 256 : i64} : memref<8192xi8>
    %c4096 = arith.constant 4096 : index
    %0 = memref.view %arena[%c4096][] : memref<8192xi8> to memref<1024xf32>

(upstream MLIR's `memref.view`: a byte shift into a 1-d i8 buffer). The arena is emitted at the
start of the function, once, when the first view needs it, and is aligned to the plan's alignment
or the host's own (256 bytes), whichever is larger, so every view is aligned to the plan's
alignment. What the runtime does with it (one arena per compiled program, allocated with the
program's other intermediates) is `mlc/runtime/plan.py`'s business. `memref.view` has no memory
effect, so `cse` later merges two views of one offset and type into one (the same bytes either
way).

Safety. The plan's offsets are only correct for the order in which the kernels run: two buffers
may share bytes only when no kernel runs between the first write of one and the last read of the
other. `check_lifetimes` checks exactly that on the built host function, whatever the plan's
history (edited by hand, made for another grouping, stale): each view is live from the first to
the last launch that passes it (its writer, then its readers; a reshape outside every kernel
passes the same view), and two views live at a common launch must not share a byte. A violation
is a `PassFailure` naming the graph op whose value would be overwritten. Quadratic in the number
of views that are live together.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, i8
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.diagnostics import PassFailure
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.memory_plan import RecordedPlan


@dataclass
class _View:
    value: SSAValue
    """What the view holds: a kernel output of the graph function (for diagnostics)."""
    offset: int
    size: int


@dataclass
class HostArena:
    """Emits the arena and its views into one host function (see the module docstring)."""

    plan: RecordedPlan
    function: func.FuncOp
    """The host function being built."""
    host_alignment: int
    arena: SSAValue | None = None
    places: dict[SSAValue, tuple[int, int]] = field(default_factory=dict)
    """The plan's places, and those of the values fusions yield (`follow_fusions`)."""
    views: dict[SSAValue, _View] = field(default_factory=dict)
    """By the memref value of each view."""

    def __post_init__(self) -> None:
        self.places = dict(self.plan.places)

    def follow_fusions(self, fusions: list[graph.FusionOp]) -> None:
        """Gives what each fusion yields the place of the fusion's result; call it before the
        fusions are inlined (inlining replaces their results by the yielded values). A reshape
        leaving the fusion is a view of its operand, which takes the place too; a yielded body
        argument is the fusion's operand, placed (or not) on its own."""
        for fusion in fusions:
            inside = set(fusion.body.block.ops)
            terminator = fusion.body.block.last_op
            assert terminator is not None
            for result, value in zip(fusion.results, terminator.operands):
                place = self.places.get(result)
                while place is not None and value.owner in inside and value not in self.places:
                    self.places[value] = place
                    value = value.owner.x if isinstance(value.owner, graph.ReshapeOp) else value

    def place_of(self, value: SSAValue) -> tuple[int, int] | None:
        """(offset, size) of `value` in the arena, or None when the plan does not place it."""
        return self.places.get(value)

    def view(self, builder: Builder, value: SSAValue, element_type: Attribute, shape: tuple[int, ...]) -> SSAValue:
        """A view of the arena holding `value` (placed by the plan), built at `builder`'s point."""
        place = self.place_of(value)
        assert place is not None, "a view of a value the plan does not place"
        offset, size = place
        shift = builder.insert(arith.ConstantOp(IntegerAttr(offset, IndexType())))
        view = builder.insert(memref.ViewOp(self._arena(), shift, [], MemRefType(element_type, shape)))
        self.views[view.result] = _View(value, offset, size)
        return view.result

    def _arena(self) -> SSAValue:
        if self.arena is None:
            alignment = max(self.plan.alignment, self.host_alignment)
            allocation = memref.AllocOp.get(i8, alignment, (self.plan.arena_bytes,))
            allocation.memref.name_hint = "arena"
            Builder(InsertPoint.at_start(self.function.body.block)).insert(allocation)
            self.arena = allocation.memref
        return self.arena

    def check_lifetimes(self) -> None:
        """Refuses views that share bytes while both are live (see the module docstring)."""
        launches = [op for op in self.function.body.block.ops if isinstance(op, tile.LaunchOp)]
        spans: dict[SSAValue, tuple[int, int]] = {}
        for index, launch in enumerate(launches):
            for operand in launch.arguments:
                if operand in self.views:
                    first, _ = spans.get(operand, (index, index))
                    spans[operand] = (first, index)
        live = sorted(spans, key=lambda v: (self.views[v].offset, spans[v]))
        for position, one in enumerate(live):
            for other in live[position + 1 :]:
                a, b = self.views[one], self.views[other]
                if b.offset >= a.offset + a.size:
                    break  # sorted by offset: no later view starts inside `a`
                if b.size and spans[one][0] <= spans[other][1] and spans[other][0] <= spans[one][1]:
                    _report_overlap(a, b, spans[one], spans[other], launches)


def _defining_op(value: SSAValue) -> Operation:
    owner = value.owner
    assert isinstance(owner, Operation)
    return owner


def _report_overlap(
    a: _View, b: _View, span_a: tuple[int, int], span_b: tuple[int, int], launches: list[tile.LaunchOp]
) -> None:
    def kernel(index: int) -> str:
        return f"'{launches[index].kernel.root_reference.data}'"

    first, last = max(span_a[0], span_b[0]), min(span_a[1], span_b[1])
    during = f"kernel {kernel(first)}" if first == last else f"kernels {kernel(first)} to {kernel(last)}"
    name = f" %{b.value.name_hint}" if b.value.name_hint else ""
    raise PassFailure(
        _defining_op(a.value),
        f"the memory plan puts this value (written by kernel {kernel(span_a[0])}) at bytes [{a.offset}, "
        f"{a.offset + a.size}) of the arena and the '{_defining_op(b.value).name}'{name} that kernel "
        f"{kernel(span_b[0])} writes at bytes [{b.offset}, {b.offset + b.size}), but both are live during "
        f"{during}; the plan does not fit the kernels (run graph-plan-memory again)",
    )
