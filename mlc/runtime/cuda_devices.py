"""CUDA devices and their primary contexts: `get_device`, `Device`, `DeviceProperties`.

What: `get_device(n)` retains device n's *primary context* (the one the CUDA runtime, PyTorch and
CuPy use, so memory moves freely between them) and queries its properties once;
`Device.activated()` makes that context current for a `with` block only, restoring the caller's.

State: the table of retained devices (`_DEVICES`) is the CUDA layer's only mutable global,
filled lazily once per device and process under a lock and never released (the driver releases
the contexts at exit). Tests that fake the driver empty it.
Limits: `is_available` never raises; everything else raises `CudaError` when the driver is missing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from mlc.errors import CudaError
from mlc.runtime import cuda_driver
from mlc.runtime.cuda_driver import check


@dataclass(frozen=True)
class DeviceProperties:
    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessor_count: int
    max_threads_per_block: int
    max_block_dimensions: tuple[int, int, int]
    max_grid_dimensions: tuple[int, int, int]
    max_shared_memory_per_block: int
    max_shared_memory_per_block_optin: int
    warp_size: int
    total_memory_bytes: int
    driver_version: int

    @property
    def arch(self) -> str:
        """The PTX target of this device, e.g. `sm_90`."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def summary(self) -> str:
        return f"{self.name} ({self.arch})"


class Device:
    """One CUDA device, used through its primary context. Obtain it with `get_device`."""

    def __init__(self, ordinal: int, handle: Any, context: Any, properties: DeviceProperties):
        self.ordinal = ordinal
        self.handle = handle
        self.context = context
        self.properties = properties
        self._context_address = int(context)
        self._driver = cuda_driver.driver_module()

    @property
    def arch(self) -> str:
        return self.properties.arch

    @property
    def name(self) -> str:
        return self.properties.name

    def __repr__(self) -> str:
        return f"<mlc cuda device {self.ordinal}: {self.properties.summary()}>"

    def activated(self) -> _ContextActivation:
        """Makes this device's context current for a `with` block, then restores the previous one.

        A small class rather than a generator-based context manager: it is entered on every
        call of a compiled function, where microseconds count.
        """
        return _ContextActivation(self)

    def synchronize(self) -> None:
        with self.activated():
            check(self._driver.cuCtxSynchronize(), f"synchronizing {self.properties.summary()}")

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of device memory."""
        with self.activated():
            return check(self._driver.cuMemGetInfo(), "querying device memory")


_DEVICES: dict[int, Device] = {}
_DEVICES_LOCK = threading.Lock()


def _initialize_driver() -> ModuleType:
    driver = cuda_driver.driver_module()
    try:
        result = driver.cuInit(0)
    except Exception as error:  # cuda-python raises its own error when libcuda is missing
        raise CudaError(f"the CUDA driver could not be loaded: {error}") from error
    check(result, "initializing the CUDA driver (cuInit)")
    return driver


class _ContextActivation:
    __slots__ = ("device", "pushed")

    def __init__(self, device: Device):
        self.device = device
        self.pushed = False

    def __enter__(self) -> Device:
        device = self.device
        current = check(device._driver.cuCtxGetCurrent(), "reading the current CUDA context")
        if int(current) != device._context_address:
            check(device._driver.cuCtxPushCurrent(device.context), f"activating the context of {device}")
            self.pushed = True
        return device

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if self.pushed:
            check(self.device._driver.cuCtxPopCurrent(), f"restoring the context replaced by {self.device}")


def device_count() -> int:
    """How many CUDA devices are visible; CudaError when the driver is missing."""
    driver = _initialize_driver()
    return check(driver.cuDeviceGetCount(), "counting CUDA devices")


def is_available() -> bool:
    """Whether a CUDA device can be used; never raises."""
    try:
        return device_count() > 0
    except Exception:
        return False


def _query_properties(driver: ModuleType, ordinal: int, handle: Any) -> DeviceProperties:
    attribute = driver.CUdevice_attribute

    def get(name: str) -> int:
        return check(
            driver.cuDeviceGetAttribute(getattr(attribute, name), handle),
            f"querying {name} of CUDA device {ordinal}",
        )

    raw_name = check(driver.cuDeviceGetName(256, handle), f"querying the name of CUDA device {ordinal}")
    return DeviceProperties(
        ordinal=ordinal,
        name=raw_name.split(b"\0", 1)[0].decode(errors="replace"),
        compute_capability=(
            get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
            get("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"),
        ),
        multiprocessor_count=get("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
        max_threads_per_block=get("CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
        max_block_dimensions=(
            get("CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X"),
            get("CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y"),
            get("CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z"),
        ),
        max_grid_dimensions=(
            get("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X"),
            get("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y"),
            get("CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z"),
        ),
        max_shared_memory_per_block=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK"),
        max_shared_memory_per_block_optin=get("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        warp_size=get("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
        total_memory_bytes=check(
            driver.cuDeviceTotalMem(handle), f"querying the memory of CUDA device {ordinal}"
        ),
        driver_version=check(driver.cuDriverGetVersion(), "querying the CUDA driver version"),
    )


def get_device(ordinal: int = 0) -> Device:
    """The device `ordinal`, its primary context retained on first use (process-wide)."""
    with _DEVICES_LOCK:
        device = _DEVICES.get(ordinal)
        if device is not None:
            return device
        driver = _initialize_driver()
        count = check(driver.cuDeviceGetCount(), "counting CUDA devices")
        if not 0 <= ordinal < count:
            raise CudaError(f"there is no CUDA device {ordinal}: {count} device(s) are visible")
        handle = check(driver.cuDeviceGet(ordinal), f"opening CUDA device {ordinal}")
        properties = _query_properties(driver, ordinal, handle)
        context = check(
            driver.cuDevicePrimaryCtxRetain(handle),
            f"retaining the primary context of {properties.summary()}",
        )
        device = Device(ordinal, handle, context, properties)
        _DEVICES[ordinal] = device
        return device
