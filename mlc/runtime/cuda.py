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
  retained devices (`cuda_devices._DEVICES`) is the layer's only mutable global: created lazily, once per
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
* This layer is the bottom of the runtime and imports none of its other modules:
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

The layer lives in five modules; this one gathers their names, and is where the rest of mlc
imports them from (`from mlc.runtime import cuda`):

| module | what |
| --- | --- |
| `cuda_driver.py` | `driver_module`, `check`, the driver's errors, releasing a resource in its context |
| `cuda_devices.py` | `get_device`, `Device`, `DeviceProperties`, `device_count`, `is_available` |
| `cuda_streams.py` | `Stream`, `Event`, `time_on_device`, `CapturedGraph` |
| `cuda_memory.py` | `DeviceBuffer`, the host/device copies |
| `cuda_modules.py` | `CudaModule` (PTX, cubins), `CudaFunction` (launches), `KernelArguments` |

Tests that fake the driver patch the modules that own the state, not this one:
`cuda_driver.driver_module` (which `driver_module` here calls, looked up at each call, so that
this module's callers get the fake too), `cuda_driver.DRIVER_DEVICE_NODES` and
`cuda_devices._DEVICES`.
"""

from __future__ import annotations

from types import ModuleType

from mlc.errors import CudaError, MlcError  # noqa: F401 - both were defined or imported here before
from mlc.runtime import cuda_driver
from mlc.runtime.cuda_driver import (
    DRIVER_DEVICE_NODES,
    check,
    describe_error,
    error_from_result,
)
from mlc.runtime.cuda_devices import (
    Device,
    DeviceProperties,
    device_count,
    get_device,
    is_available,
)
from mlc.runtime.cuda_streams import (
    CapturedGraph,
    Event,
    LEGACY_STREAM_EXCHANGE_VALUE,
    Stream,
    time_on_device,
)
from mlc.runtime.cuda_memory import (
    DeviceBuffer,
    copy_device_to_device,
    copy_device_to_host,
    copy_host_to_device,
)
from mlc.runtime.cuda_modules import (
    CudaFunction,
    CudaModule,
    KernelArguments,
    format_dimensions,
    launch_dimensions,
    ptx_entry_names,
)


def driver_module() -> ModuleType:
    """`cuda.bindings.driver` (see `cuda_driver.driver_module`), looked up on `cuda_driver` at each
    call so that a fake driver installed there serves this module's callers too."""
    return cuda_driver.driver_module()


__all__ = [
    "CapturedGraph",
    "check",
    "copy_device_to_device",
    "copy_device_to_host",
    "copy_host_to_device",
    "CudaError",
    "CudaFunction",
    "CudaModule",
    "describe_error",
    "Device",
    "device_count",
    "DeviceBuffer",
    "DeviceProperties",
    "DRIVER_DEVICE_NODES",
    "driver_module",
    "error_from_result",
    "Event",
    "format_dimensions",
    "get_device",
    "is_available",
    "KernelArguments",
    "launch_dimensions",
    "LEGACY_STREAM_EXCHANGE_VALUE",
    "MlcError",
    "ptx_entry_names",
    "Stream",
    "time_on_device",
]
