"""Every pass of mlc's pipelines preserves what random programs compute.

For each pass P of `mlc-lower-to-gpu` and `mlc-lower-to-cpu`, Hypothesis draws an elementwise
graph function and random inputs, lowers the function with the passes before P, and interprets
the module before and after P (`mlc.interpreter.run`). The results must be identical, except
after the passes that change arithmetic (`REORDERING_PASSES`): the graph interpreter computes every
op in float64 and rounds once, while kernels compute in f32 (rounding f16 results where they are
stored) and combine a reduction's elements in a tree, and graph-decompose rounds between the ops
of a composite. After those passes the results are compared with the graph interpreter's on the
drawn program itself, element by element within the error bound that `error_bounds.result_bounds`
derives from the ops and the data (`programs.assert_within_bounds`: e.g. gamma(n) * sum|x| for a
sum of n terms; comparisons closer than their operands' errors may go either way). The bound is
sound for any implementation that computes in f32 with the stated accuracy of the math functions,
and a result moved by a few bounds fails it (`programs.assert_perturbation_caught`). The
graph-level passes before them (graph-simplify, graph-fold-constants, cse) are compared exactly:
both sides run on the graph interpreter, and those passes change no result.

Reductions over more elements than a program holds (chunk loops) come up in the reduction
programs when several dimensions of a 4097-long one are reduced, through every pass. Rows of
65537 to 100000 elements are drawn by a test of their own, few and small otherwise, and only
through the passes that build and distribute the loops down to the GPU level: the interpreter runs
the CPU path's sequential thread loops element by element, far too slowly for such rows, so the
CPU path is checked natively there (`e2e/test_graph_reductions.py`).
"""

from __future__ import annotations

import pytest
import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mlc.interpreter import run
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import (
    LONG_ROW_LENGTHS,
    assert_equivalent,
    assert_perturbation_caught,
    assert_within_bounds,
    comparison_event,
    elementwise_programs,
    random_inputs,
    reduction_programs,
    same_draws_for_every_step,
    stage,
)


def _steps(pipeline: str) -> list[tuple[str, str, str]]:
    """(label, passes before, the pass) for each pass of a pipeline, skipping repeats of cse/canonicalize.

    A pass that runs on graph IR (before convert-graph-to-tile) and again after it is tested at
    both levels; its graph-level step is labelled `NAME@graph`.
    """
    passes = pipeline.split(",")
    lowering = [name.split("{")[0] for name in passes].index("convert-graph-to-tile")
    steps, seen = [], set()
    for index, name in enumerate(passes):
        base = name.split("{")[0]  # labelled without options: convert-tile-to-loop{tensor-cores=true}
        label = f"{base}@graph" if index < lowering and name in passes[lowering:] else base
        if label in seen:
            continue
        seen.add(label)
        steps.append((label, ",".join(passes[:index]), name))
    return steps


STEPS = {f"gpu:{label}": (before, name) for label, before, name in _steps(GPU_PIPELINE)}
STEPS |= {f"cpu:{label}": (before, name) for label, before, name in _steps(CPU_PIPELINE) if f"gpu:{label}" not in STEPS}


@pytest.mark.parametrize("step", list(STEPS))  # pipeline order: each step reuses the last one's lowering
@same_draws_for_every_step
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=elementwise_programs(max_ops=5), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_semantics(step: str, program: str, seed: int):
    before_passes, name = STEPS[step]
    before = stage(program, before_passes)
    after = stage(program, f"{before_passes},{name}" if before_passes else name)
    # Elementwise programs have no reduction: only convert-graph-to-tile (f32 for float64) and
    # expand-math-for-cpu (polynomials within error_bounds.ACCURACY for libm) change their arithmetic.
    _check(program, name, before, after, random_inputs(program, seed), bounded=name in ("convert-graph-to-tile", "expand-math-for-cpu"))


REORDERING_PASSES = ("graph-decompose", "convert-graph-to-tile", "convert-tile-to-loop", "expand-math-for-cpu")
"""Passes that change arithmetic: graph-decompose rounds between the ops of a composite,
convert-graph-to-tile computes in f32 where the graph interpreter computes in float64, and both
lowerings change the order in which a reduction combines its elements (a tree over the tile, then
over registers and threads). Their results are compared with the graph interpreter within the
derived bound; every other pass is exact."""


def _check(program: str, name: str, before, after, inputs: list[np.ndarray], bounded: bool) -> None:
    """After a pass that changes arithmetic, the graph interpreter within the bound; else exact."""
    if bounded:
        actual = run(after, "main", [x.copy() for x in inputs])
        event(comparison_event(assert_within_bounds(program, inputs, actual)))
        assert_perturbation_caught(program, inputs, actual)
    else:
        assert_equivalent(before, after, inputs)


@pytest.mark.parametrize("step", list(STEPS))  # pipeline order: each step reuses the last one's lowering
@same_draws_for_every_step
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(program=reduction_programs(), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_reductions(step: str, program: str, seed: int):
    before_passes, name = STEPS[step]
    before = stage(program, before_passes)
    after = stage(program, f"{before_passes},{name}" if before_passes else name)
    _check(program, name, before, after, random_inputs(program, seed), bounded=name.split("{")[0] in REORDERING_PASSES)


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
    before = stage(program, before_passes)
    after = stage(program, f"{before_passes},{name}")
    _check(program, name, before, after, random_inputs(program, seed), bounded=name.split("{")[0] in REORDERING_PASSES)
