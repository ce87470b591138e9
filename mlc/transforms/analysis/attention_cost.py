"""Whether a GEMM chain fuses, and with which blocks: Chimera's data-movement model and a compute term.

The chains are what `gemm_chain.py` matches (`AttentionChain`: attention, or a plain
`matmul(f(matmul(A, B)), C)`); graph-fuse asks `plan_attention` for each and records the answer
(`ChainPlan`) in `mlc.chain_plan`, or the reason to fall back in `mlc.chain_fallback`.

Data-movement model (`plan_attention`), after Chimera (Zheng et al., HPCA 2023): for the block
order of the fused loop nest and each block size (BM query rows, BN keys, powers of two from 16
to 128), count the bytes moved between global memory and on-chip memory (registers and shared
memory) over the whole chain, assuming nothing is reused across programs (no cache):

* rows outer (a program owns BM query rows and walks the keys in blocks, FlashAttention's order):
  Q read once, K and V read once per row block, O written once, each mask block read once:
      B*e*(M*D + ceil(M/BM)*N*(D + Dv) + M*Dv) + mask;
* separate kernels (the alternative): the score and probability matrices make a round trip,
  with mlc's 64x64 matmul blocks re-reading operands:
      B*(e*(M*D*ceil(N/64) + D*N*ceil(M/64)) + 4*M*N*s + e*(M*N*ceil(Dv/64) + N*Dv*ceil(M/64) + M*Dv)) + mask,
  s = 1 + 2 + 1 (the score matrix written, read twice by the softmax, the probabilities written).

The other order, keys outer (a program owns BN keys and walks the query rows), reads K and V once
but must write and re-read O's f32 accumulator and the running max and sum once per key block;
it pays only for very short key sequences and is not lowered, so it is not a candidate.

A choice must fit on chip: the f32 score tile (BM*BN), the f32 accumulator (BM*Dv) and running
max and sum (2*BM), and the operand tiles (e*(BM*D + BN*D + BN*Dv)), head dims padded to powers of
two, within `on_chip_bytes` (graph-fuse's option; the default is what one program of a GPU
block may hold beside a second resident block). The cheapest fitting (BM, BN) wins, ties to the
smaller footprint. No region is formed (the ops fall back to separate kernels) when no
choice fits or when the fused chain would move at least as many bytes as separate kernels.

Compute term (`ComputeModel`, graph-fuse's `compute-model`; the GPU pipeline names `gpu`). Bytes
alone decide only where the fused kernel does its products as fast as separate kernels would.
Each side is estimated as a roofline, `max(bytes / bandwidth, flops / products' rate)` with flops
= 2*B*M*N*(D + Dv) (the fused side: the key blocks it visits) and the model's measured rates, and
the chain falls back when its estimate is not below the separate kernels' (the reason, with both
estimates, in `mlc.chain_fallback`). On an H100 (bench/attention.py, BENCHMARKS.md) the chain
kernel on tensor cores (`chain_mma.py`: f16/bf16, head dims padding to 16 or more) ran its
products at 154-185 TFLOP/s, faster than separate f16 kernels (55-106 TFLOP/s for the whole
chain), so such chains fuse, with the tensor-core kernel's blocks (`_plan_tensor_cores`: BM 128,
BN 64, halved while two stages of K and V blocks do not fit; BM halved to 64 where that still
makes at most one wave of programs, `wave_filling_rows`; warps of 32 query rows for 128-row blocks
of head dims up to 64, `warp_rows_for`; `products = "wgmma"` where the blocks fit warpgroup
products, `wgmma_chain_fits`: on an H100 the wgmma kernel, `chain_wgmma.py`, took 36.3 against
40.7 µs at 128 x 512 x 64, 115.6 against 144.0 at 64 x 1024 x 128, 873 against 1013 at 64 x 4096
x 64, and tied at 16 x 512 x 64, BENCHMARKS.md, branch attn11); the CUDA-core chain kernel (f32,
tiny head dims: one thread per query row) ran at 3.5 to 4.8 TFLOP/s, so an f32 chain of a real
head dim falls back, and only tiny head dims, where the score round trip (about 16 bytes per
score) outweighs 2*(D + Dv) slow flops, stay fused on CUDA cores. `none` (the default, and the
CPU's) counts bytes only.

Limits. The compute term's rates are one GPU's measurements, not a model of occupancy or
latency.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType
from xdsl.ir import SSAValue

from mlc.dialects.graph.error_bounds import ONLINE_SOFTMAX_MIN_BLOCK
from mlc.targets import WGMMA_CHAIN_EXTENT
from mlc.transforms.analysis.fusion_groups import is_splat_constant, shape_of
from mlc.transforms.analysis.gemm_chain import AttentionChain
from mlc.transforms.analysis.tile_sizes import next_power_of_two

BLOCK_CHOICES = tuple(ONLINE_SOFTMAX_MIN_BLOCK << shift for shift in range(4))
"""16 to 128: at least the block error_bounds assumes for an online softmax."""
SEPARATE_MATMUL_BLOCK = 64
DEFAULT_ON_CHIP_BYTES = 96 * 1024


def _element_bytes(value: SSAValue) -> int:
    assert isinstance(value.type, TensorType)
    return max(1, value.type.element_type.bitwidth // 8)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ComputeModel:
    """A target's measured rates for the compute term (see the module docstring)."""

    bandwidth: float
    """Bytes per second between global memory and the chip."""
    fused_flops: float
    """The chain kernel's products on CUDA cores (one thread per query row), FLOP/s."""
    separate_flops: dict[str, float]
    """Separate matmul kernels' products, FLOP/s, by operand type (`f16`, `bf16`, `f32`)."""
    tensor_core_flops: float | None = None
    """The chain kernel on tensor cores (`chain_mma.py`), FLOP/s, for f16/bf16 chains whose head
    dims pad to at least 16; None: the target has no such kernel."""
    staged_bytes: int = 96 * 1024
    """Shared memory the tensor-core kernel's staged K and V blocks may take."""
    multiprocessors: int = 0
    """The GPU's multiprocessors (0: unknown): the tensor-core kernel halves its query block while
    twice its programs still fit one wave of them (`_plan_tensor_cores`)."""


COMPUTE_MODELS = {
    "none": None,
    # H100 (bench/attention.py, 2026-11-25/26): the device copy moves ~3.0 TB/s; the CUDA-core chain
    # kernel ran 3.5-4.8 TFLOP/s, the tensor-core one 154-185 (blocks visited); mlc's separate
    # kernels ran the whole chain at 55-106 TFLOP/s in f16 (tensor cores; products alone faster)
    # and 23 in f32: conservative product rates below.
    "gpu": ComputeModel(
        3.0e12, 4.0e12, {"f16": 100e12, "bf16": 100e12, "f32": 25e12}, tensor_core_flops=150e12, multiprocessors=132
    ),
}

TENSOR_CORE_BLOCKS = (128, 64)
"""BM, BN of the tensor-core chain kernel: 8 warps of 16 query rows, 64 keys per block (BN halved
while two stages of the K and V blocks do not fit `staged_bytes`)."""
TENSOR_CORE_MIN_DEPTH = 16
TENSOR_CORE_STAGES = 2
TENSOR_CORE_MIN_ROWS = 64
"""The smallest query block `_plan_tensor_cores` halves to for a launch of few programs: four warps
of 16 rows, one per tensor-core unit of a multiprocessor."""


WIDE_WARP_MAX_HEAD_DIM = 64
"""Warps of 32 query rows (`warp_rows`, `chain_mma.py`) for blocks of 128 rows or more when both
head dims pad to at most this: two m16 rows share each K and V register loaded from shared
memory. H100, fast math (bench/chain_blocks.py, BENCHMARKS.md, branch xformer10): 128 x 512 x 64
(the transformer block at batch 8) 50.2 -> 39.7 µs, 64 x 4096 x 64 1209 -> 1047 µs; with head
dims of 128 the doubled accumulator costs more than it saves (64 x 1024 x 128: 141 -> 161 µs),
and 64-row blocks (4 warps of 16 rows) stay faster than 2 warps of 32 (16 x 512 x 64: 11.8 against
12.4 µs)."""


def warp_rows_for(block_rows: int, depth: int, value_depth: int) -> int:
    """The tensor-core kernel's query rows per warp (see `WIDE_WARP_MAX_HEAD_DIM`)."""
    narrow_heads = max(next_power_of_two(depth), next_power_of_two(value_depth)) <= WIDE_WARP_MAX_HEAD_DIM
    return 32 if block_rows >= 128 and narrow_heads else 16


def wgmma_chain_fits(block_rows: int, block_keys: int, depth: int, value_depth: int) -> bool:
    """Whether the tensor-core chain kernel's blocks fit warpgroup products (`WGMMA_CHAIN_EXTENT`)."""
    step, most = WGMMA_CHAIN_EXTENT
    return all(extent % step == 0 and extent <= most for extent in (block_rows, block_keys, next_power_of_two(depth), next_power_of_two(value_depth)))


def wave_filling_rows(batch: int, rows: int, block_rows: int, multiprocessors: int) -> int:
    """`block_rows` halved (down to `TENSOR_CORE_MIN_ROWS`) while twice the programs still fit one
    wave of `multiprocessors`: the rows-outer kernel's programs are batch x row blocks, so a short
    sequence of few heads (16 heads x 512 rows: 64 programs of 128 rows) would leave half of an
    H100's 132 multiprocessors idle; 64-row blocks give each of 128 of them four warps."""
    programs = lambda bm: batch * -(-rows // bm)
    while block_rows > TENSOR_CORE_MIN_ROWS and 2 * programs(block_rows) <= multiprocessors:
        block_rows //= 2
    return block_rows


def _estimate_seconds(moved: int, flops: int, rate: float, model: ComputeModel) -> float:
    return max(moved / model.bandwidth, flops / rate)


def uses_tensor_cores(chain: AttentionChain, model: ComputeModel | None) -> bool:
    """Whether `model`'s target runs the chain kernel on tensor cores: f16/bf16 operands, head dims
    padding to at least 16."""
    _, _, _, depth, value_depth = chain.dims
    narrow = isinstance(chain.scores.a.type.element_type, Float16Type | BFloat16Type)  # type: ignore[attr-defined]
    return model is not None and model.tensor_core_flops is not None and narrow and min(next_power_of_two(depth), next_power_of_two(value_depth)) >= TENSOR_CORE_MIN_DEPTH


def compute_verdict(chain: AttentionChain, fused: int, separate: int, model: ComputeModel, blocks: tuple[int, int]) -> str | None:
    """Why the fused chain does not pay under `model`'s rates (None when it does); `blocks` are
    the fused kernel's (BM, BN), for the keys it visits."""
    batch, rows, keys, depth, value_depth = chain.dims
    flops = 2 * batch * rows * keys * (depth + value_depth)
    fused_flops = flops * visited_keys(chain, *blocks) // max(1, -(-rows // blocks[0]) * keys)
    element = str(chain.scores.a.type.element_type)  # type: ignore[attr-defined]
    tensor_cores = uses_tensor_cores(chain, model)
    fused_rate = model.tensor_core_flops if tensor_cores else model.fused_flops
    fused_s = _estimate_seconds(fused, fused_flops, fused_rate, model)  # type: ignore[arg-type]
    separate_s = _estimate_seconds(separate, flops, model.separate_flops.get(element, model.fused_flops), model)
    if fused_s < separate_s:
        return None
    where = "tensor cores" if tensor_cores else "CUDA cores"
    return (
        f"the chain kernel's products on {where}: about {fused_s * 1e6:.1f} us fused, {separate_s * 1e6:.1f} us "
        f"as separate kernels ({flops} flops; {fused} / {separate} bytes): fusion does not pay"
    )


@dataclass(frozen=True)
class ChainPlan:
    """The model's choice for one chain, with its numbers (all recorded in the IR)."""

    order: str
    block_rows: int
    block_keys: int
    fused_bytes: int
    separate_bytes: int
    on_chip_bytes: int
    """The chosen blocks' footprint on chip."""
    warp_rows: int = 16
    """The query rows each warp of the mma.sync tensor-core kernel owns (`chain_mma.py`)."""
    products: str = ""
    """"wgmma" where the tensor-core kernel's blocks fit warpgroup products (`wgmma_chain_fits`)."""


def on_chip_footprint(block_rows: int, block_keys: int, depth: int, value_depth: int, element_bytes: int) -> int:
    depth, value_depth = next_power_of_two(depth), next_power_of_two(value_depth)
    tiles = block_rows * depth + block_keys * depth + block_keys * value_depth
    return 4 * (block_rows * block_keys + block_rows * value_depth + 2 * block_rows) + element_bytes * tiles


def _mask_bytes(chain: AttentionChain, block_rows: int, block_keys: int) -> int:
    batch, rows, keys, _, _ = chain.dims
    total = 0
    for value in chain.side_inputs:
        if is_splat_constant(value):  # a scalar in the kernel's code, not memory traffic
            continue
        shape = (1, 1, *shape_of(value))[-2:]
        per_block = (block_rows if shape[0] != 1 else 1) * (block_keys if shape[1] != 1 else 1)
        bytes_per = _element_bytes(value)
        total += batch * -(-rows // block_rows) * -(-keys // block_keys) * per_block * bytes_per
    return total


def visited_keys(chain: AttentionChain, block_rows: int, block_keys: int) -> int:
    """Keys the fused kernel walks, summed over its row blocks: all N for each, or with a causal
    mask the blocks up to the last key the block's last row sees."""
    _, rows, keys, _, _ = chain.dims
    blocks = -(-rows // block_rows)
    if chain.causal is None:
        return blocks * keys
    total = 0
    for block in range(blocks):
        seen = max(0, min(keys, (block + 1) * block_rows + chain.causal.offset))
        total += min(keys, -(-seen // block_keys) * block_keys)
    return total


def fused_bytes(chain: AttentionChain, block_rows: int, block_keys: int) -> int:
    """Bytes moved by the fused chain in the rows-outer order (see the module docstring)."""
    batch, rows, _, depth, value_depth = chain.dims
    e = _element_bytes(chain.scores.a)
    streamed = rows * depth + visited_keys(chain, block_rows, block_keys) * (depth + value_depth) + rows * value_depth
    return batch * e * streamed + _mask_bytes(chain, block_rows, block_keys)


def separate_bytes(chain: AttentionChain) -> int:
    batch, rows, keys, depth, value_depth = chain.dims
    e = _element_bytes(chain.scores.a)
    b = SEPARATE_MATMUL_BLOCK
    first = e * (rows * depth * -(-keys // b) + depth * keys * -(-rows // b))
    second = e * (rows * keys * -(-value_depth // b) + keys * value_depth * -(-rows // b) + rows * value_depth)
    if chain.kind == "attention":  # f32 scores written, read twice by the softmax, P written
        intermediate = 4 * rows * keys * 4
    else:  # f(S) written by the first kernel (its epilogue), read by the second
        intermediate = 2 * rows * keys * _element_bytes(chain.output.a)
    return batch * (first + intermediate + second) + _mask_bytes(chain, b, b)


def plan_attention(chain: AttentionChain, on_chip_bytes: int, compute: ComputeModel | None = None) -> ChainPlan | str:
    """The cheapest fitting choice, or the reason to fall back to separate kernels."""
    _, rows, keys, depth, value_depth = chain.dims
    e = _element_bytes(chain.scores.a)
    separate = separate_bytes(chain)
    if uses_tensor_cores(chain, compute):
        return _plan_tensor_cores(chain, on_chip_bytes, compute, separate)  # type: ignore[arg-type]
    candidates = []
    row_blocks = [b for b in BLOCK_CHOICES if b <= max(16, next_power_of_two(rows))]
    key_blocks = [b for b in BLOCK_CHOICES if b <= max(16, next_power_of_two(keys))]
    for bm, bn in itertools.product(row_blocks, key_blocks):
        footprint = on_chip_footprint(bm, bn, depth, value_depth, e)
        if footprint <= on_chip_bytes:
            candidates.append((fused_bytes(chain, bm, bn), footprint, bm, bn))
    if not candidates:
        smallest = on_chip_footprint(16, 16, depth, value_depth, e)
        return f"the smallest blocks (16x16) need {smallest} bytes on chip, more than {on_chip_bytes}"
    moved, footprint, bm, bn = min(candidates)
    if moved >= separate:
        return f"fusion moves {moved} bytes, separate kernels {separate}: fusion does not pay"
    verdict = None if compute is None else compute_verdict(chain, moved, separate, compute, (bm, bn))
    if verdict is not None:
        return verdict
    return ChainPlan("rows-outer", bm, bn, moved, separate, footprint)


def _plan_tensor_cores(chain: AttentionChain, on_chip_bytes: int, compute: ComputeModel, separate: int) -> ChainPlan | str:
    """The tensor-core kernel's blocks (`TENSOR_CORE_BLOCKS`, cut to the problem): its scores and
    accumulator live in registers, so what must fit on chip is the staged K and V blocks."""
    _, rows, keys, depth, value_depth = chain.dims
    e = _element_bytes(chain.scores.a)
    batch = chain.dims[0]
    block_rows = wave_filling_rows(batch, rows, min(TENSOR_CORE_BLOCKS[0], max(16, next_power_of_two(rows))), compute.multiprocessors)
    block_keys = min(TENSOR_CORE_BLOCKS[1], max(16, next_power_of_two(keys)))
    staged = lambda bn: TENSOR_CORE_STAGES * e * bn * (next_power_of_two(depth) + next_power_of_two(value_depth))
    while block_keys > 16 and staged(block_keys) > min(on_chip_bytes, compute.staged_bytes):
        block_keys //= 2
    if staged(block_keys) > on_chip_bytes:
        return f"the smallest blocks (16 keys) need {staged(block_keys)} bytes of staged K and V on chip, more than {on_chip_bytes}"
    moved = fused_bytes(chain, block_rows, block_keys)
    verdict = compute_verdict(chain, moved, separate, compute, (block_rows, block_keys))
    if verdict is not None:
        return verdict
    products = "wgmma" if wgmma_chain_fits(block_rows, block_keys, depth, value_depth) else ""
    return ChainPlan("rows-outer", block_rows, block_keys, moved, separate, staged(block_keys), warp_rows_for(block_rows, depth, value_depth), products)
