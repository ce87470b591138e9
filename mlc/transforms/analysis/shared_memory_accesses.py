"""What each op of an `mlc_gpu.func` reads and writes of shared memory, and which accesses may collide.

An *allocation* is one shared buffer of the block: a `memref.alloc`/`alloca` in memory space 3
(keyed by its result) or a space-3 `memref.global` (keyed by its symbol, whichever `get_global`
names it). Views (`subview`, `cast`, `memory_space_cast`, `reinterpret_cast`, `collapse_shape`,
`expand_shape`, `view`, `assume_alignment`) access their source's allocation. A memref whose origin
the analysis cannot follow (a block argument, an unknown op's result) is `ANY_SHARED` when its type
is in space 3, and not shared memory otherwise (mlc kernels name shared memory by its type; a
generic-space memref of unknown origin is assumed global or private).

`accesses_of(op)` lists an op's accesses:

* `memref.load`/`store`/`atomic_rmw` and 1-d `vector.load`/`store`/`maskedload`/`maskedstore`
  (a mask may only narrow them) at their indices: `elements` holds the per-thread form of each index
  (`ThreadAnalysis.form`), `width` the vector's length along the last dimension;
* `loop.async_copy`: a write of its destination like a vector store's, marked `is_async` (its
  data lands at a later `loop.async_wait`; commits and waits access nothing themselves);
* `loop.ldmatrix` (warp-collective: each lane gets elements that other lanes addressed): a read of
  some elements of its buffer (`elements` None);
* `loop.wgmma` (warpgroup-collective): a read of some elements of each operand buffer, marked
  `is_async` (the product reads them until a `loop.wgmma_wait`);
* `loop.tma_load`: a write of some elements of its destination, marked `is_async` (its data lands
  for the threads that wait on its mbarrier); `loop.mbarrier_init` a write of the barrier's buffer,
  `loop.mbarrier_arrive` / `loop.mbarrier_wait` reads of it;
* `vector.transfer_read`/`transfer_write`, `memref.copy`, n-d vectors and accesses through views:
  some elements of the allocation (`elements` None);
* calls: a read and a write of every shared allocation (`ANY_SHARED`); any other op with a shared
  memref operand (or an `!llvm.ptr` in address space 0 or 3): a read and a write of what it can reach.
  Views, `dim`, `rank`, `extract_strided_metadata` and `dealloc` access nothing.

`may_collide(a, b, changed_loops)` says whether two threads of a block may touch one element, one
through `a` and the other through `b`. Distinct allocations never alias. Within one allocation,
accessed directly (not through a view) at known indices, the accesses are compared thread by thread:
their indices must carry the same symbols (uniform unknowns, which then cancel out) and each
thread's element set is enumerated over the threads that may run the access
(`ThreadAnalysis.active_threads`); they collide only if an element is touched by two different
threads. A symbol defined inside a loop in `changed_loops` (one whose back edge lies between the two
accesses) may have changed in between, so indices with such symbols may collide. Indices are assumed
within the memref's bounds, as memref semantics require (a row-major index past a dimension's end
could otherwise reach another row). Everything else may collide. So a thread reading back its own
element, `s[t]` after `s[t]`, is proven free of hazards, and so are disjoint ranges such as
`s[t]` and `s[t + 64]` with 64 threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func, llvm, memref, scf, vector
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Operation, SSAValue

from mlc.dialects.gpu import ops as gpu
from mlc.dialects.loop.ops import (
    AsyncCommitOp, AsyncCopyOp, AsyncWaitOp, LdMatrixOp, MbarrierArriveOp, MbarrierInitOp, MbarrierWaitOp, TmaLoadOp, WarpSyncOp, WgmmaOp,
)
from mlc.transforms.analysis.thread_analysis import (
    VIEW_OPS,
    ThreadAnalysis,
    ThreadForm,
    is_shared_memory_space,
    memref_root,
)

WARP = 32
"""Threads of a warp: the lanes a `loop.warp_sync` orders."""
ANY_SHARED = "any shared allocation"
"""The allocation of an access that may touch any shared buffer of the block."""

Allocation = SSAValue | str

_NO_ACCESS = (
    *VIEW_OPS, memref.DimOp, memref.RankOp, memref.ExtractStridedMetaDataOp, memref.DeallocOp,
    scf.ForOp, scf.IfOp, scf.WhileOp, scf.YieldOp, scf.ConditionOp, gpu.ReturnOp, gpu.BarrierOp,
    AsyncCommitOp, AsyncWaitOp, WarpSyncOp,
)  # fmt: skip
"""Ops that access no memory themselves (structured control flow passes memrefs along)."""
_CALLS = (func.CallOp, llvm.CallOp)
_GENERIC_OR_SHARED_POINTER_SPACES = (0, 3)


@dataclass(eq=False)
class Access:
    """One read or write of shared memory by `op`, in every thread that runs it."""

    op: Operation
    is_write: bool
    allocation: Allocation
    elements: tuple[ThreadForm, ...] | None
    """Per-thread index forms (the allocation's own coordinates), None where unknown."""
    width: int
    threads: np.ndarray
    """The threads that may run the access."""
    is_async: bool = False
    """A `loop.async_copy`'s write: issued here, landed only at a later `loop.async_wait`."""


def allocation_of(value: SSAValue) -> Allocation | None:
    """The shared allocation a memref views, ANY_SHARED if it may be any, None if not shared memory."""
    root = memref_root(value)
    if isinstance(root.owner, memref.AllocOp | memref.AllocaOp):
        return root if is_shared_memory_space(root) else None
    if isinstance(root.owner, memref.GetGlobalOp):
        return root.owner.name_.root_reference.data if is_shared_memory_space(root) else None
    return ANY_SHARED if is_shared_memory_space(root) or is_shared_memory_space(value) else None


def _vector_width(vector_type: object) -> int | None:
    if isinstance(vector_type, VectorType) and len(vector_type.get_shape()) == 1:
        return vector_type.get_shape()[0]
    return None


def _indexed_operands(op: Operation) -> tuple[SSAValue, tuple[SSAValue, ...], bool, int | None] | None:
    """(memref, indices, is_write, vector width or None when unknown) of a load or store at indices."""
    if isinstance(op, memref.LoadOp | memref.StoreOp):
        return op.memref, tuple(op.indices), isinstance(op, memref.StoreOp), 1
    if isinstance(op, vector.LoadOp | vector.MaskedLoadOp):
        return op.base, tuple(op.indices), False, _vector_width(op.result.type)
    if isinstance(op, vector.StoreOp):
        return op.base, tuple(op.indices), True, _vector_width(op.vector.type)
    if isinstance(op, vector.MaskedStoreOp):
        return op.base, tuple(op.indices), True, _vector_width(op.value_to_store.type)
    return None


def _reaches_shared_memory(value: SSAValue) -> bool:
    if isinstance(value.type, llvm.LLVMPointerType):
        return value.type.addr_space.data in _GENERIC_OR_SHARED_POINTER_SPACES
    return isinstance(value.type, MemRefType) and allocation_of(value) is not None


class SharedMemoryAccesses:
    """The shared-memory accesses of the ops of one kernel, and whether two of them may collide."""

    def __init__(self, threads: ThreadAnalysis):
        self.threads = threads
        self._accesses: dict[Operation, tuple[Access, ...]] = {}
        self._collisions: dict[tuple[Access, Access, frozenset[Operation], bool], bool] = {}
        self._elements: dict[Access, tuple[np.ndarray, np.ndarray]] = {}
        self._order = {op: position for position, op in enumerate(threads.function.walk())}

    def program_order(self, access: Access) -> int:
        """Where the access's op comes in the kernel's text (for stable messages and choices)."""
        return self._order.get(access.op, -1)

    def accesses_of(self, op: Operation) -> tuple[Access, ...]:
        if op not in self._accesses:
            self._accesses[op] = tuple(self._find_accesses(op))
        return self._accesses[op]

    def _access(self, op: Operation, is_write: bool, allocation: Allocation, elements=None, width=1) -> Access:
        return Access(op, is_write, allocation, elements, width, self.threads.active_threads(op))

    def _find_accesses(self, op: Operation) -> list[Access]:
        if isinstance(op, _NO_ACCESS):
            return []
        indexed = _indexed_operands(op)
        if indexed is not None:
            memref_value, indices, is_write, width = indexed
            return self._indexed_access(op, memref_value, indices, is_write, width)
        if isinstance(op, memref.AtomicRMWOp):
            read = self._indexed_access(op, op.memref, tuple(op.indices), False, 1)
            return read + self._indexed_access(op, op.memref, tuple(op.indices), True, 1)
        if isinstance(op, vector.TransferReadOp | vector.TransferWriteOp):
            allocation = allocation_of(op.source)
            return [] if allocation is None else [self._access(op, isinstance(op, vector.TransferWriteOp), allocation)]
        if isinstance(op, AsyncCopyOp):
            writes = self._indexed_access(op, op.destination, tuple(op.destination_indices), True, op.count)
            for access in writes:
                access.is_async = True
            return writes
        if isinstance(op, TmaLoadOp | MbarrierInitOp | MbarrierArriveOp | MbarrierWaitOp):
            return self._bulk_copy_accesses(op)
        if isinstance(op, WgmmaOp):
            # Warpgroup-collective and asynchronous: reads of both operand buffers that stay in
            # flight until a loop.wgmma_wait completes them.
            buffers = (op.rhs,) if op.lhs is None else (op.lhs, op.rhs)
            reads = [self._access(op, False, a) for a in dict.fromkeys(allocation_of(buffer) for buffer in buffers) if a is not None]
            for access in reads:
                access.is_async = True
            return reads
        if isinstance(op, LdMatrixOp):
            # Warp-collective: a lane receives elements other lanes addressed, so the read is not
            # one thread's; it reads some elements of its buffer and writes none.
            allocation = allocation_of(op.buffer)
            return [] if allocation is None else [self._access(op, False, allocation)]
        if isinstance(op, memref.CopyOp):
            source, destination = allocation_of(op.source), allocation_of(op.destination)
            return ([] if source is None else [self._access(op, False, source)]) + (
                [] if destination is None else [self._access(op, True, destination)]
            )
        if isinstance(op, _CALLS):
            return [self._access(op, False, ANY_SHARED), self._access(op, True, ANY_SHARED)]
        return self._unknown_user(op)

    def _bulk_copy_accesses(self, op: Operation) -> list[Access]:
        """A bulk copy writes some elements of its destination, in flight until an mbarrier wait;
        an mbarrier's initialization writes its buffer, arrivals and waits read it (they update
        the barrier atomically: no hazard among themselves, but after the initialization)."""
        if isinstance(op, TmaLoadOp):
            allocation = allocation_of(op.destination)
            writes = [] if allocation is None else [self._access(op, True, allocation)]
            for access in writes:
                access.is_async = True
            return writes
        allocation = allocation_of(op.barrier)  # type: ignore[attr-defined]
        return [] if allocation is None else [self._access(op, isinstance(op, MbarrierInitOp), allocation)]

    def _indexed_access(
        self, op: Operation, memref_value: SSAValue, indices: tuple[SSAValue, ...], is_write: bool, width: int | None
    ) -> list[Access]:
        allocation = allocation_of(memref_value)
        if allocation is None:
            return []
        direct = allocation is not ANY_SHARED and memref_root(memref_value) is memref_value
        forms = tuple(self.threads.form(index) for index in indices)
        if not direct or width is None or any(form is None for form in forms):
            return [self._access(op, is_write, allocation)]
        return [self._access(op, is_write, allocation, forms, width)]  # type: ignore[arg-type]

    def _unknown_user(self, op: Operation) -> list[Access]:
        """An op the analysis does not understand reads and writes all the shared memory it can reach."""
        reached: list[Allocation] = []
        for operand in op.operands:
            if isinstance(operand.type, llvm.LLVMPointerType) and _reaches_shared_memory(operand):
                reached.append(ANY_SHARED)
            elif isinstance(operand.type, MemRefType):
                allocation = allocation_of(operand)
                if allocation is not None and allocation not in reached:
                    reached.append(allocation)
        return [self._access(op, is_write, allocation) for allocation in reached for is_write in (False, True)]

    def may_collide(self, a: Access, b: Access, changed_loops: frozenset[Operation], across_warps: bool = False) -> bool:
        """Whether two different threads may touch one element, through `a` and through `b`; with
        `across_warps`, two threads of different warps (a `loop.warp_sync` between the accesses
        orders the lanes of each warp)."""
        if a.allocation is not ANY_SHARED and b.allocation is not ANY_SHARED and a.allocation != b.allocation:
            return False
        if np.count_nonzero(a.threads | b.threads) < 2:
            return False  # one thread at most runs both: its accesses are in program order
        if a.allocation is ANY_SHARED or b.allocation is ANY_SHARED:
            return True
        key = (a, b, changed_loops, across_warps)
        if key not in self._collisions:
            self._collisions[key] = self._compare(a, b, changed_loops, across_warps)
        return self._collisions[key]

    def _compare(self, a: Access, b: Access, changed_loops: frozenset[Operation], across_warps: bool) -> bool:
        if a.elements is None or b.elements is None:
            return True
        for form_a, form_b in zip(a.elements, b.elements):
            if form_a.symbols != form_b.symbols:
                return True
            if any(_defined_inside(symbol, loop) for symbol, _ in form_a.symbols for loop in changed_loops):
                return True
        elements_a, elements_b = self._elements_of(a), self._elements_of(b)
        if across_warps:  # a warp's lanes count as one thread
            elements_a, elements_b = (elements_a[0], elements_a[1] // WARP), (elements_b[0], elements_b[1] // WARP)
        return _two_threads_share_an_element(elements_a, elements_b)

    def _elements_of(self, access: Access) -> tuple[np.ndarray, np.ndarray]:
        if access not in self._elements:
            self._elements[access] = _elements(access)
        return self._elements[access]


def _defined_inside(value: SSAValue, loop: Operation) -> bool:
    owner = value.owner
    if isinstance(owner, Operation):
        return owner is not loop and loop.is_ancestor(owner)
    return loop.is_ancestor(owner)


def _elements(access: Access) -> tuple[np.ndarray, np.ndarray]:
    """(element coordinates, one row each, and the thread touching it) over the access's threads."""
    threads = np.nonzero(access.threads)[0]
    assert access.elements is not None
    # A leading zero column keeps rank-0 memrefs (no index) comparable.
    columns = [np.zeros(threads.size, dtype=np.int64)] + [form.per_thread[threads] for form in access.elements]
    base = np.stack(columns, axis=1)
    rows = []
    for offset in range(access.width):
        shifted = base.copy()
        shifted[:, -1] += offset
        rows.append(shifted)
    return np.concatenate(rows), np.tile(threads, access.width)


def _element_ids(elements: np.ndarray) -> np.ndarray:
    """Dense ids (0, 1, ...) of the rows of `elements`, equal rows equal ids: the rows' row-major
    positions in their bounding box, renumbered when the box is much larger than the rows.

    Sorting rows as wholes (`np.unique(axis=0)`) was most of the pass's time; one int64 per row
    sorts (or indexes) an order of magnitude faster. A box past int64 keeps the row sort."""
    low = elements.min(axis=0)
    spans = (elements.max(axis=0) - low + 1).tolist()
    size = 1
    for span in spans:
        size *= span
    if size >= 2**62:
        return np.unique(elements, axis=0, return_inverse=True)[1].reshape(-1)
    strides = np.cumprod([1, *spans[:0:-1]], dtype=np.int64)[::-1]
    ids = (elements - low) @ strides
    if size > 4 * ids.size:
        ids = np.unique(ids, return_inverse=True)[1].reshape(-1)
    return ids


def _two_threads_share_an_element(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    (elements_a, threads_a), (elements_b, threads_b) = a, b
    if threads_a.size == 0 or threads_b.size == 0:
        return False
    element_ids = _element_ids(np.concatenate([elements_a, elements_b]))
    count = int(element_ids.max()) + 1
    ids_a, ids_b = element_ids[: threads_a.size], element_ids[threads_a.size :]
    in_both = np.zeros(count, dtype=bool)
    in_both[ids_a] = True
    in_b = np.zeros(count, dtype=bool)
    in_b[ids_b] = True
    in_both &= in_b
    threads = np.concatenate([threads_a, threads_b])
    lowest = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    highest = np.full(count, -1, dtype=np.int64)
    np.minimum.at(lowest, element_ids, threads)
    np.maximum.at(highest, element_ids, threads)
    # An element both access touch, by more than one thread between them.
    return bool(np.any(in_both & (lowest != highest)))
