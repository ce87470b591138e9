"""Map bodies computed on vectors of f32 lanes: what the CPU's row, column and matmul lowerings share.

A `tile.map` whose body is of `VECTOR_OPS` (elementwise f32 arithmetic and the math functions the
CPU pipeline lowers on vectors), constants, comparisons and selects computes a chunk of W elements
as one op per body op on `vector<W x f32>` (`vector_body`): operands that are scalars for the
whole chunk (per-row or per-column values, constants) are broadcast, a select's i1 condition (a
row's mask) stays scalar. Each lane computes what the tile interpreter computes for its element.

Comparisons (`arith.cmpf`, as in `where(x > 0, x, 0.01 * x)`) of vectors become `llvm.fcmp` on
vectors, a vector of i1, and the selects they decide `llvm.select` lane by lane
(`mlc.dialects.llvm_extra`): xDSL 0.74's arith types a comparison's result i1 and a select's
condition i1, so the two cannot stay arith ops on vectors. A comparison cast to f32
(`arith.uitofp` of it, as graph.cast writes `(x > y).astype(f32) * z`) is a select too: of 1.0
and 0.0, lane by lane. A comparison is taken only where every use is a select's condition, such
a cast or the map's yield: an i1 map result, which the row kernels store as the comparison's
vector of i1 (convert-vector-to-llvm writes it as bytes, as memrefs of i1 hold it) where only
stores use it (`cpu_vector_kernels.stored_comparison`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, math, vector
from xdsl.dialects.builtin import Float32Type, FloatAttr, VectorType, f32
from xdsl.ir import Block, SSAValue

from mlc.dialects import llvm_extra
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter

VECTOR_OPS = (
    arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.MaximumfOp, arith.MinimumfOp, arith.NegfOp,
    math.ExpOp, math.LogOp, math.TanhOp, math.ErfOp, math.SinOp, math.CosOp, math.PowFOp, math.SqrtOp, math.RsqrtOp,
    math.AbsFOp, math.FmaOp,
)
"""Map-body ops computed on vectors: elementwise f32 ops that the CPU pipeline lowers on vectors
(exp, log, tanh, erf, sin, cos, pow by expand-math-for-cpu's vector polynomials, rsqrt there as
1 / sqrt in f32 lanes, the others by LLVM intrinsics).
A sigmoid is 1 / (1 + exp(-x)) and a GELU x/2 (1 + erf(x / sqrt 2)) or its tanh form by then."""

BOOLEAN_CASTS = (arith.UIToFPOp,)
"""Casts of a comparison to f32, computed as selects of constants on vectors."""


def vector_map_refusal(op: tile.MapOp) -> str | None:
    """Why a map's body cannot be computed on vectors (`vector_body`), or None."""
    for body_op in op.body.block.ops:
        if not isinstance(body_op, (*VECTOR_OPS, arith.ConstantOp, arith.CmpfOp, arith.SelectOp, *BOOLEAN_CASTS, tile.YieldOp)):
            return f"{body_op.name} in a map over columns"
        if isinstance(body_op, BOOLEAN_CASTS) and not (isinstance(body_op.input.owner, arith.CmpfOp) and isinstance(body_op.result.type, Float32Type)):
            return f"{body_op.name} in a map over columns other than of a comparison to f32"
        if isinstance(body_op, arith.CmpfOp) and (refusal := _comparison_refusal(body_op)):
            return refusal
        if isinstance(body_op, arith.SelectOp) and body_op.cond.owner is not op.body.block and not isinstance(body_op.cond.owner, arith.CmpfOp):
            return "a select in a map over columns on a condition other than a mask or a comparison"
    return None


def _comparison_refusal(comparison: arith.CmpfOp) -> str | None:
    if arith.CMPF_COMPARISON_OPERATIONS[comparison.predicate.value.data] in ("false", "true"):
        return "a constant comparison in a map over columns"
    for use in comparison.result.uses:
        if isinstance(use.operation, (*BOOLEAN_CASTS, tile.YieldOp)):  # a yield: a stored comparison
            continue
        if not isinstance(use.operation, arith.SelectOp) or use.index != 0:
            return "a comparison in a map over columns used other than as a select's condition, cast to f32 or yielded"
    return None


def as_vector(emitter: Emitter, value: SSAValue, vector_type: VectorType) -> SSAValue:
    """`value`, broadcast to `vector_type` unless it is a vector already."""
    return value if isinstance(value.type, VectorType) else emitter.emit(vector.BroadcastOp(value, vector_type))


def vector_body(
    emitter: Emitter, body: Block, arguments: Sequence[SSAValue], vector_type: VectorType, outer: dict[SSAValue, SSAValue]
) -> list[SSAValue]:
    """A map or combiner body on chunks: ops of vector operands on vectors (scalar operands
    broadcast; a select's i1 condition, a mask, stays scalar), ops of scalars cloned as they are.
    `outer` maps the values the body uses from outside it."""
    mapping: dict[SSAValue, SSAValue] = dict(outer)
    mapping.update(zip(body.args, arguments))
    for op in body.ops:
        if isinstance(op, tile.YieldOp):
            return [mapping[v] for v in op.operands]
        operands = [mapping[v] for v in op.operands]
        if not any(isinstance(v.type, VectorType) for v in operands):
            clone = op.clone(value_mapper=mapping)
            emitter.builder.insert(clone)
            mapping.update(zip(op.results, clone.results))
            continue
        if isinstance(op, arith.CmpfOp):
            lhs, rhs = (as_vector(emitter, v, vector_type) for v in operands)
            predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            mapping[op.result] = emitter.emit(llvm_extra.FCmpOp(lhs, rhs, predicate))
            continue
        if isinstance(op, BOOLEAN_CASTS):  # of a vector comparison: true -> 1.0, false -> 0.0
            when_true, when_false = (as_vector(emitter, emitter.emit(arith.ConstantOp(FloatAttr(v, f32))), vector_type) for v in (1.0, 0.0))
            mapping[op.result] = emitter.emit(llvm_extra.SelectOp(operands[0], when_true, when_false))
            continue
        if isinstance(op, arith.SelectOp) and isinstance(operands[0].type, VectorType):
            when_true, when_false = (as_vector(emitter, v, vector_type) for v in operands[1:])
            mapping[op.result] = emitter.emit(llvm_extra.SelectOp(operands[0], when_true, when_false))
            continue
        scalar_condition = operands[:1] if isinstance(op, arith.SelectOp) else []
        vectors = scalar_condition + [as_vector(emitter, v, vector_type) for v in operands[len(scalar_condition) :]]
        wide = type(op).create(
            operands=vectors,
            result_types=[vector_type] * len(op.results),
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        emitter.builder.insert(wide)
        mapping.update(zip(op.results, wide.results))
    raise AssertionError("a region without tile.yield")  # pragma: no cover - verified
