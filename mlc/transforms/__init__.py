"""The pass registry: every pass mlc-opt, the Python API and the xdsl.universe entry point know.

One pass is one file and one CLI name (the file is the name with underscores), in the package of
the level it works on: `graph/`, `tile/`, `loop/`, `gpu/`, `llvm/` (a conversion sits with the level
it starts from). What passes share lives beside them: `analysis/` (facts about IR) and `lowering/`
(kernel builders and the LLVM conversion framework). A pass never imports another pass
(`test/python/test_layering.py` checks it). `MLC_PASSES` maps each name to `module:Class`, so
that tools import a pass only when it is used (mlc-opt starts faster).
`XDSL_PASSES` are the upstream xDSL passes that mlc pipelines use and that mlc-opt offers too.
Named pipelines (`mlc-lower-to-gpu`, ...) are passes as well; see `pipelines.py`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

MLC_PASSES: dict[str, str] = {
    "convert-arith-to-llvm": "mlc.transforms.llvm.convert_arith_to_llvm:ConvertArithToLLVM",
    "convert-cf-to-llvm": "mlc.transforms.llvm.convert_cf_to_llvm:ConvertCfToLLVM",
    "convert-math-to-llvm": "mlc.transforms.llvm.convert_math_to_llvm:ConvertMathToLLVM",
    "convert-memref-to-llvm": "mlc.transforms.llvm.convert_memref_to_llvm:ConvertMemRefToLLVM",
    "convert-vector-to-llvm": "mlc.transforms.llvm.convert_vector_to_llvm:ConvertVectorToLLVM",
    "expand-math-for-cpu": "mlc.transforms.llvm.expand_math_for_cpu:ExpandMathForCpu",
    "convert-graph-to-tile": "mlc.transforms.graph.convert_graph_to_tile:ConvertGraphToTile",
    "graph-decompose": "mlc.transforms.graph.graph_decompose:GraphDecompose",
    "graph-fold-constants": "mlc.transforms.graph.graph_fold_constants:GraphFoldConstants",
    "graph-fuse": "mlc.transforms.graph.graph_fuse:GraphFuse",
    "graph-inline-fusion": "mlc.transforms.graph.graph_inline_fusion:GraphInlineFusion",
    "graph-pad-matmul-operands": "mlc.transforms.graph.graph_pad_matmul_operands:GraphPadMatmulOperands",
    "graph-transpose-tf32-rhs": "mlc.transforms.graph.graph_transpose_tf32_rhs:GraphTransposeTf32Rhs",
    "graph-split-column-reductions": "mlc.transforms.graph.graph_split_column_reductions:GraphSplitColumnReductions",
    "graph-plan-memory": "mlc.transforms.graph.graph_plan_memory:GraphPlanMemory",
    "graph-simplify": "mlc.transforms.graph.graph_simplify:GraphSimplify",
    "view-op-graph": "mlc.transforms.graph.view_op_graph:ViewOpGraph",
    "convert-tile-dot-to-cpu": "mlc.transforms.tile.convert_tile_dot_to_cpu:ConvertTileDotToCpu",
    "convert-tile-rows-to-cpu": "mlc.transforms.tile.convert_tile_rows_to_cpu:ConvertTileRowsToCpu",
    "convert-tile-to-loop": "mlc.transforms.tile.convert_tile_to_loop:ConvertTileToLoop",
    "tile-merge-identical-kernels": "mlc.transforms.tile.tile_merge_identical_kernels:TileMergeIdenticalKernels",
    "convert-loop-to-cpu": "mlc.transforms.loop.convert_loop_to_cpu:ConvertLoopToCpu",
    "convert-loop-to-gpu": "mlc.transforms.loop.convert_loop_to_gpu:ConvertLoopToGpu",
    "convert-gpu-to-nvvm": "mlc.transforms.gpu.convert_gpu_to_nvvm:ConvertGpuToNvvm",
    "gpu-insert-barriers": "mlc.transforms.gpu.gpu_insert_barriers:GpuInsertBarriers",
    "loop-double-buffer": "mlc.transforms.loop.loop_double_buffer:LoopDoubleBuffer",
    "loop-group-tiles": "mlc.transforms.loop.loop_group_tiles:LoopGroupTiles",
    "loop-persistent-tiles": "mlc.transforms.loop.loop_persistent_tiles:LoopPersistentTiles",
    "loop-stage-epilogue": "mlc.transforms.loop.loop_stage_epilogue:LoopStageEpilogue",
    "loop-promote-shared": "mlc.transforms.loop.loop_promote_shared:LoopPromoteShared",
    "loop-unroll": "mlc.transforms.loop.loop_unroll:LoopUnroll",
    "mlc-lower-to-cpu": "mlc.transforms.pipelines:LowerToCpu",
    "mlc-lower-to-gpu": "mlc.transforms.pipelines:LowerToGpu",
}

XDSL_PASSES: dict[str, str] = {
    "canonicalize": "xdsl.transforms.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
    "licm": "xdsl.transforms.loop_invariant_code_motion:LoopInvariantCodeMotionPass",
    "convert-scf-to-cf": "xdsl.transforms.convert_scf_to_cf:ConvertScfToCf",
    "reconcile-unrealized-casts": "xdsl.transforms.reconcile_unrealized_casts:ReconcileUnrealizedCastsPass",
}

PASS_SUMMARIES: dict[str, str] = {
    "canonicalize": "Fold constants and apply each op's canonicalization patterns.",
    "cse": "Eliminate common subexpressions.",
    "dce": "Remove operations whose results are unused and that have no side effects.",
    "licm": "Move loop-invariant operations without side effects out of loops.",
    "convert-scf-to-cf": "Lower scf.for and scf.if to cf branches between blocks.",
    "reconcile-unrealized-casts": "Remove pairs of unrealized conversion casts that cancel out.",
}
"""One-line summaries of the xDSL passes (mlc's passes take theirs from their docstring)."""


def _loader(location: str) -> Callable[[], type[ModulePass]]:
    module_name, class_name = location.split(":")

    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(module_name), class_name)

    return load


def mlc_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """mlc's own passes, by CLI name (what the xdsl.universe entry point exports)."""
    return {name: _loader(location) for name, location in MLC_PASSES.items()}


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """mlc's passes and the xDSL passes it uses, by CLI name."""
    passes = {name: _loader(location) for name, location in XDSL_PASSES.items()}
    return passes | mlc_passes()


def get_pass(name: str) -> type[ModulePass]:
    """The pass class registered as `name`; KeyError if there is none."""
    return all_passes()[name]()
