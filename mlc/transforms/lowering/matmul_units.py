"""Which matmul kernels a program has: a `graph.matmul` with the fusion group it absorbs, and their order.

What: `matmul_unit` turns the ops of a group holding one matmul into a `MatmulUnit`: the product,
plus either an elementwise epilogue over the product's shape (bias, activation, residual), or the
layout chain that alone reads the product (stored through it), and the transposed operands and
row-shifted lhs (implicit GEMM) the kernel reads in place (`analysis/operand_maps.py`).
`launch_order` orders matmul units and fusion groups so that each kernel comes after the kernels
whose results it reads (a depth-first walk over the values each unit reads).

Preconditions: the groups come from graph-fuse (`analysis/fusion_groups.py`). Limits: one matmul
per kernel; an epilogue must read the product, have its shape and hold no reduction (else
`GroupProblem`); two kernels that read each other's results are a `GroupProblem` too.
`matmul_kernel.py` builds a unit's kernel, `matmul_plan.py` decides its block.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.fusion_groups import (
    EPILOGUE_OPS,
    FusionGroup,
    GroupProblem,
    group_from_ops,
    shape_of,
)
from mlc.transforms.analysis.gemm_chain import upstream_ops
from mlc.transforms.analysis.operand_maps import ShiftedRows, match_shifted_rows, operand_major, output_layout_chain, transposed_operands


@dataclass(eq=False)
class MatmulUnit:
    """One matmul kernel: the product and the fusion group it absorbs as its epilogue, if any."""

    op: graph.MatmulOp
    epilogue: FusionGroup | None = None
    lhs_rows: ShiftedRows | None = None
    """The lhs read in place as row-shifted blocks of one value (an implicit GEMM), if it is."""
    transposes: tuple[graph.TransposeOp, ...] = ()
    """The transposed operands read in their stored layout (`operand_maps.transposed_operands`)."""
    output_chain: tuple[Operation, ...] = ()
    """The layout chain the product is stored through (`operand_maps.output_layout_chain`), if any."""

    @property
    def ops(self) -> list[Operation]:
        """The graph ops the kernel computes past the operands: the matmul, its epilogue or output chain."""
        return [self.op, *(self.epilogue.ops if self.epilogue is not None else self.output_chain)]

    @property
    def output_group(self) -> FusionGroup:
        """The epilogue, or a group of the kernel's one output (for the host's allocations)."""
        return self.epilogue or FusionGroup(domain=shape_of(self.outputs[0]), outputs=self.outputs)

    def transposed(self, operand: SSAValue) -> graph.TransposeOp | None:
        """The transpose of this unit that `operand` (the matmul's lhs or rhs) is, if any."""
        return next((t for t in self.transposes if t.result is operand), None)

    def source(self, operand: SSAValue) -> SSAValue:
        """The value the kernel reads for `operand`: a transpose's input (its stored layout), the
        shifted rows' leaf for the lhs of an implicit GEMM, else the operand itself."""
        transpose = self.transposed(operand)
        if transpose is not None:
            return transpose.x
        return self.lhs_rows.leaf if self.lhs_rows is not None and operand is self.op.a else operand

    @property
    def lhs_source(self) -> SSAValue:
        return self.source(self.op.a)

    @property
    def operand_major(self) -> tuple[str, str]:
        return operand_major(self.transposed(self.op.a) is not None, self.transposed(self.op.b) is not None)

    @property
    def outputs(self) -> list[SSAValue]:
        if self.epilogue is not None:
            return list(self.epilogue.outputs)
        return [self.output_chain[-1].results[0] if self.output_chain else self.op.result]

    @property
    def epilogue_inputs(self) -> list[tuple[SSAValue, tuple[int, ...]]]:
        """The epilogue's inputs other than the product, each with the shape it is seen as."""
        if self.epilogue is None:
            return []
        return [(value, seen) for value, seen in self.epilogue.inputs if value is not self.op.result]

    def reads(self) -> list[SSAValue]:
        return [self.lhs_source, self.source(self.op.b), *(value for value, _ in self.epilogue_inputs)]


LaunchUnit = FusionGroup | MatmulUnit
"""What one kernel computes."""


def _absorbable(op: graph.MatmulOp, group: FusionGroup) -> bool:
    """Whether `group` can be `op`'s epilogue (see the module docstring)."""
    result = op.result
    return (
        not group.reduced_axes
        and group.domain == shape_of(result)
        and all(isinstance(member, EPILOGUE_OPS) for member in group.ops)
        and (result, shape_of(result)) in group.inputs
        and all(use.operation in group.ops for use in result.uses)
        and not upstream_ops(op) & set(group.ops)
    )


def matmul_unit(ops: list[Operation], live: set[Operation]) -> MatmulUnit:
    """The kernel of a group holding one matmul: the product and the rest of `ops` as its epilogue.

    Raises `GroupProblem` when the rest cannot be the epilogue (see the module docstring)."""
    matmuls = [op for op in ops if isinstance(op, graph.MatmulOp)]
    if len(matmuls) != 1:
        raise GroupProblem(matmuls[1], "one kernel computes one matmul")
    (op,) = matmuls
    lhs_rows = match_shifted_rows(op.a) if op.a.owner in ops else None
    if lhs_rows is not None and not set(lhs_rows.ops) <= set(ops):
        lhs_rows = None
    transposes = tuple(t for t in transposed_operands(ops) if t in ops and (lhs_rows is None or t.result is not op.a))
    inside = {op, *transposes, *(lhs_rows.ops if lhs_rows is not None else ())}
    rest = [member for member in ops if member not in inside]
    if not rest:
        return MatmulUnit(op, lhs_rows=lhs_rows, transposes=transposes)
    if rest == output_layout_chain(op.result):
        return MatmulUnit(op, lhs_rows=lhs_rows, transposes=transposes, output_chain=tuple(rest))
    epilogue = group_from_ops(rest, live)
    if not _absorbable(op, epilogue):
        reason = "its elementwise epilogue must read the product, have the product's shape and hold no reduction"
        raise GroupProblem(op, reason)
    return MatmulUnit(op, epilogue, lhs_rows, transposes)


def launch_order(units: list[LaunchUnit]) -> list[LaunchUnit]:
    """The kernels `units` in an order in which each comes after those whose results it reads.

    Raises `GroupProblem` when two kernels read each other's results (groups that form a cycle)."""
    unit_of: dict[Operation, LaunchUnit] = {}
    for unit in units:
        if isinstance(unit, MatmulUnit):
            unit_of.update({op: unit for op in unit.ops})
        else:
            unit_of.update({op: unit for op in unit.ops})
    ordered: list[LaunchUnit] = []
    placed: set[int] = set()
    pending: list[LaunchUnit] = []
    """The units whose producers are being placed (a path of reads)."""

    def place(unit: LaunchUnit) -> None:
        if id(unit) in placed:
            return
        if unit in pending:
            first = unit.op if isinstance(unit, MatmulUnit) else unit.ops[0]
            raise GroupProblem(first, "its kernel and another read each other's results (the groups form a cycle)")
        pending.append(unit)
        reads = unit.reads() if isinstance(unit, MatmulUnit) else [value for value, _ in unit.inputs]
        for value in reads:
            producer = unit_of.get(value.owner)  # type: ignore[arg-type]
            if producer is not None and producer is not unit:
                place(producer)
        pending.pop()
        placed.add(id(unit))
        ordered.append(unit)

    for unit in units:
        place(unit)
    return ordered
