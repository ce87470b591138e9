"""graph-fuse: partitions each graph function into fusion groups, one per future kernel.

Every group becomes a `graph.fusion` region (see `mlc/dialects/graph/fusion.py`) whose operands
are the values the group reads and whose results are the values used after it, so the plan of
kernels is plain, printable IR:

    %h = graph.fusion matmul "main_1_matmul_add_relu" (%x_1 = %x : tensor<8x16xf32>, ...)
           -> tensor<8x32xf32> { ... graph.yield %2 : tensor<8x32xf32> }

Rules, in the manner of TVM's FuseOps (the partition is `fusion_groups.partition` with
`GRAPH_RULES`; its docstring has the algorithm: a greedy walk from the sinks in which an op joins
the group of its users when all of them are in one group, so groups never form a cycle):

* elementwise ops, broadcasts and reshapes fuse into chains and DAGs over one domain; a reshape
  only at a group's entrance (it reinterprets memory), a lone reshape is no group (it is a view);
* a reduction (`reduce_*`, `softmax`, `layer_norm`) absorbs its elementwise producers and
  consumers; reductions over the same axes of the same shape share a group;
* a matmul or conv2d (kind `matmul` / `conv`) absorbs an elementwise epilogue (bias add,
  activation, residual add, ...): consumers only, and only when the epilogue's domain is the
  contraction's result shape; two contractions are never in one group, and no reduction joins one.
  The epilogue may hold elementwise ops on other inputs that it alone uses (SwiGLU's
  `silu(gate) * up` is the up-projection's epilogue, reading `gate`);
* transpose, slice and concat (layout ops) join their consumers' group like elementwise ops, and
  take other layout ops, broadcasts and reshapes as producers (the kernel reads the chain from
  memory through composed index maps, `analysis/layout_maps.py`), never a computed value;
* every other op (pooling, convolution before graph-decompose) is a group of its own, of kind
  `opaque`, so that every kernel-launching op is in exactly one group;
* constants stay outside (they become operands) and so does code already in a `graph.fusion`;
  ops whose results are never used are erased first (graph ops are side-effect free).

GEMM chains come first: every attention chain (`analysis/gemm_chain.py`: matmul, scale and
mask, softmax, matmul) for which Chimera's data-movement model finds blocks that fit in
`on-chip-bytes` and pay (bytes moved; with `compute-model=gpu`, as the GPU pipeline sets, also
the products' measured speed: a roofline estimate of each side) becomes a region of kind `chain`
with `mlc.chain = "attention"` and the model's choice and numbers in `mlc.chain_plan` (a transpose
making Kt joins it as a swap of a K [..., N, D] it reads in place: `view_rewrites.split_key_transpose`;
the layout ops making Q, K or V from a stored value, and a transpose of O, join it where the kernel
can read or write their view in place, as the head split of a projection: `chain_operand_views.py`);
a chain it rejects is left to the rules below, its last matmul marked with `mlc.chain_fallback` (the reason). Implicit GEMMs come next: a matmul
whose lhs is row-shifted slices of one 2-D value side by side (`analysis/operand_maps.py`; a
stride-1 convolution after graph-decompose) becomes a region of kind `matmul` holding those layout
ops and the matmul, marked `mlc.implicit_gemm` (the shifts): its kernel reads the value in place,
so the column matrix is never written (unless a layout op of the chain is read elsewhere too); with
`store-layouts` (the GPU pipeline's) the layout chain that alone reads its product (the slice and
transpose back to NCHW, `output_layout_chain`) joins too: the kernel stores through it.
The rules then partition the rest; a lone transpose of the last two dimensions that only a matmul
reads (the torch `linear` weight), or the last of a group of transposes (graph-transpose-tf32-rhs's
`transpose(transpose(b))`: the inner one is written), joins its group, marked `mlc.operand_major`
(`analysis/operand_maps.py`): the kernel reads the stored layout, writing no transposed copy.
Option `matmul-chains` (opt-in) also fuses plain chains `matmul(f(matmul(A, B)), C)` (f
elementwise: a two-layer MLP's bias and activation), the same kernel without the softmax
(`mlc.chain = "matmul"`), where the same model says it pays. Option `fast-math` (opt-in) adds `fast_math` to every chain's plan: its kernel may compute the
scores in f32 without the graph's per-op roundings and use `exp2` (`attention_kernel.py`); so
does a scores product marked `mlc.fused_attention` (PyTorch's SDPA, which computes so itself).

Kinds: `matmul`/`conv` for groups with a contraction, `reduction` for groups with a reduction,
`elementwise` otherwise, `opaque` for the single ops above. Names are
`<function>_<index>_<up to four op names>`, indices in program order (the style of
convert-graph-to-tile's kernel names).

Placement. Groups and the ops left outside are scheduled in a topological order that keeps the
original program order where the dependencies allow (Kahn's algorithm, earliest first), since a
group's ops need not be contiguous in the input.

Semantics are unchanged exactly: a fusion means its body (the interpreter evaluates the same ops on
the same values). A memory plan made before fusion (graph-plan-memory) no longer describes the
function and is removed; run graph-plan-memory after graph-fuse, which then plans the groups'
outputs only: what stays inside a group lives in registers.

Preconditions: a `func.func` with one block of graph ops ending in `func.return`; other functions
(host code, declarations, functions with other ops) are left alone.

The plan is what the kernels follow: convert-graph-to-tile builds one kernel per `graph.fusion`
and groups nothing itself, so editing the regions (splitting, merging, removing one) changes the
kernels, and a region that cannot be one kernel is reported there. Run graph-decompose first (the
named pipelines do): the kernel builder needs decomposed reductions, and an anchor takes only an
elementwise epilogue (no reshape), never a product that is also returned. The regions themselves
(a group's ops moved into a `graph.fusion`, the chain and implicit-GEMM regions) are made by
`lowering/fusion_regions.py`; this file plans and schedules the groups.

Limits. The greedy choice is not cost-based: a value read by two groups is neither recomputed in
both nor merged into them after they merge as siblings (an RMS norm feeding both a softmax and a
row sum of the same rows makes two kernels, not one). A layout op does not fuse with the
elementwise ops that produce its operand (TVM fuses injective ops both ways): the kernel would
recompute them at the mapped positions, which it does not do yet.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.fusion_groups import FusionGroup, FusionRules, partition
from mlc.transforms.analysis.attention_cost import COMPUTE_MODELS, DEFAULT_ON_CHIP_BYTES
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS
from mlc.transforms.analysis.memory_plan import forget_memory_plan
from mlc.transforms.analysis.operand_maps import (
    ends_transpose_chain,
    operand_major_in,
    transposed_operands,
)
from mlc.transforms.lowering.fusion_regions import (
    ChainOptions,
    PlannedGroup,
    fuse_chains,
    fuse_implicit_gemms,
    make_fusion,
)
from mlc.transforms.lowering.graph_rewriting import is_graph_op

GRAPH_REDUCTIONS = (*graph.REDUCTION_OPS, *graph.NORMALIZATION_OPS)
GRAPH_RULES = FusionRules(
    fusible=(
        *graph.ELEMENTWISE_OPS,
        graph.BroadcastOp,
        graph.ReshapeOp,
        *LAYOUT_OPS,
        *GRAPH_REDUCTIONS,
        *graph.CONTRACTION_OPS,
    ),
    reductions=GRAPH_REDUCTIONS,
    anchors=graph.CONTRACTION_OPS,
)
"""The fusion rules of graph-fuse (see the module docstring)."""

ANCHOR_KINDS: dict[type[Operation], str] = {graph.MatmulOp: "matmul", graph.Conv2dOp: "conv"}


def is_fusible_function(op: Operation) -> bool:
    """A function graph-fuse works on: one block of graph ops ending in `func.return`."""
    if not isinstance(op, func.FuncOp) or len(op.body.blocks) != 1:
        return False
    body = op.body.block
    return isinstance(body.last_op, func.ReturnOp) and all(
        is_graph_op(inner) for inner in body.ops if inner is not body.last_op
    )


def _kind(group: FusionGroup) -> str:
    if group.anchor is not None:
        return ANCHOR_KINDS[type(group.anchor)]
    if any(isinstance(op, GRAPH_REDUCTIONS) for op in group.ops):
        return "reduction"
    return "elementwise"


def _is_opaque(op: Operation) -> bool:
    """A graph op that computes something but fuses with nothing: a group of its own."""
    return not isinstance(op, (graph.ConstantOp, graph.FusionOp, graph.YieldOp, *GRAPH_RULES.fusible))


def plan_groups(function: func.FuncOp) -> list[PlannedGroup]:
    """The fusion groups of `function`'s top-level ops (its dead ops must be erased already)."""
    planned = [
        PlannedGroup(_kind(group), tuple(group.ops))
        for group in partition(function, GRAPH_RULES)
        if not (len(group.ops) == 1 and isinstance(group.ops[0], graph.ReshapeOp))
    ]
    planned += [
        PlannedGroup("opaque", (op,))
        for op in function.body.block.ops
        if is_graph_op(op) and _is_opaque(op)
    ]
    return planned


def absorb_operand_transposes(groups: list[PlannedGroup]) -> list[PlannedGroup]:
    """`groups` with each lone transpose a matmul reads in place (`transposed_operands`) moved into
    the matmul's group (see the module docstring)."""
    group_of = {op: group for group in groups for op in group.ops}
    moved: dict[int, tuple[Operation, ...]] = {}
    emptied: set[int] = set()
    trimmed: dict[int, tuple[Operation, ...]] = {}
    for group in (group for group in groups if group.kind == "matmul"):
        for transpose in transposed_operands(group.ops):
            source = group_of[transpose].ops
            if source == (transpose,):
                emptied.add(id(group_of[transpose]))
            elif ends_transpose_chain(source, transpose):
                trimmed[id(group_of[transpose])] = source[:-1]
            else:
                continue
            moved[id(group)] = (*moved.get(id(group), ()), transpose)
    kept = (group for group in groups if id(group) not in emptied)
    return [PlannedGroup(group.kind, (*moved.get(id(group), ()), *trimmed.get(id(group), group.ops))) for group in kept]


def erase_dead_ops(body: Block) -> bool:
    """Erases the graph ops none of whose results is used (in reverse, so chains go too).

    Returns whether it erased any.
    """
    erased = False
    for op in reversed(list(body.ops)):
        if is_graph_op(op) and not any(result.uses for result in op.results):
            Rewriter.erase_op(op)
            erased = True
    return erased


Unit = Operation | PlannedGroup
"""What the rebuilt function body holds at top level: a group, or an op left outside."""


def schedule(body: Block, groups: Sequence[PlannedGroup]) -> list[Unit]:
    """Groups and the other ops of `body` in a topological order, earliest original position first."""
    position = {op: index for index, op in enumerate(body.ops)}
    group_of = {op: group for group in groups for op in group.ops}
    units: list[Unit] = list(groups) + [op for op in body.ops if op not in group_of]

    def unit_of(op: Operation) -> Unit:
        return group_of.get(op, op)

    def ops_of(unit: Unit) -> Sequence[Operation]:
        return unit.ops if isinstance(unit, PlannedGroup) else (unit,)

    producers: dict[int, set[int]] = {}
    index_of = {id(unit): index for index, unit in enumerate(units)}
    for index, unit in enumerate(units):
        producers[index] = {
            index_of[id(unit_of(operand.owner))]
            for op in ops_of(unit)
            for operand in op.operands
            if isinstance(operand.owner, Operation) and operand.owner in position
        } - {index}
    consumers: dict[int, list[int]] = {index: [] for index in range(len(units))}
    for index, sources in producers.items():
        for source in sources:
            consumers[source].append(index)
    waiting = {index: len(sources) for index, sources in producers.items()}
    earliest = [min(position[op] for op in ops_of(unit)) for unit in units]
    ready = [(earliest[index], index) for index, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    order: list[Unit] = []
    while ready:
        _, index = heapq.heappop(ready)
        order.append(units[index])
        for consumer in consumers[index]:
            waiting[consumer] -= 1
            if waiting[consumer] == 0:
                heapq.heappush(ready, (earliest[consumer], consumer))
    assert len(order) == len(units), "fusion groups form a cycle"
    return order


def _group_name(function: func.FuncOp, index: int, group: PlannedGroup) -> str:
    kinds = [op.name.split(".")[1] for op in group.ops][:4]
    return f"{function.sym_name.data}_{index}_" + "_".join(kinds)


def fuse_function(function: func.FuncOp, options: ChainOptions | None = None) -> list[graph.FusionOp]:
    """Rewrites `function` (see `is_fusible_function`) into fusion groups; returns the new ones."""
    body = function.body.block
    if erase_dead_ops(body):
        forget_memory_plan(function)
    chains = fuse_chains(function, options or ChainOptions())
    chains += fuse_implicit_gemms(function, len(chains), (options or ChainOptions()).store_layouts)
    groups = absorb_operand_transposes(plan_groups(function))
    if not groups:
        return chains
    fusions = list(chains)
    for unit in schedule(body, groups):
        if isinstance(unit, PlannedGroup):
            fusion = make_fusion(unit, _group_name(function, len(fusions), unit))
            if (major := operand_major_in(fusion.body.block)) is not None:
                attributes.OPERAND_MAJOR.write(fusion, ArrayAttr([StringAttr(side) for side in major]))
            fusions.append(fusion)
            body.add_op(fusion)
        else:
            unit.detach()
            body.add_op(unit)
    forget_memory_plan(function)
    return fusions


@dataclass(frozen=True)
class GraphFuse(ModulePass):
    """Partition graph functions into graph.fusion groups, one per future kernel (TVM-style rules)."""

    name = "graph-fuse"

    on_chip_bytes: int = DEFAULT_ON_CHIP_BYTES
    """What one program may hold on chip (GEMM chains' blocks must fit)."""
    compute_model: str = "none"
    """GEMM chains' compute term: `none` (bytes only) or `gpu` (the measured rates of
    `analysis/attention_cost.COMPUTE_MODELS`)."""
    fast_math: bool = False
    """Attention chains' kernels may skip the graph's per-op f16 roundings of the scores and use
    `exp2` with log2(e) folded in (`fast_math` in `mlc.chain_plan`; `attention_kernel.py`)."""
    matmul_chains: bool = False
    """Also fuse plain chains `matmul(f(matmul(A, B)), C)` (opt-in: `mlc.chain = "matmul"`)."""
    store_layouts: bool = False
    """Implicit GEMMs store through the layout chain that reads their product (a tile.scatter)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.compute_model not in COMPUTE_MODELS:
            known = ", ".join(COMPUTE_MODELS)
            raise PassFailure(op, f"graph-fuse: unknown compute-model '{self.compute_model}' (known: {known})")
        for function in [f for f in op.walk() if is_fusible_function(f)]:
            assert isinstance(function, func.FuncOp)
            options = ChainOptions(self.on_chip_bytes, COMPUTE_MODELS[self.compute_model], self.fast_math, self.matmul_chains, self.store_layouts)
            fuse_function(function, options)
