"""Shared pytest configuration.

GPU tests (`@pytest.mark.gpu`) are skipped when no CUDA device is present.

Hypothesis profiles: `ci` is derandomized (each test draws the same examples on every run, so a
red CI run is reproducible and a green one stays green); `dev`, the default elsewhere, explores new
examples each run; `explore` draws 20x more examples for long local runs. The profile is
`HYPOTHESIS_PROFILE` when set, else `ci` when the `CI` environment variable is set, else `dev`.
A test's own `@settings(max_examples=...)` scales with the profile only where it says so.

The compile cache is off in tests (`MLC_CACHE=0`, also for the processes they start), and points
at a temporary directory besides, so that no test reads or writes the user's cache and tests that
count compilations or break passes on purpose always compile. Cache tests turn it on for
themselves (`monkeypatch.setenv("MLC_CACHE", "1")` with their own `MLC_CACHE_DIR`).
"""

import os
import tempfile
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

os.environ["MLC_CACHE"] = "0"
os.environ["MLC_CACHE_DIR"] = tempfile.mkdtemp(prefix="mlc-test-cache-")

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.register_profile(
    "explore", deadline=None, print_blob=True, max_examples=2000, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """Random numbers seeded by the test's id: fresh inputs per test, the same on every run."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _cuda_device_present() -> bool:
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    try:
        (error,) = driver.cuInit(0)
        if error != driver.CUresult.CUDA_SUCCESS:
            return False
        error, count = driver.cuDeviceGetCount()
        return error == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda_device_present():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        # The marker, not `item.keywords`: keywords also hold the names of the item's folders, and
        # the tests of test/python/transforms/gpu/ run on the CPU (the GPU-level interpreter).
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
