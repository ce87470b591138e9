"""Which `tile.dot` precisions each target's lowering can honour, and the refusal of the others.

On the GPU, `convert-tile-to-loop{tensor-cores=true}` runs f32 dots of precision "tf32" and
"3xtf32" on tensor cores (`matmul_mma.py`: mma.sync m16n8k8 on TF32 registers; on Hopper, tf32
products on K-major operands as TF32 wgmma, `matmul_wgmma.py`), and every other
f32 dot as f32 fused multiply-adds (`matmul_loop.py`, CUDA cores): the GPU honours all three
precisions. The CPU lowering (`convert-tile-dot-to-cpu`) and convert-tile-to-loop without tensor
cores compute every product in IEEE f32, so they honour `precision = "ieee"` only; a dot asking
for "tf32" or "3xtf32" there is refused with a diagnostic naming the op, the precision and the
targets, rather than silently computed at another precision. (Computing TF32's rounding in
software would be slower than IEEE and so give the caller nothing they asked for.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from mlc.diagnostics import PassFailure
from mlc.dialects.precision import DEFAULT_PRECISION, PRECISIONS
from mlc.dialects.tile import ops as tile

FMA_PRECISIONS = frozenset({DEFAULT_PRECISION})
"""The precisions that the fused-multiply-add lowering of `tile.dot` computes."""

FMA_REASON = (
    "tile.dot is lowered to f32 fused multiply-adds (the CPU, or CUDA cores without the tensor-core "
    "lowering), which compute 'ieee' only; TF32 needs tensor cores (convert-tile-to-loop{tensor-cores=true}, "
    "the GPU pipeline)"
)
TENSOR_CORE_PRECISIONS = frozenset(PRECISIONS)
"""The precisions the GPU computes: ieee on CUDA cores, tf32 and 3xtf32 on tensor cores."""
TENSOR_CORE_REASON = "f32 products of precision 'tf32' and '3xtf32' run on tensor cores (mma.sync, sm_80+)"


@dataclass(frozen=True)
class HonouredPrecisions:
    """The precisions a target's lowering computes, and why not the others."""

    precisions: frozenset[str]
    reason: str

    def __contains__(self, precision: object) -> bool:
        return precision in self.precisions


def honoured_precisions(target: str, tensor_cores: bool = True) -> HonouredPrecisions:
    """The matmul precisions that the lowering for `target` ('cpu' or 'cuda') computes;
    `tensor_cores`: whether the GPU has TF32 tensor cores (sm_80+)."""
    if target == "cuda" and tensor_cores:
        return HonouredPrecisions(TENSOR_CORE_PRECISIONS, TENSOR_CORE_REASON)
    return HonouredPrecisions(FMA_PRECISIONS, FMA_REASON)


def refuse_unhonoured_precisions(kernel: Operation) -> None:
    """Raises a located diagnostic for the first `tile.dot` of `kernel` whose precision the FMA
    lowering does not compute."""
    for op in kernel.walk():
        if isinstance(op, tile.DotOp) and op.precision.data not in FMA_PRECISIONS:
            raise PassFailure(
                op,
                f"precision '{op.precision.data}' cannot be honoured by convert-tile-to-loop: {FMA_REASON} "
                "(ask for precision 'ieee')",
            )
