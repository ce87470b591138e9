"""The custom syntax the loop ops share: a buffer operand and its indices, `%buffer[%i, %j]`.

What: `print_indexed` prints the form, `parse_indexed` reads it unresolved (operand and index
names, before the types that follow the op's `:` are known), `resolve_indices` resolves the
indices as `index` values. Used by the tensor-core, async-copy, mbarrier and TMA ops.
Preconditions: the parser stands at the buffer's `%name`. Limits: indices are SSA values (no
constants written in place).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType
from xdsl.ir import SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer


def print_indexed(printer: Printer, buffer: SSAValue, indices: Sequence[SSAValue]) -> None:
    """`%buffer[%i, %j]`: a memref operand and its indices, as the loop ops print them."""
    printer.print_operand(buffer)
    printer.print_string("[")
    printer.print_list(indices, printer.print_operand)
    printer.print_string("]")


def parse_indexed(parser: Parser) -> tuple[object, list[object]]:
    return parser.parse_unresolved_operand(), parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)


def resolve_indices(parser: Parser, indices: Sequence[object]) -> list[SSAValue]:
    return parser.resolve_operands(indices, [IndexType()] * len(indices), parser.pos)  # type: ignore[arg-type]
