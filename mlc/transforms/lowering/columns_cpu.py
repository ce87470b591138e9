"""Column reductions (over a non-last axis) lowered to loops of host-width CPU vectors.

`convert-tile-rows-to-cpu` hands every *column kernel* (`column_kernel_refusal` is None) to
`lower_cpu_column_kernel`. A column kernel reduces tiles of one shape S along one axis a that is
not the last (every other dimension but the last of size 1: [R, C], [1, R, C], ...): sums, maxima,
minima and means over axis 0 of a matrix, over axis 1 of a batch of matrices, with elementwise
producers (f32 maps: of `vector_maps.VECTOR_OPS` on vectors, others such as a tangent
once per lane; masks of rows) and per-column epilogues (a mean's division), stored as
[1, C] tiles. The tile level gives each program a strip of C columns and all R rows (the programs
are independent: the runtime splits them over its worker threads, so the columns are threaded;
graph-split-column-reductions has already cut long columns into blocks of rows, whose partial
kernel has a program per block and strip).

Layout. The program's C columns are cut into *chunks* of W f32 lanes (W the host's vector width:
16 with AVX-512, 8 with AVX2, 4 otherwise; halved until it divides C) and the chunks into *column
blocks* of G <= `MAX_BLOCK_CHUNKS` chunks, run one after another (an unmapped `loop.parallel`, a
plain loop on the CPU). A block runs one *row loop* (`scf.for` over [0, R)) per `tile.reduce`, in
the program's order: each iteration reads U rows, every row with G contiguous vector loads (one
per chunk: the whole row of the block, so each cache line is read once), and combines them into
G x U accumulator vectors, one per chunk and row in flight (U = `ACCUMULATOR_VECTORS` / G, at
least 1: enough independent add chains to hide the adder's latency). After the loop each chunk's
U accumulators are combined pairwise into the chunk's result: one vector of W column results,
with no reduction across lanes. Per-column values ([1, C]: the reductions' results and maps of
them, loads broadcast along the rows) are vectors computed per chunk between the row loops;
wide values ([R, C]: loads and maps) are computed per row inside the loops; uniform values
([1, 1], splats) are scalars. The stores of per-column values store a chunk at a time.

Masks. A `tile.in_bounds` mask must be provably true along the columns (the index analysis: the
strip lies inside the memref's columns); along the rows it is one i1 per row, so a map's
`arith.select` on it is a select of whole vectors. Loads and stores check their own bounds
(`chunk_access.py`: rows outside read the padding, a chunk that the memref's edge cuts is read
element by element).

Exactness: loads, maps and stores compute what the tile interpreter computes element by element;
a reduction combines the same elements in another order (the dialect leaves it open): for a sum
within the bound of any f32 summation order (`error_bounds.py`), max and min exact.

Recorded on the loop kernel: `mlc.cpu_vector_width = W` and `mlc.cpu_accumulators = U`, the rows
in flight (the same attributes on the tile kernel override them).

Limits (`column_kernel_refusal` names the first that applies; such kernels are left for
convert-tile-to-loop): f32 tiles (and i1 masks) only; one reduced axis, the same for every
reduction; an even number of columns; combiners addf, maximumf,
minimumf, mulf; stores of per-column values only (a kernel that also stores wide values, such as
x minus its column means, is left as it was); masks whose columns are not provably inside.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, VectorType, f32, i1
from xdsl.ir import Block, Region, SSAValue

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.index_analysis import IndexFacts, facts_of
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter
from mlc.transforms.lowering.cpu_vector_code import pack_vector, unmapped_loop
from mlc.transforms.lowering.cpu_vector_kernels import IDENTITIES, CpuVectorLowering, combiner, vector_kernel_op_refusal
from mlc.transforms.lowering.vector_maps import as_vector, vector_body, vector_map_refusal

ACCUMULATOR_VECTORS = 8
"""Accumulator vectors a row loop carries (G chunks x U rows in flight): the add latency (4
cycles) times the two vector adds a cycle of a recent x86 core."""
MAX_BLOCK_CHUNKS = 8
"""The most chunks a column block reads per row (8 x 16 lanes: 512 bytes, 8 cache lines)."""

def _shape(value: SSAValue) -> tuple[int, ...]:
    return value.type.get_shape()  # type: ignore[attr-defined]


def column_layout(kernel: tile.KernelOp) -> tuple[tuple[int, ...], int] | None:
    """(S, a): the shape of the kernel's reductions' operands and the axis they all reduce, when
    a is not the last axis and every other dimension but the last has size 1."""
    layouts = {(_shape(op.source), op.axis.value.data) for op in kernel.walk() if isinstance(op, tile.ReduceOp)}
    if len(layouts) != 1:
        return None
    ((shape, axis),) = layouts
    if len(shape) < 2 or axis == len(shape) - 1 or any(size != 1 for d, size in enumerate(shape[:-1]) if d != axis):
        return None
    return shape, axis


def _program_facts(kernel: tile.KernelOp) -> dict[SSAValue, IndexFacts]:
    grid = kernel.grid_shape()
    return {op.result: IndexFacts.range(0, grid[op.axis.value.data] - 1) for op in kernel.walk() if isinstance(op, tile.ProgramIdOp)}


def column_kernel_refusal(kernel: tile.KernelOp) -> str | None:
    """Why `kernel` is not a column kernel this lowering takes (see the module docstring), or None."""
    layout = column_layout(kernel)
    if layout is None:
        return "no reductions of one shape over one non-last axis (the other axes of size 1)"
    shape, axis = layout
    if shape[-1] % 2:
        return "an odd number of columns"
    per_column = tuple(1 if d == axis else size for d, size in enumerate(shape))
    shapes = {shape, per_column, (1,) * len(shape)}
    seeds = _program_facts(kernel)
    for op in kernel.body.block.ops:
        if refusal := vector_kernel_op_refusal(op, shapes, "columns"):
            return refusal
        if isinstance(op, tile.InBoundsOp):
            columns = facts_of(op.indices[-1], seeds, {})
            if _shape(op.result) != shape or columns.low < 0 or columns.high + shape[-1] > op.bounds_shape()[-1]:
                return "a tile.in_bounds mask that is not of whole rows inside the columns"
        if isinstance(op, tile.ReduceOp) and combiner(op) is None:
            return "a reduction that is not a plain addf/maximumf/minimumf/mulf"
        if isinstance(op, tile.StoreOp) and _shape(op.value) != per_column:
            return "a store of a tile that is not one value per column"
    return None


@dataclass
class RowScope:
    """Where one row of a row loop is computed: an emitter in the loop, the row (in the tile), and
    the chunks of wide values computed for it so far, by (value, chunk)."""

    emitter: Emitter
    row: SSAValue
    values: dict[tuple[SSAValue, int], SSAValue] = field(default_factory=dict)


class ColumnKernelLowering(CpuVectorLowering):
    """Lowers one column kernel (see the module docstring)."""

    def __init__(self, kernel: tile.KernelOp, width: int):
        super().__init__(kernel, width * 4)
        self.shape, self.axis = column_layout(kernel)  # type: ignore[misc]
        rows, columns = self.shape[self.axis], self.shape[-1]
        override = attributes.CPU_VECTOR_WIDTH.read(kernel)
        self.width = min(override.value.data if isinstance(override, IntegerAttr) else width, columns)
        while columns % self.width:
            self.width //= 2
        chunks = columns // self.width
        self.block_chunks = max(g for g in range(1, MAX_BLOCK_CHUNKS + 1) if chunks % g == 0)
        override = attributes.CPU_ACCUMULATORS.read(kernel)
        in_flight = override.value.data if isinstance(override, IntegerAttr) else ACCUMULATOR_VECTORS // self.block_chunks
        self.rows_in_flight = max(u for u in (1, 2, 4, 8, 16) if u <= max(1, in_flight) and rows % u == 0)
        self.vector_type = VectorType(f32, [self.width])
        self.column_values: dict[tuple[SSAValue, int], SSAValue] = {}

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        program = Emitter(bodies[-1])
        self.clone_uniform_code(program)  # shared by the column blocks
        block_columns = self.block_chunks * self.width
        blocks = unmapped_loop(self.shape[-1] // block_columns, "column_block")
        program.builder.insert(blocks)
        self.block = Emitter(blocks.body.block)
        self.zero = self.block.index(0)
        start = self.block.emit(arith.MuliOp(blocks.body.block.args[0], self.block.index(block_columns)))
        self.chunk_columns = [self.block.add(start, self.block.index(g * self.width)) if g else start for g in range(self.block_chunks)]
        self.lower_in_program_order()
        return self.finish_vector_kernel(result, [blocks.body.block, *bodies], self.rows_in_flight)

    def _accesses(self, width: int, row: SSAValue, column: SSAValue) -> ChunkAccesses:
        coordinates = [self.zero] * len(self.shape)
        coordinates[self.axis], coordinates[-1] = row, column
        return ChunkAccesses(self.shape, width, coordinates, self.facts, self.require_alignment, unaligned_vectors=True)

    def _load(self, emitter: Emitter, op: tile.LoadOp, row: SSAValue, chunk: int) -> SSAValue:
        width = self.width if _shape(op.result)[-1] > 1 else 1
        accesses = self._accesses(width, row, self.chunk_columns[chunk])
        elements = accesses.load(emitter, self.values[op.source], self.origin(op.indices), _shape(op.result), op.padding)
        return pack_vector(emitter, elements) if len(elements) > 1 else elements[0]

    # -- per-column and uniform values (between the row loops) --------------------------------------

    def _column_chunk(self, value: SSAValue, chunk: int) -> SSAValue:
        """A per-column or uniform value at chunk `chunk` of the block: a vector of W columns (a
        scalar where the value does not vary along the columns), emitted in the block."""
        if not isinstance(value.type, tile.TileType):
            return self.values[value]
        if _shape(value)[-1] == 1:
            chunk = 0  # uniform: the same scalar for every chunk
        key = (value, chunk)
        if key in self.column_values:
            return self.column_values[key]
        owner = value.owner
        if isinstance(owner, tile.LoadOp):
            result = self._load(self.block, owner, self.zero, chunk)
        elif isinstance(owner, tile.BroadcastOp):
            result = self._column_chunk(owner.source, chunk)
        elif isinstance(owner, tile.SplatOp):
            result = self.values[owner.operands[0]]
        elif isinstance(owner, tile.MapOp):
            operands = [self._column_chunk(v, chunk) for v in owner.operands]
            results = self._map_chunk(self.block, owner, operands)
            self.column_values.update(((r, chunk), v) for r, v in zip(owner.results, results))
            return self.column_values[key]
        else:  # a reduction: computed by its row loop, in program order
            raise AssertionError(f"{owner} used before it is computed")  # pragma: no cover - program order
        self.column_values[key] = result
        return result

    # -- wide values (in the row loops) -------------------------------------------------------------

    def _wide_chunk(self, scope: RowScope, value: SSAValue, chunk: int) -> SSAValue:
        """A value at one row and chunk: a vector, or a scalar for all lanes (uniform values,
        per-column values broadcast along the rows come from `_column_chunk`)."""
        if not isinstance(value.type, tile.TileType) or _shape(value) != self.shape:
            return self._column_chunk(value, chunk)
        key = (value, chunk)
        if key in scope.values:
            return scope.values[key]
        owner, emitter = value.owner, scope.emitter
        if isinstance(owner, tile.LoadOp):
            result = self._load(emitter, owner, scope.row, chunk)
        elif isinstance(owner, tile.BroadcastOp):
            result = self._column_chunk(owner.source, chunk)
        elif isinstance(owner, tile.SplatOp):
            result = self.values[owner.operands[0]]
        elif isinstance(owner, tile.InBoundsOp):
            result = self._row_inside(scope, owner)
        else:
            assert isinstance(owner, tile.MapOp)
            operands = [self._wide_chunk(scope, v, chunk) for v in owner.operands]
            results = self._map_chunk(emitter, owner, operands)
            scope.values.update(((r, chunk), v) for r, v in zip(owner.results, results))
            return scope.values[key]
        scope.values[key] = result
        return result

    def _map_chunk(self, emitter: Emitter, op: tile.MapOp, operands: list[SSAValue]) -> list[SSAValue]:
        """A map on a chunk: vector ops where its body allows (`vector_maps.py`), else its scalar
        body once per lane (a tangent: libm per element) and the lanes
        packed back into vectors."""
        if vector_map_refusal(op) is None or not any(isinstance(v.type, VectorType) for v in operands):
            return vector_body(emitter, op.body.block, operands, self.vector_type, self.values)
        lanes = []
        for lane in range(self.width):
            arguments = [emitter.emit(vector.ExtractOp(v, [lane], f32)) if isinstance(v.type, VectorType) else v for v in operands]
            lanes.append(self.clone_scalar_body(emitter, op.body.block, arguments))
        return [pack_vector(emitter, [results[index] for results in lanes]) for index in range(len(op.results))]

    def _row_inside(self, scope: RowScope, mask: tile.InBoundsOp) -> SSAValue:
        """Whether the row lies inside the mask's bounds (i1; its columns are, by the refusal)."""
        key = (mask.result, 0)
        if key in scope.values:
            return scope.values[key]
        origin, bound, rows = mask.indices[self.axis], mask.bounds_shape()[self.axis], self.shape[self.axis]
        facts, emitter = self.facts(origin), scope.emitter
        if facts.low >= 0 and facts.high + rows <= bound:
            inside = emitter.emit(arith.ConstantOp(IntegerAttr(1, i1)))
        else:
            inside = emitter.below(emitter.add(self.values[origin], scope.row), bound)
        scope.values[key] = inside
        return inside

    def _reduce(self, op: tile.ReduceOp) -> None:
        """The reduction's row loop (see the module docstring): G x U accumulator vectors, then
        each chunk's U combined pairwise into its vector of column results."""
        combiner_class = combiner(op)
        assert combiner_class is not None
        chunks, in_flight = self.block_chunks, self.rows_in_flight
        identity = self.block.emit(arith.ConstantOp(FloatAttr(IDENTITIES[combiner_class], f32)))
        start = self.block.emit(vector.BroadcastOp(identity, self.vector_type))

        def combine(emitter: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
            return emitter.emit(combiner_class.create(operands=[a, b], result_types=[a.type]))

        body = Block(arg_types=[IndexType(), *[self.vector_type] * (chunks * in_flight)])
        body.args[0].name_hint = "row"
        emitter = Emitter(body)
        accumulators = list(body.args[1:])
        for u in range(in_flight):
            scope = RowScope(emitter, emitter.add(body.args[0], emitter.index(u)) if u else body.args[0])
            for chunk in range(chunks):
                value = as_vector(emitter, self._wide_chunk(scope, op.source, chunk), self.vector_type)
                accumulators[chunk * in_flight + u] = combine(emitter, accumulators[chunk * in_flight + u], value)
        emitter.builder.insert(scf.YieldOp(*accumulators))
        block = self.block
        row_loop = scf.ForOp(block.index(0), block.index(self.shape[self.axis]), block.index(in_flight), [start] * len(accumulators), Region(body))
        block.builder.insert(row_loop)
        for chunk in range(chunks):
            vectors = list(row_loop.results[chunk * in_flight : (chunk + 1) * in_flight])
            while len(vectors) > 1:
                half = len(vectors) // 2
                vectors = [combine(block, vectors[i], vectors[i + half]) for i in range(half)]
            vectors[0].name_hint = op.result.name_hint
            self.column_values[(op.result, chunk)] = vectors[0]

    def _store(self, op: tile.StoreOp) -> None:
        target = self.values[op.dest]
        for chunk in range(self.block_chunks):
            value = as_vector(self.block, self._column_chunk(op.value, chunk), self.vector_type)
            elements = [self.block.emit(vector.ExtractOp(value, [lane], f32)) for lane in range(self.width)]
            accesses = self._accesses(self.width, self.zero, self.chunk_columns[chunk])
            accesses.store(self.block, elements, target, self.origin(op.indices), _shape(op.value))


def lower_cpu_column_kernel(kernel: tile.KernelOp, width: int) -> loop.KernelOp:
    return ColumnKernelLowering(kernel, width).lower()
