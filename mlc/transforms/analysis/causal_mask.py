"""Causal masks in attention chains: recognised from constants, so the kernel can skip key blocks.

A causal mask lets query row r see keys k <= r + offset only (offset 0 for self-attention; other
offsets for a query block placed after a cache of keys). Exporters write it two ways, and both
reach `match_attention` as a side input of the score ops:

* a constant [M, N] mask (what graph-fold-constants leaves of `torch.tril`, ONNX `Trilu`, or the
  comparison below when it is small): i1 for `graph.where(mask, scores, -inf)`, or 0 / -inf added
  to the scores;
* `graph.cmp ge, %queries, %keys` of an [M, 1] and a [1, N] constant that count up by one
  (`is_causal` as the PyTorch importer writes it, or arange-based masks), or `le` with the
  operands swapped, `gt` / `lt` for a strict mask: evaluated analytically, never materialised.

`causal_mask(value, use)` returns the recognised mask when the op `use` reads it so that a masked
element becomes -inf whatever the score (`graph.where` with the mask as condition and a -inf
splat as the false value; `graph.add` of a 0 / -inf mask), else None. The chain kernel then
computes the mask from positions (`k <= r + offset`, no memory traffic) and stops its key loop
after the last key any row of its block can see (`attention_kernel.py`).

Limits: the mask must be the same for every batch element (leading dimensions of 1); a dense
constant is checked element by element (masks up to `MAX_CHECKED_ELEMENTS`); only the four
comparisons above; the mask's ops are absorbed into the chain only where nothing else uses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.interpret import dense_to_numpy

MAX_CHECKED_ELEMENTS = 1 << 24


@dataclass(frozen=True)
class CausalMask:
    """A side input of an attention chain that is a causal mask (see the module docstring)."""

    value: SSAValue
    offset: int
    """Row r sees keys k <= r + offset."""
    allowed: float
    """The mask's value where a key is seen (1.0 for an i1 mask's true)."""
    masked: float
    """Its value elsewhere (0.0 for false, -inf for an additive mask)."""
    ops: tuple[Operation, ...]
    """The ops computing the mask (constants, the comparison), which the chain absorbs."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def _constant(value: SSAValue) -> np.ndarray | None:
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp) or math.prod(_shape(value)) > MAX_CHECKED_ELEMENTS:
        return None
    return dense_to_numpy(owner.value)


def _matrix_shape(value: SSAValue) -> tuple[int, int] | None:
    """(M, N) of a mask the same for every batch element."""
    shape = _shape(value)
    if len(shape) < 2 or any(size != 1 for size in shape[:-2]):
        return None
    return shape[-2], shape[-1]


def _counting(array: np.ndarray, axis: int) -> int | None:
    """The first value of a vector along `axis` (others of size 1) that counts up by one, else None."""
    if any(size != 1 for dim, size in enumerate(array.shape) if dim != axis):
        return None
    flat = array.reshape(-1).astype(np.int64)
    if flat.size == 0 or not np.array_equal(flat, flat[0] + np.arange(flat.size)):
        return None
    return int(flat[0])


def _from_comparison(op: graph.CmpOp, rows: int, keys: int) -> int | None:
    """The offset of `queries >= keys`-style comparisons of counting vectors (see the docstring)."""
    lhs, rhs = _constant(op.lhs), _constant(op.rhs)
    if lhs is None or rhs is None or lhs.ndim < 2 or rhs.ndim < 2:
        return None
    predicate = op.predicate.data
    if predicate in ("le", "lt"):  # keys <= queries is queries >= keys
        lhs, rhs, predicate = rhs, lhs, {"le": "ge", "lt": "gt"}[predicate]
    if predicate not in ("ge", "gt") or lhs.shape[-2:] != (rows, 1) or rhs.shape[-2:] != (1, keys):
        return None
    query_start, key_start = _counting(lhs, lhs.ndim - 2), _counting(rhs, rhs.ndim - 1)
    if query_start is None or key_start is None:
        return None
    # r + query_start >= k + key_start  <=>  k <= r + (query_start - key_start)
    return query_start - key_start - (1 if predicate == "gt" else 0)


def _from_dense(array: np.ndarray, allowed: float, masked: float) -> int | None:
    """The offset of a dense [M, N] mask of `allowed` / `masked` values in a causal pattern."""
    matrix = array.reshape(array.shape[-2:])
    seen = matrix == allowed
    if not np.all(seen | (matrix == masked)):
        return None
    counts = seen.sum(axis=1)
    partial = np.flatnonzero((counts > 0) & (counts < matrix.shape[1]))
    if partial.size == 0:
        return None
    row = int(partial[0])
    offset = int(counts[row]) - 1 - row
    expected = np.arange(matrix.shape[1])[None, :] <= np.arange(matrix.shape[0])[:, None] + offset
    return offset if np.array_equal(seen, expected) else None


def _minus_infinity(value: SSAValue) -> bool:
    array = _constant(value)
    return array is not None and array.size >= 1 and bool(np.all(np.isneginf(array.astype(np.float64))))


def causal_mask(value: SSAValue, use: Operation) -> CausalMask | None:
    """`value` as a causal mask read by `use` (see the module docstring), or None."""
    matrix = _matrix_shape(value)
    if matrix is None:
        return None
    if isinstance(use, graph.WhereOp) and use.condition is value and value is not use.true_value and _minus_infinity(use.false_value):
        allowed, masked = 1.0, 0.0
    elif isinstance(use, graph.AddOp) and value in (use.lhs, use.rhs) and use.lhs is not use.rhs:
        allowed, masked = 0.0, -math.inf
    else:
        return None
    owner = value.owner
    if isinstance(owner, graph.CmpOp) and allowed == 1.0:
        offset = _from_comparison(owner, *matrix)
        ops = (owner.lhs.owner, owner.rhs.owner, owner)
    else:
        array = _constant(value)
        offset = None if array is None else _from_dense(array, allowed, masked)
        ops = (owner,)
    if offset is None:
        return None
    return CausalMask(value, offset, allowed, masked, tuple(op for op in ops if isinstance(op, Operation)))
