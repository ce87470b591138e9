"""graph-inline-fusion undoes graph-fuse: the same ops, no fusion left, the same results.

Hypothesis draws the programs of `programs.py`, fuses them, inlines the groups again and checks that
the interpreter gives the same bits as on the input, that no `graph.fusion` is left, and that the
function holds the ops of the input (less the unused ones graph-fuse erased).
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from programs import (
    assert_equivalent,
    elementwise_programs,
    lower,
    mixed_programs,
    random_inputs,
    reduction_programs,
)


def _op_names(module) -> Counter[str]:
    return Counter(op.name for op in module.walk() if op.name.startswith("graph."))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    program=st.one_of(elementwise_programs(max_ops=6), reduction_programs(), mixed_programs()),
    seed=st.integers(0, 2**32 - 1),
)
def test_inlining_undoes_fusion(program: str, seed: int):
    before = lower(program, "dce")
    after = lower(program, "graph-fuse,graph-inline-fusion")
    assert _op_names(after) == _op_names(before)
    assert_equivalent(before, after, random_inputs(program, seed))
