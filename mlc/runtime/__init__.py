"""mlc's runtime: loads what the backend produced and runs host functions (it does not compile).

* `HostProgram` (host.py) runs a lowered host function many times, on a `CudaExecutor` (PTX,
  through the CUDA driver) or a `CpuExecutor` (native objects, through llvmlite's MCJIT):
  `HostProgram.for_cuda(module, ptx)`, `HostProgram.for_cpu(module, object_code)`.
* `plan.py` reads a host function into a flat plan once (`slots.py`: the plan's classes).
* `artifacts.py` writes and reads compiled programs (kernels and plan) as bytes, for the on-disk
  cache (`artifact_cache.py`) and saved bundles.
* `cuda.py` is the checked layer over the CUDA driver (devices, memory, modules, launches,
  events); `foreign_arrays.py` takes other libraries' CUDA arrays in place (array interface,
  DLPack, a fast path for PyTorch); `cpu.py` loads object files and calls their kernels.

Importing this package needs neither a GPU nor cuda-python; they are needed on first GPU use.
Nor does it import xDSL: `plan_host_function` (which reads IR) loads on first use, so that a
program loaded from the cache or a bundle runs without the compiler's modules. The CUDA layer's
names (`get_device`, `CudaModule`, ...) load `cuda.py` on first use too, so that a CPU program
loaded from the cache does not pay for it.
"""

from typing import Any

from mlc.errors import CudaError
from mlc.runtime.cpu_executor import CpuExecutor
from mlc.runtime.cuda_executor import CudaExecutor
from mlc.runtime.executor import Executor, LoadedKernel
from mlc.runtime.host import HostProgram
from mlc.runtime.host_memory import HostMemoryExecutor
from mlc.runtime.slots import HostPlan, HostProgramError

__all__ = [
    "CpuExecutor",
    "CudaError",
    "CudaExecutor",
    "CudaModule",
    "DeviceBuffer",
    "Executor",
    "HostMemoryExecutor",
    "HostPlan",
    "HostProgram",
    "HostProgramError",
    "LoadedKernel",
    "Stream",
    "get_device",
    "is_available",
    "plan_host_function",
]


_CUDA_NAMES = ("CudaModule", "DeviceBuffer", "Stream", "get_device", "is_available")


def __getattr__(name: str) -> Any:
    if name in _CUDA_NAMES:
        from mlc.runtime import cuda

        return getattr(cuda, name)
    if name == "plan_host_function":
        from mlc.runtime.plan import plan_host_function

        return plan_host_function
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
