"""`CpuExecutor`: runs a host program's `loop.launch`es as native CPU kernels.

Each kernel of the loaded code (`mlc/runtime/cpu.py`: MCJIT or a shared library) is called with
one pointer per buffer through ctypes; a kernel marked `mlc.cpu_programs` has its grid split over
the native pool (`native_pool.py`) or, where that cannot be built, the Python `ProgramPool`.
Buffers are numpy arrays (`HostMemoryExecutor`, host_memory.py); large results are recycled
(`ResultBlocks`, on huge pages from HUGE_PAGE_RESULT_BYTES on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from mlc.runtime.executor import Buffer, LoadedKernel
from mlc.runtime.host_memory import HostMemoryExecutor, host_buffer
from mlc.runtime.slots import CPU_LAUNCH, BufferSpec, KernelLaunch

if TYPE_CHECKING:
    from mlc.runtime.cpu import NativeCode, ProgramPool
    from mlc.runtime.native_pool import NativeProgramPool


class _CpuKernel(LoadedKernel):
    __slots__ = ("_call", "_pointers")

    def __init__(self, call: Callable[..., None], parameter_count: int):
        self._call = call
        self._pointers = [0] * parameter_count

    def set_pointer(self, parameter: int, pointer: int) -> None:
        self._pointers[parameter] = pointer

    def launch(self) -> None:
        self._call(*self._pointers)


class _ParallelCpuKernel(_CpuKernel):
    """A kernel whose grid is split over a ProgramPool: `launch` runs every share to completion."""

    __slots__ = ("_pool", "_programs")

    def __init__(self, call: Callable[..., None], parameter_count: int, pool: ProgramPool, programs: int):
        super().__init__(call, parameter_count)
        self._pool = pool
        self._programs = programs

    def launch(self) -> None:
        self._pool.run(self._call, self._pointers, self._programs)


class _NativeParallelCpuKernel(LoadedKernel):
    """A kernel whose grid the native pool runs: `launch` is one ctypes call, without the GIL."""

    __slots__ = ("_address", "_pointers", "_pool", "_programs")

    def __init__(self, address: int, parameter_count: int, pool: NativeProgramPool, programs: int):
        import ctypes

        self._address = address
        self._pointers = (ctypes.c_void_p * parameter_count)()
        self._pool = pool
        self._programs = programs

    def set_pointer(self, parameter: int, pointer: int) -> None:
        self._pointers[parameter] = pointer

    def launch(self) -> None:
        self._pool.run(self._address, self._pointers, self._programs)


def _result_block(spec: BufferSpec, alignment: int) -> np.ndarray:
    """A new block for `ResultBlocks`: on huge pages from HUGE_PAGE_RESULT_BYTES on
    (`huge_page_array`), else (or where the mapping is refused) numpy's, as `host_buffer`."""
    from mlc.runtime.cpu import HUGE_PAGE_RESULT_BYTES, huge_page_array

    if spec.nbytes >= HUGE_PAGE_RESULT_BYTES:
        try:
            return huge_page_array(spec.nbytes, alignment).view(spec.dtype).reshape(spec.shape)  # type: ignore[attr-defined]
        except OSError:  # no address space for a mapping of its own: numpy's, or its OutOfMemoryError
            pass
    return host_buffer(spec, alignment)


class CpuExecutor(HostMemoryExecutor):
    """Runs `loop.launch`es: each kernel of a CpuModule is called with one pointer per buffer;
    a kernel marked `mlc.cpu_programs` has its grid split over `num_threads` threads (default:
    `MLC_NUM_THREADS`, else the available cores; the pool starts with the first such kernel).
    The pool is the native one (`mlc/runtime/native_pool.py`) where it can be built and the
    kernel's pointers are few enough for it, else the Python `ProgramPool`. Results of
    RECYCLED_RESULT_BYTES or more come from the executor's `ResultBlocks` (mlc/runtime/cpu.py)."""

    launch_op_name = CPU_LAUNCH

    def __init__(self, module: NativeCode, num_threads: int | None = None):
        from mlc.runtime.cpu import RECYCLED_RESULT_BYTES, ResultBlocks, default_thread_count

        self.module = module
        self.num_threads = default_thread_count() if num_threads is None else num_threads
        self._pool: ProgramPool | None = None
        self._native_pool: NativeProgramPool | None = None
        self._results = ResultBlocks()
        self._recycled_bytes = RECYCLED_RESULT_BYTES

    def allocate_result(self, spec: BufferSpec, alignment: int) -> Buffer:
        """Large results reuse the memory of the program's dropped results (`ResultBlocks`: no
        page faults in the kernel that writes them), the largest on huge pages (`huge_page_array`);
        small ones are numpy's."""
        if spec.nbytes < self._recycled_bytes:
            return host_buffer(spec, alignment)
        return self._results.take((spec, alignment), lambda: _result_block(spec, alignment))  # type: ignore[return-value]

    def load_kernel(self, launch: KernelLaunch) -> LoadedKernel:
        count = len(launch.slots)
        if launch.programs is None or launch.programs < 2 or self.num_threads < 2:
            return _CpuKernel(self.module.function(launch.kernel, count).raw, count)
        from mlc.runtime.cpu import PROGRAMS_SUFFIX, ProgramPool, program_range_function
        from mlc.runtime.native_pool import MAX_POINTERS, NativeProgramPool, native_pool_library

        if count <= MAX_POINTERS:
            if self._native_pool is None:
                library = native_pool_library()
                if library is not None:
                    self._native_pool = NativeProgramPool(library, self.num_threads)
            if self._native_pool is not None:
                address = self.module.address_of(launch.kernel + PROGRAMS_SUFFIX)
                return _NativeParallelCpuKernel(address, count, self._native_pool, launch.programs)
        if self._pool is None:
            self._pool = ProgramPool(self.num_threads)
        call = program_range_function(self.module, launch.kernel, count)
        return _ParallelCpuKernel(call, count, self._pool, launch.programs)
