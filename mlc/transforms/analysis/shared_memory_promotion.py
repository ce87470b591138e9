"""The analysis behind loop-promote-shared: which global reads a block's threads repeat, and how to
stage them in shared memory.

For one thread loop and one read-only global buffer (see `mlc/transforms/loop/loop_promote_shared.py`
for the whole algorithm and its limits): the candidate *scopes* (the thread loop's body and the
`scf.for`s with thread-independent bounds reached from it), the *read sites* of the buffer in a
scope with each index split into the terms every thread shares during one run of the scope and
the terms that vary (`affine_index.py`, ranges from `index_analysis.py`), the *box* of elements
one run reads, the *reuse* (reads per box element) that decides promotion, the grouping of scalar
reads into vectors that a transposed copy allows, and the row padding that minimises shared-memory
bank conflicts (wavefronts counted per warp). `plan_promotion` returns the decision as a
`Promotion`; nothing here rewrites IR. Also the shared-memory footprint of a kernel's allocations
(`shared_bytes`), which loop-double-buffer checks against the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import memref, scf, vector
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import (
    AffineForm,
    affine_form,
    constant_index,
    evaluate,
)
from mlc.transforms.analysis.index_analysis import IndexFacts, facts_of
from mlc.transforms.analysis.thread_analysis import is_loop_uniform

MIN_REUSE = 4.0
"""Promote when each element of the box is read at least this many times per run of the scope;
below that the L1 cache serves the repeats about as well as a copy and the barriers it needs."""
SHARED_MEMORY_BYTES = 48 * 1024
"""Static shared memory a block may use on every NVIDIA GPU since Kepler."""
STAGED_SHARED_MEMORY_BYTES = 96 * 1024
"""What a kernel with pipelined (multi-stage) copies may use: dynamic shared memory beyond 48 KiB
(convert-gpu-to-nvvm), within what sm_80 (163 KiB), sm_86/89 (99 KiB) and sm_90 (227 KiB) allow a
block, and leaving an H100 room for two such blocks per multiprocessor."""
COPY_BYTES = 16
BANKS, BANK_BYTES, WAVEFRONT_BYTES, WARP = 32, 4, 128, 32

Read = memref.LoadOp | vector.LoadOp | loop.LdMatrixOp | loop.WgmmaOp
"""The reads the pass stages; `loop.ldmatrix` and `loop.wgmma` read only shared memory on the GPU,
so a buffer they read is promoted whatever its reuse (each lane's 8-element row of an ldmatrix
counts as a vector read, a wgmma's operand block as a block read by every thread)."""
SWIZZLE_BYTES = 128
"""The swizzle span of a buffer `loop.wgmma` reads (`mlc.swizzle`): rows of 64 16-bit elements."""
WGMMA_SHARED_MEMORY_BYTES = 226 * 1024
"""What a kernel of `loop.wgmma` products (sm_90a only, 227 KiB a block) may use for its stages
and a staged epilogue (loop-stage-epilogue), leaving 1 KiB for mbarriers and alignment: an H100's
128x256x64 f16 block takes 48 KiB a stage (4 stages, also beside a 33 KiB half-band staging)."""


# -- what the threads read -------------------------------------------------------------------------


@dataclass
class ReadSite:
    """One read of the candidate buffer inside the scope."""

    op: Read
    uniform: list[AffineForm]
    """Per dimension, the terms every thread shares during one run of the scope."""
    varying: list[AffineForm]
    """Per dimension, the constant and the terms that vary between threads and inner iterations."""
    width: int
    """Elements along the last dimension (a vector read's length, else 1)."""
    runs: int
    """How often one thread executes it per run of the scope (inner loops' trip counts)."""
    rows: int = 1
    """Elements along the next-to-last dimension (a wgmma operand block's rows, else 1)."""
    role: str | None = None
    """Which operand of a `loop.wgmma` the buffer is ("lhs" or "rhs"); None for other reads."""


@dataclass
class Box:
    uniform: list[AffineForm]
    low: list[int]
    high: list[int]

    @property
    def extents(self) -> list[int]:
        return [high - low + 1 for low, high in zip(self.low, self.high)]


@dataclass
class Promotion:
    source: SSAValue
    scope: Operation
    sites: list[ReadSite]
    box: Box
    reads: int
    copy_width: int
    padding: int = 0
    groups: list[list[ReadSite]] | None = None
    """Set when the copy is transposed: the reads, in groups of neighbours along the next-to-last
    dimension, first (lowest) element first, each group read as one vector."""

    @property
    def transposed(self) -> bool:
        return self.groups is not None

    @property
    def shared_extents(self) -> list[int]:
        """The box's extents in the shared buffer's dimension order (last two swapped if transposed)."""
        extents = self.box.extents
        return [*extents[:-2], extents[-1], extents[-2]] if self.transposed else extents

    @property
    def reuse(self) -> float:
        return self.reads / math.prod(self.box.extents)


class ScopeAnalysis:
    """Uniformity, ranges and concrete values of index values, for one thread loop and scope."""

    def __init__(self, thread_loop: loop.ParallelOp, scope: Operation):
        self.thread_loop = thread_loop
        self.uniform_counters = {
            op.body.block.args[0] for op in _enclosing_fors(scope, thread_loop, inclusive=True)
        }
        self.seeds: dict[SSAValue, IndexFacts] = {thread_loop.induction_variable: IndexFacts.range(0, thread_loop.trip_count - 1)}
        for parallel in thread_loop.enclosing_parallel_loops():
            self.seeds[parallel.induction_variable] = IndexFacts.range(0, parallel.trip_count - 1)
        self.cache: dict[SSAValue, IndexFacts] = {}
        for op in thread_loop.walk():
            if isinstance(op, scf.ForOp):
                self._seed_counter(op)
        self._uniform: dict[SSAValue, bool] = {}

    def _seed_counter(self, op: scf.ForOp) -> None:
        bounds = constant_bounds(op)
        counter = op.body.block.args[0]
        if bounds is not None:
            low, upper, step = bounds
            last = low + max(0, (upper - 1 - low)) // step * step
            self.seeds[counter] = IndexFacts(low, last, math.gcd(low, step) or step)
            return
        low, upper, step = (self.facts(v) for v in (op.lb, op.ub, op.step))
        if low.low == low.high and step.low == step.high and step.low > 0 and upper.high > -(2**61):
            self.seeds[counter] = IndexFacts(low.low, max(low.low, upper.high - 1), math.gcd(low.low, step.low) or step.low)

    def facts(self, value: SSAValue) -> IndexFacts:
        return facts_of(value, self.seeds, self.cache)

    def is_uniform(self, value: SSAValue) -> bool:
        """The same for every thread of the block during one run of the scope's body."""
        if value in self._uniform:
            return self._uniform[value]
        if value in self.uniform_counters or not is_inside(value, self.thread_loop):
            result = True
        elif value is self.thread_loop.induction_variable or not isinstance(value.owner, Operation):
            result = False
        else:
            owner = value.owner
            result = not owner.regions and _is_pure(owner) and all(self.is_uniform(v) for v in owner.operands)
        self._uniform[value] = result
        return result

    def concrete(self, form: AffineForm, lane: int) -> int | None:
        """The value of a varying form in thread `lane`, inner loops at their first iteration."""
        known = {self.thread_loop.induction_variable: lane}
        for counter, facts in self.seeds.items():
            known.setdefault(counter, max(facts.low, 0))
        total = form.constant
        for leaf, coefficient in form.terms:
            value = evaluate(leaf, known)
            if value is None:
                return None
            total += coefficient * value
        return total


def _is_pure(op: Operation) -> bool:
    return op.dialect_name() == "arith"


def is_inside(value: SSAValue, ancestor: Operation) -> bool:
    """Whether `value` is defined by `ancestor` or inside it."""
    return ancestor.is_ancestor(value.owner)


def _enclosing_fors(op: Operation, stop: Operation, inclusive: bool) -> list[scf.ForOp]:
    loops = [op] if inclusive and isinstance(op, scf.ForOp) else []
    parent = op.parent_op()
    while parent is not None and parent is not stop:
        if isinstance(parent, scf.ForOp):
            loops.append(parent)
        parent = parent.parent_op()
    return loops


def scope_body(scope: Operation) -> Block:
    return scope.regions[0].block


def candidate_scopes(thread_loop: loop.ParallelOp) -> Iterator[Operation]:
    """The thread loop, then its uniform `scf.for` nests, outermost first (see the docstring)."""
    yield thread_loop
    pending = [thread_loop.body.block]
    while pending:
        block = pending.pop(0)
        for op in block.ops:
            if isinstance(op, scf.ForOp) and all(is_loop_uniform(v, thread_loop) for v in op.operands[:3]):
                yield op
                pending.append(op.body.block)


def constant_bounds(op: scf.ForOp) -> tuple[int, int, int] | None:
    """(lower bound, upper bound, step) of a loop whose bounds are constants and step positive."""
    bounds = [constant_index(v) for v in (op.lb, op.ub, op.step)]
    if any(b is None for b in bounds) or bounds[2] <= 0:  # type: ignore[operator]
        return None
    return bounds  # type: ignore[return-value]


def _trip_count(op: scf.ForOp) -> int:
    bounds = constant_bounds(op)
    if bounds is None:
        return 1
    low, upper, step = bounds
    return max(0, -(-(upper - low) // step))


def read_sites(source: SSAValue, scope: Operation, analysis: ScopeAnalysis) -> list[ReadSite] | None:
    """Every read of `source` inside the scope as a `ReadSite`; None if one is not affine."""
    sites = []
    for use in source.uses:
        op = use.operation
        if op is scope or not scope.is_ancestor(op):
            continue
        role = _read_role(op, use.index)
        if role is None:
            return None
        indices, (rows, width) = op.read_region(role)[1:] if isinstance(op, loop.WgmmaOp) else (op.indices, (1, _read_width(op)))
        uniform, varying = [], []
        for index in indices:
            shared, own = affine_form(index).split(analysis.is_uniform)
            facts = [analysis.facts(leaf) for leaf, _ in own.terms]
            if any(f.low < -(2**60) or f.high > 2**60 for f in facts):
                return None
            uniform.append(shared)
            varying.append(own)
        runs = math.prod(_trip_count(f) for f in _enclosing_fors(op, scope, inclusive=False))
        sites.append(ReadSite(op, uniform, varying, width, runs, rows, role if isinstance(op, loop.WgmmaOp) else None))
    return sites


def _read_role(op: Operation, operand_index: int) -> str | None:
    """"read" for a read of the buffer at operand 0, a wgmma's operand role, else None."""
    if isinstance(op, loop.WgmmaOp):
        return op.operand_role(operand_index)
    return "read" if isinstance(op, Read) and operand_index == 0 else None


def _read_width(op: Read) -> int:
    if isinstance(op, loop.LdMatrixOp):
        return loop.LDMATRIX_ROW
    if isinstance(op, vector.LoadOp):
        return op.results[0].type.get_shape()[0]  # type: ignore[attr-defined]
    return 1


def needs_shared_memory(sites: Sequence[ReadSite]) -> bool:
    """Whether a read can only read shared memory on the GPU (`loop.ldmatrix`, `loop.wgmma`)."""
    return any(isinstance(site.op, loop.LdMatrixOp | loop.WgmmaOp) for site in sites)


def feeds_tensor_cores(sites: Sequence[ReadSite], thread_loop: loop.ParallelOp) -> bool:
    """Whether the reads load mma operand registers (`mlc.operand`) in a tensor-core kernel
    (`mlc.mma`): staged whatever their reuse, since a warp's scattered fragment reads served by
    L1 cost more than the copy (TF32 operands, which ldmatrix cannot load, read this way)."""
    kernel = thread_loop.parent_op()
    while kernel is not None and not isinstance(kernel, loop.KernelOp):
        kernel = kernel.parent_op()
    if kernel is None or attributes.MMA.read(kernel) is None:
        return False
    return any(attributes.OPERAND.read(site.op) is not None for site in sites)


def needs_swizzle(sites: Sequence[ReadSite]) -> bool:
    """Whether a `loop.wgmma` reads the buffer: then its copy is swizzled (`SWIZZLE_BYTES`), not padded."""
    return any(site.role is not None for site in sites)


def _range(form: AffineForm, analysis: ScopeAnalysis) -> tuple[int, int]:
    low = high = form.constant
    for leaf, coefficient in form.terms:
        facts = analysis.facts(leaf)
        ends = (coefficient * facts.low, coefficient * facts.high)
        low, high = low + min(ends), high + max(ends)
    return low, high


def bounding_box(sites: Sequence[ReadSite], analysis: ScopeAnalysis) -> Box | None:
    """The elements the sites read in one run, if they share their uniform terms."""
    first = sites[0]
    if any(not all(a.same_terms(b) for a, b in zip(first.uniform, site.uniform)) for site in sites):
        return None
    rank = len(first.uniform)
    low, high = [2**62] * rank, [-(2**62)] * rank
    for site in sites:
        for dim, form in enumerate(site.varying):
            site_low, site_high = _range(form, analysis)
            if dim == rank - 1:
                site_high += site.width - 1
            elif dim == rank - 2:
                site_high += site.rows - 1
            low[dim], high[dim] = min(low[dim], site_low), max(high[dim], site_high)
    return Box(list(first.uniform), low, high)


# -- how the shared copy is laid out -----------------------------------------------------------------


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


def _copy_width(box: Box, element_bytes: int) -> int:
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


# -- deciding ----------------------------------------------------------------------------------------


def element_type_of(source: SSAValue):
    return source.type.element_type  # type: ignore[attr-defined]


def is_read_only(source: SSAValue) -> bool:
    return all(_read_role(use.operation, use.index) is not None for use in source.uses)


def plan_promotion(
    source: SSAValue, thread_loop: loop.ParallelOp, budget: int, per_iteration: bool = False
) -> tuple[Promotion, ScopeAnalysis] | None:
    """The first scope where `source` is worth promoting and fits `budget` bytes, if any.

    `per_iteration` (a chain kernel with stages of async copies): a buffer that ldmatrix reads
    inside a uniform loop is staged per iteration of a loop, never whole at the thread loop, so that
    the operands of the key loop (K and V blocks) are all pipelined and none takes the shared
    memory the other needs."""
    element_bytes = byte_width(element_type_of(source))
    scopes = list(candidate_scopes(thread_loop))
    for scope in scopes:
        analysis = ScopeAnalysis(thread_loop, scope)
        sites = read_sites(source, scope, analysis)
        if not sites:
            continue
        box = bounding_box(sites, analysis)
        if box is None:
            continue
        volume = math.prod(box.extents)
        reads = thread_loop.trip_count * sum(site.runs * site.width * site.rows for site in sites)
        required = needs_shared_memory(sites)
        if (reads < MIN_REUSE * volume and not (required or feeds_tensor_cores(sites, thread_loop))) or volume * element_bytes > budget:
            continue
        if per_iteration and required and scope is thread_loop and any(_holds_all(loop_scope, sites) for loop_scope in scopes[1:]):
            continue
        if required and box.extents[-1] % loop.LDMATRIX_ROW:
            continue  # ldmatrix rows must stay 16-byte aligned in the copy
        if needs_swizzle(sites) and (not isinstance(scope, scf.ForOp) or box.extents[-1] * element_bytes % SWIZZLE_BYTES or box.extents[-2] % 8):
            continue  # wgmma's swizzled layout comes in 8 rows of 128 bytes, staged per K step
        promotion = Promotion(source, scope, sites, box, reads, _copy_width(box, element_bytes))
        promotion.groups = vector_groups(sites, box, analysis, element_bytes)
        return promotion, analysis
    return None


def _holds_all(scope: Operation, sites: Sequence[ReadSite]) -> bool:
    return all(scope.is_ancestor(site.op) for site in sites)


def describe_promotion(promotion: Promotion, analysis: ScopeAnalysis, cost: int, unpadded: int) -> str:
    name = promotion.source.name_hint or "buffer"
    scope = promotion.scope
    where = f"each iteration of %{scope.body.block.args[0].name_hint or 'loop'}" if isinstance(scope, scf.ForOp) else "the thread loop"
    box = "x".join(map(str, promotion.box.extents))
    text = (
        f"%{name}: {box} elements read {promotion.reads} times by {analysis.thread_loop.trip_count} threads "
        f"in {where} ({promotion.reuse:g}x reuse); "
    )
    if promotion.groups:
        text += f"stored transposed, read {len(promotion.groups[0])} neighbours at a time; "
    if needs_swizzle(promotion.sites):
        return text + f"read by wgmma; swizzled ({SWIZZLE_BYTES}-byte rows of 8-row atoms, 16-byte chunks XOR row mod 8)"
    if needs_shared_memory(promotion.sites):
        text += "read by ldmatrix; "
    text += f"rows padded by {promotion.padding}"
    return text + f": {cost} shared-memory wavefronts per warp, {unpadded} unpadded"


def thread_loops(kernel: loop.KernelOp) -> list[loop.ParallelOp]:
    """One-dimensional thread loops (not nested in another thread loop, none nested in them)."""
    found = []
    for op in kernel.walk():
        if isinstance(op, loop.ParallelOp) and op.mapping_name() in loop.THREAD_MAPPINGS:
            nested = any(isinstance(inner, loop.ParallelOp) and inner is not op for inner in op.walk())
            if not nested and op.thread_count_of_nest() == op.trip_count:
                found.append(op)
    return found


def allocation_bytes(allocation: memref.AllocaOp) -> int:
    """The bytes of shared memory `allocation` takes (none for other memory spaces)."""
    memref_type = allocation.memref.type
    space = memref_type.memory_space
    if isinstance(space, IntegerAttr) and space.value.data == loop.SHARED_MEMORY_SPACE:
        return math.prod(memref_type.get_shape()) * byte_width(memref_type.element_type)
    return 0


def shared_bytes(kernel: loop.KernelOp) -> int:
    """The shared memory that the allocations of `kernel` take together."""
    return sum(allocation_bytes(op) for op in kernel.walk() if isinstance(op, memref.AllocaOp))
