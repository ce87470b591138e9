"""Reading MLIR text: xDSL 0.74's parser with what it gets wrong on some input put right.

`MlcParser(context, text, name)` is xDSL's `Parser` with two fixes. `mlc.diagnostics.parse_module`
(what the tools and `mlc.compile` read input with) builds on it, and a dialect's custom syntax uses
it to read a part of its input on its own (`graph.constant`'s dense literal):

* an unterminated string literal made xDSL's lexer backtrack exponentially (a hang); `_Lexer`
  reads strings in linear time and names an invalid escape sequence where it is;
* dense literals are read as MLIR reads them (see `MlcParser`): a splat stays one element, and a
  hexadecimal element of a float literal is its bit pattern.

It lives with the dialects, below everything that reads IR, so that a dialect's parser needs
nothing from the layers above it.
"""

from __future__ import annotations

import re
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind


class _Lexer(MLIRLexer):
    """xDSL's lexer, reading string literals in linear time.

    xDSL 0.74's pattern `"(?:[^"\\\\\\n\\v\\f]+|\\\\...)*"` nests a `+` inside a `*`: on a string that
    is never closed, the regex engine tries every way of splitting the rest of the line into runs,
    exponentially many. One character per repetition leaves one way to match.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

    def _lex_string_literal(self, start_pos: int) -> MLIRToken:
        try:
            return super()._lex_string_literal(start_pos)
        except ParseError:
            # xDSL says "End of file reached" for any string that does not match.
            line_end = self.input.content.find("\n", start_pos)
            line = self.input.content[start_pos : line_end if line_end >= 0 else None]
            escape = _invalid_escape(line)
            if escape is not None:
                message = f"invalid escape sequence '{line[escape : escape + 2]}' in a string literal"
                raise ParseError(Span(start_pos + escape, start_pos + escape + 2, self.input), message) from None
            message = "unterminated string literal: no closing '\"' on this line"
            raise ParseError(Span(start_pos, start_pos + 1, self.input), message) from None

    def _lex_prefixed_ident(self, start_pos: int) -> MLIRToken:
        try:
            return super()._lex_prefixed_ident(start_pos)
        except ParseError as error:  # xDSL's message forgot its f-string: "after {first_char}"
            prefix = self.input.content[start_pos]
            raise ParseError(error.span, f"expected a name or number after '{prefix}'") from None

    def lex(self) -> MLIRToken:
        try:
            return super().lex()
        except ParseError as error:
            # "Unexpected character: \x01" shows control characters raw; name them by code point.
            character = error.msg.removeprefix("Unexpected character: ")
            if character != error.msg and not character.isprintable():
                raise ParseError(error.span, f"unexpected character U+{ord(character):04X}") from None
            raise


def _invalid_escape(line: str) -> int | None:
    """Where the first invalid escape sequence of the string literal starting `line` is, if the
    string is closed on this line after it (else the string is just unterminated)."""
    position = 1
    while position < len(line) and line[position] != '"':
        if line[position] == "\\":
            escape = line[position + 1 : position + 3]
            if escape[:1] in ('"', "n", "t", "\\"):
                position += 2
                continue
            if re.fullmatch(r"[0-9A-Fa-f]{2}", escape):
                position += 3
                continue
            return position if '"' in line[position + 1 :] else None
        position += 1
    return None


class MlcParser(Parser):
    """xDSL's parser over `text`, with strings lexed in linear time and dense literals read as MLIR
    reads them.

    * A splat is kept as one element. xDSL 0.74 expands `dense<1.0> : tensor<100000x100000xf32>`
      to every element while parsing (40 GB, before any verifier can refuse the size); one element
      is the storage xDSL itself uses for the splats it builds and prints.
    * A hexadecimal literal among float elements is the element's bit pattern (`0x7FC00000` is a
      NaN in f32, as mlir-opt prints NaN and infinities); xDSL reads it as an integer value.

    Empty and hex-string (`dense<"0x...">`) literals are read by xDSL, which gets them right.
    """

    def __init__(self, context: Context, text: str, name: str = "<input>"):
        super().__init__(context, "", name)
        # xDSL's Parser builds its own lexer; this replaces it before anything is parsed.
        self._parser_state = ParserState(_Lexer(Input(text, name)))

    def parse_dense_int_or_fp_elements_attr(self, type: Any) -> DenseIntOrFPElementsAttr:  # noqa: A002 - xDSL's name
        start = self._current_token.span.start
        self.parse_punctuation("<", " in dense attribute")
        if self._current_token.kind in (MLIRTokenKind.GREATER, MLIRTokenKind.STRING_LIT):
            self._resume_from(start)
            return super().parse_dense_int_or_fp_elements_attr(type)
        elements, shape = self._parse_tensor_literal()
        self.parse_punctuation(">", " in dense attribute")
        if type is None:
            self.parse_punctuation(":", " in dense attribute")
            type = self._parse_dense_literal_type()
        if shape and list(type.get_shape()) != shape:
            self.raise_error(f"Shape mismatch in dense literal. Expected {list(type.get_shape())} shape from the type, but got {shape} shape.")
        literal_type = TensorType(type.element_type, shape)  # rank 0 for a splat
        bits = {index: element for index, element in enumerate(elements) if self._is_float_bit_pattern(element, type.element_type)}
        values = [0.0 if index in bits else element.to_type(self, type.element_type) for index, element in enumerate(elements)]
        data = DenseIntOrFPElementsAttr.from_list(literal_type, values).data
        if bits:
            data = self._with_bit_patterns(data, bits, type.element_type)
        return DenseIntOrFPElementsAttr(type, data)

    def _is_float_bit_pattern(self, element: Any, element_type: Attribute) -> bool:
        text = self.lexer.input.content[element.span.start : element.span.end]
        return isinstance(element_type, AnyFloat) and text.lstrip("-").lower().startswith("0x")

    def _with_bit_patterns(self, data: BytesAttr, bits: dict[int, Any], element_type: Attribute) -> BytesAttr:
        width = element_type.bitwidth  # type: ignore[attr-defined]
        raw = bytearray(data.data)
        for index, element in bits.items():
            if element.is_negative:
                self.raise_error("a hexadecimal float literal cannot have a leading minus (it is the bit pattern)", at_position=element.span)
            pattern = int(self.lexer.input.content[element.span.start : element.span.end], 16)
            if pattern >= 1 << width:
                self.raise_error(f"hexadecimal literal does not fit the {width} bits of {element_type}", at_position=element.span)
            raw[index * width // 8 : (index + 1) * width // 8] = pattern.to_bytes(width // 8, "little")
        return BytesAttr(bytes(raw))
