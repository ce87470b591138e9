"""Tile kernels with `tile.dot`, lowered to loops: block tile -> threads -> register micro-tiles.

`convert-tile-to-loop` hands every `tile.kernel` holding a `tile.dot` to `lower_dot_kernel`.

Layout (block tile -> warp tile -> micro-tile). The dot's accumulator has the kernel's output shape
S = [1..., BM, BN] (one matrix per program). The block's threads form a (BM / TM) x (BN / TN)
grid; each thread accumulates a TM x TN *micro-tile* (E = BM * BN / (32 * num_warps) outputs, at
least one: TN the power of two nearest sqrt(E) from above, TM = E / TN, each cut to the block;
`MicroTileLayout.choose`). The 32 lanes of a warp take an LM x LN piece of that grid (LN = 8 where
the grid is that wide, LM = 32 / LN), so a warp owns a *warp tile* of LM * TM rows by LN * TN
columns, and the warps tile the block row-major. Within its warp tile a thread's TN columns come in
4-wide chunks LN * 4 apart (4 * lane column + 4 * LN * j) and its TM rows likewise in 4-tall chunks
LM * 4 apart (4 * lane row + r + 4 * LM * i): the lanes of a warp read one contiguous span of a B
row or a C row per chunk (coalesced, one 16-byte vector per lane where aligned), and a thread's
elements of an A column come four neighbours at a time, which loop-promote-shared turns into one
16-byte read of a transposed shared copy. The loop kernel records
`mlc.micro_tile = array<i64: TM, TN>` and `mlc.warp_tile = array<i64: LM * TM, LN * TN>`; the same
`mlc.micro_tile` on the tile kernel overrides the choice.

Values. A tile of shape S, or one that broadcasts to S (a bias row, a splat), is held by each
thread as its micro-tile: TM rows of TN scalars, a single row or a single scalar per row where
the tile broadcasts (`Fragment`). Uniform scalar code is cloned; `tile.map` bodies are cloned per
element; loads, stores and `tile.in_bounds` move one TN-wide chunk per micro-tile row through
`chunk_access.py` (bounds checks only where the index analysis cannot prove them, vector accesses
where it proves them aligned).

`tile.dot`. The accumulator's TM * TN f32 scalars are carried through an `scf.for` over the dot's
K, one step per iteration, marked `mlc.dot = array<i64: TM, TN>` (and `mlc.unroll` when K is at
most `UNROLLED_DOT_DEPTH`). A step loads the thread's TM
elements of the lhs column (one per micro-tile row) and its TN elements of the rhs row (one chunk
per column chunk), extends f16 to f32, and adds `a[i] * b[j]` to `acc[i][j]` with `math.fma` in
increasing K: the interpreter's order, so the lowering is exact. The operands must be `tile.load`s
(possibly through `tile.broadcast`); their loads are emitted inside the step loop, each marked
`mlc.operand = "lhs"` or `"rhs"`, with indices `tile origin + in-tile coordinate`: affine in the
thread and the counters, which is what `loop-promote-shared` needs to find the boxes a K iteration
reads. An operand may also be the `tile.transpose` of a `tile.load` (a transposed operand read in
its stored layout, `mlc.operand_major`): its elements are read one at a time at the swapped
coordinates (`OperandRead`), which loop-promote-shared stages as the stored layout's box.

K loops. An `scf.for` carrying tiles becomes an `scf.for` carrying the scalars of their
micro-tiles (broadcast ones expanded); its induction variable is seeded for the index analysis
with its range and step, so a K that is a multiple of BK needs no bounds check along K.

`tile.scatter` (a product stored through a layout chain, `scattered_store.py`) is one guarded
scalar store per micro-tile element at its own position; its index tiles are `tile.range`s of the
block (one chunk of coordinates per row or column) mapped per element, computed once per row where
they broadcast along the columns.

Limits: one output shape per kernel, batch dimensions of size 1, no `tile.reduce`, no stores of
tiles broadcast along a dimension of S. Registers: TM * TN accumulators, TM + TN operands.

The thread layout is `micro_tile_layout.py`'s; what every dot lowering shares (the output shape,
how an operand is read, the K-step body) is `dot_operands.py`'s.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, math, memref, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    IndexType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter, emit_if
from mlc.transforms.lowering.dot_operands import OperandRead, _shape, _tag_loads, k_step_body, operand_read, output_shape
from mlc.transforms.lowering.micro_tile_layout import MicroTileLayout
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering

UNROLLED_DOT_DEPTH = 16
"""A dot's K steps are marked `mlc.unroll` up to this depth. Unrolled (by loop-unroll, after
loop-promote-shared has seen the loop), ptxas issues a step's shared reads while the previous
step's multiply-adds run; on an H200 a hand-written kernel of this shape ran 0.69x cuBLAS with a
loop of single steps and 0.94x unrolled, once A's reads were 16-byte vectors."""

Fragment = list[list[SSAValue]]
"""A thread's micro-tile of a tile value: rows (TM, or 1 when broadcast) of scalars (TN, or 1)."""


@dataclass
class DotKernelLowering(TileKernelLowering):
    """Lowers one tile kernel with dots (see the module docstring)."""

    fragments: ChainMap[SSAValue, Fragment] = field(default_factory=ChainMap)
    """Micro-tiles of tile values; a new child per loop body, so that values made inside stay there."""

    def __post_init__(self) -> None:
        super().__post_init__()
        shape = output_shape(self.kernel)
        override = attributes.MICRO_TILE.integers(self.kernel)
        if override is not None:
            rows, columns = override
            self.layout = MicroTileLayout(shape, int(rows), int(columns))
        else:
            num_warps = self.kernel.num_warps.value.data if self.kernel.num_warps is not None else 4
            self.layout = MicroTileLayout.choose(shape, num_warps)
        self.layout.check(self.kernel)

    # -- structure ----------------------------------------------------------------------------------

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        thread_loop = loop.ParallelOp(self.layout.threads, "thread.x", Region(Block(arg_types=[IndexType()])))
        thread_loop.body.block.args[0].name_hint = "thread"
        bodies[-1].add_op(thread_loop)
        emitter = Emitter(thread_loop.body.block)
        self._start_thread(emitter, thread_loop.body.block.args[0])
        self._lower_block(emitter, self.kernel.body.block)
        self.finish_kernel(result, [thread_loop.body.block, *bodies])
        attributes.MICRO_TILE.write(result, DenseArrayBase.from_list(i64, [self.layout.rows, self.layout.columns]))
        attributes.WARP_TILE.write(result, DenseArrayBase.from_list(i64, list(self.layout.warp_tile)))
        return result

    def _start_thread(self, emitter: Emitter, thread: SSAValue) -> None:
        """The thread's rows and column chunks, and one chunk-access helper per (row, chunk)."""
        layout = self.layout
        lane_rows, lane_columns = layout.lanes
        warp_rows, warp_columns = layout.warp_tile
        lanes_per_warp = emitter.index(lane_rows * lane_columns)
        warps_per_row = emitter.index(layout.thread_columns // lane_columns)
        warp = emitter.emit(arith.DivUIOp(thread, lanes_per_warp))
        lane = emitter.emit(arith.RemUIOp(thread, lanes_per_warp))
        warp.name_hint, lane.name_hint = "warp", "lane"
        lane_columns_value = emitter.index(lane_columns)
        row = emitter.add(
            emitter.emit(arith.MuliOp(emitter.emit(arith.DivUIOp(warp, warps_per_row)), emitter.index(warp_rows))),
            emitter.emit(arith.MuliOp(emitter.emit(arith.DivUIOp(lane, lane_columns_value)), emitter.index(layout.chunk_rows))),
        )
        column = emitter.add(
            emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(warp, warps_per_row)), emitter.index(warp_columns))),
            emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(lane, lane_columns_value)), emitter.index(layout.chunk_columns))),
        )
        row.name_hint, column.name_hint = "row", "column"
        self.zero = emitter.index(0)
        # Row and column chunks interleave at the warp's lane strides, so that the lanes of a warp
        # touch one contiguous span of rows and one of columns per chunk.
        row_stride = lane_rows * layout.chunk_rows
        self.row_indices = [
            emitter.add(row, emitter.index(i // layout.chunk_rows * row_stride + i % layout.chunk_rows)) if i else row
            for i in range(layout.rows)
        ]
        chunk_stride = lane_columns * layout.chunk_columns
        self.column_indices = [
            emitter.add(column, emitter.index(b * chunk_stride)) if b else column
            for b in range(layout.columns // layout.chunk_columns)
        ]
        batch = [self.zero] * (len(layout.shape) - 2)
        self.rows = [
            [self._accesses(layout.shape, layout.chunk_columns, [*batch, row_index, column_index]) for column_index in self.column_indices]
            for row_index in self.row_indices
        ]

    def _accesses(self, shape: tuple[int, ...], width: int, coordinates: list[SSAValue]) -> ChunkAccesses:
        return ChunkAccesses(shape, width, coordinates, self.facts, self.require_alignment)

    def operand_elements(
        self,
        emitter: Emitter,
        read: OperandRead,
        shape: tuple[int, ...],
        width: int,
        coordinates: list[SSAValue],
        origin: list[tuple[SSAValue, SSAValue]] | None = None,
    ) -> list[SSAValue]:
        """`width` elements along the last dimension of a dot operand of `shape` from in-tile
        `coordinates` (one if broadcast along it); a transposed read takes them one at a time.
        `origin`: the load's origin (loop-level, tile-level pairs), if not its own indices'."""
        load = read.load
        memref_value, padding = self.values[load.source], load.padding
        origin = origin if origin is not None else self.origin(load.indices)
        stored = _shape(load.result)
        if not read.transposed:
            return self._accesses(shape, width, coordinates).load(emitter, memref_value, origin, stored, padding)
        *batch, row, column = coordinates
        elements = []
        for offset in range(width):
            at = column if offset == 0 else emitter.add(column, emitter.index(offset))
            elements += self._accesses(stored, 1, [*batch, at, row]).load(emitter, memref_value, origin, stored, padding)
        return elements

    # -- ops in order -------------------------------------------------------------------------------

    def _lower_block(self, emitter: Emitter, block: Block) -> None:
        """Every op of a tile-level block except its terminator; tile values are made on demand."""
        lazy = tile.LoadOp | tile.BroadcastOp | tile.SplatOp | tile.InBoundsOp | tile.ProgramIdOp | tile.TransposeOp | tile.RangeOp
        for op in block.ops:
            if isinstance(op, lazy | tile.ReturnOp | scf.YieldOp):
                continue
            if isinstance(op, tile.StoreOp):
                self._store(emitter, op)
            elif isinstance(op, tile.ScatterOp):
                self._scatter(emitter, op)
            elif isinstance(op, tile.MapOp):
                self._map(emitter, op)
            elif isinstance(op, tile.DotOp):
                self._dot(emitter, op)
            elif isinstance(op, scf.ForOp):
                self._for(emitter, op)
            elif op.dialect_name() == "tile":
                raise PassFailure(op, "convert-tile-to-loop cannot lower this tile op in a kernel with tile.dot")
            elif op.regions or any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)):
                raise PassFailure(op, "convert-tile-to-loop cannot lower this op inside a kernel with tile.dot")
            else:
                clone = op.clone(value_mapper=self.values)
                emitter.builder.insert(clone)
                self.values.update(zip(op.results, clone.results))

    def _for(self, emitter: Emitter, op: scf.ForOp) -> None:
        """A loop carrying tiles carries the scalars of their micro-tiles instead."""
        self.seed_induction_variable(op)
        induction = op.body.block.args[0]
        initial = self._flatten(emitter, op.iter_args)
        body = Block(arg_types=[IndexType(), *(v.type for v in initial)])
        body.args[0].name_hint = induction.name_hint
        self.values[induction] = body.args[0]
        self.fragments = self.fragments.new_child()
        self._unflatten(op.body.block.args[1:], list(body.args[1:]))
        inner = Emitter(body)
        self._lower_block(inner, op.body.block)
        terminator = op.body.block.last_op
        assert isinstance(terminator, scf.YieldOp)
        inner.builder.insert(scf.YieldOp(*self._flatten(inner, terminator.arguments)))
        self.fragments = self.fragments.parents
        new_loop = scf.ForOp(self.values[op.lb], self.values[op.ub], self.values[op.step], initial, Region(body))
        emitter.builder.insert(new_loop)
        self._unflatten(op.results, list(new_loop.results))

    def _flatten(self, emitter: Emitter, values: Sequence[SSAValue]) -> list[SSAValue]:
        """Scalars as they are, tiles as the scalars of their full micro-tiles, row by row."""
        flat: list[SSAValue] = []
        for value in values:
            if isinstance(value.type, tile.TileType):
                flat += [element for row in self._full(self.materialize(emitter, value)) for element in row]
            else:
                flat.append(self.values[value])
        return flat

    def _unflatten(self, targets: Sequence[SSAValue], flat: list[SSAValue]) -> None:
        position = 0
        layout = self.layout
        for target in targets:
            if isinstance(target.type, tile.TileType):
                count = layout.rows * layout.columns
                elements = flat[position : position + count]
                for element in elements:
                    element.name_hint = target.name_hint
                self.fragments[target] = [elements[i : i + layout.columns] for i in range(0, count, layout.columns)]
                position += count
            else:
                self.values[target] = flat[position]
                position += 1

    def _full(self, fragment: Fragment) -> Fragment:
        """A fragment with every row and column explicit (broadcast ones repeated)."""
        rows = fragment * self.layout.rows if len(fragment) == 1 else fragment
        return [row * self.layout.columns if len(row) == 1 else list(row) for row in rows]

    # -- tile values as micro-tiles -----------------------------------------------------------------

    def materialize(self, emitter: Emitter, value: SSAValue) -> Fragment:
        """The thread's micro-tile of a tile value; loads and broadcasts are emitted at first use."""
        if value in self.fragments:
            return self.fragments[value]
        owner = value.owner
        if isinstance(owner, tile.LoadOp):
            result = self._per_row(value, lambda rows: rows.load(
                emitter, self.values[owner.source], self.origin(owner.indices), _shape(value), owner.padding
            ))
        elif isinstance(owner, tile.BroadcastOp):
            result = self.materialize(emitter, owner.source)
        elif isinstance(owner, tile.SplatOp):
            result = [[self.values[owner.value]]]
        elif isinstance(owner, tile.InBoundsOp):
            result = self._per_row(value, lambda rows: rows.in_bounds(
                emitter, owner.bounds_shape(), self.origin(owner.indices), _shape(value)
            ))
        elif isinstance(owner, tile.RangeOp):
            result = self._per_row(value, lambda rows: rows.range(emitter, self.values[owner.start], owner.axis.value.data, _shape(value)))
        else:
            raise PassFailure(owner if isinstance(owner, Operation) else self.kernel, "unsupported tile value in a kernel with tile.dot")
        self.fragments[value] = result
        return result

    def _per_row(self, value: SSAValue, access: Callable[[ChunkAccesses], list[SSAValue]]) -> Fragment:
        """Per micro-tile row, the accesses of its chunks; one row (chunk) where the tile broadcasts."""
        shape = _shape(value)
        broadcast_rows = len(shape) < 2 or (shape[-2] == 1 and self.layout.shape[-2] != 1)
        broadcast_columns = shape[-1] == 1 and self.layout.shape[-1] != 1
        rows = self.rows[:1] if broadcast_rows else self.rows
        return [[element for chunk in (row[:1] if broadcast_columns else row) for element in access(chunk)] for row in rows]

    def _map(self, emitter: Emitter, op: tile.MapOp) -> None:
        inputs = [self.materialize(emitter, value) for value in op.inputs]
        rows = max([len(fragment) for fragment in inputs], default=1)
        columns = max([len(row) for fragment in inputs for row in fragment], default=1)
        results: list[Fragment] = [[[] for _ in range(rows)] for _ in op.outputs]
        for i in range(rows):
            for j in range(columns):
                arguments = [_element(fragment, i, j) for fragment in inputs]
                for index, element in enumerate(self.clone_scalar_body(emitter, op.body.block, arguments)):
                    results[index][i].append(element)
        for output, fragment in zip(op.outputs, results):
            self.fragments[output] = fragment

    def _store(self, emitter: Emitter, op: tile.StoreOp) -> None:
        shape, full = _shape(op.value), self.layout.shape
        aligned = (1,) * (len(full) - len(shape)) + shape
        if any(size == 1 and whole != 1 for size, whole in zip(aligned, full)):
            raise PassFailure(op, "stores of tiles broadcast along a dimension are not supported in a kernel with tile.dot")
        fragment = self._full(self.materialize(emitter, op.value))
        width = self.layout.chunk_columns
        for chunks, elements in zip(self.rows, fragment):
            for position, chunk in enumerate(chunks):
                chunk.store(emitter, elements[position * width : (position + 1) * width], self.values[op.dest], self.origin(op.indices), shape)

    def _scatter(self, emitter: Emitter, op: tile.ScatterOp) -> None:
        """One guarded scalar store per element of the thread's micro-tile, at its own position
        (indices outside `dest`, -1 included, drop the element)."""
        fragment = self._full(self.materialize(emitter, op.value))
        positions = [self._full(self.materialize(emitter, index)) for index in op.indices]
        dest = self.values[op.dest]
        bounds = dest.type.get_shape()  # type: ignore[attr-defined]
        for i, row in enumerate(fragment):
            for j, element in enumerate(row):
                at = [position[i][j] for position in positions]
                inside = emitter.all_of([emitter.below(index, bound) for index, bound in zip(at, bounds)])

                def store(inner: Emitter, value: SSAValue = element, at: list[SSAValue] = at) -> list[SSAValue]:
                    inner.builder.insert(memref.StoreOp.get(value, dest, at))
                    return []

                emit_if(emitter, inside, [], store, None)

    # -- tile.dot -----------------------------------------------------------------------------------

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        """acc += lhs @ rhs, one step of K at a time (see the module docstring)."""
        accumulator = [element for row in self._full(self.materialize(emitter, op.acc)) for element in row]
        lhs, rhs = operand_read(op, "lhs"), operand_read(op, "rhs")
        depth = _shape(op.lhs)[-1]
        if depth == 1:
            result = self._dot_step(emitter, op, lhs, rhs, emitter.index(0), accumulator)
        else:
            body, inner = k_step_body(op, accumulator)
            inner.builder.insert(scf.YieldOp(*self._dot_step(inner, op, lhs, rhs, body.args[0], list(body.args[1:]))))
            steps = scf.ForOp(emitter.index(0), emitter.index(depth), emitter.index(1), accumulator, Region(body))
            attributes.DOT.write(steps, DenseArrayBase.from_list(i64, [self.layout.rows, self.layout.columns]))
            if depth <= UNROLLED_DOT_DEPTH:
                attributes.UNROLL.write(steps, UnitAttr())
            emitter.builder.insert(steps)
            result = list(steps.results)
        columns = self.layout.columns
        for element in result:
            element.name_hint = op.result.name_hint
        self.fragments[op.result] = [result[i : i + columns] for i in range(0, len(result), columns)]

    def _dot_step(
        self, emitter: Emitter, op: tile.DotOp, lhs: OperandRead, rhs: OperandRead, offset: SSAValue, accumulator: list[SSAValue]
    ) -> list[SSAValue]:
        """Loads the step's lhs column and rhs row pieces and adds their products to the accumulator."""
        layout = self.layout
        lhs_shape, rhs_shape = _shape(op.lhs), _shape(op.rhs)
        batch = [self.zero] * (len(lhs_shape) - 2)
        block = emitter.builder.insertion_point.block
        first = block.last_op
        a = []
        for row in self.row_indices:
            a += self._widen(emitter, self.operand_elements(emitter, lhs, lhs_shape, 1, [*batch, row, offset]))
        _tag_loads(block, first.next_op if first is not None else block.first_op, "lhs")
        first = block.last_op
        b = []
        for column in self.column_indices:
            b += self._widen(emitter, self.operand_elements(emitter, rhs, rhs_shape, layout.chunk_columns, [*batch, offset, column]))
        _tag_loads(block, first.next_op if first is not None else block.first_op, "rhs")
        result = list(accumulator)
        for i in range(layout.rows):
            for j in range(layout.columns):
                position = i * layout.columns + j
                result[position] = emitter.emit(math.FmaOp(a[i], b[j], result[position]))
        return result

    @staticmethod
    def _widen(emitter: Emitter, elements: list[SSAValue]) -> list[SSAValue]:
        """Operand elements in f32 (f16 widens exactly)."""
        return [e if isinstance(e.type, Float32Type) else emitter.emit(arith.ExtFOp(e, f32)) for e in elements]


def _element(fragment: Fragment, row: int, column: int) -> SSAValue:
    """Element (row, column) of a fragment, reading broadcast rows and columns at 0."""
    elements = fragment[row if len(fragment) > 1 else 0]
    return elements[column if len(elements) > 1 else 0]


def lower_dot_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return DotKernelLowering(kernel, vector_bytes).lower()
