"""loop-promote-shared: stage global operands that many threads re-read in shared memory.

In a loop kernel, a block's threads often read the same elements of a global buffer: in a matmul
every element of an A block is read by each thread of a row of threads, once per column they own.
This pass finds such reads and gives each block a copy of what they need, made once by all the
threads together and then read from shared memory (memref space 3) instead.

Algorithm, per thread loop (`loop.parallel ... mapping thread.x`) and per global buffer (a kernel
parameter) that the kernel only reads:

1. Scopes. The candidate scopes are the thread loop's body and each `scf.for` reached from it
   through `scf.for`s alone whose bounds are the same for every thread (defined outside the
   thread loop): the copy goes at the start of each run of the scope's body, where every thread
   arrives together. Outermost first, the first scope that passes 2-4 is taken; in a chain
   kernel (`mlc.chain`) with stages (step 6), a buffer ldmatrix reads inside such a loop skips
   the thread loop's scope, so that every operand of the key loop is pipelined (the whole K
   would otherwise take the shared memory V needs).
The analysis (steps 1-4) is `mlc/transforms/analysis/shared_memory_promotion.py`; this file
rewrites (step 5).

2. Box. Every index of every read of the buffer inside the scope is an affine sum
   (`affine_index.py`) of *uniform* terms (block ids, the scope's counter, what is computed from
   them: the same for all threads during one run of the body) and *varying* ones (the thread id,
   counters of inner loops) whose ranges the index analysis bounds. All reads must share their
   uniform terms; their varying ranges, united, give the box of elements one run reads:
   `origin + [low, high]` per dimension.
3. Reuse. Reads per run = threads x (trip counts of the loops between the scope and each read)
   x elements per read (an `scf.if` around a read counts as taken); reuse = reads / box elements.
   Promote when reuse >= `MIN_REUSE` (or the reads load mma operand registers, `mlc.operand` in
   an `mlc.mma` kernel) and the boxes of the block fit `SHARED_MEMORY_BYTES`; else
   try the next scope (an inner loop's box can be reused more than the whole range's).
   The allocation records why: `mlc.promoted = "..."` names the buffer, the box, the scope, the
   reads and the reuse.
4. Layout. The shared buffer is the box in the buffer's own dimension order (so a vector read
   stays a vector read), its rows padded by a multiple of the copy's vector width, except when
   every read is a scalar read in a group of up to 16 bytes' worth of neighbours along the
   next-to-last dimension, each group aligned (`vector_groups`; a matmul micro-tile's 4-tall row
   chunks reading a column of A): then the last two dimensions are swapped, the copy stores each
   element of its vectors on its own, and each group becomes one aligned vector read. The padding is
   chosen by counting shared-memory wavefronts (32 banks of 4 bytes, a warp's request split in
   phases of 128 bytes; within a phase, distinct words in one bank are serialised) for the lanes
   of the first warp, for every rewritten read and the copy's stores, weighted by how often each
   runs; the least costly padding wins, the smallest on a tie. The attribute reports the counts.
   A buffer `loop.wgmma` reads is swizzled instead (`mlc.swizzle` = 128, the layout wgmma's
   descriptors name; convert-gpu-to-nvvm swizzles the copy's addresses), in a loop scope with
   async-copy stages only (a register copy could not write it: a PassFailure otherwise), up to
   `WGMMA_SHARED_MEMORY_BYTES`; each iteration's copies are then issued after its products.
5. Copy. At the start of the scope's body the threads copy the box row by row in vectors of up to
   16 bytes, consecutive threads taking consecutive vectors (coalesced global reads), in as many
   rounds as needed (the last one guarded when the threads outnumber the vectors). Global reads
   are masked at the buffer's bounds like tile loads (`chunk_access.py`: checks only where the
   index analysis cannot prove them, 16-byte vectors where it proves them aligned); elements
   outside the buffer are copied as zeros and never read, since every read that could fall
   outside was guarded already. Each read of the box then reads the shared buffer at
   `index - origin`, its guards unchanged.
6. Stages. With S >= 2 stages (the `stages` option, else the kernel's `mlc.pipeline_stages`),
   a copy per iteration of an `scf.for` with constant bounds whose every chunk can be one 16-byte
   `loop.async_copy` (aligned, all in or all out: `ChunkAccesses.async_copy`) gets S buffers and
   is issued S - 1 iterations ahead (`async_pipeline.py`: prologue, `loop.async_wait S-2` per
   iteration, one commit group per iteration shared by every buffer of the loop), reads going
   to stage i mod S. The stages must fit `STAGED_SHARED_MEMORY_BYTES` (fewer are used where they
   do not; a second buffer of the loop takes the first one's count, or registers); otherwise,
   and for S = 1, the copy goes through registers as in step 5. In a kernel with `mlc.tma`
   (option `tma`), a wgmma operand whose box can be one bulk tensor copy is staged by TMA copies
   on mbarriers instead (`tma_pipeline.py`; producer and consumer warpgroups: `warp-specialize`).

Semantics. Within a thread loop, shared memory is block-synchronous at the loop level (see the loop
dialect): each statement touching it completes in every thread before any thread goes on, as the
loop interpreter runs it. `gpu-insert-barriers` later places the barriers this order needs on
the GPU: after the copy (read after write) and before the next run's copy (write after read).
The pass belongs to the GPU pipeline (the CPU lowering runs threads one after another).

Preconditions: one-dimensional blocks (a thread loop not nested in another). A buffer the kernel
writes is not promoted, nor one read through anything but `memref.load`, `vector.load` or
`loop.ldmatrix` (shared memory only on the GPU: promoted whatever its reuse, each lane's 8-element
row a vector read); kernel parameters do not alias each other (mlc's host code passes distinct
buffers to a kernel that writes one of them).
Limits: the only transposition swaps the last two dimensions, only for grouped scalar reads (not
ragged reads guarded one by one); swizzling only for wgmma operands; async copies only for 16-byte
aligned chunks (an odd row length keeps the register copy); one box per buffer and scope; reuse
counts reads, not distinct threads; unknown trip counts count as one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr, UnitAttr, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import AffineForm, constant_index
from mlc.transforms.analysis.shared_memory_promotion import (
    COPY_BYTES,
    SHARED_MEMORY_BYTES,
    STAGED_SHARED_MEMORY_BYTES,
    SWIZZLE_BYTES,
    WGMMA_SHARED_MEMORY_BYTES,
    Promotion,
    ScopeAnalysis,
    choose_padding,
    describe_promotion,
    element_type_of,
    is_inside,
    is_read_only,
    needs_swizzle,
    plan_promotion,
    scope_body,
    shared_bytes,
    thread_loops,
)
from mlc.transforms.lowering.async_pipeline import StagedLoop, erase_block, overlap_products
from mlc.transforms.lowering.tma_pipeline import TmaStagedLoop, bulk_copies, bulk_copies_possible
from mlc.transforms.lowering.warp_specialization import specialize_warps
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter, emit_if, zero_of
from mlc.transforms.lowering.shared_copy import (
    Counter,
    chunk_coordinates,
    counter_value,
    last_iteration,
    move_ops,
    redirect_group,
    redirect_read,
    require_parameter_alignment,
    store_chunk,
    store_transposed,
)


class PromotionRewriter:
    """Emits the allocation, the copy and the rewritten reads of one promotion."""

    def __init__(self, kernel: loop.KernelOp, promotion: Promotion, analysis: ScopeAnalysis):
        self.kernel = kernel
        self.promotion = promotion
        self.analysis = analysis

    def apply(self, reason: str, stages: int = 1) -> None:
        """Rewrites; `stages` >= 2 asks for an async-copy pipeline (`async_pipeline.py`) when the
        scope and the copy allow one (`can_copy_async`), else each run copies through registers."""
        promotion = self.promotion
        extents = promotion.shared_extents
        shape = [*extents[:-1], extents[-1] + promotion.padding]
        scope = promotion.scope
        last = last_iteration(scope) if isinstance(scope, scf.ForOp) else None
        swizzled = needs_swizzle(promotion.sites)
        thread_loop = self.analysis.thread_loop
        bulk = stages >= 2 and last is not None and swizzled and bulk_copies_possible(self.kernel, promotion.source, extents, scope, thread_loop)
        staged = stages >= 2 and last is not None and (bulk or self.can_copy_async())
        if swizzled and not staged:
            raise PassFailure(promotion.sites[0].op, "loop.wgmma needs its operands staged by 16-byte async copies in a loop (2 or more stages that fit in shared memory)")
        space = IntegerAttr(loop.SHARED_MEMORY_SPACE, i64)
        allocation = memref.AllocaOp.get(element_type_of(promotion.source), COPY_BYTES, [stages, *shape] if staged else shape, memory_space=space)
        allocation.memref.name_hint = f"{promotion.source.name_hint or 'buffer'}_shared"
        attributes.PROMOTED.write(allocation, StringAttr(reason + (f"; {stages} stages of {'bulk tensor' if bulk else 'async'} copies" if staged else "")))
        if swizzled:
            attributes.SWIZZLE.write(allocation, IntegerAttr(SWIZZLE_BYTES, i64))
        thread_loop.parent_block().insert_op_before(allocation, thread_loop)  # type: ignore[union-attr]
        staging = Emitter(Block())
        origins = self._origins(staging, None)
        stage = None
        body = scope_body(scope)
        if staged:
            assert isinstance(scope, scf.ForOp) and last is not None
            bounds = (constant_index(scope.lb), constant_index(scope.step))
            if bulk:
                pipeline: StagedLoop | TmaStagedLoop = TmaStagedLoop(scope, stages, bounds, last, thread_loop)  # type: ignore[arg-type]
                pipeline.add_copies(bulk_copies(promotion.source, allocation.memref, self._origins))
            else:
                pipeline = StagedLoop(scope, stages, bounds, last)  # type: ignore[arg-type]
                pipeline.add_copies(lambda emitter, counter, slot: self._async_copies(emitter, allocation.memref, counter, slot))
            stage = pipeline.current_stage()
            move_ops(staging, body, pipeline.wait.next_op)
        else:
            if last is None:
                self._store_box(staging, allocation.memref, self._load_box(staging, origins))
            else:
                scope = self._prefetch(staging, allocation.memref, scope, last)
            body = scope_body(scope)
            move_ops(staging, body, body.first_op)
        if promotion.groups:
            for group in promotion.groups:
                redirect_group(group, allocation.memref, origins)
        else:
            for site in promotion.sites:
                redirect_read(site, allocation.memref, origins, stage, self._aligned)

    def can_copy_async(self) -> bool:
        """Whether every chunk of the copy can be one 16-byte async copy (a trial emission)."""
        if self.promotion.transposed:
            return False
        scratch = Emitter(Block())
        origins = self._origins(scratch, None)
        chunk, _ = self._rounds(scratch)[0]
        extents = tuple(self.promotion.box.extents)
        accesses = ChunkAccesses(extents, self.promotion.copy_width, self._coordinates(scratch, chunk), self.analysis.facts, lambda *_: None)
        placeholder = scratch.emit(memref.AllocaOp.get(element_type_of(self.promotion.source), 0, [1, *extents], memory_space=IntegerAttr(3, i64)))
        possible = accesses.async_copy(scratch, self.promotion.source, [(o, o) for o in origins], extents, placeholder, [chunk] * (len(extents) + 1))
        erase_block(scratch.builder.insertion_point.block)
        return possible

    def _async_copies(self, emitter: Emitter, shared: SSAValue, counter: SSAValue, stage: SSAValue) -> None:
        """This thread's chunks of the box at `counter`, as async copies into `stage` of `shared`."""
        origins, extents = self._origins(emitter, counter), tuple(self.promotion.box.extents)
        for chunk, guarded in self._rounds(emitter):

            def copy(inner: Emitter, chunk: SSAValue = chunk) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                accesses = ChunkAccesses(extents, self.promotion.copy_width, coordinates, self.analysis.facts, self._require_alignment)
                copied = accesses.async_copy(inner, self.promotion.source, [(o, o) for o in origins], extents, shared, [stage, *coordinates])
                assert copied, "can_copy_async said every chunk can"
                return []

            emit_if(emitter, self._guard(emitter, chunk), [], copy, None) if guarded else copy(emitter)

    def _prefetch(self, staging: Emitter, shared: SSAValue, scope: scf.ForOp, last: Counter) -> scf.ForOp:
        """Software pipelining of the copy: each run loads the next run's box into registers.

        The first box is loaded before the loop; a run stores the box it was handed, then loads
        the next one (at `min(counter + step, last counter)`, so that no check is needed past the
        end) while it computes. The loop carries the loaded elements.
        """
        before = Emitter(Block())
        first_box = self._load_box(before, self._origins(before, scope.lb))
        move_ops(before, scope.parent_block(), scope)  # type: ignore[arg-type]
        body = scope.body.block
        carried = [body.insert_arg(element.type, len(body.args)) for element in first_box]
        self._store_box(staging, shared, carried)
        following = staging.emit(arith.AddiOp(body.args[0], scope.step))
        next_counter = staging.emit(arith.MinUIOp(following, counter_value(staging, last)))
        next_box = self._load_box(staging, self._origins(staging, next_counter))
        terminator = body.last_op
        assert isinstance(terminator, scf.YieldOp)
        body.insert_op_before(scf.YieldOp(*terminator.arguments, *next_box), terminator)
        body.erase_op(terminator)
        pipelined = scf.ForOp(scope.lb, scope.ub, scope.step, [*scope.iter_args, *first_box], scope.detach_region(scope.body))
        pipelined.attributes |= scope.attributes
        scope.parent_block().insert_op_before(pipelined, scope)  # type: ignore[union-attr]
        for old, new in zip(scope.results, pipelined.results):
            old.replace_all_uses_with(new)
        scope.parent_block().erase_op(scope)  # type: ignore[union-attr]
        self.promotion.scope = pipelined
        return pipelined

    def _origins(self, emitter: Emitter, counter: SSAValue | None) -> list[SSAValue]:
        """The box's first element, per dimension, with the scope's counter at `counter`."""
        box = self.promotion.box
        return [self._origin(emitter, uniform, low, counter) for uniform, low in zip(box.uniform, box.low)]

    def _origin(self, emitter: Emitter, uniform: AffineForm, low: int, counter: SSAValue | None) -> SSAValue:
        total = emitter.index(low)
        for leaf, coefficient in uniform.terms:
            value = self._materialize(emitter, leaf, counter)
            if coefficient != 1:
                value = emitter.emit(arith.MuliOp(value, emitter.index(coefficient)))
            total = emitter.add(value, total)
        total.name_hint = "origin"
        return total

    def _materialize(self, emitter: Emitter, value: SSAValue, counter: SSAValue | None) -> SSAValue:
        """`value` at the start of a run of the scope (its counter at `counter` when given)."""
        scope = self.promotion.scope
        if isinstance(scope, scf.ForOp) and value is scope.body.block.args[0]:
            return value if counter is None else counter
        if not is_inside(value, scope) or value in self.analysis.uniform_counters:
            return value
        owner = value.owner
        assert isinstance(owner, Operation)
        clone = owner.clone(value_mapper={v: self._materialize(emitter, v, counter) for v in owner.operands})
        emitter.builder.insert(clone)
        return clone.results[owner.results.index(value)]

    def _rounds(self, emitter: Emitter) -> list[tuple[SSAValue, bool]]:
        """Each round of the copy: the chunk this thread moves, and whether it needs a guard."""
        promotion, threads = self.promotion, self.analysis.thread_loop.trip_count
        chunks = math.prod(promotion.box.extents) // promotion.copy_width
        thread = self.analysis.thread_loop.induction_variable
        return [
            (emitter.add(thread, emitter.index(start)) if start else thread, start + threads > chunks)
            for start in range(0, chunks, threads)
        ]

    def _coordinates(self, emitter: Emitter, chunk: SSAValue) -> list[SSAValue]:
        return chunk_coordinates(emitter, chunk, self.promotion.box.extents, self.promotion.copy_width)

    def _require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        require_parameter_alignment(self.kernel, memref_value, alignment)

    def _guard(self, emitter: Emitter, chunk: SSAValue) -> SSAValue:
        return emitter.below(chunk, math.prod(self.promotion.box.extents) // self.promotion.copy_width)

    def _load_box(self, emitter: Emitter, origins: list[SSAValue]) -> list[SSAValue]:
        """This thread's part of the box from global memory: `copy_width` elements per round."""
        width, element_type = self.promotion.copy_width, element_type_of(self.promotion.source)
        extents = tuple(self.promotion.box.extents)
        loaded: list[SSAValue] = []
        for chunk, guarded in self._rounds(emitter):

            def load(inner: Emitter, chunk: SSAValue = chunk) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                accesses = ChunkAccesses(extents, width, coordinates, self.analysis.facts, self._require_alignment)
                return accesses.load(inner, self.promotion.source, [(o, o) for o in origins], extents, None)

            if guarded:
                zeros = lambda inner: [inner.emit(arith.ConstantOp(zero_of(element_type)))] * width
                loaded += emit_if(emitter, self._guard(emitter, chunk), [element_type] * width, load, zeros)
            else:
                loaded += load(emitter)
        return loaded

    def _store_box(self, emitter: Emitter, shared: SSAValue, elements: Sequence[SSAValue]) -> None:
        """Writes what `_load_box` loaded into the shared buffer, round by round."""
        width = self.promotion.copy_width
        for position, (chunk, guarded) in enumerate(self._rounds(emitter)):
            piece = list(elements[position * width : (position + 1) * width])

            def store(inner: Emitter, chunk: SSAValue = chunk, piece: list[SSAValue] = piece) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                if self.promotion.transposed:
                    store_transposed(inner, shared, coordinates, piece)
                else:
                    store_chunk(inner, shared, coordinates, piece)
                return []

            if guarded:
                emit_if(emitter, self._guard(emitter, chunk), [], store, None)
            else:
                store(emitter)

    def _aligned(self, origin: SSAValue, width: int, shared: SSAValue) -> bool:
        row = shared.type.get_shape()[-1]  # type: ignore[attr-defined]
        return self.analysis.facts(origin).divisor % width == 0 and row % width == 0


# -- the pass ----------------------------------------------------------------------------------------


def promote_kernel(kernel: loop.KernelOp, stages: int = 0, tma: bool = False, warp_specialize: bool = False) -> None:
    """Promotes what is worth it; `stages` 0 takes the kernel's `mlc.pipeline_stages` (else 1);
    `tma` marks a kernel of warpgroup products `mlc.tma`, `warp_specialize` splits its pipelines."""
    if tma and attributes.WGMMA.read(kernel) is not None:
        attributes.TMA.write(kernel, UnitAttr())
    recorded = attributes.PIPELINE_STAGES.read(kernel)
    stages = stages or (recorded.value.data if isinstance(recorded, IntegerAttr) else 1)
    for thread_loop in thread_loops(kernel):
        for source in kernel.body.block.args:
            if not isinstance(source.type, MemRefType) or not is_read_only(source):
                continue
            limit = STAGED_SHARED_MEMORY_BYTES if stages >= 2 else SHARED_MEMORY_BYTES
            if attributes.WGMMA.read(kernel) is not None:
                limit = WGMMA_SHARED_MEMORY_BYTES
            planned = plan_promotion(source, thread_loop, limit - shared_bytes(kernel), per_iteration=stages >= 2 and attributes.CHAIN.read(kernel) is not None)
            if planned is None:
                continue
            promotion, analysis = planned
            element_bytes = byte_width(element_type_of(source))
            cost = unpadded = 0
            if not needs_swizzle(promotion.sites):
                promotion.padding, cost, unpadded = choose_padding(promotion, analysis, element_bytes)
            extents = promotion.shared_extents
            stage_bytes = math.prod([*extents[:-1], extents[-1] + promotion.padding]) * element_bytes
            fitting = min(stages, (limit - shared_bytes(kernel)) // stage_bytes)
            existing = StagedLoop.existing_stages(promotion.scope) or TmaStagedLoop.existing_stages(promotion.scope)
            if existing is not None:  # one pipeline per loop: its stage count, or registers
                fitting = existing if existing <= fitting else 1
            PromotionRewriter(kernel, promotion, analysis).apply(describe_promotion(promotion, analysis, cost, unpadded), fitting)
    for scope in [op for op in kernel.walk() if isinstance(op, scf.ForOp)]:
        overlap_products(scope)
    if warp_specialize:
        specialize_warps(kernel)


@dataclass(frozen=True)
class LoopPromoteShared(ModulePass):
    """Stage global buffers that a block's threads re-read in shared memory, copied cooperatively."""

    name = "loop-promote-shared"

    stages: int = 0
    """Buffers per copy in a loop: 2 or more pipeline async copies, 1 copies through registers;
    0 (the default) takes each kernel's `mlc.pipeline_stages`, 1 where it has none."""

    tma: bool = False
    """Stage the operands of warpgroup products with bulk tensor copies (TMA) on mbarriers
    (`mlc.tma` on each wgmma kernel), where an operand allows; off: cp.async (or the kernel's own `mlc.tma`)."""

    warp_specialize: bool = False
    """With `tma`: a producer warpgroup issues the bulk copies, the others consume (`warp_specialization.py`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            promote_kernel(kernel, self.stages, self.tma, self.warp_specialize)
