"""Every pass of mlc's pipelines preserves what random programs compute.

For each pass P of `mlc-lower-to-gpu` and `mlc-lower-to-cpu`, Hypothesis draws an elementwise
graph function and random inputs, lowers the function with the passes before P, and interprets
the module before and after P (`mlc.interpreter.run`). The results must be identical, except
across `convert-graph-to-tile`: the graph interpreter computes every op in float64 and rounds
once, while kernels compute in the element type (f16 through f32), so floats agree within the
element type's tolerance there (`element_types.tolerance`). The graph-level passes before it
(graph-simplify, graph-fold-constants, cse) are compared exactly: both sides run on the graph
interpreter, and those passes change no result.

Reductions over more elements than a program holds (chunk loops) come up in the reduction
programs when several dimensions of a 4097-long one are reduced, through every pass. Rows of
65537 to 100000 elements are drawn by a test of their own, few and small otherwise, and only
through the passes that build and distribute the loops down to the GPU level: the interpreter runs
the CPU path's sequential thread loops element by element, far too slowly for such rows, so the
CPU path is checked natively there (`e2e/test_graph_reductions.py`).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import LONG_ROW_LENGTHS, assert_equivalent, elementwise_programs, lower, random_inputs, reduction_programs


def _steps(pipeline: str) -> list[tuple[str, str, str]]:
    """(label, passes before, the pass) for each pass of a pipeline, skipping repeats of cse/canonicalize.

    A pass that runs on graph IR (before convert-graph-to-tile) and again after it is tested at
    both levels; its graph-level step is labelled `NAME@graph`.
    """
    passes = pipeline.split(",")
    lowering = passes.index("convert-graph-to-tile")
    steps, seen = [], set()
    for index, name in enumerate(passes):
        label = f"{name}@graph" if index < lowering and name in passes[lowering:] else name
        if label in seen:
            continue
        seen.add(label)
        steps.append((label, ",".join(passes[:index]), name))
    return steps


STEPS = {f"gpu:{label}": (before, name) for label, before, name in _steps(GPU_PIPELINE)}
STEPS |= {f"cpu:{label}": (before, name) for label, before, name in _steps(CPU_PIPELINE) if f"gpu:{label}" not in STEPS}


@pytest.mark.parametrize("step", sorted(STEPS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=elementwise_programs(max_ops=5), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_semantics(step: str, program: str, seed: int):
    before_passes, name = STEPS[step]
    before = lower(program, before_passes)
    after = lower(program, f"{before_passes},{name}" if before_passes else name)
    inputs = random_inputs(program, seed)
    if name == "convert-graph-to-tile":
        assert_equivalent(before, after, inputs, exact=False, rtol=2e-3, atol=1e-3)
    else:
        assert_equivalent(before, after, inputs, exact=True)


REORDERING_PASSES = ("graph-decompose", "convert-graph-to-tile", "convert-tile-to-loop")
"""Passes that change the order in which a reduction combines its elements (a tree over the tile,
then over registers and threads), so floats agree within rounding there; every other pass is exact."""


@pytest.mark.parametrize("step", sorted(STEPS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(program=reduction_programs(), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_reductions(step: str, program: str, seed: int):
    before_passes, name = STEPS[step]
    before = lower(program, before_passes)
    after = lower(program, f"{before_passes},{name}" if before_passes else name)
    inputs = random_inputs(program, seed)
    # f16 results are rounded once from f32: a different summation order may move them one f16 ulp.
    assert_equivalent(before, after, inputs, exact=name not in REORDERING_PASSES, rtol=2e-3, atol=1e-3)


LONG_ROW_STEPS = (
    "gpu:convert-graph-to-tile",
    "gpu:convert-tile-to-loop",
    "gpu:loop-promote-shared",
    "gpu:convert-loop-to-gpu",
    "gpu:gpu-insert-barriers",
)


@pytest.mark.parametrize("step", LONG_ROW_STEPS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=reduction_programs(row_lengths=LONG_ROW_LENGTHS, largest_other=2), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_long_row_reductions(step: str, program: str, seed: int):
    before_passes, name = STEPS[step]
    before = lower(program, before_passes)
    after = lower(program, f"{before_passes},{name}")
    inputs = random_inputs(program, seed)
    assert_equivalent(before, after, inputs, exact=name not in REORDERING_PASSES, rtol=2e-3, atol=1e-3)
