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
the CPU), I at a time (see Interleaved rows; I = 1 by default); within a row, every tile value of
C columns is computed W columns at a time (`vector<W x f32>`, W the host's vector width: 16 with AVX-512, 8 with AVX2, 4 otherwise), in
*column loops* (`scf.for` over [0, C)), one per `tile.reduce` and one per `tile.store` of a wide
value, in the tile program's order. A column loop evaluates the expression it needs on one chunk
of W columns: loads through `chunk_access.py` (masked where the index analysis cannot prove them
in bounds, one vector access, aligned or not: x86 reads unaligned vectors at little cost), map
bodies with their f32 ops on vectors (scalars
from outside the chunk, constants and per-row values, broadcast to W lanes where an op mixes
them). Per-row values ([R, 1]: reduction results and maps of them, such as a softmax's 1 / sum or
a layer norm's rsqrt) are scalars computed between the column loops.

Reductions. A reduction's column loop carries U vector accumulators (U = 4 by default, cut to
C / W) starting at the combiner's identity (-0.0 for addf, -inf for maximumf, +inf for minimumf,
1.0 for mulf: each leaves every value, -0.0 and NaN included, as it is), each iteration
combining U chunks, one into each accumulator, so that U chains of the combiner's latency run at
once; after the loop the accumulators are combined pairwise and the W lanes of the last one
in a halving tree. The tile dialect leaves the order of a reduction open; a sum's order differs
from the tile interpreter's halving tree, within the bound of any f32 summation order
(gamma(n - 1) * sum|terms|, `error_bounds.py`); max and min are exact.

Interleaved rows. With I > 1 (`interleaved-rows`, `mlc.cpu_interleaved_rows`) the row loop runs
R / I steps of I rows (rows step * I + [0, I)), and each column loop computes the chunks of all I
rows side by side: a reduction carries U accumulators per row (I * U in all), a store's loop
stores every row's chunk; each row keeps its own per-row values and scratch rows (`RowLane`), so
the I rows' horizontal reductions, per-row scalars and loop-carried chains are independent and
may overlap. The R mod I rows left over run after them one at a time. I is cut to R.

Scratch rows. A map with a `math` op in its body (an exp) that two column loops compute is
computed once: the first loop stores the results that later loops use into rows of C f32
(`memref.alloca` in the row's body, which convert-memref-to-llvm hoists to one stack slot;
`SCRATCH_ALIGNMENT`-aligned, `MAX_SCRATCH_BYTES` in all, for the I rows together), later loops
load them (a softmax's exp: computed by the sum's loop, read by the normalising store's). Other values are recomputed
from their loads, which the row's earlier loop left in L1/L2.

Prefetch: see `cpu_prefetch.py` (the host's distances) and `CpuVectorLowering._prefetch_streams`
(the accesses it marks).

Non-temporal stores. With the store kind "nontemporal" (`cpu_prefetch.store_kind`: the pass's
`nontemporal-stores` option, by default for streams beyond the host's last-level cache; a tile
kernel's `mlc.cpu_store_kind` overrides it) every vector store to a kernel parameter that states
at least `NONTEMPORAL_MIN_ALIGNMENT` bytes (whole chunks at multiples of the vector along rows of
a multiple of it: every chunk when W divides C, as it does for any C that W is cut to) is marked
`nontemporal`, without a prefetch (`mlc.cpu_store_prefetch_bytes` then applies to the other
stores: a prefetchw would bring the line in for ownership, the read the streaming store saves);
the loop kernel records `mlc.cpu_store_kind = "nontemporal"` when it has one.
Parameters are only known 16-byte aligned (`ASSUMED_ALIGNMENT`: numpy's `out=` arrays start 16
bytes past a page), so the stores state 16 and LLVM's x86 back end splits each 64-byte store into
four 16-byte `vmovntps` (a whole-vector `vmovntps zmm` needs 64-byte alignment, which mlc's own
results have but a caller's need not); scalar stores (C not a multiple of 4 f32, W cut below 4)
and scratch rows stay ordinary (LLVM would split them into 4- or 8-byte `movnti`, or they are
re-read). The `sfence` that orders the streaming stores before the kernel returns is the
backend's (`llvm_translate`).

Recorded on the loop kernel: `mlc.cpu_vector_width = W`, `mlc.cpu_accumulators = U`,
`mlc.cpu_interleaved_rows = I` and, where nonzero, `mlc.cpu_prefetch_bytes` (the loads' distance) and `mlc.cpu_store_prefetch_bytes` (the
stores'; both the pass's `PrefetchDistances`) and `mlc.cpu_store_kind = "nontemporal"` where
its stores stream (see Non-temporal stores); the same attributes on the tile kernel override the
pass's choice for it (`mlc.cpu_prefetch_bytes` alone sets both distances).

Alignment: as `matmul_cpu.py` (vector accesses of parameters state at most 16 bytes).

Which kernels are row kernels, and the column ranges of a mask: `row_kernel_shape.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import BoolAttr, FloatAttr, IndexType, IntegerAttr, StringAttr, VectorType, f32, i1, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter
from mlc.transforms.lowering.cpu_prefetch import PrefetchDistances
from mlc.transforms.lowering.cpu_vector_kernels import IDENTITIES, CpuVectorLowering, combiner, tile_shape
from mlc.transforms.lowering.cpu_vector_code import pack_vector, unmapped_loop
from mlc.transforms.lowering.row_kernel_shape import (
    ChunkScope,
    ColumnRange,
    column_mask,
    column_ranges,
    has_math,
    is_wide,
    row_shape,
    shared_rows,
    within,
)
from mlc.transforms.lowering.vector_maps import as_vector, vector_body

DEFAULT_ACCUMULATORS = 4
"""Vector accumulators of a reduction's column loop (U): the add latency (4 cycles) over one
vector a cycle would want 4-8; a softmax's exp per chunk already fills the pipeline."""
MAX_SCRATCH_BYTES = 1 << 18
"""The most bytes of scratch rows a kernel keeps (stack space of each worker thread); values
beyond it are recomputed."""
SCRATCH_ALIGNMENT = 64
DEFAULT_INTERLEAVED_ROWS = 1
"""Rows of a program that each column loop computes at once by default (I; see Interleaved rows
in the module docstring): one. Measured on the 2-core Zen 4 dev machine at one thread (ln16,
`bench/cpu_row_variants.py`, BENCHMARKS.md): where rows of 4 KiB stream from memory, two or four
rows are slower (layer norm of 4096x1024 1.75-2.0 ms against 1.2-1.4 with one, softmax 2.8-2.9
against 2.0-2.1); rows of 4160 bytes are not (layer norm of 4096x1040 1.44-1.51 against 1.52), so
it is the rows' streams 4 KiB apart, not the interleaving as such; in cache it gains up to 5%
(softmax of 1024x1024 0.396 against 0.416, layer norm 0.208 against 0.216). So the row kernels
are not held up by each row's serial tails (the horizontal reductions, the per-row scalars); the
option and the autotuner knob remain for the shapes where it pays."""
NONTEMPORAL_MIN_ALIGNMENT = 16
"""The least alignment (bytes) a vector store needs to be stored non-temporally: that of x86's
16-byte `vmovntps`, into which LLVM splits a wider non-temporal store stating 16; below it LLVM
scalarizes the store into 4- or 8-byte `movnti`s."""


@dataclass
class RowLane:
    """One of the rows a column loop computes at once: its row index, its per-row values (scalars
    of the tile values that do not vary along the columns), its scratch rows."""

    row: SSAValue
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    scratch: dict[SSAValue, SSAValue] = field(default_factory=dict)


class RowKernelLowering(CpuVectorLowering):
    """Lowers one row kernel (see the module docstring)."""

    def __init__(
        self,
        kernel: tile.KernelOp,
        width: int,
        accumulators: int,
        prefetch: PrefetchDistances | None = None,
        interleaved_rows: int = DEFAULT_INTERLEAVED_ROWS,
        store_kind: str = "ordinary",
    ):
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
        self.ranges = column_ranges(columns, column_mask(kernel, columns), self.width)
        self.vector_type = VectorType(f32, [self.width])
        override = attributes.CPU_INTERLEAVED_ROWS.read(kernel)
        interleaved_rows = override.value.data if isinstance(override, IntegerAttr) else interleaved_rows
        self.interleaved_rows = min(interleaved_rows, rows)
        self.lanes: list[RowLane] = []
        """The rows that the column loops being emitted compute at once."""
        self.lane: RowLane
        """The row of `lanes` whose values `_row_scalar` and `_chunk` compute now."""
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
        self.shared_rows = shared_rows(kernel, rows)
        override = attributes.CPU_STORE_KIND.read(kernel)
        self.store_kind = override.data if isinstance(override, StringAttr) else store_kind

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        program = Emitter(bodies[-1])
        self.clone_uniform_code(program)  # shared by the rows
        self.zero = program.index(0)
        rows, interleaved = self.shape[0], self.interleaved_rows
        row_loops = [self._lower_rows(program, rows // interleaved, interleaved, 0)]
        if rows % interleaved:  # the rows that `interleaved` leaves over, one at a time
            row_loops.append(self._lower_rows(program, rows % interleaved, 1, rows // interleaved * interleaved))
        result = self.finish_vector_kernel(result, [*row_loops, *bodies], self.accumulators)
        attributes.CPU_INTERLEAVED_ROWS.write(result, IntegerAttr(interleaved, i64))
        if self.store_kind == "nontemporal" and mark_nontemporal_stores(result):
            attributes.CPU_STORE_KIND.write(result, StringAttr("nontemporal"))
        return result

    def _lower_rows(self, program: Emitter, steps: int, interleaved: int, first: int) -> Block:
        """A loop of `steps` steps, each computing rows first + step * interleaved + [0, interleaved)
        in the same column loops; returns its body."""
        rows = unmapped_loop(steps, "row" if interleaved == 1 and first == 0 else "rows")
        program.builder.insert(rows)
        step = rows.body.block.args[0]
        self.row_emitter = Emitter(rows.body.block)
        self.lanes = [RowLane(self._row_index(step, interleaved, first + lane)) for lane in range(interleaved)]
        self.stored, self.saving, self.streamed = set(), set(), set()
        scratch = self._scratch_values()
        for self.lane in self.lanes:  # one scratch row per row: the rows are independent
            self._allocate_scratch(self.row_emitter, scratch)
        self.lower_in_program_order()
        return rows.body.block

    def _row_index(self, step: SSAValue, interleaved: int, offset: int) -> SSAValue:
        """step * interleaved + offset, at the row level (step itself where that is all)."""
        row = step if interleaved == 1 else self.row_emitter.emit(arith.MuliOp(step, self.row_emitter.index(interleaved)))
        if offset:
            row = self.row_emitter.add(row, self.row_emitter.index(offset))
        row.name_hint = "row"
        return row

    @property
    def row(self) -> SSAValue:
        return self.lane.row

    @property
    def row_values(self) -> dict[SSAValue, SSAValue]:
        return self.lane.values

    @property
    def scratch(self) -> dict[SSAValue, SSAValue]:
        return self.lane.scratch

    # -- scratch rows -------------------------------------------------------------------------------

    def _scratch_values(self) -> list[SSAValue]:
        """The results of maps with a math op that a column loop needs after an earlier one
        computed the map (its first loop saves all of its scratch results), as many as
        `MAX_SCRATCH_BYTES` holds for every interleaved row."""
        row_bytes = self.shape[1] * 4 * len(self.lanes)
        loops = [self._wide_dependencies(op.operands[0]) for op in self.kernel.body.block.ops if isinstance(op, tile.ReduceOp | tile.StoreOp)]
        first_loop: dict[Operation, int] = {}
        for index, values in enumerate(loops):
            for value in values:
                first_loop.setdefault(value.owner, index)  # type: ignore[arg-type]
        chosen: dict[SSAValue, None] = {}
        for index, values in enumerate(loops):
            for value in values:
                owner = value.owner
                fits = (len(chosen) + 1) * row_bytes <= MAX_SCRATCH_BYTES
                if isinstance(owner, tile.MapOp) and has_math(owner) and first_loop[owner] < index and fits:
                    chosen[value] = None
        return list(chosen)

    def _allocate_scratch(self, emitter: Emitter, values: Sequence[SSAValue]) -> None:
        """The current row's scratch rows of `values`."""
        for value in values:
            buffer = emitter.emit(memref.AllocaOp.get(f32, SCRATCH_ALIGNMENT, [self.shape[1]]))
            buffer.name_hint = f"{value.name_hint or 'row'}_scratch"
            self.scratch[value] = buffer

    def _wide_dependencies(self, value: SSAValue) -> dict[SSAValue, None]:
        """The wide values a column loop computing `value` computes (itself included), in a
        deterministic order."""
        found: dict[SSAValue, None] = {}
        pending = [value]
        while pending:
            current = pending.pop()
            if current in found or not isinstance(current.type, tile.TileType) or not is_wide(current, self.shape[1]):
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
            (result,) = self._accesses(1).load(emitter, self.values[owner.source], self.origin(owner.indices), tile_shape(value), owner.padding)
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
        facts, bound, rows = self.facts(origin), mask.bounds_shape()[0], tile_shape(mask.result)[0]
        if facts.low >= 0 and facts.high + rows <= bound:
            inside = emitter.emit(arith.ConstantOp(IntegerAttr(1, i1)))
        else:
            inside = emitter.below(emitter.add(self.values[origin], self.row) if rows > 1 else self.values[origin], bound)
        self.row_values[mask.result] = inside
        return inside

    def _accesses(self, width: int, column: SSAValue | None = None) -> ChunkAccesses:
        coordinates = [self.row, column or self.zero][-len(self.full_shape) :]
        return ChunkAccesses(self.full_shape, width, coordinates, self.facts, self.require_alignment, unaligned_vectors=True, boolean_vectors=True)

    # -- chunks of wide values ----------------------------------------------------------------------

    def _chunk(self, scope: ChunkScope, value: SSAValue) -> SSAValue:
        """The chunk at `scope.column` of a tile value: a vector (a scalar in a range of width 1),
        or a scalar for all lanes where the value does not vary along the columns."""
        if not isinstance(value.type, tile.TileType) or not is_wide(value, self.shape[1]):
            return self._row_scalar(value)
        if value in scope.values:
            return scope.values[value]
        emitter, owner = scope.emitter, value.owner
        if value in self.scratch and value in self.stored:
            scope.values[value] = self._load_scratch(scope, value)
        elif isinstance(owner, tile.LoadOp):
            accesses = self._accesses(scope.range.width, scope.column)
            shape = within(tile_shape(value), scope.range)
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
            scratch = {buffer for lane in self.lanes for buffer in lane.scratch.values()}
            self._prefetch_streams(block, self.streamed | {self.values[v] for v in self.shared_rows}, scratch)
        self.streamed |= {access.base for access in block.walk() if isinstance(access, vector.LoadOp)}
        row = self.row_emitter
        for_op = scf.ForOp(row.index(start), row.index(stop), row.index(step), list(carried), Region(block))
        row.builder.insert(for_op)
        return list(for_op.results)

    def _reduce(self, op: tile.ReduceOp) -> None:
        """The reduction's column loops (see the module docstring): U vector accumulators per
        interleaved row over ranges of whole chunks, one scalar per row over ranges of scalars;
        then each row's pairwise tree."""
        combiner_class = combiner(op)
        assert combiner_class is not None
        row, lanes = self.row_emitter, len(self.lanes)
        identity = row.emit(arith.ConstantOp(FloatAttr(IDENTITIES[combiner_class], f32)))
        start = row.emit(vector.BroadcastOp(identity, self.vector_type))
        vectors = [start] * (self.accumulators * lanes)  # row by row: U for the first, U for the next...
        scalars = [identity] * lanes

        def combine(emitter: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
            return emitter.emit(combiner_class.create(operands=[a, b], result_types=[a.type]))

        def body_of(columns: ColumnRange) -> Callable[[Emitter, SSAValue, list[SSAValue]], list[SSAValue]]:
            def body(emitter: Emitter, column: SSAValue, accumulators: list[SSAValue]) -> list[SSAValue]:
                per_row = len(accumulators) // lanes
                results = list(accumulators)
                for u in range(per_row):  # the rows' chunks side by side: independent chains
                    offset = emitter.add(column, emitter.index(u * columns.width)) if u else column
                    for index, self.lane in enumerate(self.lanes):
                        chunk = self._chunk(ChunkScope(emitter, offset, columns), op.source)
                        at = index * per_row + u
                        results[at] = combine(emitter, accumulators[at], self._as_vector(emitter, chunk) if columns.width > 1 else chunk)
                return results

            return body

        self.saving = set()
        firsts = slice(0, None, self.accumulators)  # each row's first accumulator
        for columns in self.ranges:
            if columns.width == 1:
                scalars = self._column_loop(columns.start, columns.stop, 1, scalars, body_of(columns))
                continue
            step = self.width * self.accumulators
            middle = columns.start + (columns.stop - columns.start) // step * step
            if middle > columns.start:
                vectors = self._column_loop(columns.start, middle, step, vectors, body_of(columns))
            if middle < columns.stop:
                vectors[firsts] = self._column_loop(middle, columns.stop, self.width, vectors[firsts], body_of(columns))
        self.stored |= self.saving
        for index, self.lane in enumerate(self.lanes):
            tree = vectors[index * self.accumulators : (index + 1) * self.accumulators]
            while len(tree) > 1:
                half = len(tree) // 2
                tree = [combine(row, tree[i], tree[i + half]) for i in range(half)]
            elements = [row.emit(vector.ExtractOp(tree[0], [lane], f32)) for lane in range(self.width)]
            while len(elements) > 1:
                half = len(elements) // 2
                elements = [combine(row, elements[i], elements[i + half]) for i in range(half)]
            result = combine(row, elements[0], scalars[index]) if any(c.width == 1 for c in self.ranges) else elements[0]
            result.name_hint = op.result.name_hint
            self.row_values[op.result] = result

    def _store(self, op: tile.StoreOp) -> None:
        origin, target = self.origin(op.indices), self.values[op.dest]
        if not is_wide(op.value, self.shape[1]):
            for self.lane in self.lanes:
                self._accesses(1).store(self.row_emitter, [self._row_scalar(op.value)], target, origin, tile_shape(op.value))
            return

        def body_of(columns: ColumnRange) -> Callable[[Emitter, SSAValue, list[SSAValue]], list[SSAValue]]:
            def body(emitter: Emitter, column: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                for self.lane in self.lanes:
                    chunk = self._chunk(ChunkScope(emitter, column, columns), op.value)
                    if isinstance(chunk.type, VectorType):
                        element_type = chunk.type.element_type  # f32, or i1: a stored comparison
                        elements = [emitter.emit(vector.ExtractOp(chunk, [lane], element_type)) for lane in range(columns.width)]
                    else:
                        elements = [chunk]
                    self._accesses(columns.width, column).store(emitter, elements, target, origin, within(tile_shape(op.value), columns))
                return []

            return body

        self.saving = set()
        saves = any(v in self.scratch and v not in self.stored for v in self._wide_dependencies(op.value))
        first_column, last_column = self.facts(op.indices[-1]).low, op.dest.type.get_shape()[-1]  # type: ignore[attr-defined]
        for columns in self.ranges:
            if first_column + columns.start < last_column or saves:  # else: all stores masked off
                self._column_loop(columns.start, columns.stop, columns.width, [], body_of(columns))
        self.stored |= self.saving


def mark_nontemporal_stores(kernel: loop.KernelOp) -> int:
    """Marks `nontemporal` the kernel's vector stores to its parameters that state at least
    `NONTEMPORAL_MIN_ALIGNMENT` bytes and are that wide (see Non-temporal stores); returns how many."""
    parameters = set(kernel.body.block.args)
    marked = 0
    for op in kernel.walk():
        if not isinstance(op, vector.StoreOp) or op.base not in parameters:
            continue
        stated = op.attributes.get("alignment")
        vector_type = op.vector.type
        vector_bytes = vector_type.get_shape()[0] * byte_width(vector_type.element_type)  # type: ignore[attr-defined]
        if isinstance(stated, IntegerAttr) and stated.value.data >= NONTEMPORAL_MIN_ALIGNMENT and vector_bytes >= NONTEMPORAL_MIN_ALIGNMENT:
            op.properties["nontemporal"] = BoolAttr.from_bool(True)
            op.attributes.pop(attributes.CPU_PREFETCH_BYTES.name, None)  # a prefetchw is the read-for-ownership it saves
            marked += 1
    return marked


def lower_cpu_row_kernel(
    kernel: tile.KernelOp,
    width: int,
    accumulators: int = DEFAULT_ACCUMULATORS,
    prefetch: PrefetchDistances | None = None,
    interleaved_rows: int = DEFAULT_INTERLEAVED_ROWS,
    store_kind: str = "ordinary",
) -> loop.KernelOp:
    """`kernel` as a loop kernel (see the module docstring); `store_kind` ("nontemporal" or
    "ordinary", `cpu_prefetch.store_kind`) how its result stores write."""
    return RowKernelLowering(kernel, width, accumulators, prefetch, interleaved_rows, store_kind).lower()
