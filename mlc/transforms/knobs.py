"""The tunable decisions of mlc's passes ("knobs"), declared in one table, one line per knob.

A knob is a pass option whose default is a heuristic: convert-graph-to-tile's elements per
program, matmul block and reduction warps, convert-tile-to-loop's vector width, loop-promote-shared's
stages, the CPU's threading threshold.
`KNOBS` maps each pass's CLI name to its knobs; a knob names the option (as `mlc-opt` spells it),
the targets it means something on, its legal values for a workload (`WorkloadFacts`: shapes read
from the graph after decomposition) and, where a value can be legal in form but impossible on a
target (too much shared memory, too many accumulator registers), a `prune` rule that says why;
`RULES` say why a combination of several knobs cannot run (a wgmma block with too few stages, or
more than its shared memory holds).
The autotuner (`mlc/tuning/space.py`) reads this table; a tuned configuration is nothing but these
options set on the device's pipeline, so `mlc-opt --pass-pipeline '<pipeline>'` replays it.

The pass's default is always a legal value (the heuristic is a point of every search space),
written first. Adding a knob is one `Knob(...)` line in the pass's entry (a test checks that
every option named here is a field of its pass).

Limits: knobs are per pass, so a value applies to every kernel of the module (a per-kernel choice,
`mlc.micro_tile` on one `tile.kernel`, is not a knob yet); the pruning rules are estimates from the
block shape (`loop-promote-shared` may pad a shared tile by a few bytes more).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute

from mlc.dialects.buffer_limits import element_bytes
from mlc.dialects.graph import ops as graph
from mlc.host_caches import host_last_level_cache_bytes
from mlc.targets import WGMMA_ARCHS
from mlc.transforms.analysis.shared_memory_promotion import WGMMA_SHARED_MEMORY_BYTES
from mlc.transforms.analysis.tile_sizes import next_power_of_two
from mlc.transforms.lowering.cpu_prefetch import STORE_KINDS, is_x86_host
from mlc.transforms.lowering.matmul_blocks import choose_matmul_tile, matmul_warps
from mlc.transforms.lowering.matmul_wgmma import WGMMA_PIPELINE_STAGES

TARGETS = ("cpu", "cuda")
Value = int | tuple[int, ...] | str
"""A knob's value: a number, a tuple of numbers (a block shape), or one of a few names (a
categorical option such as `nontemporal-stores`)."""


@dataclass(frozen=True)
class MatmulShape:
    """One product of the workload: `batch` matrices of `rows x depth @ depth x columns`."""

    batch: int
    rows: int
    columns: int
    depth: int
    element_bytes: int


@dataclass(frozen=True)
class WorkloadFacts:
    """What legal values depend on: the largest tensor, the matmuls and whether any other op makes
    a kernel of its own (after graph-decompose)."""

    largest_elements: int
    matmuls: tuple[MatmulShape, ...] = ()
    other_kernels: bool = True
    """Ops besides matmuls that lower to kernels: without them the knobs of elementwise and
    reduction kernels have nothing to act on, and every value would make the same program."""
    reductions: bool = False
    """Reductions, whose kernels take `reduction-warps` (not `num-warps`)."""
    elementwise: bool = True
    """Ops besides matmuls and reductions that make kernels (the only ones `num-warps` sizes)."""
    arch: str = ""
    """The GPU architecture the pipeline lowers for ("" any GPU, or the CPU): on sm_90 f16/bf16
    matmuls may take wgmma blocks."""

    @classmethod
    def of(cls, module: ModuleOp, arch: str = "") -> WorkloadFacts:
        largest = 1
        matmuls = []
        other_kernels = reductions = elementwise = False
        for op in module.walk():
            makes_kernel = op.name.startswith("graph.") and op.name not in KERNEL_FREE_OPS
            other_kernels |= makes_kernel
            reductions |= isinstance(op, graph.REDUCTION_OPS)
            elementwise |= makes_kernel and not isinstance(op, graph.REDUCTION_OPS)
            for result in op.results:
                if isinstance(result.type, TensorType):
                    largest = max(largest, math.prod(result.type.get_shape()))
            if isinstance(op, graph.MatmulOp):
                matmuls.append(_matmul_shape(op.operands[0].type, op.operands[1].type))
        return cls(largest, tuple(matmuls), other_kernels, reductions, elementwise, arch)

    @property
    def wgmma(self) -> bool:
        """Whether f16/bf16 matmuls may run as warpgroup products (matmul_wgmma.py)."""
        return self.arch in WGMMA_ARCHS and any(m.element_bytes == 2 for m in self.matmuls)


KERNEL_FREE_OPS = ("graph.matmul", "graph.constant", "graph.reshape")
"""Graph ops that make no kernel besides a matmul's (a matmul is the matmul knobs' business; a
constant is data; a reshape is a view)."""


def _matmul_shape(lhs: Attribute, rhs: Attribute) -> MatmulShape:
    assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
    a, b = lhs.get_shape(), rhs.get_shape()
    batch = math.prod(max(x, y) for x, y in zip(a[:-2][::-1], b[:-2][::-1])) * math.prod(
        (a[:-2] if len(a) > len(b) else b[:-2])[: abs(len(a) - len(b))]
    )
    return MatmulShape(batch, a[-2], b[-1], a[-1], element_bytes(lhs.element_type))


Candidates = Callable[[WorkloadFacts], tuple[Value, ...]]
Prune = Callable[[Value, WorkloadFacts, str], str | None]


@dataclass(frozen=True)
class Knob:
    """One tunable pass option: `option` as mlc-opt spells it, its legal values for a workload
    (the pass's default first) and the targets where it matters."""

    option: str
    values: Candidates
    meaning: str
    targets: tuple[str, ...] = TARGETS
    prune: Prune | None = None
    """Why `value` cannot run on `target` for this workload, or None when it can."""

    @property
    def field(self) -> str:
        """The pass dataclass's field the option sets."""
        return self.option.replace("-", "_")


def powers_of_two(low: int, high: int) -> list[int]:
    return [1 << bit for bit in range(low.bit_length() - 1, high.bit_length()) if low <= 1 << bit <= high]


def _with_default(default: Value, values: list[Value]) -> tuple[Value, ...]:
    return (default, *(value for value in values if value != default))


# -- the knobs' legal values and pruning rules --------------------------------------------------------

SHARED_MEMORY_BYTES = 48 * 1024
"""Static shared memory a block may declare without opting in to more (every CUDA GPU)."""
SHARED_ROW_PADDING = 16
"""Bytes loop-promote-shared may add to each row of a shared tile (against bank conflicts), at most."""
MAX_ACCUMULATORS = {"cuda": 128, "cpu": 64}
"""Accumulators per thread beyond which a matmul block spills: half of CUDA's 255 registers; on
the CPU the 16 (AVX2) or 32 (AVX-512) vector registers of 4 to 16 lanes."""


def _elements_per_program(facts: WorkloadFacts) -> tuple[Value, ...]:
    if not facts.other_kernels:
        return (2048,)
    # Tiles beyond the largest tensor are that tensor's own tile: the same kernel again.
    return _with_default(2048, list(powers_of_two(256, min(16384, next_power_of_two(facts.largest_elements)))))


def _matmul_tiles(facts: WorkloadFacts) -> tuple[Value, ...]:
    if not facts.matmuls:
        return ((),)
    rows = next_power_of_two(max(m.rows for m in facts.matmuls))
    columns = next_power_of_two(max(m.columns for m in facts.matmuls))
    depth = next_power_of_two(max(m.depth for m in facts.matmuls))
    blocks: list[Value] = [
        (bm, bn, bk)
        for bm in powers_of_two(16, min(128, max(16, rows)))
        for bn in powers_of_two(16, min(256, max(16, columns)))
        for bk in powers_of_two(8, min(32, max(8, depth)))
    ]
    return _with_default((), blocks + _wgmma_tiles(facts))  # (): matmul_blocks.choose_matmul_tile's heuristic


WGMMA_BLOCK_SIZES = (64, 128, 256)
"""Rows and columns of a wgmma block (whole warpgroups of 64 rows, 64-column swizzle blocks, at
most 256: matmul_wgmma.wgmma_applies)."""
WGMMA_DEPTHS = (64, 128)
"""K steps of a wgmma block: whole 128-byte swizzle rows of A."""
WGMMA_ROW_ALIGNMENT = 8
"""Elements (16 bytes) the operands' rows must be a multiple of for wgmma's async copies."""


def _wgmma_tiles(facts: WorkloadFacts) -> list[Value]:
    """The blocks that take warpgroup products on an sm_90 pipeline (f16/bf16 products whose rows
    allow it): mma.sync's blocks stop at a K step of 32, wgmma's start at 64. A block no deeper
    than K has no K loop to pipeline (then mma.sync runs it), so K must exceed the step."""
    halves = [m for m in facts.matmuls if m.element_bytes == 2]
    if not facts.wgmma or not halves or any(m.depth % WGMMA_ROW_ALIGNMENT or m.columns % WGMMA_ROW_ALIGNMENT for m in halves):
        return []
    rows = max(64, next_power_of_two(max(m.rows for m in halves)))
    columns = max(64, next_power_of_two(max(m.columns for m in halves)))
    depth = min(m.depth for m in halves)
    return [
        (bm, bn, bk)
        for bm in WGMMA_BLOCK_SIZES
        for bn in WGMMA_BLOCK_SIZES
        for bk in WGMMA_DEPTHS
        if bm <= rows and bn <= columns and bk < depth
    ]


def _takes_wgmma(block: tuple[int, ...], matmul: MatmulShape, facts: WorkloadFacts) -> bool:
    """Whether convert-tile-to-loop{wgmma=true} lowers `matmul` with `block` to warpgroup
    products (matmul_wgmma.wgmma_applies, for the power-of-two blocks `matmul-tile` takes)."""
    bm, bn, bk = block
    aligned = matmul.depth % WGMMA_ROW_ALIGNMENT == 0 and matmul.columns % WGMMA_ROW_ALIGNMENT == 0
    shaped = bm % 64 == 0 and bn % 64 == 0 and bk % 64 == 0 and max(bm, bn) <= max(WGMMA_BLOCK_SIZES)
    return facts.arch in WGMMA_ARCHS and matmul.element_bytes == 2 and aligned and shaped and bk < matmul.depth


def _wgmma_stage_bytes(block: tuple[int, ...]) -> int:
    """Shared memory of one stage of a wgmma block's f16/bf16 operand tiles (swizzled, unpadded)."""
    bm, bn, bk = block
    return (bm * bk + bk * bn) * 2


def _epilogue_staging_bytes(block: tuple[int, ...]) -> int:
    """Shared memory that loop-stage-epilogue takes beside the stages on sm_90 (mlc.compile's default
    pipeline stages the epilogues of warp-specialized kernels): at least half a 16-row band per
    warp (BM / 16 warps, 8 rows of BN f16 padded by 16 bytes)."""
    bm, bn, _ = block
    return bm // 16 * 8 * (bn + 8) * 2


def _wgmma_shared_bytes(block: tuple[int, ...], stages: int) -> int:
    """Shared memory of a wgmma kernel with `stages` stages of `block` and its staged epilogue."""
    return stages * _wgmma_stage_bytes(block) + _epilogue_staging_bytes(block)


def _prune_matmul_tile(value: Value, facts: WorkloadFacts, target: str) -> str | None:
    if not value:
        return None
    assert isinstance(value, tuple)
    bm, bn, bk = value
    if target == "cuda" and any(_takes_wgmma(value, m, facts) for m in facts.matmuls):
        # Warpgroup products: BM / 16 warps hold BN / 2 accumulators each; the operands are staged
        # in at least MIN_WGMMA_STAGES buffers (swizzled: a register copy cannot write that layout).
        staged = _wgmma_shared_bytes(value, MIN_WGMMA_STAGES)
        if staged > WGMMA_SHARED_MEMORY_BYTES:
            return f"{MIN_WGMMA_STAGES} stages of the operand tiles and the staged epilogue take {staged} bytes of shared memory (at most {WGMMA_SHARED_MEMORY_BYTES})"
        return None
    threads = 32 * matmul_warps(bm, bn)
    if target == "cuda" and bm * bn // threads > MAX_ACCUMULATORS[target]:  # the CPU's: micro-kernel
        return f"{bm * bn // threads} accumulators per thread (at most {MAX_ACCUMULATORS[target]} on {target})"
    widest = max((m.element_bytes for m in facts.matmuls), default=4)
    shared = bm * (bk * widest + SHARED_ROW_PADDING) + bk * (bn * widest + SHARED_ROW_PADDING)
    if target == "cuda" and shared > SHARED_MEMORY_BYTES:
        return f"{shared} bytes of shared memory for the operand tiles (at most {SHARED_MEMORY_BYTES})"
    return None


def _stages(facts: WorkloadFacts) -> tuple[Value, ...]:
    if not facts.matmuls:
        return (0,)
    # wgmma's smaller blocks have room for more stages in their 200 KiB (see _wgmma_stages_fit).
    return (0, 1, 2, 3, 4, 5, 6) if facts.wgmma else (0, 1, 2, 3, 4)


MIN_WGMMA_STAGES = 3
"""Stages a wgmma kernel lowers with, at least: each product stays in flight one K step after its
own (`async_pipeline.overlap_products`), so its copies run two steps ahead; fewer fail to lower."""


def _wgmma_stages_fit(config: Mapping[str, Value], facts: WorkloadFacts, target: str) -> str | None:
    """Every wgmma kernel's stages (the `stages` knob, 0: its default) within MIN_WGMMA_STAGES and
    the shared memory loop-promote-shared gives them: it gives a second operand the first one's
    count or none, and a wgmma operand without stages does not lower."""
    if target != "cuda" or not facts.wgmma:
        return None
    stages = config.get("loop-promote-shared.stages", 0) or WGMMA_PIPELINE_STAGES  # 0: the kernel's
    chosen = config.get("convert-graph-to-tile.matmul-tile", ())
    for m in facts.matmuls:
        block = chosen or choose_matmul_tile(m.batch, m.rows, m.columns, m.depth, half=m.element_bytes == 2, wgmma=True)
        if not _takes_wgmma(tuple(block), m, facts):
            continue
        if stages < MIN_WGMMA_STAGES:
            return f"{stages} stages: a wgmma kernel needs at least {MIN_WGMMA_STAGES}"
        if _wgmma_shared_bytes(tuple(block), stages) > WGMMA_SHARED_MEMORY_BYTES:
            return f"{stages} stages of {tuple(block)} and the staged epilogue take {_wgmma_shared_bytes(tuple(block), stages)} bytes of shared memory (at most {WGMMA_SHARED_MEMORY_BYTES})"
    return None


RULES: tuple[Callable[[Mapping[str, Value], WorkloadFacts, str], str | None], ...] = (_wgmma_stages_fit,)
"""Prune rules over several knobs of a configuration (`SearchSpace.invalid` runs them after each
knob's own rule): why the configuration cannot run, or None."""


MAX_VECTOR_ACCUMULATORS = 28
"""Vector accumulators of a CPU micro-kernel, at most: 32 registers (AVX-512) less the operands."""


def _cpu_micro_kernels(facts: WorkloadFacts) -> tuple[Value, ...]:
    if not facts.matmuls:
        return ((),)
    shapes: list[Value] = [(8, 32, 16), (4, 32, 16), (8, 16, 16), (16, 16, 16), (16, 32, 16), (8, 16, 8), (4, 16, 8), (8, 8, 8)]
    return _with_default((), shapes)  # (): the host's 8 x 2W of W lanes (cpu_micro_kernel.default_micro_kernel)


def _prune_micro_kernel(value: Value, facts: WorkloadFacts, target: str) -> str | None:
    if not value:
        return None
    assert isinstance(value, tuple)
    rows, columns, width = value
    if rows * columns // width > MAX_VECTOR_ACCUMULATORS:
        return f"{rows * columns // width} vector accumulators (at most {MAX_VECTOR_ACCUMULATORS})"
    return None


def _nontemporal_stores(facts: WorkloadFacts) -> tuple[Value, ...]:
    """auto, on, off where the choice is close: an x86 host whose last-level cache the largest
    tensor's two streams (read and written, f32) fill at least half of. Below that, streaming
    stores only lose (a result the next kernel reads is evicted; host17's -x on 16 MiB was 1.1-1.4x
    slower with them) and the knob would triple the space for nothing; auto is the heuristic."""
    cache_bytes = host_last_level_cache_bytes()
    streamed_bytes = 2 * 4 * facts.largest_elements
    if not (facts.other_kernels and is_x86_host()) or cache_bytes is None or 2 * streamed_bytes < cache_bytes:
        return ("auto",)  # (auto stores ordinarily where the cache's size is unknown)
    return STORE_KINDS


def _min_parallel_elements(facts: WorkloadFacts) -> tuple[Value, ...]:
    # Thresholds above every buffer all mean "one thread": keep the first of them only.
    cap = max(1 << 12, next_power_of_two(facts.largest_elements))
    return _with_default(1 << 16, list(powers_of_two(1 << 12, min(1 << 20, cap))))


KNOBS: dict[str, tuple[Knob, ...]] = {
    "convert-graph-to-tile": (
        Knob("elements-per-program", _elements_per_program, "elements of a (non-matmul) kernel's tile"),
        Knob("num-warps", lambda facts: (4, 1, 2, 8, 16) if facts.other_kernels and facts.elementwise else (4,), "warps of an elementwise kernel's block", ("cuda",)),
        Knob("reduction-warps", lambda facts: (0, 1, 2, 4, 8, 16, 32) if facts.reductions else (0,), "warps of a reduction kernel's block (0: the heuristic's)", ("cuda",)),
        Knob("matmul-tile", _matmul_tiles, "(BM, BN, BK) block of every matmul", prune=_prune_matmul_tile),
    ),
    "convert-tile-to-loop": (
        Knob("vector-bytes", lambda facts: (16, 4, 8), "bytes of a thread's vector access", ("cuda",)),
        Knob("vector-bytes", lambda facts: (16, 4, 8, 32), "bytes of a thread's vector access", ("cpu",)),
    ),
    "loop-promote-shared": (
        Knob("stages", _stages, "async-copy stages of promoted tiles (0: the kernel's mlc.pipeline_stages)", ("cuda",)),
    ),
    "convert-tile-dot-to-cpu": (
        Knob("micro-kernel", _cpu_micro_kernels, "(MR, NR, W) register micro-tile of CPU matmuls", ("cpu",), prune=_prune_micro_kernel),
    ),
    "convert-tile-rows-to-cpu": (
        Knob("vector-width", lambda facts: (0, 16, 8, 4) if facts.other_kernels else (0,), "f32 lanes of CPU row kernels' vectors (0: the host's)", ("cpu",)),
        Knob("accumulators", lambda facts: (4, 1, 2, 8) if facts.other_kernels else (4,), "vector accumulators of each CPU row reduction", ("cpu",)),
        Knob("interleaved-rows", lambda facts: (1, 2, 4) if facts.other_kernels else (1,), "rows each CPU row kernel's column loops compute at once", ("cpu",)),
        Knob("nontemporal-stores", _nontemporal_stores, "CPU row kernels' result stores bypassing the caches (auto: beyond 1.5x the last-level cache)", ("cpu",)),
    ),
    "convert-loop-to-cpu": (
        Knob("min-parallel-elements", _min_parallel_elements, "smallest kernel split over threads", ("cpu",)),
    ),
}
"""Every pass's knobs, by the pass's CLI name (see the module docstring)."""
