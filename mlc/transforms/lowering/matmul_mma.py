"""Tile kernels with `tile.dot`, lowered to loops for tensor cores: warps of `loop.mma_sync` steps.

`convert-tile-to-loop{tensor-cores=true}` hands a kernel here instead of to `matmul_loop.py` when
its dots can run on tensor cores (`mma_applies`): f16 or bf16 operands (both alike), or f32
operands of a dot whose precision is "tf32" or "3xtf32" (`mlc/dialects/precision.py`), f32
accumulation, a block of rows and columns that are multiples of 16 and 8 and a K step that is a
multiple of the instruction's depth (16; 8 for TF32). Everything else about the kernel (its grid, K loop, epilogue maps, masked loads
and stores) is lowered as `DotKernelLowering` does; only the thread layout and the dot differ.

Layout (`MmaLayout.choose`). The kernel's warps form a WM x WN grid over the BM x BN block (the
one of fewest fragment loads per step, `mlc.warp_grid`); each warp owns a BM/WM x BN/WN *warp
tile* (`mlc.warp_tile`) made of MT x NT instruction tiles of 16 x 8 outputs. A lane `l` of a warp
(g = l / 4, t = l % 4) holds, of each instruction tile, the outputs at rows g and g + 8 and
columns 2t and 2t + 1 (the mma.sync accumulator layout), so a thread's micro-tile
(`mlc.micro_tile`) is 2 MT rows by 2 NT columns, in chunks of two neighbouring columns: the
epilogue's loads, maps and stores work on it as on any micro-tile.

The dot. Per 16-deep slice of the K step (an `scf.for` marked `mlc.dot` and `mlc.unroll`), each
warp loads its registers of A and B, then issues MT x NT `loop.mma_sync` steps. An operand read
straight from a `tile.load` padded with zeros (`ldmatrix_applies`) is loaded with `loop.ldmatrix`:
x4 per instruction row of A (its four 8x8 quarters), x4 `trans` per pair of instruction columns
of a row-major B (x2 for an odd last one); lane l addresses row (l % 8) + 8 ((l / 8) % 2) of
its instruction tile, at column 8 (l / 16). `loop-promote-shared` then stages both operands in
shared memory as row-major tiles copied with 16-byte coalesced loads (it must: ldmatrix reads
only shared memory), padded against bank conflicts. Otherwise each thread loads its registers
of A (4 pairs of K-neighbours per instruction row, `vector<2xT>`) and of B (2 pairs of
K-neighbours per instruction column) with scalar loads, masked where the index analysis cannot
prove them in bounds (padding adds zeros). Either way the loads index the operand tiles with
`tile origin + in-tile coordinate`, affine in the lane, the warp and the counters, which is what
`loop-promote-shared` needs to stage them.
`loop.mma_sync` accumulates in increasing K with f32 fused multiply-adds, the order of
`tile.dot`, so the interpreter checks this lowering exactly.

TF32 (f32 operands). The dot runs in 8-deep slices of `loop.mma_sync m16n8k8` on f32 registers,
one element each: lane (g, t) loads A at rows g, g + 8 and depths t, t + 4 of its instruction
row and B at depths t, t + 4 and column g of its instruction column, with scalar loads as above
(ldmatrix moves 16-bit elements). Each register is rounded to TF32 to nearest, ties away from
zero, as the tile level defines it (`loop.round_tf32`, PTX `cvt.rna.tf32.f32`), so the tensor core's truncation of the low bits changes nothing and the
interpreter checks tf32 exactly. "3xtf32" splits each register into that high part and the
rounded remainder and issues three steps per instruction tile, small products first
(lo x hi, hi x lo, hi x hi); `tile.dot` adds the three products of each k in turn, the slice
adds each product over 8 k, so the two agree within the error bound of three products per term
(`error_bounds`), not bit for bit.

Limits: no f16 accumulation; TF32 operands are not loaded with ldmatrix; the block must give
every warp at least one 16 x 8 tile (fewer warps are used otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Region, SSAValue

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.shared_memory_promotion import SHARED_MEMORY_BYTES
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.dot_operands import (
    OperandRead,
    operand_read,
    _shape,
    _tag_loads,
    k_step_body,
    output_shape,
)
from mlc.transforms.lowering.matmul_loop import DotKernelLowering
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering

INSTRUCTION = (16, 8, 16)
"""M, N, K of one `loop.mma_sync` (PTX mma.sync m16n8k16)."""
TF32_INSTRUCTION = (16, 8, 8)
"""M, N, K of one `loop.mma_sync` on TF32 registers (PTX mma.sync m16n8k8 .tf32)."""
TF32_PRECISIONS = ("tf32", "3xtf32")
"""The precisions of f32 dots that tensor cores compute."""


def _element_type(value: SSAValue) -> object:
    value_type = value.type
    assert isinstance(value_type, tile.TileType)
    return value_type.element_type


def is_tf32_dot(dot: tile.DotOp) -> bool:
    """Whether `dot` multiplies f32 operands at a TF32 precision (see the module docstring)."""
    return isinstance(_element_type(dot.lhs), Float32Type) and dot.precision.data in TF32_PRECISIONS


def instruction(dot: tile.DotOp) -> tuple[int, int, int]:
    """M, N, K of the `loop.mma_sync` steps that run `dot`."""
    return TF32_INSTRUCTION if is_tf32_dot(dot) else INSTRUCTION


def mma_applies(kernel: tile.KernelOp) -> bool:
    """Whether every dot of `kernel` can run on tensor cores (see the module docstring)."""
    dots = [op for op in kernel.walk() if isinstance(op, tile.DotOp)]
    if not dots:
        return False
    for dot in dots:
        rows, columns, depth = instruction(dot)
        lhs, rhs = _element_type(dot.lhs), _element_type(dot.rhs)
        if not (isinstance(lhs, Float16Type | BFloat16Type) or is_tf32_dot(dot)) or lhs != rhs or not isinstance(_element_type(dot.acc), Float32Type):
            return False
        lhs_shape, acc_shape = _shape(dot.lhs), _shape(dot.acc)
        if acc_shape[-2] % rows or acc_shape[-1] % columns or lhs_shape[-1] % depth:
            return False
        if any(size != 1 for size in acc_shape[:-2]):
            return False
    return True


PIPELINE_STAGES = 3
"""The default `mlc.pipeline_stages` of a tensor-core kernel: loop-promote-shared keeps two K steps'
copies in flight while one is computed (fewer where the stages do not fit in shared memory). A
tile.kernel's own `mlc.pipeline_stages` (a tuner's choice) wins."""

LDMATRIX_PADDING = 8
"""The row padding (elements) assumed when checking that ldmatrix operands fit in shared memory;
loop-promote-shared chooses the real one, 8 for the usual 16-32-element rows."""


def _zero_padded_load(dot: tile.DotOp, role: str) -> tile.LoadOp | None:
    """The `tile.load` that the dot's operand is, if it is one (no broadcast) padded with zeros."""
    owner = getattr(dot, role).owner
    if not isinstance(owner, tile.LoadOp):
        return None
    padding = owner.padding
    if padding is not None and padding.value.data != 0:
        return None
    return owner


def _zero_padded_read(dot: tile.DotOp, role: str) -> OperandRead | None:
    """How the dot's operand is read when it is a zero-padded `tile.load`, or the `tile.transpose`
    of one (its stored layout); else None."""
    owner = getattr(dot, role).owner
    transposed = isinstance(owner, tile.TransposeOp)
    load = owner.source.owner if transposed else owner
    if not isinstance(load, tile.LoadOp) or (load.padding is not None and load.padding.value.data != 0):
        return None
    return OperandRead(load, transposed)


def ldmatrix_applies(dot: tile.DotOp) -> bool:
    """Whether both operands of `dot` can be loaded with `loop.ldmatrix` (see the module docstring).

    They must come straight from zero-padded tile loads, and a K step of both operand tiles must
    fit in shared memory with their rows padded.
    """
    if is_tf32_dot(dot) or _zero_padded_read(dot, "lhs") is None or _zero_padded_read(dot, "rhs") is None:
        return False
    *_, rows, depth = _shape(dot.lhs)
    columns = _shape(dot.rhs)[-1]
    element_bytes = 2
    return (rows * (depth + LDMATRIX_PADDING) + depth * (columns + LDMATRIX_PADDING)) * element_bytes <= SHARED_MEMORY_BYTES


@dataclass(frozen=True)
class MmaLayout:
    """How the warps and lanes of a block share its output tile (see the module docstring)."""

    shape: tuple[int, ...]
    warp_rows: int
    """WM: warps along the block's rows."""
    warp_columns: int
    """WN: warps along the block's columns."""

    @staticmethod
    def choose(shape: tuple[int, ...], num_warps: int) -> MmaLayout:
        block_rows, block_columns = shape[-2:]
        rows, columns, _ = INSTRUCTION
        most = max(1, min(num_warps, (block_rows // rows) * (block_columns // columns)))
        warps = 1 << (most.bit_length() - 1)
        candidates = [
            MmaLayout(shape, warp_rows, warps // warp_rows)
            for warp_rows in (1 << b for b in range(warps.bit_length()))
            if block_rows % (warp_rows * rows) == 0 and block_columns % (warps // warp_rows * columns) == 0
        ]
        return min(candidates, key=lambda layout: (layout.tiles[0] + layout.tiles[1], layout.tiles[1]))

    @property
    def warp_tile(self) -> tuple[int, int]:
        return self.shape[-2] // self.warp_rows, self.shape[-1] // self.warp_columns

    @property
    def tiles(self) -> tuple[int, int]:
        """MT x NT: instruction tiles per warp tile."""
        warp_rows, warp_columns = self.warp_tile
        return warp_rows // INSTRUCTION[0], warp_columns // INSTRUCTION[1]

    @property
    def threads(self) -> int:
        return self.warp_rows * self.warp_columns * loop.WARP_SIZE

    @property
    def rows(self) -> int:
        """TM: a thread's output rows (two per instruction tile)."""
        return 2 * self.tiles[0]

    @property
    def columns(self) -> int:
        """TN: a thread's output columns (two neighbours per instruction tile)."""
        return 2 * self.tiles[1]

    @property
    def chunk_columns(self) -> int:
        return 2


@dataclass
class MmaKernelLowering(DotKernelLowering):
    """Lowers one tile kernel whose dots run on tensor cores (see the module docstring)."""

    def __post_init__(self) -> None:
        TileKernelLowering.__post_init__(self)
        num_warps = self.kernel.num_warps.value.data if self.kernel.num_warps is not None else 4
        self.layout = MmaLayout.choose(output_shape(self.kernel), num_warps)  # type: ignore[assignment]

    def lower(self) -> loop.KernelOp:
        result = super().lower()
        dot = next(op for op in self.kernel.walk() if isinstance(op, tile.DotOp))
        attributes.MMA.write(result, DenseArrayBase.from_list(i64, list(instruction(dot))))
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        attributes.WARP_GRID.write(result, DenseArrayBase.from_list(i64, [layout.warp_rows, layout.warp_columns]))
        stages = attributes.PIPELINE_STAGES.read(self.kernel)
        attributes.PIPELINE_STAGES.write(result, stages if stages is not None else IntegerAttr(PIPELINE_STAGES, i64))
        return result

    def _start_thread(self, emitter: Emitter, thread: SSAValue) -> None:
        """The lane's rows (g, g + 8 of each instruction row) and column pairs (2t of each column)."""
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        warp_rows, warp_columns = layout.warp_tile
        _, tiles_n = layout.tiles
        warp = emitter.emit(arith.DivUIOp(thread, emitter.index(loop.WARP_SIZE)))
        lane = emitter.emit(arith.RemUIOp(thread, emitter.index(loop.WARP_SIZE)))
        group = emitter.emit(arith.DivUIOp(lane, emitter.index(4)))
        quad = emitter.emit(arith.RemUIOp(lane, emitter.index(4)))
        pair = emitter.emit(arith.MuliOp(quad, emitter.index(2)))
        warp.name_hint, lane.name_hint, group.name_hint, pair.name_hint = "warp", "lane", "group", "pair"
        self.quad = quad
        warp_columns_value = emitter.index(layout.warp_columns)
        first_row = emitter.emit(arith.MuliOp(emitter.emit(arith.DivUIOp(warp, warp_columns_value)), emitter.index(warp_rows)))
        first_column = emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(warp, warp_columns_value)), emitter.index(warp_columns)))
        row = emitter.add(first_row, group)
        column = emitter.add(first_column, pair)
        row.name_hint, column.name_hint = "row", "column"
        self.zero = emitter.index(0)
        self.pair = pair
        self.warp_origin = (first_row, first_column)
        # ldmatrix: lane l addresses row (l % 8) + 8 ((l / 8) % 2) of a 16-row tile, at column 8 (l / 16).
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
        self.row_indices = [emitter.add(row, emitter.index(8 * i)) if i else row for i in range(layout.rows)]
        self.column_indices = [emitter.add(column, emitter.index(8 * j)) if j else column for j in range(tiles_n)]
        b_column = emitter.add(first_column, group)
        self.b_columns = [emitter.add(b_column, emitter.index(8 * j)) if j else b_column for j in range(tiles_n)]
        batch = [self.zero] * (len(layout.shape) - 2)
        self.rows = [
            [self._accesses(layout.shape, 2, [*batch, row_index, column_index]) for column_index in self.column_indices]
            for row_index in self.row_indices
        ]

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        """acc += lhs @ rhs in 16-deep slices of `loop.mma_sync` steps (see the module docstring)."""
        layout = self.layout
        accumulator = [element for row in self._full(self.materialize(emitter, op.acc)) for element in row]
        depth = _shape(op.lhs)[-1]
        body, inner = k_step_body(op, accumulator)
        inner.builder.insert(scf.YieldOp(*self._mma_slice(inner, op, body.args[0], list(body.args[1:]))))
        step = instruction(op)[2]
        slices = scf.ForOp(emitter.index(0), emitter.index(depth), emitter.index(step), accumulator, Region(body))
        attributes.DOT.write(slices, DenseArrayBase.from_list(i64, [layout.rows, layout.columns]))
        attributes.UNROLL.write(slices, UnitAttr())
        emitter.builder.insert(slices)
        result = list(slices.results)
        for element in result:
            element.name_hint = op.result.name_hint
        columns = layout.columns
        self.fragments[op.result] = [result[i : i + columns] for i in range(0, len(result), columns)]

    def _mma_slice(self, emitter: Emitter, op: tile.DotOp, offset: SSAValue, accumulator: list[SSAValue]) -> list[SSAValue]:
        """One 16-deep slice: the thread's A and B registers, then every instruction tile's step."""
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        tiles_m, _ = layout.tiles
        if ldmatrix_applies(op):
            a_registers, b_registers = self._ldmatrix_registers(emitter, op, offset)
            return self._steps(emitter, a_registers, b_registers, accumulator)
        tf32 = is_tf32_dot(op)
        # A register holds a pair of k-neighbours (f16/bf16) or one f32 (TF32); the second half of
        # the slice starts 8 (4) deeper.
        width, half_depth, lane_depth = (1, 4, self.quad) if tf32 else (2, 8, self.pair)
        lhs, rhs = operand_read(op, "lhs"), operand_read(op, "rhs")
        lhs_shape, rhs_shape = _shape(op.lhs), _shape(op.rhs)
        batch = [self.zero] * (len(lhs_shape) - 2)
        depths = [emitter.add(offset, lane_depth), emitter.add(offset, emitter.add(lane_depth, emitter.index(half_depth)))]
        block = emitter.builder.insertion_point.block
        first = block.last_op
        a_registers = []
        for m in range(tiles_m):
            registers = []
            for k in depths:
                for row in self.row_indices[2 * m : 2 * m + 2]:
                    registers.append(self._register(emitter, self.operand_elements(emitter, lhs, lhs_shape, width, [*batch, row, k])))
            a_registers.append(registers)
        _tag_loads(block, first.next_op if first is not None else block.first_op, "lhs")
        first = block.last_op
        b_registers = []
        for column in self.b_columns:
            registers = []
            for depth in depths:
                elements = []
                for k in [depth, emitter.add(depth, emitter.index(1))][:width]:
                    elements += self.operand_elements(emitter, rhs, rhs_shape, 1, [*batch, k, column])
                registers.append(self._register(emitter, elements))
            b_registers.append(registers)
        _tag_loads(block, first.next_op if first is not None else block.first_op, "rhs")
        if not tf32:
            return self._steps(emitter, a_registers, b_registers, accumulator)
        split = op.precision.data == "3xtf32"
        a_high, a_low = _split_registers(emitter, a_registers, split)
        b_high, b_low = _split_registers(emitter, b_registers, split)
        if split:
            accumulator = self._steps(emitter, a_low, b_high, accumulator)
            accumulator = self._steps(emitter, a_high, b_low, accumulator)
        return self._steps(emitter, a_high, b_high, accumulator)

    @staticmethod
    def _register(emitter: Emitter, elements: Sequence[SSAValue]) -> SSAValue:
        """One mma operand register: a `vector<2xT>` pair, or the f32 itself (TF32)."""
        return elements[0] if len(elements) == 1 else pack_pair(emitter, elements)

    def _ldmatrix_registers(self, emitter: Emitter, op: tile.DotOp, offset: SSAValue) -> tuple[list[list[SSAValue]], list[list[SSAValue]]]:
        """A and B registers of one 16-deep slice, loaded with `loop.ldmatrix` (see the module docstring)."""
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        tiles_m, tiles_n = layout.tiles
        lhs, rhs = _zero_padded_read(op, "lhs"), _zero_padded_read(op, "rhs")
        assert lhs is not None and rhs is not None
        first_row, first_column = self.warp_origin
        register_type = VectorType(_element_type(op.lhs), [2])

        def load(read: OperandRead, row: SSAValue, column: SSAValue, count: int, trans: bool, role: str) -> list[SSAValue]:
            """x`count` matrices of the operand's 16 x 16 (16 x 8 for x2) block at (row, column):
            a transposed operand's stored block at (column, row), with the other `trans`."""
            wide = count == 4  # x2 reads the 16 x 8 block its lanes 0-15 address, the others alike
            if read.transposed:
                stored_row = self.ldmatrix_stored_row if wide else self.ldmatrix_stored_rows
                row, column = emitter.add(column, stored_row), emitter.add(row, self.ldmatrix_stored_column)
            else:
                row, column = emitter.add(row, self.ldmatrix_row), emitter.add(column, self.ldmatrix_column) if wide else column
            *batch, row_origin, column_origin = (self.values[index] for index in read.load.indices)
            indices = [*batch, emitter.add(row_origin, row), emitter.add(column_origin, column)]
            step = emitter.builder.insert(loop.LdMatrixOp(self.values[read.load.source], indices, count, trans != read.transposed, register_type))
            attributes.OPERAND.write(step, StringAttr(role))
            return list(step.results)

        a_registers = [load(lhs, emitter.add(first_row, emitter.index(16 * m)), offset, 4, False, "lhs") for m in range(tiles_m)]
        b_registers: list[list[SSAValue]] = []
        for n in range(0, tiles_n, 2):
            first = emitter.add(first_column, emitter.index(8 * n))
            if n + 1 < tiles_n:
                registers = load(rhs, offset, first, 4, True, "rhs")
                b_registers += [registers[:2], registers[2:]]
            else:
                b_registers.append(load(rhs, offset, first, 2, True, "rhs"))
        return a_registers, b_registers

    def _steps(self, emitter: Emitter, a_registers: list[list[SSAValue]], b_registers: list[list[SSAValue]], accumulator: list[SSAValue]) -> list[SSAValue]:
        """Every instruction tile's `loop.mma_sync` step of one slice; returns the accumulators."""
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        tiles_m, tiles_n = layout.tiles
        result = list(accumulator)
        columns = layout.columns
        for m in range(tiles_m):
            for n in range(tiles_n):
                positions = [(2 * m + half) * columns + 2 * n + element for half in range(2) for element in range(2)]
                step = emitter.builder.insert(loop.MmaSyncOp(a_registers[m], b_registers[n], [result[p] for p in positions]))
                for position, value in zip(positions, step.results):
                    result[position] = value
        return result



def _split_registers(emitter: Emitter, registers: list[list[SSAValue]], split: bool) -> tuple[list[list[SSAValue]], list[list[SSAValue]]]:
    """Each f32 register's TF32 high part and, if `split` (3xtf32), the TF32 rounding of its
    remainder (else no low parts)."""
    high = [[emitter.emit(loop.RoundTf32Op(value)) for value in group] for group in registers]
    if not split:
        return high, []
    low = [[emitter.emit(loop.RoundTf32Op(emitter.emit(arith.SubfOp(value, hi)))) for value, hi in zip(group, his)] for group, his in zip(registers, high)]
    return high, low


def pack_pair(emitter: Emitter, elements: Sequence[SSAValue]) -> SSAValue:
    """Two scalars as one `vector<2xT>` register (an mma operand's pair of k-neighbours)."""
    first, second = elements
    pair = emitter.emit(vector.BroadcastOp(first, VectorType(first.type, [2])))
    return emitter.emit(vector.InsertOp(second, pair, [1]))


def lower_mma_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return MmaKernelLowering(kernel, vector_bytes).lower()
