"""The decisions for one matmul kernel, made before any IR is built: block, precision, batch collapse.

What: `plan_matmul` gives a `MatmulPlan`: the block (BM, BN, BK) from `matmul_blocks.py`
(`choose_matmul_tile`, `choose_tf32_wgmma_tile`) unless the pass option gives one, the dot's
precision (`matmul_precision`: the matmul's property, else the option's for f32 products), how the
batch dimensions collapse (`group_plan.collapse_dimensions`), and whether the kernel computes
C^T = B^T A^T (`takes_swapped_operands`: a TF32 product graph-transpose-tf32-rhs marked
`mlc.swap_operands`, whose block is then chosen as the transposed problem's). An implicit GEMM's
K step is cut to stay inside one piece of its shifted rows.

Preconditions: a `MatmulUnit` (`matmul_units.py`). Limits: f32, f16 and bf16 products (others
are a `PassFailure`); the decisions are `matmul_kernel.py`'s module docstring's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import f32

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.graph import ops as graph
from mlc.dialects.precision import DEFAULT_PRECISION
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.fusion_groups import shape_of
from mlc.transforms.lowering.elementwise_expansion import element_type_of
from mlc.transforms.lowering.group_plan import DimensionCollapse, collapse_dimensions
from mlc.transforms.lowering.matmul_blocks import (
    TF32_WGMMA_ALIGNMENT,
    TF32_WGMMA_TILE,
    choose_matmul_tile,
    choose_tf32_wgmma_tile,
    swapped_tf32_applies,
)
from mlc.transforms.lowering.matmul_units import MatmulUnit


def takes_tf32_wgmma(unit: MatmulUnit, precision: str) -> bool:
    """Whether `unit` is a TF32 product that wgmma can run: precision "tf32", both operands read
    K-major (a row-major A, a transposed B: `matmul_wgmma.tf32_wgmma_applies`), K a multiple of
    `TF32_WGMMA_ALIGNMENT` deeper than one K step (a K loop for the async copies to pipeline). A
    transposed A (M-major) could take wgmma's A from registers too, as a product computed
    transposed does (`takes_swapped_operands`); unmeasured, it keeps mma.sync's block."""
    op = unit.op
    depth = shape_of(op.a)[-1]
    if precision != "tf32" or element_type_of(op.a) != f32 or unit.lhs_rows is not None:
        return False
    k_major = unit.transposed(op.a) is None and unit.transposed(op.b) is not None
    return k_major and depth % TF32_WGMMA_ALIGNMENT == 0 and depth > TF32_WGMMA_TILE[2]


def takes_swapped_operands(unit: MatmulUnit, precision: str) -> bool:
    """Whether `unit`'s kernel computes C^T = B^T A^T: its matmul carries `mlc.swap_operands`
    (graph-transpose-tf32-rhs's decision), is a TF32 product `swapped_tf32_applies` admits, and the
    kernel stores the plain product (no epilogue, no layout chain, no transposed or shifted operand)."""
    op = unit.op
    if attributes.SWAP_OPERANDS.read(op) is None or precision != "tf32":
        return False
    plain = unit.epilogue is None and not unit.output_chain and not unit.transposes and unit.lhs_rows is None
    return plain and swapped_tf32_applies(op)


@dataclass(frozen=True)
class MatmulPlan:
    """The decisions for one matmul unit's kernel, made before any IR is built."""

    name: str
    unit: MatmulUnit
    block: tuple[int, int, int]
    """(BM, BN, BK)."""
    collapse: DimensionCollapse
    """How the result's batch dimensions collapse (no groups: one matrix, no batch axis)."""
    precision: str = DEFAULT_PRECISION
    """The `tile.dot`'s precision: the matmul's own, else the pass option's for f32 products."""
    swapped: bool = False
    """The dot computes the block of C^T = B^T A^T (`takes_swapped_operands`); `block` stays C's."""

    @property
    def op(self) -> graph.MatmulOp:
        return self.unit.op

    @property
    def depth(self) -> int:
        return shape_of(self.op.a)[-1]

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The collapsed batch dimensions (empty for a single matrix)."""
        return self.collapse.domain if self.collapse.groups else ()

    def view(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The kernel's view of a value of `shape` (aligned to the result's rank): collapsed batch
        dimensions, then the matrix dimensions."""
        rank = len(shape_of(self.op.result))
        aligned = (1,) * (rank - len(shape)) + tuple(shape)
        batch = self.collapse.shape(aligned[:-2]) if self.collapse.groups else ()
        return (*batch, *aligned[-2:])

    @property
    def grid(self) -> tuple[int, ...]:
        rows, columns = shape_of(self.op.result)[-2:]
        blocks = (-(-rows // self.block[0]), -(-columns // self.block[1]))
        return (math.prod(self.batch_shape), *blocks) if self.batch_shape else blocks


def matmul_precision(op: graph.MatmulOp, default: str) -> str:
    """The precision of `op`'s products: its `precision` property where it has one, else `default`
    for f32 operands (f16 and bf16 products are exact in f32: always "ieee")."""
    if "precision" in op.properties:
        return op.precision.data
    return default if element_type_of(op.a) == f32 else DEFAULT_PRECISION


def plan_matmul(
    name: str, unit: MatmulUnit, block: Sequence[int] | None, precision: str = DEFAULT_PRECISION, cpu: bool = False, wgmma: bool = False
) -> MatmulPlan:
    op = unit.op
    element_type = op.result.type.element_type  # type: ignore[attr-defined]
    if not isinstance(element_type, tile.DOT_INPUT_TYPES):
        raise PassFailure(op, f"matmul of {element_type} is not lowered yet (f32, f16 and bf16 are)")
    batch = shape_of(op.result)[:-2]
    participants = [shape_of(op.a)[:-2], shape_of(op.b)[:-2], *(seen[:-2] for _, seen in unit.epilogue_inputs)]
    collapse = collapse_dimensions(batch, participants)
    rows, columns = shape_of(op.result)[-2:]
    swapped = not cpu and takes_swapped_operands(unit, matmul_precision(op, precision))
    if block is None and swapped:  # the dot's block is C^T's: N rows, M columns
        depth = shape_of(op.a)[-1]
        dot_block = choose_tf32_wgmma_tile(1, columns, rows) if wgmma else choose_matmul_tile(1, columns, rows, depth, tf32=True)
        block = (dot_block[1], dot_block[0], dot_block[2])
    if block is None and wgmma and not cpu and takes_tf32_wgmma(unit, matmul_precision(op, precision)):
        block = choose_tf32_wgmma_tile(math.prod(batch), rows, columns)
    if block is None:
        half = element_type != f32
        tf32 = matmul_precision(op, precision) != DEFAULT_PRECISION
        block = choose_matmul_tile(math.prod(batch), rows, columns, shape_of(op.a)[-1], half, cpu, wgmma, tf32)
    if unit.lhs_rows is not None:  # a K step inside one piece of the shifted rows, whoever chose it
        piece = unit.lhs_rows.piece_columns
        block = (block[0], block[1], math.gcd(block[2], piece & -piece))
    return MatmulPlan(name, unit, tuple(block), collapse, matmul_precision(op, precision), swapped)  # type: ignore[arg-type]
