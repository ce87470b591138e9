"""loop-promote-shared: stage global operands that many threads re-read in shared memory.

In a loop kernel, a block's threads often read the same elements of a global buffer: in a matmul
every element of an A block is read by each thread of a row of threads, once per column they own.
This pass finds such reads and gives each block a copy of what they need, made once by all the
threads together and then read from shared memory (memref space 3) instead.

Algorithm, per thread loop (`loop.parallel ... mapping thread.x`) and per global buffer (a kernel
parameter) that the kernel only reads:

1. Scopes. The candidate scopes are the thread loop's body and each `scf.for` reached from it
   through `scf.for`s alone whose bounds are the same for every thread (defined outside the
   thread loop): the copy goes at the start of each run of the scope's body, where every thread
   arrives together. Outermost first, the first scope that passes 2-4 is taken.
2. Box. Every index of every read of the buffer inside the scope is an affine sum
   (`affine_index.py`) of *uniform* terms (block ids, the scope's counter, what is computed from
   them: the same for all threads during one run of the body) and *varying* ones (the thread id,
   counters of inner loops) whose ranges the index analysis bounds. All reads must share their
   uniform terms; their varying ranges, united, give the box of elements one run reads:
   `origin + [low, high]` per dimension.
3. Reuse. Reads per run = threads x (trip counts of the loops between the scope and each read)
   x elements per read (an `scf.if` around a read counts as taken); reuse = reads / box elements.
   Promote when reuse >= `MIN_REUSE` and the boxes of the block fit `SHARED_MEMORY_BYTES`; else
   try the next scope (an inner loop's box can be reused more than the whole range's).
   The allocation records why: `mlc.promoted = "..."` names the buffer, the box, the scope, the
   reads and the reuse.
4. Layout. The shared buffer is the box in the buffer's own dimension order (so a vector read
   stays a vector read), its rows padded by a multiple of the copy's vector width, except when
   every read is a scalar read in a group of up to 16 bytes' worth of neighbours along the
   next-to-last dimension, each group aligned (`vector_groups`; a matmul micro-tile's 4-tall row
   chunks reading a column of A): then the last two dimensions are swapped, the copy stores each
   element of its vectors on its own, and each group becomes one aligned vector read. The padding is
   chosen by counting shared-memory wavefronts (32 banks of 4 bytes, a warp's request split in
   phases of 128 bytes; within a phase, distinct words in one bank are serialised) for the lanes
   of the first warp, for every rewritten read and the copy's stores, weighted by how often each
   runs; the least costly padding wins, the smallest on a tie. The attribute reports the counts.
5. Copy. At the start of the scope's body the threads copy the box row by row in vectors of up to
   16 bytes, consecutive threads taking consecutive vectors (coalesced global reads), in as many
   rounds as needed (the last one guarded when the threads outnumber the vectors). Global reads
   are masked at the buffer's bounds like tile loads (`chunk_access.py`: checks only where the
   index analysis cannot prove them, 16-byte vectors where it proves them aligned); elements
   outside the buffer are copied as zeros and never read, since every read that could fall
   outside was guarded already. Each read of the box then reads the shared buffer at
   `index - origin`, its guards unchanged.

Semantics. Within a thread loop, shared memory is block-synchronous at the loop level (see the loop
dialect): each statement touching it completes in every thread before any thread goes on, as the
loop interpreter runs it. `gpu-insert-barriers` later places the barriers this order needs on
the GPU: after the copy (read after write) and before the next run's copy (write after read).
The pass belongs to the GPU pipeline; the CPU lowering runs threads one after another and does
not promote.

Preconditions: one-dimensional blocks (a thread loop not nested in another). A buffer the kernel
writes is not promoted, nor one read through anything but `memref.load`/`vector.load`; kernel
parameters do not alias each other (mlc's host code passes distinct buffers to a kernel that
writes one of them).
Limits: the only transposition swaps the last two dimensions, and only for grouped scalar reads
(ragged reads guarded one by one are not grouped); no swizzling (padding only); one box per buffer and scope;
reuse counts reads, not distinct threads; unknown trip counts count as one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    VectorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.affine_index import AffineForm, affine_form, constant_index, evaluate
from mlc.transforms.chunk_access import ChunkAccesses, Emitter, emit_if, zero_of
from mlc.transforms.index_analysis import IndexFacts, facts_of

MIN_REUSE = 4.0
"""Promote when each element of the box is read at least this many times per run of the scope;
below that the L1 cache serves the repeats about as well as a copy and the barriers it needs."""
SHARED_MEMORY_BYTES = 48 * 1024
"""Static shared memory a block may use on every NVIDIA GPU since Kepler."""
COPY_BYTES = 16
BANKS, BANK_BYTES, WAVEFRONT_BYTES, WARP = 32, 4, 128, 32

Read = memref.LoadOp | vector.LoadOp


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
        bounds = _constant_bounds(op)
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
        if value in self.uniform_counters or not _is_inside(value, self.thread_loop):
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


def _is_inside(value: SSAValue, ancestor: Operation) -> bool:
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


def _scope_body(scope: Operation) -> Block:
    return scope.regions[0].block


def candidate_scopes(thread_loop: loop.ParallelOp) -> Iterator[Operation]:
    """The thread loop, then its uniform `scf.for` nests, outermost first (see the docstring)."""
    yield thread_loop
    pending = [thread_loop.body.block]
    while pending:
        block = pending.pop(0)
        for op in block.ops:
            uniform_bounds = all(constant_index(v) is not None or not _is_inside(v, thread_loop) for v in (op.operands[:3]))
            if isinstance(op, scf.ForOp) and uniform_bounds:
                yield op
                pending.append(op.body.block)


def _constant_bounds(op: scf.ForOp) -> tuple[int, int, int] | None:
    """(lower bound, upper bound, step) of a loop whose bounds are constants and step positive."""
    bounds = [constant_index(v) for v in (op.lb, op.ub, op.step)]
    if any(b is None for b in bounds) or bounds[2] <= 0:  # type: ignore[operator]
        return None
    return bounds  # type: ignore[return-value]


def _trip_count(op: scf.ForOp) -> int:
    bounds = _constant_bounds(op)
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
        if not isinstance(op, Read) or use.index != 0:
            return None
        uniform, varying = [], []
        for index in op.indices:
            shared, own = affine_form(index).split(analysis.is_uniform)
            facts = [analysis.facts(leaf) for leaf, _ in own.terms]
            if any(f.low < -(2**60) or f.high > 2**60 for f in facts):
                return None
            uniform.append(shared)
            varying.append(own)
        width = op.results[0].type.get_shape()[0] if isinstance(op, vector.LoadOp) else 1  # type: ignore[attr-defined]
        runs = math.prod(_trip_count(f) for f in _enclosing_fors(op, scope, inclusive=False))
        sites.append(ReadSite(op, uniform, varying, width, runs))
    return sites


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


def layout_cost(promotion: Promotion, analysis: ScopeAnalysis, padding: int, element_bytes: int) -> int:
    """Wavefronts per run of the scope, summed over the first warp's reads and copy stores."""
    box = promotion.box
    strides = _box_strides(promotion, padding)
    lanes = range(min(WARP, analysis.thread_loop.trip_count))
    accesses = [(group[0], len(group)) for group in promotion.groups] if promotion.groups else [(s, s.width) for s in promotion.sites]
    total = 0
    for site, width in accesses:
        addresses: list[Sequence[int] | None] = []
        for lane in lanes:
            local = [analysis.concrete(form, lane) for form in site.varying]
            if any(value is None for value in local):
                addresses.append(None)
                continue
            offset = sum((value - low) * stride for value, low, stride in zip(local, box.low, strides))  # type: ignore[operator]
            addresses.append(_words(offset, width, element_bytes))
        total += site.runs * wavefronts(addresses, width * element_bytes)
    width = promotion.copy_width
    # A transposed copy stores each element of a chunk on its own; a plain one stores the chunk.
    pieces = [(offset, 1) for offset in range(width)] if promotion.transposed else [(0, width)]
    chunks = math.prod(box.extents) // width
    for round_start in range(0, chunks, analysis.thread_loop.trip_count):
        for offset, count in pieces:
            stores = []
            for lane in lanes:
                if round_start + lane < chunks:
                    coordinates = _chunk_coordinates(round_start + lane, box.extents, width)
                    coordinates[-1] += offset
                    stores.append(_words(sum(c * s for c, s in zip(coordinates, strides)), count, element_bytes))
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
    costs = {padding: layout_cost(promotion, analysis, padding, element_bytes) for padding in candidates}
    best = min(costs, key=lambda padding: (costs[padding], padding))
    return best, costs[best], costs[0]


# -- deciding ----------------------------------------------------------------------------------------


def _element_type(source: SSAValue):  # noqa: ANN202 - an xDSL attribute
    return source.type.element_type  # type: ignore[attr-defined]


def _is_read_only(source: SSAValue) -> bool:
    return all(isinstance(use.operation, Read) and use.index == 0 for use in source.uses)


def plan_promotion(source: SSAValue, thread_loop: loop.ParallelOp, budget: int) -> tuple[Promotion, ScopeAnalysis] | None:
    """The first scope where `source` is worth promoting and fits `budget` bytes, if any."""
    element_bytes = byte_width(_element_type(source))
    for scope in candidate_scopes(thread_loop):
        analysis = ScopeAnalysis(thread_loop, scope)
        sites = read_sites(source, scope, analysis)
        if not sites:
            continue
        box = bounding_box(sites, analysis)
        if box is None:
            continue
        volume = math.prod(box.extents)
        reads = thread_loop.trip_count * sum(site.runs * site.width for site in sites)
        if reads < MIN_REUSE * volume or volume * element_bytes > budget:
            continue
        promotion = Promotion(source, scope, sites, box, reads, _copy_width(box, element_bytes))
        promotion.groups = vector_groups(sites, box, analysis, element_bytes)
        return promotion, analysis
    return None


def _describe(promotion: Promotion, analysis: ScopeAnalysis, cost: int, unpadded: int) -> str:
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
    text += f"rows padded by {promotion.padding}"
    return text + f": {cost} shared-memory wavefronts per warp, {unpadded} unpadded"


# -- rewriting ---------------------------------------------------------------------------------------


class PromotionRewriter:
    """Emits the allocation, the copy and the rewritten reads of one promotion."""

    def __init__(self, kernel: loop.KernelOp, promotion: Promotion, analysis: ScopeAnalysis):
        self.kernel = kernel
        self.promotion = promotion
        self.analysis = analysis

    def apply(self, reason: str) -> None:
        promotion = self.promotion
        extents = promotion.shared_extents
        shape = [*extents[:-1], extents[-1] + promotion.padding]
        space = IntegerAttr(loop.SHARED_MEMORY_SPACE, i64)
        allocation = memref.AllocaOp.get(_element_type(promotion.source), COPY_BYTES, shape, memory_space=space)
        allocation.memref.name_hint = f"{promotion.source.name_hint or 'buffer'}_shared"
        allocation.attributes["mlc.promoted"] = StringAttr(reason)
        thread_loop = self.analysis.thread_loop
        thread_loop.parent_block().insert_op_before(allocation, thread_loop)  # type: ignore[union-attr]
        scope = promotion.scope
        last = _last_iteration(scope) if isinstance(scope, scf.ForOp) else None
        staging = Emitter(Block())
        origins = self._origins(staging, None)
        if last is None:
            self._store_box(staging, allocation.memref, self._load_box(staging, origins))
        else:
            scope = self._prefetch(staging, allocation.memref, scope, last)
        body = _scope_body(scope)
        _move(staging, body, body.first_op)
        if promotion.groups:
            for group in promotion.groups:
                self._redirect_group(group, allocation.memref, origins)
        else:
            for site in promotion.sites:
                self._redirect(site, allocation.memref, origins)

    def _prefetch(self, staging: Emitter, shared: SSAValue, scope: scf.ForOp, last: int) -> scf.ForOp:
        """Software pipelining of the copy: each run loads the next run's box into registers.

        The first box is loaded before the loop; a run stores the box it was handed, then loads
        the next one (at `min(counter + step, last counter)`, so that no check is needed past the
        end) while it computes. The loop carries the loaded elements.
        """
        before = Emitter(Block())
        first_box = self._load_box(before, self._origins(before, scope.lb))
        _move(before, scope.parent_block(), scope)  # type: ignore[arg-type]
        body = scope.body.block
        carried = [body.insert_arg(element.type, len(body.args)) for element in first_box]
        self._store_box(staging, shared, carried)
        following = staging.emit(arith.AddiOp(body.args[0], scope.step))
        next_counter = staging.emit(arith.MinUIOp(following, staging.index(last)))
        next_box = self._load_box(staging, self._origins(staging, next_counter))
        terminator = body.last_op
        assert isinstance(terminator, scf.YieldOp)
        body.insert_op_before(scf.YieldOp(*terminator.arguments, *next_box), terminator)
        body.erase_op(terminator)
        pipelined = scf.ForOp(scope.lb, scope.ub, scope.step, [*scope.iter_args, *first_box], scope.detach_region(scope.body))
        pipelined.attributes |= scope.attributes
        scope.parent_block().insert_op_before(pipelined, scope)  # type: ignore[union-attr]
        for old, new in zip(scope.results, pipelined.results):
            old.replace_all_uses_with(new)
        scope.parent_block().erase_op(scope)  # type: ignore[union-attr]
        self.promotion.scope = pipelined
        return pipelined

    def _origins(self, emitter: Emitter, counter: SSAValue | None) -> list[SSAValue]:
        """The box's first element, per dimension, with the scope's counter at `counter`."""
        box = self.promotion.box
        return [self._origin(emitter, uniform, low, counter) for uniform, low in zip(box.uniform, box.low)]

    def _origin(self, emitter: Emitter, uniform: AffineForm, low: int, counter: SSAValue | None) -> SSAValue:
        total = emitter.index(low)
        for leaf, coefficient in uniform.terms:
            value = self._materialize(emitter, leaf, counter)
            if coefficient != 1:
                value = emitter.emit(arith.MuliOp(value, emitter.index(coefficient)))
            total = emitter.add(value, total)
        total.name_hint = "origin"
        return total

    def _materialize(self, emitter: Emitter, value: SSAValue, counter: SSAValue | None) -> SSAValue:
        """`value` at the start of a run of the scope (its counter at `counter` when given)."""
        scope = self.promotion.scope
        if isinstance(scope, scf.ForOp) and value is scope.body.block.args[0]:
            return value if counter is None else counter
        if not _is_inside(value, scope) or value in self.analysis.uniform_counters:
            return value
        owner = value.owner
        assert isinstance(owner, Operation)
        clone = owner.clone(value_mapper={v: self._materialize(emitter, v, counter) for v in owner.operands})
        emitter.builder.insert(clone)
        return clone.results[owner.results.index(value)]

    def _rounds(self, emitter: Emitter) -> list[tuple[SSAValue, bool]]:
        """Each round of the copy: the chunk this thread moves, and whether it needs a guard."""
        promotion, threads = self.promotion, self.analysis.thread_loop.trip_count
        chunks = math.prod(promotion.box.extents) // promotion.copy_width
        thread = self.analysis.thread_loop.induction_variable
        return [
            (emitter.add(thread, emitter.index(start)) if start else thread, start + threads > chunks)
            for start in range(0, chunks, threads)
        ]

    def _guard(self, emitter: Emitter, chunk: SSAValue) -> SSAValue:
        return emitter.below(chunk, math.prod(self.promotion.box.extents) // self.promotion.copy_width)

    def _load_box(self, emitter: Emitter, origins: list[SSAValue]) -> list[SSAValue]:
        """This thread's part of the box from global memory: `copy_width` elements per round."""
        width, element_type = self.promotion.copy_width, _element_type(self.promotion.source)
        extents = tuple(self.promotion.box.extents)
        loaded: list[SSAValue] = []
        for chunk, guarded in self._rounds(emitter):

            def load(inner: Emitter, chunk: SSAValue = chunk) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                accesses = ChunkAccesses(extents, width, coordinates, self.analysis.facts, self._require_alignment)
                return accesses.load(inner, self.promotion.source, [(o, o) for o in origins], extents, None)

            if guarded:
                zeros = lambda inner: [inner.emit(arith.ConstantOp(zero_of(element_type)))] * width  # noqa: E731
                loaded += emit_if(emitter, self._guard(emitter, chunk), [element_type] * width, load, zeros)
            else:
                loaded += load(emitter)
        return loaded

    def _store_box(self, emitter: Emitter, shared: SSAValue, elements: Sequence[SSAValue]) -> None:
        """Writes what `_load_box` loaded into the shared buffer, round by round."""
        width = self.promotion.copy_width
        for position, (chunk, guarded) in enumerate(self._rounds(emitter)):
            piece = list(elements[position * width : (position + 1) * width])

            def store(inner: Emitter, chunk: SSAValue = chunk, piece: list[SSAValue] = piece) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                if self.promotion.transposed:
                    self._store_transposed(inner, shared, coordinates, piece)
                else:
                    self._store_chunk(inner, shared, coordinates, piece)
                return []

            if guarded:
                emit_if(emitter, self._guard(emitter, chunk), [], store, None)
            else:
                store(emitter)

    def _coordinates(self, emitter: Emitter, chunk: SSAValue) -> list[SSAValue]:
        """The box position of a chunk: row-major over the box, `copy_width` elements each."""
        extents, width = self.promotion.box.extents, self.promotion.copy_width
        per_row = emitter.index(extents[-1] // width)
        coordinates = [emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(chunk, per_row)), emitter.index(width)))]
        rest = emitter.emit(arith.DivUIOp(chunk, per_row)) if len(extents) > 1 else chunk
        for position, extent in enumerate(reversed(extents[:-1])):
            outermost = position == len(extents) - 2
            coordinates.append(rest if outermost else emitter.emit(arith.RemUIOp(rest, emitter.index(extent))))
            if not outermost:
                rest = emitter.emit(arith.DivUIOp(rest, emitter.index(extent)))
        return coordinates[::-1]

    @staticmethod
    def _store_chunk(emitter: Emitter, shared: SSAValue, coordinates: list[SSAValue], elements: list[SSAValue]) -> None:
        element_type = _element_type(shared)
        if len(elements) == 1:
            emitter.builder.insert(memref.StoreOp.get(elements[0], shared, coordinates))
            return
        packed = emitter.emit(vector.BroadcastOp(elements[0], VectorType(element_type, [len(elements)])))
        for position in range(1, len(elements)):
            packed = emitter.emit(vector.InsertOp(elements[position], packed, [position]))
        store = vector.StoreOp(packed, shared, coordinates)
        store.attributes["alignment"] = IntegerAttr(len(elements) * byte_width(element_type), i64)
        emitter.builder.insert(store)

    @staticmethod
    def _store_transposed(emitter: Emitter, shared: SSAValue, coordinates: list[SSAValue], elements: list[SSAValue]) -> None:
        """A chunk along the box's last dimension, element by element down a column of the copy."""
        *outer, row, column = coordinates
        for position, element in enumerate(elements):
            shifted = emitter.add(column, emitter.index(position)) if position else column
            emitter.builder.insert(memref.StoreOp.get(element, shared, [*outer, shifted, row]))

    def _require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        """Raises the kernel's recorded alignment of the parameter the copy reads with vectors."""
        recorded = self.kernel.attributes.get("mlc.arg_alignment")
        arguments = list(self.kernel.body.block.args)
        if memref_value not in arguments:
            return
        if isinstance(recorded, DenseArrayBase):
            values = [int(v) for v in recorded.get_values()]
        else:
            values = [byte_width(a.type.element_type) if isinstance(a.type, MemRefType) else 1 for a in arguments]
        position = arguments.index(memref_value)
        values[position] = max(values[position], alignment)
        self.kernel.attributes["mlc.arg_alignment"] = DenseArrayBase.from_list(i64, values)

    def _redirect(self, site: ReadSite, shared: SSAValue, origins: list[SSAValue]) -> None:
        op = site.op
        block = op.parent_block()
        assert block is not None
        local = []
        for index, origin in zip(op.indices, origins):
            difference = arith.SubiOp(index, origin)
            block.insert_op_before(difference, op)
            local.append(difference.result)
        if isinstance(op, vector.LoadOp):
            replacement: Operation = vector.LoadOp(shared, local, op.result.type)
            alignment = op.attributes.get("alignment")
            width_bytes = site.width * byte_width(_element_type(shared))
            if alignment is not None and self._aligned(origins[-1], site.width, shared):
                replacement.attributes["alignment"] = IntegerAttr(width_bytes, i64)
        else:
            replacement = memref.LoadOp.get(shared, local)
        for name, attribute in op.attributes.items():
            if name != "alignment":
                replacement.attributes[name] = attribute
        block.insert_op_before(replacement, op)
        op.results[0].replace_all_uses_with(replacement.results[0])
        block.erase_op(op)

    def _redirect_group(self, group: list[ReadSite], shared: SSAValue, origins: list[SSAValue]) -> None:
        """Neighbouring scalar reads become one aligned vector read of the transposed copy.

        The vector read goes where the group's earliest read was (the others' indices may not be
        defined yet there) and starts at that read's index minus its distance from the first element.
        """
        block = group[0].op.parent_block()
        assert block is not None
        earliest = min(group, key=lambda site: block.get_operation_index(site.op))
        emitter = Emitter(block)
        emitter.builder.insertion_point = InsertPoint.before(earliest.op)
        local = [emitter.emit(arith.SubiOp(index, origin)) for index, origin in zip(earliest.op.indices, origins)]
        distance = group.index(earliest)
        if distance:
            local[-2] = emitter.emit(arith.SubiOp(local[-2], emitter.index(distance)))
        element_type = _element_type(shared)
        read = vector.LoadOp(shared, [*local[:-2], local[-1], local[-2]], VectorType(element_type, [len(group)]))
        read.attributes["alignment"] = IntegerAttr(len(group) * byte_width(element_type), i64)
        for name, attribute in earliest.op.attributes.items():
            if name != "alignment":
                read.attributes[name] = attribute
        emitter.builder.insert(read)
        for position, site in enumerate(group):
            element = emitter.emit(vector.ExtractOp(read.result, [position], element_type))
            site.op.results[0].replace_all_uses_with(element)
        for site in group:
            block.erase_op(site.op)

    def _aligned(self, origin: SSAValue, width: int, shared: SSAValue) -> bool:
        row = shared.type.get_shape()[-1]  # type: ignore[attr-defined]
        return self.analysis.facts(origin).divisor % width == 0 and row % width == 0


def _last_iteration(scope: scf.ForOp) -> int | None:
    """The counter's value in the last run of a loop with constant bounds that runs at least twice."""
    bounds = _constant_bounds(scope)
    if bounds is None or bounds[1] - bounds[0] <= bounds[2]:
        return None
    low, upper, step = bounds
    return low + (upper - 1 - low) // step * step


def _move(staging: Emitter, block: Block, before: Operation | None) -> None:
    """Moves what `staging` emitted into `block`, before `before` (at the end when None)."""
    for op in list(staging.builder.insertion_point.block.ops):
        op.detach()
        block.insert_op_before(op, before) if before is not None else block.add_op(op)


# -- the pass ----------------------------------------------------------------------------------------


def _thread_loops(kernel: loop.KernelOp) -> list[loop.ParallelOp]:
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


def promote_kernel(kernel: loop.KernelOp) -> None:
    for thread_loop in _thread_loops(kernel):
        for source in kernel.body.block.args:
            if not isinstance(source.type, MemRefType) or not _is_read_only(source):
                continue
            budget = SHARED_MEMORY_BYTES - shared_bytes(kernel)
            planned = plan_promotion(source, thread_loop, budget)
            if planned is None:
                continue
            promotion, analysis = planned
            element_bytes = byte_width(_element_type(source))
            promotion.padding, cost, unpadded = choose_padding(promotion, analysis, element_bytes)
            PromotionRewriter(kernel, promotion, analysis).apply(_describe(promotion, analysis, cost, unpadded))


@dataclass(frozen=True)
class LoopPromoteShared(ModulePass):
    """Stage global buffers that a block's threads re-read in shared memory, copied cooperatively."""

    name = "loop-promote-shared"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            promote_kernel(kernel)
