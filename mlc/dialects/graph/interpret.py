"""The graph interpreter: the executable definition of every graph op, in numpy.

Each op is evaluated on numpy arrays whose dtypes are those of `element_types.to_numpy_dtype`.
Floating-point ops are computed in float64 and rounded once to the result type; for the basic
arithmetic this is exactly numpy's correctly rounded float32/float16 result, and for the
transcendental and composite ops (`sigmoid`, `gelu`, `softmax`, `layer_norm`, sums and means of
many elements, ...) it is the most accurate reference a compiled kernel can be compared with.
Integer arithmetic wraps around as numpy's does (matmul and sums are computed in int64 and wrapped
by the final cast, which is the same arithmetic modulo 2**bits); integer division truncates toward
zero; float-to-integer casts truncate toward zero.

bf16 results are rounded through f32 (ml_dtypes' conversion): PyTorch computes bf16 ops in f32
and rounds that once, so for the correctly rounded ops (add, sub, mul, div, sqrt, casts) the
interpreter's bf16 result is PyTorch's, bit for bit.

The structured ops follow numpy and ONNX exactly as their modules' docstrings state: `matmul` is
`np.matmul` (a `tf32` or `3xtf32` precision first rounds or splits its f32 operands as
`mlc/dialects/precision.py` defines, then sums the products exactly); reductions are numpy's, with ONNX's identities for empty reductions (0, -inf/+inf or
the integer extremes, NaN for the mean); `softmax` subtracts the maximum before exponentiating;
`layer_norm` uses the population variance; `conv2d` and the pools gather each kernel offset's
strided view of the padded input into a window array `[N, C, kH, kW, H_out, W_out]` and reduce it
(one tensor contraction for the convolution), which is ONNX's definition written with whole-array
operations rather than loops over output positions.

A `graph.fusion` means its body: `evaluate_results` evaluates the body's ops in order on the
fusion's operands and returns what its `graph.yield` yields.

`evaluate(op, operands)` evaluates one op of one result; `evaluate_results(op, operands)` any op,
fusions included, as a list of results; `GraphFunctions` registers the same semantics with xDSL's
interpreter, and `mlc.interpreter` runs whole functions with them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, OpImplResult, register_impls
from xdsl.ir import Attribute, Operation, SSAValue

from mlc.dialects.element_types import is_float, to_numpy_dtype
from mlc.dialects.graph import ops as graph
from mlc.dialects.precision import DEFAULT_PRECISION, operand_pairs


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


def _integer_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer `a ** b` wrapping on overflow, as repeated multiplication in the type does; for
    b < 0 the truncated `1 / a ** -b`: 1 for a = 1, +-1 for a = -1, else 0 (also for a = 0, as
    integer division by 0 gives 0). numpy refuses negative integer exponents; this total
    definition is what the compiled square-and-multiply computes."""
    a, b = np.broadcast_arrays(*np.asarray(np.broadcast_arrays(a, b)).astype(np.result_type(a, b)))
    result = np.ones_like(a)
    base = a.copy()
    exponent = np.where(b < 0, 0, b)
    while np.any(exponent):
        result = np.where(exponent & 1, result * base, result)
        base = base * base
        exponent = exponent >> 1
    odd = (b & 1) != 0
    negative_power = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
    return np.where(b < 0, negative_power, result)


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
    graph.PowOp: _integer_power,
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
    graph.SinOp: np.sin,
    graph.CosOp: np.cos,
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
        structured = _STRUCTURED.get(type(op))
        if structured is not None:
            return structured(op, operands, dtype)
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
            # .copy(), not np.ascontiguousarray, which turns a rank-0 result into shape (1,).
            return np.broadcast_to(operands[0], shape).copy()
        if isinstance(op, graph.ReshapeOp):
            shape = op.result.type.get_shape()  # type: ignore[attr-defined]
            return np.reshape(operands[0], shape).copy()
    raise NotImplementedError(f"no interpretation for '{op.name}'")


def evaluate_results(op: Operation, operands: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of graph op `op` on numpy `operands`; a fusion evaluates its body."""
    if not isinstance(op, graph.FusionOp):
        return [evaluate(op, operands)]
    values: dict[SSAValue, np.ndarray] = dict(zip(op.body.block.args, operands))
    for inner in op.body.block.ops:
        inner_operands = [values[operand] for operand in inner.operands]
        if isinstance(inner, graph.YieldOp):
            return inner_operands
        values.update(zip(inner.results, evaluate_results(inner, inner_operands)))
    raise NotImplementedError("a 'graph.fusion' body without 'graph.yield'")  # pragma: no cover - the verifier rejects it


def _cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return x != 0
    if np.issubdtype(dtype, np.integer) and np.issubdtype(x.dtype, np.floating):
        # Truncate toward zero; NaN and out-of-range values have no defined result.
        info = np.iinfo(dtype)
        return np.clip(np.nan_to_num(np.trunc(x.astype(np.float64))), info.min, info.max).astype(dtype)
    return x.astype(dtype)


def _float64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _wide(x: np.ndarray, element_type: Attribute) -> np.ndarray:
    """`x` in the type its arithmetic is computed in: float64 for floats, int64 for integers."""
    return _float64(x) if is_float(element_type) else np.asarray(x, dtype=np.int64)


def _matmul(op: graph.MatmulOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    element_type = _element_type(op)
    precision = op.precision.data
    if precision == DEFAULT_PRECISION or not is_float(element_type):
        a, b = (_wide(x, element_type) for x in operands)
        return np.matmul(a, b).astype(dtype)
    # The products of the operands as the precision rounds them, summed exactly (precision.py).
    pairs = operand_pairs(operands[0], operands[1], precision)
    return sum(np.matmul(_float64(a), _float64(b)) for a, b in pairs).astype(dtype)


def _transpose(op: graph.TransposeOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.transpose(operands[0], op.normalized_perm()).copy()


def _concat(op: graph.ConcatOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.concatenate(operands, axis=op.normalized_axis()).astype(dtype)


def _slice(op: graph.SliceOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return operands[0][op.slices()].copy()


def _extreme(element_type: Attribute, dtype: np.dtype, highest: bool) -> float | int | bool:
    """The identity of min (highest) or max (not highest): what an empty reduction gives."""
    if is_float(element_type):
        return math.inf if highest else -math.inf
    if dtype == np.bool_:
        return highest
    info = np.iinfo(dtype)
    return int(info.max if highest else info.min)


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    return math.prod(shape[axis] for axis in axes)


def _reduce(op: graph.ReductionOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    x = operands[0]
    element_type = _element_type(op)
    axes = op.normalized_axes()
    keepdims = op.keeps_dims()
    if isinstance(op, graph.ReduceSumOp):
        result = np.sum(_wide(x, element_type), axis=axes, keepdims=keepdims)
    elif isinstance(op, graph.ReduceMeanOp):
        # sum / count rather than np.mean, which warns on empty reductions (NaN here, as in ONNX).
        result = np.sum(_float64(x), axis=axes, keepdims=keepdims) / _count(x.shape, axes)
    else:
        highest = isinstance(op, graph.ReduceMinOp)
        reduction = np.min if highest else np.max
        values = _float64(x) if is_float(element_type) else x
        initial = _extreme(element_type, dtype, highest)
        result = reduction(values, axis=axes, keepdims=keepdims, initial=initial)
    return np.asarray(result).astype(dtype)


def _softmax(op: graph.SoftmaxOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    x = _float64(operands[0])
    axis = op.normalized_axis()
    # Subtracting the maximum keeps exp from overflowing; it cancels in the quotient.
    maximum = np.max(x, axis=axis, keepdims=True, initial=-math.inf)
    exponentials = np.exp(x - maximum)
    return (exponentials / np.sum(exponentials, axis=axis, keepdims=True)).astype(dtype)


def _layer_norm(op: graph.LayerNormOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    x, scale, bias = (_float64(operand) for operand in operands)
    axes = tuple(range(op.normalized_axis(), x.ndim))
    count = _count(x.shape, axes)
    mean = np.sum(x, axis=axes, keepdims=True) / count
    centered = x - mean
    variance = np.sum(centered * centered, axis=axes, keepdims=True) / count
    epsilon = float(np.float32(op.epsilon.value.data))
    return (centered / np.sqrt(variance + epsilon) * scale + bias).astype(dtype)


def _windows(
    padded: np.ndarray,
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    output_size: Sequence[int],
) -> np.ndarray:
    """`windows[n, c, i, j, h, w] = padded[n, c, h*stride + i*dilation, w*stride + j*dilation]`."""
    batch, channels = padded.shape[:2]
    windows = np.empty((batch, channels, *kernel, *output_size), dtype=padded.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            top, left = i * dilations[0], j * dilations[1]
            bottom = top + strides[0] * (output_size[0] - 1) + 1
            right = left + strides[1] * (output_size[1] - 1) + 1
            windows[:, :, i, j] = padded[:, :, top : bottom : strides[0], left : right : strides[1]]
    return windows


def _pad(x: np.ndarray, pads: Sequence[int], value: float) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _conv2d(op: graph.Conv2dOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    x, w = _float64(operands[0]), _float64(operands[1])
    group = op.group.value.data
    batch, channels = x.shape[:2]
    outputs = w.shape[0]
    output_size = op.result.type.get_shape()[2:]  # type: ignore[attr-defined]
    padded = _pad(x, op.pads.get_values(), 0.0)
    windows = _windows(
        padded, w.shape[2:], op.strides.get_values(), op.dilations.get_values(), output_size
    )
    # Channels split into groups: output channel block g sees input channel block g only.
    windows = windows.reshape(batch, group, channels // group, *windows.shape[2:])
    weights = w.reshape(group, outputs // group, *w.shape[1:])
    result = np.einsum("ngcijhw,gocij->ngohw", windows, weights, optimize=True)
    result = result.reshape(batch, outputs, *output_size)
    if len(operands) == 3:
        result = result + _float64(operands[2])[:, None, None]
    return result.astype(dtype)


def _pool2d(op: graph.Pool2dOp, operands: Sequence[np.ndarray], dtype: np.dtype) -> np.ndarray:
    x = _float64(operands[0])
    kernel, strides, pads = op.kernel.get_values(), op.strides.get_values(), op.pads.get_values()
    output_size = op.result.type.get_shape()[2:]  # type: ignore[attr-defined]
    if isinstance(op, graph.MaxPool2dOp):
        windows = _windows(_pad(x, pads, -math.inf), kernel, strides, (1, 1), output_size)
        return windows.max(axis=(2, 3)).astype(dtype)
    windows = _windows(_pad(x, pads, 0.0), kernel, strides, (1, 1), output_size)
    # The average excludes padding: divide by the number of elements of x in each window.
    inside = _windows(_pad(np.ones((1, 1, *x.shape[2:])), pads, 0.0), kernel, strides, (1, 1), output_size)
    return (windows.sum(axis=(2, 3)) / inside.sum(axis=(2, 3))).astype(dtype)


_STRUCTURED: dict[type[Operation], Callable[[Any, Sequence[np.ndarray], np.dtype], np.ndarray]] = {
    graph.MatmulOp: _matmul,
    graph.TransposeOp: _transpose,
    graph.ConcatOp: _concat,
    graph.SliceOp: _slice,
    **{reduction: _reduce for reduction in graph.REDUCTION_OPS},
    graph.SoftmaxOp: _softmax,
    graph.LayerNormOp: _layer_norm,
    graph.Conv2dOp: _conv2d,
    graph.MaxPool2dOp: _pool2d,
    graph.AvgPool2dOp: _pool2d,
}
"""Evaluators of the ops that are neither elementwise nor plain reshapes, by op class."""


@register_impls
class GraphFunctions(InterpreterFunctions):
    """Registers `evaluate` for every graph op with xDSL's interpreter."""

    @classmethod
    def _impls(cls) -> Iterable[tuple[type[Operation], Callable[..., OpImplResult]]]:
        def run(functions: GraphFunctions, interpreter: Interpreter, op: Operation, args: tuple) -> OpImplResult:
            return OpImplResult(tuple(evaluate_results(op, args)), None)

        return [(op_type, run) for op_type in graph.Graph.operations]
