"""convert-tile-dot-to-cpu: tile kernels with `tile.dot` become CPU register micro-kernels.

The CPU pipeline runs this pass just before `convert-tile-to-loop`, which lowers the remaining
tile kernels (and would lower these with the GPU's thread layout). Every `tile.kernel` holding a
`tile.dot` becomes a `loop.kernel` of vector micro-kernels (`matmul_cpu.py`: the program's block
cut into MR x NR micro-tiles, each accumulated in MR * NR / W vectors of W f32 lanes with
`vector.fma` along K, the epilogue applied to its scalars), and its `tile.launch`es
`loop.launch`es. Kernels without a dot, and GEMM-chain kernels (`chain_loop.py`: two dots and an
online softmax), are left for `convert-tile-to-loop`.

Options: `micro-kernel=MR,NR,W` (powers of two) fixes the micro-kernel; by default W is the
host's vector width in f32 lanes (16 with AVX-512, 8 with AVX/AVX2, 4 otherwise; from llvmlite's
host CPU features), MR = 8 and NR = 2 W. The loop kernel records its choice in
`mlc.cpu_micro_kernel`; the same attribute on a tile kernel overrides the option for it.

Preconditions: f32 accumulation with precision "ieee" (the dot's FMA chain; others are reported).
Limits: those of `matmul_cpu.py`.
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
from mlc.transforms.lowering.cpu_micro_kernel import default_micro_kernel
from mlc.transforms.lowering.dot_operands import contains_dot
from mlc.transforms.lowering.dot_precision import refuse_unhonoured_precisions
from mlc.transforms.lowering.matmul_cpu import lower_cpu_dot_kernel

VECTOR_BYTES = 64
"""The widest vector access the lowering may emit (an AVX-512 register)."""


@dataclass(frozen=True)
class ConvertTileDotToCpu(ModulePass):
    """Lower tile kernels with dots to CPU loop kernels of vector register micro-kernels."""

    name = "convert-tile-dot-to-cpu"

    micro_kernel: tuple[int, ...] = ()
    """(MR, NR, W) for every dot kernel instead of the host's default (8, 2 W, W)."""

    def __post_init__(self) -> None:
        sizes = self.micro_kernel
        if sizes and (len(sizes) != 3 or any(size < 1 or size & (size - 1) for size in sizes) or sizes[1] % sizes[2]):
            raise ValueError(f"micro-kernel must be three powers of two MR,NR,W with W dividing NR, got {','.join(map(str, sizes))}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        host = default_micro_kernel()
        lowered: set[str] = set()
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp) and contains_dot(k) and not is_chain_kernel(k)]:
            refuse_unhonoured_precisions(kernel)
            Rewriter.replace_op(kernel, lower_cpu_dot_kernel(kernel, VECTOR_BYTES, self.micro_kernel or host), safe_erase=False)
            lowered.add(kernel.sym_name.data)
        for launch in [l for l in op.walk() if isinstance(l, tile.LaunchOp) and l.kernel.root_reference.data in lowered]:
            Rewriter.replace_op(launch, loop.LaunchOp(launch.kernel, launch.arguments))
