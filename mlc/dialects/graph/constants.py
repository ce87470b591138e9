"""Constant tensors: reading dense literals, numpy arrays as dense attributes, splat detection, and
what text can hold.

`parse_dense_literal` reads a `graph.constant`'s `dense<...> : tensor<...>` as MLIR means it (hex
float elements are bit patterns; values that do not fit are located errors). `dense_to_numpy` (in
`interpret.py`) reads a constant's value; this module goes the other way and answers the questions
the graph passes ask about constants:

* `numpy_to_dense(array, tensor_type)` builds the `DenseIntOrFPElementsAttr` of an array, in the
  byte layout xDSL's parser produces (little-endian elements; `i1` true as the byte 0xFF). An array
  whose elements are all bitwise equal becomes a *splat*: one element stored, printed `dense<v>`,
  expanded by `dense_to_numpy` (so a broadcast constant costs one element, as in MLIR).
* `splat_scalar(attribute)` is the single value of a splat (bitwise: `-0.0` and `+0.0` differ and a
  NaN splat is a splat), or None.
* `round_trips_as_text(attribute)` says whether xDSL 0.74 prints the attribute as text that parses
  back to the same bits. Often it does not: it prints NaN, infinities and f32 values such as
  3991952.0 or 16777216.0 (integers of 7 to 9 digits) as hexadecimal bit patterns, which its parser
  reads back as integer *values*; and it prints a non-splat array of zeros of both signs as a
  splat (its splat test uses `==`). Passes that create constants skip such values, so that
  printing a module never changes its meaning.
"""

from __future__ import annotations

import re
import sys

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, TensorType
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Span

from mlc.dialects.element_types import is_bool, is_float, to_numpy_dtype
from mlc.dialects.graph.interpret import dense_to_numpy
from mlc.dialects.syntax import MlcParser


def _storage(array: np.ndarray, tensor_type: TensorType) -> np.ndarray:
    """`array` as the element values that the attribute's bytes hold (i1 as int8 0 / -1)."""
    dtype = to_numpy_dtype(tensor_type.element_type)
    if is_bool(tensor_type.element_type):
        # xDSL's parser stores `true` as the normalised i1 value -1, i.e. the byte 0xFF.
        return np.where(np.asarray(array, dtype=np.bool_), -1, 0).astype(np.int8)
    storage = np.ascontiguousarray(array, dtype=dtype)
    # Attribute bytes are little-endian whatever the host (xDSL packs with struct's "<").
    return storage.byteswap() if sys.byteorder == "big" else storage


def is_bitwise_splat(array: np.ndarray) -> bool:
    """Whether every element of `array` has the same bits as the first (true for size <= 1)."""
    raw = np.ascontiguousarray(array).reshape(-1)
    if raw.size <= 1:
        return True
    as_bytes = raw.view(np.uint8).reshape(raw.size, raw.itemsize)
    return bool((as_bytes == as_bytes[0]).all())


def numpy_to_dense(array: np.ndarray, tensor_type: TensorType) -> DenseIntOrFPElementsAttr:
    """The dense attribute of type `tensor_type` holding `array` (a splat when it is one)."""
    if tuple(np.shape(array)) != tuple(tensor_type.get_shape()):
        raise ValueError(f"array of shape {np.shape(array)} does not fit {tensor_type}")
    storage = _storage(array, tensor_type)
    if is_bitwise_splat(storage) and storage.size > 0:
        storage = storage.reshape(-1)[:1]
    return DenseIntOrFPElementsAttr(tensor_type, BytesAttr(storage.tobytes()))


def splat_dense(
    value: float | int | bool | np.generic | np.ndarray, tensor_type: TensorType
) -> DenseIntOrFPElementsAttr:
    """The splat attribute of type `tensor_type` whose every element is `value` (a scalar)."""
    scalar = np.asarray(value, dtype=to_numpy_dtype(tensor_type.element_type))
    # A tensor without elements stores none (`dense<>`): one stored element would be read back
    # by xDSL's parser as something else.
    count = 0 if 0 in tensor_type.get_shape() else 1
    storage = _storage(np.repeat(scalar.reshape(1), count), tensor_type)
    return DenseIntOrFPElementsAttr(tensor_type, BytesAttr(storage.tobytes()))


def splat_scalar(attribute: DenseIntOrFPElementsAttr) -> np.generic | None:
    """The value of every element of a splat attribute, or None when its elements differ."""
    tensor_type = attribute.type
    assert isinstance(tensor_type, TensorType)
    dtype = to_numpy_dtype(tensor_type.element_type)
    raw = np.frombuffer(attribute.data.data, dtype=np.int8 if dtype == np.bool_ else dtype)
    if raw.size == 0 or not is_bitwise_splat(raw):
        return None
    if dtype == np.bool_:
        return np.bool_(raw[0] != 0)
    return raw[:1].byteswap()[0] if sys.byteorder == "big" else raw[0]


TEXT_CHECK_LIMIT = 100
"""xDSL prints a non-splat attribute of more elements as a raw hex string, which parses back exactly."""


def round_trips_as_text(attribute: DenseIntOrFPElementsAttr) -> bool:
    """Whether xDSL 0.74 prints `attribute` as text that parses back to the same bits.

    Small attributes and splats are printed element by element: they are printed and parsed back
    (exact by construction, whatever the printer's current quirks). Larger ones are printed as raw
    hex, which is exact unless xDSL takes them for a splat: its test compares with `==`, so zeros of
    both signs look equal.
    """
    tensor_type = attribute.type
    assert isinstance(tensor_type, TensorType)
    splat = splat_scalar(attribute)
    if splat is None and len(attribute) > TEXT_CHECK_LIMIT:
        if not is_float(tensor_type.element_type):
            return True
        values = np.asarray(dense_to_numpy(attribute), dtype=np.float64).reshape(-1)
        return not (values == values[0]).all()
    if splat is not None:  # its one element, printed as a rank-0 splat (parsing expands a splat)
        attribute = DenseIntOrFPElementsAttr(TensorType(tensor_type.element_type, []), BytesAttr(splat.tobytes()))
        tensor_type = attribute.type
    try:
        parsed = Parser(Context(), str(attribute)).parse_attribute()
    except ParseError:
        return False
    if not isinstance(parsed, DenseIntOrFPElementsAttr) or parsed.type != tensor_type:
        return False
    if splat is None:
        return parsed.data.data == attribute.data.data
    parsed_splat = splat_scalar(parsed)
    return parsed_splat is not None and parsed_splat.tobytes() == splat.tobytes()


def exact_text(attribute: DenseIntOrFPElementsAttr) -> str:
    """`attribute` as text that parses back to the same bits.

    xDSL's own text when it round-trips; otherwise (NaN, infinities and some 7-9 digit floats, which
    xDSL 0.74 prints as integers or rounds) MLIR's raw form `dense<"0x...">`, the little-endian
    bytes of every element, or of one element for a splat.
    """
    if round_trips_as_text(attribute):
        return str(attribute)
    raw = attribute.data.data
    splat = splat_scalar(attribute)
    if splat is not None:
        raw = raw[: splat.itemsize]
    return f'dense<"0x{raw.hex().upper()}"> : {attribute.type}'


_ELEMENT = re.compile(r"(?P<minus>-\s*)?(?P<hex>0x[0-9a-fA-F]+)|[-+]?[0-9][0-9.]*(?:[eE][-+]?[0-9]+)?|[A-Za-z_]\w*")
"""One element literal of a dense attribute: a hexadecimal literal (with any sign before it), a
decimal number, or a word (true, false, inf, nan)."""


def _elements_extent(text: str, start: int) -> tuple[int, int] | None:
    """Where the elements of the `dense<...>` starting at `start` begin and end (the closing `>`
    is the first one outside a string), or None when `text` has no such literal there."""
    if not text.startswith("dense<", start):
        return None
    in_string, position = False, start + len("dense<")
    while position < len(text):
        character = text[position]
        if in_string and character == "\\":
            position += 2
            continue
        if character == '"':
            in_string = not in_string
        elif character == ">" and not in_string:
            return start + len("dense<"), position
        position += 1
    return None


def parse_dense_literal(parser: Parser) -> DenseIntOrFPElementsAttr:
    """The `dense<...> : tensor<...>` attribute of a graph.constant, read as MLIR reads it.

    xDSL's attribute parser does the reading, with MLIR's meaning of hexadecimal literals among
    float elements (an element's bit pattern: `dense<0x7F800000> : tensor<2xf32>` holds infinities,
    the way mlir-opt prints inf and NaN) put back: xDSL 0.74 reads them as integer values, which
    also overflow f16 and bf16. Hexadecimal elements are therefore read as 0 and their bits set
    afterwards. The literal is parsed on its own (a sub-parser over its text), so that a value that
    does not fit the element type, which xDSL raises as a Python exception, becomes a parse error
    at the literal, and xDSL's errors found only after the type (shape mismatches) point at it too.
    """
    content, start = parser.lexer.input.content, parser.pos
    extent = _elements_extent(content, start)
    if extent is None:
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            # End the caret at the attribute, not at the next token (which may be on a later line).
            end = start + len(content[start : parser.pos].rstrip())
            parser.raise_error(
                f"expected a dense elements attribute such as dense<1.0> : tensor<4xf32>, got {value}", start, end
            )
        return value
    elements_start, elements_end = extent
    literal = Span(start, elements_end + 1, parser.lexer.input)
    parser._resume_from(elements_end + 1)
    parser.parse_punctuation(":", " and the tensor type after the dense literal")
    type_start = parser.pos
    tensor_type = parser.parse_type()
    if not isinstance(tensor_type, TensorType):
        parser.raise_error(f"expected a tensor type for the dense literal, got {tensor_type}", type_start, parser.pos)
    elements = content[elements_start:elements_end]
    hex_floats = [] if elements.lstrip().startswith('"') or not is_float(tensor_type.element_type) else [
        (index, match) for index, match in enumerate(_ELEMENT.finditer(elements)) if match.group("hex")
    ]
    splat = bool(elements.strip()) and not elements.lstrip().startswith(("[", '"'))
    # A splat is read as one element and kept as one (xDSL would expand it to every element: a
    # `dense<1.0> : tensor<100000x100000xf32>` would take 40 GB before any verifier could refuse it).
    read_type = TensorType(tensor_type.element_type, []) if splat else tensor_type
    text = list(content[start : elements_end + 1] + " : " + str(read_type))
    for _, match in hex_floats:  # each hex literal becomes a 0 of the same length: offsets stay
        offset = elements_start - start + match.start("hex")
        text[offset : offset + len(match.group("hex"))] = "0".ljust(len(match.group("hex")))
    value = _parse_attribute_text("".join(text), literal, tensor_type, parser)
    if hex_floats:
        value = _with_hex_bits(value, hex_floats, splat, elements_start, literal)
    if splat:
        return DenseIntOrFPElementsAttr(tensor_type, value.data)
    return value


def _parse_attribute_text(
    text: str, literal: Span, tensor_type: TensorType, parser: Parser
) -> DenseIntOrFPElementsAttr:
    """The attribute in `text` (which starts at `literal`), with errors located in the whole input."""
    start = literal.start
    try:
        value = MlcParser(parser.ctx, text, parser.lexer.input.name).parse_attribute()
    except ParseError as error:
        # xDSL checks the shape once it has read the type: point at the literal, not past the type.
        if start + error.span.start >= literal.end:
            raise ParseError(literal, error.msg) from None
        raise ParseError(Span(start + error.span.start, start + error.span.end, literal.input), error.msg) from None
    except (ValueError, OverflowError) as error:
        reason = f": {error}" if isinstance(error, ValueError) else ""
        message = f"a value of the dense literal does not fit {tensor_type.element_type}{reason}"
        raise ParseError(literal, message) from None
    assert isinstance(value, DenseIntOrFPElementsAttr)
    return value


def _with_hex_bits(
    value: DenseIntOrFPElementsAttr,
    hex_floats: list[tuple[int, re.Match[str]]],
    splat: bool,
    elements_start: int,
    literal: Span,
) -> DenseIntOrFPElementsAttr:
    """`value` with the bits of the hexadecimal literals `hex_floats` (element index, match) set;
    a splat's one literal sets every element."""
    tensor_type = value.type
    assert isinstance(tensor_type, TensorType)
    values = np.array(dense_to_numpy(value)).reshape(-1)
    bits = values.view(np.dtype(f"u{values.itemsize}"))
    for index, match in hex_floats:
        where = Span(elements_start + match.start(), elements_start + match.end(), literal.input)
        if match.group("minus"):
            raise ParseError(where, "a hexadecimal float literal cannot have a leading minus (it is the bit pattern)")
        pattern = int(match.group("hex"), 16)
        if pattern >= 1 << (8 * values.itemsize):
            bits_of = f"the {8 * values.itemsize} bits of {tensor_type.element_type}"
            raise ParseError(where, f"hexadecimal literal {match.group('hex')} does not fit {bits_of}")
        if splat:
            bits[:] = pattern
        else:
            bits[index] = pattern
    return numpy_to_dense(values.reshape(tensor_type.get_shape()), tensor_type)
