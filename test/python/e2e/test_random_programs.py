"""Random elementwise programs, compiled and run on each device, agree with the graph interpreter
within the error bound derived from each program and its data (`error_bounds.result_bounds`)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import mlc
from programs import assert_within_bounds, comparison_event, elementwise_programs, random_inputs

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=elementwise_programs(), seed=st.integers(0, 2**32 - 1))
def test_compiled_matches_interpreter(device: str, program: str, seed: int):
    compiled = mlc.compile(program, device=device)
    inputs = random_inputs(program, seed)
    event(comparison_event(assert_within_bounds(program, inputs, compiled(*inputs))))
