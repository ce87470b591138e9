"""Every pass of mlc's pipelines preserves what random programs compute.

For each pass P of `mlc-lower-to-gpu` and `mlc-lower-to-cpu`, Hypothesis draws an elementwise
graph function and random inputs, lowers the function with the passes before P, and interprets
the module before and after P (`mlc.interpreter.run`). The results must be identical, except
across `convert-graph-to-tile`: the graph interpreter computes every op in float64 and rounds
once, while kernels compute in the element type (f16 through f32), so floats agree within the
element type's tolerance there (`element_types.tolerance`).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import assert_equivalent, elementwise_programs, lower, random_inputs


def _steps(pipeline: str) -> list[tuple[str, str]]:
    """(passes before, the pass) for each pass of a pipeline, skipping repeats of cse/canonicalize."""
    passes = pipeline.split(",")
    steps, seen = [], set()
    for index, name in enumerate(passes):
        if name in seen:
            continue
        seen.add(name)
        steps.append((",".join(passes[:index]), name))
    return steps


STEPS = {f"gpu:{name}": (before, name) for before, name in _steps(GPU_PIPELINE)}
STEPS |= {f"cpu:{name}": (before, name) for before, name in _steps(CPU_PIPELINE) if f"gpu:{name}" not in STEPS}


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
