"""What is known about index values: their range and a number that divides them.

A forward analysis over straight-line `arith` code on `index` values, in the manner of Triton's
AxisInfo but scalar: each value gets `IndexFacts(low, high, divisor)` meaning
`low <= value <= high` and `value % divisor == 0`. Program and thread ids seed it with their
ranges. The tile-to-loop lowering uses it to prove that an access stays inside its memref (no
mask needed) and that a vector access is aligned.

Handled: constants, `addi`, `subi`, `muli`, `divui`/`floordivsi` and `remui`/`remsi` by a positive
constant, `minsi`/`minui`/`maxsi`/`maxui`, and `index_cast` of known values. Anything else is
unknown. Values are assumed not to overflow (true for the static shapes mlc compiles).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

_UNBOUNDED = 2**62


@dataclass(frozen=True)
class IndexFacts:
    low: int
    high: int
    divisor: int

    @staticmethod
    def constant(value: int) -> IndexFacts:
        return IndexFacts(value, value, abs(value) if value else _UNBOUNDED)

    @staticmethod
    def unknown() -> IndexFacts:
        return IndexFacts(-_UNBOUNDED, _UNBOUNDED, 1)

    @staticmethod
    def range(low: int, high: int) -> IndexFacts:
        return IndexFacts(low, high, 1)

    def is_nonnegative(self) -> bool:
        return self.low >= 0


def _gcd(a: int, b: int) -> int:
    return math.gcd(a, b) or _UNBOUNDED


def _combine(op: Operation, facts: list[IndexFacts]) -> IndexFacts:
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return IndexFacts.constant(op.value.value.data)
    if isinstance(op, arith.IndexCastOp):
        return facts[0]
    if len(facts) != 2:
        return IndexFacts.unknown()
    a, b = facts
    if isinstance(op, arith.AddiOp):
        return IndexFacts(a.low + b.low, a.high + b.high, _gcd(a.divisor, b.divisor))
    if isinstance(op, arith.SubiOp):
        return IndexFacts(a.low - b.high, a.high - b.low, _gcd(a.divisor, b.divisor))
    if isinstance(op, arith.MuliOp) and a.is_nonnegative() and b.is_nonnegative():
        return IndexFacts(a.low * b.low, a.high * b.high, min(a.divisor * b.divisor, _UNBOUNDED))
    constant_divisor = b.low if b.low == b.high and b.low > 0 else None
    if constant_divisor is not None and a.is_nonnegative():
        if isinstance(op, arith.DivUIOp | arith.FloorDivSIOp | arith.DivSIOp):
            divisor = a.divisor // constant_divisor if a.divisor % constant_divisor == 0 else 1
            return IndexFacts(a.low // constant_divisor, a.high // constant_divisor, divisor)
        if isinstance(op, arith.RemUIOp | arith.RemSIOp):
            return IndexFacts(0, min(a.high, constant_divisor - 1), _gcd(a.divisor, constant_divisor))
    if isinstance(op, arith.MinSIOp | arith.MinUIOp):
        return IndexFacts(min(a.low, b.low), min(a.high, b.high), _gcd(a.divisor, b.divisor))
    if isinstance(op, arith.MaxSIOp | arith.MaxUIOp):
        return IndexFacts(max(a.low, b.low), max(a.high, b.high), _gcd(a.divisor, b.divisor))
    return IndexFacts.unknown()


def facts_of(value: SSAValue, seeds: Mapping[SSAValue, IndexFacts], cache: dict[SSAValue, IndexFacts]) -> IndexFacts:
    """The facts about `value`, given facts about some values (program ids, thread ids)."""
    if value in seeds:
        return seeds[value]
    if value in cache:
        return cache[value]
    owner = value.owner
    if not isinstance(owner, Operation):
        result = IndexFacts.unknown()
    else:
        result = _combine(owner, [facts_of(operand, seeds, cache) for operand in owner.operands])
    cache[value] = result
    return result
