"""f32 -> bf16 rounding written in integer `arith` ops, for targets whose own conversion differs.

`arith.truncf` from f32 to bf16 means IEEE round-to-nearest-even, subnormals kept, NaN kept a
NaN: what PyTorch's `c10::BFloat16(float)` and numpy's `ml_dtypes.bfloat16` compute. LLVM lowers
the matching `fptrunc` differently per host CPU: to `vcvtneps2bf16` where the CPU has AVX512-BF16
(which flushes subnormal inputs and results to zero), else to a call of `__truncsfbf2`, which
only libgcc 13 and later provide (MCJIT cannot load the kernel elsewhere). `convert-loop-to-cpu`
therefore expands every such truncation into the rounding itself, the same on every host:

    bits    = bitcast x : f32 -> i32
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)      (ties go to the even bf16; a carry into the
                                                       exponent rounds up to the next binade or inf)
    result  = bitcast trunci((isnan(x) ? bits | 0x400000 : rounded) >> 16) : i16 -> bf16

(a NaN keeps its sign and payload's top bits and is made quiet, so it cannot round to infinity).
A 1-d vector is rounded element by element (xDSL 0.74's `arith.trunci` takes no vectors); mlc's
CPU kernels truncate scalars anyway. On the GPU, `cvt.rn.bf16.f32` (sm_80+) is this rounding, so the GPU
path keeps `arith.truncf`. Other sources (f64, f16) are left alone: mlc's kernels compute bf16 in
f32, and a f16 -> bf16 cast is extended to f32 first by the elementwise expansion.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float32Type,
    IntegerAttr,
    VectorType,
    f32,
    i16,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint

QUIET_NAN_BIT = 0x400000
ROUNDING_BIAS = 0x7FFF


def _element_type(type_: Attribute) -> Attribute:
    return type_.element_type if isinstance(type_, VectorType) else type_


def is_bfloat16_truncation(op: Operation) -> bool:
    """An `arith.truncf` from f32 (scalar or vector) to bf16."""
    return (
        isinstance(op, arith.TruncFOp)
        and isinstance(_element_type(op.input.type), Float32Type)
        and isinstance(_element_type(op.result.type), BFloat16Type)
    )


def _constant(builder: Builder, value: int) -> SSAValue:
    return builder.insert(arith.ConstantOp(IntegerAttr(value, i32))).result


def round_to_bfloat16(builder: Builder, value: SSAValue) -> SSAValue:
    """f32 `value` rounded to bf16 to nearest, ties to even."""
    bits = builder.insert(arith.BitcastOp(value, i32)).result
    sixteen = _constant(builder, 16)
    high = builder.insert(arith.ShRUIOp(bits, sixteen)).result
    lowest_kept = builder.insert(arith.AndIOp(high, _constant(builder, 1))).result
    bias = builder.insert(arith.AddiOp(lowest_kept, _constant(builder, ROUNDING_BIAS))).result
    rounded = builder.insert(arith.AddiOp(bits, bias)).result
    quiet_nan = builder.insert(arith.OrIOp(bits, _constant(builder, QUIET_NAN_BIT))).result
    is_nan = builder.insert(arith.CmpfOp(value, value, "uno")).result
    chosen = builder.insert(arith.SelectOp(is_nan, quiet_nan, rounded)).result
    shifted = builder.insert(arith.ShRUIOp(chosen, sixteen)).result
    narrow = builder.insert(arith.TruncIOp(shifted, i16)).result
    return builder.insert(arith.BitcastOp(narrow, BFloat16Type())).result


def _round_vector(builder: Builder, value: SSAValue, vector_type: VectorType) -> SSAValue:
    """A 1-d vector of f32 rounded element by element (xDSL's arith.trunci takes no vectors)."""
    result_type = VectorType(BFloat16Type(), vector_type.get_shape())
    count = vector_type.get_shape()[0]
    zeros = DenseIntOrFPElementsAttr.from_list(result_type, [0.0] * count)  # type: ignore[arg-type]
    result = builder.insert(arith.ConstantOp(zeros, result_type)).result
    for position in range(count):
        element = builder.insert(vector.ExtractOp(value, [position], f32)).result
        result = builder.insert(vector.InsertOp(round_to_bfloat16(builder, element), result, [position], result_type)).result
    return result


def expand_bfloat16_truncations(root: Operation) -> int:
    """Replaces every f32 -> bf16 `arith.truncf` inside `root` by `round_to_bfloat16`; returns how many."""
    truncations = [op for op in root.walk() if is_bfloat16_truncation(op)]
    for truncation in truncations:
        assert isinstance(truncation, arith.TruncFOp)
        builder = Builder(InsertPoint.before(truncation))
        source_type = truncation.input.type
        if isinstance(source_type, VectorType):
            rounded = _round_vector(builder, truncation.input, source_type)
        else:
            rounded = round_to_bfloat16(builder, truncation.input)
        truncation.result.replace_all_uses_with(rounded)
        truncation.detach()
        truncation.erase()
    return len(truncations)
