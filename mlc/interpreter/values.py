"""How the interpreters represent runtime values, and the helpers every op implementation shares.

A value of scalar type (`f32`, `i32`, `index`, `i1`, `!llvm.ptr`) is a numpy array over *lanes*:
0-d when every lane holds the same value, otherwise one axis per lane axis of the running kernel
(size 1 along axes the value does not depend on), so that numpy broadcasting lines lanes up. A
vector value appends its vector shape after the lane axes, and a tile (`!tile.tile`) or tensor
value is an array of its own shape (tile programs run one at a time, so they have no lane axes).
Dtypes are exact: f32 is float32, f16 float16, i1 bool, index int64, and pointers are int64 byte
addresses in the interpreter's virtual address space (see `memory.py`). An LLVM aggregate
(struct or array) is a tuple of its fields.

A memref is a `MemRefValue`: the address of its aligned pointer (per lane or uniform), an element
offset, static sizes and strides, and the element type, like MLIR's memref descriptor.

Masks (`Mask`) are boolean lane arrays broadcastable to the lanes of the running region, or None
when every lane is active. `merge` is the one place where per-lane results of different paths are
combined (`np.where`, with the mask widened over vector and tile dimensions).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    ShapedType,
    TensorType,
    VectorType,
)
from xdsl.ir import Attribute

from mlc.dialects.element_types import is_float, to_numpy_dtype
from mlc.dialects.graph.interpret import dense_to_numpy
from mlc.dialects.tile.ops import TileType
from mlc.interpreter.errors import InterpreterError

Mask = np.ndarray | None

POINTER_DTYPE = np.dtype(np.int64)


def scalar_type(type_: Attribute) -> Attribute:
    """The element type of a vector, tile, tensor or memref type; the type itself otherwise."""
    if isinstance(type_, VectorType | TileType | TensorType | MemRefType):
        return type_.element_type
    return type_


@functools.lru_cache(maxsize=1024)
def dtype_of(type_: Attribute) -> np.dtype:
    """The numpy dtype holding values (or elements) of `type_` (cached: types are immutable)."""
    element = scalar_type(type_)
    if isinstance(element, llvm.LLVMPointerType):
        return POINTER_DTYPE
    try:
        return to_numpy_dtype(element)
    except NotImplementedError as error:
        raise InterpreterError(f"the interpreter has no representation for values of type {type_}") from error


def trailing_shape(type_: Attribute) -> tuple[int, ...]:
    """The dimensions a value of `type_` has after its lane axes (vector and tile shapes)."""
    if isinstance(type_, VectorType):
        return tuple(type_.get_shape())
    if isinstance(type_, TileType):
        return type_.get_shape()
    if isinstance(type_, TensorType):
        return tuple(type_.get_shape())
    return ()


def integer_width(type_: Attribute) -> int:
    element = scalar_type(type_)
    if isinstance(element, IndexType):
        return 64
    if isinstance(element, IntegerType):
        return element.width.data
    raise InterpreterError(f"{type_} is not an integer type")


def unsigned_dtype(dtype: np.dtype) -> np.dtype:
    if dtype == np.bool_:
        return np.dtype(np.uint8)
    return np.dtype(f"uint{dtype.itemsize * 8}")


def as_array(value: object, dtype: np.dtype) -> np.ndarray:
    """`value` as an array (or numpy scalar) of exactly `dtype`, without copying when it already is."""
    array = np.asarray(value)
    if array.dtype != dtype:
        array = array.astype(dtype)
    return array


def wrap_integer(value: int, width: int) -> int:
    """The signed value of the low `width` bits of `value` (MLIR stores signless constants either way)."""
    if width == 1:
        return value & 1
    value &= (1 << width) - 1
    return value - (1 << width) if value >= 1 << (width - 1) else value


def constant_value(attribute: Attribute, type_: Attribute) -> object:
    """The runtime value of a constant attribute of `type_` (uniform: 0-d or a bare vector)."""
    if isinstance(attribute, DenseIntOrFPElementsAttr):
        array = dense_to_numpy(attribute)
        return array.reshape(trailing_shape(type_)) if trailing_shape(type_) else array.reshape(())
    dtype = dtype_of(type_)
    value: object
    if isinstance(attribute, IntegerAttr):
        if dtype == np.bool_:
            value = attribute.value.data & 1 == 1
        else:
            value = wrap_integer(attribute.value.data, integer_width(type_))
    elif isinstance(attribute, FloatAttr):
        value = attribute.value.data
    else:
        raise InterpreterError(f"unsupported constant attribute {attribute}")
    shape = trailing_shape(type_)
    array = np.asarray(value, dtype=dtype)
    return np.full(shape, array, dtype=dtype) if shape else array


def zero_value(type_: Attribute) -> object:
    """A value of `type_` for lanes that never computed one (zeros; aggregates field by field)."""
    if isinstance(type_, llvm.LLVMStructType):
        return tuple(zero_value(field) for field in type_.types.data)
    if isinstance(type_, llvm.LLVMArrayType):
        return tuple(zero_value(type_.type) for _ in range(type_.size.data))
    if isinstance(type_, MemRefType):
        return MemRefValue(
            np.int64(0),
            np.int64(0),
            tuple(max(d, 0) for d in type_.get_shape()),
            contiguous_strides(tuple(max(d, 0) for d in type_.get_shape())),
            type_.element_type,
        )
    return np.zeros(trailing_shape(type_), dtype=dtype_of(type_))


def poison_value(dtype: np.dtype) -> object:
    """The value freshly allocated memory holds: NaN for floats, 0xA5.. bytes for integers."""
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return np.array(np.nan, dtype=dtype)
    if dtype == np.bool_:
        return np.array(True)
    return np.frombuffer(bytes([0xA5]) * dtype.itemsize, dtype=dtype)[0]


def widen_mask(mask: np.ndarray, trailing_rank: int) -> np.ndarray:
    """`mask` with `trailing_rank` size-1 axes appended, to broadcast over vector or tile dimensions."""
    if trailing_rank == 0 or mask.ndim == 0:
        return mask
    return mask.reshape(mask.shape + (1,) * trailing_rank)


def merge(mask: Mask, new: object, old: object, type_: Attribute) -> object:
    """`new` where `mask` holds and `old` elsewhere (per lane); `new` alone when `mask` is None."""
    if mask is None or old is None:
        return new
    if isinstance(new, MemRefValue):
        assert isinstance(old, MemRefValue)
        return replace(
            new,
            base=np.where(mask, new.base, old.base),
            offset=np.where(mask, new.offset, old.offset),
        )
    if isinstance(new, tuple):
        assert isinstance(old, tuple)
        field_types = aggregate_field_types(type_)
        return tuple(merge(mask, n, o, t) for n, o, t in zip(new, old, field_types))
    return np.where(widen_mask(mask, len(trailing_shape(type_))), new, old)


def select(condition: np.ndarray, when_true: object, when_false: object, type_: Attribute) -> object:
    """Per-lane choice between two values of `type_` by a lane-shaped condition."""
    return merge(np.asarray(condition), when_true, when_false, type_)


def aggregate_field_types(type_: Attribute) -> Sequence[Attribute]:
    if isinstance(type_, llvm.LLVMStructType):
        return type_.types.data
    if isinstance(type_, llvm.LLVMArrayType):
        return [type_.type] * type_.size.data
    raise InterpreterError(f"{type_} is not an aggregate type")


def is_uniform(value: object) -> bool:
    """Whether `value` is the same in every lane (a 0-d array, or a bare vector/tile)."""
    return np.ndim(value) == 0


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(ShapedType.strides_for_shape(tuple(shape))) if shape else ()


def element_count(shape: Sequence[int]) -> int:
    return math.prod(shape)


@dataclass(frozen=True)
class MemRefValue:
    """A memref: element `[i, j, ...]` lives at byte `base + (offset + i*s0 + j*s1 + ...) * size`.

    `base` and `offset` are int64 lane arrays (0-d when uniform); sizes and strides are static
    Python ints, since mlc's memrefs have static shapes (a dynamic size must be uniform).
    """

    base: np.ndarray
    offset: np.ndarray
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    element_type: Attribute

    @property
    def dtype(self) -> np.dtype:
        return dtype_of(self.element_type)

    @property
    def element_shape(self) -> tuple[int, ...]:
        """The vector shape of one element (for memrefs of vectors), () for scalars."""
        return trailing_shape(self.element_type)

    @property
    def element_size(self) -> int:
        return self.dtype.itemsize * element_count(self.element_shape)

    def is_contiguous(self) -> bool:
        return self.strides == contiguous_strides(self.shape) or element_count(self.shape) <= 1

    def start_address(self) -> np.ndarray:
        """The byte address of element [0, ..., 0]."""
        return self.base + self.offset * self.element_size

    def linear_offset(self, indices: Sequence[np.ndarray]) -> np.ndarray:
        """Elements from the aligned pointer to `indices` (per lane)."""
        total: np.ndarray = self.offset
        for index, stride in zip(indices, self.strides):
            total = total + np.asarray(index, dtype=np.int64) * stride
        return total

    def address(self, indices: Sequence[np.ndarray]) -> np.ndarray:
        return self.base + self.linear_offset(indices) * self.element_size

    def reshaped(self, memref_type: MemRefType) -> MemRefValue:
        """This buffer seen with the static shape (and strides) of `memref_type`."""
        shape = tuple(memref_type.get_shape())
        if shape == self.shape and isinstance(memref_type.layout, NoneAttr) and self.is_contiguous():
            return replace(self, element_type=memref_type.element_type)
        if not self.is_contiguous():
            raise InterpreterError(
                f"cannot view a non-contiguous memref of shape {list(self.shape)} as {memref_type}"
            )
        strides = memref_type.get_strides()
        if strides is None or any(s is None for s in strides):
            strides = contiguous_strides(shape)
        strides = tuple(strides)  # type: ignore[arg-type]
        return MemRefValue(self.base, self.offset, shape, strides, memref_type.element_type)


def kernel_parameters(arguments: Sequence[object], parameter_types: Sequence[Attribute]) -> list[object]:
    """A launch's arguments as the kernel's parameters see them: each buffer with the shape of its
    memref parameter (a launch may pass a buffer of the same elements in another shape), other
    values as they are."""
    return [
        argument.reshaped(parameter)
        if isinstance(argument, MemRefValue) and isinstance(parameter, MemRefType)
        else argument
        for argument, parameter in zip(arguments, parameter_types)
    ]


def memref_from_address(address: np.ndarray, memref_type: MemRefType) -> MemRefValue:
    """A memref of `memref_type` whose element [0, ..., 0] is at `address` (a bare pointer).

    The same convention as the cast the other way (`MemRefValue.start_address`), so that a round
    trip through `!llvm.ptr` keeps a view with an offset intact.
    """
    shape = tuple(memref_type.get_shape())
    if any(d < 0 for d in shape):
        raise InterpreterError(f"cannot make a memref of dynamic type {memref_type} from a bare pointer")
    strides = memref_type.get_strides()
    if strides is None or any(s is None for s in strides):
        strides = contiguous_strides(shape)
    return MemRefValue(
        np.asarray(address, dtype=np.int64),
        np.int64(0),
        shape,
        tuple(strides),  # type: ignore[arg-type]
        memref_type.element_type,
    )


def memory_space(memref_type: Attribute) -> int:
    """The memref's memory space as an integer (0 for global memory)."""
    if not isinstance(memref_type, MemRefType):
        return 0
    space = memref_type.memory_space
    if isinstance(space, IntegerAttr):
        return space.value.data
    return 0


def is_float_type(type_: Attribute) -> bool:
    return is_float(scalar_type(type_))
