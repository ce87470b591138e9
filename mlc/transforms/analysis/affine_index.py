"""Index values as affine sums over SSA leaves, and their concrete value for one thread.

`affine_form(v)` writes an `index` value as `constant + sum(coefficient * leaf)` by looking through
`arith.constant`, `addi`, `subi` and `muli` by a constant; any other value is a leaf. Two accesses
whose indices share the same non-constant terms touch elements a known constant apart, and the
terms split into those that are the same for every thread of a block and those that vary. This is
what `loop-promote-shared` needs to find the box of elements a loop reads.

`evaluate(v, known)` computes an index value from given values of some SSA values (a thread id,
loop counters), through the integer `arith` ops index code uses; None when it meets anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class AffineForm:
    """`constant + sum(coefficient * leaf for leaf, coefficient in terms)`."""

    constant: int = 0
    terms: tuple[tuple[SSAValue, int], ...] = field(default=())

    def scaled(self, factor: int) -> AffineForm:
        return AffineForm(self.constant * factor, tuple((leaf, c * factor) for leaf, c in self.terms if c * factor))

    def plus(self, other: AffineForm) -> AffineForm:
        combined: dict[SSAValue, int] = dict(self.terms)
        for leaf, coefficient in other.terms:
            combined[leaf] = combined.get(leaf, 0) + coefficient
        return AffineForm(self.constant + other.constant, tuple((leaf, c) for leaf, c in combined.items() if c))

    def split(self, is_uniform: Callable[[SSAValue], bool]) -> tuple[AffineForm, AffineForm]:
        """(the terms `is_uniform` accepts, the constant and the other terms)."""
        uniform = tuple((leaf, c) for leaf, c in self.terms if is_uniform(leaf))
        varying = tuple((leaf, c) for leaf, c in self.terms if not is_uniform(leaf))
        return AffineForm(0, uniform), AffineForm(self.constant, varying)

    def same_terms(self, other: AffineForm) -> bool:
        return dict(self.terms) == dict(other.terms)


def constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` integer, else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def affine_form(value: SSAValue) -> AffineForm:
    """`value` as an affine sum over leaves (see the module docstring)."""
    number = constant_index(value)
    if number is not None:
        return AffineForm(number)
    owner = value.owner
    if isinstance(owner, arith.AddiOp):
        return affine_form(owner.lhs).plus(affine_form(owner.rhs))
    if isinstance(owner, arith.SubiOp):
        return affine_form(owner.lhs).plus(affine_form(owner.rhs).scaled(-1))
    if isinstance(owner, arith.MuliOp):
        for factor, other in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            number = constant_index(factor)
            if number is not None:
                return affine_form(other).scaled(number)
    return AffineForm(0, ((value, 1),))


_BINARY = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivUIOp: lambda a, b: a // b if b > 0 and a >= 0 else None,
    arith.RemUIOp: lambda a, b: a % b if b > 0 and a >= 0 else None,
    arith.FloorDivSIOp: lambda a, b: a // b if b else None,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.ShLIOp: lambda a, b: a << b if b >= 0 else None,
    arith.ShRUIOp: lambda a, b: a >> b if b >= 0 and a >= 0 else None,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
}


def evaluate(value: SSAValue, known: Mapping[SSAValue, int]) -> int | None:
    """The integer `value` takes when the values in `known` take theirs; None if it cannot tell."""
    if value in known:
        return known[value]
    number = constant_index(value)
    if number is not None:
        return number
    owner = value.owner
    if not isinstance(owner, Operation):
        return None
    if isinstance(owner, arith.IndexCastOp):
        return evaluate(owner.input, known)
    operation = _BINARY.get(type(owner))  # type: ignore[arg-type]
    if operation is None or len(owner.operands) != 2:
        return None
    a, b = (evaluate(operand, known) for operand in owner.operands)
    if a is None or b is None:
        return None
    return operation(a, b)
