"""convert-tile-dot-to-cpu keeps what matmul kernels compute, exactly, for every micro-kernel shape.

Hypothesis draws a matmul program (`matmul_programs.py`: odd sizes, broadcast batches, f32, f16
and bf16 operands, elementwise producers and epilogues), a block size and a micro-kernel
(MR, NR, W); the module is lowered to the tile level with that block, the pass is applied with
that micro-kernel, and the loop-level interpreter must give the tile interpreter's results bit for
bit: each output is the same chain of f32 fused multiply-adds in increasing K, whether the rhs
panel is packed or read in place, and the epilogue applies the same scalar ops to it.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matmul_programs import matmul_programs
from mlc.dialects.loop import ops as loop
from programs import assert_equivalent, lower, random_inputs

TO_TILE = "graph-decompose,graph-fuse,graph-plan-memory,convert-graph-to-tile{{matmul-tile={block}}},canonicalize"
BLOCKS = ("16,32,8", "32,64,16", "64,32,4")
MICRO_KERNELS = ("8,32,16", "4,16,8", "2,8,4", "1,4,4")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    program=matmul_programs(),
    block=st.sampled_from(BLOCKS),
    micro_kernel=st.sampled_from(MICRO_KERNELS),
    seed=st.integers(0, 2**32 - 1),
)
def test_micro_kernels_compute_what_the_tile_kernel_does(program: str, block: str, micro_kernel: str, seed: int):
    to_tile = TO_TILE.format(block=block)
    before = lower(program, to_tile)
    after = lower(program, f"{to_tile},convert-tile-dot-to-cpu{{micro-kernel={micro_kernel}}}")
    lowered = [op for op in after.walk() if isinstance(op, loop.KernelOp) and "mlc.cpu_micro_kernel" in op.attributes]
    assert lowered, "the matmul kernel was not lowered by the pass"
    assert_equivalent(before, after, random_inputs(program, seed))
