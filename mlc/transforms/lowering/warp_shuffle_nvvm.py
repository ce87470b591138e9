"""`mlc_gpu.shuffle` as NVVM's `llvm.nvvm.shfl.sync.*` intrinsics (used by convert-gpu-to-nvvm).

A shuffle reads a value from another lane of the full 32-lane warp. PTX's `shfl.sync` moves 32
bits: f32 and i32 values travel as they are, an f16 is widened to f32 and narrowed back, and an
i64 travels as its low and high words, each shuffled from the same source lane and joined again
(what CUDA's `__shfl_xor_sync` does for 64-bit values). The clamp operand is 0 for `up` and 31
otherwise, so that a source lane outside the warp leaves the lane's own value.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import IntegerAttr, f16, f32, i32, i64
from xdsl.ir import Operation, SSAValue

from mlc.dialects.gpu import ops as gpu

SHUFFLE_CLAMP = {"xor": 0x1F, "up": 0, "down": 0x1F, "idx": 0x1F}
"""PTX `shfl.sync`'s c operand for a full 32-lane warp: 0 for up, 31 otherwise."""


def lower_shuffle(op: gpu.ShuffleOp) -> tuple[list[Operation], SSAValue]:
    """`shfl.sync.<mode>` over the full warp; f16 travels as f32, i64 as two 32-bit halves."""
    value, value_type = op.value, op.value.type
    if value_type == i64:
        return _shuffle_halves(op.mode.data, value, op.offset.value.data)
    ops: list[Operation] = []
    if value_type == f16:
        widened = arith.ExtFOp(value, f32)
        ops.append(widened)
        value = widened.result
    word_ops, result = _shuffle_word(op.mode.data, value, op.offset.value.data)
    ops += word_ops
    if value_type == f16:
        narrowed = arith.TruncFOp(result, f16)
        ops.append(narrowed)
        result = narrowed.result
    return ops, result


def _shuffle_word(mode: str, value: SSAValue, offset: int) -> tuple[list[Operation], SSAValue]:
    """One `llvm.nvvm.shfl.sync.*` of a 32-bit (i32 or f32) value."""
    full_warp = arith.ConstantOp(IntegerAttr(-1, i32))
    lane_offset = arith.ConstantOp(IntegerAttr(offset, i32))
    clamp = arith.ConstantOp(IntegerAttr(SHUFFLE_CLAMP[mode], i32))
    intrinsic_mode = {"xor": "bfly", "up": "up", "down": "down", "idx": "idx"}[mode]
    suffix = "i32" if value.type == i32 else "f32"
    shuffle = llvm.CallIntrinsicOp(
        f"llvm.nvvm.shfl.sync.{intrinsic_mode}.{suffix}",
        [full_warp.result, value, lane_offset.result, clamp.result],
        [value.type],
    )
    return [full_warp, lane_offset, clamp, shuffle], shuffle.results[0]


def _shuffle_halves(mode: str, value: SSAValue, offset: int) -> tuple[list[Operation], SSAValue]:
    """An i64 shuffle as CUDA's `__shfl_xor_sync` does it: the low and high words separately,
    from the same source lane, then joined again."""
    thirty_two = arith.ConstantOp(IntegerAttr(32, i64))
    low = arith.TruncIOp(value, i32)
    shifted_down = arith.ShRUIOp(value, thirty_two.result)
    high = arith.TruncIOp(shifted_down.result, i32)
    low_ops, moved_low = _shuffle_word(mode, low.result, offset)
    high_ops, moved_high = _shuffle_word(mode, high.result, offset)
    widened_low = arith.ExtUIOp(moved_low, i64)
    widened_high = arith.ExtUIOp(moved_high, i64)
    shifted_up = arith.ShLIOp(widened_high.result, thirty_two.result)
    joined = arith.OrIOp(shifted_up.result, widened_low.result)
    ops = [thirty_two, low, shifted_down, high, *low_ops, *high_ops, widened_low, widened_high, shifted_up, joined]
    return ops, joined.result
