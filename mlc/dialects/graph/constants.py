"""Constant tensors: numpy arrays as dense attributes, splat detection, and what text can hold.

`dense_to_numpy` (in `interpret.py`) reads a `graph.constant`'s value; this module goes the other
way and answers the questions the graph passes ask about constants:

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

from mlc.dialects.element_types import is_bool, is_float, to_numpy_dtype
from mlc.dialects.graph.interpret import dense_to_numpy


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


_ELEMENT_LITERAL = re.compile(r"0x[0-9a-fA-F]+|[-+]?(?:[0-9][0-9.]*(?:[eE][-+]?[0-9]+)?|inf|nan)")


def with_hex_float_bits(text: str, attribute: DenseIntOrFPElementsAttr) -> DenseIntOrFPElementsAttr:
    """`attribute`, parsed from `text`, with MLIR's meaning of hex literals among float elements.

    In MLIR `dense<0x7F800000> : tensor<2xf32>` holds infinities: a hexadecimal literal in a float
    attribute is the element's bit pattern (that is how mlir-opt prints inf and NaN). xDSL 0.74
    reads it as the integer 2139095040 converted to float. The raw string form `dense<"0x...">`
    is unaffected.
    """
    tensor_type = attribute.type
    assert isinstance(tensor_type, TensorType)
    # The elements lie between `dense<` and the first `>` (the type after it has its own).
    elements = text[len("dense<") : text.find(">")] if text.startswith("dense<") else ""
    if not is_float(tensor_type.element_type) or "0x" not in elements or elements.lstrip().startswith('"'):
        return attribute
    literals = _ELEMENT_LITERAL.findall(elements)
    values = np.array(dense_to_numpy(attribute)).reshape(-1)
    bits = values.view(np.dtype(f"u{values.itemsize}"))
    if len(literals) == 1:  # a splat
        literals = literals * len(bits)
    for index, literal in enumerate(literals):
        if literal.startswith("0x"):
            bits[index] = int(literal, 16)
    return numpy_to_dense(values.reshape(tensor_type.get_shape()), tensor_type)
