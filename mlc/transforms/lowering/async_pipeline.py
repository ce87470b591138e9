"""A multi-stage pipeline of async copies around a loop: the skeleton `loop-promote-shared` fills.

With S stages, each shared copy made per iteration of a loop `for k = lb to ub step s` (constant
bounds, at least two iterations, last counter L) gets S buffers (a leading dimension of S), and
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

Preconditions: `stages` >= 2; the loop's bounds are constants (`constant_bounds`).
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

    def __init__(self, scope: scf.ForOp, stages: int, bounds: tuple[int, int, int], last: int):
        self.scope = scope
        self.stages = stages
        self.low, _, self.step = bounds
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
            counter = min(self.low + position * self.step, self.last)
            copies(emitter, emitter.index(counter), emitter.index(position))
        emitter = _emitter_before(self.commit)
        ahead = self.stages - 1
        stage = emitter.emit(arith.RemUIOp(emitter.add(self._iteration(emitter), emitter.index(ahead)), emitter.index(self.stages)))
        following = emitter.add(self.scope.body.block.args[0], emitter.index(ahead * self.step))
        counter = emitter.emit(arith.MinUIOp(following, emitter.index(self.last)))
        stage.name_hint, counter.name_hint = "next_stage", "next"
        copies(emitter, counter, stage)


def erase_block(block: Block) -> None:
    """Drops the ops of a scratch block, last first, so that they leave no uses behind."""
    for op in reversed(list(block.ops)):
        op.detach()
        op.erase()


def sink_copies_below_products(scope: scf.ForOp) -> None:
    """Issues an iteration's copies after its warpgroup products (`loop.wgmma`), before their wait.

    The copies fill the stage the previous iteration read, the products read this iteration's:
    issued after the products, the copies' address arithmetic and issue overlap the tensor cores'
    work instead of delaying it. Moves the commit, the ops that contain copies and the ops whose
    results only they use, in order, to right after the body's last `loop.wgmma`; nothing happens
    unless the body has products after its copies' commit.
    """
    body = scope.body.block
    ops = list(body.ops)
    products = [op for op in ops if isinstance(op, loop.WgmmaOp)]
    commits = [op for op in ops if isinstance(op, loop.AsyncCommitOp)]
    waits = [op for op in ops if isinstance(op, loop.AsyncWaitOp)]
    if not products or len(commits) != 1 or not waits or ops.index(commits[0]) > ops.index(products[-1]):
        return
    span = ops[ops.index(waits[0]) + 1 : ops.index(commits[0]) + 1]
    moved: list[Operation] = []
    for op in reversed(span):
        copies = isinstance(op, loop.AsyncCommitOp) or any(isinstance(inner, loop.AsyncCopyOp) for inner in op.walk())
        used_by_moved = all(any(m.is_ancestor(use.operation) for m in moved) for result in op.results for use in result.uses)
        if (copies and not op.results) or (op.results and used_by_moved):
            moved.append(op)
    anchor: Operation = products[-1]
    for op in reversed(moved):
        op.detach()
        body.insert_op_after(op, anchor)
        anchor = op
