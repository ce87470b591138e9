"""GEMM-chain tile kernels lowered to tensor cores: FlashAttention-2's warp structure.

`convert-tile-to-loop{tensor-cores=true}` hands an attention kernel (`mlc.chain`, built by
`attention_kernel.py`) here instead of to `chain_loop.py` when `chain_mma_applies`: both
products take f16 or bf16 operands with f32 accumulation, the right-hand operands are zero-padded
`tile.load`s, and every tile's rows are the block's BM (a multiple of 16) or 1 and its columns a
multiple of 8 or 1 (the head dims padded to powers of two of at least 16, BN >= 16). With
`wgmma=true` a kernel whose plan asks for warpgroup products goes to `chain_wgmma.py`, which
subclasses this lowering (warps of 16 rows) and replaces the products only (`_dot`).

Layout. The block has BM / W warps (`mlc.warp_grid = [BM / W, 1]`), W the chain plan's
`warp_rows` (16, or 32: FlashAttention-2's warps of two m16 rows, which share each B register
loaded from shared memory, halving the ldmatrix traffic of K and V per product); warp w owns query
rows Ww .. Ww + W - 1 of every row tile and lane l (g = l / 4, t = l % 4) holds, of a tile with C
columns, rows Ww + g + 8i (i < W / 8) at columns 8j + 2t and 8j + 2t + 1 for j < C / 8: the
`loop.mma_sync` m16n8 accumulator layout of each of its m16 rows, whatever the tile (a thread's
*fragment*: W / 8 rows of C / 4 scalars; a tile of one row or one column holds one scalar
there). So:

* the score tile S = Q Kt comes out of the first product in this layout, and the scale/mask maps,
  the exponentials and the rescaling of the accumulator are per-element code on the fragment;
* `tile.reduce` along the rows (the block max, the block sum) combines the thread's C / 4
  elements of each row (a balanced tree), then the 4 lanes of the quad that share the row with
  a `loop.all_reduce` over the thread bits 0 and 1 (two shuffles on the GPU);
* a product's left operand is any fragment: the accumulator layout of two neighbouring n-tiles is
  the m16n8k16 A layout, so registers a0..a3 of the 16-deep slice s of m16 row m are the pairs
  (row 2m, elements 4s, 4s + 1), (row 2m + 1, the same), (row 2m, 4s + 2, 4s + 3), (row 2m + 1,
  the same): Q is loaded once into its fragment (outside the key loop), and the probabilities P,
  rounded to the operand type by the kernel's map, feed the second product directly, never
  leaving registers; each B register loaded serves the warp's W / 16 m16 rows;
* a product's right operand (Kt [D, BN], V [BN, Dv], both K x N row-major) is read with
  `loop.ldmatrix x4 trans` per pair of n-tiles (x2 for an odd last one) of each 16-deep slice,
  lane l addressing row 16s + (l % 8) + 8 ((l / 8) % 2) at column 8 (l / 16) of the pair: as the
  matmul's B (`matmul_mma.py`). K read in place (a `tile.transpose` of its [BN, D] block, the
  chain's `key_transpose`) is that block's N x K rows: `loop.ldmatrix x4` without `trans`, lane l
  at stored row 8n + (l % 8) + 8 (l / 16), column 16s + 8 ((l / 8) % 2), as the matmul reads a
  transposed B. `loop-promote-shared` stages both in shared memory per key block
  with `mlc.pipeline_stages` stages of cp.async copies (`async_pipeline.py`): the next blocks'
  K and V land while this one is computed;
* loads of the other tiles (Q, masks) and the store of O move a thread's column pairs with
  `chunk_access.py` (masked where the index analysis cannot prove them in bounds); `tile.range`
  (a causal mask's positions) gives the thread's rows or columns.

The products run slice by slice in increasing k with f32 fused multiply-adds (`loop.mma_sync`'s
definition, `tile.dot`'s order), so the interpreters check this lowering exactly against the
tile level up to the reductions' order (a tree of the thread's elements, then the quad's
butterfly), which reassociates the sums of the softmax only.

Limits: one matrix per program (batch dimensions of the tiles 1); no reduction of a tile
broadcast along its columns; the slices are emitted unrolled (D / 16 x BN / 8 + BN / 16 x Dv / 8
steps per key block).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    IndexType,
    IntegerAttr,
    StringAttr,
    VectorType,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.shared_memory_promotion import STAGED_SHARED_MEMORY_BYTES
from mlc.transforms.analysis.thread_layout import used_from_outside
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter
from mlc.transforms.lowering.matmul_mma import INSTRUCTION, LDMATRIX_PADDING, pack_pair
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering
from mlc.transforms.lowering.tile_reductions import all_reduce, combine_tree

Fragment = list[list[SSAValue]]
"""A thread's part of a row tile: its rows (2, or 1 when the tile has one row) of scalars (C / 4, or
1 when the tile has one column), element 2j + e at column 8j + 2t + e."""

QUAD_LANES = 0b11
"""The thread bits that tell apart the 4 lanes holding one row of an accumulator (t = l % 4)."""

MAX_PIPELINE_STAGES = 3


def _shape(value: SSAValue) -> tuple[int, ...]:
    return value.type.get_shape()  # type: ignore[attr-defined]


def _element_type(value: SSAValue) -> object:
    return value.type.element_type  # type: ignore[attr-defined]


def _zero_padded_load(value: SSAValue) -> tuple[tile.LoadOp, bool] | None:
    """The zero-padded `tile.load` a dot operand is, or is the `tile.transpose` of (True: its
    stored block, K [BN, D], is the operand transposed); None otherwise."""
    owner = value.owner
    transposed = isinstance(owner, tile.TransposeOp)
    if transposed:
        owner = owner.source.owner  # type: ignore[union-attr]
    if not isinstance(owner, tile.LoadOp) or (owner.padding is not None and owner.padding.value.data != 0):
        return None
    return owner, transposed


def _operand_values(kernel: tile.KernelOp) -> set[SSAValue]:
    """The dots' right-hand operands and the loads they transpose: read by ldmatrix only."""
    rhs = [op.rhs for op in kernel.walk() if isinstance(op, tile.DotOp)]
    return {*rhs, *(value.owner.source for value in rhs if isinstance(value.owner, tile.TransposeOp))}


def _block_rows(kernel: tile.KernelOp) -> int | None:
    rows = {_shape(op.acc)[-2] for op in kernel.walk() if isinstance(op, tile.DotOp)}
    return rows.pop() if len(rows) == 1 else None


def warp_rows(kernel: tile.KernelOp, block_rows: int) -> int:
    """The query rows each warp owns: the chain plan's `warp_rows` where it divides the block's
    rows, else 16 (one m16 instruction row)."""
    plan = attributes.CHAIN_PLAN.read(kernel)
    chosen = plan.data.get("warp_rows") if isinstance(plan, DictionaryAttr) else None
    rows = chosen.value.data if isinstance(chosen, IntegerAttr) else INSTRUCTION[0]
    return rows if block_rows % rows == 0 else INSTRUCTION[0]


def chain_mma_applies(kernel: tile.KernelOp) -> bool:
    """Whether the chain kernel's products and tiles fit the warp layout (see the module docstring)."""
    dots = [op for op in kernel.walk() if isinstance(op, tile.DotOp)]
    block_rows = _block_rows(kernel)
    if not dots or block_rows is None or block_rows % INSTRUCTION[0]:
        return False
    for dot in dots:
        lhs, rhs = _element_type(dot.lhs), _element_type(dot.rhs)
        if not isinstance(lhs, Float16Type | BFloat16Type) or lhs != rhs or not isinstance(_element_type(dot.acc), Float32Type):
            return False
        if _zero_padded_load(dot.rhs) is None or _shape(dot.lhs)[-1] % INSTRUCTION[2] or _shape(dot.acc)[-1] % INSTRUCTION[1]:
            return False
    operands = _operand_values(kernel)
    for op in kernel.walk():
        for value in (*op.operands, *op.results):
            if isinstance(value.type, tile.TileType) and value not in operands:
                *batch, rows, columns = _shape(value)
                if any(size != 1 for size in batch) or rows not in (1, block_rows):
                    return False
                if columns != 1 and columns % INSTRUCTION[1]:
                    return False
    return True


def pipeline_stages(kernel: tile.KernelOp) -> int:
    """As many stages (up to 3, at least 2) as the right-hand operand tiles of one key block fit
    `STAGED_SHARED_MEMORY_BYTES` with their rows padded for ldmatrix."""
    stage_bytes = 0
    for dot in (op for op in kernel.walk() if isinstance(op, tile.DotOp)):
        rows, columns = _shape(dot.rhs)[-2:]
        stage_bytes += 2 * rows * (columns + LDMATRIX_PADDING)
    return max(2, min(MAX_PIPELINE_STAGES, STAGED_SHARED_MEMORY_BYTES // max(1, stage_bytes)))


@dataclass
class ChainMmaLowering(TileKernelLowering):
    """Lowers one attention kernel to warps of `loop.mma_sync` (see the module docstring)."""

    fragments: ChainMap[SSAValue, Fragment] = field(default_factory=ChainMap)
    """Fragments of tile values; a new child per loop body, so that values made inside stay there."""

    def lower(self) -> loop.KernelOp:
        block_rows = _block_rows(self.kernel)
        assert block_rows is not None
        self.block_rows = block_rows
        self.warp_rows = self.choose_warp_rows(block_rows)
        warps = block_rows // self.warp_rows
        self.dot_operands = _operand_values(self.kernel)
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        thread_loop = loop.ParallelOp(warps * loop.WARP_SIZE, "thread.x", Region(Block(arg_types=[IndexType()])))
        thread_loop.body.block.args[0].name_hint = "thread"
        bodies[-1].add_op(thread_loop)
        emitter = Emitter(thread_loop.body.block)
        self._start_thread(emitter, thread_loop.body.block.args[0])
        self._lower_block(emitter, self.kernel.body.block)
        self.finish_kernel(result, [thread_loop.body.block, *bodies])
        attributes.CHAIN.write(result, attributes.CHAIN.read(self.kernel) or StringAttr("attention"))
        attributes.MMA.write(result, DenseArrayBase.from_list(i64, list(INSTRUCTION)))
        attributes.WARP_GRID.write(result, DenseArrayBase.from_list(i64, [warps, 1]))
        stages = attributes.PIPELINE_STAGES.read(self.kernel)
        attributes.PIPELINE_STAGES.write(result, stages if stages is not None else IntegerAttr(pipeline_stages(self.kernel), i64))
        return result

    def choose_warp_rows(self, block_rows: int) -> int:
        """The query rows each warp owns (`warp_rows`)."""
        return warp_rows(self.kernel, block_rows)

    def _start_thread(self, emitter: Emitter, thread: SSAValue) -> None:
        """The lane's two rows (g, g + 8 of its warp's 16) and its column pair (2t), ldmatrix's lane
        coordinates."""
        warp = emitter.emit(arith.DivUIOp(thread, emitter.index(loop.WARP_SIZE)))
        lane = emitter.emit(arith.RemUIOp(thread, emitter.index(loop.WARP_SIZE)))
        group = emitter.emit(arith.DivUIOp(lane, emitter.index(4)))
        pair = emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(lane, emitter.index(4))), emitter.index(2)))
        warp.name_hint, lane.name_hint, group.name_hint, pair.name_hint = "warp", "lane", "group", "pair"
        row = emitter.add(emitter.emit(arith.MuliOp(warp, emitter.index(self.warp_rows))), group)
        row.name_hint = "row"
        self.zero = emitter.index(0)
        self.pair = pair
        self.rows = [row, *(emitter.add(row, emitter.index(8 * i)) for i in range(1, self.warp_rows // 8))]
        eighth = emitter.emit(arith.DivUIOp(lane, emitter.index(8)))
        self.ldmatrix_row = emitter.add(
            emitter.emit(arith.RemUIOp(lane, emitter.index(8))),
            emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(eighth, emitter.index(2))), emitter.index(8))),
        )
        self.ldmatrix_column = emitter.emit(arith.MuliOp(emitter.emit(arith.DivUIOp(lane, emitter.index(16))), emitter.index(8)))
        self.ldmatrix_row.name_hint, self.ldmatrix_column.name_hint = "ldmatrix_row", "ldmatrix_column"
        # A transposed operand's stored block swaps the two: row (l % 8) + 8 (l / 16), column 8 ((l / 8) % 2).
        self.ldmatrix_stored_rows = emitter.emit(arith.RemUIOp(lane, emitter.index(8)))
        self.ldmatrix_stored_row = emitter.add(self.ldmatrix_stored_rows, self.ldmatrix_column)
        self.ldmatrix_stored_column = emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(eighth, emitter.index(2))), emitter.index(8)))
        self.columns: dict[int, SSAValue] = {0: pair}
        self.column_emitter = emitter

    def _column(self, tile_index: int) -> SSAValue:
        """8 * tile_index + 2t, made once at the thread's start."""
        if tile_index not in self.columns:
            self.columns[tile_index] = self.column_emitter.add(self.pair, self.column_emitter.index(8 * tile_index))
        return self.columns[tile_index]

    # -- ops in order -------------------------------------------------------------------------------

    def _lower_block(self, emitter: Emitter, block: Block) -> None:
        lazy = tile.LoadOp | tile.TransposeOp | tile.BroadcastOp | tile.SplatOp | tile.InBoundsOp | tile.RangeOp | tile.ProgramIdOp
        for op in block.ops:
            if isinstance(op, lazy | tile.ReturnOp | scf.YieldOp):
                continue
            if isinstance(op, tile.StoreOp):
                self._store(emitter, op)
            elif isinstance(op, tile.MapOp):
                self._map(emitter, op)
            elif isinstance(op, tile.ReduceOp):
                self._reduce(emitter, op)
            elif isinstance(op, tile.DotOp):
                self._dot(emitter, op)
            elif isinstance(op, scf.ForOp):
                self._for(emitter, op)
            elif op.dialect_name() == "tile" or op.regions or any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)):
                raise PassFailure(op, "a tensor-core chain kernel cannot hold this op")
            else:
                clone = op.clone(value_mapper=self.values)
                emitter.builder.insert(clone)
                self.values.update(zip(op.results, clone.results))

    def _for(self, emitter: Emitter, op: scf.ForOp) -> None:
        """A loop carrying tiles carries their fragments' scalars; tiles from outside that its body
        reads (Q) are made before it, once."""
        for value in used_from_outside(op):
            if value not in self.dot_operands:
                self.materialize(emitter, value)
        self.seed_induction_variable(op)
        initial = [element for value in op.iter_args for row in self._full(emitter, value) for element in row]
        body = Block(arg_types=[IndexType(), *(v.type for v in initial)])
        body.args[0].name_hint = op.body.block.args[0].name_hint
        self.values[op.body.block.args[0]] = body.args[0]
        self.fragments = self.fragments.new_child()
        self._unflatten(op.body.block.args[1:], list(body.args[1:]))
        inner = Emitter(body)
        self._lower_block(inner, op.body.block)
        terminator = op.body.block.last_op
        assert isinstance(terminator, scf.YieldOp)
        inner.builder.insert(scf.YieldOp(*(e for value in terminator.arguments for row in self._full(inner, value) for e in row)))
        self.fragments = self.fragments.parents
        new_loop = scf.ForOp(self.values[op.lb], self.values[op.ub], self.values[op.step], initial, Region(body))
        emitter.builder.insert(new_loop)
        self._unflatten(op.results, list(new_loop.results))

    def _width(self, value: SSAValue) -> int:
        """Scalars per fragment row of a full tile of `value`'s shape."""
        columns = _shape(value)[-1]
        return 1 if columns == 1 else columns // 4

    def _unflatten(self, targets: Sequence[SSAValue], flat: list[SSAValue]) -> None:
        position = 0
        for target in targets:
            width = self._width(target)
            rows = [flat[position + i * width : position + (i + 1) * width] for i in range(len(self.rows))]
            for row in rows:
                for element in row:
                    element.name_hint = target.name_hint
            self.fragments[target] = rows
            position += len(self.rows) * width

    def _full(self, emitter: Emitter, value: SSAValue) -> Fragment:
        """The fragment of `value` with both rows and every column explicit."""
        fragment = self.materialize(emitter, value)
        width = self._width(value)
        rows = fragment * len(self.rows) if len(fragment) == 1 else fragment
        return [row * width if len(row) == 1 else list(row) for row in rows]

    # -- tile values as fragments -------------------------------------------------------------------

    def _accesses(self, shape: tuple[int, ...], row: SSAValue, tile_index: int) -> ChunkAccesses:
        full = (*shape[:-2], self.block_rows, max(2, shape[-1]))
        coordinates = [*(self.zero for _ in shape[:-2]), row, self._column(tile_index)]
        return ChunkAccesses(full, 2, coordinates, self.facts, self.require_alignment)

    def _per_pair(self, value: SSAValue, access) -> Fragment:  # type: ignore[no-untyped-def]
        """Per fragment row, the thread's column pairs of a tile access (one scalar standing for a
        pair is repeated; a tile of one row or one column takes one access per row or one row)."""
        rows, columns = _shape(value)[-2:]
        fragment = []
        for row in self.rows[:1] if rows == 1 else self.rows:
            if columns == 1:
                fragment.append(access(self._accesses(_shape(value), row, 0))[:1])
                continue
            elements: list[SSAValue] = []
            for tile_index in range(columns // 8):
                pair = access(self._accesses(_shape(value), row, tile_index))
                elements += pair if len(pair) == 2 else pair * 2
            fragment.append(elements)
        return fragment

    def materialize(self, emitter: Emitter, value: SSAValue) -> Fragment:
        """The thread's fragment of a tile value; loads and masks are emitted at first use."""
        if value in self.fragments:
            return self.fragments[value]
        owner = value.owner
        if isinstance(owner, tile.LoadOp):
            source, origin, padding = self.values[owner.source], self.origin(owner.indices), owner.padding
            result = self._per_pair(value, lambda chunk: chunk.load(emitter, source, origin, _shape(value), padding))
        elif isinstance(owner, tile.InBoundsOp):
            bounds, origin = owner.bounds_shape(), self.origin(owner.indices)
            result = self._per_pair(value, lambda chunk: chunk.in_bounds(emitter, bounds, origin, _shape(value)))
        elif isinstance(owner, tile.BroadcastOp):
            source_shape, shape = _shape(owner.source), _shape(value)
            if len(source_shape) != len(shape):
                raise PassFailure(owner, "a tensor-core chain kernel broadcasts along its rows or columns only")
            result = self.materialize(emitter, owner.source)
        elif isinstance(owner, tile.SplatOp):
            result = [[self.values[owner.value]]]
        elif isinstance(owner, tile.RangeOp):
            result = self._positions(emitter, owner)
        else:
            raise PassFailure(owner if isinstance(owner, Operation) else self.kernel, "unsupported tile value in a tensor-core chain kernel")
        self.fragments[value] = result
        return result

    def _positions(self, emitter: Emitter, op: tile.RangeOp) -> Fragment:
        """`tile.range` along the rows (the thread's two rows) or the columns (its column pairs)."""
        shape = _shape(op.result)
        start = self.values[op.start]
        axis = op.axis.value.data
        if axis == len(shape) - 2 and shape[-2] != 1:
            return [[emitter.add(start, row)] for row in self.rows]
        if axis == len(shape) - 1 and shape[-1] != 1:
            columns = [emitter.add(start, self._column(j)) for j in range(shape[-1] // 8)]
            return [[element for first in columns for element in (first, emitter.add(first, emitter.index(1)))]]
        return [[start]]

    def _map(self, emitter: Emitter, op: tile.MapOp) -> None:
        inputs = [self.materialize(emitter, value) for value in op.inputs]
        rows = max([len(fragment) for fragment in inputs], default=1)
        columns = max([len(row) for fragment in inputs for row in fragment], default=1)
        results: list[Fragment] = [[[] for _ in range(rows)] for _ in op.outputs]
        for i in range(rows):
            for j in range(columns):
                arguments = [fragment[i if len(fragment) > 1 else 0][j if len(fragment[0]) > 1 else 0] for fragment in inputs]
                for index, element in enumerate(self.clone_scalar_body(emitter, op.body.block, arguments)):
                    results[index][i].append(element)
        for output, fragment in zip(op.outputs, results):
            self.fragments[output] = fragment

    def _reduce(self, emitter: Emitter, op: tile.ReduceOp) -> None:
        """Along the rows: the thread's elements as a tree, then the quad's butterfly."""
        shape = _shape(op.source)
        if op.axis.value.data != len(shape) - 1:
            raise PassFailure(op, "a tensor-core chain kernel reduces along its last axis only")
        fragment = self.materialize(emitter, op.source)
        if shape[-1] != 1 and any(len(row) == 1 for row in fragment):
            raise PassFailure(op, "a tensor-core chain kernel cannot reduce a tile broadcast along its columns")
        combine = lambda pair: self.clone_scalar_body(emitter, op.body.block, pair)[0]
        reduced = []
        for row in fragment:
            partial = combine_tree(list(row), combine)
            reduced.append([all_reduce(emitter, op, partial, QUAD_LANES) if shape[-1] != 1 else partial])
        self.fragments[op.result] = reduced

    def _store(self, emitter: Emitter, op: tile.StoreOp) -> None:
        rows, columns = _shape(op.value)[-2:]
        if rows == 1 or columns == 1:
            raise PassFailure(op, "a tensor-core chain kernel stores whole row tiles only")
        fragment = self._full(emitter, op.value)
        destination, origin = self.values[op.dest], self.origin(op.indices)
        for row, elements in zip(self.rows, fragment):
            for tile_index in range(columns // 8):
                chunk = self._accesses(_shape(op.value), row, tile_index)
                chunk.store(emitter, elements[2 * tile_index : 2 * tile_index + 2], destination, origin, _shape(op.value))

    # -- products -----------------------------------------------------------------------------------

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        """acc += lhs @ rhs: per 16-deep slice, the A registers from the lhs fragment, the B
        registers by ldmatrix, one `loop.mma_sync` per n-tile (see the module docstring)."""
        accumulator = self._full(emitter, op.acc)
        lhs = self._full(emitter, op.lhs)
        read = _zero_padded_load(op.rhs)
        assert read is not None
        rhs, transposed = read
        register_type = VectorType(_element_type(op.lhs), [2])
        tiles_n = _shape(op.acc)[-1] // INSTRUCTION[1]
        *batch, row_origin, column_origin = (self.values[index] for index in rhs.indices)
        for slice_index in range(_shape(op.lhs)[-1] // INSTRUCTION[2]):
            first = 4 * slice_index
            a = [
                [pack_pair(emitter, lhs[2 * m + row][first + half : first + half + 2]) for half in (0, 2) for row in (0, 1)]
                for m in range(len(self.rows) // 2)
            ]
            depth = emitter.index(INSTRUCTION[2] * slice_index)
            b: list[list[SSAValue]] = []
            for n in range(0, tiles_n, 2):
                count = 4 if n + 1 < tiles_n else 2
                indices = self._operand_indices(emitter, batch, (row_origin, column_origin), depth, emitter.index(8 * n), count, transposed)
                registers = self._ldmatrix(emitter, rhs, indices, count, register_type, not transposed)
                b += [registers[:2], registers[2:]] if count == 4 else [registers]
            for m, a_registers in enumerate(a):  # the warp's m16 rows share the B registers
                top, bottom = accumulator[2 * m], accumulator[2 * m + 1]
                for n in range(tiles_n):
                    step = emitter.builder.insert(loop.MmaSyncOp(a_registers, b[n], [*top[2 * n : 2 * n + 2], *bottom[2 * n : 2 * n + 2]]))
                    top[2 * n : 2 * n + 2], bottom[2 * n : 2 * n + 2] = step.results[:2], step.results[2:]
        for row in accumulator:
            for element in row:
                element.name_hint = op.result.name_hint
        self.fragments[op.result] = accumulator

    def _operand_indices(
        self, emitter: Emitter, batch: list[SSAValue], origin: tuple[SSAValue, SSAValue], depth: SSAValue, column: SSAValue, count: int, transposed: bool,
    ) -> list[SSAValue]:
        """Where the lane's ldmatrix row starts, for the 16-deep slice at `depth` and the n-tiles
        from `column`: Kt [D, BN] (or V) at row depth + ldmatrix_row, column + ldmatrix_column (x4);
        a transposed operand's stored block K [BN, D] at the swapped place, row column + (l % 8) +
        8 (l / 16) (x2: l % 8), column depth + 8 ((l / 8) % 2), as `matmul_mma.py` reads one."""
        row_origin, column_origin = origin
        if transposed:
            stored_row = self.ldmatrix_stored_row if count == 4 else self.ldmatrix_stored_rows
            return [*batch, emitter.add(row_origin, emitter.add(column, stored_row)), emitter.add(column_origin, emitter.add(depth, self.ldmatrix_stored_column))]
        wide = emitter.add(column, self.ldmatrix_column) if count == 4 else column
        return [*batch, emitter.add(row_origin, emitter.add(depth, self.ldmatrix_row)), emitter.add(column_origin, wide)]

    def _ldmatrix(
        self, emitter: Emitter, rhs: tile.LoadOp, indices: list[SSAValue], count: int, register_type: VectorType, trans: bool,
    ) -> list[SSAValue]:
        step = emitter.builder.insert(loop.LdMatrixOp(self.values[rhs.source], indices, count, trans, register_type))
        attributes.OPERAND.write(step, StringAttr("rhs"))
        return list(step.results)


def lower_chain_mma_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return ChainMmaLowering(kernel, vector_bytes).lower()
