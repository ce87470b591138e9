"""Handlers of ATen's contractions, normalisations, pooling, reductions and embedding.

| ATen | graph |
| --- | --- |
| mm, bmm, matmul | graph.matmul (1-D operands of matmul through graph.reshape; a batch times one broadcast matrix as one 2-D product) |
| addmm (beta, alpha), linear | graph.matmul, graph.mul by alpha/beta when not 1, graph.add; linear transposes the weight |
| convolution / conv1d / conv2d | graph.conv2d (1-D through reshapes to H = 1; an f16/bf16 bias as a graph.add after it); transposed convolution is unsupported |
| max_pool2d(_with_indices) | graph.max_pool2d (dilation 1, and ceil_mode only where it changes no size; not the indices) |
| avg_pool2d | graph.avg_pool2d (count_include_pad only without padding; no divisor_override) |
| adaptive_avg_pool2d | graph.reduce_mean over H, W for output 1x1, graph.avg_pool2d where the sizes divide |
| _softmax / softmax | graph.softmax |
| _log_softmax / log_softmax | x - max - log(sum(exp(x - max))) along the axis |
| native_layer_norm / layer_norm | graph.layer_norm (ones/zeros for a missing weight/bias); mean and rstd outputs when read |
| batch norm in inference | (x - mean) * rsqrt(var + eps) * weight + bias, per channel |
| sum, mean, amax, amin, max/min (values), var | graph.reduce_* (var: mean of squared deviations, times n/(n - correction)) |
| embedding | one-hot rows (graph.cmp of the indices with 0..V-1, graph.cast) times the weight (graph.matmul): exact for finite weights |
| scaled_dot_product_attention | softmax(q k^T * scale + mask) v (causal masks as constants; no dropout; the product marked `mlc.fused_attention`: its chain kernel computes as PyTorch's fused kernels do, f32 scores and exp2) |
| _scaled_dot_product_{cudnn,flash,efficient}_attention, ..._flash_attention_for_cpu | the same, their output only (on CUDA the backend places them: `attention_choice.py`) |
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from xdsl.dialects.builtin import UnitAttr, f32, i1
from xdsl.ir import OpResult, SSAValue

from mlc.dialects import attributes
from mlc.frontend.graph_builder import element_type_of, shape_of
from mlc.frontend.torch.emitter import Emitter, Handler, is_float_type


def _pair(value: Any, default: int | None = None) -> list[int]:
    if value is None or (isinstance(value, list | tuple) and len(value) == 0):
        assert default is not None
        return [default, default]
    if isinstance(value, int):
        return [value, value]
    return [int(v) for v in value] * (2 if len(value) == 1 else 1)


def _scaled(emit: Emitter, x: SSAValue, factor: Any) -> SSAValue:
    if factor is None or factor == 1:
        return x
    return emit.builder.binary("graph.mul", x, emit.builder.scalar(factor, element_type_of(x)))


# -- contractions ------------------------------------------------------------------------------


def _mm(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    a = emit.operand(args.get("self", args.get("input")), element)
    b = emit.operand(args.get("mat2", args.get("other")), element)
    a_vector, b_vector = len(shape_of(a)) == 1, len(shape_of(b)) == 1
    if a_vector:
        a = emit.builder.reshape(a, (1, *shape_of(a)))
    if b_vector:
        b = emit.builder.reshape(b, (*shape_of(b), 1))
    matrix = _broadcast_matrix(b)
    if matrix is not None and len(shape_of(a)) > 2 and tuple(emit.result_shape()[:-2]) == tuple(shape_of(a)[:-2]):
        # a batch of products with one matrix (core ATen's matmul of a non-contiguous N-D lhs:
        # `bmm(expand(a), expand(w))`) is one product of the rows: no copy of w per batch.
        rows = emit.builder.reshape(a, (math.prod(shape_of(a)[:-1]), shape_of(a)[-1]))
        product = emit.builder.matmul(rows, matrix)
    else:
        product = emit.builder.matmul(a, b)
    shape = emit.result_shape()
    return product if shape_of(product) == shape else emit.builder.reshape(product, shape)


def _broadcast_matrix(value: SSAValue) -> SSAValue | None:
    """The matrix that `value` (through reshapes) broadcasts along new leading axes, if it does."""
    while isinstance(value, OpResult) and value.op.name == "graph.reshape" and shape_of(value.op.operands[0]) == shape_of(value):
        value = value.op.operands[0]
    if not (isinstance(value, OpResult) and value.op.name == "graph.broadcast"):
        return None
    source = value.op.operands[0]
    rows, columns = shape_of(value)[-2:]
    if math.prod(shape_of(source)) != rows * columns or tuple(shape_of(source)[-2:]) != (rows, columns):
        return None
    return source if len(shape_of(source)) == 2 else None


def _addmm(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    product = emit.builder.matmul(emit.operand(args["mat1"], element), emit.operand(args["mat2"], element))
    bias = _scaled(emit, emit.operand(args["self"], element), args.get("beta"))
    if args.get("beta") == 0:
        return _scaled(emit, product, args.get("alpha"))
    return emit.builder.binary("graph.add", _scaled(emit, product, args.get("alpha")), bias)


def _linear(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    weight = emit.operand(args["weight"], element)
    weight_t = emit.builder.transpose(weight, [1, 0]) if len(shape_of(weight)) == 2 else weight
    x = emit.operand(args["input"], element)
    product = emit.builder.matmul(x, weight_t) if len(shape_of(x)) >= 2 else _mm_vector(emit, x, weight_t)
    if args.get("bias") is None:
        return product
    return emit.builder.binary("graph.add", product, emit.operand(args["bias"], element))


def _mm_vector(emit: Emitter, x: SSAValue, w: SSAValue) -> SSAValue:
    row = emit.builder.matmul(emit.builder.reshape(x, (1, *shape_of(x))), w)
    return emit.builder.reshape(row, shape_of(row)[1:])


# -- convolution and pooling ---------------------------------------------------------------------


def _convolution(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    if args.get("transposed"):
        raise emit.unsupported("transposed convolution has no graph op")
    element = emit.result_element()
    x, w = emit.operand(args["input"], element), emit.operand(args["weight"], element)
    bias = None if args.get("bias") is None else emit.operand(args["bias"], element)
    rank = len(shape_of(x))
    if rank == 3:  # 1-D: a 2-D convolution over H = 1
        x = emit.builder.reshape(x, (shape_of(x)[0], shape_of(x)[1], 1, shape_of(x)[2]))
        w = emit.builder.reshape(w, (shape_of(w)[0], shape_of(w)[1], 1, shape_of(w)[2]))
        stride, padding, dilation = (
            [d, _pair(args[k], d)[0]] for k, d in (("stride", 1), ("padding", 0), ("dilation", 1))
        )
    elif rank == 4:
        stride, padding, dilation = (
            _pair(args["stride"], 1),
            _pair(args["padding"], 0),
            _pair(args["dilation"], 1),
        )
    else:
        raise emit.unsupported(f"{rank - 2}-D convolution has no graph op (1-D and 2-D do)")
    if isinstance(args.get("padding"), str):
        raise emit.unsupported(f"padding='{args['padding']}' is not imported; give the sizes")
    pads = [padding[0], padding[1], padding[0], padding[1]]
    groups = int(args.get("groups") or 1)
    if bias is not None and is_float_type(element) and element != f32:
        # An f16/bf16 bias is added to the rounded product, as PyTorch's CUDA convolution does
        # (`at::convolution`: cuDNN's product, then `add_`); graph.conv2d with a bias would
        # round once, after it, computing the product in f32 off the tensor cores.
        product = emit.builder.conv2d(x, w, None, stride, pads, dilation, groups)
        result = emit.builder.binary("graph.add", product, emit.builder.reshape(bias, (shape_of(bias)[0], 1, 1)))
    else:
        result = emit.builder.conv2d(x, w, bias, stride, pads, dilation, groups)
    shape = emit.result_shape()
    return result if shape_of(result) == shape else emit.builder.reshape(result, shape)


def _max_pool(emit: Emitter, args: dict[str, Any]) -> Any:
    x = emit.value(args["self"])
    kernel = _pair(args["kernel_size"])
    stride, padding = (
        _pair(args.get("stride"), 0) if args.get("stride") else kernel,
        _pair(args.get("padding"), 0),
    )
    if _pair(args.get("dilation"), 1) != [1, 1]:
        raise emit.unsupported("dilated max pooling has no graph op")
    result = _pool2d(emit, "max", x, kernel, stride, padding)
    if "with_indices" in str(emit.node.target):
        if 1 in emit.used_outputs():
            raise emit.unsupported("the indices of max pooling are not imported")
        return (result, None)
    return result


def _pool2d(
    emit: Emitter,
    kind: str,
    x: SSAValue,
    kernel: list[int],
    stride: list[int],
    padding: list[int],
) -> SSAValue:
    if len(shape_of(x)) != 4:
        raise emit.unsupported("pooling is imported for NCHW inputs")
    result = emit.builder.pool2d(kind, x, kernel, stride, [padding[0], padding[1], padding[0], padding[1]])
    expected = emit.result_shape(0 if isinstance(emit.node.meta.get("val"), tuple | list) else None)
    if shape_of(result) != expected:  # ceil_mode added a window the graph op does not have
        raise emit.unsupported("ceil_mode=True changes the output size; the graph op floors")
    return result


def _avg_pool(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    kernel = _pair(args["kernel_size"])
    stride, padding = (
        _pair(args.get("stride"), 0) if args.get("stride") else kernel,
        _pair(args.get("padding"), 0),
    )
    if args.get("divisor_override") is not None:
        raise emit.unsupported("divisor_override is not imported")
    if args.get("count_include_pad", True) and padding != [0, 0]:
        raise emit.unsupported(
            "count_include_pad=True with padding is not imported (graph.avg_pool2d excludes padding)"
        )
    return _pool2d(emit, "avg", x, kernel, stride, padding)


def _adaptive_avg_pool(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    height, width = shape_of(x)[-2:]
    out_h, out_w = _pair(args["output_size"])
    if (out_h, out_w) == (1, 1):
        return emit.builder.reduce("mean", x, [len(shape_of(x)) - 2, len(shape_of(x)) - 1], keepdims=True)
    if height % out_h or width % out_w:
        raise emit.unsupported(f"adaptive pooling from {height}x{width} to {out_h}x{out_w}: the sizes do not divide")
    kernel = [height // out_h, width // out_w]
    return _pool2d(emit, "avg", x, kernel, kernel, [0, 0])


# -- softmax and normalisations ------------------------------------------------------------------


def _softmax(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.operand(args["self"], emit.result_element())
    return emit.builder.softmax(x, emit.axis(args["dim"], len(shape_of(x))))


def _log_softmax(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.operand(args["self"], emit.result_element())
    axes = [emit.axis(args["dim"], len(shape_of(x)))]
    shifted = emit.builder.binary("graph.sub", x, emit.builder.reduce("max", x, axes, keepdims=True))
    total = emit.builder.reduce("sum", emit.builder.unary("graph.exp", shifted), axes, keepdims=True)
    return emit.builder.binary("graph.sub", shifted, emit.builder.unary("graph.log", total))


def _affine_or_default(emit: Emitter, argument: Any, shape: tuple[int, ...], fill: float, element: Any) -> SSAValue:
    if argument is None:
        return emit.builder.constant(np.full(shape, fill), element)
    return emit.operand(argument, element)


def _layer_norm(emit: Emitter, args: dict[str, Any]) -> Any:
    multi = "native" in str(emit.node.target)
    element = emit.result_element(0 if multi else None)
    x = emit.operand(args["input"], element)
    normalized = tuple(args["normalized_shape"])
    axis = len(shape_of(x)) - len(normalized)
    scale = _affine_or_default(emit, args.get("weight"), normalized, 1.0, element)
    bias = _affine_or_default(emit, args.get("bias"), normalized, 0.0, element)
    y = emit.builder.layer_norm(x, scale, bias, axis, float(args["eps"]))
    if not multi:
        return y
    used = emit.used_outputs()
    mean = rstd = None
    if used & {1, 2}:
        axes = list(range(axis, len(shape_of(x))))
        mean = emit.builder.reduce("mean", x, axes, keepdims=True)
        centred = emit.builder.binary("graph.sub", x, mean)
        variance = emit.builder.reduce(
            "mean",
            emit.builder.binary("graph.mul", centred, centred),
            axes,
            keepdims=True,
        )
        epsilon = emit.builder.scalar(float(args["eps"]), element)
        rstd = emit.builder.unary("graph.rsqrt", emit.builder.binary("graph.add", variance, epsilon))
    return (y, mean, rstd)


def _batch_norm(emit: Emitter, args: dict[str, Any]) -> Any:
    if args.get("training"):
        raise emit.unsupported("batch norm in training mode updates its statistics; mlc compiles inference")
    multi = isinstance(emit.node.meta.get("val"), tuple | list)
    if multi and emit.used_outputs() & {1, 2}:
        raise emit.unsupported("the saved statistics of batch norm are not imported")
    element = emit.result_element(0 if multi else None)
    x = emit.operand(args["input"], element)
    channels = shape_of(x)[1]
    per_channel = (channels,) + (1,) * (len(shape_of(x)) - 2)

    def channel(argument: Any, fill: float) -> SSAValue:
        return emit.builder.reshape(_affine_or_default(emit, argument, (channels,), fill, element), per_channel)

    epsilon = emit.builder.scalar(float(args["eps"]), element)
    inverse = emit.builder.unary(
        "graph.rsqrt",
        emit.builder.binary("graph.add", channel(args["running_var"], 1.0), epsilon),
    )
    scale = emit.builder.binary("graph.mul", inverse, channel(args.get("weight"), 1.0))
    centred = emit.builder.binary("graph.sub", x, channel(args["running_mean"], 0.0))
    y = emit.builder.binary(
        "graph.add",
        emit.builder.binary("graph.mul", centred, scale),
        channel(args.get("bias"), 0.0),
    )
    return (y, None, None) if multi else y


# -- reductions -----------------------------------------------------------------------------------


def _reduction(kind: str) -> Handler:
    def handle(emit: Emitter, args: dict[str, Any]) -> Any:
        if args.get("other") is not None:  # max.other / min.other: elementwise
            element = emit.result_element()
            lhs, rhs = (
                emit.operand(args["self"], element),
                emit.operand(args["other"], element),
            )
            return emit.builder.binary(f"graph.{kind}", lhs, rhs)
        multi = isinstance(emit.node.meta.get("val"), tuple | list)
        if multi and 1 in emit.used_outputs():
            raise emit.unsupported(f"the indices of {kind} are not imported")
        element = emit.result_element(0 if multi else None)
        x = emit.operand(args["self"], element)
        axes = emit.axes(args.get("dim"), len(shape_of(x)))
        result = emit.builder.reduce(kind, x, axes, keepdims=bool(args.get("keepdim")))
        return (result, None) if multi else result

    return handle


def _var(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    x = emit.operand(args["self"], element)
    axes = emit.axes(args.get("dim"), len(shape_of(x)))
    count = math.prod(shape_of(x)[a] for a in axes)
    correction = args.get("correction")
    correction = (1 if args.get("unbiased", True) else 0) if correction is None else correction
    centred = emit.builder.binary("graph.sub", x, emit.builder.reduce("mean", x, axes, keepdims=True))
    squares = emit.builder.reduce(
        "sum",
        emit.builder.binary("graph.mul", centred, centred),
        axes,
        bool(args.get("keepdim")),
    )
    return emit.builder.binary("graph.div", squares, emit.builder.scalar(max(count - correction, 0), element))


# -- embedding and attention ----------------------------------------------------------------------


def _embedding(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    weight, indices = emit.value(args["weight"]), emit.value(args["indices"])
    element = element_type_of(weight)
    if not is_float_type(element):
        raise emit.unsupported("embedding tables of integers are not imported")
    vocabulary = shape_of(weight)[0]
    positions = emit.builder.constant(np.arange(vocabulary), element_type_of(indices))
    columns = emit.builder.reshape(indices, (*shape_of(indices), 1))
    one_hot = emit.builder.cast(emit.builder.compare("eq", columns, positions), element)
    return emit.builder.matmul(one_hot, weight) if shape_of(one_hot) else one_hot


def _attention(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    return _attention_of(emit, args, emit.result_element(), args.get("attn_mask"))


def _fused_attention(emit: Emitter, args: dict[str, Any]) -> tuple[SSAValue | None, ...]:
    """PyTorch's fused SDPA ops (what the dispatcher turns `scaled_dot_product_attention` into
    on CUDA, and on the CPU): their output; the log-sum-exp and RNG results are not imported."""
    if emit.used_outputs() - {0}:
        raise emit.unsupported("only the attention's output is imported (not its log-sum-exp or RNG state)")
    output = _attention_of(emit, args, emit.result_element(0), args.get("attn_bias", args.get("attn_mask")))
    return (output, *[None] * (len(emit.node.meta["val"]) - 1))


def _attention_of(emit: Emitter, args: dict[str, Any], element: Any, mask: Any) -> SSAValue:
    if args.get("dropout_p"):
        raise emit.unsupported("attention dropout draws random numbers; mlc compiles inference")
    if args.get("enable_gqa"):
        raise emit.unsupported("grouped-query attention is not imported")
    q, k, v = (emit.operand(args[name], element) for name in ("query", "key", "value"))
    rank = len(shape_of(q))
    scale = args.get("scale") or 1.0 / math.sqrt(shape_of(q)[-1])
    keys_t = emit.builder.transpose(k, [*range(rank - 2), rank - 1, rank - 2])
    product = emit.builder.matmul(q, keys_t)
    # PyTorch's SDPA kernels (flash, cuDNN, memory-efficient, the CPU's flash) compute the scores in
    # f32 and exponentiate with exp2: the chain kernel may do the same (graph-fuse's fast math).
    attributes.FUSED_ATTENTION.write(product.owner, UnitAttr())  # type: ignore[arg-type]
    scores = _scaled(emit, product, scale)
    length, source = shape_of(q)[-2], shape_of(k)[-2]
    if args.get("is_causal"):
        allowed = np.tril(np.ones((length, source), dtype=bool))
        scores = emit.builder.where(
            emit.builder.constant(allowed, i1),
            scores,
            emit.builder.scalar(-math.inf, element),
        )
    if mask is not None:
        mask_value = emit.value(mask)
        if element_type_of(mask_value) == i1:
            scores = emit.builder.where(mask_value, scores, emit.builder.scalar(-math.inf, element))
        else:
            scores = emit.builder.binary("graph.add", scores, emit.cast(mask_value, element))
    probabilities = emit.builder.softmax(scores, len(shape_of(scores)) - 1)
    if mask is not None:
        probabilities = _zero_masked_rows(emit, scores, probabilities, element)
    return emit.builder.matmul(probabilities, v)


def _zero_masked_rows(emit: Emitter, scores: SSAValue, probabilities: SSAValue, element: Any) -> SSAValue:
    """0 for the rows whose every score is -inf (a mask that hides every key), as PyTorch's SDPA
    gives (its math fallback's `_safe_softmax`), written as core ATen writes that guard:
    `where(not(any(not(T == -inf))), 0, P)` (which the attention chain takes in: `gemm_chain.py`)."""
    b = emit.builder
    false, true = b.scalar(False, i1), b.scalar(True, i1)
    unmasked = b.where(b.compare("eq", scores, b.scalar(-math.inf, element)), false, true)
    seen_value = b.cast(b.compare("ne", unmasked, false), f32)
    seen = b.compare("ne", b.reduce("max", seen_value, [len(shape_of(scores)) - 1], keepdims=True), b.scalar(0, f32))
    return b.where(b.where(seen, false, true), b.scalar(0, element), probabilities)


FUSED_ATTENTION_OPS = (
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention_for_cpu",
)
"""PyTorch's fused SDPA kernels, as ATen names them."""

HANDLERS: dict[str, Handler] = {
    "aten::mm": _mm,
    "aten::bmm": _mm,
    "aten::matmul": _mm,
    "aten::addmm": _addmm,
    "aten::linear": _linear,
    "aten::convolution": _convolution,
    "aten::conv1d": _convolution,
    "aten::conv2d": _convolution,
    "aten::max_pool2d_with_indices": _max_pool,
    "aten::max_pool2d": _max_pool,
    "aten::avg_pool2d": _avg_pool,
    "aten::adaptive_avg_pool2d": _adaptive_avg_pool,
    "aten::_adaptive_avg_pool2d": _adaptive_avg_pool,
    "aten::_softmax": _softmax,
    "aten::softmax": _softmax,
    "aten::_log_softmax": _log_softmax,
    "aten::log_softmax": _log_softmax,
    "aten::native_layer_norm": _layer_norm,
    "aten::layer_norm": _layer_norm,
    "aten::_native_batch_norm_legit_no_training": _batch_norm,
    "aten::native_batch_norm": _batch_norm,
    "aten::batch_norm": _batch_norm,
    "aten::sum": _reduction("sum"),
    "aten::mean": _reduction("mean"),
    "aten::amax": _reduction("max"),
    "aten::amin": _reduction("min"),
    "aten::max": _reduction("max"),
    "aten::min": _reduction("min"),
    "aten::var": _var,
    "aten::embedding": _embedding,
    "aten::scaled_dot_product_attention": _attention,
    **{f"aten::{name}": _fused_attention for name in FUSED_ATTENTION_OPS},
}
"""ATen op name (schema name, any overload) -> handler."""
