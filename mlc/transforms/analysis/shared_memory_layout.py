"""How a promoted buffer is laid out in shared memory: vector groups, the copy's width, row padding.

What: `vector_groups` finds the neighbours along the next-to-last dimension that a transposed copy
turns into one aligned vector read; `copy_width` is the widest copy chunk (up to 16 bytes) the
box's rows allow; `choose_padding` prices each candidate row padding by the shared-memory
wavefronts of the first warp's reads and copy stores (`warp_accesses`, `layout_cost`,
`wavefronts`) and keeps the cheapest.

Algorithm: a warp-wide access is split into phases of `WAVEFRONT_BYTES`; within a phase the
wavefronts are the most distinct 4-byte words that fall in one of the 32 banks. Only the first
warp is priced, each read weighted by its runs per scope run. Preconditions: a `Promotion` from
`plan_promotion` and its `ScopeAnalysis`. Limits: an access with a lane whose address is unknown
is priced as conflict-free (one wavefront per 128 bytes); paddings are tried up to one bank
row's worth of elements (128 bytes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import memref

from mlc.transforms.analysis.shared_memory_reads import Box, Promotion, ReadSite, ScopeAnalysis


COPY_BYTES = 16
BANKS, BANK_BYTES, WAVEFRONT_BYTES, WARP = 32, 4, 128, 32


def vector_groups(sites: Sequence[ReadSite], box: Box, analysis: ScopeAnalysis, element_bytes: int) -> list[list[ReadSite]] | None:
    """The reads as groups of `size` neighbours along the next-to-last dimension, if they all are.

    A group is `size` scalar reads in one block whose indices differ only in that dimension, by
    0, 1, ..., size - 1, the first at an offset from the box's origin that is a multiple of `size`
    for every thread (its varying terms' coefficients times their divisors, and its constant).
    Stored transposed, such a group is one aligned vector of the shared buffer. The largest size
    up to a 16-byte vector for which every read falls into a group wins; None if no size of 2 or more.
    """
    if len(box.extents) < 2 or any(not isinstance(site.op, memref.LoadOp) for site in sites):
        return None
    dim = len(box.extents) - 2
    size = COPY_BYTES // element_bytes
    while size >= 2:
        groups = _groups_of(sites, box, analysis, dim, size)
        if groups is not None and box.extents[dim] % size == 0:
            return groups
        size //= 2
    return None


def _groups_of(sites: Sequence[ReadSite], box: Box, analysis: ScopeAnalysis, dim: int, size: int) -> list[list[ReadSite]] | None:
    by_key: dict[tuple, dict[int, ReadSite]] = {}
    for site in sites:
        others = tuple((form.constant, frozenset(form.terms)) for d, form in enumerate(site.varying) if d != dim)
        key = (id(site.op.parent_block()), others, frozenset(site.varying[dim].terms))
        constants = by_key.setdefault(key, {})
        if site.varying[dim].constant in constants:
            return None
        constants[site.varying[dim].constant] = site
    groups = []
    for constants in by_key.values():
        first_form = next(iter(constants.values())).varying[dim]
        if any(coefficient * analysis.facts(leaf).divisor % size for leaf, coefficient in first_form.terms):
            return None
        for constant in sorted(constants):
            if (constant - box.low[dim]) % size == 0:
                members = [constants.get(constant + offset) for offset in range(size)]
                if any(member is None for member in members):
                    return None
                groups.append(members)
            elif constant - (constant - box.low[dim]) % size not in constants:
                return None
    if sum(len(group) for group in groups) != len(sites):
        return None
    return groups  # type: ignore[return-value]


def wavefronts(word_lists: Sequence[Sequence[int] | None], bytes_per_lane: int) -> int:
    """Shared-memory wavefronts of one warp-wide access (None: a lane whose address is unknown)."""
    if any(words is None for words in word_lists):
        return math.ceil(len(word_lists) * bytes_per_lane / WAVEFRONT_BYTES)
    lanes_per_phase = max(1, min(WARP, WAVEFRONT_BYTES // bytes_per_lane))
    total = 0
    for start in range(0, len(word_lists), lanes_per_phase):
        banks: dict[int, set[int]] = {}
        for words in word_lists[start : start + lanes_per_phase]:
            for word in words:  # type: ignore[union-attr]
                banks.setdefault(word % BANKS, set()).add(word)
        total += max((len(words) for words in banks.values()), default=1)
    return total


def _words(element_offset: int, count: int, element_bytes: int) -> list[int]:
    first, last = element_offset * element_bytes, (element_offset + count) * element_bytes - 1
    return list(range(first // BANK_BYTES, last // BANK_BYTES + 1))


def _strides(extents: Sequence[int], padding: int) -> list[int]:
    strides, stride = [], 1
    for dim, extent in reversed(list(enumerate(extents))):
        strides.append(stride)
        stride *= extent + (padding if dim == len(extents) - 1 else 0)
    return strides[::-1]


@dataclass(frozen=True)
class WarpAccesses:
    """The first warp's shared-memory accesses of a promotion, in box coordinates, whatever the
    padding: what `layout_cost` prices for each candidate padding (computed once, as evaluating
    every lane's indices costs far more than pricing a layout)."""

    reads: list[tuple[int, int, list[list[int] | None]]]
    """Per read (or vector group): its runs per scope run, its width, and each lane's coordinates
    relative to the box's origin (None: unknown)."""
    stores: list[tuple[int, list[list[int]]]]
    """Per warp-wide copy store: its element count and each storing lane's coordinates."""


def warp_accesses(promotion: Promotion, analysis: ScopeAnalysis) -> WarpAccesses:
    box = promotion.box
    lanes = range(min(WARP, analysis.thread_loop.trip_count))
    accesses = [(group[0], len(group)) for group in promotion.groups] if promotion.groups else [(s, s.width) for s in promotion.sites]
    reads = []
    for site, width in accesses:
        coordinates: list[list[int] | None] = []
        for lane in lanes:
            local = [analysis.concrete(form, lane) for form in site.varying]
            known = not any(value is None for value in local)
            coordinates.append([value - low for value, low in zip(local, box.low)] if known else None)  # type: ignore[operator]
        reads.append((site.runs, width, coordinates))
    width = promotion.copy_width
    # A transposed copy stores each element of a chunk on its own; a plain one stores the chunk.
    pieces = [(offset, 1) for offset in range(width)] if promotion.transposed else [(0, width)]
    chunks = math.prod(box.extents) // width
    stores = []
    for round_start in range(0, chunks, analysis.thread_loop.trip_count):
        for offset, count in pieces:
            lane_coordinates = []
            for lane in lanes:
                if round_start + lane < chunks:
                    coordinates = _chunk_coordinates(round_start + lane, box.extents, width)
                    coordinates[-1] += offset
                    lane_coordinates.append(coordinates)
            stores.append((count, lane_coordinates))
    return WarpAccesses(reads, stores)


def layout_cost(promotion: Promotion, accesses: WarpAccesses, padding: int, element_bytes: int) -> int:
    """Wavefronts per run of the scope, summed over the first warp's reads and copy stores."""
    strides = _box_strides(promotion, padding)
    total = 0
    for runs, width, lanes in accesses.reads:
        addresses = [
            None if local is None else _words(sum(c * s for c, s in zip(local, strides)), width, element_bytes)
            for local in lanes
        ]
        total += runs * wavefronts(addresses, width * element_bytes)
    for count, lanes in accesses.stores:
        stores = [_words(sum(c * s for c, s in zip(coordinates, strides)), count, element_bytes) for coordinates in lanes]
        total += wavefronts(stores, count * element_bytes)
    return total


def _box_strides(promotion: Promotion, padding: int) -> list[int]:
    """The shared buffer's element strides, per dimension of the box (in the box's order)."""
    strides = _strides(promotion.shared_extents, padding)
    return [*strides[:-2], strides[-1], strides[-2]] if promotion.transposed else strides


def _chunk_coordinates(chunk: int, extents: Sequence[int], width: int) -> list[int]:
    per_row = extents[-1] // width
    coordinates = [chunk % per_row * width]
    rest = chunk // per_row
    for extent in reversed(extents[:-1]):
        coordinates.append(rest % extent)
        rest //= extent
    return coordinates[::-1]


def copy_width(box: Box, element_bytes: int) -> int:
    width = max(1, COPY_BYTES // element_bytes)
    while box.extents[-1] % width:
        width //= 2
    return width


def choose_padding(promotion: Promotion, analysis: ScopeAnalysis, element_bytes: int) -> tuple[int, int, int]:
    """(padding, its cost, the cost without padding): the cheapest of a bank's worth of paddings."""
    step = max(promotion.copy_width, len(promotion.groups[0]) if promotion.groups else 1)
    candidates = range(0, max(step, BANKS * BANK_BYTES // element_bytes), step)
    accesses = warp_accesses(promotion, analysis)
    costs = {padding: layout_cost(promotion, accesses, padding, element_bytes) for padding in candidates}
    best = min(costs, key=lambda padding: (costs[padding], padding))
    return best, costs[best], costs[0]
