"""Every graph-simplify rule is an exact equivalence, checked TASO-style against the interpreter.

For each rule, Hypothesis draws a function that contains the rule's pattern: shapes (operands that
broadcast, rank 0 to 3), an element type the rule applies to, and input data with NaN, ±inf, ±0.0,
subnormals and the integer extremes. The test applies graph-simplify, checks that the rule fired
(its pattern's root op is gone: fewer ops of that name remain), and interprets the function before
and after (`mlc.interpreter.run`). The results must be equal bit for bit, with one exception: any
NaN equals any NaN, because NaN payloads are not part of the semantics (numpy does not define
them). So -0.0 and +0.0 differ, and a rule that is right only "up to signed zeros" fails.

A deliberately wrong rule, x * 0 -> 0 for floats (defined below, not in the pass), fails this same
check; `test_the_check_catches_a_wrong_rule` shows that the harness catches rules that are not
equivalences, and on which data (NaN * 0 is NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph import ops as graph
from mlc.transforms.lowering.graph_rewriting import replace_with_value
from mlc.transforms.graph import graph_simplify
from mlc.transforms.graph.graph_simplify import GraphSimplify
from graph_checks import (
    assert_same_results,
    broadcasting_to,
    count_ops,
    draw_inputs,
    interpret,
    interpreter_keeps_rank_0,
    interpreter_saturates_bf16_casts,
    shapes,
)
from programs import tensor_type

FLOATS = ("f32", "f16", "bf16")
INTEGERS = ("i32", "i64")
ALL_TYPES = (*FLOATS, *INTEGERS, "i1")
HAS_TRANSPOSE = "graph.transpose" in {op.name for op in graph.Graph.operations}
needs_transpose = pytest.mark.skipif(
    not HAS_TRANSPOSE, reason="graph.transpose is not in the graph dialect yet (being added)"
)


@dataclass
class Case:
    """A function `@main` holding a rule's pattern, and the op that the rule must remove."""

    text: str
    root: str


class Function:
    """Builds the text of `@main` line by line."""

    def __init__(self) -> None:
        self.arguments: list[str] = []
        self.lines: list[str] = []

    def argument(self, shape: tuple[int, ...], element: str) -> str:
        name = f"%arg{len(self.arguments)}"
        self.arguments.append(f"{name}: {tensor_type(shape, element)}")
        return name

    def op(self, text: str) -> str:
        name = f"%v{len(self.lines)}"
        self.lines.append(f"  {name} = {text}")
        return name

    def constant(self, literal: str, shape: tuple[int, ...], element: str) -> str:
        return self.op(f"graph.constant dense<{literal}> : {tensor_type(shape, element)}")

    def case(self, result: str, shape: tuple[int, ...], element: str, root: str) -> Case:
        result_type = tensor_type(shape, element)
        text = (
            f"func.func @main({', '.join(self.arguments)}) -> {result_type} {{\n"
            + "\n".join(self.lines)
            + f"\n  func.return {result} : {result_type}\n}}\n"
        )
        return Case(text, root)


# Shapes.


RANK_0_CASES = {
    "broadcast": "graph.broadcast %x : tensor<f32> to tensor<f32>",
    "transpose": '"graph.transpose"(%x) <{perm = array<i64>}> : (tensor<f32>) -> tensor<f32>',
}
layout_shapes = {
    op: shapes if (op != "transpose" or HAS_TRANSPOSE) and interpreter_keeps_rank_0(text) else shapes.filter(len)
    for op, text in RANK_0_CASES.items()
}


@st.composite
def broadcast_pairs(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Two shapes and their broadcast, in either role (the larger one may be either)."""
    result = draw(shapes)
    first, second = draw(broadcasting_to(result)), draw(broadcasting_to(result))
    if draw(st.booleans()):
        first = result
    else:
        second = result
    return first, second, tuple(np.broadcast_shapes(first, second))


@st.composite
def regroupings(draw: st.DrawFn, factors: list[int]) -> tuple[int, ...]:
    """A shape with the product of `factors`: a random grouping of them into dimensions."""
    shuffled = draw(st.permutations(factors))
    shape: list[int] = []
    for factor in shuffled:
        if shape and draw(st.booleans()):
            shape[-1] *= factor
        else:
            shape.append(factor)
    return tuple(shape)


def literal(number: float, element: str) -> str:
    if element == "i1":
        return "true" if number else "false"
    if element in INTEGERS:
        return str(int(number))
    return repr(float(number))


# One strategy per rule: each draws a Case whose root op the rule removes.


@st.composite
def binary_with_splat(
    draw: st.DrawFn, op: str, numbers: tuple[float, ...], sides: str, elements: tuple[str, ...]
) -> Case:
    """`op(x, c)` or `op(c, x)` for a splat c of one of `numbers`; x and c broadcast."""
    element = draw(st.sampled_from(elements))
    x_shape, constant_shape, shape = draw(broadcast_pairs())
    function = Function()
    x = function.argument(x_shape, element)
    constant = function.constant(literal(draw(st.sampled_from(numbers)), element), constant_shape, element)
    constant_first = sides == "lhs" or (sides == "both" and draw(st.booleans()))
    lhs, rhs = (constant, x) if constant_first else (x, constant)
    lhs_shape, rhs_shape = (constant_shape, x_shape) if constant_first else (x_shape, constant_shape)
    types = f"({tensor_type(lhs_shape, element)}, {tensor_type(rhs_shape, element)}) -> {tensor_type(shape, element)}"
    result = function.op(f"graph.{op} {lhs}, {rhs} : {types}")
    return function.case(result, shape, element, f"graph.{op}")


@st.composite
def binary_self(draw: st.DrawFn, op: str, elements: tuple[str, ...]) -> Case:
    element = draw(st.sampled_from(elements))
    shape = draw(shapes)
    function = Function()
    x = function.argument(shape, element)
    type_ = tensor_type(shape, element)
    result = function.op(f"graph.{op} {x}, {x} : ({type_}, {type_}) -> {type_}")
    return function.case(result, shape, element, f"graph.{op}")


@st.composite
def unary_chain(draw: st.DrawFn, inner: str, outer: str, elements: tuple[str, ...], root: str) -> Case:
    element = draw(st.sampled_from(elements))
    shape = draw(shapes)
    function = Function()
    type_ = tensor_type(shape, element)
    x = function.argument(shape, element)
    result = function.op(f"graph.{outer} {function.op(f'graph.{inner} {x} : {type_}')} : {type_}")
    return function.case(result, shape, element, root)


@st.composite
def identity_layout(draw: st.DrawFn, op: str) -> Case:
    element = draw(st.sampled_from(ALL_TYPES))
    shape = draw(layout_shapes.get(op, shapes))
    function = Function()
    type_ = tensor_type(shape, element)
    result = function.op(f"graph.{op} {function.argument(shape, element)} : {type_} to {type_}")
    return function.case(result, shape, element, f"graph.{op}")


@st.composite
def reshape_of_reshape(draw: st.DrawFn) -> Case:
    element = draw(st.sampled_from(ALL_TYPES))
    factors = draw(st.lists(st.integers(1, 4), min_size=0, max_size=4))
    first, second, third = (draw(regroupings(factors)) for _ in range(3))
    function = Function()
    x = function.argument(first, element)
    inner = function.op(f"graph.reshape {x} : {tensor_type(first, element)} to {tensor_type(second, element)}")
    result = function.op(f"graph.reshape {inner} : {tensor_type(second, element)} to {tensor_type(third, element)}")
    return function.case(result, third, element, "graph.reshape")


@st.composite
def broadcast_of_broadcast(draw: st.DrawFn) -> Case:
    element = draw(st.sampled_from(ALL_TYPES))
    outer = draw(layout_shapes["broadcast"])
    middle = draw(broadcasting_to(outer))
    inner = draw(broadcasting_to(middle))
    function = Function()
    x = function.argument(inner, element)
    first = function.op(f"graph.broadcast {x} : {tensor_type(inner, element)} to {tensor_type(middle, element)}")
    result = function.op(f"graph.broadcast {first} : {tensor_type(middle, element)} to {tensor_type(outer, element)}")
    return function.case(result, outer, element, "graph.broadcast")


LOSSLESS = [("i1", target) for target in ALL_TYPES if target != "i1"]
LOSSLESS += [("i32", "i64"), ("f16", "f32"), ("bf16", "f32")]


BF16_CASTS_SATURATE = interpreter_saturates_bf16_casts()


@st.composite
def cast_of_lossless_cast(draw: st.DrawFn) -> Case:
    source, middle = draw(st.sampled_from(LOSSLESS))
    targets = ALL_TYPES if source != "bf16" or BF16_CASTS_SATURATE else (*FLOATS, "i1")
    target = draw(st.sampled_from(targets))
    shape = draw(shapes)
    function = Function()
    x = function.argument(shape, source)
    inner = function.op(f"graph.cast {x} : {tensor_type(shape, source)} to {tensor_type(shape, middle)}")
    result = function.op(f"graph.cast {inner} : {tensor_type(shape, middle)} to {tensor_type(shape, target)}")
    return function.case(result, shape, target, "graph.cast")


def transpose_text(value: str, perm: list[int], shape: tuple[int, ...], element: str) -> tuple[str, tuple[int, ...]]:
    """The generic form of `graph.transpose` (fixed by the spec) and its result shape."""
    result_shape = tuple(shape[axis] for axis in perm)
    perm_text = ", ".join(str(axis) for axis in perm)
    return (
        f'"graph.transpose"({value}) <{{perm = array<i64{": " + perm_text if perm else ""}>}}> : '
        f"({tensor_type(shape, element)}) -> {tensor_type(result_shape, element)}",
        result_shape,
    )


@st.composite
def transpose_of_transpose(draw: st.DrawFn, identity: bool) -> Case:
    element = draw(st.sampled_from(ALL_TYPES))
    shape = draw(layout_shapes["transpose"])
    rank = len(shape)
    function = Function()
    value = function.argument(shape, element)
    for _ in range(1 if identity else 2):
        perm = list(range(rank)) if identity else draw(st.permutations(list(range(rank))))
        # numpy's negative axes are allowed in `perm`; the rules must normalise them.
        perm = [axis - rank if draw(st.booleans()) else axis for axis in perm]
        text, shape = transpose_text(value, perm, shape, element)
        value = function.op(text)
    return function.case(value, shape, element, "graph.transpose")


@st.composite
def transpose_of_unit_axes(draw: st.DrawFn) -> Case:
    """A transpose whose axes longer than 1 stay in order (the others have size 1)."""
    element = draw(st.sampled_from(ALL_TYPES))
    rank = draw(st.integers(2, 4))
    perm = draw(st.permutations(list(range(rank))).filter(lambda p: p != sorted(p)))
    kept: list[int] = []
    for axis in perm:
        if (not kept or axis > kept[-1]) and draw(st.booleans()):
            kept.append(axis)
    shape = tuple(draw(st.integers(2, 4)) if axis in kept else 1 for axis in range(rank))
    function = Function()
    text, result_shape = transpose_text(function.argument(shape, element), list(perm), shape, element)
    return function.case(function.op(text), result_shape, element, "graph.transpose")


@st.composite
def head_split(draw: st.DrawFn) -> Case:
    """PyTorch's multi-head split of a (S*B, 3*H*d) projection into one of q, k, v as (B, H, S, d)."""
    element = draw(st.sampled_from(ALL_TYPES))
    length, batch, heads, depth = (draw(st.integers(2, 3)) for _ in range(4))
    which = draw(st.integers(0, 2))
    function = Function()
    value, shape = function.argument((length * batch, 3 * heads * depth), element), (length * batch, 3 * heads * depth)

    def reshape(value: str, shape: tuple[int, ...], new: tuple[int, ...]) -> str:
        return function.op(f"graph.reshape {value} : {tensor_type(shape, element)} to {tensor_type(new, element)}")

    value = reshape(value, shape, shape := (length, batch, 3, heads * depth))
    text, shape = transpose_text(value, [2, 0, 1, 3], shape, element)
    value, sliced = function.op(text), (1, length, batch, heads * depth)
    value = function.op(
        f"graph.slice {value} starts [{which}, 0, 0, 0] ends [{which + 1}, {length}, {batch}, {heads * depth}] "
        f"steps [1, 1, 1, 1] : {tensor_type(shape, element)} to {tensor_type(sliced, element)}"
    )
    value = reshape(value, sliced, shape := (length, batch * heads, depth))
    text, shape = transpose_text(value, [1, 0, 2], shape, element)
    value = reshape(function.op(text), shape, result := (batch, heads, length, depth))
    return function.case(value, result, element, "graph.transpose")


@st.composite
def elementwise_after_reshape(draw: st.DrawFn) -> Case:
    """reshape(f(reshape(x), c)) back to x's shape, c one value per column (or one value)."""
    element = draw(st.sampled_from(FLOATS))
    rows, columns, split = draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 3))
    op = draw(st.sampled_from(("add", "sub", "mul")))
    side = draw(st.sampled_from(((columns,), (1, columns), ())))
    function = Function()
    x, c = function.argument((rows * split, columns), element), function.argument(side, element)
    flat, split_shape = tensor_type((rows * split, columns), element), tensor_type((rows, split, columns), element)
    viewed = function.op(f"graph.reshape {x} : {flat} to {split_shape}")
    operands = f"{viewed}, {c}" if draw(st.booleans()) else f"{c}, {viewed}"
    first, second = (split_shape, tensor_type(side, element)) if operands.startswith(viewed) else (tensor_type(side, element), split_shape)
    value = function.op(f"graph.{op} {operands} : ({first}, {second}) -> {split_shape}")
    return function.case(function.op(f"graph.reshape {value} : {split_shape} to {flat}"), (rows * split, columns), element, "graph.reshape")


@st.composite
def elementwise_after_transpose(draw: st.DrawFn) -> Case:
    """transpose(f(transpose(x, p), c), p^-1), p keeping the last axis, c one value per column (or
    one value): f moves before the transpose, and the two transposes cancel."""
    element = draw(st.sampled_from(FLOATS))
    shape = (draw(st.integers(1, 3)), draw(st.integers(2, 3)), draw(st.integers(1, 4)))
    op = draw(st.sampled_from(("add", "sub", "mul")))
    side = draw(st.sampled_from(((shape[-1],), (1, shape[-1]), ())))
    function = Function()
    x, c = function.argument(shape, element), function.argument(side, element)
    text, moved = transpose_text(x, [1, 0, 2], shape, element)
    value = function.op(text)
    value = function.op(f"graph.{op} {value}, {c} : ({tensor_type(moved, element)}, {tensor_type(side, element)}) -> {tensor_type(moved, element)}")
    text, back = transpose_text(value, [1, 0, 2], moved, element)
    return function.case(function.op(text), back, element, "graph.transpose")


@st.composite
def rows_permuted_after_matmul(draw: st.DrawFn) -> Case:
    """A batch-first (B, S, K) input transposed to (S, B, K) for a linear layer whose result, with
    a bias, goes back to (B, S, N): the product reads the input's rows in place and the
    transposes cancel."""
    element = draw(st.sampled_from(FLOATS))
    batch, length, depth, width = draw(st.integers(2, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    function = Function()
    x, w, bias = function.argument((batch, length, depth), element), function.argument((depth, width), element), function.argument((width,), element)
    text, moved = transpose_text(x, [1, 0, 2], (batch, length, depth), element)
    rows = tensor_type((length * batch, depth), element)
    flat = function.op(f"graph.reshape {function.op(text)} : {tensor_type(moved, element)} to {rows}")
    product_type = tensor_type((length * batch, width), element)
    product = function.op(f"graph.matmul {flat}, {w} : ({rows}, {tensor_type((depth, width), element)}) -> {product_type}")
    split = tensor_type((length, batch, width), element)
    value = function.op(f"graph.reshape {product} : {product_type} to {split}")
    value = function.op(f"graph.add {value}, {bias} : ({split}, {tensor_type((width,), element)}) -> {split}")
    text, back = transpose_text(value, [1, 0, 2], (length, batch, width), element)
    return function.case(function.op(text), back, element, "graph.transpose")


@st.composite
def where_same_branches(draw: st.DrawFn) -> Case:
    element = draw(st.sampled_from(ALL_TYPES))
    condition_shape, x_shape, shape = draw(broadcast_pairs())
    function = Function()
    condition = function.argument(condition_shape, "i1")
    x = function.argument(x_shape, element)
    x_type = tensor_type(x_shape, element)
    types = f"({tensor_type(condition_shape, 'i1')}, {x_type}, {x_type}) -> {tensor_type(shape, element)}"
    result = function.op(f"graph.where {condition}, {x}, {x} : {types}")
    return function.case(result, shape, element, "graph.where")


@st.composite
def where_constant_condition(draw: st.DrawFn) -> Case:
    element = draw(st.sampled_from(ALL_TYPES))
    shape = draw(shapes)
    condition_shape, x_shape, y_shape = (draw(broadcasting_to(shape)) for _ in range(3))
    result_shape = tuple(np.broadcast_shapes(condition_shape, x_shape, y_shape))
    function = Function()
    x, y = function.argument(x_shape, element), function.argument(y_shape, element)
    condition = function.constant(literal(draw(st.booleans()), "i1"), condition_shape, "i1")
    types = (
        f"({tensor_type(condition_shape, 'i1')}, {tensor_type(x_shape, element)}, "
        f"{tensor_type(y_shape, element)}) -> {tensor_type(result_shape, element)}"
    )
    result = function.op(f"graph.where {condition}, {x}, {y} : {types}")
    return function.case(result, result_shape, element, "graph.where")


NUMBERS = (*FLOATS, *INTEGERS)
RULES: dict[str, st.SearchStrategy[Case]] = {
    "IdentityView:reshape": identity_layout("reshape"),
    "ReshapeOfReshape": reshape_of_reshape(),
    "IdentityView:broadcast": identity_layout("broadcast"),
    "BroadcastOfBroadcast": broadcast_of_broadcast(),
    "IdentityView:cast": identity_layout("cast"),
    "CastOfLosslessCast": cast_of_lossless_cast(),
    "IdentityTranspose": transpose_of_transpose(identity=True),
    "TransposeOfTranspose": transpose_of_transpose(identity=False),
    "TransposeMovingUnitAxes": transpose_of_unit_axes(),
    "LayoutChainAsOneView": head_split(),
    "ElementwiseAfterReshape": elementwise_after_reshape(),
    "ElementwiseAfterTranspose": elementwise_after_transpose(),
    "RowsPermutedAfterMatmul": rows_permuted_after_matmul(),
    "AddZero": binary_with_splat("add", (-0.0,), "both", NUMBERS),
    "SubZero": binary_with_splat("sub", (0.0,), "rhs", NUMBERS),
    "ZeroSub": binary_with_splat("sub", (-0.0,), "lhs", NUMBERS),
    "SubSelf": binary_self("sub", INTEGERS),
    "MulOne": binary_with_splat("mul", (1.0,), "both", NUMBERS),
    "MulMinusOne": binary_with_splat("mul", (-1.0,), "both", NUMBERS),
    "MulZero": binary_with_splat("mul", (0.0,), "both", INTEGERS),
    "DivOne": binary_with_splat("div", (1.0,), "rhs", NUMBERS),
    "DivMinusOne": binary_with_splat("div", (-1.0,), "rhs", NUMBERS),
    "PowOne": binary_with_splat("pow", (1.0,), "rhs", NUMBERS),
    "PowZero": binary_with_splat("pow", (0.0, -0.0), "rhs", NUMBERS),
    "MaxMinSelf:max": binary_self("max", NUMBERS),
    "MaxMinSelf:min": binary_self("min", NUMBERS),
    "WhereSameBranches": where_same_branches(),
    "WhereConstantCondition": where_constant_condition(),
    "NegNeg": unary_chain("neg", "neg", NUMBERS, "graph.neg"),
    "AbsOfNeg": unary_chain("neg", "abs", NUMBERS, "graph.neg"),
    "IdempotentUnary:relu": unary_chain("relu", "relu", NUMBERS, "graph.relu"),
    "IdempotentUnary:abs": unary_chain("abs", "abs", NUMBERS, "graph.abs"),
    "ReluOfAbs": unary_chain("abs", "relu", FLOATS, "graph.relu"),
}
"""Cases by rule class name (`Rule:variant` where one rule covers several patterns)."""
TRANSPOSE_RULES = {
    "IdentityTranspose", "TransposeOfTranspose", "TransposeMovingUnitAxes", "LayoutChainAsOneView", "ElementwiseAfterTranspose", "RowsPermutedAfterMatmul",
}


def test_every_rule_has_a_case() -> None:
    assert {case.split(":")[0] for case in RULES} == {rule.__name__ for rule in graph_simplify.RULES}


# Data and the check.


def simplify(module: ModuleOp) -> None:
    GraphSimplify().apply(make_context(), module)


def check_rule(case: Case, data: st.DataObject, transform: Callable[[ModuleOp], None] = simplify) -> None:
    """Applies `transform` to `case`; the root op must be removed and the results unchanged."""
    before, _ = parse_module(case.text, make_context())
    before.verify()
    after = before.clone()
    transform(after)
    after.verify()
    assert count_ops(after, case.root) < count_ops(before, case.root), f"the rule did not fire on:\n{case.text}"
    inputs = draw_inputs(data, before)
    assert_same_results(interpret(before, inputs), interpret(after, inputs))


@pytest.mark.parametrize(
    "rule",
    [pytest.param(rule, marks=needs_transpose) if rule in TRANSPOSE_RULES else rule for rule in RULES],
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rule_is_an_equivalence(rule: str, data: st.DataObject) -> None:
    check_rule(data.draw(RULES[rule], label="case"), data)


# What must not be rewritten: rules that would be wrong for these types or constants.

NOT_REWRITTEN = {
    "float x + (+0.0)": binary_with_splat("add", (0.0,), "both", FLOATS),
    "float x - (-0.0)": binary_with_splat("sub", (-0.0,), "rhs", FLOATS),
    "float (+0.0) - x": binary_with_splat("sub", (0.0,), "lhs", FLOATS),
    "float x * 0": binary_with_splat("mul", (0.0, -0.0), "both", FLOATS),
    "float x - x": binary_self("sub", FLOATS),
    "integer relu(|x|)": unary_chain("abs", "relu", INTEGERS, "graph.relu"),
    "x * 2": binary_with_splat("mul", (2.0,), "both", NUMBERS),
    "1 / x": binary_with_splat("div", (1.0,), "lhs", NUMBERS),
}


@pytest.mark.parametrize("name", sorted(NOT_REWRITTEN))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_unsafe_rewrites_are_not_done(name: str, data: st.DataObject) -> None:
    case = data.draw(NOT_REWRITTEN[name])
    module, _ = parse_module(case.text, make_context())
    before = str(module)
    simplify(module)
    assert str(module) == before


@pytest.mark.parametrize(
    "types", [("i32", "f32", "i32"), ("f32", "f16", "f32"), ("f32", "bf16", "f32"), ("i64", "i32", "i64"), ("f32", "i1", "f32")]
)
def test_lossy_cast_pairs_are_kept(types: tuple[str, str, str]) -> None:
    source, middle, target = types
    text = (
        f"func.func @main(%x: tensor<4x{source}>) -> tensor<4x{target}> {{\n"
        f"  %0 = graph.cast %x : tensor<4x{source}> to tensor<4x{middle}>\n"
        f"  %1 = graph.cast %0 : tensor<4x{middle}> to tensor<4x{target}>\n"
        f"  func.return %1 : tensor<4x{target}>\n}}\n"
    )
    module, _ = parse_module(text, make_context())
    simplify(module)
    assert sum(op.name == "graph.cast" for op in module.walk()) == 2


# The harness catches a rule that is not an equivalence.


class FloatMulZero(RewritePattern):
    """x * 0 -> 0 for floats: WRONG (NaN * 0 and inf * 0 are NaN, -1.0 * 0 is -0.0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        owner = op.rhs.owner
        if isinstance(owner, graph.ConstantOp) and not np.any(np.asarray(owner.value.get_values())):
            replace_with_value(rewriter, op, op.rhs)


def apply_wrong_rule(module: ModuleOp) -> None:
    PatternRewriteWalker(FloatMulZero()).rewrite_module(module)


def test_the_check_catches_a_wrong_rule() -> None:
    wrong_case = binary_with_splat("mul", (0.0,), "rhs", ("f32",))

    @settings(max_examples=200, derandomize=True, database=None, deadline=None, report_multiple_bugs=False)
    @given(data=st.data())
    def wrong_rule_is_an_equivalence(data: st.DataObject) -> None:
        check_rule(data.draw(wrong_case), data, apply_wrong_rule)

    with pytest.raises(AssertionError, match="NaN at different places|different bits"):
        wrong_rule_is_an_equivalence()


def test_the_wrong_rule_fails_on_nan() -> None:
    text = (
        "func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
        "  %0 = graph.constant dense<0.0> : tensor<3xf32>\n"
        "  %1 = graph.mul %x, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>\n"
        "  func.return %1 : tensor<3xf32>\n}\n"
    )
    before, _ = parse_module(text, make_context())
    after = before.clone()
    apply_wrong_rule(after)
    inputs = [np.array([1.0, np.nan, 2.0], np.float32)]
    with pytest.raises(AssertionError, match="NaN at different places"):
        assert_same_results(interpret(before, inputs), interpret(after, inputs))
    # The pass itself leaves the float multiplication alone.
    kept = before.clone()
    simplify(kept)
    assert any(op.name == "graph.mul" for op in kept.walk())
