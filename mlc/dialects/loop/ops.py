"""The loop dialect: explicit loop nests over buffers, with a hardware mapping per parallel loop.

A `loop.kernel` is a function over memrefs whose body is ordinary scalar (and short-vector) code
in the standard dialects (`arith`, `math`, `scf`, `memref`, `vector`) plus `loop.parallel`, a loop
whose iterations are independent and whose `mapping` says which hardware index runs them:

    loop.kernel @add(%x: memref<1024xf32>, %out: memref<1024xf32>) {
      loop.parallel %block < 4 mapping block.x {
        loop.parallel %thread < 256 mapping thread.x {
          %c256 = arith.constant 256 : index
          %base = arith.muli %block, %c256 : index
          %i = arith.addi %base, %thread : index
          %v = memref.load %x[%i] : memref<1024xf32>
          memref.store %v, %out[%i] : memref<1024xf32>
        }
      }
      loop.return
    }

Semantics. `loop.parallel %i < N` runs its body for every `0 <= %i < N`, in any order or at once.
A loop mapped to `block.x|y|z` runs its iterations on that grid dimension and one mapped to
`thread.x|y|z` on that block dimension, one iteration per block or thread: the trip count *is* the
grid or block size. A loop without a mapping is parallel but leaves the choice to the lowering
(the GPU lowering runs it sequentially inside a thread; the CPU lowering runs every parallel loop
sequentially). Statements in sequence are ordered: two sibling thread loops behave as if all
threads finish the first before any starts the second, so the loop level needs no barriers; the
GPU lowering makes that order explicit again with `mlc_gpu.barrier` where shared memory needs it.

Memory spaces are the memref's: none is global (device) memory, `3` is memory shared by the
threads of a block, `5` is private to a thread (NVVM's numbering).

Shared memory inside a thread loop is *block-synchronous*: each statement that touches a shared
buffer completes in every iteration of the thread loop before any iteration goes past it, so the
threads of a block can exchange data through shared memory within one thread loop (a cooperative
copy, then reads of what other threads copied; see `loop-promote-shared`). The control flow around
such statements must be the same for all threads. The interpreter runs thread loops in lockstep,
which is this order; `gpu-insert-barriers` realises it on the GPU with the fewest barriers. The CPU
lowering runs threads one after another and so does not accept shared buffers.

The ops live in six modules; this one gathers them into the `Loop` dialect. Import them from here
(`from mlc.dialects.loop import ops as loop`):

| module | ops |
| --- | --- |
| `loops.py` | kernel, return, parallel, yield, all_reduce, launch (and the mappings, memory spaces) |
| `mma.py` | mma_sync, ldmatrix, round_tf32 (warp-level tensor cores) |
| `wgmma.py` | wgmma, wgmma_wait (warpgroup-level tensor cores) |
| `async_copy.py` | async_copy, async_commit, async_wait (`cp.async`) |
| `mbarrier.py` | warp_sync, mbarrier_init, mbarrier_arrive, mbarrier_wait |
| `tma.py` | tma_load (bulk tensor copies) |

`syntax.py` holds the `%buffer[%i, %j]` syntax several of them share.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from mlc.dialects.loop.loops import (
    AllReduceOp,
    BLOCK_MAPPINGS,
    KernelOp,
    LaunchOp,
    MAPPINGS,
    MAX_THREADS_PER_BLOCK,
    PRIVATE_MEMORY_SPACE,
    ParallelOp,
    ReturnOp,
    SHARED_MEMORY_SPACE,
    THREAD_MAPPINGS,
    YieldOp,
)
from mlc.dialects.loop.mma import (
    LDMATRIX_ROW,
    LdMatrixOp,
    MMA_OPERAND_TYPES,
    MMA_SHAPE,
    MmaSyncOp,
    RoundTf32Op,
    TF32_IGNORED_BITS,
    TF32_MMA_SHAPE,
    WARP_SIZE,
    mma_shape,
)
from mlc.dialects.loop.wgmma import (
    TF32_WGMMA_DEPTH,
    WARPGROUP_SIZE,
    WGMMA_DEPTH,
    WGMMA_OPERAND_TYPES,
    WGMMA_ROWS,
    WgmmaOp,
    WgmmaWaitOp,
)
from mlc.dialects.loop.async_copy import (
    ASYNC_COPY_BYTES,
    AsyncCommitOp,
    AsyncCopyOp,
    AsyncWaitOp,
)
from mlc.dialects.loop.mbarrier import (
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierWaitOp,
    WarpSyncOp,
)
from mlc.dialects.loop.tma import (
    TMA_BOX_LIMIT,
    TmaLoadOp,
)

Loop = Dialect(
    "loop",
    [KernelOp, ReturnOp, ParallelOp, YieldOp, AllReduceOp, LaunchOp, MmaSyncOp, RoundTf32Op, LdMatrixOp, WgmmaOp, WgmmaWaitOp, AsyncCopyOp, AsyncCommitOp, AsyncWaitOp,
     WarpSyncOp, MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, TmaLoadOp],
    [],
)

__all__ = [
    "AllReduceOp",
    "ASYNC_COPY_BYTES",
    "AsyncCommitOp",
    "AsyncCopyOp",
    "AsyncWaitOp",
    "BLOCK_MAPPINGS",
    "KernelOp",
    "LaunchOp",
    "LDMATRIX_ROW",
    "LdMatrixOp",
    "Loop",
    "MAPPINGS",
    "MAX_THREADS_PER_BLOCK",
    "MbarrierArriveOp",
    "MbarrierInitOp",
    "MbarrierWaitOp",
    "MMA_OPERAND_TYPES",
    "MMA_SHAPE",
    "mma_shape",
    "MmaSyncOp",
    "ParallelOp",
    "PRIVATE_MEMORY_SPACE",
    "ReturnOp",
    "RoundTf32Op",
    "SHARED_MEMORY_SPACE",
    "TF32_IGNORED_BITS",
    "TF32_MMA_SHAPE",
    "TF32_WGMMA_DEPTH",
    "THREAD_MAPPINGS",
    "TMA_BOX_LIMIT",
    "TmaLoadOp",
    "WARP_SIZE",
    "WARPGROUP_SIZE",
    "WarpSyncOp",
    "WGMMA_DEPTH",
    "WGMMA_OPERAND_TYPES",
    "WGMMA_ROWS",
    "WgmmaOp",
    "WgmmaWaitOp",
    "YieldOp",
]
