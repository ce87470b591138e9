"""loop-group-tiles: run a kernel's 2-D grid of blocks in grouped order, for the L2 cache.

Why. A GPU starts a grid's blocks in launch order, block.x fastest. mlc's matmul kernels map
block.x over the row blocks of C (M) and block.y over its column blocks (N), so the blocks resident
at once (a wave: 132 on an H100 at one block per multiprocessor) span every row block and a few
column blocks: at 8192^3 with 128x256 blocks each wave reads all of A (128 MiB, more than the
50 MiB L2) again, about 15 times over the kernel. In grouped order (Triton's `GROUP_M`, also what
`bench/tma_matmul.py`'s hand-built kernel uses) the launch index walks G row blocks at a time down
every column block, so a wave reads G row panels of A and about wave / G column panels of B.

Algorithm, per `loop.kernel` whose body holds `loop.parallel %x < X mapping block.x` whose body
holds `loop.parallel %y < Y mapping block.y` (X, Y >= 2; G < X):

    launch = x + X * y;  per_group = G * Y;  first = (launch / per_group) * G
    size = min(X - first, G);  within = launch mod per_group
    row = first + within mod size;  column = within / size

and every use of %x and %y inside that body reads `row` and `column` instead (computed at the
start of each thread loop of the block body: convert-loop-to-gpu keeps divisions, which may
trap, inside thread loops; every thread computes the same uniform values). This is a bijection
of the X * Y iterations (the last group may be shorter than G), and the iterations of a parallel
loop are independent, so every result is unchanged: only the order in which blocks run changes.
The kernel records `mlc.tile_group = G` (a kernel that has it is left alone; one without it
runs in launch order).

When. With `l2-bytes=0` (the default) every 2-D grid that meets the preconditions is grouped.
With `l2-bytes=N` the pass decides per kernel, from the IR: only a kernel that runs tensor-core
products (`loop.wgmma` / `loop.mma_sync`) and reads a memref argument of more than N bytes (one
it never stores to) is grouped. Why that rule: a wave in launch order spans every row block, so
it rereads the whole row operand; where that operand fits in L2 (f16 4096^3: 32 MiB of a 50 MiB
L2) the rereads hit L2 and grouping brought nothing (BENCHMARKS.md, tenth step: 201.9 vs 205.7
us); where it does not (8192^3: 128 MiB) each wave reads it from DRAM again. Outputs are written
once and do not count; kernels without tensor-core products are not matmuls and not measured.

Preconditions: %x and %y are used only inside the thread loops of the inner loop's body (else
the kernel is left alone). Limits: two-dimensional grids only; G is the `group` option (8, as
Triton's tutorial and the hand-built kernel). `mlc-lower-to-gpu{group-tiles=G}` adds the pass
before convert-loop-to-gpu for every 2-D grid (the override); `mlc-lower-to-gpu{l2-group-tiles=G}`
adds it with `l2-bytes` = `L2_BYTES` (the per-kernel decision).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.buffer_limits import buffer_bytes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.block_grid import block_loops
from mlc.transforms.lowering.async_pipeline import emitter_before
from mlc.transforms.lowering.chunk_access import Emitter


L2_BYTES = 50 * 2**20
"""An H100's (and H200's) L2 cache: the `l2-bytes` that `mlc-lower-to-gpu{l2-group-tiles=G}` passes."""

STORES = frozenset({"memref.store", "vector.store"})
"""The ops whose second operand is the memref they write (a kernel argument they write is an output)."""


def _memref_bytes(value: SSAValue) -> int:
    """The bytes of a statically shaped memref value (0 for anything else)."""
    kind = value.type
    if not isinstance(kind, MemRefType) or not kind.has_static_shape():
        return 0
    return buffer_bytes(kind.get_shape(), kind.get_element_type())


def largest_read_operand(kernel: loop.KernelOp) -> int:
    """The bytes of the kernel's largest memref argument that it reads and never stores to."""
    read = [
        argument
        for argument in kernel.body.block.args
        if not any(use.operation.name in STORES and use.index == 1 for use in argument.uses)
    ]
    return max((_memref_bytes(argument) for argument in read), default=0)


def pays_beyond_l2(kernel: loop.KernelOp, l2_bytes: int) -> bool:
    """The per-kernel decision (module docstring, When): tensor-core products reading more than L2."""
    products = any(isinstance(op, loop.WgmmaOp | loop.MmaSyncOp) for op in kernel.walk())
    return products and largest_read_operand(kernel) > l2_bytes


def group_tiles(kernel: loop.KernelOp, group: int) -> bool:
    """Rewrites the kernel's 2-D grid into grouped order where the preconditions hold; True if it did."""
    found = block_loops(kernel)
    if found is None or attributes.TILE_GROUP.read(kernel) is not None:
        return False
    rows, columns = found
    row_count, column_count = rows.trip_count, columns.trip_count
    if row_count < 2 or column_count < 2 or group >= row_count:
        return False
    x, y = rows.induction_variable, columns.induction_variable
    thread_loops = [op for op in columns.body.block.ops if isinstance(op, loop.ParallelOp)]
    if not all(any(inner.body.is_ancestor(use.operation) for inner in thread_loops) for value in (x, y) for use in value.uses):
        return False
    for thread_loop in thread_loops:
        _regroup(thread_loop, x, y, row_count, column_count, group)
    attributes.TILE_GROUP.write(kernel, IntegerAttr(group, i64))
    return True


def _regroup(thread_loop: loop.ParallelOp, x: SSAValue, y: SSAValue, row_count: int, column_count: int, group: int) -> None:
    """At the start of `thread_loop`'s body, (row, column) in grouped order; its uses of x and y read them."""
    body = thread_loop.body.block
    existing = set(body.ops)
    first_op = body.first_op
    assert first_op is not None
    row, column = _grouped(emitter_before(first_op), x, y, row_count, column_count, group)
    created = set(body.ops) - existing
    for value, replacement in ((x, row), (y, column)):
        for use in list(value.uses):
            if use.operation not in created and thread_loop.body.is_ancestor(use.operation):
                use.operation.operands[use.index] = replacement


def _grouped(emitter: Emitter, x: SSAValue, y: SSAValue, row_count: int, column_count: int, group: int) -> tuple[SSAValue, SSAValue]:
    """(row, column) of the launch index x + X * y in grouped order (the module docstring)."""
    launch = emitter.add(x, emitter.emit(arith.MuliOp(y, emitter.index(row_count))))
    per_group = emitter.index(group * column_count)
    first = emitter.emit(arith.MuliOp(emitter.emit(arith.DivUIOp(launch, per_group)), emitter.index(group)))
    size = emitter.emit(arith.MinUIOp(emitter.emit(arith.SubiOp(emitter.index(row_count), first)), emitter.index(group)))
    within = emitter.emit(arith.RemUIOp(launch, per_group))
    row = emitter.add(first, emitter.emit(arith.RemUIOp(within, size)))
    column = emitter.emit(arith.DivUIOp(within, size))
    row.name_hint, column.name_hint = "tile_row", "tile_column"
    return row, column


@dataclass(frozen=True)
class LoopGroupTiles(ModulePass):
    """Launch each 2-D grid of blocks in grouped order (G row blocks at a time), for the L2 cache."""

    name = "loop-group-tiles"

    group: int = 8
    """How many row blocks (block.x) a group walks down every column block (block.y)."""
    l2_bytes: int = 0
    """0: every 2-D grid; N > 0: only tensor-core kernels that read a memref of more than N bytes."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.group < 1:
            raise PassFailure(op, f"loop-group-tiles needs group >= 1, got {self.group}")
        if self.l2_bytes < 0:
            raise PassFailure(op, f"loop-group-tiles needs l2-bytes >= 0 (0: every grid), got {self.l2_bytes}")
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            if self.l2_bytes == 0 or pays_beyond_l2(kernel, self.l2_bytes):
                group_tiles(kernel, self.group)
