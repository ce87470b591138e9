"""Tile shapes of elementwise and reduction kernels: how much of its domain one program computes.

`choose_tile_shape` fills powers of two from the innermost dimension outward up to
`elements_per_program`; `choose_reduction_tile` gives a program whole reduced dimensions (a
contiguous span of columns when the last dimension is kept, so loads stay coalesced), or beyond
`MAX_REDUCTION_TILE` elements a chunk of them (`choose_looped_reduction_tile`) that the kernel
loops over; `reduction_warps` sizes the block for a reduction tile. convert-graph-to-tile records
the choices in the IR (tile types, `num_warps`); the reasons for each constant are beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import Float32Type

from mlc.transforms.analysis.fusion_groups import FusionGroup, shape_of


def _product(values: Sequence[int]) -> int:
    return math.prod(values)


def next_power_of_two(value: int) -> int:
    """The smallest power of two at least `value` (1 for values below 2)."""
    return 1 << max(0, (value - 1).bit_length())


def choose_tile_shape(domain: Sequence[int], elements_per_program: int) -> tuple[int, ...]:
    """Powers of two filled innermost-first up to `elements_per_program` elements."""
    budget = max(1, elements_per_program)
    tile_shape = []
    for size in reversed(domain):
        dim = min(next_power_of_two(size), next_power_of_two(budget))
        tile_shape.append(dim)
        budget = max(1, budget // dim)
    return tuple(reversed(tile_shape))


MAX_REDUCTION_TILE = 65536
"""The most elements a program holds when it keeps whole rows in registers (64 per thread of
1024); longer rows are reduced chunk by chunk (`LOOPED_REDUCTION_TILE`)."""

LOOPED_REDUCTION_TILE = 16384
"""The elements a program holds per chunk when its rows are longer than `MAX_REDUCTION_TILE`:
sixteen per thread of 1024 (`reduction_warps`), as many as keep the memory busy, while each pass
over a row re-reads fewer chunks than with smaller ones."""

COALESCED_SPAN = 32
"""Elements along the contiguous dimension a reduction over other dimensions still covers."""


def choose_reduction_tile(domain: Sequence[int], reduced_axes: Sequence[int], elements_per_program: int) -> tuple[int, ...]:
    """Whole reduced dimensions, then kept dimensions filled innermost-first; chunks of long rows.

    The kept dimensions share what `elements_per_program` leaves, but a program always spans
    `COALESCED_SPAN` elements of a contiguous kept dimension when the tile can hold them, so that
    a column reduction still reads whole memory segments. Reduced dimensions of more than
    `MAX_REDUCTION_TILE` elements in all get `choose_looped_reduction_tile`'s chunk instead.
    """
    reduced_elements = _product([next_power_of_two(domain[a]) for a in reduced_axes])
    if reduced_elements > MAX_REDUCTION_TILE:
        return choose_looped_reduction_tile(domain, reduced_axes)
    target = max(elements_per_program, reduced_elements)
    if len(domain) - 1 not in reduced_axes:
        target = max(target, min(MAX_REDUCTION_TILE, reduced_elements * COALESCED_SPAN))
    kept = [d for axis, d in enumerate(domain) if axis not in reduced_axes]
    kept_tile = iter(choose_tile_shape(kept, target // reduced_elements)) if kept else iter(())
    return tuple(
        next_power_of_two(size) if axis in reduced_axes else next(kept_tile) for axis, size in enumerate(domain)
    )


CPU_COLUMN_SPAN = 128
"""Columns a program of a CPU column reduction covers: eight 16-lane vectors (512 bytes, eight
cache lines) per row, read together (`columns_cpu.py`); 1024 columns still make 8 programs to
spread over the worker threads. A sum over the 4096 rows of 4096x1024 f32 on one Xeon thread
(thread CPU time): 16 columns per program (the GPU's tile) 2.1 ms, 64 1.2 ms, 128 1.0 ms, 256
0.91 ms (4 programs), PyTorch 0.97 ms."""

CPU_MAX_COLUMN_TILE = 1 << 22
"""The most elements of a CPU column reduction's tile (the CPU lowering streams its rows; it
holds none of them), beyond which the reduced dimensions are looped over as on the GPU."""


def choose_cpu_column_tile(domain: Sequence[int], reduced_axes: Sequence[int], group: FusionGroup, target: str = "cpu") -> tuple[int, ...] | None:
    """On the CPU, a reduction over one axis that is not the last: all of it, a span of columns
    (the largest power of two up to `CPU_COLUMN_SPAN` that divides them, at least 2, so that no
    program's strip needs a column mask), one element of every other axis: what `columns_cpu.py`
    lowers. None otherwise (and for any `target` but "cpu"), or beyond `CPU_MAX_COLUMN_TILE` elements.

    The GPU's tile (`choose_reduction_tile`) holds at most `MAX_REDUCTION_TILE` elements, so a long
    column leaves a program 1 to 16 columns: one scalar or one vector per row, each row on another
    page. Here a program reads a whole strip of contiguous columns of every row. Only for groups
    that the CPU lowering takes as far as the graph tells (`_streams_columns`): convert-tile-to-loop's
    layout could not hold such tiles.
    """
    last = len(domain) - 1
    if target != "cpu" or len(reduced_axes) != 1 or last in reduced_axes or not _streams_columns(group):
        return None
    (axis,) = reduced_axes
    span = math.gcd(CPU_COLUMN_SPAN, domain[last])
    if span < 2 or next_power_of_two(domain[axis]) * span > CPU_MAX_COLUMN_TILE:
        return None
    return tuple(next_power_of_two(size) if d == axis else (span if d == last else 1) for d, size in enumerate(domain))


def _streams_columns(group: FusionGroup) -> bool:
    """f32 values only, only reduced outputs (no value of every row stored), inputs of the whole
    domain, of one value per column or one value (none per row)."""
    reduced = math.prod(group.reduced_domain)
    if any(math.prod(shape_of(output)) != reduced for output in group.outputs):
        return False
    rank = len(group.domain)
    for _, shape in group.inputs:
        aligned = (1,) * (rank - len(shape)) + tuple(shape)
        if aligned not in (group.domain, group.reduced_domain, (1,) * rank):
            return False
    return all(isinstance(getattr(r.type, "element_type", None), Float32Type) for op in group.ops for r in op.results)


def choose_looped_reduction_tile(domain: Sequence[int], reduced_axes: Sequence[int]) -> tuple[int, ...]:
    """A chunk of `LOOPED_REDUCTION_TILE` elements of the reduced dimensions, one kept row per program.

    A contiguous kept dimension keeps `COALESCED_SPAN` elements (a column reduction still reads
    whole memory segments); the reduced dimensions fill the rest innermost-first, so the chunk is
    contiguous in memory when the last dimension is reduced. The reduced dimensions the chunk does
    not cover whole are looped over (`group_kernel.py`).
    """
    last = len(domain) - 1
    span = min(COALESCED_SPAN, next_power_of_two(domain[last])) if last not in reduced_axes else 1
    chunk = iter(choose_tile_shape([domain[a] for a in reduced_axes], LOOPED_REDUCTION_TILE // span))
    return tuple(
        next(chunk) if axis in reduced_axes else (span if axis == last else 1) for axis in range(len(domain))
    )


def reduction_warps(tile_shape: Sequence[int]) -> int:
    """About sixteen elements (four 16-byte vectors of f32) per thread, 1 to 32 warps.

    Fewer threads per row means fewer partial results to combine across warps (each combining step
    costs a barrier); sixteen f32 values in flight per thread still hide the memory latency (on an
    H200, 8 per thread left a row sum at 62% of copy bandwidth, 16 reached copy speed).
    """
    threads = next_power_of_two(max(1, _product(tile_shape) // 16))
    return min(32, max(1, threads // 32))
