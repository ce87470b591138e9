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

In a loop of warpgroup products (`loop.wgmma`), the copies are issued after the products
(`sink_copies_below_products`) and go S - 2 iterations ahead, so that each product may stay in
flight until the next iteration's `loop.wgmma_wait 1` (`overlap_products`; the TMA pipeline of
`tma_pipeline.py` too).
Preconditions: `stages` >= 2; the loop's start and step are constants (its end may be computed).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import BFloat16Type, Float16Type, VectorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.chunk_access import Emitter

CopyEmitter = Callable[[Emitter, SSAValue, SSAValue], None]
"""Emits one iteration's copies, given the counter they copy for and the stage to fill."""


def emitter_before(op: Operation) -> Emitter:
    block = op.parent_block()
    assert block is not None
    emitter = Emitter(block)
    emitter.builder.insertion_point = InsertPoint.before(op)
    return emitter


def product_lag(scope: scf.ForOp) -> int:
    """Iterations a stage stays read after its own: 1 in a loop of warpgroup products (`loop.wgmma`,
    each kept in flight until the next iteration's wait, `overlap_products`), else 0; 0 also in a
    chain kernel's key loop (`mlc.chain`), whose products are waited for in their own iteration
    (the softmax reads S, the next block's P V needs the rescaled O)."""
    if not any(isinstance(op, loop.WgmmaOp) for op in scope.body.block.ops):
        return 0
    kernel = scope.parent_op()
    while kernel is not None and not isinstance(kernel, loop.KernelOp):
        kernel = kernel.parent_op()
    return 0 if kernel is not None and attributes.CHAIN.read(kernel) is not None else 1


class StagedLoop:
    """The pipeline skeleton around `scope` (made on first use, shared by later buffers).

    In a loop of warpgroup products (`product_lag` 1) a stage is still read one iteration after
    its own, so copies go S - 2 iterations ahead (`loop.async_wait S-3`), not S - 1."""

    def __init__(self, scope: scf.ForOp, stages: int, bounds: tuple[int, int], last: int | SSAValue):
        self.scope = scope
        self.stages = stages
        self.ahead = max(1, stages - 1 - product_lag(scope))
        self.low, self.step = bounds
        self.last = last
        self.wait, self.commit, self.prologue = self._skeleton()

    @staticmethod
    def existing_stages(scope: Operation) -> int | None:
        """The stage count of the pipeline already around `scope`, if there is one."""
        if not isinstance(scope, scf.ForOp):
            return None
        waits = [op for op in scope.body.block.ops if isinstance(op, loop.AsyncWaitOp)]
        return waits[0].groups_in_flight + 2 + product_lag(scope) if waits else None

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
            return waits[0], commit, before[-self.ahead :]
        wait = loop.AsyncWaitOp(self.ahead - 1)
        commit = loop.AsyncCommitOp()
        body.insert_op_before(wait, body.first_op)  # type: ignore[arg-type]
        body.insert_op_after(commit, wait)
        prologue = [loop.AsyncCommitOp() for _ in range(self.ahead)]
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
        emitter = emitter_before(self.wait.next_op)  # type: ignore[arg-type]
        stage = emitter.emit(arith.RemUIOp(self._iteration(emitter), emitter.index(self.stages)))
        stage.name_hint = "stage"
        return stage

    def add_copies(self, copies: CopyEmitter) -> None:
        """Adds one buffer's copies to the prologue's groups and to each iteration's group."""
        for position, commit in enumerate(self.prologue):
            emitter = emitter_before(commit)
            copies(emitter, self._clamped(emitter, emitter.index(self.low + position * self.step), self.low + position * self.step), emitter.index(position))
        emitter = emitter_before(self.commit)
        ahead = self.ahead
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


def overlap_products(scope: scf.ForOp) -> None:
    """Overlaps a pipelined loop's warpgroup products (`loop.wgmma`) with its copies and with the
    next iteration: `sink_copies_below_products`, then each product stays in flight until the next
    iteration's `loop.wgmma_wait 1` (the next product chains on its accumulators; the tensor cores
    do not drain at the barrier), and a `loop.wgmma_wait 0` after the loop completes the last one.
    The copies go S - 2 iterations ahead for this (`StagedLoop`), so that the stage they fill was
    read two products ago, a product every warpgroup has waited for before the iteration's barrier.
    Only where every accumulator is only stored or only rounded to f16/bf16 after the loop
    (`STORING_OPS`, `pack_roundings`): other epilogues keep waiting in each iteration.
    """
    if not product_lag(scope) or not sink_copies_below_products(scope):
        return
    body = scope.body.block
    copy_wait = next(op for op in body.ops if isinstance(op, loop.AsyncWaitOp | loop.MbarrierWaitOp))
    first = next(op for op in body.ops if isinstance(op, loop.WgmmaOp))
    stages = (first.rhs if first.lhs is None else first.lhs).type.get_shape()[0]  # type: ignore[attr-defined]
    pipeline_stages = copy_wait.groups_in_flight + 3 if isinstance(copy_wait, loop.AsyncWaitOp) else copy_wait.barrier.type.get_shape()[0]  # type: ignore[attr-defined]
    if stages < 3 or pipeline_stages != stages:
        return  # fewer than 3 stages: the copies go one step ahead, over the last product's stage
    terminator = body.last_op
    assert isinstance(terminator, scf.YieldOp)
    waits = [op for op in body.ops if isinstance(op, loop.WgmmaWaitOp) and op.groups_in_flight == 0]
    positions = [p for p, value in enumerate(terminator.arguments) if any(value.owner is wait for wait in waits)]
    if not waits or len(positions) != sum(len(wait.d) for wait in waits):
        return  # an accumulator is used in the body after its wait: keep waiting for it there
    if not all(products_stay_in_flight(scope.results[p]) for p in positions):
        return
    for wait in waits:
        relaxed = loop.WgmmaWaitOp(1, list(wait.accumulators))
        body.insert_op_before(relaxed, wait)
        for old, new in zip(wait.d, relaxed.d):
            old.replace_all_uses_with(new)
        body.erase_op(wait)
    parent = scope.parent_block()
    assert parent is not None
    landed = loop.WgmmaWaitOp(0, [scope.results[p] for p in positions])
    parent.insert_op_after(landed, scope)
    for position, value in zip(positions, landed.d):
        for use in list(scope.results[position].uses):
            if use.operation is not landed:
                use.operation.operands[use.index] = value
    pack_roundings(landed)


STORING_OPS = (arith.TruncFOp, vector.BroadcastOp, vector.InsertOp, vector.StoreOp, memref.StoreOp, scf.IfOp, scf.YieldOp)
"""What may use a kernel's accumulators after the K loop for `overlap_products` to defer their wait
without further ado: conversions, vector packing and (masked) stores. The other accumulators it
defers are rounded to f16/bf16 first (`_rounded_to_16_bits`), a pair at a time (`pack_roundings`)."""

PACKED_ROUNDING = (Float16Type, BFloat16Type)
"""The 16-bit float types that `pack_roundings` rounds accumulators to two at a time.

Why: ptxas serializes a deferred wgmma pipeline (C7514: "wgmma.mma_async instructions are
serialized due to non wgmma instructions reading accumulator registers") when an epilogue that
computes (relu, exp, bias + gelu) rounds each accumulator alone (`cvt.rn.f16.f32` into a 16-bit
register, which LLVM emits for an `arith.truncf` whose result is not stored as a pair), even with
every read after the loop's `wgmma.wait_group 0`; the same epilogue with each two accumulators
rounded together (`cvt.rn.f16x2.f32`, what a plain store gets) is not serialized (ptxas 13.0,
sm_90a: 4096^3 with relu and exp, the fp16 MLP's kernels in f16 and bf16)."""


def products_stay_in_flight(value: SSAValue) -> bool:
    """Whether `overlap_products` may leave the products of a K loop's accumulator `value` (one of
    the loop's results) in flight across K steps: it is only stored (`STORING_OPS`) or only rounded
    to 16 bits (`PACKED_ROUNDING`)."""
    return _only_stored(value) or _rounded_to_16_bits(value)


def _rounded_to_16_bits(value: SSAValue) -> bool:
    """Whether every use of `value` rounds it to f16 or bf16 (`PACKED_ROUNDING`)."""
    return bool(value.uses) and all(
        isinstance(use.operation, arith.TruncFOp) and isinstance(use.operation.result.type, PACKED_ROUNDING) for use in value.uses
    )


def pack_roundings(landed: loop.WgmmaWaitOp) -> None:
    """Rounds the accumulators `landed` completes two at a time: each pair (2j, 2j + 1, adjacent
    columns of one row) of accumulators that are only rounded to the same 16-bit type becomes one
    `arith.truncf` of a vector<2xf32> right after the wait, whose lanes replace the scalar
    roundings (`PACKED_ROUNDING` says why; convert-gpu-to-nvvm emits `cvt.rn.{f16x2,bf16x2}.f32`).
    Pairs that are only rounded and stored are left alone."""
    block = landed.parent_block()
    assert block is not None
    anchor: Operation = landed
    results = list(landed.d)
    for first, second in zip(results[0::2], results[1::2]):
        if not (_rounded_to_16_bits(first) and _rounded_to_16_bits(second)) or (_only_stored(first) and _only_stored(second)):
            continue  # a stored pair is rounded by one cvt.rn.f16x2.f32 anyway: LLVM packs it for the store
        truncations = [[use.operation for use in value.uses] for value in (first, second)]
        rounded_type = truncations[0][0].results[0].type
        if any(truncation.results[0].type != rounded_type for pair_truncations in truncations for truncation in pair_truncations):
            continue
        pair = vector.BroadcastOp(first, VectorType(first.type, [2]))
        packed = vector.InsertOp(second, pair.vector, [1])
        rounded = arith.TruncFOp(packed.result, VectorType(rounded_type, [2]))
        lanes = [vector.ExtractOp(rounded.result, [lane], rounded_type) for lane in range(2)]
        for op in (pair, packed, rounded, *lanes):
            block.insert_op_after(op, anchor)
            anchor = op
        for lane, lane_truncations in zip(lanes, truncations):
            for truncation in lane_truncations:
                truncation.results[0].replace_all_uses_with(lane.result)
                truncation.detach()
                truncation.erase()


def _only_stored(value: SSAValue) -> bool:
    """Whether `value` reaches only conversions, packing and stores (`STORING_OPS`)."""
    pending, seen = [value], set()
    while pending:
        current = pending.pop()
        for use in current.uses:
            op = use.operation
            if not isinstance(op, STORING_OPS):
                return False
            if op not in seen and not isinstance(op, scf.YieldOp | scf.IfOp):
                seen.add(op)
                pending.extend(op.results)
    return True


def sink_copies_below_products(scope: scf.ForOp) -> bool:
    """Issues an iteration's copies after its warpgroup products (`loop.wgmma`), before their wait;
    whether it did.

    The copies fill a stage no product of the iteration reads: issued after the products, the
    copies' address arithmetic and issue overlap the tensor cores' work instead of delaying it.
    Moves the commit, the ops that contain copies and the ops whose results only they use, in
    order, to right after the body's last `loop.wgmma`; nothing happens unless the body has
    products after its copies' commit. In a TMA pipeline (`tma_pipeline.py`) the branch issuing
    the bulk copies plays the commit's part, the mbarrier wait the copy wait's.
    """
    body = scope.body.block
    ops = list(body.ops)
    products = [op for op in ops if isinstance(op, loop.WgmmaOp)]
    commits = [op for op in ops if isinstance(op, loop.AsyncCommitOp) or (isinstance(op, scf.IfOp) and _issues_bulk_copies(op))]
    waits = [op for op in ops if isinstance(op, loop.AsyncWaitOp | loop.MbarrierWaitOp)]
    if not products or len(commits) != 1 or not waits or ops.index(commits[0]) > ops.index(products[-1]):
        return False
    span = ops[ops.index(waits[0]) + 1 : ops.index(commits[0]) + 1]
    moved: list[Operation] = []
    moved_set: set[Operation] = set()  # `moved`, for asking which body op a use belongs to

    def used_by_moved(op: Operation) -> bool:
        return all(body.find_ancestor_op_in_block(use.operation) in moved_set for result in op.results for use in result.uses)

    for op in reversed(span):
        if op.results:
            move = used_by_moved(op)
        else:
            move = isinstance(op, loop.AsyncCommitOp) or any(isinstance(inner, loop.AsyncCopyOp | loop.TmaLoadOp) for inner in op.walk())
        if move:
            moved.append(op)
            moved_set.add(op)
    anchor: Operation = products[-1]
    for op in reversed(moved):
        op.detach()
        body.insert_op_after(op, anchor)
        anchor = op
    return True


def _issues_bulk_copies(op: scf.IfOp) -> bool:
    """The branch of a TMA pipeline (`tma_pipeline.py`) that issues an iteration's bulk copies."""
    return any(isinstance(inner, loop.TmaLoadOp) for inner in op.walk())
