"""Which `tile.dot` precisions the loop lowering can honour, and the refusal of the others.

`convert-tile-to-loop` lowers a `tile.dot` to f32 fused multiply-adds (`matmul_loop.py`): CUDA
cores on the GPU, scalar or vector code on the CPU. Those compute every product in IEEE f32, so
they honour `precision = "ieee"` only; a dot asking for "tf32" or "3xtf32" (whose products TF32
tensor cores compute) is refused with a diagnostic naming the op, the precision and the targets,
rather than silently computed at another precision. (Computing TF32's rounding in software would
be slower than IEEE on both targets and so give the caller nothing they asked for.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from mlc.diagnostics import PassFailure
from mlc.dialects.precision import DEFAULT_PRECISION
from mlc.dialects.tile import ops as tile

FMA_PRECISIONS = frozenset({DEFAULT_PRECISION})
"""The precisions that the fused-multiply-add lowering of `tile.dot` computes."""

FMA_REASON = (
    "tile.dot is lowered to f32 fused multiply-adds (CUDA cores on the GPU, the CPU), which compute "
    "'ieee' only; TF32 needs tensor cores, which mlc does not use yet"
)


@dataclass(frozen=True)
class HonouredPrecisions:
    """The precisions a target's lowering computes, and why not the others."""

    precisions: frozenset[str]
    reason: str

    def __contains__(self, precision: object) -> bool:
        return precision in self.precisions


def honoured_precisions(target: str) -> HonouredPrecisions:
    """The matmul precisions that the lowering for `target` ('cpu' or 'cuda') computes."""
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
