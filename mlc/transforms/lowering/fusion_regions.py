"""Fusion regions at the graph level: graph-fuse's planned groups and the regions it makes of them.

`PlannedGroup` is a group of graph ops that becomes one kernel; `make_fusion` moves a group's ops
into a detached `graph.fusion` whose inputs and results are the values crossing its boundary.
`fuse_chains` (GEMM chains the data-movement model accepts, `analysis/attention_cost.py`) and
`fuse_implicit_gemms` (matmuls reading their lhs through layout ops in place,
`analysis/operand_maps.py`) make the regions graph-fuse forms before its general grouping; see
`graph/graph_fuse.py`'s docstring for the rules and `ChainOptions` for the knobs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region

from mlc.dialects import attributes
from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.chain_operand_views import operand_views, region_ops
from mlc.transforms.analysis.attention_cost import DEFAULT_ON_CHIP_BYTES, ChainPlan, ComputeModel, plan_attention
from mlc.transforms.analysis.gemm_chain import FAST_MATH_KEY, PRODUCTS_KEY, match_attention, match_chain
from mlc.transforms.analysis.operand_maps import match_shifted_rows, output_layout_chain
from mlc.transforms.lowering.view_rewrites import split_key_transpose


@dataclass(frozen=True)
class PlannedGroup:
    """The ops of one future kernel, in program order, and the kind of the kernel."""

    kind: str
    ops: tuple[Operation, ...]


def make_fusion(group: PlannedGroup, name: str) -> graph.FusionOp:
    """Moves the (detached or not) ops of `group` into a new, detached `graph.fusion`."""
    members = set(group.ops)
    inputs = list(dict.fromkeys(operand for op in group.ops for operand in op.operands if operand.owner not in members))
    outputs = [result for op in group.ops for result in op.results if any(use.operation not in members for use in result.uses)]
    body = Block(arg_types=[value.type for value in inputs])
    for op in group.ops:
        op.detach()
        body.add_op(op)
    for value, argument in zip(inputs, body.args):
        argument.name_hint = value.name_hint
        value.replace_uses_with_if(argument, lambda use: use.operation in members)
    terminator = graph.YieldOp(outputs)
    body.add_op(terminator)
    fusion = graph.FusionOp(group.kind, inputs, [value.type for value in outputs], Region(body), name)
    for value, result in zip(outputs, fusion.results):
        result.name_hint = value.name_hint
        value.replace_uses_with_if(
            result, lambda use: use.operation not in members and use.operation is not terminator
        )
    return fusion


@dataclass(frozen=True)
class ChainOptions:
    """graph-fuse's options for GEMM chains (see `GraphFuse`)."""

    on_chip_bytes: int = DEFAULT_ON_CHIP_BYTES
    compute: ComputeModel | None = None
    fast_math: bool = False
    matmul_chains: bool = False
    store_layouts: bool = False


def fuse_chains(function: func.FuncOp, options: ChainOptions) -> list[graph.FusionOp]:
    """Makes a `chain` region of every attention chain (and, with `matmul_chains`, plain matmul
    chain) the model accepts (see the docstring)."""
    fusions = []
    on_chip_bytes, compute, fast_math = options.on_chip_bytes, options.compute, options.fast_math
    for op in list(function.body.block.ops):
        chain = match_chain(op) if options.matmul_chains else match_attention(op)
        if chain is None:
            continue
        plan = plan_attention(chain, on_chip_bytes, compute)
        if not isinstance(plan, ChainPlan):
            attributes.CHAIN_FALLBACK.write(op, StringAttr(plan))
            continue
        chain = split_key_transpose(chain)
        members = region_ops(chain, operand_views(chain))
        following = members[-1].next_op
        assert following is not None
        name = f"{function.sym_name.data}_chain{len(fusions)}_{chain.kind}"
        fusion = make_fusion(PlannedGroup("chain", members), name)
        attributes.CHAIN.write(fusion, StringAttr(chain.kind))
        keys = ("block_rows", "block_keys", "fused_bytes", "separate_bytes", "on_chip_bytes", *(("warp_rows",) if plan.warp_rows != 16 else ()))
        numbers = {key: IntegerAttr(getattr(plan, key), i64) for key in keys}
        fast = {FAST_MATH_KEY: UnitAttr()} if fast_math or attributes.FUSED_ATTENTION.read(chain.scores) else {}
        products = {PRODUCTS_KEY: StringAttr(plan.products)} if plan.products else {}
        attributes.CHAIN_PLAN.write(fusion, DictionaryAttr({"order": StringAttr(plan.order), **numbers, **fast, **products}))
        function.body.block.insert_op_before(fusion, following)
        fusions.append(fusion)
    return fusions


def fuse_implicit_gemms(function: func.FuncOp, first_index: int, store_layouts: bool) -> list[graph.FusionOp]:
    """Makes a `matmul` region of every matmul whose lhs it can read in place through its layout ops
    (`analysis/operand_maps.py`), with them (and with `store_layouts` its output chain; see the docstring)."""
    fusions = []
    for op in list(function.body.block.ops):
        if not isinstance(op, graph.MatmulOp) or op.parent_op() is not function:
            continue
        shifted = match_shifted_rows(op.a)
        if shifted is None:
            continue
        members = {*shifted.ops, op}
        if any(use.operation not in members for chain_op in shifted.ops for result in chain_op.results for use in result.uses):
            continue  # a layout op read elsewhere too: its kernel materialises it anyway
        stored = (output_layout_chain(op.result) or []) if store_layouts else []
        following = (stored or [op])[-1].next_op
        assert following is not None
        name = f"{function.sym_name.data}_{first_index + len(fusions)}_implicit_gemm_matmul"
        fusion = make_fusion(PlannedGroup("matmul", (*shifted.ops, op, *stored)), name)
        attributes.IMPLICIT_GEMM.write(fusion, DenseArrayBase.from_list(i64, shifted.shifts))
        function.body.block.insert_op_before(fusion, following)
        fusions.append(fusion)
    return fusions
