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

This module decides (`plan_promotion`, `describe_promotion`) and holds the budgets; what the
threads read (scopes, read sites, boxes, `Promotion`) is `shared_memory_reads.py`, the shared
copy's layout (vector groups, copy width, padding by wavefronts) `shared_memory_layout.py`. The
names the passes and lowerings use are importable from here (`__all__`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.shared_memory_layout import COPY_BYTES, choose_padding, copy_width, vector_groups, wavefronts
from mlc.transforms.analysis.shared_memory_reads import (
    SWIZZLE_BYTES,
    Promotion,
    ReadSite,
    ScopeAnalysis,
    bounding_box,
    candidate_scopes,
    constant_bounds,
    element_type_of,
    feeds_tensor_cores,
    is_inside,
    is_read_only,
    needs_shared_memory,
    needs_swizzle,
    read_sites,
    scope_body,
)

MIN_REUSE = 4.0
"""Promote when each element of the box is read at least this many times per run of the scope;
below that the L1 cache serves the repeats about as well as a copy and the barriers it needs."""
SHARED_MEMORY_BYTES = 48 * 1024
"""Static shared memory a block may use on every NVIDIA GPU since Kepler."""
STAGED_SHARED_MEMORY_BYTES = 96 * 1024
"""What a kernel with pipelined (multi-stage) copies may use: dynamic shared memory beyond 48 KiB
(convert-gpu-to-nvvm), within what sm_80 (163 KiB), sm_86/89 (99 KiB) and sm_90 (227 KiB) allow a
block, and leaving an H100 room for two such blocks per multiprocessor."""
WGMMA_SHARED_MEMORY_BYTES = 226 * 1024
"""What a kernel of `loop.wgmma` products (sm_90a only, 227 KiB a block) may use for its stages
and a staged epilogue (loop-stage-epilogue), leaving 1 KiB for mbarriers and alignment: an H100's
128x256x64 f16 block takes 48 KiB a stage (4 stages, also beside a 33 KiB half-band staging)."""


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
        promotion = Promotion(source, scope, sites, box, reads, copy_width(box, element_bytes))
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


__all__ = [
    "COPY_BYTES", "MIN_REUSE", "SHARED_MEMORY_BYTES", "STAGED_SHARED_MEMORY_BYTES", "SWIZZLE_BYTES",
    "WGMMA_SHARED_MEMORY_BYTES", "Promotion", "ReadSite", "ScopeAnalysis", "allocation_bytes",
    "choose_padding", "constant_bounds", "describe_promotion", "element_type_of", "is_inside",
    "is_read_only", "needs_swizzle", "plan_promotion", "scope_body", "shared_bytes", "thread_loops",
    "wavefronts",
]
