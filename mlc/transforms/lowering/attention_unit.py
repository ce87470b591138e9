"""What one attention kernel computes, decided before any IR is built: the chain, its plan and the
values it reads and writes (`attention_kernel.py` builds the kernel of a unit).

What: `attention_unit` turns a chain region's (decomposed) ops and its `mlc.chain_plan` into an
`AttentionUnit`: the chain `gemm_chain.match_chain` finds, the operands read in place through
layout ops (`chain_operand_views.py`), and what the launch order needs of a kernel (its ops,
inputs, outputs); `loaded_sides` says which side inputs the kernel loads (not splat constants,
not a causal mask, which is computed from positions).

Preconditions: the ops of a `graph.fusion` marked `mlc.chain = "attention"`. Limits: a region
that is not exactly a GEMM chain, or a plan in another order than rows-outer, is a `PassFailure`
naming the chain's last matmul.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    DictionaryAttr,
    StringAttr,
)
from xdsl.ir import Operation, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.chain_operand_views import OperandView, operand_views, region_ops
from mlc.transforms.analysis.fusion_groups import is_splat_constant, shape_of
from mlc.transforms.analysis.gemm_chain import FAST_MATH_KEY, AttentionChain, match_chain


@dataclass(eq=False)
class AttentionUnit:
    """One attention kernel: the chain, its plan, and (for the launch order) its ops and inputs."""

    chain: AttentionChain
    plan: DictionaryAttr
    views: dict[SSAValue, OperandView] = field(default_factory=dict)
    """Q, K or V read in place from a leaf (`chain_operand_views.py`), by operand."""

    @property
    def ops(self) -> list[Operation]:
        return list(region_ops(self.chain, self.views))

    @property
    def operands(self) -> list[SSAValue]:
        """The values the kernel's tiles are loaded from: Q, Kt (or K), V, then the side inputs
        that are not splat constants (a causal mask is computed from positions instead)."""
        return [self.chain.scores.a, self.chain.keys, self.chain.output.b, *loaded_sides(self.chain)]

    @property
    def memory_inputs(self) -> list[SSAValue]:
        """What the kernel reads: the operands, each viewed one as its leaf."""
        return [self.views[v].leaf if v in self.views else v for v in self.operands]

    @property
    def stored(self) -> SSAValue:
        """What the kernel writes: O, or the transpose of it that it is written as."""
        output = self.chain.output.result
        return self.views[output].leaf if output in self.views else output

    @property
    def inputs(self) -> list[tuple[SSAValue, tuple[int, ...]]]:
        return [(value, shape_of(value)) for value in self.memory_inputs]

    @property
    def outputs(self) -> list[SSAValue]:
        return [self.stored]

    def block(self, key: str) -> int:
        return self.plan.data[key].value.data  # type: ignore[attr-defined]

    @property
    def fast_math(self) -> bool:
        """Whether the plan asks for fast math (see the module docstring)."""
        return FAST_MATH_KEY in self.plan.data


def loaded_sides(chain: AttentionChain) -> list[SSAValue]:
    """The side inputs the kernel reads from memory."""
    causal = chain.causal.value if chain.causal is not None else None
    return [v for v in chain.side_inputs if not is_splat_constant(v) and v is not causal]


def attention_unit(ops: Sequence[Operation], plan: DictionaryAttr) -> AttentionUnit:
    """The unit of a chain region's (decomposed) ops; a `PassFailure` when they are not a chain."""
    last = next((op for op in reversed(ops) if isinstance(op, graph.MatmulOp)), ops[-1])  # a transpose of O may follow
    chain = match_chain(last)
    views = operand_views(chain, set(ops)) if chain is not None else {}
    computed = {op for op in region_ops(chain, views) if not isinstance(op, graph.ConstantOp)} if chain is not None else set()
    if chain is None or computed != {op for op in ops if not isinstance(op, graph.ConstantOp)}:
        raise PassFailure(last, "the chain region is not a GEMM chain (matmul, scale/mask, softmax, matmul; or matmul, elementwise, matmul)")
    if plan.data["order"] != StringAttr("rows-outer"):  # type: ignore[comparison-overlap]
        raise PassFailure(last, "only the rows-outer order of an attention chain is lowered")
    return AttentionUnit(chain, plan, views)
