"""Element types that mlc compiles, and their numpy counterparts.

The graph spec allows `f32`, `f16`, `bf16`, `i32`, `i64` and `i1` tensors. This module is the one
place that maps those MLIR types to numpy dtypes (for the interpreters and the runtime) and back
(for frontends), and says which types are floats. `bf16` maps to `ml_dtypes.bfloat16` when that
package is installed (it comes with `onnx`); without it bf16 values cannot be interpreted or run,
and asking for them raises a clear error.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute

SUPPORTED_ELEMENT_TYPES: tuple[Attribute, ...] = (f32, f16, bf16, i32, i64, i1)
"""The tensor element types of the graph spec."""


def bfloat16_dtype() -> np.dtype:
    """numpy's dtype for bf16 (`ml_dtypes.bfloat16`); NotImplementedError without ml_dtypes."""
    try:
        import ml_dtypes
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise NotImplementedError(
            "bf16 values need the 'ml_dtypes' package (pip install ml_dtypes)"
        ) from error
    return np.dtype(ml_dtypes.bfloat16)


def is_float(element_type: Attribute) -> bool:
    return isinstance(element_type, Float16Type | BFloat16Type | Float32Type | Float64Type)


def is_integer(element_type: Attribute) -> bool:
    """True for signless integers other than i1 (which mlc treats as a boolean)."""
    return isinstance(element_type, IntegerType) and element_type.width.data > 1


def is_bool(element_type: Attribute) -> bool:
    return element_type == i1


def to_numpy_dtype(element_type: Attribute) -> np.dtype:
    """The numpy dtype holding values of `element_type` (index is int64)."""
    if isinstance(element_type, BFloat16Type):
        return bfloat16_dtype()
    if isinstance(element_type, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element_type, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element_type, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element_type, IndexType):
        return np.dtype(np.int64)
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return np.dtype(np.bool_)
        if width in (8, 16, 32, 64):
            return np.dtype(f"int{width}")
    raise NotImplementedError(f"no numpy dtype for element type {element_type}")


def from_numpy_dtype(dtype: np.dtype | type) -> Attribute:
    """The MLIR element type for a numpy dtype; raises ValueError for unsupported ones."""
    dtype = np.dtype(dtype)
    table: dict[str, Attribute] = {
        "float32": f32,
        "float16": f16,
        "float64": f64,
        "bfloat16": bf16,
        "int32": i32,
        "int64": i64,
        "bool": i1,
    }
    if dtype.name not in table:
        raise ValueError(f"unsupported dtype {dtype.name}")
    return table[dtype.name]


def byte_width(element_type: Attribute) -> int:
    """Storage size of one element in bytes (i1 is stored as one byte)."""
    return to_numpy_dtype(element_type).itemsize


def tolerance(element_type: Attribute) -> tuple[float, float]:
    """(rtol, atol) for comparing a compiled result with the reference interpreter.

    Compiled code may fuse, reorder and use the GPU's own transcendental functions, so floats are
    compared within a few units in the last place of their type; integers and booleans exactly.
    """
    if isinstance(element_type, Float32Type | Float64Type):
        return 1e-5, 1e-6
    if isinstance(element_type, Float16Type):
        return 2e-3, 1e-3
    if isinstance(element_type, BFloat16Type):
        return 1.6e-2, 1e-2
    return 0.0, 0.0
