"""Random elementwise programs, compiled and run on each device, agree with the graph interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlc
from mlc.dialects.element_types import from_numpy_dtype, tolerance
from programs import elementwise_programs, random_inputs

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=elementwise_programs(), seed=st.integers(0, 2**32 - 1))
def test_compiled_matches_interpreter(device: str, program: str, seed: int):
    compiled = mlc.compile(program, device=device)
    inputs = random_inputs(program, seed)
    results = compiled(*inputs)
    results = results if isinstance(results, tuple) else (results,)
    for index, (got, want) in enumerate(zip(results, compiled.reference(*inputs))):
        assert got.dtype == want.dtype and got.shape == want.shape
        if np.issubdtype(want.dtype, np.floating):
            rtol, atol = tolerance(from_numpy_dtype(want.dtype))
            # Transcendental functions on the device may differ from float64 by a few units in
            # the last place, which chains of ops can amplify a little: allow 4x the type's tolerance.
            np.testing.assert_allclose(got, want, rtol=4 * rtol, atol=4 * atol, equal_nan=True, err_msg=f"result #{index}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"result #{index}")
