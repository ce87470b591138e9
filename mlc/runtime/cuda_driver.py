"""The CUDA driver bindings and their error checking, the bottom of mlc's CUDA layer (`cuda.py`).

What: `driver_module()` imports `cuda.bindings.driver` on first use (CudaError, without importing
cuda-python, on a Linux machine with no NVIDIA driver device node); `check` turns a driver call's
`(CUresult, values...)` into its values or a `CudaError` that names the driver's error and what was
being done; `call_in_context` releases a resource with its context pushed, for the finalizers of
the other `cuda_*` modules.

Preconditions: none (nothing here needs a GPU until a driver call is made). Limits: the driver's
module is looked up on this module at each call (`cuda_driver.driver_module()`), which is where
tests substitute a fake driver.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from mlc.errors import CudaError


DRIVER_DEVICE_NODES = ("/dev/nvidiactl", "/dev/dxg", "/dev/nvhost-ctrl-gpu", "/dev/nvgpu/igpu0/ctrl")
"""The device nodes of NVIDIA's Linux drivers (desktop and data center, WSL 2, Jetson): one exists
wherever CUDA can run on Linux."""


def driver_module() -> ModuleType:
    """`cuda.bindings.driver`, imported on first use; CudaError when cuda-python is missing or,
    on Linux, when no NVIDIA driver is there (see the module docstring)."""
    if (
        sys.platform == "linux"
        and "cuda.bindings.driver" not in sys.modules
        and not any(os.path.exists(node) for node in DRIVER_DEVICE_NODES)
    ):
        raise CudaError(f"there is no NVIDIA GPU driver on this machine (none of {', '.join(DRIVER_DEVICE_NODES)} exists)")
    try:
        from cuda.bindings import driver
    except ImportError:
        try:  # cuda-python before 12.6 had the driver module at `cuda.cuda`
            from cuda import cuda as driver  # type: ignore[no-redef]
        except ImportError as error:
            raise CudaError("running on the GPU needs cuda-python (pip install cuda-python)") from error
    return driver


def describe_error(error: Any) -> tuple[str, str]:
    """(name, description) of a CUresult, from the driver when it knows the code."""
    driver = driver_module()
    name = getattr(error, "name", None) or f"CUresult {int(error)}"
    description = "no description from the driver"
    try:
        status, raw_name = driver.cuGetErrorName(error)
        if not status and raw_name:
            name = raw_name.decode(errors="replace")
        status, raw_text = driver.cuGetErrorString(error)
        if not status and raw_text:
            description = raw_text.decode(errors="replace")
    except Exception:  # the code itself may be unknown to the driver; keep the enum's name
        pass
    return name, description


def error_from_result(error: Any, action: str, hint: str = "") -> CudaError:
    name, description = describe_error(error)
    message = f"{action} failed: {name}: {description}"
    if hint:
        message += f"\n{hint}"
    return CudaError(message, error_name=name)


def check(result: tuple[Any, ...], action: str) -> Any:
    """Raises CudaError unless `result[0]` is CUDA_SUCCESS; returns the call's other results.

    cuda-python returns `(error,)`, `(error, value)` or `(error, value, value, ...)`; this returns
    None, the value, or the tuple of values respectively. `action` says what was being done
    ("allocating 4096 bytes"), for the message.
    """
    error = result[0]
    if error:  # CUresult is an int enum and CUDA_SUCCESS is 0
        raise error_from_result(error, action)
    if len(result) == 1:
        return None
    if len(result) == 2:
        return result[1]
    return result[1:]


_CONTEXT_LOST_ERRORS = (
    "CUDA_ERROR_DEINITIALIZED",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
)
"""Errors after which the context's resources are gone anyway: releasing them cannot fail usefully."""


def call_in_context(
    driver: ModuleType, context: Any, call: Callable[[], tuple[Any, ...]], action: str
) -> None:
    """Releases a resource: runs `call` with `context` pushed.

    Tolerates a driver that is shutting down and a context lost to a kernel fault (whose error
    was reported where it surfaced), so that garbage collection does not repeat it.
    """
    (error,) = driver.cuCtxPushCurrent(context)
    if error:
        if _context_is_lost(error):
            return
        raise error_from_result(error, action)
    try:
        result = call()
    finally:
        popped = driver.cuCtxPopCurrent()
    for failure, doing in ((result[0], action), (popped[0], f"restoring the context after {action}")):
        if failure and not _context_is_lost(failure):
            raise error_from_result(failure, doing)


def _context_is_lost(error: Any) -> bool:
    return getattr(error, "name", None) in _CONTEXT_LOST_ERRORS
