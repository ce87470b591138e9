"""convert-tile-to-loop: distribute each tile over the threads of a block, coalesced and vectorised.

Every `tile.kernel` becomes a `loop.kernel` whose grid is a nest of block-mapped parallel loops
and whose program is a thread-mapped parallel loop; every `tile.launch` becomes a `loop.launch`.

Layout (`analysis/thread_layout.py`). All tiles of a kernel share one shape, cut into chunks of
V contiguous elements along the last dimension (16 bytes of the widest element type), chunk c
going to thread `c mod T` in repetition `c div T`: each warp reads or writes one contiguous span per
repetition (coalesced), each thread its V elements with one vector access (Triton's blocked layout).

Per thread, one repetition is generated once inside an `scf.for` over the repetitions: uniform index
code is cloned before it; each tile value becomes V scalars (broadcast tiles a single scalar),
`tile.map` bodies are cloned once per element.

Loops. An `scf.for` in the kernel (chunk loops over long rows, `group_kernel.py`) stays a loop in
each thread, carrying its tiles as the thread's elements (V per repetition); tile values from
outside that its body uses are materialized before it (not repeated per iteration); its counter
is seeded for the index analysis with its range and step (chunk origins: multiples of the chunk).

Masks and vectors. The loads and stores of a chunk are emitted by `chunk_access.py`: a range and
divisibility analysis of the tile origins (`index_analysis.py`) proves most accesses in bounds (no
mask) and aligned (one 16-byte vector access); the rest are guarded, partial chunks scalar. The
kernel records in `mlc.arg_alignment` the alignment each parameter needs (the runtime checks it).

Kernels with `tile.dot` go to `matmul_loop.py`: a register micro-tile of the output per thread, K
in short vector steps, IEEE f32 (TF32 is refused there: `dot_precision.py`). With `tensor-cores=true`,
dots tensor cores can run (f16/bf16 operands, or f32 at precision tf32/3xtf32; f32 accumulation) go to `matmul_mma.py` (warps of
`loop.mma_sync`) or with `wgmma=true` (sm_90a) to `matmul_wgmma.py` (warpgroups of `loop.wgmma`);
GEMM chains to `chain_wgmma.py` (with `wgmma=true`, where the chain plan asks), `chain_mma.py` or `chain_loop.py`; `tile.transpose` kernels to `transpose_loop.py`;
everything else to `elementwise_loop.py` (the layout above).
Limits (reported as unsupported): tiles of several shapes in a kernel (but broadcast and dot
operands), tile ops but load, store, broadcast, splat, map, reduce, in_bounds, range, gather, dot,
loops carrying scalars and `tile.reduce` inside a loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chain_loop import is_chain_kernel
from mlc.transforms.lowering.chain_wgmma import lower_chain
from mlc.transforms.lowering.dot_operands import contains_dot
from mlc.transforms.lowering.dot_precision import refuse_unhonoured_precisions
from mlc.transforms.lowering.elementwise_loop import KernelLowering
from mlc.transforms.lowering.matmul_loop import lower_dot_kernel
from mlc.transforms.lowering.matmul_wgmma import lower_tensor_core_kernel
from mlc.transforms.lowering.transpose_loop import contains_transpose, lower_transpose_kernel

@dataclass(frozen=True)
class ConvertTileToLoop(ModulePass):
    """Distribute tile kernels over blocks and threads as coalesced, vectorised loop nests."""

    name = "convert-tile-to-loop"

    vector_bytes: int = 16
    tensor_cores: bool = False
    """Lower the dots that tensor cores can run to warps of `loop.mma_sync` (`matmul_mma.py`)."""
    wgmma: bool = False
    """With tensor-cores: warpgroups of `loop.wgmma` (sm_90a, `matmul_wgmma.py`) where they apply."""

    def __post_init__(self) -> None:
        if self.vector_bytes < 1:
            raise ValueError(f"vector-bytes must be positive, got {self.vector_bytes}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            if is_chain_kernel(kernel):  # on tensor cores where its products can use them
                lowered = lower_chain(kernel, self.vector_bytes, self.tensor_cores, self.wgmma)
            elif contains_transpose(kernel):
                lowered = lower_transpose_kernel(kernel, self.vector_bytes)
            elif self.tensor_cores and (tensor_core := lower_tensor_core_kernel(kernel, self.vector_bytes, self.wgmma)):
                lowered = tensor_core
            elif contains_dot(kernel):
                refuse_unhonoured_precisions(kernel)
                lowered = lower_dot_kernel(kernel, self.vector_bytes)
            else:
                lowered = KernelLowering(kernel, self.vector_bytes).lower()
            Rewriter.replace_op(kernel, lowered, safe_erase=False)
        for launch in [l for l in op.walk() if isinstance(l, tile.LaunchOp)]:
            Rewriter.replace_op(launch, loop.LaunchOp(launch.kernel, launch.arguments))
