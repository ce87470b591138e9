"""Row-wise tile kernels (reductions, normalisations) lowered to loops of host-width CPU vectors.

`convert-tile-rows-to-cpu` hands every *row kernel* (`row_kernel_refusal` is None) to
`lower_cpu_row_kernel`. A row kernel computes on tiles of one shape [R, C] (or [C]: one row) and
tiles that broadcast to it ([R, 1] per-row scalars, [1, C] rows shared by all rows, splats) with
`tile.load`, `tile.map`, `tile.broadcast`, `tile.splat`, `tile.in_bounds`, `tile.reduce` along the
last axis and `tile.store`: softmax, layer norm, RMS norm, row sums and maxima with their
epilogues, ragged rows (masked with `tile.in_bounds`) included; and elementwise kernels (no
reduction: the shape of their stores) whose maps are of `vector_maps.VECTOR_OPS` (tanh, erf, sigmoid and
GELU included).

Layout. A program's R rows run one after another in an unmapped `loop.parallel` (a plain loop on
the CPU); within a row, every tile value of C columns is computed W columns at a time
(`vector<W x f32>`, W the host's vector width: 16 with AVX-512, 8 with AVX2, 4 otherwise), in
*column loops* (`scf.for` over [0, C)), one per `tile.reduce` and one per `tile.store` of a wide
value, in the tile program's order. A column loop evaluates the expression it needs on one chunk
of W columns: loads through `chunk_access.py` (masked where the index analysis cannot prove them
in bounds, one vector access, aligned or not: x86 reads unaligned vectors at little cost), map
bodies with their f32 ops on vectors (scalars
from outside the chunk, constants and per-row values, broadcast to W lanes where an op mixes
them). Per-row values ([R, 1]: reduction results and maps of them, such as a softmax's 1 / sum or
a layer norm's rsqrt) are scalars computed between the column loops.

Masks. The kernel's `tile.in_bounds` masks (all of one column range: the first K columns of the
row, from a constant column) cut each column loop into ranges (`column_ranges`): whole chunks
inside the mask, scalars up to its edge, scalars to the next chunk boundary outside it, whole
chunks outside. In each range the mask is one value for all lanes (the row's condition inside,
false outside), so a map's `arith.select` on it stays a select of whole vectors. Accesses are
analysed as far as the range reaches, so those of the chunks inside need no checks. A store's
loop skips the ranges that lie beyond its destination's columns. Rows outside the memref (a
last program's) keep their per-row condition.

Reductions. A reduction's column loop carries U vector accumulators (U = 4 by default, cut to
C / W) starting at the combiner's identity (-0.0 for addf, -inf for maximumf, +inf for minimumf,
1.0 for mulf: each leaves every value, -0.0 and NaN included, as it is), each iteration
combining U chunks, one into each accumulator, so that U chains of the combiner's latency run at
once; after the loop the accumulators are combined pairwise and the W lanes of the last one
in a halving tree. The tile dialect leaves the order of a reduction open; a sum's order differs
from the tile interpreter's halving tree, within the bound of any f32 summation order
(gamma(n - 1) * sum|terms|, `error_bounds.py`); max and min are exact.

Scratch rows. A map with a `math` op in its body (an exp) that two column loops compute is
computed once: the first loop stores the results that later loops use into rows of C f32
(`memref.alloca` in the row's body, which convert-memref-to-llvm hoists to one stack slot;
`SCRATCH_ALIGNMENT`-aligned, `MAX_SCRATCH_BYTES` in all), later loops load them (a softmax's
exp: computed by the sum's loop, read by the normalising store's). Other values are recomputed
from their loads, which the row's earlier loop left in L1/L2.

Prefetch. Every row kernel streams its rows through memory once: the first column loop of a
row that reads an operand brings it from memory (later loops of the row re-read it from L1/L2),
and the stores write the output once. Those whole-chunk loads (the first loop to read each
operand, when the operand varies with the row: not a [1, C] row such as a layer norm's scale, which
stays in L1) and every whole-chunk store carry `mlc.cpu_prefetch_bytes` (the host's distance, `host_prefetch_distances`),
which convert-vector-to-llvm turns into a prefetch of the line that far ahead (prefetchw for the
output: its read-for-ownership starts before the store waits on it); the re-reads prefetch
nothing (the first loop already fetched the next rows' lines). Elementwise kernels (gelu10) and,
since cpu11, kernels with reductions: a layer norm of 4096x1024 on two dev-machine threads 0.80
-> 0.66 ms, a softmax of 64x65536 1.10 -> 0.97 ms, of 1024x1024 0.275 -> 0.235 ms. The loads'
and the stores' distances are separate options (`PrefetchDistances`). On the 16-CPU host (cpu13)
no distance (0, 256, 1024, 4096, 8192 bytes, loads or stores alone) changed which placements of
the arrays were slow; on 4 KiB pages the prefetches a page ahead take the one-thread tanh chain
from 4.74 to 3.57 ms (huge pages: 2.80 and 2.77).

Recorded on the loop kernel: `mlc.cpu_vector_width = W`, `mlc.cpu_accumulators = U` and, where
nonzero, `mlc.cpu_prefetch_bytes` (the loads' distance) and `mlc.cpu_store_prefetch_bytes` (the
stores'; both the pass's `PrefetchDistances`); the same attributes on the tile kernel override the
pass's choice for it (`mlc.cpu_prefetch_bytes` alone sets both distances).

Alignment: as `matmul_cpu.py` (vector accesses of parameters state at most 16 bytes).
Limits (`row_kernel_refusal` names the first that applies; such kernels are left for
convert-tile-to-loop): f32 tiles only; map bodies of f32 arithmetic (`vector_maps.VECTOR_OPS` on vectors;
anything on per-row scalars; selects only on a mask); W is halved until it divides C; masks of
one column range; no loops, no other tile ops; reductions with one of the four combiners above.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from llvmlite import binding
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import Float32Type, FloatAttr, IndexType, IntegerAttr, VectorType, f32, i1, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter
from mlc.transforms.lowering.matmul_cpu import (
    ASSUMED_ALIGNMENT,
    cap_vector_alignment,
    pack_vector,
    unmapped_loop,
)
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering
from mlc.transforms.lowering.vector_maps import as_vector, vector_body, vector_map_refusal

DEFAULT_ACCUMULATORS = 4
"""Vector accumulators of a reduction's column loop (U): the add latency (4 cycles) over one
vector a cycle would want 4-8; a softmax's exp per chunk already fills the pipeline."""
MAX_SCRATCH_BYTES = 1 << 18
"""The most bytes of scratch rows a kernel keeps (stack space of each worker thread); values
beyond it are recomputed."""
SCRATCH_ALIGNMENT = 64
STREAMING_PREFETCH_BYTES = 4096
"""How far ahead a row kernel's streaming whole-chunk loads and stores prefetch (`mlc.cpu_prefetch_bytes`;
see Prefetch in the module docstring): each row is read from and written to memory once, and a prefetchw of the output line
a page ahead starts its read-for-ownership before the store waits on it (a 4096x1024 exact GELU
on one dev-machine thread: 1.15-1.19 ms against 1.21-1.31 without, where -x takes 1.15-1.19)."""


@dataclass(frozen=True)
class PrefetchDistances:
    """How far ahead (bytes) a row kernel's streaming loads and its stores prefetch (0: no
    prefetch); the pass's options, which a tile kernel's `mlc.cpu_prefetch_bytes` /
    `mlc.cpu_store_prefetch_bytes` override."""

    loads: int = STREAMING_PREFETCH_BYTES
    stores: int = STREAMING_PREFETCH_BYTES


UNPREFETCHED_CPU_PREFIXES = ("znver",)
"""LLVM names of the host cores whose elementwise row kernels (no reduction) prefetch nothing by
default (`host_prefetch_distances`): AMD's Zen cores. On the 2-core Zen 4 EPYC dev machine a
4096x1024 -x takes 0.71-0.75 ms at one thread without the prefetches against 0.98-1.33 with them,
0.36-0.40 against 0.47-0.52 at two (cpu15, `bench/cpu.py --prefetch`, two alternating processes
each): one load stream and one store stream, which the core's own prefetchers follow, so the
prefetch / prefetchw instructions only cost issue slots; the tanh chain and the exact GELU move
within noise. Kernels with reductions keep them there: a row is read by several column loops,
the later ones from L1, and the prefetch a page ahead brings the next rows meanwhile (layer norm
at two threads 0.56-0.59 ms with, 0.71-0.75 without; softmax 64x65536 0.89-1.19 with, 1.12-1.16
without). On the 16-CPU Intel Xeon host (Emerald Rapids) every row kernel
keeps them: a one-thread tanh chain on 4 KiB pages takes 3.57 ms with, 4.74 without (cpu13)."""


def host_prefetch_distances(reduces: bool, cpu_name: str | None = None) -> PrefetchDistances:
    """The default prefetch distances of a row kernel (`reduces`: whether it has a reduction) on
    the host core (`cpu_name`: LLVM's name of it, by default llvmlite's `get_host_cpu_name()`):
    none for an elementwise kernel on the cores `UNPREFETCHED_CPU_PREFIXES` names,
    `STREAMING_PREFETCH_BYTES` for loads and stores otherwise. The one place the per-host choice
    is made; compiled code is cached per host CPU already (`caching.host_cpu_fingerprint`)."""
    if reduces:
        return PrefetchDistances()
    if cpu_name is None:
        cpu_name = binding.get_host_cpu_name()
    if cpu_name.startswith(UNPREFETCHED_CPU_PREFIXES):
        return PrefetchDistances(0, 0)
    return PrefetchDistances()


IDENTITIES: dict[type[Operation], float] = {
    arith.AddfOp: -0.0,
    arith.MaximumfOp: float("-inf"),
    arith.MinimumfOp: float("inf"),
    arith.MulfOp: 1.0,
}
"""The combiners a reduction may use, with the identity its accumulators start from."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    return value.type.get_shape()  # type: ignore[attr-defined]


def combiner(reduce: tile.ReduceOp) -> type[Operation] | None:
    """The combiner's op class when the region is `yield op(a, b)` of one of `IDENTITIES`."""
    block = reduce.body.block
    ops = list(block.ops)
    if len(ops) != 2 or not isinstance(ops[1], tile.YieldOp) or type(ops[0]) not in IDENTITIES:
        return None
    if set(ops[0].operands) != set(block.args) or ops[1].operands[0] is not ops[0].results[0]:
        return None
    return type(ops[0])


def row_shape(kernel: tile.KernelOp) -> tuple[int, ...] | None:
    """[R, C] or [C] (one row): the shape of the kernel's reductions' operands, or of its stored
    tiles where it has no reductions (an elementwise kernel), when they all have one such shape."""
    shapes = {_shape(op.source) for op in kernel.walk() if isinstance(op, tile.ReduceOp)}
    shapes = shapes or {_shape(op.value) for op in kernel.walk() if isinstance(op, tile.StoreOp)}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    return shape if len(shape) in (1, 2) else None


def row_kernel_refusal(kernel: tile.KernelOp) -> str | None:
    """Why `kernel` is not a row kernel this lowering takes (see the module docstring), or None."""
    shape = row_shape(kernel)
    if shape is None:
        return "no reductions (or stores) of one 1-d or 2-d shape"
    rows, columns = shape if len(shape) == 2 else (1, *shape)
    if columns < 2:
        return "rows of one column"
    broadcasts = {(rows, columns), (1, columns), (rows, 1), (1, 1)} if len(shape) == 2 else {(columns,), (1,)}
    masks = set()
    for op in kernel.body.block.ops:
        if refusal := vector_kernel_op_refusal(op, broadcasts, "rows"):
            return refusal
        if isinstance(op, tile.InBoundsOp):
            if not _is_wide(op.result, columns) or _constant(op.indices[-1]) is None:
                return "a tile.in_bounds mask that is not of whole rows from a constant column"
            masks.add((_constant(op.indices[-1]), op.bounds_shape()[-1]))
        if isinstance(op, tile.ReduceOp) and (op.axis.value.data != len(shape) - 1 or combiner(op) is None):
            return "a reduction that is not a plain addf/maximumf/minimumf/mulf along the rows"
        if isinstance(op, tile.MapOp) and _is_wide(op.results[0], columns) and (refusal := vector_map_refusal(op)):
            return refusal
        if isinstance(op, tile.StoreOp) and len(shape) == 2 and _shape(op.value)[0] != rows and rows != 1:
            return "a store of a tile broadcast along rows"
    return "tile.in_bounds masks of different columns" if len(masks) > 1 else None


VECTOR_KERNEL_OPS = (
    tile.LoadOp, tile.StoreOp, tile.MapOp, tile.ReduceOp, tile.BroadcastOp, tile.SplatOp, tile.InBoundsOp, tile.ProgramIdOp, tile.ReturnOp,
)
"""The tile ops of the kernels the CPU's row and column lowerings take."""


def vector_kernel_op_refusal(op: Operation, shapes: set[tuple[int, ...]], kind: str) -> str | None:
    """Why one op stops the row or column lowering (`kind`: "rows", "columns"): a tile op of
    another kind, regions other than a map's or reduction's, a tile neither f32 nor a mask, or of
    none of the kernel's `shapes`; None if it does not."""
    if op.dialect_name() == "tile" and not isinstance(op, VECTOR_KERNEL_OPS):
        return f"{op.name} is not an op of {kind}"
    if not isinstance(op, tile.MapOp | tile.ReduceOp) and op.regions:
        return f"{op.name} has regions"
    for value in (*op.operands, *op.results):
        if not isinstance(value.type, tile.TileType):
            continue
        if not isinstance(value.type.element_type, Float32Type) and not isinstance(value.owner, tile.InBoundsOp):
            return "a tile that is neither f32 nor a tile.in_bounds mask"
        if _shape(value) not in shapes:
            return f"a tile of shape {_shape(value)} in a kernel of {kind} of tiles {sorted(shapes)}"
    return None


def _constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _column_mask(kernel: tile.KernelOp, columns: int) -> int:
    """How many leading columns of a row the kernel's `tile.in_bounds` masks keep (all without)."""
    for op in kernel.body.block.ops:
        if isinstance(op, tile.InBoundsOp):
            return max(0, min(columns, op.bounds_shape()[-1] - (_constant(op.indices[-1]) or 0)))
    return columns


def _within(shape: tuple[int, ...], columns: ColumnRange) -> tuple[int, ...]:
    """A wide tile's shape as far as the chunks of `columns` reach: what `chunk_access` needs to
    prove their accesses in bounds (at least 2 wide, which it would take for a broadcast)."""
    return (*shape[:-1], max(columns.stop, 2))


def _is_wide(value: SSAValue, columns: int) -> bool:
    """Whether a tile value varies along the columns (is computed a chunk at a time)."""
    return _shape(value)[-1] == columns and columns > 1


def _shared_rows(kernel: tile.KernelOp, rows: int) -> set[SSAValue]:
    """The kernel's memrefs read only as one row that all of its `rows` rows share (a layer
    norm's scale and bias: they stay in L1, nothing to prefetch)."""
    loads = [op for op in kernel.body.block.ops if isinstance(op, tile.LoadOp)]
    shared = {op.source for op in loads if _shape(op.result)[0] == 1}
    return shared - {op.source for op in loads if _shape(op.result)[0] > 1} if rows > 1 else set()


def _has_math(op: tile.MapOp) -> bool:
    return any(inner.dialect_name() == "math" for inner in op.body.block.ops)


@dataclass(frozen=True)
class ColumnRange:
    """Columns [start, stop) of a row, computed `width` at a time (1: scalars), where the kernel's
    `tile.in_bounds` masks are all true (`inside`) or all false."""

    start: int
    stop: int
    width: int
    inside: bool


def column_ranges(columns: int, kept: int, width: int) -> list[ColumnRange]:
    """The row cut so that every chunk is all inside or all outside the first `kept` columns:
    whole chunks of `width`, scalars for the chunk that the mask's edge cuts."""
    inside_end, outside_start = kept // width * width, -(-kept // width) * width
    candidates = [
        ColumnRange(0, inside_end, width, True),
        ColumnRange(inside_end, kept, 1, True),
        ColumnRange(kept, min(outside_start, columns), 1, False),
        ColumnRange(outside_start, columns, width, False),
    ]
    return [c for c in candidates if c.stop > c.start]


@dataclass
class ChunkScope:
    """Where one chunk of columns is computed: an emitter in a column loop, the chunk's first
    column, its range, and the chunk's values computed so far."""

    emitter: Emitter
    column: SSAValue
    range: ColumnRange
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)


class CpuVectorLowering(TileKernelLowering):
    """What the CPU's row and column lowerings (`columns_cpu.py`) share: the uniform index code,
    the reductions and stores in program order (`_reduce`, `_store`), the recorded choices."""

    width: int
    prefetch_bytes: int = 0
    """`mlc.cpu_prefetch_bytes` of the kernel's streaming loads (0: none; row kernels set it)."""
    store_prefetch_bytes: int = 0
    """`mlc.cpu_store_prefetch_bytes`: the prefetch distance of its whole-chunk stores (0: none)."""

    def require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        super().require_alignment(memref_value, min(alignment, ASSUMED_ALIGNMENT))

    def clone_uniform_code(self, program: Emitter) -> None:
        """The kernel's scalar code outside tiles (index arithmetic), once per program."""
        for op in self.kernel.body.block.ops:
            if op.dialect_name() != "tile" and not any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)):
                clone = op.clone(value_mapper=self.values)
                program.builder.insert(clone)
                self.values.update(zip(op.results, clone.results))

    def lower_in_program_order(self) -> None:
        for op in self.kernel.body.block.ops:
            if isinstance(op, tile.ReduceOp):
                self._reduce(op)
            elif isinstance(op, tile.StoreOp):
                self._store(op)

    def _prefetch_streams(self, block: Block, skipped: set[SSAValue]) -> None:
        """Mark the column loop's vector stores and its loads of operands not in `skipped` (not
        scratch rows) with their prefetch distance (`mlc.cpu_prefetch_bytes`, the loads' or the
        stores'; none where it is 0), for convert-vector-to-llvm."""
        scratch = set(self.scratch.values())
        for access in block.walk():
            if isinstance(access, vector.LoadOp) and access.base not in scratch and access.base not in skipped:
                distance = self.prefetch_bytes
            elif isinstance(access, vector.StoreOp) and access.base not in scratch:
                distance = self.store_prefetch_bytes
            else:
                continue
            if distance:
                attributes.CPU_PREFETCH_BYTES.write(access, IntegerAttr(distance, i64))

    def _reduce(self, op: tile.ReduceOp) -> None:
        raise NotImplementedError

    def _store(self, op: tile.StoreOp) -> None:
        raise NotImplementedError

    def finish_vector_kernel(self, result: loop.KernelOp, bodies: Sequence[Block], accumulators: int) -> loop.KernelOp:
        self.finish_kernel(result, bodies)
        cap_vector_alignment(result)
        attributes.CPU_VECTOR_WIDTH.write(result, IntegerAttr(self.width, i64))
        attributes.CPU_ACCUMULATORS.write(result, IntegerAttr(accumulators, i64))
        if self.prefetch_bytes:
            attributes.CPU_PREFETCH_BYTES.write(result, IntegerAttr(self.prefetch_bytes, i64))
        if self.store_prefetch_bytes:
            attributes.CPU_STORE_PREFETCH_BYTES.write(result, IntegerAttr(self.store_prefetch_bytes, i64))
        return result


class RowKernelLowering(CpuVectorLowering):
    """Lowers one row kernel (see the module docstring)."""

    def __init__(self, kernel: tile.KernelOp, width: int, accumulators: int, prefetch: PrefetchDistances | None = None):
        super().__init__(kernel, width * 4)
        self.full_shape: tuple[int, ...] = row_shape(kernel)  # type: ignore[assignment]
        rows, columns = self.full_shape if len(self.full_shape) == 2 else (1, *self.full_shape)
        self.shape = (rows, columns)
        override = attributes.CPU_VECTOR_WIDTH.read(kernel)
        width = override.value.data if isinstance(override, IntegerAttr) else width
        self.width = min(width, columns)
        while columns % self.width:  # C need not be a power of two (a tile's rows are)
            self.width //= 2
        chunks = columns // self.width
        override = attributes.CPU_ACCUMULATORS.read(kernel)
        accumulators = override.value.data if isinstance(override, IntegerAttr) else accumulators
        self.accumulators = max(u for u in (1, 2, 4, 8, 16) if u <= accumulators and u <= chunks)
        self.ranges = column_ranges(columns, _column_mask(kernel, columns), self.width)
        self.vector_type = VectorType(f32, [self.width])
        self.row_values: dict[SSAValue, SSAValue] = {}
        self.scratch: dict[SSAValue, SSAValue] = {}
        self.stored: set[SSAValue] = set()
        self.saving: set[SSAValue] = set()
        prefetch = prefetch or PrefetchDistances()
        loads = attributes.CPU_PREFETCH_BYTES.read(kernel)
        stores = attributes.CPU_STORE_PREFETCH_BYTES.read(kernel)
        self.prefetch_bytes = loads.value.data if isinstance(loads, IntegerAttr) else prefetch.loads
        # A tile kernel's `mlc.cpu_prefetch_bytes` alone sets its stores' distance too.
        stores = stores if isinstance(stores, IntegerAttr) else loads
        self.store_prefetch_bytes = stores.value.data if isinstance(stores, IntegerAttr) else prefetch.stores
        self.streamed: set[SSAValue] = set()
        """The operands that an earlier column loop of the row read (their lines are in L1/L2)."""
        self.shared_rows = _shared_rows(kernel, rows)

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        program = Emitter(bodies[-1])
        self.clone_uniform_code(program)  # shared by the rows
        rows = unmapped_loop(self.shape[0], "row")
        program.builder.insert(rows)
        self.row, self.zero = rows.body.block.args[0], program.index(0)
        self.row_emitter = Emitter(rows.body.block)
        self._allocate_scratch(self.row_emitter)  # one per row: the rows are independent
        self.lower_in_program_order()
        return self.finish_vector_kernel(result, [rows.body.block, *bodies], self.accumulators)

    # -- scratch rows -------------------------------------------------------------------------------

    def _allocate_scratch(self, emitter: Emitter) -> None:
        """A scratch row for each result of a map with a math op that a column loop needs after
        an earlier one computed the map (its first loop saves all of its scratch results)."""
        columns = self.shape[1]
        loops = [self._wide_dependencies(op.operands[0]) for op in self.kernel.body.block.ops if isinstance(op, tile.ReduceOp | tile.StoreOp)]
        first_loop: dict[Operation, int] = {}
        for index, values in enumerate(loops):
            for value in values:
                first_loop.setdefault(value.owner, index)  # type: ignore[arg-type]
        for index, values in enumerate(loops):
            for value in values:
                owner = value.owner
                fits = (len(self.scratch) + 1) * columns * 4 <= MAX_SCRATCH_BYTES
                if isinstance(owner, tile.MapOp) and _has_math(owner) and first_loop[owner] < index and value not in self.scratch and fits:
                    buffer = emitter.emit(memref.AllocaOp.get(f32, SCRATCH_ALIGNMENT, [columns]))
                    buffer.name_hint = f"{value.name_hint or 'row'}_scratch"
                    self.scratch[value] = buffer

    def _wide_dependencies(self, value: SSAValue) -> dict[SSAValue, None]:
        """The wide values a column loop computing `value` computes (itself included), in a
        deterministic order."""
        found: dict[SSAValue, None] = {}
        pending = [value]
        while pending:
            current = pending.pop()
            if current in found or not isinstance(current.type, tile.TileType) or not _is_wide(current, self.shape[1]):
                continue
            found[current] = None
            owner = current.owner
            if isinstance(owner, tile.MapOp | tile.BroadcastOp):
                pending.extend(owner.operands)
        return found

    def _load_scratch(self, scope: ChunkScope, value: SSAValue) -> SSAValue:
        buffer = self.scratch[value]
        if scope.range.width == 1:
            return scope.emitter.emit(memref.LoadOp.get(buffer, [scope.column]))
        load = vector.LoadOp(buffer, [scope.column], self.vector_type)
        load.attributes["alignment"] = IntegerAttr(SCRATCH_ALIGNMENT, i64)
        return scope.emitter.emit(load)

    def _save(self, scope: ChunkScope, value: SSAValue) -> None:
        emitter, chunk = scope.emitter, scope.values[value]
        if scope.range.width == 1:
            emitter.builder.insert(memref.StoreOp.get(chunk, self.scratch[value], [scope.column]))
        else:
            store = vector.StoreOp(self._as_vector(emitter, chunk), self.scratch[value], [scope.column])
            store.attributes["alignment"] = IntegerAttr(SCRATCH_ALIGNMENT, i64)
            emitter.builder.insert(store)
        self.saving.add(value)

    # -- per-row scalars ----------------------------------------------------------------------------

    def _row_scalar(self, value: SSAValue) -> SSAValue:
        """The row's scalar of a tile value that does not vary along the columns (computed at the
        row level, before the column loop that asks for it)."""
        if not isinstance(value.type, tile.TileType):
            return self.values[value]
        if value in self.row_values:
            return self.row_values[value]
        owner, emitter = value.owner, self.row_emitter
        if isinstance(owner, tile.LoadOp):
            (result,) = self._accesses(1).load(emitter, self.values[owner.source], self.origin(owner.indices), _shape(value), owner.padding)
        elif isinstance(owner, tile.BroadcastOp):
            result = self._row_scalar(owner.source)
        elif isinstance(owner, tile.SplatOp):
            result = self.values[owner.operands[0]]
        elif isinstance(owner, tile.MapOp):
            scalars = self.clone_scalar_body(emitter, owner.body.block, [self._row_scalar(v) for v in owner.operands])
            self.row_values.update(zip(owner.results, scalars))
            return self.row_values[value]
        else:  # a reduction: computed by its own column loop, in program order
            raise AssertionError(f"{owner} used before it is computed")  # pragma: no cover - program order
        self.row_values[value] = result
        return result

    def _row_inside(self, mask: tile.InBoundsOp) -> SSAValue:
        """Whether the row lies inside the mask's bounds (i1; the columns are decided per range)."""
        if mask.result in self.row_values:
            return self.row_values[mask.result]
        if len(self.full_shape) == 1:
            return self.row_emitter.emit(arith.ConstantOp(IntegerAttr(1, i1)))
        emitter, origin = self.row_emitter, mask.indices[0]
        facts, bound, rows = self.facts(origin), mask.bounds_shape()[0], _shape(mask.result)[0]
        if facts.low >= 0 and facts.high + rows <= bound:
            inside = emitter.emit(arith.ConstantOp(IntegerAttr(1, i1)))
        else:
            inside = emitter.below(emitter.add(self.values[origin], self.row) if rows > 1 else self.values[origin], bound)
        self.row_values[mask.result] = inside
        return inside

    def _accesses(self, width: int, column: SSAValue | None = None) -> ChunkAccesses:
        coordinates = [self.row, column or self.zero][-len(self.full_shape) :]
        return ChunkAccesses(self.full_shape, width, coordinates, self.facts, self.require_alignment, unaligned_vectors=True)

    # -- chunks of wide values ----------------------------------------------------------------------

    def _chunk(self, scope: ChunkScope, value: SSAValue) -> SSAValue:
        """The chunk at `scope.column` of a tile value: a vector (a scalar in a range of width 1),
        or a scalar for all lanes where the value does not vary along the columns."""
        if not isinstance(value.type, tile.TileType) or not _is_wide(value, self.shape[1]):
            return self._row_scalar(value)
        if value in scope.values:
            return scope.values[value]
        emitter, owner = scope.emitter, value.owner
        if value in self.scratch and value in self.stored:
            scope.values[value] = self._load_scratch(scope, value)
        elif isinstance(owner, tile.LoadOp):
            accesses = self._accesses(scope.range.width, scope.column)
            shape = _within(_shape(value), scope.range)
            elements = accesses.load(emitter, self.values[owner.source], self.origin(owner.indices), shape, owner.padding)
            scope.values[value] = pack_vector(emitter, elements) if len(elements) > 1 else elements[0]
        elif isinstance(owner, tile.BroadcastOp):
            scope.values[value] = self._chunk(scope, owner.source)
        elif isinstance(owner, tile.SplatOp):
            scope.values[value] = self.values[owner.operands[0]]
        elif isinstance(owner, tile.InBoundsOp):
            inside = self._row_inside(owner)
            scope.values[value] = inside if scope.range.inside else emitter.emit(arith.ConstantOp(IntegerAttr(0, i1)))
        else:
            assert isinstance(owner, tile.MapOp)
            operands = [self._chunk(scope, v) for v in owner.operands]
            scope.values.update(zip(owner.results, self._vector_body(emitter, owner.body.block, operands)))
            for result in owner.results:
                if result in self.scratch:
                    self._save(scope, result)
        return scope.values[value]

    def _as_vector(self, emitter: Emitter, value: SSAValue) -> SSAValue:
        return as_vector(emitter, value, self.vector_type)

    def _vector_body(self, emitter: Emitter, body: Block, arguments: Sequence[SSAValue]) -> list[SSAValue]:
        return vector_body(emitter, body, arguments, self.vector_type, self.values)

    # -- column loops -------------------------------------------------------------------------------

    def _column_loop(
        self, start: int, stop: int, step: int, carried: Sequence[SSAValue], body: Callable[[Emitter, SSAValue, list[SSAValue]], list[SSAValue]]
    ) -> list[SSAValue]:
        """`scf.for %c = start to stop step step` carrying `carried`, at the row level; `body` fills it."""
        block = Block(arg_types=[IndexType(), *(v.type for v in carried)])
        block.args[0].name_hint = "column"
        emitter = Emitter(block)
        emitter.builder.insert(scf.YieldOp(*body(emitter, block.args[0], list(block.args[1:]))))
        if (self.prefetch_bytes or self.store_prefetch_bytes) and step > 1:
            self._prefetch_streams(block, self.streamed | {self.values[v] for v in self.shared_rows})
        self.streamed |= {access.base for access in block.walk() if isinstance(access, vector.LoadOp)}
        row = self.row_emitter
        for_op = scf.ForOp(row.index(start), row.index(stop), row.index(step), list(carried), Region(block))
        row.builder.insert(for_op)
        return list(for_op.results)

    def _reduce(self, op: tile.ReduceOp) -> None:
        """The reduction's column loops (see the module docstring): U vector accumulators over
        ranges of whole chunks, one scalar over ranges of scalars; then the pairwise tree."""
        combiner_class = combiner(op)
        assert combiner_class is not None
        row = self.row_emitter
        identity = row.emit(arith.ConstantOp(FloatAttr(IDENTITIES[combiner_class], f32)))
        vectors = [row.emit(vector.BroadcastOp(identity, self.vector_type))] * self.accumulators
        scalar = identity

        def combine(emitter: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
            return emitter.emit(combiner_class.create(operands=[a, b], result_types=[a.type]))

        def body_of(columns: ColumnRange) -> Callable[[Emitter, SSAValue, list[SSAValue]], list[SSAValue]]:
            def body(emitter: Emitter, column: SSAValue, accumulators: list[SSAValue]) -> list[SSAValue]:
                results = []
                for u, accumulator in enumerate(accumulators):
                    offset = emitter.add(column, emitter.index(u * columns.width)) if u else column
                    chunk = self._chunk(ChunkScope(emitter, offset, columns), op.source)
                    results.append(combine(emitter, accumulator, self._as_vector(emitter, chunk) if columns.width > 1 else chunk))
                return results

            return body

        self.saving = set()
        for columns in self.ranges:
            if columns.width == 1:
                (scalar,) = self._column_loop(columns.start, columns.stop, 1, [scalar], body_of(columns))
                continue
            step = self.width * self.accumulators
            middle = columns.start + (columns.stop - columns.start) // step * step
            if middle > columns.start:
                vectors = self._column_loop(columns.start, middle, step, vectors, body_of(columns))
            if middle < columns.stop:
                vectors[:1] = self._column_loop(middle, columns.stop, self.width, vectors[:1], body_of(columns))
        self.stored |= self.saving
        while len(vectors) > 1:
            half = len(vectors) // 2
            vectors = [combine(row, vectors[i], vectors[i + half]) for i in range(half)]
        lanes = [row.emit(vector.ExtractOp(vectors[0], [lane], f32)) for lane in range(self.width)]
        while len(lanes) > 1:
            half = len(lanes) // 2
            lanes = [combine(row, lanes[i], lanes[i + half]) for i in range(half)]
        result = combine(row, lanes[0], scalar) if any(c.width == 1 for c in self.ranges) else lanes[0]
        result.name_hint = op.result.name_hint
        self.row_values[op.result] = result

    def _store(self, op: tile.StoreOp) -> None:
        origin, target = self.origin(op.indices), self.values[op.dest]
        if not _is_wide(op.value, self.shape[1]):
            self._accesses(1).store(self.row_emitter, [self._row_scalar(op.value)], target, origin, _shape(op.value))
            return

        def body_of(columns: ColumnRange) -> Callable[[Emitter, SSAValue, list[SSAValue]], list[SSAValue]]:
            def body(emitter: Emitter, column: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                chunk = self._chunk(ChunkScope(emitter, column, columns), op.value)
                if isinstance(chunk.type, VectorType):
                    elements = [emitter.emit(vector.ExtractOp(chunk, [lane], f32)) for lane in range(columns.width)]
                else:
                    elements = [chunk]
                self._accesses(columns.width, column).store(emitter, elements, target, origin, _within(_shape(op.value), columns))
                return []

            return body

        self.saving = set()
        saves = any(v in self.scratch and v not in self.stored for v in self._wide_dependencies(op.value))
        first_column, last_column = self.facts(op.indices[-1]).low, op.dest.type.get_shape()[-1]  # type: ignore[attr-defined]
        for columns in self.ranges:
            if first_column + columns.start < last_column or saves:  # else: all stores masked off
                self._column_loop(columns.start, columns.stop, columns.width, [], body_of(columns))
        self.stored |= self.saving


def lower_cpu_row_kernel(
    kernel: tile.KernelOp, width: int, accumulators: int = DEFAULT_ACCUMULATORS, prefetch: PrefetchDistances | None = None
) -> loop.KernelOp:
    return RowKernelLowering(kernel, width, accumulators, prefetch).lower()
