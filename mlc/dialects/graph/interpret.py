"""The graph interpreter: the executable definition of every graph op, in numpy.

Each op is evaluated on numpy arrays whose dtypes are those of `element_types.to_numpy_dtype`.
Floating-point ops are computed in float64 and rounded once to the result type; for the basic
arithmetic this is exactly numpy's correctly rounded float32/float16 result, and for the
transcendental and composite ops (`sigmoid`, `gelu`, ...) it is the most accurate reference a
compiled kernel can be compared with. Integer arithmetic wraps around as numpy's does; integer
division truncates toward zero; float-to-integer casts truncate toward zero.

`evaluate(op, operands)` evaluates one op; `GraphFunctions` registers the same semantics with
xDSL's interpreter, so whole functions run through `mlc.interpreter`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, OpImplResult, register_impls
from xdsl.ir import Attribute, Operation

from mlc.dialects.element_types import is_float, to_numpy_dtype
from mlc.dialects.graph import ops as graph


def dense_to_numpy(attribute: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The value of a dense elements attribute as a numpy array (splats expanded)."""
    element_type = attribute.get_element_type()
    dtype = to_numpy_dtype(element_type)
    storage = np.int8 if dtype == np.bool_ else dtype
    flat = np.frombuffer(attribute.data.data, dtype=storage)
    if dtype == np.bool_:
        flat = flat != 0
    shape = attribute.get_shape()
    if flat.size == 1:
        return np.full(shape, flat[0], dtype=dtype)
    return flat.reshape(shape).copy()


def result_dtype(op: Operation, index: int = 0) -> np.dtype:
    result_type = op.results[index].type
    assert isinstance(result_type, TensorType)
    return to_numpy_dtype(result_type.element_type)


def _in_float64(function: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Evaluates `function` on float64 copies of the operands."""

    def evaluate(*operands: np.ndarray) -> np.ndarray:
        return function(*(np.asarray(x, dtype=np.float64) for x in operands))

    return evaluate


_erf64 = np.frompyfunc(math.erf, 1, 1)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf64(x), dtype=np.float64)


def _gelu(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _integer_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's division: the quotient truncated toward zero (0 where b is 0)."""
    safe_b = np.where(b == 0, 1, b)
    quotient = np.floor_divide(a, safe_b)
    remainder = a - quotient * safe_b
    quotient = np.where((remainder != 0) & ((a < 0) != (safe_b < 0)), quotient + 1, quotient)
    return np.where(b == 0, 0, quotient).astype(np.result_type(a, b))


_FLOAT_BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: np.divide,
    graph.MaxOp: np.maximum,
    graph.MinOp: np.minimum,
    graph.PowOp: np.power,
}

_INTEGER_BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: _integer_divide,
    graph.MaxOp: np.maximum,
    graph.MinOp: np.minimum,
    graph.PowOp: np.power,
}

_COMPARISONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}

_FLOAT_UNARY: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    graph.NegOp: np.negative,
    graph.AbsOp: np.abs,
    graph.ReluOp: lambda x: np.maximum(x, 0.0),
    graph.ExpOp: np.exp,
    graph.LogOp: np.log,
    graph.SqrtOp: np.sqrt,
    graph.RsqrtOp: lambda x: 1.0 / np.sqrt(x),
    graph.TanhOp: np.tanh,
    graph.SigmoidOp: lambda x: 1.0 / (1.0 + np.exp(-x)),
    graph.ErfOp: _erf,
    graph.ReciprocalOp: lambda x: 1.0 / x,
}

_INTEGER_UNARY: dict[type[Operation], Callable[[np.ndarray], np.ndarray]] = {
    graph.NegOp: np.negative,
    graph.AbsOp: np.abs,
    graph.ReluOp: lambda x: np.maximum(x, 0),
}


def _element_type(op: Operation, operand: int = 0) -> Attribute:
    operand_type = op.operands[operand].type
    assert isinstance(operand_type, TensorType)
    return operand_type.element_type


def evaluate(op: Operation, operands: Sequence[np.ndarray]) -> np.ndarray:
    """The result of graph op `op` on numpy `operands`."""
    dtype = result_dtype(op)
    with np.errstate(all="ignore"):
        if isinstance(op, graph.ConstantOp):
            return dense_to_numpy(op.value)
        if isinstance(op, graph.CmpOp):
            return _COMPARISONS[op.predicate.data](*operands)
        if isinstance(op, graph.WhereOp):
            return np.where(*operands).astype(dtype)
        float_operands = is_float(_element_type(op))
        if isinstance(op, graph.BINARY_OPS):
            table = _FLOAT_BINARY if float_operands else _INTEGER_BINARY
            function = _in_float64(table[type(op)]) if float_operands else table[type(op)]
            return np.asarray(function(*operands)).astype(dtype)
        if isinstance(op, graph.GeluOp):
            return _gelu(np.asarray(operands[0], np.float64), op.approximate.data).astype(dtype)
        if isinstance(op, graph.UNARY_OPS):
            if float_operands:
                return _in_float64(_FLOAT_UNARY[type(op)])(operands[0]).astype(dtype)
            return np.asarray(_INTEGER_UNARY[type(op)](operands[0])).astype(dtype)
        if isinstance(op, graph.CastOp):
            return _cast(operands[0], dtype)
        if isinstance(op, graph.BroadcastOp):
            shape = op.result.type.get_shape()  # type: ignore[attr-defined]
            return np.ascontiguousarray(np.broadcast_to(operands[0], shape))
        if isinstance(op, graph.ReshapeOp):
            shape = op.result.type.get_shape()  # type: ignore[attr-defined]
            return np.reshape(operands[0], shape).copy()
    raise NotImplementedError(f"no interpretation for '{op.name}'")


def _cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return x != 0
    if np.issubdtype(dtype, np.integer) and np.issubdtype(x.dtype, np.floating):
        # Truncate toward zero; NaN and out-of-range values have no defined result.
        info = np.iinfo(dtype)
        return np.clip(np.nan_to_num(np.trunc(x.astype(np.float64))), info.min, info.max).astype(dtype)
    return x.astype(dtype)


@register_impls
class GraphFunctions(InterpreterFunctions):
    """Registers `evaluate` for every graph op with xDSL's interpreter."""

    @classmethod
    def _impls(cls) -> Iterable[tuple[type[Operation], Callable[..., OpImplResult]]]:
        def run(functions: GraphFunctions, interpreter: Interpreter, op: Operation, args: tuple) -> OpImplResult:
            return OpImplResult((evaluate(op, args),), None)

        return [(op_type, run) for op_type in graph.Graph.operations]
