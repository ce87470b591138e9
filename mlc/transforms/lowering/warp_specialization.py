"""Warp specialization of a TMA pipeline: a producer warpgroup issues, the consumers compute.

`loop-promote-shared{tma=true warp-specialize=true}` turns the TMA skeleton `tma_pipeline.py` built
(thread 0 issuing each stage's bulk copies on one mbarrier per stage, every thread waiting on it,
the issue a few iterations ahead, a `bar.sync` per iteration for the stage it refills) into the
producer/consumer form of bench/tma_matmul.py. With T threads (whole warpgroups) and S stages:

    <the thread loop's ops before the pipeline, unchanged>        (now run by T + 128 threads)
    scf.if %thread == 0 { init %bars[j] ("full"), 1; init %empty[j], T / 32 }  for each stage j
    scf.if %thread >= T {                                      // the producer warpgroup
      scf.if %thread == T {
        for k = lb to ub step s {
          i = (k - lb) / s;  loop.mbarrier_wait %empty[i mod S], (i / S + 1) mod 2
          loop.mbarrier_arrive %bars[i mod S] expect_tx B;  loop.tma_load ... (the issue's copies for k)
        }
      }
    } else {                                                   // the T consumer threads
      for k ... { wait %bars[i mod S], (i / S) mod 2; the products; loop.wgmma_wait 1;
                  scf.if i > 0 { loop.warp_sync;
                                 scf.if %thread mod 32 == 0 { loop.mbarrier_arrive %empty[(i - 1) mod S] } } }
      <the rest of the thread loop's body: the last wait, the epilogue>
    } {mlc.warp_roles = array<i64: 40, C>}

The producer runs up to S stages ahead, each refill waiting for the *empty* phase that the
consumers' release of that stage completes (the first use of each stage passes at once: parity 1
of a barrier that has not completed a phase is the phase "before" it). Each consumer warp
arrives on *empty* once its product that read the stage has completed (`wgmma_wait 1` completes
the previous iteration's): lane 0 arrives for the warp after `loop.warp_sync`, through which it
acquired its lanes' accesses (what the interpreter's race checker orders), so the barrier counts
T / 32 arrivals instead of T (fewer arrivals serialized on the barrier's shared word).
No `bar.sync` is left in the loop: `gpu-insert-barriers` orders nothing across the two roles (the
mbarriers do; the interpreter checks them), and places one barrier before the roles for the
mbarriers' initialization and what the ops before the pipeline stage in shared memory.
Registers: the producer gives back down to 40 (`setmaxnreg.dec`), the consumers take
C = min(232, (65536 - 40 * 128) / T rounded down to 8); the kernel gets
`mlc.min_blocks_per_multiprocessor = 1`, without which ptxas ignores `setmaxnreg` (C7508).

Preconditions (else the kernel keeps the non-specialized pipeline, which is correct too): T a
multiple of 128; the K loop directly in the thread loop with its products kept in flight (one
`loop.wgmma_wait 1` in its body); the issuing branch's copies depend only on the counter, the
stage and values defined before the loop; every memory access among the ops before the pipeline
is in an `scf.if` on `%thread < c` (c <= T) or `%thread == c` (c < T), so that the producer's 128
extra threads skip it.
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, MemRefType, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.shared_memory_promotion import thread_loops
from mlc.transforms.lowering.async_pipeline import emitter_before
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.tma_pipeline import issue_arrival, issue_counter

WARPGROUP = 128
WARP = 32
PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = 232
REGISTER_FILE = 65536
"""32-bit registers per multiprocessor (sm_90), shared by one block of T + 128 threads."""


def consumer_registers(consumers: int) -> int:
    """The consumers' `setmaxnreg` count: what the file leaves them beside a 40-register producer."""
    return min(CONSUMER_REGISTERS, (REGISTER_FILE - PRODUCER_REGISTERS * WARPGROUP) // consumers // 8 * 8)


def specialize_warps(kernel: loop.KernelOp) -> int:
    """Rewrites the TMA pipelines of a `mlc.tma` kernel's thread loops into producer and consumer
    roles where the preconditions hold (elsewhere nothing changes); returns how many."""
    if attributes.TMA.read(kernel) is None:
        return 0
    skeletons = [found for thread_loop in thread_loops(kernel) if (found := _Skeleton.find(thread_loop)) is not None]
    for skeleton in skeletons:
        skeleton.rewrite()
    if skeletons:
        attributes.MIN_BLOCKS_PER_MULTIPROCESSOR.write(kernel, IntegerAttr(1, i64))
    return len(skeletons)


class _Skeleton:
    """The ops of the non-specialized TMA pipeline in a thread loop's body."""

    def __init__(self, thread_loop: loop.ParallelOp, init: scf.IfOp, prologue: list[scf.IfOp], scope: scf.ForOp, issue: scf.IfOp, wait: loop.MbarrierWaitOp, landed: loop.WgmmaWaitOp):
        self.thread_loop, self.init, self.prologue, self.scope, self.issue, self.wait, self.landed = thread_loop, init, prologue, scope, issue, wait, landed
        self.consumers = thread_loop.trip_count
        self.full = wait.barrier
        self.stages = self.full.type.get_shape()[0]  # type: ignore[attr-defined]

    @staticmethod
    def find(thread_loop: loop.ParallelOp) -> _Skeleton | None:
        body = list(thread_loop.body.block.ops)
        scopes = [op for op in body if isinstance(op, scf.ForOp) and any(isinstance(inner, loop.MbarrierWaitOp) for inner in op.body.block.ops)]
        if len(scopes) != 1 or thread_loop.trip_count % WARPGROUP:
            return None
        scope = scopes[0]
        wait = next(op for op in scope.body.block.ops if isinstance(op, loop.MbarrierWaitOp))
        inits = [op for op in body if isinstance(op, scf.IfOp) and any(isinstance(inner, loop.MbarrierInitOp) for inner in op.true_region.block.ops)]
        issues = [op for op in scope.body.block.ops if isinstance(op, scf.IfOp) and issue_arrival(op) is not None]
        landed = [op for op in scope.body.block.ops if isinstance(op, loop.WgmmaWaitOp) and op.groups_in_flight == 1]
        if len(inits) != 1 or len(issues) != 1 or len(landed) != 1 or body.index(inits[0]) > body.index(scope):
            return None
        prologue = [op for op in body[: body.index(scope)] if isinstance(op, scf.IfOp) and issue_arrival(op) is not None]
        skeleton = _Skeleton(thread_loop, inits[0], prologue, scope, issues[0], wait, landed[0])
        before = [op for op in body[: body.index(scope)] if op is not inits[0] and op not in prologue]
        return skeleton if skeleton._copies_are_movable() and skeleton._prefix_skips_extra_threads(before) else None

    def _copies_are_movable(self) -> bool:
        """The issuing branch's ops use the counter, the stage and values from outside the loop only."""
        inside = {op for op in self.issue.walk() if op is not self.issue}
        allowed = {issue_counter(self.issue), issue_arrival(self.issue).indices[0]}  # type: ignore[union-attr]
        for op in inside:
            for operand in op.operands:
                owner = operand.owner
                defining = owner if isinstance(owner, Operation) else owner.parent_op()
                if operand in allowed or defining in inside or not self.scope.is_ancestor(defining):  # type: ignore[arg-type]
                    continue
                return False
        return True

    def _prefix_skips_extra_threads(self, prefix: list[Operation]) -> bool:
        """Every memory access before the pipeline sits in a branch the threads >= T skip."""
        for op in prefix:
            for inner in op.walk():
                if _accesses_memory(inner) and not self._guarded(inner, op):
                    return False
        return True

    def _guarded(self, op: Operation, top: Operation) -> bool:
        parent = op.parent_op()
        while parent is not None and parent is not self.thread_loop:
            if isinstance(parent, scf.IfOp) and _in_then_region(parent, op) and self._excludes_extra_threads(parent.cond):
                return True
            parent = parent.parent_op()
        return False

    def _excludes_extra_threads(self, condition: SSAValue) -> bool:
        compare = condition.owner
        if not isinstance(compare, arith.CmpiOp) or compare.lhs != self.thread_loop.induction_variable:
            return False
        bound = compare.rhs.owner
        if not isinstance(bound, arith.ConstantOp) or not isinstance(bound.value, IntegerAttr):
            return False
        value = bound.value.value.data
        return (compare.predicate.value.data == 6 and value <= self.consumers) or (compare.predicate.value.data == 0 and value < self.consumers)

    # The rewrite ---------------------------------------------------------------------------------

    def rewrite(self) -> None:
        empty = self._empty_barriers()
        for issue in self.prologue:
            _erase_with_dead_operands(issue)
        roles = self._roles()
        self._produce(roles.true_region.block, empty)
        self._consume(roles.false_region.block, empty)
        self.thread_loop.properties["upper_bound"] = IntegerAttr(self.consumers + WARPGROUP, i64)

    def _empty_barriers(self) -> SSAValue:
        """`%empty`, beside `%bars`, each initialized (with the full ones) to T / 32 arrivals."""
        full_allocation = self.full.owner
        assert isinstance(full_allocation, memref.AllocaOp)
        allocation = memref.AllocaOp.get(i64, 8, [self.stages], memory_space=IntegerAttr(loop.SHARED_MEMORY_SPACE, i64))
        allocation.memref.name_hint = "empty"
        Rewriter.insert_op(allocation, InsertPoint.after(full_allocation))
        emitter = emitter_before(self.init.true_region.block.last_op)  # type: ignore[arg-type]
        for stage in range(self.stages):
            emitter.builder.insert(loop.MbarrierInitOp(allocation.memref, [emitter.index(stage)], self.consumers // WARP))
        return allocation.memref

    def _roles(self) -> scf.IfOp:
        """`scf.if %thread >= T {} else {}` before the K loop, the loop and all after it moved into
        the else-region."""
        emitter = emitter_before(self.scope)
        producer = emitter.emit(arith.CmpiOp(self.thread_loop.induction_variable, emitter.index(self.consumers), "uge"))
        producer.name_hint = "producer"
        consumers, producers = Block(), Block()
        producers.add_op(scf.YieldOp())
        roles = scf.IfOp(producer, [], Region(producers), Region(consumers))
        registers = [PRODUCER_REGISTERS, consumer_registers(self.consumers)]
        attributes.WARP_ROLES.write(roles, DenseArrayBase.from_list(i64, registers))
        emitter.builder.insert(roles)
        following: Operation | None = self.scope
        while following is not None and not following.has_trait(IsTerminator):
            after = following.next_op
            following.detach()
            consumers.add_op(following)
            following = after
        consumers.add_op(scf.YieldOp())
        return roles

    def _produce(self, block: Block, empty: SSAValue) -> None:
        """The elected thread's loop: wait for the stage's release, then the issue's copies."""
        emitter = emitter_before(block.last_op)  # type: ignore[arg-type]
        elected = emitter.emit(arith.CmpiOp(self.thread_loop.induction_variable, emitter.index(self.consumers), "eq"))
        body = Block(arg_types=[self.scope.body.block.args[0].type])
        counter = body.args[0]
        counter.name_hint = "k"
        inner = Emitter(body)
        iteration = self._iteration(inner, counter)
        stage = inner.emit(arith.RemUIOp(iteration, inner.index(self.stages)))
        use = inner.emit(arith.DivUIOp(iteration, inner.index(self.stages)))
        parity = inner.emit(arith.RemUIOp(inner.add(use, inner.index(1)), inner.index(2)))
        stage.name_hint, parity.name_hint = "stage", "released"
        inner.builder.insert(loop.MbarrierWaitOp(empty, [stage], parity))
        mapping: dict[SSAValue, SSAValue] = {issue_counter(self.issue): counter, issue_arrival(self.issue).indices[0]: stage}  # type: ignore[union-attr]
        for op in list(self.issue.true_region.block.ops)[:-1]:
            inner.builder.insert(op.clone(value_mapper=mapping))
        inner.builder.insert(scf.YieldOp())
        produce = scf.ForOp(self.scope.lb, self.scope.ub, self.scope.step, [], Region(body))
        elected_block = Block()
        elected_block.add_ops([produce, scf.YieldOp()])
        emitter.builder.insert(scf.IfOp(elected, [], Region(elected_block)))

    def _consume(self, block: Block, empty: SSAValue) -> None:
        """The K loop without its issue, each iteration releasing the stage read one before it
        (one arrival per warp: its lane 0, after the warp's lanes met)."""
        _erase_with_dead_operands(self.issue)
        landed_next = self.landed.next_op
        assert landed_next is not None
        emitter = emitter_before(landed_next)
        iteration = self._iteration(emitter, self.scope.body.block.args[0])
        later = emitter.emit(arith.CmpiOp(iteration, emitter.index(0), "ugt"))
        release = Block()
        inner = Emitter(release)
        previous = inner.emit(arith.RemUIOp(inner.add(self.wait.indices[0], inner.index(self.stages - 1)), inner.index(self.stages)))
        inner.builder.insert(loop.WarpSyncOp())
        lane = inner.emit(arith.RemUIOp(self.thread_loop.induction_variable, inner.index(WARP)))
        leader = inner.emit(arith.CmpiOp(lane, inner.index(0), "eq"))
        leader.name_hint = "warp_leader"
        arrival = Block()
        arrival.add_ops([loop.MbarrierArriveOp(empty, [previous]), scf.YieldOp()])
        inner.builder.insert(scf.IfOp(leader, [], Region(arrival)))
        release.add_op(scf.YieldOp())
        emitter.builder.insert(scf.IfOp(later, [], Region(release)))

    def _iteration(self, emitter: Emitter, counter: SSAValue) -> SSAValue:
        """i = (k - lb) / step."""
        offset = emitter.emit(arith.SubiOp(counter, self.scope.lb))
        return emitter.emit(arith.DivUIOp(offset, self.scope.step))


def _in_then_region(branch: scf.IfOp, op: Operation) -> bool:
    child = op
    while child.parent_op() is not branch:
        child = child.parent_op()  # type: ignore[assignment]
    return child.parent_region() is branch.true_region


def _accesses_memory(op: Operation) -> bool:
    return not isinstance(op, memref.AllocaOp) and any(isinstance(operand.type, MemRefType) for operand in op.operands)


def _erase_with_dead_operands(op: Operation) -> None:
    """Erases `op`, then the pure ops that computed its operands and have no other use."""
    candidates = [operand.owner for operand in op.operands]
    op.detach()
    op.erase()
    while candidates:
        candidate = candidates.pop()
        if isinstance(candidate, Operation) and candidate.parent is not None and _pure(candidate) and all(not result.uses for result in candidate.results):
            candidates.extend(operand.owner for operand in candidate.operands)
            candidate.detach()
            candidate.erase()


def _pure(op: Operation) -> bool:
    return op.dialect_name() == "arith"
