"""loop-persistent-tiles: a warp-specialized product kernel's blocks loop over its tiles (a persistent grid).

Why. A warp-specialized TMA product (`warp_specialization.py`) takes one multiprocessor per block
for its big tiles (TF32 128x256x32: 4 stages and the staged epilogue's quarter bands, 231 KiB of
shared memory), so while a block's consumers run the epilogue of its tile (f32: 128 KiB out) no K
loop runs beside it on that multiprocessor: the tensor cores idle until the next block starts and
its producer has filled a stage. cuBLAS's persistent kernels overlap that epilogue with the next
tile's loads; so does this: with P blocks each looping over the tiles t = b, b + P, ..., the
producer's elected thread runs on into the next tile as soon as a stage is released, and the
consumers find its first stages full when their epilogue ends.

Algorithm, per `loop.kernel` with a `block.x` loop (X) holding a `block.y` loop (Y) holding one
thread loop whose body holds one `scf.if {mlc.warp_roles}` (the producer's elected `scf.if` holding
the K loop of `loop.mbarrier_wait %empty`, the consumers' K loop of `loop.mbarrier_wait %full`
followed by `loop.wgmma_wait 0` and the epilogue), when X * Y > P:

    loop.parallel %b < P mapping block.x {                  // the block.y loop is gone
      <the allocations>  loop.parallel %thread < T + 128 {
        <the ops before the roles that do not depend on the block>   // mbarrier init: once
        scf.if %producer { scf.if %elected {
            scf.for %t = %b to X * Y step P {  j = (t - b) / P;  x = t mod X;  y = t / X
              <the ops before the roles that depend on (x, y), cloned: the grouped order's row and column>
              for k { g = j * n + i;  wait %empty[g mod S], (g / S + 1) mod 2;  the copies into stage g mod S } } }
        } else {
            scf.for %t = %b to X * Y step P {  j, x, y, the clones as above
              for k { g = j * n + i;  wait %full[g mod S], (g / S) mod 2;  the products;  release stage (g - 1) mod S if i > 0 }
              loop.wgmma_wait 0;  loop.warp_sync;  lane 0 of each warp: arrive %empty[(j * n + n - 1) mod S]
              <the epilogue> } } }

(i = (k - lb) / step, n the K loop's trip count.) The stage and phase counters run on across
tiles: the g-th use of a stage is its (g / S)-th phase for producer and consumers alike, so the
producer loads tile j + 1's first stages while the consumers are in tile j's epilogue, each
refill waiting for the release of the stage's previous use. The last stage of a tile, which the
K loop releases only from the next iteration, is released after the final `wgmma_wait 0`. The
consumers synchronise among themselves only where the next tile's epilogue reuses the staging:
each warp owns its band of it (loop-stage-epilogue), so the `loop.warp_sync` before the last
stage's release orders the warp's reads of one tile's band before its writes of the next one. No block-wide
barrier enters either role (gpu-insert-barriers adds none: the roles order through mbarriers,
warp syncs order the staging). The tile order is the launch order the grid had (block.x fastest,
or loop-group-tiles' grouped order, whose formula is cloned with the block coordinates), so the P
tiles in flight at once are the ones a wave ran before. The kernel records `mlc.persistent_tiles
= P` (a kernel that has it is left alone).

The grid: P is the `blocks` option, the blocks that run at once on the device (multiprocessors x
blocks per multiprocessor, 1 for these kernels); `mlc-lower-to-gpu{persistent-tiles=P}` runs the
pass after loop-group-tiles; the caller names P (`bench/matmul.py --persistent` reads the device's
multiprocessor count). Kernels with at most P tiles are left alone (each block would run one tile anyway).

Measured (BENCHMARKS.md, "A persistent grid for the warp-specialized product"): on an H100 never
faster than the default grid and 5-14% slower for TF32 4096^3 and f16/bf16 8192^3 (the same DRAM
traffic, the tensor pipe active 79% of the cycles against 86%: the consumers wait longer for
stages), so it is opt-in and not part of `mlc.compile`'s sm_90 default.

Preconditions (else the kernel is left alone): the shape above; the ops before the roles that
depend on the block coordinates are side-effect-free arith ops (so that the roles can recompute
them per tile) and are used only by each other and inside the roles; each K loop has constant
bounds and at least one iteration, its `mbarrier_wait`'s stage index and parity computed in its
body; the consumers' K loop is followed by a `loop.wgmma_wait 0` in the same block.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.block_grid import block_loops
from mlc.transforms.analysis.shared_memory_promotion import constant_bounds
from mlc.transforms.lowering.async_pipeline import emitter_before
from mlc.transforms.lowering.chunk_access import Emitter


def _trip_count(scope: scf.ForOp) -> int | None:
    """The K loop's iterations where its bounds are constants, else None."""
    bounds = constant_bounds(scope)
    return None if bounds is None else len(range(*bounds))


def _waiting_loop(block: Block) -> tuple[scf.ForOp, loop.MbarrierWaitOp] | None:
    """The one `scf.for` in `block` whose body waits on an mbarrier at its top level, and that wait."""
    found = [
        (op, wait)
        for op in block.ops
        if isinstance(op, scf.ForOp)
        for wait in [next((inner for inner in op.body.block.ops if isinstance(inner, loop.MbarrierWaitOp)), None)]
        if wait is not None
    ]
    return found[0] if len(found) == 1 else None


def _defined_in(value: SSAValue, scope: scf.ForOp) -> bool:
    owner = value.owner
    return isinstance(owner, Operation) and scope.is_ancestor(owner)


@dataclass
class _Persistent:
    """A kernel that meets the preconditions: the pieces the rewrite moves."""

    kernel: loop.KernelOp
    rows: loop.ParallelOp
    columns: loop.ParallelOp
    thread_loop: loop.ParallelOp
    roles: scf.IfOp
    dependent: list[Operation]
    producer: tuple[scf.ForOp, loop.MbarrierWaitOp]
    consumer: tuple[scf.ForOp, loop.MbarrierWaitOp]
    drained: loop.WgmmaWaitOp

    @property
    def tiles(self) -> int:
        return self.rows.trip_count * self.columns.trip_count

    @staticmethod
    def find(kernel: loop.KernelOp) -> _Persistent | None:
        found = block_loops(kernel)
        if found is None or attributes.PERSISTENT_TILES.read(kernel) is not None:
            return None
        rows, columns = found
        thread_loops = [op for op in columns.body.block.ops if isinstance(op, loop.ParallelOp)]
        if len(thread_loops) != 1:
            return None
        thread_loop = thread_loops[0]
        body = list(thread_loop.body.block.ops)
        roles = [op for op in body if isinstance(op, scf.IfOp) and attributes.WARP_ROLES.name in op.attributes]
        if len(roles) != 1 or roles[0].next_op is not body[-1]:
            return None
        dependent = _block_dependent(body[: body.index(roles[0])], rows.induction_variable, columns.induction_variable)
        if dependent is None:
            return None
        elected = [op for op in roles[0].true_region.block.ops if isinstance(op, scf.IfOp)]
        producer = _waiting_loop(elected[0].true_region.block) if len(elected) == 1 else None
        consumer = _waiting_loop(roles[0].false_region.block)
        if producer is None or consumer is None:
            return None
        after = list(roles[0].false_region.block.ops)
        drained = next((op for op in after[after.index(consumer[0]) :] if isinstance(op, loop.WgmmaWaitOp) and op.groups_in_flight == 0), None)
        counts = {_trip_count(scope) for scope, _ in (producer, consumer)}
        if drained is None or len(counts) != 1 or None in counts or counts == {0}:
            return None
        if not all(_defined_in(wait.indices[0], scope) and _defined_in(wait.parity, scope) for scope, wait in (producer, consumer)):
            return None
        moved = (producer[0], roles[0].false_region)
        block_values = [rows.induction_variable, columns.induction_variable, *(result for op in dependent for result in op.results)]
        if not all(use.operation in dependent or any(scope.is_ancestor(use.operation) for scope in moved) for value in block_values for use in value.uses):
            return None
        return _Persistent(kernel, rows, columns, thread_loop, roles[0], dependent, producer, consumer, drained)

    # The rewrite ---------------------------------------------------------------------------------

    def rewrite(self, blocks: int) -> None:
        row_count = self.rows.trip_count
        stages = self.consumer[1].barrier.type.get_shape()[0]  # type: ignore[attr-defined]
        block = self.rows.induction_variable
        coordinates = (self.rows.induction_variable, self.columns.induction_variable)
        producer_scope, producer_wait = self.producer
        elected_block = producer_scope.parent_block()
        assert elected_block is not None
        iterations = _trip_count(producer_scope)
        assert iterations is not None
        _, base = self._tile_loop([producer_scope], block, blocks, row_count, coordinates, iterations)
        self._counters(producer_scope, producer_wait, base, stages, ahead=1)
        consumer_block = self.roles.false_region.block
        work = [op for op in consumer_block.ops if op is not consumer_block.last_op]
        _, base = self._tile_loop(work, block, blocks, row_count, coordinates, iterations)
        self._counters(self.consumer[0], self.consumer[1], base, stages, ahead=0)
        self._release_last(base, stages, iterations)
        for op in reversed(self.dependent):
            op.detach()
            op.erase()
        self._flatten_grid(blocks)
        attributes.PERSISTENT_TILES.write(self.kernel, IntegerAttr(blocks, i64))

    def _tile_loop(self, work: list[Operation], block: SSAValue, blocks: int, row_count: int, coordinates: tuple[SSAValue, SSAValue], iterations: int) -> tuple[scf.ForOp, SSAValue]:
        """`scf.for %t = %b to X * Y step P` in place of `work`, which it holds after the clones of
        the block-dependent ops (for (x, y) = (t mod X, t / X)); returns it and j * n, the K
        iterations of the block's earlier tiles."""
        emitter = emitter_before(work[0])
        body = Block(arg_types=[block.type])
        tile = body.args[0]
        tile.name_hint = "tile"
        inner = Emitter(body)
        x = inner.emit(arith.RemUIOp(tile, inner.index(row_count)))
        y = inner.emit(arith.DivUIOp(tile, inner.index(row_count)))
        mapping: dict[SSAValue, SSAValue] = {coordinates[0]: x, coordinates[1]: y}
        for op in self.dependent:
            inner.builder.insert(op.clone(value_mapper=mapping))
        earlier = inner.emit(arith.DivUIOp(inner.emit(arith.SubiOp(tile, block)), inner.index(blocks)))
        base = inner.emit(arith.MuliOp(earlier, inner.index(iterations)))
        base.name_hint = "earlier_steps"
        terminator = scf.YieldOp()
        body.add_op(terminator)
        tile_loop = scf.ForOp(block, emitter.index(self.tiles), emitter.index(blocks), [], Region(body))
        emitter.builder.insert(tile_loop)
        for op in work:
            op.detach()
            body.insert_op_before(op, terminator)
            for nested in op.walk():
                for index, operand in enumerate(nested.operands):
                    if operand in mapping:
                        nested.operands[index] = mapping[operand]
        return tile_loop, base

    def _counters(self, scope: scf.ForOp, wait: loop.MbarrierWaitOp, base: SSAValue, stages: int, ahead: int) -> None:
        """The wait's stage and parity from g = j * n + i (`base` = j * n): stage g mod S, parity
        (g / S + ahead) mod 2."""
        emitter = emitter_before(scope.body.block.first_op)  # type: ignore[arg-type]
        step = emitter.emit(arith.DivUIOp(emitter.emit(arith.SubiOp(scope.body.block.args[0], scope.lb)), scope.step))
        use = emitter.add(base, step)
        use.name_hint = "step_use"
        stage = emitter.emit(arith.RemUIOp(use, emitter.index(stages)))
        phase = emitter.emit(arith.DivUIOp(use, emitter.index(stages)))
        if ahead:
            phase = emitter.add(phase, emitter.index(ahead))
        parity = emitter.emit(arith.RemUIOp(phase, emitter.index(2)))
        stage.name_hint, parity.name_hint = "stage", "phase"
        old_stage, old_parity = wait.indices[0], wait.parity
        old_stage.replace_all_uses_with(stage)
        wait.operands[len(wait.operands) - 1] = parity  # the parity is the wait's last operand
        _erase_dead(old_parity)
        _erase_dead(old_stage)

    def _release_last(self, base: SSAValue, stages: int, iterations: int) -> None:
        """After the final `wgmma_wait 0`: each warp's lane 0 releases the tile's last stage."""
        following = self.drained.next_op
        assert following is not None
        emitter = emitter_before(following)
        last = emitter.emit(arith.RemUIOp(emitter.add(base, emitter.index(iterations - 1)), emitter.index(stages)))
        emitter.builder.insert(loop.WarpSyncOp())
        lane = emitter.emit(arith.RemUIOp(self.thread_loop.induction_variable, emitter.index(loop.WARP_SIZE)))
        leader = emitter.emit(arith.CmpiOp(lane, emitter.index(0), "eq"))
        arrival = Block()
        empty = self.producer[1].barrier
        arrival.add_ops([loop.MbarrierArriveOp(empty, [last]), scf.YieldOp()])
        emitter.builder.insert(scf.IfOp(leader, [], Region(arrival)))

    def _flatten_grid(self, blocks: int) -> None:
        """The block.y loop's body moved into the block.x loop, which runs `blocks` iterations."""
        columns_body = self.columns.body.block
        for op in [op for op in columns_body.ops if op is not columns_body.last_op]:
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(self.columns))
        self.columns.detach()
        self.columns.erase()
        self.rows.properties["upper_bound"] = IntegerAttr(blocks, i64)


def _block_dependent(prefix: list[Operation], x: SSAValue, y: SSAValue) -> list[Operation] | None:
    """The ops of `prefix` that depend on x or y, in order; None if one of them is not a plain arith op."""
    tainted: set[SSAValue] = {x, y}
    dependent: list[Operation] = []
    for op in prefix:
        reads = {operand for nested in op.walk() for operand in nested.operands}
        if not reads & tainted:
            continue
        if op.dialect_name() != "arith" or op.regions:
            return None
        dependent.append(op)
        tainted.update(op.results)
    return dependent


def _erase_dead(value: SSAValue) -> None:
    """Erases the arith op that computed `value` and its operands' ops, as long as nothing uses them."""
    candidates = [value.owner]
    while candidates:
        candidate = candidates.pop()
        if isinstance(candidate, Operation) and candidate.parent is not None and candidate.dialect_name() == "arith" and all(not result.uses for result in candidate.results):
            candidates.extend(operand.owner for operand in candidate.operands)
            candidate.detach()
            candidate.erase()


def persist_tiles(kernel: loop.KernelOp, blocks: int) -> bool:
    """Rewrites the kernel into a persistent grid of `blocks` blocks where the preconditions hold
    and it has more tiles than that; True if it did."""
    found = _Persistent.find(kernel)
    if found is None or found.tiles <= blocks:
        return False
    found.rewrite(blocks)
    return True


@dataclass(frozen=True)
class LoopPersistentTiles(ModulePass):
    """Warp-specialized product kernels run on a persistent grid: each block loops over tiles."""

    name = "loop-persistent-tiles"

    blocks: int = 132
    """The blocks of the persistent grid: the device's multiprocessors x blocks per multiprocessor
    (132: an H100 SXM's or an H200's multiprocessors, at one block each)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.blocks < 1:
            raise PassFailure(op, f"loop-persistent-tiles needs blocks >= 1, got {self.blocks}")
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            persist_tiles(kernel, self.blocks)
