"""Handlers of ATen's elementwise ops: arithmetic, comparisons, activations, casts.

Type promotion is PyTorch's: the element type an op computes in is its result's (as PyTorch
inferred it), or for comparisons `torch.result_type` of the operands; every tensor operand of
another type is cast to it first (`graph.cast`), and Python numbers become constants of it.
`alpha` of add/sub multiplies the second operand (one `graph.mul`, skipped when it is 1).
Composite activations are built from the spec's ops: silu = x * sigmoid(x), leaky_relu and
hardtanh/clamp through `graph.where`/`graph.max`/`graph.min`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import f32, i1
from xdsl.ir import SSAValue

from mlc.frontend.graph_builder import element_type_of, shape_of
from mlc.frontend.torch.emitter import Emitter, Handler, element_type, fake_value

UNARY = {
    "abs": "graph.abs",
    "neg": "graph.neg",
    "exp": "graph.exp",
    "log": "graph.log",
    "sqrt": "graph.sqrt",
    "rsqrt": "graph.rsqrt",
    "tanh": "graph.tanh",
    "sigmoid": "graph.sigmoid",
    "relu": "graph.relu",
    "erf": "graph.erf",
    "sin": "graph.sin",
    "cos": "graph.cos",
    "reciprocal": "graph.reciprocal",
}
BINARY = {"add": "graph.add", "sub": "graph.sub", "mul": "graph.mul", "div": "graph.div", "pow": "graph.pow",
          "maximum": "graph.max", "minimum": "graph.min"}  # fmt: skip
COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _unary(graph_op: str) -> Handler:
    def handle(emit: Emitter, args: dict[str, Any]) -> SSAValue:
        return emit.builder.unary(graph_op, emit.operand(args["self"], emit.result_element()))

    return handle


def _binary(graph_op: str) -> Handler:
    def handle(emit: Emitter, args: dict[str, Any]) -> SSAValue:
        element = emit.result_element()
        lhs_name = "self" if "self" in args else "input"
        lhs = emit.operand(args[lhs_name], element)
        rhs = emit.operand(args["other"] if "other" in args else args["exponent"], element)
        alpha = args.get("alpha")
        if alpha is not None and alpha != 1:
            rhs = emit.builder.binary("graph.mul", rhs, emit.builder.scalar(alpha, element))
        if graph_op == "graph.div" and args.get("rounding_mode") is not None:
            raise emit.unsupported(f"division with rounding_mode='{args['rounding_mode']}' has no graph op")
        return emit.builder.binary(graph_op, lhs, rhs)

    return handle


def _rsub(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    """other - alpha * self."""
    element = emit.result_element()
    scaled = emit.operand(args["self"], element)
    if args.get("alpha", 1) != 1:
        scaled = emit.builder.binary("graph.mul", scaled, emit.builder.scalar(args["alpha"], element))
    return emit.builder.binary("graph.sub", emit.operand(args["other"], element), scaled)


def _common_dtype(*arguments: Any) -> torch.dtype:
    """`torch.result_type` of tensor and number arguments (what a comparison computes in); meta
    tensors of rank 0 or 1 stand for the operands, since only dtype and rank-0-ness matter."""
    samples = []
    for argument in arguments:
        value = fake_value(argument) if isinstance(argument, torch.fx.Node) else argument
        if isinstance(value, torch.Tensor):
            value = torch.empty((1,) * min(value.dim(), 1), dtype=value.dtype, device="meta")
        samples.append(value)
    return torch.result_type(*samples)


def _comparison(predicate: str) -> Handler:
    def handle(emit: Emitter, args: dict[str, Any]) -> SSAValue:
        element = element_type(_common_dtype(args["self"], args["other"]))
        return emit.builder.compare(
            predicate,
            emit.operand(args["self"], element),
            emit.operand(args["other"], element),
        )

    return handle


def _where(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    condition = emit.operand(args["condition"], element_type(torch.bool))
    return emit.builder.where(
        condition,
        emit.operand(args["self"], element),
        emit.operand(args["other"], element),
    )


def _truth(emit: Emitter, argument: Any) -> SSAValue:
    """A tensor argument as i1 (x != 0 unless it is i1 already)."""
    x = emit.value(argument)
    if element_type_of(x) == i1:
        return x
    return emit.builder.compare("ne", x, emit.builder.scalar(0, element_type_of(x)))


def _logical_not(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    result = emit.builder.where(_truth(emit, args["self"]), emit.builder.scalar(False, i1), emit.builder.scalar(True, i1))
    return emit.cast(result, emit.result_element())


def _logical(kind: str) -> Handler:
    def handle(emit: Emitter, args: dict[str, Any]) -> SSAValue:
        a, b = _truth(emit, args["self"]), _truth(emit, args["other"])
        false, true = emit.builder.scalar(False, i1), emit.builder.scalar(True, i1)
        if kind == "and":
            result = emit.builder.where(a, b, false)
        elif kind == "or":
            result = emit.builder.where(a, true, b)
        else:
            result = emit.builder.where(a, emit.builder.where(b, false, true), b)
        return emit.cast(result, emit.result_element())

    return handle


def _gelu(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    return emit.builder.gelu(
        emit.operand(args["self"], emit.result_element()),
        args.get("approximate") or "none",
    )


def _silu(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.operand(args["self"], emit.result_element())
    return emit.builder.binary("graph.mul", x, emit.builder.unary("graph.sigmoid", x))


def _clamp_between(emit: Emitter, x: SSAValue, low: Any, high: Any) -> SSAValue:
    element = emit.result_element()
    if low is not None:
        x = emit.builder.binary("graph.max", x, emit.operand(low, element))
    if high is not None:
        x = emit.builder.binary("graph.min", x, emit.operand(high, element))
    return x


def _clamp(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    return _clamp_between(
        emit,
        emit.operand(args["self"], emit.result_element()),
        args.get("min"),
        args.get("max"),
    )


def _hardtanh(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.operand(args["self"], emit.result_element())
    return _clamp_between(emit, x, args["min_val"], args["max_val"])


def _leaky_relu(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    x = emit.operand(args["self"], element)
    positive = emit.builder.compare("gt", x, emit.builder.scalar(0, element))
    scaled = emit.builder.binary("graph.mul", x, emit.builder.scalar(args["negative_slope"], element))
    return emit.builder.where(positive, x, scaled)


def _cast(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    """`_to_copy` / `to` / `convert_element_type`: a cast when the dtype changes, else the value;
    moving to another device or memory format inside a compiled graph is not mlc's to do."""
    source = args.get("self", args.get("a"))
    x = emit.value(source)
    before, after = fake_value(source), emit.result()
    if isinstance(before, torch.Tensor) and before.device != after.device:
        raise emit.unsupported(f"a copy from {before.device} to {after.device} is not a graph op")
    return emit.cast(x, emit.result_element())


def _identity(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    return emit.value(args.get("self", args.get("input")))


def _dropout(emit: Emitter, args: dict[str, Any]) -> Any:
    """Dropout in inference (train False, or probability 0) is the input; its mask is all true."""
    train = args.get("train")
    if train and args.get("p", 0) != 0:
        raise emit.unsupported("dropout in training mode draws random numbers; mlc compiles inference")
    x = emit.value(args["input"])
    if "native_dropout" in str(emit.node.target):
        if 1 in emit.used_outputs():
            raise emit.unsupported("the mask of dropout is not imported")
        return (x, None)
    return x


def _full_like(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    """`full_like` / `zeros_like` / `ones_like`: a constant of the result's type (only the
    input's type is read)."""
    name = str(emit.node.target)
    fill = 0 if "zeros" in name else 1 if "ones" in name else args["fill_value"]
    return emit.constant(np.full(emit.result_shape(), fill), emit.result_element())


def _any(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    """any(x) = max(x != 0) over the axes, through f32 (reductions of i1 are not graph ops)."""
    x = emit.value(args["self"])
    nonzero = emit.builder.compare("ne", x, emit.builder.scalar(0, element_type_of(x)))
    as_float = emit.builder.cast(nonzero, f32)
    axes = emit.axes(args.get("dim"), len(shape_of(x)))
    largest = emit.builder.reduce("max", as_float, axes, keepdims=bool(args.get("keepdim")))
    return emit.builder.compare("ne", largest, emit.builder.scalar(0, f32))


HANDLERS: dict[str, Handler] = {
    "aten::full_like": _full_like,
    "aten::zeros_like": _full_like,
    "aten::ones_like": _full_like,
    "aten::any": _any,
    **{f"aten::{name}": _unary(op) for name, op in UNARY.items()},
    **{f"aten::{name}": _binary(op) for name, op in BINARY.items()},
    **{f"aten::{name}": _comparison(predicate) for name, predicate in COMPARISONS.items()},
    "aten::true_divide": _binary("graph.div"),
    "aten::rsub": _rsub,
    "aten::where": _where,
    "aten::logical_not": _logical_not,
    "aten::logical_and": _logical("and"),
    "aten::logical_or": _logical("or"),
    "aten::logical_xor": _logical("xor"),
    "aten::gelu": _gelu,
    "aten::silu": _silu,
    "aten::clamp": _clamp,
    "aten::clip": _clamp,
    "aten::hardtanh": _hardtanh,
    "aten::leaky_relu": _leaky_relu,
    "aten::_to_copy": _cast,
    "aten::to": _cast,
    "prims::convert_element_type": _cast,
    "aten::clone": _identity,
    "aten::alias": _identity,
    "aten::detach": _identity,
    "aten::contiguous": _identity,
    "aten::lift_fresh_copy": _identity,
    "aten::dropout": _dropout,
    "aten::native_dropout": _dropout,
}
"""ATen op name (schema name, any overload) -> handler."""
