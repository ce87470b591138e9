"""`CpuExecutor`: runs a host program's `loop.launch`es as native CPU kernels.

Each kernel of the loaded code (`mlc/runtime/cpu.py`: MCJIT or a shared library) is called with
one pointer per buffer through ctypes; a kernel marked `mlc.cpu_programs` has its grid split over
the native pool (`native_pool.py`) or, where that cannot be built, the Python `ProgramPool`.
Buffers are numpy arrays (`HostMemoryExecutor`, host_memory.py); large results are recycled
(`ResultBlocks`, on huge pages from HUGE_PAGE_RESULT_BYTES on).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mlc.runtime.executor import Buffer, HostCall, LoadedKernel, ResultAllocator
from mlc.runtime.host_memory import HostMemoryExecutor, host_buffer
from mlc.runtime.slots import CPU_LAUNCH, BufferSpec, HostPlan, KernelLaunch

if TYPE_CHECKING:
    from mlc.runtime.cpu import NativeCode, ProgramPool
    from mlc.runtime.native_pool import NativeProgramPool


class _CpuKernel(LoadedKernel):
    __slots__ = ("_call", "_pointers", "address")

    def __init__(self, call: Callable[..., None], parameter_count: int, address: int | None = None):
        self._call = call
        self._pointers = [0] * parameter_count
        self.address = address
        """The kernel's entry point, for the native call (None: run through `_call` only)."""

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


CALL_VARIABLE = "MLC_CPU_CALL"
"""`python` switches the native call off (`NativeHostCall`): every call takes the Python path."""

KEPT_RESULTS = 2
"""Result arrays a `_ResultShelf` keeps: two, so that `y = f(x)` in a loop (the last result still
alive while the next call runs) alternates between two arrays."""


def _free_references() -> tuple[int, int]:
    """What `sys.getrefcount` says, in `_ResultShelf.take`'s loop, of a list's item that nothing
    else refers to, and of an array's base that only the array refers to (measured the same way,
    so that interpreters that count differently are read right)."""
    for item in [object()]:
        view = np.empty(4, np.uint8)[1:]
        return sys.getrefcount(item), sys.getrefcount(view.base)
    raise AssertionError("unreachable")


_FREE, _FREE_BASE = _free_references()


def _memory_unreferenced(array: Buffer) -> bool:
    """Whether nothing but `array` refers to the memory it views (given that nothing but its
    shelf refers to `array` itself).

    numpy points a view's `base` at the object that owns the memory (an array owning its data, a
    `_Lease`, a mapping), not at the array it was taken from, so a view of a result holds a
    reference to the result's base, not to the result: every object of the base chain must be
    referred to by its predecessor alone. Weak references count as references."""
    holder = array
    while isinstance(holder, np.ndarray) and holder.base is not None:
        if sys.getrefcount(holder.base) != _FREE_BASE or weakref.getweakrefcount(holder.base):
            return False
        holder = holder.base
    return True


class _ResultShelf:
    """The arrays one result of a program was returned in, handed out again once the caller has
    dropped them.

    Why. A fresh aligned result costs ~2.5 us a call in numpy calls (BENCHMARKS.md, issue 19's
    call cost), and a recycled one is also warm in the caches. An array that nothing but the shelf
    refers to (no name, container, view or buffer export: they all hold a reference; nor a weak
    reference) cannot be seen by anyone, so handing the same object out again is
    indistinguishable from a new one; the native call checks it again as it checks the arguments
    (shape, flags, descriptor, alignment), so an array the caller changed in place before dropping
    it fails and the shelf is emptied. Keeps at most KEPT_RESULTS arrays for the program's life."""

    __slots__ = ("_allocate", "_arrays")

    def __init__(self, allocate: Callable[[], Buffer]):
        self._allocate = allocate
        self._arrays: list[Buffer] = []

    def take(self) -> Buffer:
        arrays = self._arrays
        for array in arrays:
            if sys.getrefcount(array) == _FREE and not weakref.getweakrefcount(array) and _memory_unreferenced(array):
                return array
        array = self._allocate()
        if len(arrays) < KEPT_RESULTS:
            arrays.append(array)
        return array

    def clear(self) -> None:
        self._arrays.clear()


class NativeHostCall:
    """A CPU program's call in one ctypes call (`native_call.py`): the results come from the
    program's `_ResultShelf`s, then the native function checks every array, points the slots and
    runs the kernels. Returns None, having launched nothing, when an argument is not exactly what
    its slot takes. A kept result that fails (changed in place before the caller dropped it) is
    replaced by fresh ones; fresh results that fail (a dtype whose arrays do not share numpy's
    descriptor) switch the native call off for good."""

    __slots__ = ("_function", "_spec", "_spec_address", "_arguments", "_shelves", "_pool", "_off")

    def __init__(
        self,
        function: Callable[..., int],
        spec: ctypes.Array,  # type: ignore[type-arg]
        arguments: int,
        shelves: list[_ResultShelf],
        pool: NativeProgramPool | None,
    ):
        self._function = function
        self._spec = spec  # kept alive: the native function reads it
        self._spec_address = ctypes.addressof(spec)
        self._arguments = arguments
        self._shelves = shelves
        self._pool = pool
        self._off = False

    def __call__(self, arguments: Sequence[object]) -> tuple[Buffer, ...] | None:
        if self._off or len(arguments) != self._arguments:
            return None
        pool = self._pool
        if pool is not None and pool.owner != os.getpid():  # a forked child: this process's pool
            from mlc.runtime.native_call import POOL_WORD

            self._spec[POOL_WORD] = pool.handle()
        shelves = self._shelves
        results = (shelves[0].take(),) if len(shelves) == 1 else tuple([shelf.take() for shelf in shelves])
        failed = self._function(self._spec_address, *arguments, *results)
        if not failed:
            return results
        if failed > self._arguments:  # a kept result changed in place by a caller: fresh ones
            for shelf in self._shelves:
                shelf.clear()
            results = tuple([shelf.take() for shelf in shelves])
            failed = self._function(self._spec_address, *arguments, *results)
            if not failed:
                return results
            self._off = failed > self._arguments  # fresh results that do not pass: never will
        return None


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

    def host_call(
        self,
        plan: HostPlan,
        pointers: Sequence[int | None],
        kernels: Sequence[LoadedKernel],
        allocate_result: ResultAllocator,
    ) -> HostCall | None:
        """The program's native call (`native_call.py`, `NativeHostCall`), or None: switched off
        (`MLC_CPU_CALL=python`), a kernel on the Python pool, or the native call unavailable."""
        from mlc.runtime import native_call

        if os.environ.get(CALL_VARIABLE, "").strip().lower() == "python":
            return None
        launches = []
        for kernel, launch in zip(kernels, plan.launches):
            if isinstance(kernel, _NativeParallelCpuKernel):
                launches.append(native_call.LaunchRule(kernel._address, kernel._programs, launch.slots))
            elif type(kernel) is _CpuKernel and kernel.address is not None:
                launches.append(native_call.LaunchRule(kernel.address, native_call.DIRECT, launch.slots))
            else:
                return None
        pool = self._native_pool
        if pool is not None and not any(isinstance(kernel, _NativeParallelCpuKernel) for kernel in kernels):
            pool = None
        rules = [
            native_call.ArrayRule(a.slot, a.spec.dtype, a.spec.shape, False, a.alignment) for a in plan.arguments
        ]
        rules += [
            native_call.ArrayRule(r.slot, r.spec.dtype, r.spec.shape, True, plan.slot_alignments[r.slot][0])
            for r in plan.results
        ]
        filled = {rule.slot for rule in rules}
        table = [0 if slot in filled or pointer is None else pointer for slot, pointer in enumerate(pointers)]
        made = native_call.host_call(
            table, rules, launches, pool.run_address if pool else 0, pool.handle() if pool else 0
        )
        if made is None:
            return None
        function, spec = made
        shelves = [_ResultShelf(functools.partial(allocate_result, index)) for index in range(len(plan.results))]
        return NativeHostCall(function, spec, len(plan.arguments), shelves, pool)

    def load_kernel(self, launch: KernelLaunch) -> LoadedKernel:
        count = len(launch.slots)
        if launch.programs is None or launch.programs < 2 or self.num_threads < 2:
            function = self.module.function(launch.kernel, count)
            return _CpuKernel(function.raw, count, function.address)
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
