"""Errors for people: located parse and verifier errors, and pass diagnostics.

xDSL reports a failed verification without naming the op, and its operations do not remember
where in the source they were parsed. `parse_module` wraps xDSL's parser to record each op's
source span; `verify` then names the failing op and points at it:

    in.mlir:3:8: error: 'graph.add' op operand #1 (rhs) of shape 3 does not broadcast with lhs of shape 4
      %0 = graph.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
           ^^^^^^^^^

Passes report the ops they cannot handle with `PassFailure`, which carries the op and prints the
same way. `MlcError` is the base of every error the tools print without a traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

from mlc.errors import MlcError


class PassFailure(MlcError):
    """A pass could not handle `op`; the message says why."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


@dataclass
class SourceMap:
    """Where each parsed op came from."""

    spans: dict[Operation, Span] = field(default_factory=dict)

    def span_of(self, op: Operation) -> Span | None:
        # Ops created by passes have no span: report the nearest parsed ancestor.
        current: Operation | None = op
        while current is not None:
            if current in self.spans:
                return self.spans[current]
            current = current.parent_op()
        return None


class _RecordingParser(Parser):
    """xDSL's parser, remembering the span of every op's name."""

    def __init__(self, context: Context, text: str, name: str, source_map: SourceMap):
        super().__init__(context, text, name)
        self._source_map = source_map

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as error:
            # An op or attribute that fails its own constraints while being built: locate it.
            raise ParseError(Span(start.start, start.end, start.input), str(error)) from None
        self._source_map.spans[op] = Span(start.start, start.end, start.input)
        return op


def _with_op_suggestions(error: ParseError, context: Context) -> ParseError:
    match = re.search(r"Operation ([\w.$]+) is not registered", str(error))
    if match is None:
        return error
    known = [op.name for op in context.loaded_ops]
    suggestions = difflib.get_close_matches(match.group(1), known, n=3, cutoff=0.6)
    if suggestions:
        error.add_note("did you mean " + " or ".join(f"'{s}'" for s in suggestions) + "?")
    return error


def parse_module(text: str, context: Context, name: str = "<input>") -> tuple[ModuleOp, SourceMap]:
    """Parses MLIR text; raises xDSL's ParseError (with file:line:col and a caret)."""
    source_map = SourceMap()
    parser = _RecordingParser(context, text, name, source_map)
    try:
        module = parser.parse_module()
    except ParseError as error:
        raise _with_op_suggestions(error, context) from None
    return module, source_map


def format_parse_error(error: ParseError) -> str:
    """`file:line:col: error: message`, the source line and a caret, then any notes."""
    context = error.span.print_with_context().splitlines()
    lines = [f"{error.span.get_location()}: error: {error.msg}", *context[1:3]]
    lines += [f"note: {note}" for note in getattr(error, "__notes__", [])]
    return "\n".join(lines)


def describe_op(op: Operation, message: str, source_map: SourceMap | None, file_name: str) -> str:
    """`file:line:col: error: 'op' op message`, with the source line or the op itself below."""
    span = source_map.span_of(op) if source_map is not None else None
    header = f"error: '{op.name}' op {message}"
    if span is not None:
        location = span.get_location()
        return f"{location}: {header}\n" + "\n".join(span.print_with_context().splitlines()[1:])
    return f"{file_name}: {header}\n  {first_line_of(op)}"


def first_line_of(op: Operation) -> str:
    """The first line of `op` as printed (its regions elided)."""
    from io import StringIO

    text = StringIO()
    Printer(stream=text).print_op(op)
    return text.getvalue().splitlines()[0].strip()


def failing_op(ops: Iterable[Operation]) -> tuple[Operation, VerifyException] | None:
    """The first op (innermost first within each) whose own verifier fails."""
    for op in ops:
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as error:
            return op, error
    return None


class VerificationFailure(MlcError):
    pass


def verify(module: ModuleOp, source_map: SourceMap | None = None, file_name: str = "<input>") -> None:
    """Verifies `module`; raises VerificationFailure naming and locating the failing op."""
    try:
        module.verify()
    except VerifyException as error:
        found = failing_op(module.walk())
        if found is None:
            raise VerificationFailure(f"{file_name}: error: {error}") from None
        op, op_error = found
        raise VerificationFailure(describe_op(op, str(op_error), source_map, file_name)) from None
