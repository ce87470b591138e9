"""Running a host function: `HostProgram`, built once from a plan, then called many times.

A `HostProgram` pairs a `HostPlan` (the host function read once into slots and launches, see
`plan.py`) with an `Executor`, the device side: `CudaExecutor` (device buffers, PTX kernels
launched with `mlc_gpu.launch`'s grid and block) or `CpuExecutor` (numpy buffers, native kernels
called through ctypes for `loop.launch`). Tests use their own executors (`HostMemoryExecutor`
with Python kernels) to exercise `HostProgram` without any backend.

Building a program loads every launched kernel once (a launch-configuration the kernel cannot
take fails here, before any call), uploads the constants once, and allocates the intermediate
buffers once; each kernel parameter fed by those is set once and for all. The intermediates that
graph-plan-memory planned are views of one arena (`memref.view`, see `plan.py`): the arena is one
of those intermediate allocations, so it too is allocated once per program, when the program is
built, and kept (cached) across calls like every intermediate; a view is its pointer plus the
view's byte offset on the GPU (`DeviceView`), a numpy view of its bytes on the CPU. A call then:

1. checks the arguments (count, then each one's kind, dtype and shape; see "Arguments"; arrays
   exactly as the kernels expect them pass one cheap check, `NumpyFastCheck` / `TorchFastCheck`) and
   binds them: numpy arrays are copied to the device (GPU) or used in place when C-contiguous,
   aligned and in native byte order (CPU, else copied into a staging buffer of the program); on
   the GPU, objects exposing `__cuda_array_interface__` or DLPack are used in place, without a
   copy, after checking their device, contiguity and the alignment the kernels state
   (`mlc.arg_alignment`);
2. binds the result buffers: fresh ones, the caller's (`outputs=`), or, for `run` on the GPU,
   buffers kept by the program (their contents are copied back anyway);
3. launches the kernels in order, rewriting only the kernel parameters whose pointers changed;
4. returns the results: `run` as numpy arrays, `run_on_device` as device buffers (on the GPU,
   without waiting for the kernels). A result that is an argument, a constant or a repeat of
   another result is copied into a buffer of its own, so results never alias each other or the
   program's state.

Arguments. Each is an array of exactly its parameter's dtype and shape, passed positionally:
numpy arrays (any strides; read-only ones too, since inputs are only read), 0-d arrays and numpy
scalars for rank-0 parameters, objects with numpy's array protocol (`__array__`,
`__array_interface__`) or host DLPack, and on the GPU CUDA arrays. Nothing is converted between
dtypes, which would be a guess: another dtype (float64 or bool for f32), shape or count is an
`ArgumentError` (a ValueError); Python lists and scalars, None, strings and other objects are
`ArgumentTypeError`s (a TypeError) whose message shows the conversion to write
(`np.asarray(x, dtype=np.float32)`); masked arrays are refused (kernels would ignore the mask).
Byte-swapped arrays are converted to native order (same values).

Thread safety. A program may be called from any number of threads: calls are serialized by a
per-program lock, because the program keeps state between calls that every call uses (the
intermediate buffers, the staging buffers of arguments, the GPU's result buffers and the kernels'
parameter cells). Calls of one program run one at a time; different programs run in parallel (a
CPU kernel releases the GIL while it runs). On the GPU a call makes the device's primary context
current on the calling thread for its duration (restoring the thread's own afterwards), and
everything a call does is enqueued on one stream, the one `call_streams.py` chooses (`stream=`,
else PyTorch's current stream for PyTorch tensors, else the program's own); a call on another
stream than the previous call's waits for it first, so the work of consecutive calls is ordered
even when `run_on_device` returns before it is done. Kernel faults
surface at the next synchronizing call (`run`'s copy back, or `synchronize`); the error then lists
the kernels the last call launched.

Memory. Before allocating anything, a program adds up its arguments, constants, intermediate
buffers and results against the memory of its device (`Executor.memory_capacity`: the host's
physical memory or cgroup limit, the GPU's device memory) and refuses, with an
`OutOfMemoryError` naming the first buffer that does not fit and its size, to start what cannot
finish; an allocation the allocator refuses all the same is reported the same way. Buffers are
allocated when the program is built (constants, intermediates: the arena and any others) and per
call only for results (on the CPU, and on the GPU by `run_on_device` without `outputs`), so a
program's memory use does not grow with its calls. Views take no memory of their own, so a
planned program needs the plan's peak (`arena_bytes`) for its intermediates, not their sum.

Preconditions: kernels write only the buffers the host function allocated (destination-passing
style), never its arguments or constants.
"""

from __future__ import annotations

import math
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError, CudaError, OutOfMemoryError, format_bytes
from mlc.runtime.graph_choice import CaptureGuard, graph_pays
from mlc.runtime.slots import (
    CPU_LAUNCH,
    DEFAULT_ALIGNMENT,
    GPU_LAUNCH,
    AllocationSlot,
    ArgumentSlot,
    BufferSpec,
    HostPlan,
    HostProgramError,
    KernelLaunch,
    ResultSlot,
    ViewSlot,
)

if TYPE_CHECKING:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    from mlc.runtime.cpu import NativeCode, ProgramPool, ResultBlocks
    from mlc.runtime.native_pool import NativeProgramPool
    from mlc.runtime.cuda import CudaModule, Device, DeviceBuffer, Stream
    from mlc.runtime.foreign_arrays import DeviceArrayView

MAX_CUDA_GRAPHS = 8
"""Captured graphs a program keeps (one per set of buffer addresses it was called with)."""

Buffer = object
"""What an executor hands out for a buffer: a numpy array, a DeviceBuffer, a DeviceArrayView."""

ArgumentBinder = Callable[[object], tuple[Buffer, int]]
"""Checks one argument value and returns the buffer to use and its address."""


class PointerCheck(Protocol):
    """The pointer of an array that is exactly what a slot expects, or None (then check it fully)."""

    def pointer(self, value: object) -> int | None: ...


class NumpyFastCheck:
    """Takes a numpy array's pointer when it is exactly what a slot expects: an `np.ndarray` (not
    a subclass) of the slot's dtype (native byte order) and shape, C-contiguous, aligned enough,
    and writable where the kernels write it. Otherwise None, and the caller takes the general path
    (`_HostArgumentBinder`, `bind_output`), which stages or refuses the array and explains."""

    __slots__ = ("dtype", "shape", "alignment", "written")

    def __init__(self, spec: BufferSpec, alignment: int, written: bool):
        self.dtype = np.dtype(spec.dtype)
        self.shape = tuple(spec.shape)
        self.alignment = max(alignment, 1)
        self.written = written

    def pointer(self, value: object) -> int | None:
        if type(value) is not np.ndarray or value.dtype != self.dtype or value.shape != self.shape:
            return None
        flags = value.flags
        if not flags.c_contiguous or (self.written and not flags.writeable):
            return None
        pointer = value.ctypes.data
        return pointer if pointer % self.alignment == 0 else None


# --------------------------------------------------------------------------------------------
# Checks shared by the executors
# --------------------------------------------------------------------------------------------


def expected_array(spec: BufferSpec) -> str:
    """'float32 values of shape (4, 8)', as messages describe what a parameter takes."""
    return f"{spec.dtype.name} values of shape {spec.shape} ({spec.type_text})"


def conversion_hint(spec: BufferSpec) -> str:
    return f"np.asarray(value, dtype={_dtype_spelling(spec.dtype)})"



def _dtype_spelling(dtype: np.dtype) -> str:
    """How a caller names `dtype`: `np.float32`, or `ml_dtypes.bfloat16` (numpy has no bf16)."""
    return "ml_dtypes.bfloat16" if dtype.name == "bfloat16" else f"np.{dtype.name}"

def check_shape_and_dtype(description: str, spec: BufferSpec, shape: Sequence[int], dtype: np.dtype) -> None:
    if np.dtype(dtype) != spec.dtype:
        given = np.dtype(dtype)
        order = " in non-native byte order" if given.newbyteorder("=") == spec.dtype else ""
        raise ArgumentError(
            f"{description}: expected dtype {spec.dtype.name} ({spec.type_text}), got {given.name}{order}; "
            f"mlc does not convert dtypes (convert it with .astype({_dtype_spelling(spec.dtype)}))"
        )
    if tuple(shape) != spec.shape:
        raise ArgumentError(
            f"{description}: expected shape {spec.shape} ({spec.type_text}), got {tuple(shape)}"
        )


def check_alignment(description: str, pointer: int, alignment: int, reason: str) -> None:
    if pointer % alignment:
        raise ArgumentError(
            f"{description}: its address {pointer:#x} is not aligned to {alignment} bytes "
            f"(offset {pointer % alignment}), which {reason} needs; pass an aligned array "
            "(a fresh allocation or a contiguous copy is aligned)"
        )


def aligned_empty(shape: Sequence[int], dtype: np.dtype, alignment: int) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on an `alignment`-byte boundary.

    Runs on every call of a program that returns fresh results, so it is kept cheap: `math.prod`
    instead of `np.prod` saves ~6 us a call on a loaded dev-machine core (a 16-thread softmax of
    1024x1024 takes ~80 us)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def host_buffer(spec: BufferSpec, alignment: int, description: str = "") -> np.ndarray:
    """`aligned_empty` for `spec`; OutOfMemoryError (prefixed by `description`) when numpy refuses."""
    try:
        return aligned_empty(spec.shape, spec.dtype, alignment)
    except (MemoryError, ValueError) as error:  # numpy: "Unable to allocate ...", "array is too big"
        prefix = f"{description} ({spec.type_text}, {format_bytes(spec.nbytes)}): " if description else ""
        raise OutOfMemoryError(f"{prefix}the host refused {format_bytes(spec.nbytes)}: {error}") from None


def host_array(value: object, description: str) -> np.ndarray | None:
    """`value` as a numpy array when it lives in host memory, else None.

    Host memory: numpy arrays and scalars, DLPack CPU arrays, and objects with numpy's array
    protocol that are not CUDA arrays. Masked arrays are refused (`description` names the value).
    """
    if isinstance(value, np.ma.MaskedArray):
        raise ArgumentTypeError(
            f"{description}: masked arrays are not supported (the kernels would ignore the mask); "
            "pass value.filled(...) or value.data"
        )
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    from mlc.runtime.foreign_arrays import DLPACK_CPU, dlpack_device

    device = dlpack_device(value)
    if device is not None:
        return np.from_dlpack(value) if device[0] == DLPACK_CPU else None
    if hasattr(value, "__cuda_array_interface__"):
        return None
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except Exception as error:  # the object's own conversion failed; say so
            raise ArgumentTypeError(f"{description}: converting it to a numpy array failed: {error}") from None
    return None


def not_an_array(argument: ArgumentSlot, value: object, where: str) -> ArgumentTypeError:
    """The error for an argument that is no array at all (`where`: 'a numpy array', ...)."""
    kind = type(value).__name__
    message = f"{argument.description}: expected {where}, got {kind}; it takes {expected_array(argument.spec)}"
    if isinstance(value, list | tuple | int | float | bool | complex):
        message += f"; mlc does not guess a dtype: convert it with {conversion_hint(argument.spec)}"
    return ArgumentTypeError(message)


def in_native_byte_order(array: np.ndarray, spec: BufferSpec) -> np.ndarray:
    """`array`, converted to native byte order when that is all that differs from `spec`'s dtype."""
    if array.dtype != spec.dtype and array.dtype.newbyteorder("=") == spec.dtype:
        return array.astype(spec.dtype)
    return array


def host_memory() -> tuple[int, str] | None:
    """(bytes, what they are): this machine's physical memory, or this process's cgroup (v2)
    memory limit when that is lower; None when neither can be read."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as limit_file:
            limit = limit_file.read().strip()
    except OSError:
        limit = "max"
    if limit.isdigit() and int(limit) < physical:
        return int(limit), "this process's cgroup memory limit"
    return physical, "this machine's physical memory"


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


# --------------------------------------------------------------------------------------------
# The host program
# --------------------------------------------------------------------------------------------


class HostProgram:
    """A host function ready to run many times on one executor (see the module docstring)."""

    def __init__(self, plan: HostPlan, executor: Executor, cuda_graph: bool = False, automatic_graphs: bool = False):
        self.plan = plan
        self.executor = executor
        if cuda_graph and not isinstance(executor, CudaExecutor):
            raise HostProgramError(f"@{plan.function_name}: CUDA graphs need the GPU; {type(executor).__name__} has none")
        # With CUDA graphs: one captured graph per set of kernel pointers, most recently used last.
        self._graphs: dict[tuple[int | None, ...], object] | None = {} if cuda_graph else None
        self._graphs_tensor_maps = 0  # the executor's tensor_map_generation the graphs were captured under
        # Chosen automatically (graph_choice.py): given up when the buffers move too often.
        self._capture_guard = CaptureGuard() if cuda_graph and automatic_graphs else None
        self.graph_captures = 0
        """CUDA graphs captured so far (a capture costs tens to hundreds of µs: benchmarks read it)."""
        foreign = plan.launch_kinds - {executor.launch_op_name}
        if foreign:
            raise HostProgramError(
                f"@{plan.function_name} launches kernels with {', '.join(sorted(foreign))}, but "
                f"{type(executor).__name__} runs '{executor.launch_op_name}' launches"
            )
        self._lock = threading.Lock()
        self._uses: list[list[tuple[LoadedKernel, int]]] = [[] for _ in range(plan.slot_count)]
        self._pointers: list[int | None] = [None] * plan.slot_count
        self._kept: list[Buffer | None] = [None] * plan.slot_count  # constants, intermediates
        self._kept_results: dict[int, Buffer] = {}
        self._last_launches = ""  # what the last call launched, for CudaErrors
        self._launches_description = ", ".join(launch.describe() for launch in plan.launches) or "no kernels"
        self._check_memory()
        with executor.call_scope():
            self._kernels = [executor.load_kernel(launch) for launch in plan.launches]
            for kernel, launch in zip(self._kernels, plan.launches):
                for parameter, slot in enumerate(launch.slots):
                    self._uses[slot].append((kernel, parameter))
            for constant in plan.constants:
                with self._naming_allocation(f"constant @{constant.name}", constant.spec):
                    self._keep(constant.slot, executor.upload(constant.values, constant.alignment))
            for allocation in plan.allocations:
                if not allocation.is_result:
                    self._keep(allocation.slot, self._allocate(allocation))
            for view in plan.views:
                self._keep(view.slot, self._view(view))
        self._binders = [executor.argument_binder(argument) for argument in plan.arguments]
        self._output_descriptions = [f"output #{i} of @{plan.function_name}" for i in range(len(plan.results))]
        self._allocations = {a.slot: a for a in plan.allocations}
        seen: set[int] = set()
        self._direct_results: list[bool] = []  # else the result is copied into a buffer of its own
        for result in plan.results:
            self._direct_results.append(result.source == "allocation" and result.slot not in seen)
            seen.add(result.slot)
        self._fast_checks = self._build_fast_checks()

    # -- construction helpers ----------------------------------------------------------------

    @classmethod
    def from_module(
        cls, module: ModuleOp, executor: Executor, entry: str | func.FuncOp | None = None
    ) -> HostProgram:
        from mlc.runtime.plan import plan_host_function

        return cls(plan_host_function(module, entry), executor)

    @classmethod
    def for_cuda(
        cls,
        module: ModuleOp,
        ptx: str,
        entry: str | func.FuncOp | None = None,
        device: Device | None = None,
        stream: Stream | None = None,
        cuda_graph: bool | None = False,
        keep_cubin: bool = False,
    ) -> HostProgram:
        """The program of `entry`, its kernels taken from `ptx` (the backend's output for `module`;
        `keep_cubin`: see `for_cuda_plan`)."""
        from mlc.runtime.plan import plan_host_function

        plan = plan_host_function(module, entry)
        return cls.for_cuda_plan(plan, ptx, device, stream, cuda_graph, keep_cubin=keep_cubin)

    @classmethod
    def for_cuda_plan(
        cls,
        plan: HostPlan,
        ptx: str,
        device: Device | None = None,
        stream: Stream | None = None,
        cuda_graph: bool | None = False,
        cubin: bytes | None = None,
        keep_cubin: bool = False,
    ) -> HostProgram:
        """The program of a plan read before (from the cache or a bundle), its kernels from `ptx`.

        With `cuda_graph`, the launches are captured into CUDA graphs and replayed; they need a
        stream of their own (the legacy default stream cannot be captured): one is created when
        `stream` is None. `cuda_graph=None` chooses (`graph_choice.graph_pays`). `cubin`: the
        PTX compiled before, loaded without the driver's JIT; `keep_cubin`: keep the compiled
        image (`CudaModule`), for the cache."""
        from mlc.runtime.cuda import CudaModule, Stream

        name = f"for @{plan.function_name}"
        module = CudaModule(ptx, device, name=name, cubin=cubin, keep_cubin=keep_cubin)
        automatic = cuda_graph is None
        if automatic:
            cuda_graph = graph_pays(plan.launches, module.device.properties.multiprocessor_count)
        if cuda_graph and stream is None:
            stream = Stream.create(module.device)
        return cls(plan, CudaExecutor(module, stream), bool(cuda_graph), automatic)

    @classmethod
    def for_cpu(
        cls,
        module: ModuleOp,
        object_code: bytes,
        entry: str | func.FuncOp | None = None,
        num_threads: int | None = None,
        shared_library: bytes | None = None,
    ) -> HostProgram:
        """The program of `entry`, its kernels taken from `shared_library` when given and loadable,
        else from `object_code` (the backend's output), large kernels run on `num_threads` threads
        (default: `MLC_NUM_THREADS`, else all cores)."""
        from mlc.runtime.plan import plan_host_function

        return cls.for_cpu_plan(plan_host_function(module, entry), object_code, num_threads, shared_library)

    @classmethod
    def for_cpu_plan(
        cls, plan: HostPlan, object_code: bytes, num_threads: int | None = None, shared_library: bytes | None = None
    ) -> HostProgram:
        """The program of a plan read before (from the cache or a bundle), its kernels from
        `shared_library` when given and loadable (no LLVM needed), else from `object_code`."""
        from mlc.runtime.cpu import load_cpu_code

        module = load_cpu_code(object_code, shared_library, name=f"for @{plan.function_name}")
        return cls(plan, CpuExecutor(module, num_threads))

    def _build_fast_checks(self) -> list[tuple[PointerCheck, int]] | None:
        """Per argument, then per result: a fast pointer check and the slot it fills; None when the
        executor has no such checks or a result needs more than pointing its slot at the output."""
        if not all(self._direct_results):
            return None
        checks = []
        for argument in self.plan.arguments:
            checks.append((self.executor.fast_pointer_check(argument.spec, argument.alignment), argument.slot))
        for result in self.plan.results:
            alignment, _ = self.plan.slot_alignments[result.slot]
            checks.append((self.executor.fast_pointer_check(result.spec, alignment, written=True), result.slot))
        if any(check is None for check, _ in checks):
            return None
        return checks  # type: ignore[return-value]

    def _check_memory(self) -> None:
        """Refuses a program whose buffers cannot all fit in its device's memory, naming the first
        that does not: its arguments (which a call stages into device memory on the GPU, and which
        must exist in host memory on the CPU), constants, then allocations in program order."""
        capacity = self.executor.memory_capacity()
        if capacity is None:
            return
        available, memory = capacity
        buffers = [(a.description, a.spec) for a in self.plan.arguments]
        buffers += [(f"constant @{c.name}", c.spec) for c in self.plan.constants]
        buffers += [(a.description, a.spec) for a in self.plan.allocations]
        needed = 0
        for description, spec in buffers:
            needed += spec.nbytes
            if needed > available:
                raise OutOfMemoryError(
                    f"@{self.name}: {description} ({spec.type_text}, {format_bytes(spec.nbytes)}) does not fit in "
                    f"memory: with the buffers allocated before it the program needs {format_bytes(needed)}, "
                    f"and {memory} has {format_bytes(available)}"
                )

    def _allocate(self, allocation: AllocationSlot) -> Buffer:
        with self._naming_allocation(allocation.description, allocation.spec):
            return self.executor.allocate(allocation.spec, allocation.alignment)

    def _view(self, view: ViewSlot) -> Buffer:
        root = self._kept[view.root]
        assert root is not None, "a view of a buffer that is not kept (plan.py refuses those)"
        return self.executor.view(root, view.byte_offset, view.spec)

    def _naming_allocation(self, description: str, spec: BufferSpec) -> _NamingAllocation:
        return _NamingAllocation(self.name, description, spec)

    def _keep(self, slot: int, buffer: Buffer) -> None:
        self._kept[slot] = buffer
        self._point(slot, self.executor.pointer_of(buffer))

    def _point(self, slot: int, pointer: int) -> None:
        if self._pointers[slot] == pointer:
            return
        self._pointers[slot] = pointer
        for kernel, parameter in self._uses[slot]:
            kernel.set_pointer(parameter, pointer)

    # -- calls -------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.plan.function_name

    def __repr__(self) -> str:
        return f"<HostProgram @{self.name} on {type(self.executor).__name__}: {len(self.plan.launches)} launches>"

    def __call__(self, *arguments: object, stream: object = None) -> tuple[np.ndarray, ...]:
        return self.run(*arguments, stream=stream)

    def run(self, *arguments: object, stream: object = None) -> tuple[np.ndarray, ...]:
        """Runs the function; returns its results as numpy arrays the caller owns.

        On the GPU the call runs on `stream` (see `call_streams.py`: default PyTorch's current
        stream when an argument is a PyTorch CUDA tensor, else the program's own)."""
        if self.executor.results_on_host:
            return self.run_on_device(*arguments, stream=stream)  # type: ignore[return-value]
        self._check_count(arguments, None)
        with self._lock, self._describing_failures(), self.executor.call_scope():
            self.executor.begin_call(stream, arguments)
            bound = self._bind_arguments(arguments)
            for result, direct in zip(self.plan.results, self._direct_results):
                if direct:
                    buffer = self._kept_results.get(result.slot)
                    if buffer is None:
                        buffer = self._allocate(self._allocations[result.slot])
                        self._kept_results[result.slot] = buffer
                    self._point(result.slot, self.executor.pointer_of(buffer))
                    bound[result.slot] = buffer
            self._launch_all()
            return tuple(self.executor.to_numpy(self._buffer(bound, r.slot)) for r in self.plan.results)

    def run_on_device(
        self, *arguments: object, outputs: Sequence[object] | None = None, stream: object = None
    ) -> tuple[Buffer, ...]:
        """Runs the function; returns its result buffers without copying them to the host.

        On the GPU the results are DeviceBuffers (with `__cuda_array_interface__`, naming the
        call's stream) and the call returns as soon as the kernels are enqueued on `stream`
        (see `call_streams.py`: default PyTorch's current stream when an argument or output is a
        PyTorch CUDA tensor, else the program's own). `outputs`, one per result, are buffers to
        write the results into (GPU: DeviceBuffers or CUDA arrays; CPU: numpy arrays); they are
        returned. Without `outputs`, every call allocates its results afresh.
        """
        if outputs is not None or (stream is None and self.executor.results_on_host):
            results = self._run_fast(arguments, outputs, stream)
            if results is not None:
                return results
        self._check_count(arguments, outputs)
        with self._lock, self.executor.call_scope():
            self.executor.begin_call(stream, arguments if outputs is None else (*arguments, *outputs))
            try:
                return self._run_on_device_locked(arguments, outputs)
            except CudaError as error:
                raise self._with_last_launches(error) from None

    def _run_fast(
        self, arguments: Sequence[object], outputs: Sequence[object] | None, stream: object
    ) -> tuple[Buffer, ...] | None:
        """The hot path of small kernels: every array passes its executor's fast check (PyTorch CUDA
        tensors, or on the host numpy arrays, exactly as the kernels expect them: `TorchFastCheck`,
        `NumpyFastCheck`), so binding is pointing slots; without `outputs` (host programs) the
        results are allocated as the general path allocates them (a 64-element -x on the dev
        machine: 8.6 us a call against the general path's 10.0; what is left is mostly numpy's
        pointer and allocation calls, ~1 us each). None, having done nothing, when any array does
        not pass: the general path then stages, converts or refuses it and explains."""
        checks = self._fast_checks
        if checks is None or len(arguments) != len(self.plan.arguments):
            return None
        if outputs is not None and len(outputs) != len(self.plan.results):
            return None
        values = arguments if outputs is None else (*arguments, *outputs)
        pointers = [check.pointer(value) for (check, _), value in zip(checks, values)]
        if None in pointers:
            return None
        with self._lock, self.executor.call_scope():
            self.executor.begin_call(stream, arguments, torch_tensors=True)
            for (_, slot), pointer in zip(checks, pointers):
                self._point(slot, pointer)  # type: ignore[arg-type]
            results = outputs
            if results is None:
                results = [self._allocate_result(index, result) for index, result in enumerate(self.plan.results)]
                for result, buffer in zip(self.plan.results, results):
                    self._point(result.slot, self.executor.pointer_of(buffer))
            try:
                self._launch_all()
            except CudaError as error:
                raise self._with_last_launches(error) from None
        return tuple(results)

    def _run_on_device_locked(
        self, arguments: Sequence[object], outputs: Sequence[object] | None
    ) -> tuple[Buffer, ...]:
        bound = self._bind_arguments(arguments)
        results: list[Buffer] = []
        for index, (result, direct) in enumerate(zip(self.plan.results, self._direct_results)):
            # Every output is checked before anything is launched.
            if outputs is not None:
                buffer, pointer = self._bind_output(index, outputs[index])
            else:
                buffer = self._allocate_result(index, result)
                pointer = self.executor.pointer_of(buffer)
            results.append(buffer)
            if direct:
                self._point(result.slot, pointer)
                bound[result.slot] = buffer
        self._launch_all()
        for index, (result, direct) in enumerate(zip(self.plan.results, self._direct_results)):
            if not direct:
                self.executor.copy(self._buffer(bound, result.slot), results[index], result.spec.nbytes)
        return tuple(outputs) if outputs is not None else tuple(results)

    def synchronize(self) -> None:
        """Waits for the kernels enqueued so far; a kernel fault is reported here."""
        with self._describing_failures():
            self.executor.synchronize()

    # -- call helpers ------------------------------------------------------------------------

    def _check_count(self, arguments: Sequence[object], outputs: Sequence[object] | None) -> None:
        expected = self.plan.arguments
        if len(arguments) != len(expected):
            # "argument #0 (%x) of @main" -> "%x: memref<...>"
            names = ", ".join(
                f"{a.description.split('(')[1].split(')')[0]}: {a.spec.type_text}" for a in expected
            ) or "none"
            raise ArgumentError(
                f"@{self.name} takes {len(expected)} argument(s) ({names}), got {len(arguments)}"
            )
        if outputs is not None and len(outputs) != len(self.plan.results):
            raise ArgumentError(
                f"@{self.name} has {len(self.plan.results)} result(s), got {len(outputs)} output buffer(s)"
            )

    def _allocate_result(self, index: int, result: ResultSlot) -> Buffer:
        """A fresh buffer for result #index (aligned as its allocation, or as the runtime aligns)."""
        allocation = self._allocations.get(result.slot)
        alignment = allocation.alignment if allocation is not None else DEFAULT_ALIGNMENT
        with self._naming_allocation(f"result #{index}", result.spec):
            return self.executor.allocate_result(result.spec, alignment)

    def _bind_arguments(self, arguments: Sequence[object]) -> dict[int, Buffer]:
        bound: dict[int, Buffer] = {}
        pending = []
        for argument, binder, value in zip(self.plan.arguments, self._binders, arguments):
            buffer, pointer = binder(value)
            bound[argument.slot] = buffer
            pending.append((argument.slot, pointer))
        for slot, pointer in pending:  # only once every argument passed its checks
            self._point(slot, pointer)
        return bound

    def _bind_output(self, index: int, value: object) -> tuple[Buffer, int]:
        result = self.plan.results[index]
        alignment, reason = self.plan.slot_alignments[result.slot]
        return self.executor.bind_output(value, result.spec, self._output_descriptions[index], alignment, reason)

    def _buffer(self, bound: dict[int, Buffer], slot: int) -> Buffer:
        return bound[slot] if slot in bound else self._kept[slot]

    @property
    def uses_cuda_graphs(self) -> bool:
        """Whether calls replay CUDA graphs (asked for, or chosen and not given up)."""
        return self._graphs is not None

    def _launch_all(self) -> None:
        self._last_launches = self._launches_description
        if self._graphs is not None and self._replay_graph():
            return
        for kernel in self._kernels:
            kernel.launch()

    def _replay_graph(self) -> bool:
        """Replays the graph captured for the current pointers, capturing it on first use.

        The buffers of the memory plan (constants, the arena, intermediates, staging buffers of
        numpy arguments, `run`'s kept results) never move, so a program called the same way
        replays one graph; outputs or CUDA arrays at new addresses get a graph of their own (the
        `MAX_CUDA_GRAPHS` most recently used are kept). Graphs are captured on the program's own
        stream and replayed on the call's (`call_streams.py`). False, having launched nothing,
        when graphs chosen automatically are given up (`graph_choice.CaptureGuard`)."""
        assert self._graphs is not None and isinstance(self.executor, CudaExecutor)
        generation = self.executor.tensor_map_generation
        if generation != self._graphs_tensor_maps:  # a slot a graph holds now maps another operand
            self._graphs.clear()
            self._graphs_tensor_maps = generation
        key = tuple(self._pointers)
        graph = self._graphs.pop(key, None)
        if self._capture_guard is not None and not self._capture_guard.keep_graphs(capturing=graph is None):
            self._graphs = None  # chosen automatically, and the buffers move too often: plain launches
            return False
        if graph is None:
            graph = self.executor.capture(lambda: [kernel.launch() for kernel in self._kernels])
            self.graph_captures += 1
            if len(self._graphs) >= MAX_CUDA_GRAPHS:
                del self._graphs[next(iter(self._graphs))]
        self._graphs[key] = graph
        graph.launch(self.executor.stream)  # type: ignore[attr-defined]
        return True

    def _describing_failures(self) -> AbstractContextManager[None]:
        return _AppendLaunches(self)

    def _with_last_launches(self, error: CudaError) -> CudaError:
        """`error`, with the launches of the last call appended (see `_AppendLaunches`)."""
        try:
            with _AppendLaunches(self):
                raise error
        except CudaError as described:
            return described


class _NamingAllocation:
    """Re-raises an OutOfMemoryError of the executor with the buffer's name and size in front."""

    __slots__ = ("function", "description", "spec")

    def __init__(self, function: str, description: str, spec: BufferSpec):
        # The name is formatted only when it is needed: results are allocated on every call.
        self.function, self.description, self.spec = function, description, spec

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: object) -> None:
        if isinstance(error, OutOfMemoryError):
            what = f"@{self.function}: {self.description} ({self.spec.type_text}, {format_bytes(self.spec.nbytes)})"
            raise OutOfMemoryError(f"{what} cannot be allocated: {error}") from None


class _AppendLaunches:
    """Adds the launches of the program's last call to a CudaError.

    A kernel fault surfaces at a later driver call (a copy, a synchronization, the next call's
    upload or launch), so the launches that may have caused it are the most useful context.
    """

    def __init__(self, program: HostProgram):
        self.program = program

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: object) -> None:
        launches = self.program._last_launches
        if isinstance(error, CudaError) and launches:
            message = (
                f"{error}\nthe last call of @{self.program.name} launched {launches}; a fault in any of them "
                "is reported by the next call that waits for the device (rerun with CUDA_LAUNCH_BLOCKING=1 to "
                "stop at the faulting launch)"
            )
            raise CudaError(message, error.error_name) from None


# --------------------------------------------------------------------------------------------
# Host memory (numpy) executors: the CPU, and tests
# --------------------------------------------------------------------------------------------


class _HostArgumentBinder:
    def __init__(self, argument: ArgumentSlot):
        self.argument = argument
        self.staging: np.ndarray | None = None

    def __call__(self, value: object) -> tuple[Buffer, int]:
        argument = self.argument
        array = host_array(value, argument.description)
        if array is None:
            if hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__"):
                raise ArgumentTypeError(
                    f"{argument.description}: a device array cannot be passed to a program that runs on "
                    "the CPU; copy it to the host first (e.g. tensor.cpu())"
                )
            raise not_an_array(argument, value, "a numpy array")
        array = in_native_byte_order(array, argument.spec)
        check_shape_and_dtype(argument.description, argument.spec, array.shape, array.dtype)
        pointer = array.ctypes.data
        if array.flags.c_contiguous and pointer % argument.alignment == 0:
            return array, pointer
        if self.staging is None:
            self.staging = host_buffer(argument.spec, max(argument.alignment, 64), argument.description)
        np.copyto(self.staging, array)
        return self.staging, self.staging.ctypes.data


class HostMemoryExecutor(Executor):
    """Buffers are aligned numpy arrays; subclasses say how kernels are loaded and launched."""

    results_on_host = True

    def allocate(self, spec: BufferSpec, alignment: int) -> Buffer:
        return host_buffer(spec, alignment)

    def memory_capacity(self) -> tuple[int, str] | None:
        return host_memory()

    def upload(self, values: np.ndarray, alignment: int) -> Buffer:
        array = host_buffer(BufferSpec(values.shape, values.dtype, "a constant"), alignment)
        np.copyto(array, values)
        array.setflags(write=False)
        return array

    def view(self, root: Buffer, byte_offset: int, spec: BufferSpec) -> Buffer:
        data = np.asarray(root).reshape(-1).view(np.uint8)
        return data[byte_offset : byte_offset + spec.nbytes].view(spec.dtype).reshape(spec.shape)

    def pointer_of(self, buffer: Buffer) -> int:
        return buffer.ctypes.data  # type: ignore[attr-defined]

    def argument_binder(self, argument: ArgumentSlot) -> ArgumentBinder:
        return _HostArgumentBinder(argument)

    def fast_pointer_check(self, spec: BufferSpec, alignment: int, written: bool = False) -> PointerCheck | None:
        return NumpyFastCheck(spec, alignment, written)

    def bind_output(
        self, value: object, spec: BufferSpec, description: str, alignment: int, reason: str
    ) -> tuple[Buffer, int]:
        if not isinstance(value, np.ndarray):
            raise ArgumentTypeError(
                f"{description}: expected a numpy array to write into, got {type(value).__name__}"
            )
        check_shape_and_dtype(description, spec, value.shape, value.dtype)
        if not value.flags.c_contiguous or not value.flags.writeable:
            raise ArgumentError(f"{description}: the array to write into must be C-contiguous and writable")
        check_alignment(description, value.ctypes.data, alignment, reason)
        return value, value.ctypes.data

    def copy(self, source: Buffer, destination: Buffer, nbytes: int) -> None:
        np.copyto(destination, np.asarray(source).reshape(np.shape(destination)))  # type: ignore[arg-type]

    def to_numpy(self, buffer: Buffer) -> np.ndarray:
        return buffer  # type: ignore[return-value]


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


# --------------------------------------------------------------------------------------------
# The GPU executor
# --------------------------------------------------------------------------------------------


class _CudaKernel(LoadedKernel):
    """A kernel's launch with its parameter block. The cells after the buffers hold the tensor maps
    of `mlc.tensor_maps` (`_TensorMapCells`), updated with the buffers they map."""

    __slots__ = ("arguments", "_enqueue", "_grid", "_block", "stream_handle", "_shared_bytes", "tensor_maps")

    def __init__(self, executor: CudaExecutor, launch: KernelLaunch):
        from mlc.runtime.cuda import KernelArguments

        function = executor.module.function(launch.kernel)
        assert launch.grid is not None and launch.block is not None
        threads = launch.block[0] * launch.block[1] * launch.block[2]
        limit = function.max_threads_per_block
        if threads > limit:
            raise CudaError(
                f"kernel {launch.describe()} cannot be launched on {executor.device.properties.summary()}: "
                f"its block has {threads} threads and the compiled kernel allows at most {limit} "
                f"(it uses {function.attribute('NUM_REGS')} registers per thread)"
            )
        self._shared_bytes = launch.dynamic_shared_bytes
        if self._shared_bytes:
            function.allow_dynamic_shared_memory(self._shared_bytes)
        self.arguments = KernelArguments(len(launch.slots) + len(launch.tensor_maps))
        self.tensor_maps = _TensorMapCells(launch, self.arguments, executor.device) if launch.tensor_maps else None
        self._enqueue = function.enqueue
        self._grid, self._block = launch.grid, launch.block
        self.stream_handle = executor.stream.handle  # the call's: CudaExecutor.begin_call changes it

    def set_pointer(self, parameter: int, pointer: int) -> None:
        self.arguments.set_pointer(parameter, pointer)
        if self.tensor_maps is not None:
            self.tensor_maps.point(parameter, pointer)

    def launch(self) -> None:
        self._enqueue(self._grid, self._block, self.arguments, self.stream_handle, self._shared_bytes)


class _TensorMapCells:
    """The tensor-map parameters of one kernel launch (`mlc.tensor_maps`): each has a
    `TensorMapTable` of its own, so that a slot is only ever reused for the same parameter's
    earlier operands, never under another parameter's current cell. A table keeps
    `MAX_CUDA_GRAPHS` + 1 operand addresses, so the graphs a program keeps rarely lose theirs
    (`generation`: the host drops its graphs when it changes)."""

    def __init__(self, launch: KernelLaunch, arguments: object, device: object):
        from mlc.runtime.tensor_maps import TensorMapGeometry, TensorMapTable, element_of_dtype

        self.arguments = arguments
        self.first = len(launch.slots)
        self.maps = []
        self.storage = []
        for parameter in launch.tensor_maps:
            spec = launch.buffer_specs[parameter.source]
            element = element_of_dtype(spec.dtype)
            assert element is not None, "plan.py checks the element type of a tensor map's buffer"
            geometry = TensorMapGeometry.row_major(element, parameter.view or spec.shape, parameter.box, parameter.swizzle)
            table, storage = TensorMapTable.on_device(capacity=MAX_CUDA_GRAPHS + 1, device=device)
            self.maps.append((parameter.source, geometry, table))
            self.storage.append(storage)

    def point(self, parameter: int, pointer: int) -> None:
        """Points the maps of buffer parameter `parameter` at the operand at `pointer`."""
        for index, (source, geometry, table) in enumerate(self.maps):
            if source == parameter:
                self.arguments.set_pointer(self.first + index, table.address(pointer, geometry))  # type: ignore[attr-defined]

    @property
    def generation(self) -> int:
        return sum(table.generation for _, _, table in self.maps)


class _CudaArgumentBinder:
    def __init__(self, executor: CudaExecutor, argument: ArgumentSlot):
        from mlc.runtime.foreign_arrays import TorchFastCheck

        self.executor = executor
        self.argument = argument
        self.staging: DeviceBuffer | None = None
        self.fast = TorchFastCheck(argument.spec.dtype, argument.spec.shape, executor.device.ordinal, argument.alignment)

    def __call__(self, value: object) -> tuple[Buffer, int]:
        from mlc.runtime.cuda import DeviceBuffer
        from mlc.runtime.foreign_arrays import device_array_view

        pointer = self.fast.pointer(value)
        if pointer is not None:
            return value, pointer
        argument, executor = self.argument, self.executor
        if isinstance(value, np.ndarray | np.generic) and not isinstance(value, np.ma.MaskedArray):
            return self._upload(np.asarray(value))
        if isinstance(value, DeviceBuffer):
            return executor.check_device_array(
                value,
                value.pointer,
                value.shape,
                value.dtype,
                value.device.ordinal,
                argument.spec,
                argument.description,
                argument.alignment,
                argument.alignment_reason,
            )
        view = device_array_view(value, argument.description, executor.stream)
        if view is not None:
            return executor.check_view(
                view, argument.spec, argument.description, argument.alignment, argument.alignment_reason
            )
        array = host_array(value, argument.description)
        if array is None:
            raise not_an_array(
                argument, value, "a numpy array or a CUDA array (with __cuda_array_interface__ or DLPack)"
            )
        return self._upload(array)

    def _upload(self, array: np.ndarray) -> tuple[Buffer, int]:
        from mlc.runtime.cuda import DeviceBuffer, copy_host_to_device

        argument = self.argument
        array = in_native_byte_order(array, argument.spec)
        check_shape_and_dtype(argument.description, argument.spec, array.shape, array.dtype)
        if self.staging is None:
            self.staging = DeviceBuffer(
                argument.spec.shape, argument.spec.dtype, self.executor.device, self.executor.stream
            )
        pointer = self.staging.pointer if self.staging.nbytes else 0
        copy_host_to_device(pointer, np.ascontiguousarray(array), self.executor.stream)
        return self.staging, pointer


class DeviceView:
    """Bytes of a DeviceBuffer seen as an array of their own: a view slot (`memref.view` of the
    arena) on the GPU. It keeps the buffer alive; `pointer` is the buffer's plus the offset."""

    __slots__ = ("base", "byte_offset", "shape", "dtype", "nbytes")

    def __init__(self, base: DeviceBuffer, byte_offset: int, spec: BufferSpec):
        assert byte_offset + spec.nbytes <= base.nbytes, "a view past the end of its buffer"
        self.base = base
        self.byte_offset = byte_offset
        self.shape = spec.shape
        self.dtype = spec.dtype
        self.nbytes = spec.nbytes

    @property
    def pointer(self) -> int:
        return self.base.pointer + self.byte_offset


class CudaExecutor(Executor):
    """Runs `mlc_gpu.launch`es of a CudaModule's kernels on one device; each call on the stream
    `call_streams.CallStreams` chooses (`stream`: the program's own one, the legacy default stream
    when None, until a call chooses another)."""

    launch_op_name = GPU_LAUNCH
    results_on_host = False

    def __init__(self, module: CudaModule, stream: Stream | None = None):
        from mlc.runtime.call_streams import CallStreams
        from mlc.runtime.cuda import Stream

        self.module = module
        self.device = module.device
        self.streams = CallStreams(self.device, stream or Stream.legacy_default(self.device))
        self.stream = self.streams.current
        """The stream of the call in progress (else of the last call): copies, launches, results."""
        self._kernels: list[_CudaKernel] = []
        # Fast checks of PyTorch outputs, per result: built on first use, one per program result.
        self._output_checks: dict[tuple[int, int], object] = {}

    def call_scope(self) -> AbstractContextManager[object]:
        return self.device.activated()

    def begin_call(self, stream: object, values: Sequence[object], torch_tensors: bool | None = None) -> None:
        from mlc.runtime.call_streams import holds_torch_cuda_tensor

        if torch_tensors is None:
            torch_tensors = stream is None and holds_torch_cuda_tensor(values)
        chosen = self.streams.choose(stream, torch_tensors)
        if self.streams.switch_to(chosen):
            self._point_kernels(chosen)

    def _point_kernels(self, stream: Stream) -> None:
        self.stream = stream
        for kernel in self._kernels:
            kernel.stream_handle = stream.handle

    def capture(self, record: Callable[[], None]) -> object:
        """A CUDA graph of the launches `record` enqueues, captured on the program's own stream
        (not the legacy default stream, which cannot be captured); the kernels go back to the
        call's stream afterwards."""
        from mlc.runtime.cuda import CapturedGraph

        call_stream = self.stream
        self._point_kernels(self.streams.own)
        try:
            return CapturedGraph(self.streams.own, record)
        finally:
            self._point_kernels(call_stream)

    def fast_pointer_check(self, spec: BufferSpec, alignment: int, written: bool = False) -> PointerCheck | None:
        from mlc.runtime.foreign_arrays import TorchFastCheck

        return TorchFastCheck(spec.dtype, spec.shape, self.device.ordinal, alignment)

    def load_kernel(self, launch: KernelLaunch) -> LoadedKernel:
        kernel = _CudaKernel(self, launch)
        self._kernels.append(kernel)
        return kernel

    @property
    def tensor_map_generation(self) -> int:
        """Changes whenever a tensor-map slot that a captured graph may hold is given to another
        operand (`_TensorMapCells`): the host then drops its graphs."""
        return sum(kernel.tensor_maps.generation for kernel in self._kernels if kernel.tensor_maps is not None)

    def allocate(self, spec: BufferSpec, alignment: int) -> Buffer:
        from mlc.runtime.cuda import DeviceBuffer

        if alignment > DeviceBuffer.ALIGNMENT:
            raise HostProgramError(
                f"a buffer of type {spec.type_text} must be aligned to {alignment} bytes; device "
                f"allocations are aligned to {DeviceBuffer.ALIGNMENT}"
            )
        try:
            return DeviceBuffer(spec.shape, spec.dtype, self.device, self.stream)
        except CudaError as error:
            if error.error_name == "CUDA_ERROR_OUT_OF_MEMORY":
                raise OutOfMemoryError(str(error)) from None
            raise

    def memory_capacity(self) -> tuple[int, str] | None:
        return self.device.properties.total_memory_bytes, f"the memory of {self.device.properties.summary()}"

    def upload(self, values: np.ndarray, alignment: int) -> Buffer:
        buffer = self.allocate(BufferSpec(values.shape, values.dtype, "constant"), alignment)
        buffer.copy_from_host(values)  # type: ignore[attr-defined]
        return buffer

    def view(self, root: Buffer, byte_offset: int, spec: BufferSpec) -> Buffer:
        return DeviceView(root, byte_offset, spec)  # type: ignore[arg-type]

    def pointer_of(self, buffer: Buffer) -> int:
        nbytes = buffer.nbytes  # type: ignore[attr-defined]
        return buffer.pointer if nbytes else 0  # type: ignore[attr-defined]

    def argument_binder(self, argument: ArgumentSlot) -> ArgumentBinder:
        return _CudaArgumentBinder(self, argument)

    def check_device_array(
        self,
        buffer: Buffer,
        pointer: int,
        shape: Sequence[int],
        dtype: np.dtype,
        ordinal: int,
        spec: BufferSpec,
        description: str,
        alignment: int,
        reason: str,
    ) -> tuple[Buffer, int]:
        if ordinal != self.device.ordinal:
            raise ArgumentError(
                f"{description}: the array is on CUDA device {ordinal}, but the program runs on device "
                f"{self.device.ordinal} ({self.device.properties.summary()})"
            )
        check_shape_and_dtype(description, spec, shape, dtype)
        check_alignment(description, pointer, alignment, reason)
        return buffer, pointer

    def check_view(
        self, view: DeviceArrayView, spec: BufferSpec, description: str, alignment: int, reason: str
    ) -> tuple[Buffer, int]:
        return self.check_device_array(
            view,
            view.pointer,
            view.shape,
            view.dtype,
            view.device_ordinal,
            spec,
            description,
            alignment,
            reason,
        )

    def bind_output(
        self, value: object, spec: BufferSpec, description: str, alignment: int, reason: str
    ) -> tuple[Buffer, int]:
        from mlc.runtime.cuda import DeviceBuffer
        from mlc.runtime.foreign_arrays import TorchFastCheck, device_array_view

        key = (id(spec), alignment)
        fast = self._output_checks.get(key)
        if fast is None:
            fast = TorchFastCheck(spec.dtype, spec.shape, self.device.ordinal, alignment)
            self._output_checks[key] = fast
        pointer = fast.pointer(value)
        if pointer is not None:
            return value, pointer
        if isinstance(value, DeviceBuffer):
            return self.check_device_array(
                value,
                value.pointer if value.nbytes else 0,
                value.shape,
                value.dtype,
                value.device.ordinal,
                spec,
                description,
                alignment,
                reason,
            )
        view = device_array_view(value, description, self.stream)
        if view is None:
            raise ArgumentTypeError(
                f"{description}: outputs of a GPU program must be device arrays (DeviceBuffer, or objects with "
                f"__cuda_array_interface__ or DLPack), got {type(value).__name__}"
            )
        return self.check_view(view, spec, description, alignment, reason)

    def copy(self, source: Buffer, destination: Buffer, nbytes: int) -> None:
        from mlc.runtime.cuda import copy_device_to_device

        copy_device_to_device(self._address(destination), self._address(source), nbytes, self.stream)

    def _address(self, buffer: Buffer) -> int:
        from mlc.runtime.cuda import DeviceBuffer

        if isinstance(buffer, DeviceBuffer):
            return self.pointer_of(buffer)
        return buffer.pointer  # type: ignore[attr-defined]  # a DeviceArrayView or a DeviceView

    def to_numpy(self, buffer: Buffer) -> np.ndarray:
        from mlc.runtime.cuda import copy_device_to_host

        shape, dtype = buffer.shape, buffer.dtype  # type: ignore[attr-defined]
        array = np.empty(shape, dtype)
        copy_device_to_host(array, self._address(buffer), self.stream)
        return array

    def synchronize(self) -> None:
        self.stream.synchronize()
