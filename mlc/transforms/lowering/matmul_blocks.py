"""Block sizes of a matmul's tile kernel: which (BM, BN, BK) and how many warps, per target and precision.

`matmul_kernel.py` builds one tile kernel per `graph.matmul`; this module says how big its block is
(`knobs.py`, the pad and transpose passes read the same tables):

- `choose_matmul_tile`: 128x128x16 when that still gives at least `LARGE_TILE_PROGRAMS` programs
  (128x256x32 for f16/bf16 products, whose 8 warps then own 64x64 tensor-core warp tiles; one of
  `WGMMA_TILES` on Hopper), else at most 64x64x16; each dimension is cut to the smallest power of
  two that covers the matrix's (a 17x33x65 product gets 32x64x16). f32 products of precision
  tf32/3xtf32 on the GPU (tensor cores, `matmul_mma.py`) take `TF32_LARGE_TILE` as their large
  block and at least `TF32_MINIMUM_TILE` (one m16n8k8 step), so that the tensor-core lowering
  always applies; the CPU pipeline (`convert-graph-to-tile{target=cpu}`) takes `cpu_tile`'s block
  (512 or 256 rows where that still makes `CPU_MIN_PROGRAMS` programs, else `CPU_TILE`).
- `choose_tf32_wgmma_tile`: TF32 products on Hopper's wgmma (`TF32_WGMMA_TILES`).
- `matmul_warps`: one thread per `OUTPUTS_PER_THREAD` outputs of the block, 1 to 8 warps.
- `swapped_tf32_applies`: whether a TF32 product's shapes allow computing it transposed
  (`mlc.swap_operands`, `matmul_kernel.py`'s "Computed transposed").

The figures quoted below are from BENCHMARKS.md. Limits: the choice sees shapes, element types and
the target only; `convert-graph-to-tile{matmul-tile=BM,BN,BK}` overrides it (the autotuner's knob).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import f32

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.fusion_groups import shape_of
from mlc.transforms.analysis.tile_sizes import next_power_of_two

LARGE_TILE = (128, 128, 16)
DEFAULT_TILE = (64, 64, 16)
HALF_LARGE_TILE = (128, 256, 32)
"""The large block of f16/bf16 products: on an H100, 4096^3 f16 through mma.sync and ldmatrix ran at
290 TFLOP/s with it against 176 with 128x128x16 and 177 with 128x128x32 (bench/matmul_tiles.py,
BENCHMARKS.md): 64x64 warp tiles load fewer fragments per mma, BK = 32 halves the barriers."""
WGMMA_TILES = ((128, 256, 64), (128, 128, 64), (64, 128, 64))
"""The blocks of f16/bf16 products on Hopper (wgmma, `matmul_wgmma.py`), largest first: the first
that makes `LARGE_TILE_PROGRAMS` blocks (then `WGMMA_FEW_TILE_BLOCK` if that does), else the last,
cut to the matrix. 128x256x64 is Triton's and cuBLAS's H100 block (two warpgroups of m64n256k16,
48 KiB of operands a K step); 64 is one 128-byte swizzle row of K."""
WGMMA_FEW_TILE_BLOCK = (64, 64, 64)
"""For few-tile products that it brings to `LARGE_TILE_PROGRAMS` blocks: a transformer's 512x1024
outputs (K 1024 and 4096, batch 1 x 512 tokens) make 64 blocks of 64x128 for 132 multiprocessors,
128 of 64x64 (FFN2 26.8 -> 22.9 µs, the out-projection 8.9 -> 6.9, H100; cuBLAS picks 64x64 there
too, `nvjet_sm90_hsh_64x64_64x13`: BENCHMARKS.md, branch xformer9)."""
WGMMA_ALIGNMENT = 8
"""Elements (16 bytes) the rows of both operands must be a multiple of for the wgmma blocks: their
copies are 16-byte async copies."""
TF32_LARGE_TILE = (128, 256, 16)
"""The large block of f32 products at a TF32 precision (mma.sync m16n8k8): 8 warps of 64x64 warp
tiles (80 shared loads per 64 mma.sync a K step, against 96 with 64x32), 27 KiB of f32 operands a
K step, so that 3 stages of async copies fit."""
TF32_WGMMA_TILES = ((128, 256, 32), (128, 128, 32), (64, 128, 32))
"""The blocks of TF32 products on Hopper (wgmma on K-major f32 operands), largest first, chosen as
`WGMMA_TILES` are: 32 f32 are one 128-byte swizzle row of K, so a stage holds the same 48 KiB of
operands as the f16 128x256x64 block."""
TF32_WGMMA_TILE = TF32_WGMMA_TILES[0]
TF32_WGMMA_ALIGNMENT = 4
"""f32 elements (16 bytes) that K must be a multiple of for TF32 wgmma's async copies."""
TF32_MINIMUM_TILE = (16, 8, 8)
"""The smallest block a TF32 dot takes (one m16n8k8 instruction): TF32 has no CUDA-core lowering."""
CPU_TILE = (128, 128, 16)
"""The CPU's block (`convert-graph-to-tile{target=cpu}`) where a taller one (`CPU_TALL_ROWS`) would
leave fewer than `CPU_MIN_PROGRAMS` programs: one thread on a Xeon with AVX-512 ran 1024^3 f32 in
14.1 ms with it against 18.9 ms with 64x64x16 (a 128-row block packs each rhs panel for twice the
rows, `matmul_cpu.py`)."""
CPU_TALL_ROWS = (512, 256)
"""Taller CPU blocks (BM; BN and BK those of `CPU_TILE`), the first that keeps `CPU_MIN_PROGRAMS`
programs taken. Every program packs its rhs panels (K x NR) for its own rows, so a 512-row block
packs the rhs a quarter as often as a 128-row one: on the Intel host's Xeon (BENCHMARKS.md, mm15:
one core's L3 reads are slow there) 1024^3 f32 at one thread ran 13.8-15.5 ms with 512x128x16
against 15.3-20.1 with 128x128x16 (PyTorch 13.6-16.3 in the same turns), 2048^3 112-128 ms against
136-174; 256x128x16 and 256x256x16 fell between."""
CPU_MIN_PROGRAMS = 16
"""Programs a taller CPU block must still make (the host's 16 threads get one each at 1024^3; a
machine with more cores gets fewer programs than threads for 1024^3 as for 512^3 below it)."""
LARGE_TILE_PROGRAMS = 128
"""Large blocks only when at least this many of them keep the GPU's ~132 multiprocessors busy."""

OUTPUTS_PER_THREAD = 16
MAX_MATMUL_WARPS = 8


def choose_matmul_tile(
    batch: int, rows: int, columns: int, depth: int, half: bool = False, cpu: bool = False, wgmma: bool = False, tf32: bool = False
) -> tuple[int, int, int]:
    """(BM, BN, BK) for a `batch` of `rows x depth @ depth x columns` products (see the docstring).

    `half`: 16-bit (f16/bf16) operands, which take `HALF_LARGE_TILE` as their large block on the
    GPU, or with `wgmma` one of `WGMMA_TILES` where the K loop has two steps or more and the rows are
    16-byte multiples; `tf32`: f32 operands at a TF32 precision (`TF32_LARGE_TILE`, at least
    `TF32_MINIMUM_TILE` on the GPU); `cpu`: the CPU's block, `cpu_tile`, cut to the matrix likewise."""
    if tf32 and not cpu:
        programs = batch * -(-rows // TF32_LARGE_TILE[0]) * -(-columns // TF32_LARGE_TILE[1])
        limit = TF32_LARGE_TILE if programs >= LARGE_TILE_PROGRAMS else DEFAULT_TILE
        sizes = zip(limit, TF32_MINIMUM_TILE, (rows, columns, depth))
        return tuple(min(cap, max(least, next_power_of_two(size))) for cap, least, size in sizes)  # type: ignore[return-value]
    if half and wgmma and not cpu and depth > WGMMA_TILES[0][2] and depth % WGMMA_ALIGNMENT == 0 and columns % WGMMA_ALIGNMENT == 0:
        candidates = (*WGMMA_TILES, WGMMA_FEW_TILE_BLOCK)
        tile = next((t for t in candidates if batch * -(-rows // t[0]) * -(-columns // t[1]) >= LARGE_TILE_PROGRAMS), WGMMA_TILES[-1])
        return min(tile[0], max(64, next_power_of_two(rows))), min(tile[1], max(64, next_power_of_two(columns))), tile[2]
    large = HALF_LARGE_TILE if half else LARGE_TILE
    programs = batch * -(-rows // large[0]) * -(-columns // large[1])
    limit = cpu_tile(batch, rows, columns) if cpu else large if programs >= LARGE_TILE_PROGRAMS else DEFAULT_TILE
    return tuple(min(cap, next_power_of_two(size)) for cap, size in zip(limit, (rows, columns, depth)))  # type: ignore[return-value]


def cpu_tile(batch: int, rows: int, columns: int) -> tuple[int, int, int]:
    """The CPU's block before it is cut to the matrix: the tallest of `CPU_TALL_ROWS` whose
    programs still number `CPU_MIN_PROGRAMS`, else `CPU_TILE`."""
    columns_per_block, depth = CPU_TILE[1:]
    for block_rows in CPU_TALL_ROWS:
        if batch * -(-rows // block_rows) * -(-columns // columns_per_block) >= CPU_MIN_PROGRAMS:
            return block_rows, columns_per_block, depth
    return CPU_TILE


def swapped_tf32_applies(op: graph.MatmulOp) -> bool:
    """Whether the shapes of `op` (f32, 2-D, neither operand a transpose) allow computing it
    transposed (`mlc.swap_operands`, see the module docstring): K a multiple of
    `TF32_WGMMA_ALIGNMENT` deeper than one K step, and B's rows (N) too, since B's stored K x N
    block becomes the dot's lhs, copied 16 bytes at a time."""
    if op.a.type.element_type != f32 or len(shape_of(op.a)) != 2 or len(shape_of(op.b)) != 2 or 0 in shape_of(op.result):
        return False
    depth, columns = shape_of(op.b)
    return depth % TF32_WGMMA_ALIGNMENT == 0 and columns % TF32_WGMMA_ALIGNMENT == 0 and depth > TF32_WGMMA_TILE[2]


def choose_tf32_wgmma_tile(batch: int, rows: int, columns: int) -> tuple[int, int, int]:
    """The first of `TF32_WGMMA_TILES` that makes `LARGE_TILE_PROGRAMS` blocks, else the last, cut
    to the matrix (whole warpgroups of rows, 64-column blocks)."""
    tile = next((t for t in TF32_WGMMA_TILES if batch * -(-rows // t[0]) * -(-columns // t[1]) >= LARGE_TILE_PROGRAMS), TF32_WGMMA_TILES[-1])
    return min(tile[0], max(64, next_power_of_two(rows))), min(tile[1], max(64, next_power_of_two(columns))), tile[2]


def check_matmul_options(matmul_tile: Sequence[int], target: str) -> None:
    """Raises ValueError for convert-graph-to-tile's `matmul-tile` or `target` of the wrong form."""
    if matmul_tile and (len(matmul_tile) != 3 or any(size < 1 or size & (size - 1) for size in matmul_tile)):
        raise ValueError(f"matmul-tile must be three powers of two (BM,BN,BK), got {','.join(map(str, matmul_tile))}")
    if target not in ("gpu", "cpu"):
        raise ValueError(f"target must be gpu or cpu, got {target}")


def matmul_warps(block_rows: int, block_columns: int) -> int:
    """One thread per `OUTPUTS_PER_THREAD` outputs of the block, 1 to `MAX_MATMUL_WARPS` warps."""
    threads = block_rows * block_columns // OUTPUTS_PER_THREAD
    return min(MAX_MATMUL_WARPS, max(1, threads // 32))
