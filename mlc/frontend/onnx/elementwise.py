"""Elementwise ONNX ops: arithmetic, activations, comparisons, logic, Where, Cast and CastLike.

Each maps to the graph op of the same meaning; ONNX's multidirectional broadcasting is numpy's,
which is the graph ops' own. Ops without a graph counterpart are small compositions:

    Sum, Max, Min (n inputs)     left-to-right chains of graph.add / max / min
    Mean                         the Sum chain, then graph.div by n
    Clip(x, lo, hi)              graph.min(graph.max(x, lo), hi) (absent bounds are skipped)
    LeakyRelu / PRelu            graph.where(x < 0, x * alpha, x)
    Elu                          graph.where(x < 0, alpha * (exp(x) - 1), x)
    HardSigmoid / HardSwish      max(0, min(1, alpha * x + beta)), times x for HardSwish
    Not / And / Or / Xor         graph.cmp eq with false / graph.where(a, b, false) /
                                 graph.where(a, true, b) / graph.cmp ne
    Pow of mixed element types   a float base: the exponent cast to the base's type; an
                                 integer base with a float exponent: the base cast to the
                                 exponent's type, the power cast (truncated) back
    CastLike(x, like)            graph.cast to like's element type (only its type is read)

Scalar attributes (alpha, beta) become rank-0 `graph.constant`s of the operand's element type.
Before opset 7, arithmetic broadcast only with `broadcast=1`, aligning the right operand at
`axis`: that operand is reshaped with trailing 1s so that numpy aligns it the same way.
"""

from __future__ import annotations

from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from mlc.dialects.element_types import is_float
from mlc.frontend.graph_builder import element_type_of, shape_of
from mlc.frontend.onnx.node import Node
from mlc.frontend.onnx.model import ELEMENT_TYPES, data_type_name
from mlc.frontend.onnx.registry import HandlerResult, maps

ARITHMETIC_VERSIONS = (6, 7, 13, 14)

BINARY_OPS = {"Add": "graph.add", "Sub": "graph.sub", "Mul": "graph.mul", "Div": "graph.div"}

UNARY_OPS = {
    "Neg": ("graph.neg", (6, 13)),
    "Abs": ("graph.abs", (6, 13)),
    "Exp": ("graph.exp", (6, 13)),
    "Log": ("graph.log", (6, 13)),
    "Sqrt": ("graph.sqrt", (6, 13)),
    "Reciprocal": ("graph.reciprocal", (6, 13)),
    "Tanh": ("graph.tanh", (6, 13)),
    "Sigmoid": ("graph.sigmoid", (6, 13)),
    "Relu": ("graph.relu", (6, 13, 14)),
    "Erf": ("graph.erf", (9, 13)),
    "Sin": ("graph.sin", (7, 22)),
    "Cos": ("graph.cos", (7, 22)),
}

COMPARISONS = {
    "Equal": ("eq", (7, 11, 13, 19)),
    "Less": ("lt", (7, 9, 13)),
    "Greater": ("gt", (7, 9, 13)),
    "LessOrEqual": ("le", (12, 16)),
    "GreaterOrEqual": ("ge", (12, 16)),
}

VARIADIC_OPS = {
    "Max": ("graph.max", (6, 8, 12, 13)),
    "Min": ("graph.min", (6, 8, 12, 13)),
    "Sum": ("graph.add", (6, 8, 13)),
}


def _chain(node: Node, op_name: str) -> SSAValue:
    """`op(op(x0, x1), x2)...` over the node's inputs."""
    operands = node.inputs()
    if not operands:
        raise node.error("it has no inputs")
    result = operands[0]
    for operand in operands[1:]:
        result = node.builder.binary(op_name, result, operand)
    return result


def _scalar_like(node: Node, value: float, like: SSAValue) -> SSAValue:
    return node.builder.scalar(value, element_type_of(like))


def legacy_broadcast(node: Node, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
    """`rhs` shaped for numpy broadcasting under the `broadcast`/`axis` attributes of opsets < 7.

    There, `broadcast=1` aligns rhs with lhs's dimensions from `axis` on (by default the trailing
    ones); trailing size-1 dimensions make numpy align it the same way.
    """
    lhs_rank, rhs_shape = len(shape_of(lhs)), shape_of(rhs)
    if node.version >= 7 or not node.attribute("broadcast", 0) or not rhs_shape:
        return rhs
    axis = node.axis(node.attribute("axis", lhs_rank - len(rhs_shape)), lhs_rank)
    trailing = lhs_rank - axis - len(rhs_shape)
    if trailing < 0:
        raise node.error(f"rhs of rank {len(rhs_shape)} does not fit at axis {axis} of rank {lhs_rank}")
    return node.builder.reshape(rhs, (*rhs_shape, *[1] * trailing)) if trailing else rhs


def binary(node: Node) -> HandlerResult:
    lhs = node.input(0)
    rhs = legacy_broadcast(node, lhs, node.input(1))
    return [node.builder.binary(BINARY_OPS[node.op_type], lhs, rhs)]


def unary(node: Node) -> HandlerResult:
    return [node.builder.unary(UNARY_OPS[node.op_type][0], node.input(0))]


def compare(node: Node) -> HandlerResult:
    return [node.builder.compare(COMPARISONS[node.op_type][0], node.input(0), node.input(1))]


def variadic(node: Node) -> HandlerResult:
    return [_chain(node, VARIADIC_OPS[node.op_type][0])]


for _op_type in BINARY_OPS:
    maps(_op_type, ARITHMETIC_VERSIONS)(binary)
for _op_type, (_, _versions) in UNARY_OPS.items():
    maps(_op_type, _versions)(unary)
for _op_type, (_, _versions) in COMPARISONS.items():
    maps(_op_type, _versions)(compare)
for _op_type, (_, _versions) in VARIADIC_OPS.items():
    maps(_op_type, _versions)(variadic)


@maps("Mean", (6, 8, 13))
def mean(node: Node) -> HandlerResult:
    total = _chain(node, "graph.add")
    count = len(node.inputs())
    return [node.builder.binary("graph.div", total, _scalar_like(node, count, total))]


@maps("Pow", (1, 7, 12, 13, 15))
def power(node: Node) -> HandlerResult:
    base = node.input(0)
    exponent = legacy_broadcast(node, base, node.input(1))
    base_type, exponent_type = element_type_of(base), element_type_of(exponent)
    if base_type != exponent_type:
        if not is_float(base_type):
            if not is_float(exponent_type):
                raise node.error(f"an integer base ({base_type}) with a {exponent_type} exponent is not supported")
            # Computed in the exponent's float type, then truncated back to the base's type.
            power = node.builder.binary("graph.pow", node.builder.cast(base, exponent_type), exponent)
            return [node.builder.cast(power, base_type)]
        exponent = node.builder.cast(exponent, base_type)
    return [node.builder.binary("graph.pow", base, exponent)]


@maps("Gelu", (20,))
def gelu(node: Node) -> HandlerResult:
    approximate = node.attribute("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise node.reject_attribute("approximate", approximate, "ONNX defines 'none' and 'tanh'")
    return [node.builder.gelu(node.input(0), approximate)]


@maps("Clip", (6, 11, 12, 13))
def clip(node: Node) -> HandlerResult:
    result = node.input(0)
    # Bounds are inputs from version 11 on, float attributes before.
    lower = node.input(1) if node.has_input(1) else None
    upper = node.input(2) if node.has_input(2) else None
    if node.version < 11:
        lower = _scalar_like(node, node.attribute("min"), result) if node.has_attribute("min") else None
        upper = _scalar_like(node, node.attribute("max"), result) if node.has_attribute("max") else None
    if lower is not None:
        result = node.builder.binary("graph.max", result, lower)
    if upper is not None:
        result = node.builder.binary("graph.min", result, upper)
    return [result]


def _where_negative(node: Node, x: SSAValue, negative_branch: SSAValue) -> SSAValue:
    is_negative = node.builder.compare("lt", x, _scalar_like(node, 0, x))
    return node.builder.where(is_negative, negative_branch, x)


@maps("LeakyRelu", (6, 16))
def leaky_relu(node: Node) -> HandlerResult:
    x = node.input(0)
    scaled = node.builder.binary("graph.mul", x, _scalar_like(node, node.attribute("alpha", 0.01), x))
    return [_where_negative(node, x, scaled)]


@maps("PRelu", (7, 9, 16))
def parametric_relu(node: Node) -> HandlerResult:
    x = node.input(0)
    return [_where_negative(node, x, node.builder.binary("graph.mul", x, node.input(1)))]


@maps("Elu", (6, 22))
def elu(node: Node) -> HandlerResult:
    x = node.input(0)
    exp_minus_one = node.builder.binary("graph.sub", node.builder.unary("graph.exp", x), _scalar_like(node, 1, x))
    scaled = node.builder.binary("graph.mul", exp_minus_one, _scalar_like(node, node.attribute("alpha", 1.0), x))
    return [_where_negative(node, x, scaled)]


def _hard_sigmoid(node: Node, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    builder = node.builder
    scaled = builder.binary("graph.mul", x, _scalar_like(node, alpha, x))
    linear = builder.binary("graph.add", scaled, _scalar_like(node, beta, x))
    clipped_above = builder.binary("graph.min", linear, _scalar_like(node, 1, x))
    return builder.binary("graph.max", clipped_above, _scalar_like(node, 0, x))


@maps("HardSigmoid", (6, 22))
def hard_sigmoid(node: Node) -> HandlerResult:
    return [_hard_sigmoid(node, node.input(0), node.attribute("alpha", 0.2), node.attribute("beta", 0.5))]


@maps("HardSwish", (14, 22))
def hard_swish(node: Node) -> HandlerResult:
    x = node.input(0)
    return [node.builder.binary("graph.mul", x, _hard_sigmoid(node, x, 1.0 / 6.0, 0.5))]


@maps("Where", (9, 16))
def where(node: Node) -> HandlerResult:
    return [node.builder.where(node.input(0), node.input(1), node.input(2))]


@maps("Not", (1,))
def logical_not(node: Node) -> HandlerResult:
    x = node.input(0)
    return [node.builder.compare("eq", x, node.builder.scalar(False, i1))]


@maps("And", (7,))
def logical_and(node: Node) -> HandlerResult:
    return [node.builder.where(node.input(0), node.input(1), node.builder.scalar(False, i1))]


@maps("Or", (7,))
def logical_or(node: Node) -> HandlerResult:
    return [node.builder.where(node.input(0), node.builder.scalar(True, i1), node.input(1))]


@maps("Xor", (7,))
def logical_xor(node: Node) -> HandlerResult:
    return [node.builder.compare("ne", node.input(0), node.input(1))]


@maps("IsNaN", (9, 13, 20))
def is_nan(node: Node) -> HandlerResult:
    x = node.input(0)
    if not is_float(element_type_of(x)):
        raise node.error(f"IsNaN takes a float tensor, got {element_type_of(x)}")
    return [node.builder.compare("ne", x, x)]  # only NaN differs from itself


@maps("IsInf", (10, 20))
def is_inf(node: Node) -> HandlerResult:
    x = node.input(0)
    if not is_float(element_type_of(x)):
        raise node.error(f"IsInf takes a float tensor, got {element_type_of(x)}")
    tests = [
        node.builder.compare("eq", x, _scalar_like(node, sign * float("inf"), x))
        for sign, attribute in ((1, "detect_positive"), (-1, "detect_negative"))
        if node.attribute(attribute, 1)
    ]
    if not tests:
        return [node.builder.compare("lt", x, x)]  # false everywhere, NaN included
    if len(tests) == 1:
        return tests
    return [node.builder.where(tests[0], node.builder.scalar(True, i1), tests[1])]


@maps("Cast", (6, 9, 13, 19, 21, 23, 24, 25, 28))
def cast(node: Node) -> HandlerResult:
    target = node.attribute("to")
    if target not in ELEMENT_TYPES:
        raise node.error(
            f"casting to {data_type_name(target)} is not supported (mlc supports float, float16, bfloat16, "
            "int32, int64 and bool)"
        )
    x = node.input(0)
    if element_type_of(x) == ELEMENT_TYPES[target]:
        return [x]
    return [node.builder.cast(x, ELEMENT_TYPES[target])]


@maps("CastLike", (15, 19, 21, 23, 24, 25), shape_only_inputs=(1,))
def cast_like(node: Node) -> HandlerResult:
    target = node.input_type(1).element_type
    x = node.input(0)
    if element_type_of(x) == target:
        return [x]
    return [node.builder.cast(x, target)]
