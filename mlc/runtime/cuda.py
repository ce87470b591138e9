"""A thin, checked layer over the CUDA driver API (`cuda.bindings.driver`, cuda-python 12.6+/13).

What it gives: devices with their properties (`get_device`), device memory (`DeviceBuffer`),
PTX modules (`CudaModule`), kernel launches
(`CudaFunction.launch`, with `KernelArguments` built once and reused), streams and events
(`Stream`, `Event`, `time_on_device`).

Design.
* cuda-python is imported lazily, on the first use of a device: importing mlc never needs a GPU
  or even cuda-python. On Linux, a machine with no NVIDIA driver device node (`/dev/nvidiactl`,
  WSL's `/dev/dxg`, Jetson's `/dev/nvhost-ctrl-gpu` or `/dev/nvgpu/igpu0/ctrl`) has no usable
  device, and says so without importing cuda-python and failing to load libcuda (about 100 ms:
  what `device="auto"` would otherwise cost every compile, cached ones included, on a CPU machine).
* Every driver call goes through `check`, which raises `CudaError` with the driver's error name
  and string (`cuGetErrorName`, `cuGetErrorString`) and says what was being done: a failed launch
  names the kernel, its grid, block and shared memory, and adds what the kernel and device allow.
* Each device is used through its *primary context* (`cuDevicePrimaryCtxRetain`), the one the
  CUDA runtime, PyTorch and CuPy use too, so memory moves freely between them. The table of
  retained devices (`_DEVICES`) is the module's only mutable global: created lazily, once per
  device and process, under a lock, and never released (the driver releases it at exit).
  Operations make the context current only for their own duration (`Device.activated`), so the
  calling thread's current context is what it was before, whatever other libraries expect.
* Work is enqueued on a `Stream`, by default the legacy default stream (handle 0), which orders
  itself against every blocking stream, PyTorch's default stream included (not against
  non-blocking streams such as PyTorch's side streams: `call_streams.py` says which stream a
  compiled function's call takes). Copies between
  pageable host memory and the device are synchronous for the host, as the driver makes them.
* Launch overhead is kept small: `KernelArguments` holds the `kernelParams` array (one 8-byte cell
  per parameter and the array of the cells' addresses) for the lifetime of a launch site; a call
  only rewrites the cells whose pointers changed. The driver copies the parameters when a kernel
  is enqueued, so the cells may be rewritten right after `cuLaunchKernel` returns.
* Memory and modules are freed by `close()` or when garbage collected (`weakref.finalize`),
  pushing their context for the call, so a collection on any thread is safe.
* This module is the bottom of the runtime and imports none of its other modules:
  `foreign_arrays.py` (other libraries' CUDA arrays) and `host.py` build on it. A kernel launched
  directly takes a foreign array as the view `foreign_arrays.device_array_view` gives.

Preconditions and limits.
* Kernel parameters are device pointers or scalars of at most 8 bytes (numpy scalars); structs by
  value are not supported.
* `DeviceBuffer.__cuda_array_interface__` describes bf16 as `<V2` (the interface has no bf16
  type code); consumers that need bf16 should take the pointer and reinterpret.
* A kernel fault (e.g. an illegal address) is reported by the next synchronizing call, not by the
  launch that caused it, and it poisons the context for the rest of the process (a CUDA rule).
  `CUDA_LAUNCH_BLOCKING=1` makes every launch synchronous, so the failing launch reports it.
* Freeing device memory (`cuMemFree`) synchronizes the device: reuse buffers in loops.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from mlc.errors import CudaError, MlcError  # noqa: F401 - both were defined or imported here before


# --------------------------------------------------------------------------------------------
# The driver module and error checking
# --------------------------------------------------------------------------------------------


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


def format_dimensions(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def launch_dimensions(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    """`n`, `(x,)`, `(x, y)` or `(x, y, z)` as three dimensions."""
    dimensions = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if not 1 <= len(dimensions) <= 3:
        raise ValueError(f"{what} has one to three dimensions, got {value!r}")
    return dimensions + (1,) * (3 - len(dimensions))  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------
# Devices and their primary contexts
# --------------------------------------------------------------------------------------------


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
        self._driver = driver_module()

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
    driver = driver_module()
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


# --------------------------------------------------------------------------------------------
# Streams and events
# --------------------------------------------------------------------------------------------

LEGACY_STREAM_EXCHANGE_VALUE = 1
"""How `__cuda_array_interface__` (v3) and DLPack name the legacy default stream (0 is invalid)."""


class Stream:
    """A CUDA stream. `Stream.legacy_default()` is the default (handle 0); `Stream.create()` a new one."""

    def __init__(self, device: Device, handle: Any, owned: bool):
        self.device = device
        self.handle = handle
        self._driver = driver_module()
        self._wait_event: Any = None
        self._finalizer = (
            weakref.finalize(self, _destroy_stream, self._driver, device.context, handle) if owned else None
        )
        if self._finalizer is not None:
            self._finalizer.atexit = False

    @classmethod
    def legacy_default(cls, device: Device | None = None) -> Stream:
        device = device or get_device()
        return cls(device, driver_module().CUstream(0), owned=False)

    @classmethod
    def create(cls, device: Device | None = None, non_blocking: bool = True) -> Stream:
        """A new stream; a non-blocking one does not order itself against the legacy default stream."""
        device = device or get_device()
        driver = driver_module()
        flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING) if non_blocking else 0
        with device.activated():
            handle = check(
                driver.cuStreamCreate(flags), f"creating a stream on {device.properties.summary()}"
            )
        return cls(device, handle, owned=True)

    @property
    def is_legacy_default(self) -> bool:
        return int(self.handle) == 0

    @property
    def exchange_value(self) -> int:
        """This stream as DLPack's `stream` argument and the array interface's `stream` key want it."""
        handle = int(self.handle)
        return LEGACY_STREAM_EXCHANGE_VALUE if handle == 0 else handle

    def synchronize(self) -> None:
        with self.device.activated():
            check(self._driver.cuStreamSynchronize(self.handle), "synchronizing a CUDA stream")

    def wait_for(self, foreign_stream: int | None) -> None:
        """Orders this stream after the work enqueued so far on `foreign_stream`.

        `foreign_stream` is a stream as the array interface and DLPack exchange them: None (no
        synchronization needed), 1 (legacy default), 2 (per-thread default) or a handle.
        """
        if foreign_stream is None or foreign_stream == self.exchange_value:
            return
        with self.device.activated():
            if self._wait_event is None:
                flags = int(self._driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
                self._wait_event = check(
                    self._driver.cuEventCreate(flags), "creating a stream-ordering event"
                )
                finalizer = weakref.finalize(
                    self, _destroy_event, self._driver, self.device.context, self._wait_event
                )
                finalizer.atexit = False
            foreign = self._driver.CUstream(int(foreign_stream))
            check(
                self._driver.cuEventRecord(self._wait_event, foreign),
                f"recording an event on stream {foreign_stream}",
            )
            check(
                self._driver.cuStreamWaitEvent(self.handle, self._wait_event, 0),
                f"ordering our stream after stream {foreign_stream}",
            )

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


class Event:
    """A CUDA event, for timing work on a stream (`elapsed_milliseconds_since`) or waiting for it."""

    def __init__(self, device: Device | None = None, timing: bool = True):
        self.device = device or get_device()
        self._driver = driver_module()
        flags = 0 if timing else int(self._driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        with self.device.activated():
            self.handle = check(self._driver.cuEventCreate(flags), "creating a CUDA event")
        self._finalizer = weakref.finalize(
            self, _destroy_event, self._driver, self.device.context, self.handle
        )
        self._finalizer.atexit = False

    def record(self, stream: Stream | None = None) -> None:
        handle = self._driver.CUstream(0) if stream is None else stream.handle
        with self.device.activated():
            check(self._driver.cuEventRecord(self.handle, handle), "recording a CUDA event")

    def synchronize(self) -> None:
        with self.device.activated():
            check(self._driver.cuEventSynchronize(self.handle), "waiting for a CUDA event")

    def elapsed_milliseconds_since(self, start: Event) -> float:
        """Milliseconds between `start` and this event (both recorded; waits for this one)."""
        self.synchronize()
        with self.device.activated():
            return float(
                check(
                    self._driver.cuEventElapsedTime(start.handle, self.handle),
                    "reading the time between two events",
                )
            )

    def close(self) -> None:
        self._finalizer()


def time_on_device(
    function: Callable[[], object],
    repetitions: int = 100,
    warmup: int = 10,
    stream: Stream | None = None,
    device: Device | None = None,
) -> list[float]:
    """Milliseconds of device time of each of `repetitions` calls of `function`, after `warmup`.

    Each call is bracketed by two events recorded on `stream`: what is measured is the device's
    time between them, so work `function` enqueues elsewhere is not timed, and where the kernels
    are shorter than the host's time to enqueue them, the device's wait for the host is included.
    """
    device = device or (stream.device if stream is not None else get_device())
    for _ in range(warmup):
        function()
    events = [(Event(device), Event(device)) for _ in range(repetitions)]
    for start, end in events:
        start.record(stream)
        function()
        end.record(stream)
    return [end.elapsed_milliseconds_since(start) for start, end in events]


def _destroy_stream(driver: ModuleType, context: Any, handle: Any) -> None:
    _call_in_context(driver, context, lambda: driver.cuStreamDestroy(handle), "destroying a stream")


class CapturedGraph:
    """The kernel launches `record` enqueues on `stream`, captured once into a CUDA graph and
    instantiated; `launch()` replays them all with one driver call.

    Capture records each launch with the parameter values it had (the pointers), so a graph is
    valid for exactly those buffers: callers keep one graph per set of pointers. The capture
    stream must not be the legacy default stream (which cannot be captured); capture is
    thread-local, so other threads may keep using the device meanwhile. A graph may be replayed
    on any stream of the device (`launch(stream)`). The device's context must be current.
    """

    def __init__(self, stream: Stream, record: Callable[[], None]):
        if stream.is_legacy_default:
            raise CudaError("a CUDA graph cannot be captured on the legacy default stream; use Stream.create()")
        driver = driver_module()
        self.stream = stream
        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        check(driver.cuStreamBeginCapture(stream.handle, mode), "beginning a CUDA graph capture")
        try:
            record()
        finally:
            graph = check(driver.cuStreamEndCapture(stream.handle), "ending a CUDA graph capture")
        try:
            self.handle = check(driver.cuGraphInstantiate(graph, 0), "instantiating a CUDA graph")
        finally:
            check(driver.cuGraphDestroy(graph), "destroying a captured CUDA graph")
        self._launch = driver.cuGraphLaunch
        self._finalizer = weakref.finalize(self, _destroy_graph, driver, stream.device.context, self.handle)
        self._finalizer.atexit = False

    def launch(self, stream: Stream | None = None) -> None:
        """Replays the graph on `stream` (default: the stream it was captured on)."""
        handle = (stream or self.stream).handle
        check(self._launch(self.handle, handle), "launching a CUDA graph")


def _destroy_graph(driver: ModuleType, context: Any, handle: Any) -> None:
    _call_in_context(driver, context, lambda: driver.cuGraphExecDestroy(handle), "destroying a CUDA graph")


def _destroy_event(driver: ModuleType, context: Any, handle: Any) -> None:
    _call_in_context(driver, context, lambda: driver.cuEventDestroy(handle), "destroying an event")


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


def _call_in_context(
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


# --------------------------------------------------------------------------------------------
# Device memory
# --------------------------------------------------------------------------------------------


def copy_host_to_device(destination: int, source: np.ndarray, stream: Stream) -> None:
    """Copies the C-contiguous `source` to device memory at `destination` (host-synchronous)."""
    if source.nbytes == 0:
        return
    driver = driver_module()
    with stream.device.activated():
        check(
            driver.cuMemcpyHtoDAsync(destination, source.ctypes.data, source.nbytes, stream.handle),
            f"copying {source.nbytes} bytes from the host to device memory at {destination:#x}",
        )


def copy_device_to_host(destination: np.ndarray, source: int, stream: Stream) -> None:
    """Copies device memory at `source` into the C-contiguous, writable `destination`.

    Into pageable memory the driver returns only once the copy is done, so the data is ready.
    """
    if destination.nbytes == 0:
        return
    driver = driver_module()
    with stream.device.activated():
        check(
            driver.cuMemcpyDtoHAsync(destination.ctypes.data, source, destination.nbytes, stream.handle),
            f"copying {destination.nbytes} bytes from device memory at {source:#x} to the host",
        )


def copy_device_to_device(destination: int, source: int, nbytes: int, stream: Stream) -> None:
    if nbytes == 0:
        return
    driver = driver_module()
    with stream.device.activated():
        check(
            driver.cuMemcpyDtoDAsync(destination, source, nbytes, stream.handle),
            f"copying {nbytes} bytes on the device from {source:#x} to {destination:#x}",
        )


def _free_memory(driver: ModuleType, context: Any, pointer: int) -> None:
    _call_in_context(
        driver, context, lambda: driver.cuMemFree(pointer), f"freeing device memory at {pointer:#x}"
    )


class DeviceBuffer:
    """A contiguous row-major array in device memory that mlc allocated (`cuMemAlloc`).

    Allocations are aligned to at least 256 bytes. The memory is freed by `close()` or when the
    buffer is garbage collected. `stream` is the stream its producers enqueue work on; the array
    interface reports it, so that consumers such as PyTorch order themselves after that work.
    """

    ALIGNMENT = 256

    def __init__(
        self,
        shape: Sequence[int],
        dtype: np.dtype | type,
        device: Device | None = None,
        stream: Stream | None = None,
    ):
        self.device = device or get_device()
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        self.stream = stream or Stream.legacy_default(self.device)
        self._driver = driver_module()
        self._pointer = 0
        self._finalizer: weakref.finalize | None = None
        if self.nbytes == 0:  # cuMemAlloc rejects 0 bytes; an empty array needs no memory
            return
        with self.device.activated():
            pointer = check(
                self._driver.cuMemAlloc(self.nbytes),
                f"allocating {self.nbytes} bytes for a {self.dtype.name} array of shape {self.shape} "
                f"on {self.device.properties.summary()}",
            )
        self._pointer = int(pointer)
        self._finalizer = weakref.finalize(
            self, _free_memory, self._driver, self.device.context, self._pointer
        )
        self._finalizer.atexit = False  # the process is ending: the driver reclaims everything

    @classmethod
    def empty(
        cls, shape: Sequence[int], dtype: np.dtype | type, device: Device | None = None
    ) -> DeviceBuffer:
        return cls(shape, dtype, device)

    @classmethod
    def zeros(
        cls, shape: Sequence[int], dtype: np.dtype | type, device: Device | None = None
    ) -> DeviceBuffer:
        buffer = cls(shape, dtype, device)
        buffer.fill_zero()
        return buffer

    @classmethod
    def from_numpy(
        cls, array: np.ndarray, device: Device | None = None, stream: Stream | None = None
    ) -> DeviceBuffer:
        buffer = cls(array.shape, array.dtype, device, stream)
        buffer.copy_from_host(array)
        return buffer

    @property
    def pointer(self) -> int:
        if self._finalizer is not None and not self._finalizer.alive:
            raise CudaError(f"{self!r} was closed; its device memory is freed")
        return self._pointer

    @property
    def closed(self) -> bool:
        return self._finalizer is not None and not self._finalizer.alive

    def close(self) -> None:
        """Frees the device memory now (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"at {self._pointer:#x}"
        return f"<DeviceBuffer {self.dtype.name}{list(self.shape)} {state} on device {self.device.ordinal}>"

    def _check_host_array(self, array: np.ndarray, what: str) -> None:
        if array.dtype != self.dtype or array.size != self.size:
            raise ValueError(
                f"cannot copy {what} a {array.dtype.name} array of shape {array.shape}: the device "
                f"buffer holds {self.dtype.name} of shape {self.shape}"
            )

    def copy_from_host(self, array: np.ndarray, stream: Stream | None = None) -> None:
        """Copies `array` (same dtype and element count) into this buffer."""
        self._check_host_array(array, "from")
        copy_host_to_device(
            self.pointer if self.nbytes else 0, np.ascontiguousarray(array), stream or self.stream
        )

    def copy_to_host(self, out: np.ndarray | None = None, stream: Stream | None = None) -> np.ndarray:
        """This buffer as a new numpy array (or written into `out`, C-contiguous, same dtype and size)."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        else:
            self._check_host_array(out, "into")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("the host array to copy into must be C-contiguous and writable")
        copy_device_to_host(out, self.pointer if self.nbytes else 0, stream or self.stream)
        return out

    def to_numpy(self) -> np.ndarray:
        return self.copy_to_host()

    def copy_from_device(self, source_pointer: int, nbytes: int, stream: Stream | None = None) -> None:
        """Copies `nbytes` from device memory at `source_pointer` into this buffer."""
        if nbytes != self.nbytes:
            raise ValueError(f"cannot copy {nbytes} bytes into {self!r}, which holds {self.nbytes}")
        copy_device_to_device(self.pointer if nbytes else 0, source_pointer, nbytes, stream or self.stream)

    def fill_zero(self, stream: Stream | None = None) -> None:
        if self.nbytes == 0:
            return
        stream = stream or self.stream
        with self.device.activated():
            check(
                self._driver.cuMemsetD8Async(self.pointer, 0, self.nbytes, stream.handle), f"zeroing {self!r}"
            )

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.pointer, False),
            "strides": None,
            "version": 3,
            "stream": self.stream.exchange_value,
        }


# --------------------------------------------------------------------------------------------
# Modules, functions and launches
# --------------------------------------------------------------------------------------------

_JIT_LOG_BYTES = 64 * 1024


def _ptx_directive(ptx: str, directive: str) -> str | None:
    match = re.search(rf"^\s*\.{directive}\s+([\w.]+)", ptx, re.MULTILINE)
    return match.group(1) if match else None


def ptx_entry_names(ptx: str) -> list[str]:
    """The kernels (`.entry`) that a PTX text defines."""
    return re.findall(r"\.entry\s+([\w$.]+)\s*\(", ptx)


def _unload_module(driver: ModuleType, context: Any, handle: Any) -> None:
    _call_in_context(driver, context, lambda: driver.cuModuleUnload(handle), "unloading a CUDA module")


def _decode_log(buffer: bytearray) -> str:
    return bytes(buffer).split(b"\0", 1)[0].decode(errors="replace").strip()


class CudaModule:
    """PTX loaded into a device's context (`cuModuleLoadDataEx`; the driver JIT-compiles it).

    A load failure raises CudaError with the JIT's error log and, when the PTX targets a newer
    architecture or ISA than the device and driver take, says so. `info_log` keeps the JIT's
    informational output of a successful load.

    Compiled code (the compile cache's use): with `keep_cubin`, the PTX is JIT-compiled through
    the driver's linker (`cuLinkCreate`, `cuLinkAddData`, `cuLinkComplete`) and the resulting
    cubin kept as `cubin` and loaded; given `cubin`, that image is loaded (`cuModuleLoadData`: no
    JIT, which takes 30-200 ms for mlc's larger kernels when the driver's own compute cache does
    not have them). Either falls back to loading the PTX when the driver refuses (a cubin for
    another GPU or from a newer driver; no linker in the driver), so the PTX stays the truth.
    """

    def __init__(
        self,
        ptx: str | bytes,
        device: Device | None = None,
        name: str = "<ptx>",
        cubin: bytes | None = None,
        keep_cubin: bool = False,
    ):
        self.device = device or get_device()
        self.name = name
        self.ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
        self._driver = driver_module()
        self._functions: dict[str, CudaFunction] = {}
        self.cubin: bytes | None = None
        """The compiled image the module was loaded from, when it was (see the class docstring)."""
        self.handle, self.info_log = self._load_compiled(cubin, keep_cubin) or self._load()
        self._finalizer = weakref.finalize(
            self, _unload_module, self._driver, self.device.context, self.handle
        )
        self._finalizer.atexit = False

    def _load(self) -> tuple[Any, str]:
        driver = self._driver
        image = self.ptx.encode() + b"\0"
        error_log, info_log = bytearray(_JIT_LOG_BYTES), bytearray(_JIT_LOG_BYTES)
        option = driver.CUjit_option
        options = [
            option.CU_JIT_ERROR_LOG_BUFFER,
            option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            option.CU_JIT_INFO_LOG_BUFFER,
            option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        ]
        values = [error_log, _JIT_LOG_BYTES, info_log, _JIT_LOG_BYTES]
        with self.device.activated():
            error, handle = driver.cuModuleLoadDataEx(image, len(options), options, values)
        if error:
            raise error_from_result(error, self._describe_load(), self._load_hint(_decode_log(error_log)))
        return handle, _decode_log(info_log)

    def _load_compiled(self, cubin: bytes | None, keep_cubin: bool) -> tuple[Any, str] | None:
        """The module loaded from `cubin`, or from a cubin linked now (`keep_cubin`); None when
        there is none or the driver refuses it, and the PTX is to be loaded instead."""
        if cubin is None and not keep_cubin:
            return None
        with self.device.activated():
            image = cubin if cubin is not None else self._link_cubin()
            if image is None:
                return None
            error, handle = self._driver.cuModuleLoadData(image)
        if error:
            return None
        self.cubin = image
        return handle, ""

    def _link_cubin(self) -> bytes | None:
        """The PTX compiled by the driver's JIT linker for the current context's device, or None."""
        import ctypes

        driver = self._driver
        if not hasattr(driver, "cuLinkCreate"):
            return None
        image = self.ptx.encode() + b"\0"
        error, state = driver.cuLinkCreate(0, [], [])
        if error:
            return None
        try:
            (error,) = driver.cuLinkAddData(
                state, driver.CUjitInputType.CU_JIT_INPUT_PTX, image, len(image), self.name.encode(), 0, [], []
            )
            if error:
                return None
            error, address, size = driver.cuLinkComplete(state)
            # The image belongs to the link state: copied before it is destroyed.
            return None if error else ctypes.string_at(int(address), size)
        finally:
            driver.cuLinkDestroy(state)

    def _describe_load(self) -> str:
        target = _ptx_directive(self.ptx, "target") or "no .target"
        version = _ptx_directive(self.ptx, "version") or "no .version"
        return (
            f"loading PTX module {self.name} ({len(self.ptx)} characters, .target {target}, "
            f".version {version}) on {self.device.properties.summary()}"
        )

    def _load_hint(self, jit_log: str) -> str:
        lines = []
        target = _ptx_directive(self.ptx, "target")
        arch_number = re.match(r"sm_(\d+)", target or "")
        device_number = self.device.properties.compute_capability
        if arch_number and int(arch_number.group(1)) > device_number[0] * 10 + device_number[1]:
            lines.append(
                f"the PTX targets {target}, newer than the device ({self.device.arch}); compile for {self.device.arch}"
            )
        version = self.device.properties.driver_version
        lines.append(f"driver version {version // 1000}.{(version % 1000) // 10}")
        lines.append("JIT log:" + ("\n  " + "\n  ".join(jit_log.splitlines()) if jit_log else " (empty)"))
        return "\n".join(lines)

    def function(self, name: str) -> CudaFunction:
        """The kernel `name` of this module (looked up once, then cached)."""
        function = self._functions.get(name)
        if function is not None:
            return function
        with self.device.activated():
            error, handle = self._driver.cuModuleGetFunction(self.handle, name.encode())
        if error:
            defined = ", ".join(ptx_entry_names(self.ptx)) or "none"
            raise error_from_result(
                error,
                f"looking up kernel '{name}' in PTX module {self.name}",
                f"the PTX defines the kernels: {defined}",
            )
        function = CudaFunction(self, name, handle)
        self._functions[name] = function
        return function

    def close(self) -> None:
        """Unloads the module; its functions must not be launched afterwards."""
        self._functions.clear()
        self._finalizer()


class KernelArguments:
    """The `kernelParams` of a launch site: one 8-byte cell per parameter and the cells' addresses.

    Build it once per launch site and argument set, then change individual cells between launches
    (`set_pointer`, `set_scalar`); `address` is what `cuLaunchKernel` receives.
    """

    __slots__ = ("count", "address", "_cells", "_addresses", "_owners")

    def __init__(self, count: int):
        self.count = count
        self._cells = np.zeros(max(count, 1), dtype=np.uint64)
        base = self._cells.ctypes.data
        self._addresses = np.array([base + 8 * index for index in range(max(count, 1))], dtype=np.uint64)
        self.address = self._addresses.ctypes.data if count else 0
        self._owners: list[object] = []

    def set_pointer(self, index: int, pointer: int) -> None:
        self._cells[index] = pointer

    def pointer(self, index: int) -> int:
        return int(self._cells[index])

    def set_scalar(self, index: int, value: np.generic) -> None:
        raw = np.asarray(value).tobytes()
        if len(raw) > 8:
            raise ValueError(f"kernel parameter #{index}: scalars of more than 8 bytes are not supported")
        cell = self._cells.view(np.uint8)[8 * index : 8 * index + 8]
        cell[:] = 0
        cell[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)

    @classmethod
    def from_values(cls, values: Sequence[object]) -> KernelArguments:
        """Parameters from device memory and numpy scalars.

        Device memory is anything with an integer `pointer` attribute, kept alive as long as the
        arguments: a `DeviceBuffer`, or another library's CUDA array as
        `mlc.runtime.foreign_arrays.device_array_view(array, stream=...)` gives it (which also
        orders the array's producer before the stream).
        """
        arguments = cls(len(values))
        for index, value in enumerate(values):
            if isinstance(value, np.generic):
                arguments.set_scalar(index, value)
            elif isinstance(value, (bool, int, float)):
                raise TypeError(
                    f"kernel parameter #{index} is a Python {type(value).__name__}: pass a numpy scalar "
                    "of the parameter's type (e.g. np.int32(n)) so that its size is explicit"
                )
            elif isinstance(pointer := getattr(value, "pointer", None), int):
                arguments.set_pointer(index, pointer)
                arguments._owners.append(value)
            else:
                raise TypeError(
                    f"kernel parameter #{index} of type {type(value).__name__} is neither a device array "
                    "nor a numpy scalar (pass a DeviceBuffer, or another library's CUDA array as "
                    "mlc.runtime.foreign_arrays.device_array_view(array) gives it)"
                )
        return arguments


class CudaFunction:
    """A kernel of a `CudaModule`. `launch` enqueues it; `enqueue` is the prepared fast path."""

    def __init__(self, module: CudaModule, name: str, handle: Any):
        self.module = module
        self.name = name
        self.handle = handle
        self.device = module.device
        self._driver = module._driver
        self._launch_kernel = self._driver.cuLaunchKernel

    def attribute(self, name: str) -> int:
        """A `CU_FUNC_ATTRIBUTE_*` value, e.g. `attribute("MAX_THREADS_PER_BLOCK")`."""
        attribute = getattr(self._driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        with self.device.activated():
            return check(
                self._driver.cuFuncGetAttribute(attribute, self.handle),
                f"querying {name} of kernel '{self.name}'",
            )

    def allow_dynamic_shared_memory(self, size: int) -> None:
        """Lets launches give each block `size` bytes of dynamic shared memory (above 48 KiB the
        driver requires the kernel to opt in)."""
        attribute = self._driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        with self.device.activated():
            check(self._driver.cuFuncSetAttribute(self.handle, attribute, size), f"allowing kernel '{self.name}' {size} bytes of dynamic shared memory")

    @property
    def max_threads_per_block(self) -> int:
        return self.attribute("MAX_THREADS_PER_BLOCK")

    def describe_launch(self, grid: Sequence[int], block: Sequence[int], shared_memory_bytes: int) -> str:
        return (
            f"kernel '{self.name}' with grid {format_dimensions(grid)}, block {format_dimensions(block)} "
            f"and {shared_memory_bytes} bytes of dynamic shared memory on {self.device.properties.summary()}"
        )

    def launch(
        self,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        arguments: KernelArguments | Sequence[object] = (),
        stream: Stream | None = None,
        shared_memory_bytes: int = 0,
    ) -> None:
        """Enqueues the kernel on `stream` (default: the legacy default stream)."""
        grid3, block3 = launch_dimensions(grid, "grid"), launch_dimensions(block, "block")
        handle = self._driver.CUstream(0) if stream is None else stream.handle
        with self.device.activated():
            if not isinstance(arguments, KernelArguments):
                arguments = KernelArguments.from_values(arguments)
            self.enqueue(grid3, block3, arguments, handle, shared_memory_bytes)

    def enqueue(
        self,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        arguments: KernelArguments,
        stream_handle: Any,
        shared_memory_bytes: int = 0,
    ) -> None:
        """`cuLaunchKernel` itself; the device's context must be current (`Device.activated`)."""
        (error,) = self._launch_kernel(
            self.handle,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            shared_memory_bytes,
            stream_handle,
            arguments.address,
            0,
        )
        if error:
            raise error_from_result(
                error,
                "launching " + self.describe_launch(grid, block, shared_memory_bytes),
                self._launch_hint(grid, block, shared_memory_bytes),
            )

    def _launch_hint(self, grid: Sequence[int], block: Sequence[int], shared_memory_bytes: int) -> str:
        """What the kernel and device allow, for the configuration that failed."""
        properties = self.device.properties
        hints = []
        threads = block[0] * block[1] * block[2]
        try:
            limit = self.attribute("MAX_THREADS_PER_BLOCK")
            registers = self.attribute("NUM_REGS")
            static_shared = self.attribute("SHARED_SIZE_BYTES")
        except CudaError:  # the context may be unusable after a fault; report what we know
            limit, registers, static_shared = properties.max_threads_per_block, None, None
        if threads > limit:
            usage = f" (it uses {registers} registers per thread)" if registers is not None else ""
            hints.append(f"the block has {threads} threads; the kernel allows at most {limit}{usage}")
        for axis, size, most in zip("xyz", block, properties.max_block_dimensions):
            if size > most:
                hints.append(f"block size along {axis} is {size}; the device allows at most {most}")
        for axis, size, most in zip("xyz", grid, properties.max_grid_dimensions):
            if size > most:
                hints.append(f"grid size along {axis} is {size}; the device allows at most {most}")
        if (
            static_shared is not None
            and static_shared + shared_memory_bytes > properties.max_shared_memory_per_block_optin
        ):
            hints.append(
                f"the kernel needs {static_shared + shared_memory_bytes} bytes of shared memory; the "
                f"device allows at most {properties.max_shared_memory_per_block_optin} per block"
            )
        if not hints:
            hints.append(
                "if an earlier kernel faulted, this error is its echo: rerun with CUDA_LAUNCH_BLOCKING=1"
            )
        return "\n".join(hints)
