"""loop-stage-epilogue: a warpgroup-product kernel stores its tile through shared memory, 16 bytes a lane.

Why. wgmma leaves each thread two adjacent outputs of a row per 8 columns (the D fragment: lane
(g, t) holds rows g and g + 8, columns 8b + 2t and + 1 of its warp's 16-row band), so the epilogue
of a 128x256 f16 tile is 128 four-byte stores per thread, each warp instruction writing 8 rows x 16
bytes: half-used 32-byte sectors and 8 L2 requests per 128 bytes. With a 16-row band staged in
shared memory first, each warp instruction stores one 512-byte row piece (32 lanes x 16 bytes,
whole sectors). Measured on an H100 (BENCHMARKS.md, "ninth step"): the hand-built kernel's
staged epilogue with TMA stores (`bench/tma_matmul.py --epilogue tma`) took 8-10% off f16/bf16
4096^3 and 20-30% off the transformer's short-K products (K = 1024: 16 K steps a tile, so the
epilogue weighs a lot); this pass on the warp-specialized kernel (half bands, 4 stages) took it
from 228.6 to 200.4 us at f16 4096^3 (0.98x cuBLAS) and 11-31% off the short-K products.

Algorithm, per `loop.kernel` with `mlc.wgmma` and `mlc.warp_tile = [16, W]` (each warp owns 16 rows
x W columns of its block's tile, at an origin that is a multiple of (16, W)), whose one thread loop
holds the epilogue stores after its last `scf.for` (the K loop):
1. The stores: every `vector.store` of a 2-element vector into the kernel's rank-2 output argument
   at the thread loop body's top level or inside an `scf.if` there (the masks of ragged tiles).
2. A staging buffer `memref<G x R x (Wr + C) x T, 3>` allocated before the thread loop (G = the
   block's warps, C = the elements of 16 bytes; the padding of C per row puts the 8 rows of one
   fragment store in different banks), marked `mlc.epilogue_staging`. A warp stages its 16 x W band
   R x Wr at a time (`round_choices`): the whole band (16 x W, one round), its two row halves (8 x W:
   rows 0-7, then 8-15; a lane's fragment rows g and g + 8 fall one in each, so every lane writes
   in every round), or those halves in 2^j column parts (8 x W / 2^j, j >= 1: a quarter band and
   smaller; a fragment's 8 columns fall in one part, so a round's condition is the same across a
   warp, never one half of its lanes idling). The pass takes the largest that leaves the K loop
   the most of its `mlc.pipeline_stages` in `WGMMA_SHARED_MEMORY_BYTES`: at 128x256x64 f16 a whole
   band (66 KiB) leaves room for 3 stages of 48 KiB, half a band (33 KiB) for 4; at 128x256x32
   TF32 (f32 outputs, 48 KiB a stage) a whole band (130 KiB) for 2, half (65 KiB) for 3, a
   quarter (8 x 132 f32 a warp, 33 KiB) for 4, in 230,400 bytes (of the 232,448 a block may take).
3. Each store `vector.store %v, %out[%i, %j]` writes `%staging[%warp, %i mod 16, %j mod W]`
   instead (under the same mask); with parts of the band, `%staging[%warp, %i mod 16 mod R, %j mod
   W mod Wr]` under `%i mod 16 / R == r` and `%j mod W / Wr == c` for round (r, c) (row halves
   first, then column parts), the stores (with their masks) cloned for each later round.
4. After a round's stores, each warp copies its part out: R * Wr / C chunks of C elements over its
   32 lanes (chunk q = 32 * step + lane: row q / (Wr / C), column (q mod (Wr / C)) * C), each a
   `vector.load` of the staging and a `vector.store` to `%out[i0 + R r + row, j0 + Wr c + column]`
   where the row and the chunk are inside the output (i0, j0: the band's origin, the first store's
   indices rounded down to multiples of 16 and W). Unwritten staging (masked fragments) is never
   read: with N a multiple of C a chunk is inside the output or entirely outside.
5. The output argument's `mlc.arg_alignment` becomes 16; `mlc.staged_epilogue = array<i64: R, Wr,
   Wr + C>` records the decision (the rounds: 16 / R x W / Wr); `mlc.pipeline_stages` becomes the
   stages that fit beside the staging (loop-promote-shared runs after this pass and sizes the stages).
Between the fragment writes and the chunk reads (other lanes of the same warp: the staging's
first index is the warp) a `loop.warp_sync` (`__syncwarp`) orders them, and another between a
round's reads and the next round's writes; gpu-insert-barriers
knows a warp sync orders a warp's lanes, so it adds no block barrier, and the pass works inside
warp roles too (the consumers of a warp-specialized kernel, in divergent control).

Beside a lockstep pipeline (cp.async or plain TMA) the pass is correct, but measured with whole
bands (3 stages, which prefetch one K step ahead there) it was 1.5x slower on an H100, so
`mlc-lower-to-gpu` offers `stage-epilogue=true` with `warp-specialize=true` only, and the pass
leaves alone a kernel whose products could not stay in flight across K steps
(`async_pipeline.products_stay_in_flight`: an f32 accumulator that the epilogue computes with),
which warp specialization does not take either (TF32 4096^3 staged beside cp.async: 0.52x
cuBLAS, 0.78x without the staging; BENCHMARKS.md, wg12).

Preconditions (else the kernel is left alone): the K loop's accumulators only stored or rounded to
16 bits after it (the products stay in flight), a 16-bit or 32-bit output whose columns N are a
multiple of C, W a multiple of C and 16 * W / C of 32; the first store's indices defined at the
thread loop body's top level or above; no other store into the output. Limits: batched
(rank-3) outputs keep their fragment stores; TMA stores of the staged tile (what the hand-built
kernel does, overlapping the stores with the next tile) are not emitted yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, MemRefType, ModuleOp, UnitAttr, VectorType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.shared_memory_promotion import WGMMA_SHARED_MEMORY_BYTES, shared_bytes
from mlc.transforms.lowering.async_pipeline import emitter_before, products_stay_in_flight
from mlc.transforms.lowering.chunk_access import Emitter, emit_if

BAND_ROWS = 16
"""Rows of a warp's band of the wgmma D fragment (m64 per warpgroup, 16 per warp)."""
WARP = 32
CHUNK_BYTES = 16
FRAGMENT_COLUMNS = 8
"""Columns of one D-fragment group (8b + 2t and + 1 over a quad's four lanes t)."""


@dataclass
class Epilogue:
    """What the rewrite needs of one kernel."""

    thread_loop: loop.ParallelOp
    output: SSAValue
    stores: list[vector.StoreOp]
    width: int
    """W: the columns of a warp's band."""
    chunk: int
    """C: the elements of 16 bytes."""
    origin: tuple[SSAValue, ...]
    """The first store's indices (available throughout the thread loop): the band's origin rounded down."""


@dataclass(frozen=True)
class Rounds:
    """How a warp stages its 16 x W band: `rows` x `columns` of it a round."""

    rows: int
    columns: int

    def count(self, width: int) -> int:
        """The rounds a band of `width` columns takes."""
        return BAND_ROWS // self.rows * (width // self.columns)


def round_choices(width: int, chunk: int) -> list[Rounds]:
    """The stagings of a 16 x `width` band, largest first: the whole band; its two row halves (rows
    0-7 then 8-15: a lane's fragment rows g and g + 8 fall one in each, so every lane writes in every
    round); those halves' columns halved again and again (1/2^k of the band, k >= 2: a fragment's 8
    columns fall in one part, so a round's condition is the same across a warp). Each round's chunks
    of `chunk` elements must be a whole number of the warp's 32 lanes."""
    choices = [Rounds(BAND_ROWS, width)]
    columns = width
    while columns % FRAGMENT_COLUMNS == 0 and columns % chunk == 0 and (BAND_ROWS // 2 * columns // chunk) % WARP == 0:
        choices.append(Rounds(BAND_ROWS // 2, columns))
        columns //= 2
    return choices


def _top_level(op: Operation, body: Block) -> Operation | None:
    """`op` itself if it sits in `body`, else its ancestor there (None if outside)."""
    while op.parent_block() is not body:
        parent = op.parent_op()
        if parent is None:
            return None
        op = parent
    return op


def _defined_above(value: SSAValue, body: Block) -> bool:
    """Whether `value` is available everywhere in `body` (defined in it at top level, or around it)."""
    owner = value.owner
    defining = owner if isinstance(owner, Block) else owner.parent_block()
    block: Block | None = body
    while block is not None:
        if block is defining:
            return True
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None
    return False


def find_epilogue(kernel: loop.KernelOp) -> Epilogue | None:
    """The epilogue of `kernel` when the preconditions (module docstring) hold, else None."""
    warp_tile = attributes.WARP_TILE.integers(kernel)
    if attributes.WGMMA.read(kernel) is None or warp_tile is None or warp_tile[0] != BAND_ROWS:
        return None
    if attributes.STAGED_EPILOGUE.read(kernel) is not None:
        return None
    thread_loops = [op for op in kernel.walk() if isinstance(op, loop.ParallelOp) and op.mapping_name() == "thread.x"]
    if len(thread_loops) != 1:
        return None
    thread_loop, body = thread_loops[0], thread_loops[0].body.block
    loops = [op for op in body.ops if isinstance(op, scf.ForOp)]
    if not loops:
        return None
    stores = [op for op in thread_loop.walk() if isinstance(op, vector.StoreOp) and op.base in kernel.body.block.args]
    if not stores or len({store.base for store in stores}) != 1:
        return None
    output = stores[0].base
    output_type = output.type
    assert isinstance(output_type, MemRefType)
    shape = output_type.get_shape()
    element_bytes = output_type.element_type.bitwidth // 8  # type: ignore[attr-defined]
    if len(shape) != 2 or any(extent < 0 for extent in shape) or element_bytes not in (2, 4):
        return None
    chunk, width = CHUNK_BYTES // element_bytes, warp_tile[1]
    if shape[1] % chunk or width % chunk or (BAND_ROWS * width // chunk) % WARP:
        return None
    last_loop = loops[-1]
    if not all(products_stay_in_flight(result) for result in last_loop.results):
        return None  # the products would wait in each K step: a lockstep pipeline (module docstring)
    for store in stores:
        value_type = store.vector.type
        top = _top_level(store, body)
        if not isinstance(value_type, VectorType) or value_type.get_shape() != (2,) or top is None:
            return None
        if not last_loop.is_before_in_block(top) or not (top is store or isinstance(top, scf.IfOp)):
            return None
    if not all(_defined_above(index, body) for index in stores[0].indices):
        return None
    return Epilogue(thread_loop, output, stores, width, chunk, tuple(stores[0].indices))


def _stages_beside(kernel: loop.KernelOp, staging_bytes: int, element_bytes: int) -> int | None:
    """The pipeline stages of `kernel`'s K loop that fit beside `staging_bytes` of staging."""
    recorded = attributes.PIPELINE_STAGES.read(kernel)
    micro, grid = attributes.WARP_TILE.integers(kernel), attributes.WARP_GRID.integers(kernel)
    products = [op for op in kernel.walk() if isinstance(op, loop.WgmmaOp)]
    if not isinstance(recorded, IntegerAttr) or micro is None or grid is None or not products:
        return None
    block_rows, block_columns, depth = micro[0] * grid[0], micro[1] * grid[1], products[0].k.value.data
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp) and op.is_ancestor(products[0])]
    step = loops[0].step.owner if loops else None  # the K loop: the outermost around the products
    if isinstance(step, arith.ConstantOp) and isinstance(step.value, IntegerAttr):
        depth = step.value.value.data
    stage_bytes = (block_rows + block_columns) * depth * element_bytes
    return min(recorded.value.data, (WGMMA_SHARED_MEMORY_BYTES - shared_bytes(kernel) - staging_bytes) // stage_bytes)


def stage_epilogue(kernel: loop.KernelOp) -> bool:
    """Rewrites `kernel`'s epilogue through shared memory where the preconditions hold; True if it did."""
    epilogue = find_epilogue(kernel)
    if epilogue is None:
        return False
    output_type = epilogue.output.type
    assert isinstance(output_type, MemRefType)
    element = output_type.element_type
    warps = epilogue.thread_loop.trip_count // WARP
    operand_bytes = max(arg.type.element_type.bitwidth // 8 for arg in kernel.body.block.args if isinstance(arg.type, MemRefType) and arg is not epilogue.output)  # type: ignore[attr-defined]
    element_bytes = element.bitwidth // 8  # type: ignore[attr-defined]
    options = [(_stages_beside(kernel, warps * choice.rows * (choice.columns + epilogue.chunk) * element_bytes, operand_bytes) or 0, choice) for choice in round_choices(epilogue.width, epilogue.chunk)]
    stages, rounds = max(options, key=lambda option: option[0])  # the first of the most stages: the largest rounds
    if stages < 2:
        return False
    padded = rounds.columns + epilogue.chunk
    space = IntegerAttr(loop.SHARED_MEMORY_SPACE, i64)
    allocation = memref.AllocaOp.get(element, CHUNK_BYTES, [warps, rounds.rows, padded], memory_space=space)
    allocation.memref.name_hint = "staging"
    attributes.EPILOGUE_STAGING.write(allocation, UnitAttr())
    block_body = epilogue.thread_loop.parent_block()
    assert block_body is not None
    block_body.insert_op_before(allocation, epilogue.thread_loop)
    body = epilogue.thread_loop.body.block
    first = body.first_op
    assert first is not None
    top = emitter_before(first)
    thread = epilogue.thread_loop.induction_variable
    warp = top.emit(arith.DivUIOp(thread, top.index(WARP)))
    lane = top.emit(arith.RemUIOp(thread, top.index(WARP)))
    warp.name_hint, lane.name_hint = "band_warp", "band_lane"
    band = Band(allocation.memref, warp, lane, rounds, epilogue.width, top.index(BAND_ROWS), top.index(epilogue.width), top.index(rounds.rows), top.index(rounds.columns))
    tops = list(dict.fromkeys(op for op in (_top_level(store, body) for store in epilogue.stores) if op is not None))
    after = tops[-1].next_op
    assert after is not None  # the thread loop body ends with its terminator
    later_rounds = [[op.clone() for op in tops] for _ in range(1, rounds.count(epilogue.width))]
    for store in epilogue.stores:
        _stage_store(store, band, 0)
    emitter = emitter_before(after)
    _copy_out(emitter, epilogue, band, 0)
    for round_index, copies in enumerate(later_rounds, start=1):
        emitter.builder.insert(loop.WarpSyncOp())  # the lanes' reads of the last round before the writes
        for op in copies:
            emitter.builder.insert(op)
            for store in [inner for inner in op.walk() if isinstance(inner, vector.StoreOp) and inner.base is epilogue.output]:
                _stage_store(store, band, round_index)
        _copy_out(emitter, epilogue, band, round_index)
    _raise_alignment(kernel, epilogue.output)
    attributes.STAGED_EPILOGUE.write(kernel, DenseArrayBase.from_list(i64, [rounds.rows, rounds.columns, padded]))
    attributes.PIPELINE_STAGES.write(kernel, IntegerAttr(stages, i64))
    return True


@dataclass
class Band:
    """The staging of the warps' bands, `rounds.rows` x `rounds.columns` of their 16 x W a round, and
    the values that index it."""

    staging: SSAValue
    warp: SSAValue
    lane: SSAValue
    rounds: Rounds
    width: int
    """W: a warp's band columns."""
    band_rows: SSAValue
    band_width: SSAValue
    round_rows: SSAValue
    round_columns: SSAValue

    def place(self, round_index: int) -> tuple[int, int]:
        """Round `round_index`'s (row half, column part) of the band: rows first, then columns."""
        return divmod(round_index, self.width // self.rounds.columns)


def _stage_store(store: vector.StoreOp, band: Band, round_index: int) -> None:
    """`store` into the output writes the staging instead: row i mod 16, column j mod W, each taken
    modulo the round's rows and columns when a round stages part of the band (then under the
    condition that the element falls in round `round_index`'s part)."""
    at = emitter_before(store)
    row = at.emit(arith.RemUIOp(store.indices[0], band.band_rows))
    column = at.emit(arith.RemUIOp(store.indices[1], band.band_width))
    row_part, column_part = band.place(round_index)
    conditions = []
    if band.rounds.rows < BAND_ROWS:
        conditions.append(at.emit(arith.CmpiOp(at.emit(arith.DivUIOp(row, band.round_rows)), at.index(row_part), "eq")))
        row = at.emit(arith.RemUIOp(row, band.round_rows))
    if band.rounds.columns < band.width:
        conditions.append(at.emit(arith.CmpiOp(at.emit(arith.DivUIOp(column, band.round_columns)), at.index(column_part), "eq")))
        column = at.emit(arith.RemUIOp(column, band.round_columns))
    if not conditions:
        Rewriter.replace_op(store, vector.StoreOp(store.vector, band.staging, [band.warp, row, column]), [])
        return

    def write(inner: Emitter) -> list[SSAValue]:
        inner.builder.insert(vector.StoreOp(store.vector, band.staging, [band.warp, row, column]))
        return []

    emit_if(at, at.all_of(conditions), [], write, None)
    store.detach()
    store.erase()


def _copy_out(emitter: Emitter, epilogue: Epilogue, band: Band, round_index: int) -> None:
    """Each warp stores the part of its band that round `round_index` staged, C elements a lane
    (step 4 of the module docstring), after a `loop.warp_sync` that orders its lanes' fragment
    writes before their chunk reads."""
    emitter.builder.insert(loop.WarpSyncOp())
    first_row, first_column = epilogue.origin
    row_origin = emitter.emit(arith.SubiOp(first_row, emitter.emit(arith.RemUIOp(first_row, emitter.index(BAND_ROWS)))))
    column_origin = emitter.emit(arith.SubiOp(first_column, emitter.emit(arith.RemUIOp(first_column, emitter.index(epilogue.width)))))
    row_origin.name_hint, column_origin.name_hint = "band_row", "band_column"
    output_type = epilogue.output.type
    assert isinstance(output_type, MemRefType)
    extents = output_type.get_shape()
    chunks_per_row = band.rounds.columns // epilogue.chunk
    chunk_type = VectorType(output_type.element_type, [epilogue.chunk])
    row_part, column_part = band.place(round_index)
    for step in range(band.rounds.rows * chunks_per_row // WARP):
        chunk = emitter.add(band.lane, emitter.index(step * WARP))
        row = emitter.emit(arith.DivUIOp(chunk, emitter.index(chunks_per_row)))
        column = emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(chunk, emitter.index(chunks_per_row))), emitter.index(epilogue.chunk)))
        target_row = emitter.add(row_origin, emitter.add(row, emitter.index(row_part * band.rounds.rows)))
        target_column = emitter.add(column_origin, emitter.add(column, emitter.index(column_part * band.rounds.columns)))
        inside = emitter.all_of([emitter.below(target_row, extents[0]), emitter.below(target_column, extents[1])])

        def store_chunk(inner: Emitter, row: SSAValue = row, column: SSAValue = column, target_row: SSAValue = target_row, target_column: SSAValue = target_column) -> list[SSAValue]:
            values = inner.emit(vector.LoadOp(band.staging, [band.warp, row, column], chunk_type))
            store = vector.StoreOp(values, epilogue.output, [target_row, target_column])
            store.attributes["alignment"] = IntegerAttr(CHUNK_BYTES, i64)
            inner.builder.insert(store)
            return []

        emit_if(emitter, inside, [], store_chunk, None)


def _raise_alignment(kernel: loop.KernelOp, output: SSAValue) -> None:
    """The output's pointer must be 16-byte aligned for the chunk stores."""
    alignments = attributes.ARG_ALIGNMENT.integers(kernel)
    arguments = list(kernel.body.block.args)
    if alignments is None or len(alignments) != len(arguments):
        return
    raised = [max(value, CHUNK_BYTES) if argument is output else value for value, argument in zip(alignments, arguments)]
    attributes.ARG_ALIGNMENT.write(kernel, DenseArrayBase.from_list(i64, raised))


@dataclass(frozen=True)
class LoopStageEpilogue(ModulePass):
    """Store each warpgroup-product tile through shared memory, 16 bytes a lane (coalesced rows)."""

    name = "loop-stage-epilogue"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            stage_epilogue(kernel)

