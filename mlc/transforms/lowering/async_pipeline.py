"""A multi-stage pipeline of async copies around a loop: the skeleton `loop-promote-shared` fills.

With S stages, each shared copy made per iteration of a loop `for k = lb to ub step s` (constant
bounds and at least two iterations, or a constant start and step and a computed end, as a causal
chain kernel's key loop has; last counter L, a constant or computed before the loop) gets S buffers (a leading dimension of S), and
iteration i reads stage i mod S while the copies of iterations i + 1 .. i + S - 1 are in flight:

    copies of k = lb            into stage 0;      loop.async_commit      } the prologue: S - 1
    ...                                                                    } groups, counters
    copies of k = lb + (S-2) s  into stage S - 2;  loop.async_commit      } clamped to L
    for k ... {
      loop.async_wait S-2          (iteration i's group has landed; S - 2 younger ones may fly)
      copies of min(k + (S-1) s, L) into stage (i + S - 1) mod S;  loop.async_commit
      ... the body, reading stage i mod S ...
    }
    loop.async_wait 0              (nothing is left in flight after the loop)

The copies of one iteration for every promoted buffer form one group: a second buffer adds its
copies before the commits the first one made. The stage written in iteration i was last read in
iteration i - 1, so one barrier after the wait orders both hazards (the copies' data before this
iteration's reads, the previous reads before the new copies): `gpu-insert-barriers` places it
there. Counters past L copy the last tile again into a stage nobody reads, so no copy needs a
check against the loop's end (a redundant copy of at most S - 1 tiles per block).

Preconditions: `stages` >= 2; the loop's start and step are constants.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.chunk_access import Emitter

CopyEmitter = Callable[[Emitter, SSAValue, SSAValue], None]
"""Emits one iteration's copies, given the counter they copy for and the stage to fill."""


def _emitter_before(op: Operation) -> Emitter:
    block = op.parent_block()
    assert block is not None
    emitter = Emitter(block)
    emitter.builder.insertion_point = InsertPoint.before(op)
    return emitter


class StagedLoop:
    """The pipeline skeleton around `scope` (made on first use, shared by later buffers)."""

    def __init__(self, scope: scf.ForOp, stages: int, bounds: tuple[int, int], last: int | SSAValue):
        self.scope = scope
        self.stages = stages
        self.low, self.step = bounds
        self.last = last
        self.wait, self.commit, self.prologue = self._skeleton()

    @staticmethod
    def existing_stages(scope: Operation) -> int | None:
        """The stage count of the pipeline already around `scope`, if there is one."""
        if not isinstance(scope, scf.ForOp):
            return None
        waits = [op for op in scope.body.block.ops if isinstance(op, loop.AsyncWaitOp)]
        return waits[0].groups_in_flight + 2 if waits else None

    def _skeleton(self) -> tuple[loop.AsyncWaitOp, loop.AsyncCommitOp, list[loop.AsyncCommitOp]]:
        body = self.scope.body.block
        waits = [op for op in body.ops if isinstance(op, loop.AsyncWaitOp)]
        if waits:
            commit = next(op for op in body.ops if isinstance(op, loop.AsyncCommitOp))
            parent = self.scope.parent_block()
            assert parent is not None
            before = []
            for op in parent.ops:
                if op is self.scope:
                    break
                if isinstance(op, loop.AsyncCommitOp):
                    before.append(op)
            return waits[0], commit, before[-(self.stages - 1) :]
        wait = loop.AsyncWaitOp(self.stages - 2)
        commit = loop.AsyncCommitOp()
        body.insert_op_before(wait, body.first_op)  # type: ignore[arg-type]
        body.insert_op_after(commit, wait)
        prologue = [loop.AsyncCommitOp() for _ in range(self.stages - 1)]
        parent = self.scope.parent_block()
        assert parent is not None
        for op in prologue:
            parent.insert_op_before(op, self.scope)
        parent.insert_op_after(loop.AsyncWaitOp(0), self.scope)
        return wait, commit, prologue

    def _iteration(self, emitter: Emitter) -> SSAValue:
        """i = (k - lb) / step, the iteration's number."""
        counter = self.scope.body.block.args[0]
        offset = emitter.emit(arith.SubiOp(counter, emitter.index(self.low))) if self.low else counter
        return emitter.emit(arith.DivUIOp(offset, emitter.index(self.step))) if self.step != 1 else offset

    def current_stage(self) -> SSAValue:
        """The stage iteration i reads, i mod S, computed right after the wait."""
        emitter = _emitter_before(self.wait.next_op)  # type: ignore[arg-type]
        stage = emitter.emit(arith.RemUIOp(self._iteration(emitter), emitter.index(self.stages)))
        stage.name_hint = "stage"
        return stage

    def add_copies(self, copies: CopyEmitter) -> None:
        """Adds one buffer's copies to the prologue's groups and to each iteration's group."""
        for position, commit in enumerate(self.prologue):
            emitter = _emitter_before(commit)
            copies(emitter, self._clamped(emitter, emitter.index(self.low + position * self.step), self.low + position * self.step), emitter.index(position))
        emitter = _emitter_before(self.commit)
        ahead = self.stages - 1
        stage = emitter.emit(arith.RemUIOp(emitter.add(self._iteration(emitter), emitter.index(ahead)), emitter.index(self.stages)))
        following = emitter.add(self.scope.body.block.args[0], emitter.index(ahead * self.step))
        counter = self._clamped(emitter, following, None)
        stage.name_hint, counter.name_hint = "next_stage", "next"
        copies(emitter, counter, stage)


    def _clamped(self, emitter: Emitter, counter: SSAValue, known: int | None) -> SSAValue:
        """min(counter, last counter), folded when both are constants."""
        if isinstance(self.last, int):
            if known is not None:
                return emitter.index(min(known, self.last))
            return emitter.emit(arith.MinUIOp(counter, emitter.index(self.last)))
        return emitter.emit(arith.MinUIOp(counter, self.last))


def erase_block(block: Block) -> None:
    """Drops the ops of a scratch block, last first, so that they leave no uses behind."""
    for op in reversed(list(block.ops)):
        op.detach()
        op.erase()
