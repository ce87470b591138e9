"""Which values differ between the threads of a block, and what each thread computes for an integer.

Analyses of one `mlc_gpu.func` for passes that reason about the threads of a block
(`gpu-insert-barriers`).

Divergence (`ThreadAnalysis.is_divergent`): a value is divergent when two threads of one block may
hold different values of it. Seeds: `mlc_gpu.thread_id` and `mlc_gpu.shuffle` results, results of
ops with unknown effects (calls, ...) and loads from thread-private memory (a `memref.alloc` or
`alloca` outside shared memory). Any other result is divergent when an operand is, with finer rules
for `scf.for` (the induction variable follows the bounds; an iteration argument and its result
follow the bounds, the initial and the yielded value), `scf.if` (a result follows the condition and
the yielded values) and `scf.while` (the before-arguments follow the initial and yielded values, the
after-arguments and results follow `scf.condition`); any other op with regions makes its results and
block arguments divergent when an operand or a value its regions yield is. Kernel arguments, block
ids and sizes are uniform, and so are loads at uniform addresses of shared or global memory (threads
that could read different values there race). The rules are monotone: a fixed point over the
function computes them.

Divergent control (`ThreadAnalysis.is_divergent_control`): an `scf.if` whose condition is divergent
(unless it evaluates to one value for every thread, below), an `scf.for` with a divergent bound, an
`scf.while` whose `scf.condition` is divergent, and any other op with regions (as far as this
analysis knows, its regions may run in some threads only).

Per-thread values (`ThreadAnalysis.form`): an integer or index value as a `ThreadForm`,
`per_thread[t] + sum(coefficient * symbol)`, where `per_thread` is a numpy array over the threads of
the block (linear thread id `x + X * (y + Y * z)`, as CUDA) and the symbols are uniform values the
analysis does not look into (kernel arguments, block ids, loop induction variables, uniform loads).
Constants, thread ids and block and grid sizes are evaluated; `addi`, `subi` and `muli` by a
constant keep symbols; `remui` by a constant that divides every symbol's coefficient drops them
(the remainder of a tile origin plus an offset, by the tile, is the offset); `andi`, `ori`, `xori`, shifts, divisions, remainders, min and max are
evaluated thread by thread when both operands are free of symbols, `cmpi` and `select` also when both
sides carry the same symbols (`cmpi` then only for signed and equality predicates). Anything else is
unknown (None). Overflow is not modelled: index arithmetic in mlc kernels stays far from 2^63.

`active_threads(op)` is a mask of the threads that may run `op`: the conjunction of the conditions of
the enclosing `scf.if`s that evaluate thread by thread (others do not narrow it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i1
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import MemoryEffectKind, get_effects

from mlc.dialects.gpu import ops as gpu

SHARED_MEMORY_SPACE = 3

VIEW_OPS = (
    memref.SubviewOp, memref.CastOp, memref.MemorySpaceCastOp, memref.ReinterpretCastOp,
    memref.CollapseShapeOp, memref.ExpandShapeOp, memref.ViewOp, memref.AssumeAlignmentOp,
)  # fmt: skip
"""Ops whose result views the memory of their first operand."""


def memref_root(value: SSAValue) -> SSAValue:
    """The value a memref is a view of: an allocation's or `get_global`'s result, or an opaque value."""
    while isinstance(value.owner, VIEW_OPS):
        value = value.owner.operands[0]
    return value


def is_shared_memory_space(value: SSAValue) -> bool:
    memory_space = value.type.memory_space if isinstance(value.type, MemRefType) else None
    return isinstance(memory_space, IntegerAttr) and memory_space.value.data == SHARED_MEMORY_SPACE


def is_loop_uniform(value: SSAValue, thread_loop: Operation) -> bool:
    """At the loop level: whether every iteration of `thread_loop` (a `loop.parallel`) holds the
    same `value`: defined outside it, or computed inside by `arith` ops from such values and
    constants (a causal chain kernel's key-loop bound), never from its induction variable."""
    owner = value.owner
    if not isinstance(owner, Operation):
        return not thread_loop.is_ancestor(owner.parent_op())  # type: ignore[arg-type]
    if not thread_loop.is_ancestor(owner):
        return True
    return owner.dialect_name() == "arith" and not owner.regions and all(is_loop_uniform(v, thread_loop) for v in owner.operands)


def is_thread_private(value: SSAValue) -> bool:
    """Whether a memref views an allocation of the kernel outside shared memory (one per thread)."""
    root = memref_root(value)
    return isinstance(root.owner, memref.AllocOp | memref.AllocaOp) and not is_shared_memory_space(root)


@dataclass(frozen=True)
class ThreadForm:
    """`per_thread[t] + sum(coefficient * symbol for symbol, coefficient in symbols)` for thread t."""

    per_thread: np.ndarray
    symbols: frozenset[tuple[SSAValue, int]]

    def is_known(self) -> bool:
        """Whether the value of every thread is known (no symbols)."""
        return not self.symbols


def _linear(a: ThreadForm, b: ThreadForm, sign: int) -> ThreadForm:
    coefficients = dict(a.symbols)
    for symbol, coefficient in b.symbols:
        coefficients[symbol] = coefficients.get(symbol, 0) + sign * coefficient
    return ThreadForm(
        a.per_thread + sign * b.per_thread, frozenset((s, c) for s, c in coefficients.items() if c)
    )


def _scaled(form: ThreadForm, factor: int) -> ThreadForm:
    return ThreadForm(form.per_thread * factor, frozenset((s, c * factor) for s, c in form.symbols if c * factor))


def _remainder_of_aligned(a: ThreadForm, divisor: ThreadForm) -> ThreadForm | None:
    """`a mod d` for a uniform constant d > 0 that divides every symbol's coefficient: the symbols'
    sum is a multiple of d, so only the per-thread part is left (a tile origin plus a thread's
    offset in the tile, modulo the tile: the offset)."""
    d = int(divisor.per_thread[0])
    if d <= 0 or not np.all(divisor.per_thread == d) or any(coefficient % d for _, coefficient in a.symbols):
        return None
    return ThreadForm(np.mod(a.per_thread, d), frozenset())


def _unsigned(array: np.ndarray) -> np.ndarray:
    return array.astype(np.uint64)


def _truncated_division(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    quotient = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient)


_NONZERO_DIVISOR: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    arith.DivUIOp: lambda a, b: (_unsigned(a) // _unsigned(b)).astype(np.int64),
    arith.RemUIOp: lambda a, b: (_unsigned(a) % _unsigned(b)).astype(np.int64),
    arith.DivSIOp: _truncated_division,
    arith.RemSIOp: lambda a, b: a - b * _truncated_division(a, b),
    arith.FloorDivSIOp: np.floor_divide,
    arith.CeilDivSIOp: lambda a, b: -np.floor_divide(-a, b),
    arith.CeilDivUIOp: lambda a, b: (-(-_unsigned(a) // _unsigned(b))).astype(np.int64),
}

_ELEMENTWISE: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    arith.AndIOp: np.bitwise_and,
    arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
    arith.MinSIOp: np.minimum,
    arith.MaxSIOp: np.maximum,
    arith.MinUIOp: lambda a, b: np.where(_unsigned(a) <= _unsigned(b), a, b),
    arith.MaxUIOp: lambda a, b: np.where(_unsigned(a) >= _unsigned(b), a, b),
}

_SHIFTS: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    arith.ShLIOp: np.left_shift,
    arith.ShRSIOp: np.right_shift,
    arith.ShRUIOp: lambda a, b: (_unsigned(a) >> _unsigned(b)).astype(np.int64),
}

_COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal, "sgt": np.greater,
    "sge": np.greater_equal,
    "ult": lambda a, b: _unsigned(a) < _unsigned(b), "ule": lambda a, b: _unsigned(a) <= _unsigned(b),
    "ugt": lambda a, b: _unsigned(a) > _unsigned(b), "uge": lambda a, b: _unsigned(a) >= _unsigned(b),
}  # fmt: skip
_SHIFT_INVARIANT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge")

_PASS_THROUGH = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)


def _terminator_operands(region_op: Operation) -> Iterable[SSAValue]:
    for region in region_op.regions:
        for block in region.blocks:
            if block.last_op is not None:
                yield from block.last_op.operands


class ThreadAnalysis:
    """Divergence, per-thread integer values and active threads in one `mlc_gpu.func`."""

    def __init__(self, function: gpu.FuncOp):
        self.function = function
        block_x, block_y, block_z = function.block_shape()
        linear = np.arange(block_x * block_y * block_z, dtype=np.int64)
        self.thread_count = int(linear.size)
        self.thread_ids = (linear % block_x, linear // block_x % block_y, linear // (block_x * block_y))
        self.block_shape = function.block_shape()
        self.grid_shape = function.grid_shape()
        self.divergent = _divergent_values(function)
        self._forms: dict[SSAValue, ThreadForm | None] = {}
        self._active: dict[Block, np.ndarray] = {}

    def is_divergent(self, value: SSAValue) -> bool:
        return value in self.divergent

    def is_divergent_control(self, op: Operation) -> bool:
        """Whether the regions of `op` may run in some threads of a block and not in others."""
        if isinstance(op, scf.IfOp):
            if not self.is_divergent(op.cond):
                return False
            taken = self.condition_mask(op.cond)
            return taken is None or bool(taken.any()) != bool(taken.all())
        if isinstance(op, scf.ForOp):
            return any(self.is_divergent(bound) for bound in (op.lb, op.ub, op.step))
        if isinstance(op, scf.WhileOp):
            condition = op.before_region.block.last_op
            return isinstance(condition, scf.ConditionOp) and self.is_divergent(condition.condition)
        return bool(op.regions)

    def constant(self, value: SSAValue) -> int | None:
        """The value every thread computes for `value`, if it is one known number."""
        form = self.form(value)
        if form is None or not form.is_known() or not np.all(form.per_thread == form.per_thread[0]):
            return None
        return int(form.per_thread[0])

    def condition_mask(self, value: SSAValue) -> np.ndarray | None:
        """For an i1 value: which threads see it true, if the analysis knows."""
        form = self.form(value)
        return None if form is None or not form.is_known() else form.per_thread != 0

    def active_threads(self, op: Operation) -> np.ndarray:
        """A mask of the threads that may run `op` (all, unless enclosing conditions say otherwise)."""
        block = op.parent_block()
        if block is None:
            return np.ones(self.thread_count, dtype=bool)
        if block not in self._active:
            parent = block.parent_op()
            mask = np.ones(self.thread_count, dtype=bool) if parent is None else self.active_threads(parent)
            if isinstance(parent, scf.IfOp):
                taken = self.condition_mask(parent.cond)
                if taken is not None:
                    mask = mask & (taken if block.parent is parent.true_region else ~taken)
            self._active[block] = mask
        return self._active[block]

    def form(self, value: SSAValue) -> ThreadForm | None:
        """What each thread computes for an integer or index value, or None if unknown."""
        if value not in self._forms:
            self._forms[value] = self._evaluate(value)
        return self._forms[value]

    def _constant(self, number: int) -> ThreadForm:
        return ThreadForm(np.full(self.thread_count, number, dtype=np.int64), frozenset())

    def _symbol(self, value: SSAValue) -> ThreadForm | None:
        if self.is_divergent(value):
            return None
        return ThreadForm(np.zeros(self.thread_count, dtype=np.int64), frozenset({(value, 1)}))

    def _evaluate(self, value: SSAValue) -> ThreadForm | None:
        op = value.owner
        if not isinstance(op, Operation):
            return self._symbol(value)
        result = self._evaluate_op(op)
        if result is not None and value.type == i1:
            result = ThreadForm(result.per_thread & 1, result.symbols) if result.is_known() else None
        return result if result is not None else self._symbol(value)

    def _evaluate_op(self, op: Operation) -> ThreadForm | None:
        if isinstance(op, arith.ConstantOp):
            return self._constant(op.value.value.data) if isinstance(op.value, IntegerAttr) else None
        if isinstance(op, gpu.ThreadIdOp):
            return ThreadForm(self.thread_ids[op.axis()], frozenset())
        if isinstance(op, gpu.BlockDimOp | gpu.GridDimOp):
            shape = self.block_shape if isinstance(op, gpu.BlockDimOp) else self.grid_shape
            return self._constant(shape[op.axis()])
        if isinstance(op, _PASS_THROUGH):
            return self.form(op.operands[0])
        if isinstance(op, arith.SelectOp):
            return self._select(op)
        if len(op.operands) != 2 or len(op.results) != 1:
            return None
        a, b = self.form(op.operands[0]), self.form(op.operands[1])
        if a is None or b is None:
            return None
        if isinstance(op, arith.AddiOp | arith.SubiOp):
            return _linear(a, b, 1 if isinstance(op, arith.AddiOp) else -1)
        if isinstance(op, arith.CmpiOp):
            return self._compare(op, a, b)
        if isinstance(op, arith.MuliOp):
            for factor, other in ((a, b), (b, a)):
                if factor.is_known() and np.all(factor.per_thread == factor.per_thread[0]):
                    return _scaled(other, int(factor.per_thread[0]))
        if isinstance(op, arith.RemUIOp) and b.is_known() and not a.is_known():
            return _remainder_of_aligned(a, b)
        if not (a.is_known() and b.is_known()):
            return None
        return self._elementwise(type(op), a.per_thread, b.per_thread)

    def _elementwise(self, op_type: type[Operation], a: np.ndarray, b: np.ndarray) -> ThreadForm | None:
        if op_type is arith.MuliOp:
            return ThreadForm(a * b, frozenset())
        if op_type in _ELEMENTWISE:
            return ThreadForm(_ELEMENTWISE[op_type](a, b), frozenset())
        if op_type in _NONZERO_DIVISOR and np.all(b != 0):
            return ThreadForm(_NONZERO_DIVISOR[op_type](a, b), frozenset())
        if op_type in _SHIFTS and np.all((b >= 0) & (b < 64)):
            return ThreadForm(_SHIFTS[op_type](a, b), frozenset())
        return None

    def _compare(self, op: arith.CmpiOp, a: ThreadForm, b: ThreadForm) -> ThreadForm | None:
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        if a.symbols != b.symbols or (a.symbols and predicate not in _SHIFT_INVARIANT_PREDICATES):
            return None
        # Equal symbols cancel out of a signed or equality comparison.
        taken = _COMPARISONS[predicate](a.per_thread, b.per_thread)
        return ThreadForm(taken.astype(np.int64), frozenset())

    def _select(self, op: arith.SelectOp) -> ThreadForm | None:
        taken = self.condition_mask(op.cond)
        chosen, other = self.form(op.lhs), self.form(op.rhs)
        if taken is None or chosen is None or other is None or chosen.symbols != other.symbols:
            return None
        return ThreadForm(np.where(taken, chosen.per_thread, other.per_thread), chosen.symbols)


def _divergent_values(function: gpu.FuncOp) -> set[SSAValue]:
    divergent: set[SSAValue] = set()
    ops = list(function.body.walk())
    diverges_alone: dict[Operation, bool] = {}  # what never changes between the rounds
    while True:
        count = len(divergent)
        for op in ops:
            divergent.update(_divergent_outputs(op, divergent, diverges_alone))
        if len(divergent) == count:
            return divergent


def _divergent_outputs(op: Operation, divergent: set[SSAValue], diverges_alone: dict[Operation, bool]) -> list[SSAValue]:
    """The results and block arguments of `op` that are divergent, given what is known so far
    (`diverges_alone` remembers, per op without regions, whether its results diverge whatever its
    operands: asking the op's memory effects again in every round was most of the analysis)."""
    if isinstance(op, gpu.ThreadIdOp | gpu.ShuffleOp):
        return list(op.results)
    if isinstance(op, scf.ForOp):
        return _divergent_loop_values(op, divergent)
    if isinstance(op, scf.IfOp):
        branches = [region.block.last_op for region in op.regions if region.blocks]
        return [
            result
            for index, result in enumerate(op.results)
            if op.cond in divergent or any(b is not None and b.operands[index] in divergent for b in branches)
        ]
    if isinstance(op, scf.WhileOp):
        return _divergent_while_values(op, divergent)
    if op.regions:
        if any(v in divergent for v in op.operands) or any(v in divergent for v in _terminator_operands(op)):
            return list(op.results) + [a for region in op.regions for block in region.blocks for a in block.args]
        return []
    if not op.results:
        return []
    if op not in diverges_alone:
        diverges_alone[op] = _diverges_alone(op)
    if diverges_alone[op] or any(v in divergent for v in op.operands):
        return list(op.results)
    return []


EFFECT_FREE_UNDECLARED = (arith.RemUIOp,)
"""Ops without memory effects that xDSL 0.74 declares no effect trait for (MLIR's `arith.remui` is
`NoMemoryEffect`; xDSL's `get_effects` says unknown): a grouped tile order's `launch mod per_group`
of block ids is uniform, not divergent."""


def _diverges_alone(op: Operation) -> bool:
    """Whether the results of `op` (no regions) may differ between threads whatever its operands:
    unknown effects, or a read of thread-private memory."""
    if isinstance(op, EFFECT_FREE_UNDECLARED):
        return False
    effects = get_effects(op)
    if effects is None:
        return True
    reads = any(effect.kind == MemoryEffectKind.READ for effect in effects)
    return reads and any(isinstance(v.type, MemRefType) and is_thread_private(v) for v in op.operands)


def _divergent_loop_values(op: scf.ForOp, divergent: set[SSAValue]) -> list[SSAValue]:
    bounds = any(bound in divergent for bound in (op.lb, op.ub, op.step))
    body = op.body.block
    yielded = body.last_op.operands if body.last_op is not None else ()
    values = [body.args[0]] if bounds else []
    for initial, argument, result, next_value in zip(op.iter_args, body.args[1:], op.results, yielded):
        if bounds or initial in divergent or next_value in divergent:
            values += [argument, result]
    return values


def _divergent_while_values(op: scf.WhileOp, divergent: set[SSAValue]) -> list[SSAValue]:
    before, after = op.before_region.block, op.after_region.block
    yielded = after.last_op.operands if after.last_op is not None else ()
    values = [
        argument
        for initial, next_value, argument in zip(op.arguments, yielded, before.args)
        if initial in divergent or next_value in divergent
    ]
    condition = before.last_op
    if not isinstance(condition, scf.ConditionOp) or condition.condition in divergent:
        return values + list(after.args) + list(op.results)
    for passed, argument, result in zip(condition.args, after.args, op.results):
        if passed in divergent:
            values += [argument, result]
    return values
