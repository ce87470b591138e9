"""xDSL's `cse` and `dce` on graph IR: they preserve semantics and remove what they should.

Hypothesis draws an elementwise program (`programs.elementwise_programs`) and plants in it
duplicate subexpressions (copies of existing ops, under new names, that some later ops then use
instead of the original) and dead ops (ops nobody uses). Then:

* after `cse` no two graph ops are equal (same name, operands, properties, attributes and result
  types), so each planted duplicate is gone;
* after `dce` every graph op contributes to a returned value, so each planted dead op is gone;
* after either, and after `cse,dce`, the function computes the same bits (NaN equal to NaN).
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.passes import build_pipeline
from mlc.transforms import all_passes
from graph_checks import assert_same_results, draw_inputs, interpret
from programs import elementwise_programs

OP_LINE = re.compile(r"^  (%v\d+) = (graph\.\S+) (.*)$")
RETURN_TYPE = re.compile(r"^func\.func @main\((.*)\) -> \((.*)\) \{$")


def _uses(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(name) + r"(?!\d)")


@st.composite
def programs_with_redundancy(draw: st.DrawFn) -> tuple[str, int, int]:
    """(program text, number of planted duplicates, number of planted dead ops)."""
    lines = draw(elementwise_programs(max_ops=6)).splitlines()
    op_indices = [index for index, line in enumerate(lines) if OP_LINE.match(line)]
    duplicates = draw(st.lists(st.sampled_from(op_indices), max_size=3, unique=True)) if op_indices else []
    # Plant from the bottom up so that the indices of the lines above stay valid.
    for number, index in enumerate(sorted(duplicates, reverse=True)):
        name, op, rest = OP_LINE.match(lines[index]).groups()  # type: ignore[union-attr]
        copy = f"%dup{number}"
        later = range(index + 1, len(lines))
        for user in [i for i in later if _uses(name).search(lines[i]) and draw(st.booleans())]:
            lines[user] = _uses(name).sub(copy, lines[user])
        lines.insert(index + 1, f"  {copy} = {op} {rest}")
    dead = draw(st.integers(0, 2)) if op_indices else 0
    return_index = next(i for i, line in enumerate(lines) if line.lstrip().startswith("func.return"))
    for number in range(dead):
        # A copy of an op, renamed and never used: dead (and a duplicate, which cse may merge too).
        candidates = [i for i, line in enumerate(lines[:return_index]) if OP_LINE.match(line)]
        source = lines[draw(st.sampled_from(candidates))]
        name, op, rest = OP_LINE.match(source).groups()  # type: ignore[union-attr]
        lines.insert(return_index, f"  %dead{number} = {op} {rest}")
        return_index += 1
    return "\n".join(lines) + "\n", len(duplicates), dead


def apply(text: str, pipeline: str) -> tuple[ModuleOp, ModuleOp]:
    before, _ = parse_module(text, make_context())
    before.verify()
    after = before.clone()
    for module_pass in build_pipeline(pipeline, all_passes(), mlir_syntax=False):
        module_pass.apply(make_context(), after)
    after.verify()
    return before, after


def graph_ops(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if op.dialect_name() == "graph"]


def _key(op: Operation) -> tuple[object, ...]:
    return (
        op.name,
        tuple(id(operand) for operand in op.operands),
        tuple(sorted((k, str(v)) for k, v in op.properties.items())),
        tuple(sorted((k, str(v)) for k, v in op.attributes.items())),
        tuple(str(result.type) for result in op.results),
    )


def assert_no_duplicates(module: ModuleOp) -> None:
    keys = [_key(op) for op in graph_ops(module)]
    assert len(keys) == len(set(keys)), "cse left equal ops"


def assert_no_dead_ops(module: ModuleOp) -> None:
    for op in graph_ops(module):
        assert any(result.uses for result in op.results), f"dce left an unused {op.name}"


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@SETTINGS
@given(case=programs_with_redundancy(), data=st.data())
def test_cse_merges_duplicates_and_preserves_semantics(case: tuple[str, int, int], data: st.DataObject) -> None:
    text, duplicates, _ = case
    before, after = apply(text, "cse")
    assert_no_duplicates(after)
    assert len(graph_ops(after)) <= len(graph_ops(before)) - duplicates
    inputs = draw_inputs(data, before)
    assert_same_results(interpret(before, inputs), interpret(after, inputs))


@SETTINGS
@given(case=programs_with_redundancy(), data=st.data())
def test_dce_removes_dead_ops_and_preserves_semantics(case: tuple[str, int, int], data: st.DataObject) -> None:
    text, _, dead = case
    before, after = apply(text, "dce")
    assert_no_dead_ops(after)
    assert len(graph_ops(after)) <= len(graph_ops(before)) - dead
    inputs = draw_inputs(data, before)
    assert_same_results(interpret(before, inputs), interpret(after, inputs))


@SETTINGS
@given(case=programs_with_redundancy(), data=st.data())
def test_cse_then_dce(case: tuple[str, int, int], data: st.DataObject) -> None:
    text, duplicates, dead = case
    before, after = apply(text, "cse,dce")
    assert_no_duplicates(after)
    assert_no_dead_ops(after)
    assert len(graph_ops(after)) <= len(graph_ops(before)) - duplicates - dead
    inputs = draw_inputs(data, before)
    assert_same_results(interpret(before, inputs), interpret(after, inputs))
