"""The decisions for one fusion group's tile kernel, before any IR: `KernelPlan` and the batch collapse.

What: `collapse_dimensions` merges a domain's dimensions into the kernel's (`DimensionCollapse`):
size-1 dimensions are dropped and neighbours merge when every participant shape (inputs, reduced
shape) is full along both or broadcast along both, so a plain elementwise kernel is 1-d whatever
its rank and reduced dimensions never merge with kept ones; `keep_dimensions` keeps every one
(for groups with layout ops, whose index maps name the dimensions). `KernelPlan` holds a group's
collapse, tile shape and warps, and derives the grid and the reduced dimensions the tile spans
only a chunk of (`loop_axes`: looped rows, `group_kernel.py`). Also used by the matmul and
attention kernels for their batch dimensions.

Preconditions: participant shapes broadcast to the domain. Limits: only neighbouring dimensions
merge (no reordering).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from mlc.transforms.analysis.fusion_groups import FusionGroup


@dataclass(frozen=True)
class DimensionCollapse:
    """Which dimensions of a group's domain merge into each dimension of the kernel's domain.

    Size-1 dimensions are dropped and adjacent dimensions merge when every participant shape (the
    inputs, the reduced shape) is full along both or broadcast along both, so a plain elementwise
    kernel is 1-d whatever its rank, a bias add over `64x1024` stays 2-d, and reduced dimensions
    never merge with kept ones.
    """

    original: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]
    """The original dimensions of each collapsed dimension."""

    @property
    def domain(self) -> tuple[int, ...]:
        if not self.groups:
            return (1,)
        return tuple(math.prod(self.original[d] for d in dims) for dims in self.groups)

    def shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The collapsed shape of a value whose shape broadcasts to the original domain."""
        if not self.groups:
            return (1,)
        aligned = (1,) * (len(self.original) - len(shape)) + tuple(shape)
        return tuple(math.prod(aligned[d] for d in dims) for dims in self.groups)

    def axes(self, original_axes: Sequence[int]) -> tuple[int, ...]:
        """The collapsed dimensions made of the given original dimensions."""
        return tuple(i for i, dims in enumerate(self.groups) if set(dims) <= set(original_axes))


def collapse_dimensions(domain: Sequence[int], participants: Sequence[Sequence[int]]) -> DimensionCollapse:
    rank = len(domain)
    aligned = [(1,) * (rank - len(s)) + tuple(s) for s in participants]
    groups: list[tuple[tuple[bool, ...], list[int]]] = []
    for dim in range(rank):
        if domain[dim] == 1:
            continue
        pattern = tuple(shape[dim] != 1 for shape in aligned)
        if groups and groups[-1][0] == pattern:
            groups[-1][1].append(dim)
        else:
            groups.append((pattern, [dim]))
    return DimensionCollapse(tuple(domain), tuple(tuple(dims) for _, dims in groups))


def keep_dimensions(domain: Sequence[int]) -> DimensionCollapse:
    """No collapse (every dimension its own, size-1 ones included): for groups with layout ops,
    whose index maps name the dimensions of the values they read."""
    return DimensionCollapse(tuple(domain), tuple((dim,) for dim in range(len(domain))))


@dataclass
class KernelPlan:
    """The decisions for one group's kernel, computed before any IR is built."""

    name: str
    group: FusionGroup
    collapse: DimensionCollapse
    tile_shape: tuple[int, ...]
    num_warps: int
    domain: tuple[int, ...] = field(init=False)
    reduced_axes: tuple[int, ...] = field(init=False)
    loop_axes: tuple[int, ...] = field(init=False)
    """The reduced dimensions the tile spans only a chunk of: a program loops over their chunks."""
    grid_counts: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.domain = self.collapse.domain
        self.reduced_axes = self.collapse.axes(self.group.reduced_axes) if self.group.reduced_axes else ()
        self.loop_axes = tuple(axis for axis in self.reduced_axes if self.tile_shape[axis] < self.domain[axis])
        self.grid_counts = tuple(
            1 if axis in self.loop_axes else -(-d // t) for axis, (d, t) in enumerate(zip(self.domain, self.tile_shape))
        )

    def needs_mask(self) -> bool:
        """Whether some tile (or the last chunk) overhangs the domain along a reduced dimension."""
        return any(self.domain[axis] % self.tile_shape[axis] for axis in self.reduced_axes)
