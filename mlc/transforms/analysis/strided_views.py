"""Chains of layout ops as one strided view of a value, and that view in the fewest layout ops.

A `graph.reshape`, `graph.transpose` or `graph.slice` (positive steps) of a value in memory reads
its elements at `offset + sum(strides[i] * c[i])` of the value's row-major storage, for the result
coordinates `c`: a strided view (numpy's). Chains of them compose (`compose_chain`), as long as
every reshape can be a view of what it reshapes (numpy's no-copy rule: the dimensions it merges
are contiguous with one another in the view so far); a reshape that would need a copy ends the
composition, and its result is where a view starts again.

`canonical_layout(view, leaf_elements)` writes a view of a row-major leaf of `leaf_elements`
elements as at most four layout ops, in this order:

    reshape(leaf, F) -> slice (a window of each axis of F, steps 1) -> transpose -> reshape

F factors the leaf's elements from its innermost axis out: an axis of the innermost stride when
that is larger than 1 (read at one index), then one axis per view dimension of size larger than 1,
in increasing stride, each as long as the next stride over its own (the last: the leaf's elements
over its stride); the view's offset, written in F's mixed radix, gives each window's start. The
transpose orders the axes as the view does; the last reshape only inserts or drops axes of size 1.
The head split of multi-head attention in PyTorch's slow path (a linear layer's (S*B, 3E) result
viewed as (S, B, 3, E), transposed, one third selected, viewed as (S, B*H, d), transposed to
(B*H, S, d), viewed as (B, H, S, d): seven ops, four of which were copies) becomes
`transpose(slice(reshape(P, (S, B, 3H, d))))`, which graph-fuse makes one kernel reading P in place.

Limits: no broadcasts (stride 0) and no negative steps; a view whose strides do not nest (a stride
not a multiple of the next smaller one, or overlapping windows) is not written (None).
"""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, TensorType
from xdsl.ir import Operation, SSAValue

from mlc.dialects.graph import ops as graph


Atom = tuple[int, int]
"""(size, stride): one factor of a dimension."""


def _merged(atoms: Sequence[Atom]) -> tuple[Atom, ...]:
    """`atoms` (outer to inner) with neighbours that are contiguous with each other merged, and
    atoms of size 1 dropped."""
    merged: list[Atom] = []
    for size, stride in atoms:
        if size == 1:
            continue
        if merged and merged[-1][1] == size * stride:
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    return tuple(merged)


@dataclass(frozen=True)
class StridedView:
    """Elements `offset + sum(stride * digit)` of a row-major leaf, each dimension's coordinate
    written in the mixed radix of its atoms (outer to inner): a strided view where every
    dimension is one atom, otherwise (after a reshape that merged dimensions that are not
    contiguous) a view that later reshapes may split into a strided one again."""

    offset: int
    dims: tuple[tuple[Atom, ...], ...]

    @classmethod
    def whole(cls, shape: Sequence[int]) -> StridedView:
        """The leaf itself: row-major strides."""
        strides = [1] * len(shape)
        for axis in range(len(shape) - 2, -1, -1):
            strides[axis] = strides[axis + 1] * shape[axis + 1]
        return cls(0, tuple(_merged([(size, stride)]) for size, stride in zip(shape, strides)))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(math.prod(size for size, _ in atoms) for atoms in self.dims)

    @property
    def strides(self) -> tuple[int, ...] | None:
        """One stride per dimension (0 for size 1), or None where a dimension has several atoms."""
        if any(len(atoms) > 1 for atoms in self.dims):
            return None
        return tuple(atoms[0][1] if atoms else 0 for atoms in self.dims)

    def transposed(self, perm: Sequence[int]) -> StridedView:
        return StridedView(self.offset, tuple(self.dims[a] for a in perm))

    def sliced(self, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> StridedView | None:
        """Python's slice rules per axis; None for a negative step or a window of an axis of
        several atoms."""
        offset, dims = self.offset, []
        for atoms, size, start, end, step in zip(self.dims, self.shape, starts, ends, steps):
            first, stop, step = slice(start, end, step).indices(size)
            length = len(range(first, stop, step))
            if step < 1 or (len(atoms) > 1 and (first, length, step) != (0, size, 1)):
                return None
            if len(atoms) == 1 and length:
                offset += first * atoms[0][1]
                atoms = _merged([(length, atoms[0][1] * step)])
            dims.append(atoms if length else ((0, 1),))
        return StridedView(offset, tuple(dims))

    def reshaped(self, new_shape: Sequence[int]) -> StridedView | None:
        """The view with `new_shape` (the same elements in row-major order); None where a new
        dimension would take part of an atom that it does not divide."""
        if math.prod(self.shape) != math.prod(new_shape) or 0 in self.shape:
            return None
        atoms = [atom for dim in self.dims for atom in dim]
        dims = []
        for size in new_shape:
            taken: list[Atom] = []
            while size > 1:
                atom_size, stride = atoms.pop(0)
                if atom_size <= size and size % atom_size == 0:
                    taken.append((atom_size, stride))
                    size //= atom_size
                elif atom_size % size == 0:
                    taken.append((size, stride * (atom_size // size)))
                    atoms.insert(0, (atom_size // size, stride))
                    size = 1
                else:
                    return None
            dims.append(_merged(taken))
        return StridedView(self.offset, tuple(dims))


@dataclass(frozen=True)
class CanonicalLayout:
    """A view as `reshape(leaf, factors)`, a slice, a transpose and a reshape to `shape`."""

    factors: tuple[int, ...]
    starts: tuple[int, ...]
    lengths: tuple[int, ...]
    perm: tuple[int, ...]
    shape: tuple[int, ...]

    def op_count(self, leaf_shape: Sequence[int]) -> int:
        """Layout ops it takes (steps that change nothing are left out)."""
        sliced = any(start or length != factor for start, length, factor in zip(self.starts, self.lengths, self.factors))
        transposed = self.perm != tuple(range(len(self.perm)))
        permuted = tuple(self.lengths[a] for a in self.perm)
        return (tuple(leaf_shape) != self.factors) + sliced + transposed + (permuted != self.shape)


def canonical_layout(view: StridedView, leaf_elements: int) -> CanonicalLayout | None:
    """`view` of a row-major leaf of `leaf_elements` elements in the canonical form of the module
    docstring, or None where its strides do not nest."""
    if view.strides is None:
        return None
    dims = sorted((stride, size, axis) for axis, (size, stride) in enumerate(zip(view.shape, view.strides)) if size != 1)
    if not dims or any(stride < 1 for stride, _, _ in dims):
        return None
    # Inner to outer: (factor, role) with role the view axis, or None for an axis read at one index.
    inner: list[tuple[int, int | None]] = [(dims[0][0], None)] if dims[0][0] > 1 else []
    for position, (stride, size, axis) in enumerate(dims):
        outer = dims[position + 1][0] if position + 1 < len(dims) else leaf_elements
        if outer % stride or outer // stride < size:
            return None
        inner.append((outer // stride, axis))
    # Axes of size 1 of the view: factors of 1 in front, so that the transpose puts them in place.
    units = [(1, axis) for axis, size in enumerate(view.shape) if size == 1]
    factors = tuple(factor for factor, _ in [*units, *reversed(inner)])
    roles = [role for _, role in [*units, *reversed(inner)]]
    digits, rest = [], view.offset
    for factor in reversed(factors):
        digits.append(rest % factor)
        rest //= factor
    starts = tuple(reversed(digits))
    if rest:
        return None
    lengths = tuple(1 if role is None else view.shape[role] for role in roles)
    if any(start + length > factor for start, length, factor in zip(starts, lengths, factors)):
        return None
    order = sorted(range(len(roles)), key=lambda a: (roles[a] is None, roles[a] or 0))
    return CanonicalLayout(factors, starts, lengths, tuple(order), view.shape)


LAYOUT_OP_NAMES = ("graph.reshape", "graph.transpose", "graph.slice")


def transpose_permutation(op: Operation) -> tuple[int, ...] | None:
    """The `perm` of a `graph.transpose`, negative axes normalised as numpy does; else None."""
    perm = op.properties.get("perm")
    if op.name != "graph.transpose" or not isinstance(perm, DenseArrayBase):
        return None
    rank = len(perm)
    return tuple(int(axis) + rank if int(axis) < 0 else int(axis) for axis in perm.get_values())


def _array(op: Operation, name: str) -> tuple[int, ...]:
    return tuple(int(v) for v in op.properties[name].get_values())  # type: ignore[attr-defined]


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def layout_chain(value: SSAValue, within: Container[Operation] | None = None) -> tuple[SSAValue, StridedView, int] | None:
    """The leaf that `value` is a strided view of through a chain of layout ops, the view, and
    the number of ops in the chain (None when `value` is not a layout op's result). The leaf is
    the first value up the chain that is no layout op's result (or, given `within`, the result
    of an op outside it), or the result of a reshape that needs a copy."""
    chain: list[Operation] = []
    while isinstance(owner := value.owner, Operation) and owner.name in LAYOUT_OP_NAMES and (within is None or owner in within):
        chain.append(owner)
        value = owner.operands[0]
    if not chain:
        return None
    leaf, view, count = value, StridedView.whole(_shape(value)), 0
    for op in reversed(chain):
        if (perm := transpose_permutation(op)) is not None:
            step: StridedView | None = view.transposed(perm)
        elif op.name == "graph.slice":
            step = view.sliced(_array(op, "starts"), _array(op, "ends"), _array(op, "steps"))
        else:
            step = view.reshaped(_shape(op.results[0]))
        if step is None:  # a copy: the view starts again at this op's result
            leaf, step, count = op.results[0], StridedView.whole(_shape(op.results[0])), -1
        view, count = step, count + 1
    return leaf, view, count


def canonical_ops(leaf: SSAValue, layout: CanonicalLayout) -> list[Operation]:
    """The layout ops of `layout` applied to `leaf` (those that change nothing left out)."""
    ops: list[Operation] = []
    value, element = leaf, leaf.type.element_type  # type: ignore[attr-defined]

    def add(op: Operation) -> None:
        nonlocal value
        ops.append(op)
        value = op.results[0]

    if _shape(leaf) != layout.factors:
        add(graph.ReshapeOp(value, TensorType(element, layout.factors)))
    if layout.starts != (0,) * len(layout.factors) or layout.lengths != layout.factors:
        ends = [start + length for start, length in zip(layout.starts, layout.lengths)]
        add(graph.SliceOp(value, starts=layout.starts, ends=ends))
    if layout.perm != tuple(range(len(layout.perm))):
        add(graph.TransposeOp(value, perm=layout.perm))
    if _shape(value) != layout.shape:
        add(graph.ReshapeOp(value, TensorType(element, layout.shape)))
    return ops
