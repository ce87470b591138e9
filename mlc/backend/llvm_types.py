"""Types and constants for the translation to LLVM IR (`llvm_translate.py`), and the target it is for.

What: `TargetDescription` (triple, data layout, GPU or not, the target's intrinsic check);
`convert_type`, the llvmlite type of an xDSL type (opaque pointers keeping their address space,
`bfloat` through `BFloatType`, which llvmlite 0.50 lacks); `constant`, an llvmlite constant from
an integer, float, dense or string attribute; `intrinsic_type_suffix`, the mangling of an
overloaded intrinsic's type; `reported_as`, which turns type errors and llvmlite's complaints
into a `TranslationError` naming the op being translated.

Algorithm: dense and splat constants are built element by element in row-major order over
nested vectors and arrays; bf16 constants round the f32 value to nearest even (a NaN stays a
quiet NaN). Limits: vectors are fixed-size and 1-d; `index` must be lowered to `i64` first;
a type without an LLVM counterpart is an `UnsupportedTypeError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from llvmlite.ir._utils import DuplicatedNameError
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    VectorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import LLVMTranslationException

from mlc.backend.errors import BackendError, TranslationError


IntrinsicCheck = Callable[[str, ir.Type, Sequence[str]], str | None]
"""(intrinsic name, result type, fast-math flags) → why the target cannot lower it, or None."""


@dataclass(frozen=True)
class TargetDescription:
    """What the translation needs to know of the target machine."""

    triple: str
    data_layout: str
    gpu: bool
    """Whether `nvvm.*` function attributes mark kernels (NVPTX) or are ignored (CPU)."""
    unsupported_intrinsic: IntrinsicCheck | None = None
    """LLVM aborts the whole process on some intrinsics it cannot lower for a target; the
    target's check lets the translation report them as errors instead."""


class UnsupportedTypeError(BackendError):
    """A type has no LLVM counterpart here; the op using it is named by the caller."""


class BFloatType(ir.types._BaseFloatType):
    """LLVM's `bfloat`, which llvmlite 0.50 lacks."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        # LLVM spells bfloat constants as 0xR and the 16 raw bits; round the f32 to nearest even.
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        if value != value:  # NaN: keep it a quiet NaN after truncation
            return "0xR7FC0"
        bits += 0x7FFF + ((bits >> 16) & 1)
        return f"0xR{(bits >> 16) & 0xFFFF:04X}"


BFloatType._create_instance()


def convert_type(type_attr: Attribute) -> ir.Type:
    """The llvmlite type of an xDSL type; pointers are opaque and keep their address space."""
    match type_attr:
        case IntegerType():
            return ir.IntType(type_attr.width.data)
        case Float16Type():
            return ir.HalfType()
        case BFloat16Type():
            return BFloatType()
        case Float32Type():
            return ir.FloatType()
        case Float64Type():
            return ir.DoubleType()
        case llvm.LLVMVoidType() | NoneType():
            return ir.VoidType()
        case llvm.LLVMPointerType():
            return ir.PointerType(addrspace=address_space(type_attr))
        case VectorType():
            if type_attr.get_num_scalable_dims() or type_attr.get_num_dims() != 1:
                raise UnsupportedTypeError(f"type {type_attr} is not a fixed-size 1-d vector")
            return ir.VectorType(convert_type(type_attr.element_type), type_attr.get_shape()[0])
        case llvm.LLVMArrayType():
            return ir.ArrayType(convert_type(type_attr.type), type_attr.size.data)
        case llvm.LLVMStructType():
            return ir.LiteralStructType([convert_type(t) for t in type_attr.types.data])
        case llvm.LLVMFunctionType():
            return ir.FunctionType(
                convert_type(type_attr.output),
                [convert_type(t) for t in type_attr.inputs.data],
                var_arg=type_attr.is_variadic,
            )
        case IndexType():
            raise UnsupportedTypeError("type index cannot be translated; lower index to i64 first")
        case _:
            raise UnsupportedTypeError(f"type {type_attr} has no LLVM IR counterpart")


def address_space(pointer_type: llvm.LLVMPointerType) -> int:
    return pointer_type.addr_space.data if isinstance(pointer_type.addr_space, IntAttr) else 0


def intrinsic_type_suffix(type_: ir.Type) -> str:
    """The mangling of an overloaded intrinsic's type: `f32`, `v4f32`, `p3`, `i64`."""
    if isinstance(type_, ir.VectorType):
        return f"v{type_.count}{intrinsic_type_suffix(type_.element)}"
    if isinstance(type_, ir.PointerType):
        return f"p{type_.addrspace}"
    return type_.intrinsic_name


# ---------------------------------------------------------------------------------------------
# Constants


def _scalar(element_type: ir.Type, value: object) -> object:
    if isinstance(element_type, ir.IntType):
        number = int(value)  # type: ignore[call-overload]
        # xDSL stores i1 `true` as -1 (signless); LLVM wants 1 for i1, any sign for wider ints.
        return int(bool(number)) if element_type.width == 1 else number
    return float(value)  # type: ignore[arg-type]


def _shaped_constant(type_: ir.Type, values: Sequence[object]) -> ir.Constant:
    """A constant of `type_` from its elements in row-major order (a splat when one value)."""
    if isinstance(type_, ir.VectorType | ir.ArrayType):
        count = type_.count
        element = type_.element
        inner = _leaf_count(element)
        if len(values) == 1 and count * inner > 1:
            values = list(values) * (count * inner)
        if len(values) != count * inner:
            raise UnsupportedTypeError(f"{len(values)} values cannot initialize {type_}")
        parts = [values[i * inner : (i + 1) * inner] for i in range(count)]
        return ir.Constant(type_, [_shaped_constant(element, part) for part in parts])
    if len(values) != 1:
        raise UnsupportedTypeError(f"{len(values)} values cannot initialize {type_}")
    return ir.Constant(type_, _scalar(type_, values[0]))


def _leaf_count(type_: ir.Type) -> int:
    if isinstance(type_, ir.VectorType | ir.ArrayType):
        return type_.count * _leaf_count(type_.element)
    return 1


def constant(type_: ir.Type, value: Attribute) -> ir.Constant:
    """The constant of `type_` described by an integer, float or dense attribute."""
    if isinstance(value, IntegerAttr | FloatAttr):
        return _shaped_constant(type_, [value.value.data])
    if isinstance(value, DenseIntOrFPElementsAttr):
        return _shaped_constant(type_, list(value.get_values()))
    if isinstance(value, StringAttr) and isinstance(type_, ir.ArrayType):
        raw = value.data.encode("utf-8")
        return ir.Constant(type_, bytearray(raw))
    raise UnsupportedTypeError(f"the attribute {value} cannot become a constant of type {type_}")


@contextmanager
def reported_as(op: Operation) -> Iterator[None]:
    """Turns type errors and llvmlite's complaints while translating `op` into errors naming `op`."""
    try:
        yield
    except TranslationError:
        raise
    except (UnsupportedTypeError, LLVMTranslationException, NotImplementedError) as error:
        raise TranslationError(op, str(error)) from None
    except DuplicatedNameError as error:
        raise TranslationError(op, f"the symbol {error} is defined twice") from None
    except (TypeError, ValueError) as error:  # llvmlite's checks of operand types
        raise TranslationError(op, f"cannot be translated to LLVM IR: {error}") from None
