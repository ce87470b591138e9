"""The device side of a `HostProgram` (host.py): the `Executor` interface and what it hands out.

An executor owns one kind of device's memory, kernels and launches: `CudaExecutor`
(cuda_executor.py), `CpuExecutor` (cpu_executor.py), and `HostMemoryExecutor` (host_memory.py),
the numpy-buffer base that tests give Python kernels. `HostProgram` talks to them only through
this interface: buffers are opaque (`Buffer`), kernels are `LoadedKernel`s whose parameters are
set one pointer at a time, and an executor may offer a `PointerCheck` that takes a well-formed
array's pointer in one cheap step (the programs' fast path).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import ClassVar, Protocol

import numpy as np

from mlc.errors import ArgumentError
from mlc.runtime.slots import ArgumentSlot, BufferSpec, HostPlan, KernelLaunch

MAX_CUDA_GRAPHS = 8
"""Captured graphs a program keeps (one per set of buffer addresses it was called with)."""

Buffer = object
"""What an executor hands out for a buffer: a numpy array, a DeviceBuffer, a DeviceArrayView."""

ArgumentBinder = Callable[[object], tuple[Buffer, int]]
"""Checks one argument value and returns the buffer to use and its address."""

HostCall = Callable[[Sequence[object]], "tuple[Buffer, ...] | None"]
"""A whole call of a program (`Executor.host_call`): its results, or None having done nothing."""

ResultAllocator = Callable[[int], Buffer]
"""A fresh buffer for result #index of a program."""


class PointerCheck(Protocol):
    """The pointer of an array that is exactly what a slot expects, or None (then check it fully)."""

    def pointer(self, value: object) -> int | None: ...


# --------------------------------------------------------------------------------------------
# The executor interface
# --------------------------------------------------------------------------------------------


class LoadedKernel(ABC):
    """One launch site, ready to go: its parameters are set one by one, then it is launched."""

    @abstractmethod
    def set_pointer(self, parameter: int, pointer: int) -> None: ...

    @abstractmethod
    def launch(self) -> None: ...


class Executor(ABC):
    """The device side of a HostProgram: memory, kernels and launches of one kind of device."""

    launch_op_name: ClassVar[str]
    """The launch op whose kernels this executor runs (`mlc_gpu.launch` or `loop.launch`)."""
    results_on_host: ClassVar[bool]
    """Whether buffers are numpy arrays already, so `run` can return them as they are."""

    @abstractmethod
    def load_kernel(self, launch: KernelLaunch) -> LoadedKernel: ...

    @abstractmethod
    def allocate(self, spec: BufferSpec, alignment: int) -> Buffer: ...

    def allocate_result(self, spec: BufferSpec, alignment: int) -> Buffer:
        """A buffer for a result returned to the caller (a call's own, as `allocate`'s)."""
        return self.allocate(spec, alignment)

    @abstractmethod
    def upload(self, values: np.ndarray, alignment: int) -> Buffer: ...

    @abstractmethod
    def view(self, root: Buffer, byte_offset: int, spec: BufferSpec) -> Buffer:
        """`spec.nbytes` bytes of `root` (a buffer this executor allocated) from `byte_offset` on,
        as a buffer of `spec`'s shape and dtype sharing `root`'s memory."""

    @abstractmethod
    def pointer_of(self, buffer: Buffer) -> int: ...

    @abstractmethod
    def argument_binder(self, argument: ArgumentSlot) -> ArgumentBinder: ...

    @abstractmethod
    def bind_output(
        self, value: object, spec: BufferSpec, description: str, alignment: int, reason: str
    ) -> tuple[Buffer, int]:
        """Checks a caller-provided output buffer; returns it (or a view of it) and its address."""

    @abstractmethod
    def copy(self, source: Buffer, destination: Buffer, nbytes: int) -> None: ...

    @abstractmethod
    def to_numpy(self, buffer: Buffer) -> np.ndarray:
        """The buffer's contents as a numpy array the caller owns."""

    def call_scope(self) -> AbstractContextManager[object]:
        """Entered around building and every call (the GPU makes its context current)."""
        return nullcontext()

    def begin_call(self, stream: object, values: Sequence[object], torch_tensors: bool | None = None) -> None:
        """Chooses what a call runs on, before anything is bound: `stream` is the caller's
        `stream=` (None: the default), `values` the call's arrays (or `torch_tensors` says whether
        one is a PyTorch CUDA tensor). Executors without streams refuse any `stream`."""
        if stream is not None:
            raise ArgumentError(
                f"stream={stream!r}: this program runs on {type(self).__name__}, without CUDA streams; "
                "stream= is for programs compiled for the GPU"
            )

    def memory_capacity(self) -> tuple[int, str] | None:
        """(bytes, what they are) of the memory buffers come from, or None when unknown."""
        return None

    def fast_pointer_check(self, spec: BufferSpec, alignment: int, written: bool = False) -> PointerCheck | None:
        """A cheap check that takes the pointer of a well-formed array (`written`: one the kernels
        write, a caller's output), if the executor has one."""
        return None

    def synchronize(self) -> None:
        """Waits for everything enqueued so far (nothing to wait for where calls are synchronous)."""
        return None

    def host_call(
        self,
        plan: HostPlan,
        pointers: Sequence[int | None],
        kernels: Sequence[LoadedKernel],
        allocate_result: ResultAllocator,
    ) -> HostCall | None:
        """A whole call in one step, where the executor has one (the CPU's native call): called
        with a call's arguments, it returns the results, or None having done nothing when an
        argument is not exactly what its slot takes (the caller then takes the general path).
        `pointers`: the slots' pointers after building (constants, intermediates); `kernels`:
        the plan's launches, loaded; `allocate_result(index)`: a fresh buffer for result #index.
        Only asked of programs whose results are plain allocations."""
        return None
