"""What a block's threads read of a global buffer, for loop-promote-shared
(`shared_memory_promotion.py` decides from it; `loop/loop_promote_shared.py` states the algorithm).

What: the candidate *scopes* of a thread loop (its body and the `scf.for`s with thread-independent
bounds reached from it), `ScopeAnalysis` (which index values every thread shares during one run of
a scope, their ranges and their value in a given lane), the *read sites* of a buffer in a scope
(`ReadSite`: each index split into the shared and the varying terms, `affine_index.py`; how often
and how wide it is read), their *box* (`Box`, the elements one run reads) and the `Promotion`
record the decision fills in; whether the reads need shared memory (ldmatrix, wgmma) or a
swizzled layout (wgmma).

Preconditions: the thread loop is one-dimensional and holds no other thread loop
(`shared_memory_promotion.thread_loops`). Limits: reads are `memref.load`, `vector.load`,
`loop.ldmatrix` and `loop.wgmma` operands; any other use of the buffer in the scope, or an index
whose varying terms have no bounded range, makes `read_sites` None; a box is found only where all
sites share their uniform terms.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import memref, scf, vector
from xdsl.ir import Block, Operation, SSAValue

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import (
    AffineForm,
    affine_form,
    constant_index,
    evaluate,
)
from mlc.transforms.analysis.index_analysis import IndexFacts, facts_of
from mlc.transforms.analysis.thread_analysis import is_loop_uniform


Read = memref.LoadOp | vector.LoadOp | loop.LdMatrixOp | loop.WgmmaOp
"""The reads the pass stages; `loop.ldmatrix` and `loop.wgmma` read only shared memory on the GPU,
so a buffer they read is promoted whatever its reuse (each lane's 8-element row of an ldmatrix
counts as a vector read, a wgmma's operand block as a block read by every thread)."""
SWIZZLE_BYTES = 128
"""The swizzle span of a buffer `loop.wgmma` reads (`mlc.swizzle`): rows of 64 16-bit elements."""


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


def element_type_of(source: SSAValue):
    return source.type.element_type  # type: ignore[attr-defined]


def is_read_only(source: SSAValue) -> bool:
    return all(_read_role(use.operation, use.index) is not None for use in source.uses)
