"""gpu-insert-barriers: the `mlc_gpu.barrier`s that order every shared-memory hazard between threads.

Two threads of a block that touch one element of shared memory, at least one of them writing,
need a barrier between the two accesses: read after write (RAW), write after read (WAR), write
after write (WAW). The pass finds these hazards in each `mlc_gpu.func` and inserts barriers
(marked `{inserted}`) that order them; barriers already in the kernel stay and are trusted.

Analysis (Triton's Membar, on structured control flow): walk the kernel in program order with the
set of *pending* accesses, those since the last barrier. A barrier clears the set; an access that
may conflict with a pending one (the same allocation, a write on either side, and two different
threads possibly touching one element: `shared_memory_accesses.py` is the alias analysis) is a
hazard; otherwise it joins the set. `scf.if` unites the sets at the ends of its arms (a missing
`else` is the set at the `if`; an arm no thread takes, by a condition known thread by thread, is
skipped). Loops (`scf.for`, `scf.while`, and any op with regions the pass does not know, as if its
regions ran in any order, any number of times) are walked to a fixed point: the set at the end of
the body, marked as having crossed the loop's back edge, joins the set at its entry until nothing
changes; an access that crossed a back edge may collide where it did not before (the next
iteration overwrites what this one read), as indices that depend on the loop have changed. The
sets only grow and are finite, so this terminates. A loop with constant bounds that runs at least
once exits with the body's set only.

Placement: walk until the first hazard, place one barrier, walk again, until no hazard is left.
The barrier goes right before the later access (as Membar), then is hoisted before the outermost
enclosing loop whose current run the earlier access precedes, so that it runs once per run of the
loop rather than once per iteration (a matmul's K loop: once per tile, not once per element). At
the end each inserted barrier is dropped, one at a time, if the walk without it finds no hazard:
every barrier left is one the analysis needs.

Divergence: a barrier must be reached by every thread of the block, so none goes inside control
flow that depends on the thread id (`ThreadAnalysis.is_divergent_control`: an `scf.if` on a
thread-dependent condition, a loop with thread-dependent bounds, an unknown op with regions). A
hazard whose later access is in there gets its barrier before the outermost such op, which the
earlier access must precede (it is outside, or was in an earlier iteration of a loop around it);
otherwise no barrier every thread reaches can order the two, and the pass reports an error naming
both (move the accesses out of the branch, or split it between them).

Async copies (`loop.async_copy`): issuing one is a write that must be ordered after what is
pending (a copy over a stage other threads may still read needs a barrier before it); the copy
then stays *in flight*: a barrier does not order its data, since it may land at any time until a
`loop.async_wait` (which this pass treats as completing every copy in flight, the conservative
choice for the hazards that follow). After the wait the copy is an ordinary pending write, so
the reads of its data by other threads get a barrier after the wait. A read before the wait is
not something a barrier can fix; the interpreter reports it (`mlc/interpreter/async_copy.py`).
Warpgroup products (`loop.wgmma`) are reads in flight likewise, until a `loop.wgmma_wait`; then
the writes that follow (the next copies into their stage) get a barrier after it. Bulk tensor
copies (`loop.tma_load`) are writes in flight until a `loop.mbarrier_wait`, which completes them
for the waiting threads (no barrier needed after it; which barrier and phase is the interpreter's
to check); issuing one over a stage other threads read still needs a barrier before it, and an
mbarrier's initialization one before the barrier's first use by other threads.

What the analysis models: shared memory only (memref space 3: allocations and globals). Not global
memory: ordering it between the thread loops of a block is what convert-loop-to-gpu's barriers do,
and between blocks no barrier can. Not `mlc_gpu.shuffle`: it exchanges registers within a warp,
touches no memory and orders nothing in shared memory. Accesses the pass does not understand count
as reads and writes of every allocation they can reach (see `shared_memory_accesses.py`).

Warps: a `loop.warp_sync` orders the accesses of each warp's lanes before it against those after
it (what `__syncwarp` does), so a pending access that a warp sync follows collides only with
accesses of threads in other warps (a warp's band of a tile staged in shared memory and read back
by its own lanes needs no barrier; loop-stage-epilogue relies on it inside warp roles).

Limits: greedy placement then pruning gives an irredundant set of barriers, not always the
smallest one; the analysis is path-insensitive to uniform conditions (two branches on the block id
are not known to agree); a loop counts its back edge even if it runs once; a thread's own element
is recognised only through the same allocation at indices of the same form (not through views).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.gpu import ops as gpu
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.shared_memory_accesses import Access, SharedMemoryAccesses
from mlc.transforms.analysis.thread_analysis import ThreadAnalysis

INSERTED = "inserted"
"""The unit attribute that marks the barriers this pass inserted."""


@dataclass(frozen=True)
class Pending:
    """An access since the last barrier, and the loops whose back edge lies between it and now."""

    access: Access
    crossed_loops: frozenset[Operation]
    in_flight: bool = False
    """An async copy not yet completed by a `loop.async_wait`: no barrier orders its write."""
    landed: Operation | None = None
    """For an async copy, the wait that completed it: where its write happens, for placement."""
    warp_synced: bool = False
    """A `loop.warp_sync` lies between it and now: only threads of other warps can race with it."""


State = frozenset[Pending]
NOTHING_PENDING: State = frozenset()


@dataclass(frozen=True)
class Hazard:
    """`later` may touch an element that the `earlier` pending accesses touched in another thread."""

    later: Access
    earlier: tuple[Pending, ...]

    def kind(self, earlier: Access) -> str:
        if earlier.is_write:
            return "WAW" if self.later.is_write else "RAW"
        return "WAR"


class _HazardFound(Exception):
    def __init__(self, hazard: Hazard):
        super().__init__()
        self.hazard = hazard


class HazardWalk:
    """A program-order walk of a kernel with barriers before the ops in `barriers_before`."""

    def __init__(self, accesses: SharedMemoryAccesses, barriers_before: set[Operation]):
        self.accesses = accesses
        self.barriers_before = barriers_before

    def first_hazard(self, function: gpu.FuncOp) -> Hazard | None:
        try:
            self.block(function.body.block, NOTHING_PENDING)
        except _HazardFound as found:
            return found.hazard
        return None

    def block(self, block: Block, state: State) -> State:
        for op in block.ops:
            state = self.operation(op, state)
        return state

    def operation(self, op: Operation, state: State) -> State:
        if op in self.barriers_before or isinstance(op, gpu.BarrierOp):
            state = frozenset(pending for pending in state if pending.in_flight)
        if isinstance(op, loop.MbarrierWaitOp):  # the waiting threads see the bulk copies' data: nothing to order
            state = frozenset(p for p in state if not (p.in_flight and isinstance(p.access.op, loop.TmaLoadOp)))
        if isinstance(op, loop.WarpSyncOp):  # each warp's lanes meet: their accesses so far are ordered
            state = frozenset(Pending(p.access, p.crossed_loops, p.in_flight, p.landed, not p.in_flight) for p in state)
        if isinstance(op, loop.AsyncWaitOp | loop.WgmmaWaitOp):
            kind = loop.AsyncCopyOp if isinstance(op, loop.AsyncWaitOp) else loop.WgmmaOp
            state = frozenset(Pending(p.access, p.crossed_loops, False, op) if p.in_flight and isinstance(p.access.op, kind) else p for p in state)
        state = self.access(op, state)
        return self.region_op(op, state) if op.regions else state

    def access(self, op: Operation, state: State) -> State:
        accesses = self.accesses.accesses_of(op)
        if not accesses:
            return state  # most ops: no copy of the pending set
        for access in accesses:
            earlier = [
                pending
                for pending in state
                if not pending.in_flight
                and (pending.access.is_write or access.is_write)
                and self.accesses.may_collide(pending.access, access, pending.crossed_loops, across_warps=pending.warp_synced)
            ]
            if earlier:
                earlier.sort(key=lambda pending: (self.accesses.program_order(pending.access), len(pending.crossed_loops)))
                raise _HazardFound(Hazard(access, tuple(earlier)))
        return state | {Pending(access, frozenset(), access.is_async) for access in accesses}

    def region_op(self, op: Operation, state: State) -> State:
        if isinstance(op, scf.IfOp):
            return self.branches(op, state)
        if isinstance(op, scf.WhileOp):
            return self.loop(op, [op.before_region.block, op.after_region.block], state, exit_after=1)
        blocks = [block for region in op.regions for block in region.blocks]
        if isinstance(op, scf.ForOp):
            return self.loop(op, blocks, state, exit_after=len(blocks) if self.runs_at_least_once(op) else 0)
        return self.unknown_regions(op, blocks, state)

    def branches(self, op: scf.IfOp, state: State) -> State:
        """The union of both arms, but only of an arm some thread takes when the condition is known."""
        taken = self.accesses.threads.condition_mask(op.cond)
        arms = []
        if taken is None or taken.any():
            arms.append(self.block(op.true_region.block, state))
        if taken is None or not taken.all():
            arms.append(self.block(op.false_region.block, state) if op.false_region.blocks else state)
        return frozenset().union(*arms)

    def runs_at_least_once(self, op: scf.ForOp) -> bool:
        threads = self.accesses.threads
        lower, upper, step = (threads.constant(bound) for bound in (op.lb, op.ub, op.step))
        return lower is not None and upper is not None and step is not None and step > 0 and upper > lower

    def loop(self, op: Operation, blocks: list[Block], entry: State, exit_after: int) -> State:
        """Blocks run in sequence, again and again; the loop exits after `exit_after` of them
        (0: before the first, so also when it never runs)."""
        head = entry
        while True:
            exits, state = [head], head
            for block in blocks:
                state = self.block(block, state)
                exits.append(state)
            back_edge = _crossing(state, op)
            if back_edge <= head:
                return exits[exit_after] if exit_after else head | state
            head = head | back_edge

    def unknown_regions(self, op: Operation, blocks: list[Block], entry: State) -> State:
        """Regions of an unknown op: any block may run after any other, any number of times."""
        head = entry
        while True:
            reached = frozenset().union(*(self.block(block, head) for block in blocks))
            back_edge = _crossing(reached, op)
            if back_edge <= head:
                return head | reached
            head = head | back_edge


def _crossing(state: State, loop: Operation) -> State:
    return frozenset(Pending(p.access, p.crossed_loops | {loop}, p.in_flight, p.landed, p.warp_synced) for p in state)


def _ancestors(op: Operation) -> list[Operation]:
    """The ops enclosing `op` inside its kernel, innermost first."""
    ancestors = []
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, gpu.FuncOp):
        ancestors.append(parent)
        parent = parent.parent_op()
    return ancestors


def _precedes(pending: Pending, op: Operation) -> bool:
    """Whether the pending access happened before the current run of `op` began: it is outside
    `op`, or it reached here around the back edge of a loop enclosing `op`."""
    return not op.is_ancestor(pending.landed or pending.access.op) or any(
        loop is not op and loop.is_ancestor(op) for loop in pending.crossed_loops
    )


def barrier_position(hazard: Hazard, threads: ThreadAnalysis) -> Operation:
    """The op to place the barrier before that orders `hazard`.

    Right before the later access, unless that is in divergent control flow (then before its
    outermost divergent op, which the earlier access must precede); then hoisted before the
    outermost enclosing loop whose current run the earlier access precedes, so that the barrier
    runs once per run of the loop rather than once per iteration. Of the earlier accesses, the one
    needing the innermost barrier decides: that barrier orders the others too.
    """
    later = hazard.later.op
    divergent = [op for op in _ancestors(later) if threads.is_divergent_control(op)]
    start = divergent[-1] if divergent else later
    positions = []
    for earlier in hazard.earlier:
        if divergent and not _precedes(earlier, start):
            raise _inside_divergence_error(hazard, earlier.access, start)
        position = start
        for ancestor in _ancestors(start):
            if not _precedes(earlier, ancestor):
                break
            if isinstance(ancestor, scf.ForOp | scf.WhileOp):
                position = ancestor
        positions.append(position)
    return max(positions, key=lambda op: len(_ancestors(op)))


def _inside_divergence_error(hazard: Hazard, earlier: Access, divergent: Operation) -> PassFailure:
    return PassFailure(
        hazard.later.op,
        f"shared-memory {hazard.kind(earlier)} hazard with '{earlier.op.name}' inside control flow that "
        f"depends on the thread id ('{divergent.name}'): no barrier there is reached by every thread "
        "of the block (move the accesses out of it, or split it between them)",
    )


def plan_barriers(function: gpu.FuncOp) -> list[Operation]:
    """The ops of `function` to place a barrier before, in program order."""
    threads = ThreadAnalysis(function)
    accesses = SharedMemoryAccesses(threads)
    barriers: set[Operation] = set()
    while (hazard := HazardWalk(accesses, barriers).first_hazard(function)) is not None:
        position = barrier_position(hazard, threads)
        assert position not in barriers, "a barrier before an op clears what is pending there"
        barriers.add(position)
    for op in [op for op in function.walk() if op in barriers]:
        without = barriers - {op}
        if HazardWalk(accesses, without).first_hazard(function) is None:
            barriers = without
    return [op for op in function.walk() if op in barriers]


def insert_barriers(function: gpu.FuncOp) -> int:
    """Inserts the barriers `function` needs; returns how many."""
    positions = plan_barriers(function)
    for op in positions:
        barrier = gpu.BarrierOp()
        barrier.attributes[INSERTED] = UnitAttr()
        Rewriter.insert_op(barrier, InsertPoint.before(op))
    return len(positions)


@dataclass(frozen=True)
class GpuInsertBarriers(ModulePass):
    """Insert the mlc_gpu.barriers that order shared-memory hazards (RAW, WAR, WAW) between threads."""

    name = "gpu-insert-barriers"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, gpu.FuncOp)]:
            insert_barriers(function)
            function.attributes.pop(attributes.BLOCK_SYNCHRONOUS.name, None)
