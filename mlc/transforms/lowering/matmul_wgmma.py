"""Tile kernels with `tile.dot`, lowered for Hopper tensor cores: warpgroups of `loop.wgmma` products.

`convert-tile-to-loop{wgmma=true}` hands a kernel here (before `matmul_mma.py`) when its dots can
run as warpgroup products (`wgmma_applies`). Everything but the dot is `MmaKernelLowering`'s:
the grid, the K loop, the epilogue's maps, masked loads and stores, because wgmma's accumulator
layout is mma.sync's, stacked. A warpgroup (4 consecutive warps, 128 threads) owns 64 rows of the
block and all its BN columns; warp w of it owns rows 16w..16w+15, and a lane (g = l / 4,
t = l % 4) holds rows g and g + 8 and columns 8q + 2t, 8q + 2t + 1 of every 8-column block q:
the `MmaLayout` of a (BM / 16) x 1 warp grid, 16 x BN warp tiles (`mlc.warp_grid`, `mlc.warp_tile`),
so the thread's micro-tile is 2 x BN / 4.

The dot. Per K step (BK deep) each warpgroup issues one `loop.wgmma m64n{BN}k{BK}` (then `loop.wgmma_wait 0`,
which loop-promote-shared moves the next stage's copies in front of) that reads the
64 x BK block of A at its rows and the BK x BN block of B straight from the operand buffers, at the
tile loads' origins: both must be `tile.load`s padded with zeros (wgmma reads zeros outside the
buffer, as they do). The op's accumulator operands are the thread's micro-tile in PTX register
order (register 4q + 2h + e = row h, column 2q + e of the micro-tile). `loop-promote-shared` then
stages both operands in shared memory in the swizzled layout wgmma reads (`mlc.swizzle`), with its
async-copy pipeline, and convert-gpu-to-nvvm builds the matrix descriptors. The kernel carries
`mlc.wgmma` = the instruction shape [64, BN, 16].

Preconditions (`wgmma_applies`): every dot is a tensor-core dot (`mma_applies`) whose block has
64 to 256 rows in whole warpgroups (a multiple of 64), 64 to 256 columns in multiples of 64 (the
swizzle's 64-element column blocks) and a K step that is a multiple of 64 (one 128-byte swizzle
row of A); both operands come from zero-padded tile loads of buffers whose rows are 16-byte
multiples, inside the K loop (so that a pipeline of async copies can stage them: a register copy
could not write the swizzled layout; a K that fits one step has no loop and takes mma.sync). loop-promote-shared then issues the next stage's copies after the products and, where the
accumulators are only stored, or rounded to f16/bf16 (two at a time, `async_pipeline.pack_roundings`)
before an epilogue computes on them, leaves each product in flight until the next K step's wait
(`async_pipeline.overlap_products`).
Transposed operands (`tile.transpose` of a zero-padded load of the stored matrix,
`mlc.operand_major`) are read in their stored layout: the op carries `mlc.operand_major`;
loop-promote-shared stages a transposed rhs's N x BK block K-major like A's (read without the
instruction's B transpose) and a transposed lhs's BK x 64 blocks M-major like a row-major B's
(read with the instruction's A transpose). A TF32 product with an M-major A carries
`mlc.a_register_sets` = 2 (`A_REGISTER_SETS`): loop-unroll runs its K loop two steps an iteration,
and the GPU lowering loads each step's A registers while the previous step's products run.

TF32 dots (f32 operands at precision "tf32", `tf32_wgmma_applies`) take the same path when the
rhs is K-major (a transposed rhs: graph-transpose-tf32-rhs gives a row-major B one), the only
layout wgmma reads a 32-bit B in; the lhs is row-major (K-major, read from shared memory) or
transposed (M-major: the dot of a matmul computed transposed, `mlc.swap_operands`, whose lhs is
B's stored K x N block; the GPU lowering loads it into registers, where wgmma takes A in any
layout): K steps of 32 f32 (one 128-byte swizzle
row), `mlc.wgmma` = [64, BN, 8], `loop.wgmma` on f32 buffers, which the tensor core truncates to
TF32 instead of rounding (`precision.py`: within the same bound; the loop interpreter models it).

Limits: 3xtf32 and TF32 dots on an N-major rhs take mma.sync; registers hold A only for an M-major TF32 lhs; an epilogue that computes
on the f32 accumulators themselves (no rounding first) waits for each K step's products; no TMA.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, StringAttr, UnitAttr, f32, i64
from xdsl.ir import SSAValue

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.operand_maps import operand_major
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.dot_operands import _shape, output_shape
from mlc.transforms.lowering.matmul_loop import DotKernelLowering
from mlc.transforms.lowering.matmul_mma import (
    INSTRUCTION,
    MmaKernelLowering,
    MmaLayout,
    _element_type,
    _zero_padded_read,
    is_tf32_dot,
    lower_mma_kernel,
    mma_applies,
)
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering

A_REGISTER_SETS = 2
"""`mlc.a_register_sets` of a TF32 product whose A the GPU lowering loads into registers: its K loop
runs two copies an iteration (loop-unroll), so a step's loads rewrite the registers of the product
two steps back, which the previous step's `loop.wgmma_wait 1` has completed, instead of waiting for
the previous step's products (CUTLASS's register-A mainloop does the same). Measured on an H100
(BENCHMARKS.md, tf16): 1.2% faster at 4096^3 and 1.6% at 8192^3 than one set, same sign in 3 of 3
interleaved pairs; the product's large loss before (474 against 405 us) was the compile cache's
cubin ignoring setmaxnreg, not the wait (`compiler.linked_cubin_keeps`)."""

WGMMA_PIPELINE_STAGES = 4
"""The default `mlc.pipeline_stages` of a wgmma kernel: each product stays in flight one K step
after its own (`async_pipeline.overlap_products`), so copies go 2 steps ahead of 4 stages (192 KiB
for the 128x256x64 block)."""
SWIZZLE_COLUMNS = 64
"""16-bit elements in one 128-byte swizzle row: B's column blocks and A's K step come in these."""
SWIZZLE_ROW_BYTES = 128
ROW_BYTE_ALIGNMENT = 16
"""Bytes an operand's rows must be a multiple of, for 16-byte async copies."""
MAX_ROWS = 256
MAX_COLUMNS = 256


def _operand_rows_aligned(load: tile.LoadOp) -> bool:
    source_type = load.source.type
    source_shape = source_type.get_shape()  # type: ignore[attr-defined]
    return len(source_shape) >= 2 and source_shape[-1] * byte_width(source_type.element_type) % ROW_BYTE_ALIGNMENT == 0  # type: ignore[attr-defined]


def wgmma_applies(kernel: tile.KernelOp) -> bool:
    """Whether every dot of `kernel` can run as warpgroup products (see the module docstring)."""
    if not mma_applies(kernel):
        return False
    for dot in (op for op in kernel.walk() if isinstance(op, tile.DotOp)):
        if is_tf32_dot(dot) and not tf32_wgmma_applies(dot):
            return False
        lhs, rhs = _stored_operand(dot, "lhs"), _stored_operand(dot, "rhs")
        if lhs is None or rhs is None or not (_operand_rows_aligned(lhs) and _operand_rows_aligned(rhs)):
            return False
        if not isinstance(dot.parent_op(), scf.ForOp):
            return False  # one K step: no loop for the async copies to pipeline
        rows, columns = _shape(dot.acc)[-2:]
        depth = _shape(dot.lhs)[-1]
        swizzle_columns = swizzle_row_elements(dot)
        if rows % loop.WGMMA_ROWS or rows > MAX_ROWS or columns % SWIZZLE_COLUMNS or columns > MAX_COLUMNS or depth % swizzle_columns:
            return False
    return True


def swizzle_row_elements(dot: tile.DotOp) -> int:
    """Operand elements in one 128-byte swizzle row: 64 of f16/bf16, 32 of f32 (a TF32 dot's K step
    comes in these)."""
    return SWIZZLE_ROW_BYTES // byte_width(_element_type(dot.lhs))  # type: ignore[arg-type]


def tf32_wgmma_applies(dot: tile.DotOp) -> bool:
    """Whether a TF32 dot can be warpgroup products: precision "tf32" (3xtf32 splits its operands
    in registers, which wgmma's shared-memory operands cannot), and a K-major rhs, the only layout
    wgmma reads a 32-bit B in (`tile.transpose` of a stored N x K block; graph-transpose-tf32-rhs
    gives a row-major B one, or computes the product transposed, `mlc.swap_operands`). The lhs is
    row-major (read K-major from shared memory) or transposed (M-major, staged like a row-major B's
    block and loaded into registers by the GPU lowering: `wgmma_nvvm.lower_register_tf32_wgmma`)."""
    rhs_transposed = isinstance(dot.rhs.owner, tile.TransposeOp)
    return dot.precision.data == "tf32" and rhs_transposed


def _stored_operand(dot: tile.DotOp, role: str) -> tile.LoadOp | None:
    """The zero-padded load of the dot's `role` operand: the operand itself, or the stored block a
    transposed operand (`tile.transpose`) is."""
    read = _zero_padded_read(dot, role)
    return read.load if read is not None else None


def wgmma_layout(shape: tuple[int, ...]) -> MmaLayout:
    """A (BM / 16) x 1 warp grid: warpgroup i owns rows 64i..64i+63 (see the module docstring)."""
    return MmaLayout(shape, shape[-2] // INSTRUCTION[0], 1)


@dataclass
class WgmmaKernelLowering(MmaKernelLowering):
    """Lowers one tile kernel whose dots run as warpgroup products (see the module docstring)."""

    def __post_init__(self) -> None:
        TileKernelLowering.__post_init__(self)
        self.layout = wgmma_layout(output_shape(self.kernel))  # type: ignore[assignment]

    def lower(self) -> loop.KernelOp:
        result = DotKernelLowering.lower(self)
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        tf32 = any(is_tf32_dot(op) for op in self.kernel.walk() if isinstance(op, tile.DotOp))
        instruction_depth = loop.TF32_WGMMA_DEPTH if tf32 else loop.WGMMA_DEPTH
        attributes.WGMMA.write(result, DenseArrayBase.from_list(i64, [loop.WGMMA_ROWS, layout.shape[-1], instruction_depth]))
        attributes.WARP_GRID.write(result, DenseArrayBase.from_list(i64, [layout.warp_rows, layout.warp_columns]))
        stages = attributes.PIPELINE_STAGES.read(self.kernel)
        attributes.PIPELINE_STAGES.write(result, stages if stages is not None else IntegerAttr(WGMMA_PIPELINE_STAGES, i64))
        if attributes.SWAP_OPERANDS.read(self.kernel) is not None:  # the accumulator is C^T's block
            attributes.SWAP_OPERANDS.write(result, UnitAttr())
        return result

    def _start_thread(self, emitter: Emitter, thread: SSAValue) -> None:
        super()._start_thread(emitter, thread)
        warpgroup = emitter.emit(arith.DivUIOp(thread, emitter.index(loop.WARPGROUP_SIZE)))
        warpgroup.name_hint = "warpgroup"
        self.warpgroup_row = emitter.emit(arith.MuliOp(warpgroup, emitter.index(loop.WGMMA_ROWS)))

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        """acc += lhs @ rhs as one `loop.wgmma` per warpgroup over the whole K step."""
        layout = self.layout
        assert isinstance(layout, MmaLayout)
        accumulator = [element for row in self._full(self.materialize(emitter, op.acc)) for element in row]
        block_columns, columns = layout.shape[-1], layout.columns
        order = [half * columns + 2 * block + element for block in range(block_columns // 8) for half in range(2) for element in range(2)]
        lhs, rhs = _stored_operand(op, "lhs"), _stored_operand(op, "rhs")
        assert lhs is not None and rhs is not None
        *batch, row_origin, column_origin = (self.values[index] for index in lhs.indices)
        lhs_transposed, rhs_transposed = (isinstance(operand.owner, tile.TransposeOp) for operand in (op.lhs, op.rhs))
        if lhs_transposed:  # the stored K x M block: the warpgroup's rows are its columns
            lhs_indices = [*batch, row_origin, emitter.add(column_origin, self.warpgroup_row)]
        else:
            lhs_indices = [*batch, emitter.add(row_origin, self.warpgroup_row), column_origin]
        rhs_indices = [self.values[index] for index in rhs.indices]
        product = loop.WgmmaOp(
            self.values[lhs.source],
            lhs_indices,
            self.values[rhs.source],
            rhs_indices,
            [accumulator[position] for position in order],
            block_columns,
            _shape(op.lhs)[-1],
        )
        if lhs_transposed or rhs_transposed:
            attributes.OPERAND_MAJOR.write(product, ArrayAttr([StringAttr(side) for side in operand_major(lhs_transposed, rhs_transposed)]))
        if lhs_transposed and _element_type(op.lhs) == f32:
            # TF32 A from registers: two sets, so a step's loads need not wait for the previous step's products
            attributes.A_REGISTER_SETS.write(product, IntegerAttr(A_REGISTER_SETS, i64))
        emitter.builder.insert(product)
        landed = emitter.builder.insert(loop.WgmmaWaitOp(0, list(product.d)))
        result = list(accumulator)
        for position, value in zip(order, landed.d):
            value.name_hint = op.result.name_hint
            result[position] = value
        self.fragments[op.result] = [result[i : i + columns] for i in range(0, len(result), columns)]


def lower_wgmma_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return WgmmaKernelLowering(kernel, vector_bytes).lower()


def lower_tensor_core_kernel(kernel: tile.KernelOp, vector_bytes: int, wgmma: bool) -> loop.KernelOp | None:
    """`kernel` on tensor cores: warpgroup products if `wgmma` and they apply, else mma.sync steps
    if they apply; None if neither does."""
    if wgmma and wgmma_applies(kernel):
        return lower_wgmma_kernel(kernel, vector_bytes)
    if mma_applies(kernel):
        return lower_mma_kernel(kernel, vector_bytes)
    return None
