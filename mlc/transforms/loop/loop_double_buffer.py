"""loop-double-buffer: alternate two shared copies between a loop's iterations, one barrier apart.

Why. loop-promote-shared copies an operand's box into shared memory at the start of each iteration
of its scope (a matmul's K loop). With one copy, each iteration needs two barriers on the GPU: one
before the copy, so that no thread overwrites what another still reads from the previous iteration
(write after read), and one after it (read after write). With two copies, used by even and odd
iterations in turn, the copy of an iteration overwrites what the iteration *before the previous
one* read, which the previous iteration's read-after-write barrier already ordered: one barrier
per iteration is enough. On an H200, a hand-written 4096^3 SIMT matmul of mlc's shape went from
0.84x to 0.90x cuBLAS this way, and mlc's own kernel from 0.88x to 0.90x (BENCHMARKS.md).

Algorithm, per `scf.for` L with constant bounds and at least two iterations:

1. Candidates. A shared allocation (`memref.alloca` in memory space 3) marked `mlc.promoted` whose
   every use is a load or store inside L's body, and for which L is the innermost loop holding all
   of them; in L's body every operation that writes it comes before every one that reads it (the
   copy at the start of each iteration).
2. Budget. The candidates are doubled only if the kernel's shared memory, with a second copy of
   each, fits `SHARED_MEMORY_BYTES`; else L is left alone.
3. Rewrite. Each candidate gets a twin allocation. L becomes a loop over pairs of iterations
   (step 2 x step) whose body is L's body twice: for iteration k, then for k + step with every
   candidate replaced by its twin, the first clone's yielded values feeding the second. An odd
   trip count leaves one iteration, cloned after the loop on the first copies. The new loop is
   marked `mlc.double_buffered` with the names of the doubled allocations; each twin's
   `mlc.promoted` says whose second copy it is.

4. Occupancy. The doubled body raises register pressure: ptxas gave mlc's 4096^3 matmul 151
   registers, one block of 256 threads per multiprocessor, 0.69x cuBLAS instead of 0.90x. So a
   kernel it doubled asks for two blocks per multiprocessor (`mlc.min_blocks_per_multiprocessor`,
   `.minnctapersm` in PTX) when that still leaves a thread `MIN_REGISTERS` registers, unless the
   kernel asks for something already.

Barriers are not this pass's business: it changes no result in the loop level's block-synchronous
semantics (each iteration reads only what it copied itself), and gpu-insert-barriers then finds
that one barrier per iteration orders every hazard.

Preconditions: an allocation marked `mlc.promoted` is rewritten, in each iteration of the loop that
holds its accesses, over every element the iteration reads; loop-promote-shared's copies are.
Limits: loops with bounds that are not constants keep one copy; no deeper pipelines (three copies);
the body is cloned, not indexed by parity, so the code doubles. Not in the default GPU pipeline:
on an H200 it made the plain 4096^3 matmul 2% faster (0.90x cuBLAS) but the fused
relu(matmul + bias) 5% slower than a single copy that ptxas fit in 127 registers (BENCHMARKS.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import constant_index
from mlc.transforms.analysis.shared_memory_promotion import (
    SHARED_MEMORY_BYTES,
    allocation_bytes,
    shared_bytes,
)

REGISTERS_PER_MULTIPROCESSOR = 65536
"""32-bit registers of one multiprocessor, on every NVIDIA GPU since Maxwell."""
MIN_REGISTERS = 128
"""Two blocks per multiprocessor are asked for only if each thread keeps at least this many."""
SharedAccess = memref.LoadOp | memref.StoreOp | vector.LoadOp | vector.StoreOp


def _writes(op: SharedAccess) -> bool:
    return isinstance(op, memref.StoreOp | vector.StoreOp)


def _top_level_index(body: Block, op: Operation) -> int | None:
    """The position in `body` of the operation of `body` that holds `op`, if any does."""
    while op.parent_block() is not body:
        parent = op.parent_op()
        if parent is None:
            return None
        op = parent
    return body.get_operation_index(op)


def _innermost_common_loop(ops: list[Operation]) -> scf.ForOp | None:
    """The innermost `scf.for` that holds every one of `ops`."""
    candidate = ops[0].parent_op()
    while candidate is not None:
        if isinstance(candidate, scf.ForOp) and all(candidate.is_ancestor(op) for op in ops):
            return candidate
        candidate = candidate.parent_op()
    return None


def owning_loop(allocation: memref.AllocaOp) -> scf.ForOp | None:
    """The loop whose iterations each rewrite `allocation` before reading it, if there is one."""
    if attributes.PROMOTED.read(allocation) is None or not allocation_bytes(allocation):
        return None
    users = [use.operation for use in allocation.memref.uses]
    if not users or not all(isinstance(user, SharedAccess) for user in users):
        return None
    owner = _innermost_common_loop(users)
    if owner is None:
        return None
    body = owner.body.block
    positions = [(_top_level_index(body, user), _writes(user)) for user in users]  # type: ignore[arg-type]
    last_write = max((index for index, writes in positions if writes), default=None)
    first_read = min((index for index, writes in positions if not writes), default=None)
    if last_write is None or first_read is None or last_write >= first_read:
        return None
    return owner


def _trip_count(for_op: scf.ForOp) -> tuple[int, int, int] | None:
    """(lower bound, step, iterations) of a loop with constant bounds and a positive step."""
    lower, upper, step = (constant_index(value) for value in (for_op.lb, for_op.ub, for_op.step))
    if lower is None or upper is None or step is None or step <= 0:
        return None
    return lower, step, len(range(lower, upper, step))


def _constant(value: int, before: Operation, name: str | None = None) -> SSAValue:
    constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
    constant.result.name_hint = name
    before.parent_block().insert_op_before(constant, before)  # type: ignore[union-attr]
    return constant.result


def _clone_body(body: Block, into: Block, mapping: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """Appends a clone of `body` (its yield left out) to `into`; returns what the clone yields."""
    for op in body.ops:
        if isinstance(op, scf.YieldOp):
            return [mapping.get(value, value) for value in op.arguments]
        into.add_op(op.clone(value_mapper=mapping))
    return []


def _twin(allocation: memref.AllocaOp) -> memref.AllocaOp:
    twin = allocation.clone()
    name = allocation.memref.name_hint or "shared"
    twin.memref.name_hint = f"{name}_odd"
    reason = attributes.PROMOTED.read(allocation)
    assert isinstance(reason, StringAttr)
    attributes.PROMOTED.write(twin, StringAttr(f"second copy of %{name}, for odd iterations: {reason.data}"))  # type: ignore[union-attr]
    allocation.parent_block().insert_op_after(twin, allocation)  # type: ignore[union-attr]
    return twin


def double_buffer(for_op: scf.ForOp, allocations: list[memref.AllocaOp]) -> scf.ForOp:
    """Rewrites `for_op` over pairs of iterations, odd ones on twins of `allocations`."""
    bounds = _trip_count(for_op)
    assert bounds is not None
    lower, step, iterations = bounds
    twins: dict[SSAValue, SSAValue] = {a.memref: _twin(a).memref for a in allocations}
    counter, *arguments = for_op.body.block.args
    pair_end = _constant(lower + iterations // 2 * 2 * step, for_op)
    pair_step = _constant(2 * step, for_op)
    body = Block(arg_types=[counter.type, *(argument.type for argument in arguments)])
    pair_counter, *pair_arguments = body.args
    pair_counter.name_hint = counter.name_hint
    for new, old in zip(pair_arguments, arguments):
        new.name_hint = old.name_hint
    even = _clone_body(for_op.body.block, body, {counter: pair_counter, **dict(zip(arguments, pair_arguments))})
    odd_counter = arith.AddiOp(pair_counter, _constant(step, for_op))
    odd_counter.result.name_hint = f"{counter.name_hint or 'k'}_odd"
    body.add_op(odd_counter)
    odd = _clone_body(for_op.body.block, body, {counter: odd_counter.result, **dict(zip(arguments, even)), **twins})
    body.add_op(scf.YieldOp(*odd))
    pairs = scf.ForOp(for_op.lb, pair_end, pair_step, for_op.iter_args, Region(body))
    pairs.attributes |= for_op.attributes
    attributes.DOUBLE_BUFFERED.write(pairs, ArrayAttr([StringAttr(a.memref.name_hint or "shared") for a in allocations]))
    block = for_op.parent_block()
    assert block is not None
    block.insert_op_before(pairs, for_op)
    results: list[SSAValue] = list(pairs.results)
    if iterations % 2:
        last = Block()
        mapping = {counter: _constant(lower + (iterations - 1) * step, for_op), **dict(zip(arguments, results))}
        results = _clone_body(for_op.body.block, last, mapping)
        for op in list(last.ops):
            op.detach()
            block.insert_op_before(op, for_op)
    for old, new in zip(for_op.results, results):
        old.replace_all_uses_with(new)
    block.erase_op(for_op)
    return pairs


def double_buffer_kernel(kernel: loop.KernelOp) -> None:
    owned: dict[scf.ForOp, list[memref.AllocaOp]] = {}
    for allocation in [op for op in kernel.walk() if isinstance(op, memref.AllocaOp)]:
        owner = owning_loop(allocation)
        if owner is not None:
            owned.setdefault(owner, []).append(allocation)
    for for_op, allocations in owned.items():
        bounds = _trip_count(for_op)
        if bounds is None or bounds[2] < 2:
            continue
        extra = sum(allocation_bytes(allocation) for allocation in allocations)
        if shared_bytes(kernel) + extra > SHARED_MEMORY_BYTES:
            continue
        double_buffer(for_op, allocations)
        _ask_for_two_blocks(kernel)


def _ask_for_two_blocks(kernel: loop.KernelOp) -> None:
    threads = max((p.thread_count_of_nest() for p in kernel.walk() if isinstance(p, loop.ParallelOp) and p.mapping_name() == "thread.x"), default=0)
    if attributes.MIN_BLOCKS_PER_MULTIPROCESSOR.read(kernel) is not None or not threads:
        return
    if REGISTERS_PER_MULTIPROCESSOR // (2 * threads) >= MIN_REGISTERS:
        attributes.MIN_BLOCKS_PER_MULTIPROCESSOR.write(kernel, IntegerAttr(2, i64))


@dataclass(frozen=True)
class LoopDoubleBuffer(ModulePass):
    """Give promoted shared copies a second buffer for odd iterations: one barrier per iteration."""

    name = "loop-double-buffer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            double_buffer_kernel(kernel)
