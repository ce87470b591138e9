"""Random elementwise programs, compiled and run on each device, agree with the graph interpreter."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlc
from programs import assert_compiled_results, elementwise_programs, random_inputs

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=elementwise_programs(), seed=st.integers(0, 2**32 - 1))
def test_compiled_matches_interpreter(device: str, program: str, seed: int):
    compiled = mlc.compile(program, device=device)
    inputs = random_inputs(program, seed)
    assert_compiled_results(compiled(*inputs), compiled.reference(*inputs))
