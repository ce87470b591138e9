"""GEMM-chain tile kernels on Hopper's warpgroup products: FlashAttention-3's register structure.

`convert-tile-to-loop{tensor-cores=true wgmma=true}` hands an attention kernel here instead of to
`chain_mma.py` when its `mlc.chain_plan` asks for `products = "wgmma"` (graph-fuse's model,
`attention_cost.wgmma_chain_fits`) and `chain_wgmma_applies`. Everything but the products is
`ChainMmaLowering`'s with warps of 16 query rows, because a warpgroup's `loop.wgmma` m64nN
accumulator is the m16n8 layout of its 4 warps stacked: warp w of the block (warp w % 4 of
warpgroup w / 4) owns query rows 16w .. 16w + 15, lane l rows 16w + l / 4 (+ 8) at columns
8j + 2 (l % 4) (+ 1). So the online softmax (scale and mask maps, the row max and sum across each
quad by shuffles, the rescaling of O) runs on the accumulator fragments as in the mma.sync kernel.

The products. A block of BM query rows (a multiple of 64) has BM / 64 consumer warpgroups; per key
block each issues

* S = Q Kt as one `loop.wgmma m64n{BN}k{D}` with **A from registers**: Q's fragment, loaded once
  before the key loop, packed as the m16n8k16 A registers of each 16-deep slice (PTX's
  register-A form; no shared copy of Q); B is K's block: K stored [BN, D] (read in place,
  `key_transpose`) is B K-major (`mlc.operand_major` ["k", "k"]), a Kt [D, BN] is B N-major;
* `loop.wgmma_wait 0`, the softmax on S's fragment, P rounded to f16/bf16 by the kernel's map;
* O = alpha O + P V as one `loop.wgmma m64n{Dv}k{BN}` with A = P's fragment, repacked in place
  into A registers (the accumulator layout of two neighbouring n-tiles is the A layout of a
  16-deep slice: P never leaves registers), B = V's block [BN, Dv] N-major; `loop.wgmma_wait 0`.

B blocks come straight from the operand buffers at the tile loads' origins (zero outside them,
as the padded loads); loop-promote-shared stages each in shared memory per key block in the
swizzled layout wgmma's descriptors read (`mlc.swizzle`, the matmul's staging), with
`mlc.pipeline_stages` (2 or 3) stages of cp.async copies issued ahead of the key loop's
iterations, and convert-gpu-to-nvvm builds the descriptors (`wgmma_nvvm.py`). The kernel carries
`mlc.wgmma` = [64, BN, 16] (the score product's instruction) instead of `mlc.mma`.

Preconditions (`chain_wgmma_applies`): `chain_mma_applies`; the block's rows a multiple of 64 (at
most 256); the head dims D and Dv multiples of 64 (the swizzle's 128-byte rows) up to 256; BN a
multiple of 64 up to 256; the stored K/Kt and V rows 16-byte multiples (async copies).
Limits: each product is waited for in its own iteration (no overlap of one warpgroup's softmax
with its own next product, no producer warpgroup or ping-pong scheduling between the consumer
warpgroups: what overlaps is the other warpgroups' and blocks' work); no TMA.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, StringAttr, i64
from xdsl.ir import SSAValue

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.gemm_chain import PRODUCTS_KEY
from mlc.transforms.analysis.operand_maps import operand_major
from mlc.transforms.analysis.shared_memory_promotion import WGMMA_SHARED_MEMORY_BYTES
from mlc.transforms.lowering.chain_mma import (
    MAX_PIPELINE_STAGES,
    ChainMmaLowering,
    _block_rows,
    _shape,
    _zero_padded_load,
    chain_mma_applies,
    lower_chain_mma_kernel,
)
from mlc.transforms.lowering.chain_loop import lower_chain_kernel
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.matmul_mma import INSTRUCTION, pack_pair

SWIZZLE_COLUMNS = 64
"""16-bit elements in one 128-byte swizzle row: head dims and N-major blocks come in these."""
MAX_EXTENT = 256
ROW_BYTE_ALIGNMENT = 16


def plans_wgmma(kernel: tile.KernelOp) -> bool:
    """Whether the kernel's chain plan asks for warpgroup products (`PRODUCTS_KEY`)."""
    plan = attributes.CHAIN_PLAN.read(kernel)
    products = plan.data.get(PRODUCTS_KEY) if plan is not None else None  # type: ignore[attr-defined]
    return isinstance(products, StringAttr) and products.data == "wgmma"


def _rows_aligned(load: tile.LoadOp) -> bool:
    source_type = load.source.type
    return source_type.get_shape()[-1] * byte_width(source_type.element_type) % ROW_BYTE_ALIGNMENT == 0  # type: ignore[attr-defined]


def chain_wgmma_applies(kernel: tile.KernelOp) -> bool:
    """Whether the chain kernel's products can be warpgroup products (see the module docstring)."""
    if not chain_mma_applies(kernel):
        return False
    block_rows = _block_rows(kernel)
    if block_rows is None or block_rows % loop.WGMMA_ROWS or block_rows > MAX_EXTENT:
        return False
    for dot in (op for op in kernel.walk() if isinstance(op, tile.DotOp)):
        depth, columns = _shape(dot.lhs)[-1], _shape(dot.acc)[-1]
        read = _zero_padded_load(dot.rhs)
        if read is None or not _rows_aligned(read[0]):
            return False
        if depth % SWIZZLE_COLUMNS or columns % SWIZZLE_COLUMNS or depth > MAX_EXTENT or columns > MAX_EXTENT:
            return False
    return True


def wgmma_pipeline_stages(kernel: tile.KernelOp) -> int:
    """As many stages (up to 3, at least 2) as one key block's swizzled K and V blocks fit in
    `WGMMA_SHARED_MEMORY_BYTES`, halved: two blocks per multiprocessor."""
    stage_bytes = sum(2 * _shape(dot.rhs)[-2] * _shape(dot.rhs)[-1] for dot in kernel.walk() if isinstance(dot, tile.DotOp))
    return max(2, min(MAX_PIPELINE_STAGES, WGMMA_SHARED_MEMORY_BYTES // 2 // max(1, stage_bytes)))


@dataclass
class ChainWgmmaLowering(ChainMmaLowering):
    """Lowers one attention kernel to consumer warpgroups of `loop.wgmma` (see the module docstring)."""

    def lower(self) -> loop.KernelOp:
        result = super().lower()
        del result.attributes[attributes.MMA.name]
        score = next(op for op in self.kernel.walk() if isinstance(op, tile.DotOp))
        attributes.WGMMA.write(result, DenseArrayBase.from_list(i64, [loop.WGMMA_ROWS, _shape(score.acc)[-1], loop.WGMMA_DEPTH]))
        if attributes.PIPELINE_STAGES.read(self.kernel) is None:
            attributes.PIPELINE_STAGES.write(result, IntegerAttr(wgmma_pipeline_stages(self.kernel), i64))
        return result

    def choose_warp_rows(self, block_rows: int) -> int:
        return INSTRUCTION[0]  # a warpgroup's accumulator: 4 warps of 16 rows

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        """acc += lhs @ rhs as one `loop.wgmma` per warpgroup, A from the lhs fragment's registers."""
        accumulator = self._full(emitter, op.acc)
        lhs = self._full(emitter, op.lhs)
        read = _zero_padded_load(op.rhs)
        assert read is not None
        rhs, transposed = read
        depth, columns = _shape(op.lhs)[-1], _shape(op.acc)[-1]
        registers = [
            pack_pair(emitter, lhs[row][4 * slice_index + half : 4 * slice_index + half + 2])
            for slice_index in range(depth // INSTRUCTION[2])
            for half in (0, 2)
            for row in (0, 1)
        ]
        # PTX's accumulator order: register 4q + 2h + e is row h, column 8q + 2t + e of the fragment
        order = [(half, 2 * block + element) for block in range(columns // 8) for half in range(2) for element in range(2)]
        product = loop.WgmmaOp(
            None, [], self.values[rhs.source], [self.values[index] for index in rhs.indices],
            [accumulator[row][column] for row, column in order], columns, depth, registers,
        )
        if transposed:  # K's stored [BN, D] block: B K-major
            attributes.OPERAND_MAJOR.write(product, ArrayAttr([StringAttr(side) for side in operand_major(False, True)]))
        emitter.builder.insert(product)
        landed = emitter.builder.insert(loop.WgmmaWaitOp(0, list(product.d)))
        result = [list(row) for row in accumulator]
        for (row, column), value in zip(order, landed.d):
            value.name_hint = op.result.name_hint
            result[row][column] = value
        self.fragments[op.result] = result


def lower_chain_wgmma_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return ChainWgmmaLowering(kernel, vector_bytes).lower()


def lower_chain(kernel: tile.KernelOp, vector_bytes: int, tensor_cores: bool, wgmma: bool) -> loop.KernelOp:
    """A chain kernel on warpgroup products where `wgmma` (sm_90a), the plan asks for them and they
    apply; else on `loop.mma_sync` where `tensor_cores` and they apply; else on CUDA cores."""
    if tensor_cores and wgmma and plans_wgmma(kernel) and chain_wgmma_applies(kernel):
        return lower_chain_wgmma_kernel(kernel, vector_bytes)
    if tensor_cores and chain_mma_applies(kernel):
        return lower_chain_mma_kernel(kernel, vector_bytes)
    return lower_chain_kernel(kernel, vector_bytes)
