"""Index maps of layout ops: where each element of a transpose, slice or concatenation comes from.

A *layout op* (`graph.transpose`, `graph.slice`, `graph.concat`) computes nothing: every element
of its result is an element of an operand. Seen from the coordinates `c` of a value computed by
a chain of layout ops (and broadcasts) from some *leaves* (values read from memory, splat
constants), each element is one leaf's element at a position whose every index is affine in one
coordinate:

    transpose(x, perm)           x[perm[i]] = c[i]
    slice(x, starts, _, steps)   x[i] = start_i + step_i * c[i]   (start_i normalised as numpy does)
    concat(xs, axis)             xs[j] at c with c[axis] - offset_j, where offset_j <= c[axis] < offset_j + n_j
    broadcast(x)                 x[i] = c[i + rank - rank(x)], or 0 where x has size 1

`pieces(value, is_leaf)` follows the chain down to the leaves and returns one `Piece` per leaf
occurrence: the leaf, its indices as `AxisMap`s of the root's coordinates (composed through the
chain), and the ranges of root coordinates where the piece applies (the concatenations it came
through). The pieces of one value partition its coordinates. Pieces of empty operands of a
concatenation are dropped. A leaf is whatever `is_leaf` says (the group kernel: its inputs and
splat constants); every other value on the way must be a layout op or a broadcast.

Limits: a reshape inside a chain is a leaf (the kernel reads its operand with the reshape's shape;
delinearising an index is not an affine map of one coordinate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from mlc.dialects.graph import ops as graph

LAYOUT_OPS = (graph.TransposeOp, graph.SliceOp, graph.ConcatOp)
"""The graph ops that move elements without computing: fused into kernels as index maps."""


@dataclass(frozen=True)
class AxisMap:
    """An index `offset + stride * c[dim]` of the root's coordinates `c` (a constant when dim is None)."""

    dim: int | None
    offset: int
    stride: int = 1

    def then(self, offset: int, stride: int) -> AxisMap:
        """The index `offset + stride * self` (a slice's, or a concatenation's shift with stride 1)."""
        if self.dim is None:
            return AxisMap(None, offset + stride * self.offset, 0)
        return AxisMap(self.dim, offset + stride * self.offset, stride * self.stride)


@dataclass(frozen=True)
class Piece:
    """One leaf read by a layout chain: where (indices) and for which root coordinates (ranges)."""

    leaf: SSAValue
    indices: tuple[AxisMap, ...]
    """One map per dimension of the leaf."""
    ranges: tuple[tuple[AxisMap, int, int], ...]
    """The piece applies where `low <= map(c) < high` for every (map, low, high)."""
    padding: float | int | None = None
    """What the leaf reads as outside its bounds (a padding concatenation folded into the read)."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_shape()


def identity_maps(rank: int) -> tuple[AxisMap, ...]:
    return tuple(AxisMap(dim, 0) for dim in range(rank))


def _padded_operand(
    concat: graph.ConcatOp, constant_of: Callable[[SSAValue], float | int | None], is_leaf: Callable[[SSAValue], bool]
) -> tuple[int, float | int] | None:
    """(position, value) when `concat` pads one operand with splat constants of one value, and an
    index outside that operand stays outside all the way to its leaf (transposes and nested
    paddings only): the padding is then the leaf's out-of-bounds value, not pieces of its own."""
    values = [constant_of(operand) for operand in concat.xs]
    inner = [position for position, value in enumerate(values) if value is None]
    padding = {value for value in values if value is not None}
    if len(inner) != 1 or len(padding) != 1 or not _keeps_bounds(concat.xs[inner[0]], constant_of, is_leaf):
        return None
    return inner[0], next(iter(padding))


def _keeps_bounds(value: SSAValue, constant_of: Callable[[SSAValue], float | int | None], is_leaf: Callable[[SSAValue], bool]) -> bool:
    while not is_leaf(value):
        owner = value.owner
        if isinstance(owner, graph.TransposeOp):
            value = owner.x
        elif isinstance(owner, graph.ConcatOp) and _padded_operand(owner, constant_of, is_leaf) is not None:
            value = owner.xs[_padded_operand(owner, constant_of, is_leaf)[0]]  # type: ignore[index]
        else:
            return False
    return True


def pieces(
    value: SSAValue,
    is_leaf: Callable[[SSAValue], bool],
    constant_of: Callable[[SSAValue], float | int | None] = lambda _: None,
) -> list[Piece]:
    """The pieces of `value`, a layout op's result, in the order of its concatenations' operands.

    `constant_of` tells the splat value of a value (through broadcasts), None for others: a
    concatenation that pads a single operand with one constant (and whose out-of-range indices
    stay out of range down to the leaf) becomes that operand's piece with the constant as its
    padding, without ranges."""
    found: list[Piece] = []
    Entry = tuple[SSAValue, tuple[AxisMap, ...], tuple[tuple[AxisMap, int, int], ...], "float | int | None"]
    stack: list[Entry] = [(value, identity_maps(len(_shape(value))), (), None)]
    while stack:
        current, maps, ranges, padding = stack.pop()
        owner = current.owner
        padded = _padded_operand(owner, constant_of, is_leaf) if isinstance(owner, graph.ConcatOp) else None
        if padded is not None and padding not in (None, padded[1]):
            padded = None
        if is_leaf(current):
            found.append(Piece(current, maps, ranges, padding))
        elif padded is not None:
            position, padding = padded
            axis = owner.normalized_axis()  # type: ignore[union-attr]
            offset = sum(_shape(operand)[axis] for operand in owner.xs[:position])  # type: ignore[union-attr]
            shifted = tuple(m.then(-offset, 1) if d == axis else m for d, m in enumerate(maps))
            stack.append((owner.xs[position], shifted, ranges, padding))  # type: ignore[union-attr]
        elif isinstance(owner, graph.TransposeOp):
            source = [AxisMap(None, 0, 0)] * len(maps)
            for result_dim, source_dim in enumerate(owner.normalized_perm()):
                source[source_dim] = maps[result_dim]
            stack.append((owner.x, tuple(source), ranges, padding))
        elif isinstance(owner, graph.SliceOp):
            sizes = _shape(owner.x)
            starts = [s.indices(size)[0] for s, size in zip(owner.slices(), sizes)]
            steps = [s.step for s in owner.slices()]
            stack.append((owner.x, tuple(m.then(start, step) for m, start, step in zip(maps, starts, steps)), ranges, padding))
        elif isinstance(owner, graph.ConcatOp):
            axis, offset = owner.normalized_axis(), 0
            operands = []
            for operand in owner.xs:
                size = _shape(operand)[axis]
                if size:
                    shifted = tuple(m.then(-offset, 1) if d == axis else m for d, m in enumerate(maps))
                    operands.append((operand, shifted, (*ranges, (maps[axis], offset, offset + size)), padding))
                offset += size
            stack += reversed(operands)
        elif isinstance(owner, graph.BroadcastOp):
            sizes = _shape(owner.x)
            skipped = len(maps) - len(sizes)
            source = tuple(AxisMap(None, 0, 0) if size == 1 else maps[skipped + d] for d, size in enumerate(sizes))
            stack.append((owner.x, source, ranges, padding))
        else:
            raise ValueError(f"'{owner.name if owner is not None else current}' is not a layout op")  # type: ignore[union-attr]
    return found
