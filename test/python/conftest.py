"""Shared pytest configuration: GPU tests are skipped when no CUDA device is present."""

import pytest


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
        if "gpu" in item.keywords:
            item.add_marker(skip)
