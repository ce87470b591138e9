"""Errors for people: located parse and verifier errors, and pass diagnostics.

xDSL reports a failed verification without naming the op, and its operations do not remember
where in the source they were parsed. `parse_module` wraps xDSL's parser to record each op's
source span; `verify` then names the failing op and points at it:

    in.mlir:3:8: error: 'graph.add' op operand #1 (rhs) of shape 3 does not broadcast with lhs of shape 4
      %0 = graph.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
           ^^^^^^^^^

The parser wrapper builds on `mlc.dialects.syntax.MlcParser` (strings lexed in linear time, dense
literals read as MLIR reads them) and also fixes what xDSL 0.74's parser gets wrong on bad input:

* input nested too deeply for Python's recursion limit is a located error, not a RecursionError;
* a missing `}` says so and points at the `{` it would close (xDSL said "in block definition");
  a stray token at the top level and a value that is never defined are reported where they are,
  not at the end of the input;
* empty input (or only comments) is an empty module, as in MLIR; a leading byte-order mark is
  skipped.

`verify` adds what xDSL's verifier lacks: a value must be defined before it is used, i.e. its
definition must dominate the use (MLIR's "operand #0 does not dominate this use"). Blocks of a
region are ordered by xDSL's `DominanceInfo`; ops in the module's own body are exempt (a graph
region in MLIR) and so are uses in unreachable blocks, as in MLIR.

Passes report the ops they cannot handle with `PassFailure`, which carries the op and prints the
same way. An exception of any other kind in a pass is a bug in mlc: `run_pass` wraps it in
`InternalCompilerError`, which names the pass. `MlcError` is the base of every error the tools
print without a traceback.
"""

from __future__ import annotations

import difflib
import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.parser.core import UnresolvedOperand
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import MultipleSpansParseError, ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from mlc.dialects.syntax import MlcParser
from mlc.errors import MlcError, PassFailure  # noqa: F401 - PassFailure is re-exported: passes import it from here


class InternalCompilerError(MlcError):
    """A pass raised an exception on IR that verified: a bug in mlc, not in the input.

    The original exception is `__cause__` (its traceback is what MLC_DEBUG=1 shows)."""

    def __init__(self, pass_name: str, error: BaseException):
        super().__init__(f"internal compiler error in pass '{pass_name}': {summarize_exception(error)}")
        self.pass_name = pass_name


def summarize_exception(error: BaseException) -> str:
    """`Type: message`, cut at the message's first line (xDSL's messages can hold whole ops)."""
    lines = str(error).strip().splitlines() or [""]
    return f"{type(error).__name__}: {lines[0]}" + (" ..." if len(lines) > 1 else "")


def run_pass(module_pass: ModulePass, context: Context, module: ModuleOp) -> None:
    """Applies `module_pass`; an exception that is not an MlcError becomes an InternalCompilerError."""
    try:
        module_pass.apply(context, module)
    except MlcError:
        raise
    except (Exception, RecursionError) as error:
        raise InternalCompilerError(module_pass.name, error) from error


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


_NOT_ENTIRE_INPUT = "Could not parse entire input!"
_PARSER_FAILURES = (ValueError, OverflowError, AssertionError, TypeError, IndexError, KeyError, struct.error)
_UNDEFINED_VALUES = "values used but not defined"


class _RecordingParser(MlcParser):
    """xDSL's parser, remembering the span of every op's name, the `{` of every region being
    parsed and the first use of every value not defined yet."""

    def __init__(self, context: Context, text: str, name: str, source_map: SourceMap):
        super().__init__(context, text, name)
        self._source_map = source_map
        self._open_regions: list[Span] = []
        self._defined_blocks: list[dict[str, Span]] = []
        self.first_forward_uses: dict[str, Span] = {}

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as error:
            # An op or attribute that fails its own constraints while being built: locate it.
            raise ParseError(Span(start.start, start.end, start.input), str(error)) from None
        except _PARSER_FAILURES as error:
            # xDSL's parsers assume well-formed input in places (asserts, int(), struct.pack, ...):
            # what they raise on malformed input is a parse error where the parser stopped.
            raise ParseError(self._current_token.span, _parser_failure_message(error)) from None
        self._source_map.spans[op] = Span(start.start, start.end, start.input)
        return op

    def parse_optional_region(self, arguments: Iterable[object] | None = None):  # type: ignore[override]
        if self._current_token.kind != MLIRTokenKind.L_BRACE:
            return None
        self._open_regions.append(self._current_token.span)
        self._defined_blocks.append({})
        try:
            return super().parse_optional_region(arguments)  # type: ignore[arg-type]
        finally:
            self._open_regions.pop()
            self._defined_blocks.pop()

    def _parse_block(self) -> Block:
        # Reached inside a region when the next token neither starts an op nor closes the region.
        if self._current_token.kind != MLIRTokenKind.CARET_IDENT and self._open_regions:
            self._raise_unclosed_region()
        label = self._current_token.span
        if self._defined_blocks:
            # xDSL's own check misses a block that was branched to before its first definition.
            earlier = self._defined_blocks[-1].setdefault(label.text, label)
            if earlier is not label:
                error = ParseError(label, f"redefinition of block '{label.text}'")
                error.add_note(located_note(earlier, "the block is first defined here"))
                raise error
        return super()._parse_block()

    def _raise_unclosed_region(self) -> NoReturn:
        token = self._current_token
        if token.kind == MLIRTokenKind.EOF:
            error = ParseError(token.span, "missing '}': the input ends inside a region")
            error.add_note(located_note(self._open_regions[-1], "the region that is not closed begins here"))
            raise error
        raise ParseError(token.span, f"expected an operation or '}}' to end the region, got '{token.text}'")

    def resolve_operand(self, operand: UnresolvedOperand, type: Attribute) -> SSAValue:  # noqa: A002
        name = operand.operand_name
        if name not in self.ssa_values and name not in self.forward_ssa_references:
            self.first_forward_uses[name] = operand.span
        return super().resolve_operand(operand, type)

    def is_at_end(self) -> bool:
        return self._current_token.kind == MLIRTokenKind.EOF

    def current_span(self) -> Span:
        return self._current_token.span


def _parser_failure_message(error: Exception) -> str:
    if isinstance(error, (struct.error, OverflowError)):
        return f"a value does not fit its type ({error})"
    if isinstance(error, ValueError) and str(error):
        return str(error)
    return f"malformed input ({type(error).__name__}: {error})"


def _with_op_suggestions(error: ParseError, context: Context) -> ParseError:
    match = re.search(r"Operation ([\w.$]+) is not registered", str(error))
    if match is None:
        return error
    known = [op.name for op in context.loaded_ops]
    suggestions = difflib.get_close_matches(match.group(1), known, n=3, cutoff=0.6)
    if suggestions:
        error.add_note("did you mean " + " or ".join(f"'{s}'" for s in suggestions) + "?")
    return error


def _clearer(error: ParseError, parser: _RecordingParser) -> ParseError:
    """xDSL's end-of-parse errors, reworded and moved to where the problem is."""
    if error.msg == _NOT_ENTIRE_INPUT:
        token = error.span.text
        if token == "}":
            return ParseError(error.span, "unexpected '}': no region is open here")
        return ParseError(error.span, f"expected an operation, got '{token}'")
    if error.msg.startswith(_UNDEFINED_VALUES):
        undefined = parser.forward_ssa_references
        uses = [(span, name) for name, span in parser.first_forward_uses.items() if name in undefined]
        if uses:
            span, name = min(uses, key=lambda use: use[0].start)
            return ParseError(span, f"use of undefined value '%{name}'")
    return error


def parse_module(text: str, context: Context, name: str = "<input>") -> tuple[ModuleOp, SourceMap]:
    """Parses MLIR text; raises xDSL's ParseError (with file:line:col and a caret)."""
    source_map = SourceMap()
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write is not part of the text
    parser = _RecordingParser(context, text, name, source_map)
    if parser.is_at_end():  # nothing but whitespace and comments
        return ModuleOp([]), source_map
    try:
        module = parser.parse_module()
    except ParseError as error:
        if error.msg == _NOT_ENTIRE_INPUT and parser.is_at_end():
            return ModuleOp([]), source_map  # nothing but aliases and metadata: an empty module
        raise _with_op_suggestions(_clearer(error, parser), context) from None
    except _PARSER_FAILURES as error:  # raised outside any op (e.g. in an alias definition)
        raise ParseError(parser.current_span(), _parser_failure_message(error)) from None
    except RecursionError:
        raise ParseError(
            parser.current_span(),
            "the input is nested too deeply (regions, attributes or types inside each other "
            "more than about 100 levels deep)",
        ) from None
    return module, source_map


def located_note(span: Span, message: str) -> str:
    """A note pointing at `span`: `file:line:col: note: message`, the source line and a caret."""
    context = span.print_with_context().splitlines()
    return "\n".join([f"{span.get_location()}: note: {message}", *context[1:3]])


def _note_text(note: str) -> str:
    return note if re.match(r"[^\n]*:\d+:\d+: note: ", note) else f"note: {note}"


def format_parse_error(error: ParseError) -> str:
    """`file:line:col: error: message`, the source line and a caret, then any notes."""
    context = error.span.print_with_context().splitlines()
    lines = [f"{error.span.get_location()}: error: {error.msg}", *context[1:3]]
    if isinstance(error, MultipleSpansParseError):
        lines += [located_note(span, message or error.ref_text or "") for span, message in error.refs]
    lines += [_note_text(note) for note in getattr(error, "__notes__", [])]
    return "\n".join(lines)


def describe_op(
    op: Operation, message: str, source_map: SourceMap | None, file_name: str, notes: Sequence[str] = ()
) -> str:
    """`file:line:col: error: 'op' op message`, with the source line or the op itself below."""
    span = source_map.span_of(op) if source_map is not None else None
    header = f"error: '{op.name}' op {message}"
    if span is not None:
        location = span.get_location()
        text = f"{location}: {header}\n" + "\n".join(span.print_with_context().splitlines()[1:])
    else:
        text = f"{file_name}: {header}\n  {first_line_of(op)}"
    return "\n".join([text, *(_note_text(note) for note in notes)])


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


class _Dominance:
    """Whether values are defined before their uses, with per-block op positions and per-region
    block dominance computed once."""

    def __init__(self) -> None:
        self._positions: dict[Block, dict[Operation, int]] = {}
        self._regions: dict[Region, DominanceInfo] = {}

    def _position(self, op: Operation, block: Block) -> int:
        if block not in self._positions:
            self._positions[block] = {inner: index for index, inner in enumerate(block.ops)}
        return self._positions[block][op]

    def _block_dominates(self, region: Region, definition: Block, use: Block) -> bool:
        if region not in self._regions:
            self._regions[region] = DominanceInfo(region)
        info = self._regions[region]
        entry = region.first_block
        # A use in an unreachable block is dominated by everything (MLIR's rule).
        return info.dominates(definition, use) or entry is None or not info.dominates(entry, use)

    def dominates(self, value: SSAValue, user: Operation) -> bool:
        if isinstance(value, BlockArgument):
            block, definition = value.block, None
        elif isinstance(value, OpResult):
            block, definition = value.op.parent_block(), value.op
        else:
            return False
        region = block.parent if block is not None else None
        if region is None:
            return False
        if isinstance(region.parent_op(), ModuleOp):
            return True  # the module's body is a graph region: no order among its ops
        ancestor: Operation | None = user
        while ancestor is not None and ancestor.parent_region() is not region:
            ancestor = ancestor.parent_op()
        if ancestor is None:
            return False  # used outside the region that defines it
        use_block = ancestor.parent_block()
        assert use_block is not None
        if use_block is not block:
            return self._block_dominates(region, block, use_block)
        if definition is None:
            return True
        return definition is not ancestor and self._position(definition, block) < self._position(ancestor, block)


def dominance_violation(module: ModuleOp) -> tuple[Operation, int] | None:
    """The first op with an operand whose definition does not dominate it, and the operand's index."""
    dominance = _Dominance()
    for op in module.walk():
        for index, operand in enumerate(op.operands):
            if not dominance.dominates(operand, op):
                return op, index
    return None


class VerificationFailure(MlcError):
    pass


def _dominance_notes(op: Operation, index: int, source_map: SourceMap | None) -> list[str]:
    operand = op.operands[index]
    if not isinstance(operand, OpResult) or source_map is None or operand.op not in source_map.spans:
        return []
    return [located_note(source_map.spans[operand.op], "operand defined here")]


def duplicate_symbol(module: ModuleOp) -> tuple[Operation, Operation] | None:
    """The first op of a symbol table whose symbol an earlier op of it already defines, and that op."""
    for table in module.walk():
        if not table.has_trait(SymbolTable):
            continue
        seen: dict[str, Operation] = {}
        for region in table.regions:
            for op in region.walk():
                if op.parent_op() is not table or not isinstance(name := op.properties.get("sym_name"), StringAttr):
                    continue
                if name.data in seen:
                    return op, seen[name.data]
                seen[name.data] = op
    return None


def innermost_invalid_op(module: ModuleOp) -> tuple[Operation, VerifyException] | None:
    """The innermost op that fails verification with what it holds (e.g. an empty body where a
    terminator is required), found when no op fails on its own."""
    for op in reversed(list(module.walk())):  # every op comes after all it holds
        try:
            op.verify()
        except VerifyException as error:
            return op, error
    return None


def _describe_failure(module: ModuleOp, error: VerifyException, source_map: SourceMap | None, file_name: str) -> str:
    # xDSL blames the symbol table (the module) for a duplicate symbol: blame the duplicate.
    duplicate = duplicate_symbol(module)
    if duplicate is not None:
        op, first = duplicate
        name = op.properties["sym_name"]
        assert isinstance(name, StringAttr)
        first_span = source_map.spans.get(first) if source_map is not None else None
        notes = [located_note(first_span, "first defined here")] if first_span is not None else []
        return describe_op(op, f"redefines the symbol @{name.data}", source_map, file_name, notes)
    found = failing_op(module.walk()) or innermost_invalid_op(module)
    if found is not None:
        return describe_op(found[0], str(found[1]), source_map, file_name)
    return f"{file_name}: error: {error}"


def verify(module: ModuleOp, source_map: SourceMap | None = None, file_name: str = "<input>") -> None:
    """Verifies `module`; raises VerificationFailure naming and locating the failing op."""
    try:
        module.verify()
    except VerifyException as error:
        raise VerificationFailure(_describe_failure(module, error, source_map, file_name)) from None
    violation = dominance_violation(module)
    if violation is not None:
        op, index = violation
        message = f"operand #{index} does not dominate this use"
        notes = _dominance_notes(op, index, source_map)
        raise VerificationFailure(describe_op(op, message, source_map, file_name, notes))
