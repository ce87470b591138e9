"""Named pipelines: the standard routes from the graph level down to a device.

    mlc-lower-to-gpu    graph -> tile -> loop -> mlc_gpu -> llvm (NVVM), ready for PTX
    mlc-lower-to-cpu    graph -> tile -> loop -> llvm, ready for the CPU JIT

Both start with the graph-level optimisations (graph-simplify, graph-fold-constants, cse), which
are exact: they change no result bit. Then the graph level decides the kernels, as IR a person can
read and edit: graph-decompose rewrites composite ops into the primitives kernels compute,
graph-fuse groups ops into `graph.fusion` regions (one kernel each; convert-graph-to-tile follows
them and groups nothing itself; on the GPU with `compute-model=gpu`, so that a GEMM chain is fused
only where its kernel beats separate tensor-core kernels at measured rates) and graph-plan-memory
places the intermediates in one arena. mlc-lower-to-cpu runs graph-split-column-reductions before
graph-fuse (long reductions over a non-last axis as partial reductions of row blocks: more
programs for the threads). The GPU pipeline's graph-fuse (`GPU_FUSE`) sets `store-layouts`: an
implicit GEMM stores its product through the slice and transpose back to NCHW (`tile.scatter`)
instead of leaving them to a layout kernel (not on the CPU: convert-tile-dot-to-cpu's vector kernels
store blocks, a kernel with `tile.scatter` would take the slower generic loop lowering).
At the tile level, tile-merge-identical-kernels keeps one kernel of each set of identical ones (a
repeated layer), so that everything after it lowers and compiles each distinct kernel once.

Each is a pass (usable inside `--pass-pipeline`) that expands into plain passes;
`mlc-opt --dump-pass-pipeline` prints the expansion. Option: `precision` (`mlc-lower-to-cpu{precision=tf32}`),
passed to convert-graph-to-tile: the precision of f32 matmuls that do not state their own.
`mlc-lower-to-gpu{arch=sm_90}` (what `mlc.compile` asks for on an sm_90 GPU; "" by default, any
GPU) lowers f16/bf16 matmuls for Hopper: graph-pad-matmul-operands{wgmma=true} pads ragged operand
rows to 16-byte multiples, graph-transpose-tf32-rhs{wgmma=true} gives TF32 matmuls a K-major B
(the only layout TF32 wgmma reads), convert-graph-to-tile{wgmma=true} picks wgmma blocks and
convert-tile-to-loop{tensor-cores=true wgmma=true} warpgroup products (sm_90a code, which the
back end then builds for an sm_90 target); other architectures keep mma.sync. With `tma=true`
(opt-in, sm_90 only: `mlc.compile(..., pipeline="mlc-lower-to-gpu{arch=sm_90 tma=true}")`),
loop-promote-shared{tma=true} stages the wgmma operands with bulk tensor copies on mbarriers
(`mlc.tma`; convert-gpu-to-nvvm adds the tensor-map parameters the runtime fills); with
`warp-specialize=true` besides, a producer warpgroup issues them and the other warpgroups consume
(full/empty mbarriers, no `bar.sync` in the K loop: `warp_specialization.py`). `group-tiles=G`
(opt-in) runs loop-group-tiles{group=G} before convert-loop-to-gpu: 2-D grids in grouped order;
`l2-group-tiles=G` (mlc.compile's sm_90 default: G = 8) runs it with `l2-bytes` = 50 MiB instead: only the tensor-core kernels
that read an operand larger than L2 are grouped (the pass decides per kernel; `group-tiles` wins).
`stage-epilogue=true` (opt-in, with warp-specialize=true) runs loop-stage-epilogue before
loop-promote-shared: each warp stores its band of the tile through shared memory, 16 bytes a lane.
`persistent-tiles=P` (opt-in, with warp-specialize=true) runs loop-persistent-tiles{blocks=P} after
loop-group-tiles: the warp-specialized products run on a persistent grid of P blocks, each looping
over tiles, its producer loading the next tile's stages during the epilogue (measured slower on an
H100, so not mlc.compile's default: BENCHMARKS.md, "A persistent grid ...").
`tf32-swap=true` (sm_90; in `mlc.compile`'s default, `compiler.HOPPER_STAGING`) runs
graph-transpose-tf32-rhs{swap-operands=true}: a plain TF32 product on a row-major B is computed
transposed (`mlc.swap_operands`) instead of after a transpose kernel of B.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.passes import ModulePass

from mlc.dialects.precision import DEFAULT_PRECISION
from mlc.passes import NamedPipeline, build_pipeline
from mlc.targets import WGMMA_ARCHS
from mlc.transforms import all_passes
from mlc.transforms.graph.convert_graph_to_tile import ConvertGraphToTile
from mlc.transforms.graph.graph_pad_matmul_operands import GraphPadMatmulOperands
from mlc.transforms.graph.graph_transpose_tf32_rhs import GraphTransposeTf32Rhs
from mlc.transforms.loop.convert_loop_to_gpu import ConvertLoopToGpu
from mlc.transforms.loop.loop_group_tiles import L2_BYTES, LoopGroupTiles
from mlc.transforms.loop.loop_persistent_tiles import LoopPersistentTiles
from mlc.transforms.loop.loop_stage_epilogue import LoopStageEpilogue
from mlc.transforms.loop.loop_promote_shared import LoopPromoteShared
from mlc.transforms.tile.convert_tile_to_loop import ConvertTileToLoop

_GRAPH = "graph-simplify,graph-fold-constants,cse,graph-decompose,cse,{pad}graph-fold-constants,graph-fuse{chain_model},graph-plan-memory"
_TO_TILE = (
    f"{_GRAPH},convert-graph-to-tile{{graph_to_tile}},cse,canonicalize,tile-merge-identical-kernels,"
    "{dot_lowering}convert-tile-to-loop{tensor_cores},cse,canonicalize"
)
_TO_LLVM = (
    "convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{{library={library}}},"
    "convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts,cse"
)

GPU_FUSE_OPTIONS = ("compute-model=gpu", "store-layouts=true")
"""graph-fuse's options in the GPU pipeline; `gpu_fuse` spells it with more."""


def gpu_fuse(*more_options: str) -> str:
    """The GPU pipeline's graph-fuse with `more_options` besides (`gpu_fuse("fast-math=true")`), for
    callers that vary it: `GPU_PIPELINE.replace(GPU_FUSE, gpu_fuse(...))`."""
    return "graph-fuse{" + " ".join((*GPU_FUSE_OPTIONS, *more_options)) + "}"


GPU_FUSE = gpu_fuse()
GPU_PIPELINE = f"{_TO_TILE.format(pad='graph-pad-matmul-operands,graph-transpose-tf32-rhs,', chain_model=GPU_FUSE.removeprefix('graph-fuse'), graph_to_tile='', dot_lowering='', tensor_cores='{tensor-cores=true}')},loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers,convert-gpu-to-nvvm," + _TO_LLVM.format(
    library="libdevice"
)
CPU_PIPELINE = f"{_TO_TILE.format(pad='graph-split-column-reductions,', chain_model='', graph_to_tile='{target=cpu}', dot_lowering='convert-tile-dot-to-cpu,convert-tile-rows-to-cpu,', tensor_cores='')},loop-unroll,convert-loop-to-cpu,expand-math-for-cpu," + _TO_LLVM.format(
    library="libm"
)


def _with_precision(passes: list[ModulePass], precision: str) -> list[ModulePass]:
    """`passes` with convert-graph-to-tile's and graph-transpose-tf32-rhs's `precision` option set."""
    return [
        dataclasses.replace(module_pass, precision=precision) if isinstance(module_pass, ConvertGraphToTile | GraphTransposeTf32Rhs) else module_pass
        for module_pass in passes
    ]


def _with_wgmma(passes: list[ModulePass]) -> list[ModulePass]:
    """`passes` with graph-pad-matmul-operands', graph-transpose-tf32-rhs's, convert-graph-to-tile's
    and convert-tile-to-loop's `wgmma` option set."""
    wgmma_passes = ConvertGraphToTile | ConvertTileToLoop | GraphPadMatmulOperands | GraphTransposeTf32Rhs
    return [
        dataclasses.replace(module_pass, wgmma=True) if isinstance(module_pass, wgmma_passes) else module_pass
        for module_pass in passes
    ]


@dataclass(frozen=True)
class LowerToGpu(NamedPipeline):
    """Lower graph functions to NVVM-flavoured LLVM kernels and host launches."""

    name = "mlc-lower-to-gpu"

    precision: str = DEFAULT_PRECISION
    """convert-graph-to-tile's: the precision of f32 matmuls without a `precision` of their own."""
    arch: str = ""
    """The GPU's architecture (`sm_90`, ...); sm_90 and sm_90a take the wgmma lowering; "" any GPU."""
    tma: bool = False
    """Opt-in, with a wgmma `arch`: loop-promote-shared{tma=true} stages the warpgroup products'
    operands with bulk tensor copies (TMA) on mbarriers instead of cp.async."""
    warp_specialize: bool = False
    """Opt-in, with `tma`: loop-promote-shared{warp-specialize=true}, a producer warpgroup and consumers."""
    group_tiles: int = 0
    """Opt-in: loop-group-tiles{group=G} before convert-loop-to-gpu (2-D grids in grouped order); 0 off."""
    l2_group_tiles: int = 0
    """Opt-in: loop-group-tiles{group=G l2-bytes=L2_BYTES}, where `group_tiles` is 0: only tensor-core
    kernels reading an operand larger than L2 run in grouped order; 0 off."""
    stage_epilogue: bool = False
    """Opt-in, with `warp_specialize`: loop-stage-epilogue before loop-promote-shared (warpgroup-product
    tiles stored through shared memory, 16 bytes a lane)."""
    persistent_tiles: int = 0
    """Opt-in, with `warp_specialize`: loop-persistent-tiles{blocks=P} after loop-group-tiles, a
    persistent grid of P blocks (the device's multiprocessors) looping over the tiles; 0 off."""
    tf32_swap: bool = False
    """With a wgmma `arch`: graph-transpose-tf32-rhs{swap-operands=true}, plain TF32 products on a
    row-major B computed transposed (B's block in wgmma's A registers, two register sets) instead of
    after a transpose kernel; off by default here, on in `mlc.compile`'s sm_90 default
    (`compiler.HOPPER_STAGING`: 4096^3 0.92-0.94x cuBLAS-TF32 against 0.81-0.86x, BENCHMARKS.md, tf16)."""

    def __post_init__(self) -> None:
        ConvertGraphToTile(precision=self.precision)  # checks the value
        if self.arch and not (self.arch.startswith("sm_") and self.arch[3:].rstrip("a").isdigit()):
            raise ValueError(f"arch must be a GPU architecture such as sm_80 or sm_90, got {self.arch}")
        if self.tma and self.arch not in WGMMA_ARCHS:
            raise ValueError(f"tma=true stages wgmma operands: it needs arch={' or '.join(WGMMA_ARCHS)}, got arch={self.arch or '(none)'}")
        if self.warp_specialize and not self.tma:
            raise ValueError("warp-specialize=true splits the TMA pipeline: it needs tma=true")
        if self.group_tiles < 0:
            raise ValueError(f"group-tiles must be 0 (off) or a positive number of row blocks, got {self.group_tiles}")
        if self.l2_group_tiles < 0:
            raise ValueError(f"l2-group-tiles must be 0 (off) or a positive number of row blocks, got {self.l2_group_tiles}")
        if self.persistent_tiles < 0:
            raise ValueError(f"persistent-tiles must be 0 (off) or the persistent grid's blocks, got {self.persistent_tiles}")
        if self.persistent_tiles and not self.warp_specialize:
            raise ValueError("persistent-tiles=P loops the warp-specialized product over tiles: it needs tma=true warp-specialize=true")
        if self.tf32_swap and self.arch not in WGMMA_ARCHS:
            raise ValueError(f"tf32-swap=true computes TF32 products for wgmma: it needs arch={' or '.join(WGMMA_ARCHS)}, got arch={self.arch or '(none)'}")
        if self.stage_epilogue and not self.warp_specialize:
            # Beside the lockstep pipelines the staging costs a stage (3 of 48 KiB fit beside its 66 KiB),
            # and 3 stages prefetch one K step ahead there: 1.5x slower on an H100 (BENCHMARKS.md, ninth step).
            raise ValueError("stage-epilogue=true stages the tiles of warp-specialized kernels: it needs tma=true warp-specialize=true")

    def passes(self) -> list[ModulePass]:
        passes = _with_precision(build_pipeline(GPU_PIPELINE, all_passes(), mlir_syntax=False), self.precision)
        if self.tma:
            passes = [dataclasses.replace(p, tma=True, warp_specialize=self.warp_specialize) if isinstance(p, LoopPromoteShared) else p for p in passes]
        if self.tf32_swap:
            passes = [dataclasses.replace(p, swap_operands=True) if isinstance(p, GraphTransposeTf32Rhs) else p for p in passes]
        if self.stage_epilogue:
            at = next(index for index, p in enumerate(passes) if isinstance(p, LoopPromoteShared))
            passes = [*passes[:at], LoopStageEpilogue(), *passes[at:]]
        grouping = LoopGroupTiles(group=self.group_tiles) if self.group_tiles else None
        if grouping is None and self.l2_group_tiles:
            grouping = LoopGroupTiles(group=self.l2_group_tiles, l2_bytes=L2_BYTES)
        if grouping is not None:
            at = next(index for index, p in enumerate(passes) if isinstance(p, ConvertLoopToGpu))
            passes = [*passes[:at], grouping, *passes[at:]]
        if self.persistent_tiles:
            at = next(index for index, p in enumerate(passes) if isinstance(p, ConvertLoopToGpu))
            passes = [*passes[:at], LoopPersistentTiles(blocks=self.persistent_tiles), *passes[at:]]
        return _with_wgmma(passes) if self.arch in WGMMA_ARCHS else passes


@dataclass(frozen=True)
class LowerToCpu(NamedPipeline):
    """Lower graph functions to LLVM kernels for the CPU and host launches."""

    name = "mlc-lower-to-cpu"

    precision: str = DEFAULT_PRECISION
    """convert-graph-to-tile's: the precision of f32 matmuls without a `precision` of their own."""

    def __post_init__(self) -> None:
        ConvertGraphToTile(precision=self.precision)  # checks the value

    def passes(self) -> list[ModulePass]:
        return _with_precision(build_pipeline(CPU_PIPELINE, all_passes(), mlir_syntax=False), self.precision)
