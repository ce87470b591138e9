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
The analysis (steps 1-4) is `mlc/transforms/analysis/shared_memory_promotion.py`; the rewriting
(steps 4-6 for one promotion) is `mlc/transforms/lowering/shared_promotion_rewrite.py`; this file
decides, per kernel, what to promote and with how many stages.

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
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.shared_memory_promotion import (
    SHARED_MEMORY_BYTES,
    STAGED_SHARED_MEMORY_BYTES,
    WGMMA_SHARED_MEMORY_BYTES,
    choose_padding,
    describe_promotion,
    element_type_of,
    is_read_only,
    needs_swizzle,
    plan_promotion,
    shared_bytes,
    thread_loops,
)
from mlc.transforms.lowering.async_pipeline import StagedLoop, overlap_products
from mlc.transforms.lowering.shared_promotion_rewrite import PromotionRewriter
from mlc.transforms.lowering.tma_pipeline import TmaStagedLoop
from mlc.transforms.lowering.warp_specialization import specialize_warps


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
