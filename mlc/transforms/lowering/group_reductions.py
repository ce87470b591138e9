"""The reductions of a fusion group's kernel as tile code: identities and combining regions.

What: `reduction_identity` is the value that leaves `graph.reduce_sum` / `reduce_max` /
`reduce_min` unchanged (0, -inf, +inf, the integer extremes; for booleans 0 or 1), which masked-off
elements hold; `reduction_combiner` is the region `tile.reduce` (and a looped row's accumulating
`tile.map`) combines two elements with: `arith.addf`/`addi`, `maximumf`/`maxsi`/`maxui`,
`minimumf`/`minsi`/`minui` (unsigned for booleans).

Preconditions: `op` is one of those three reductions (`fusion_groups.REDUCTIONS`: graph-decompose
rewrites the others into them; anything else is taken as a min), over a float or integer element
type.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Block, Operation, Region

from mlc.dialects.element_types import is_bool, is_float
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile


def reduction_identity(op: Operation, element_type: Attribute) -> Attribute:
    """The value that does not change the reduction `op` (what masked-off elements hold)."""
    if isinstance(op, graph.ReduceSumOp):
        return FloatAttr(0.0, element_type) if is_float(element_type) else IntegerAttr(0, element_type)  # type: ignore[arg-type]
    lowest = isinstance(op, graph.ReduceMaxOp)
    if is_float(element_type):
        return FloatAttr(-math.inf if lowest else math.inf, element_type)  # type: ignore[arg-type]
    assert isinstance(element_type, IntegerType)
    if is_bool(element_type):
        return IntegerAttr(0 if lowest else 1, element_type)
    bits = element_type.width.data
    return IntegerAttr(-(1 << (bits - 1)) if lowest else (1 << (bits - 1)) - 1, element_type)


def reduction_combiner(op: Operation, element_type: Attribute) -> Region:
    """`tile.reduce`'s combining region for the reduction `op`."""
    block = Block(arg_types=[element_type, element_type])
    lhs, rhs = block.args
    floating = is_float(element_type)
    if isinstance(op, graph.ReduceSumOp):
        combined: Operation = arith.AddfOp(lhs, rhs) if floating else arith.AddiOp(lhs, rhs)
    elif isinstance(op, graph.ReduceMaxOp):
        unsigned = is_bool(element_type)
        combined = arith.MaximumfOp(lhs, rhs) if floating else (arith.MaxUIOp if unsigned else arith.MaxSIOp)(lhs, rhs)
    else:
        unsigned = is_bool(element_type)
        combined = arith.MinimumfOp(lhs, rhs) if floating else (arith.MinUIOp if unsigned else arith.MinSIOp)(lhs, rhs)
    block.add_ops([combined, tile.YieldOp([combined.results[0]])])
    return Region(block)
