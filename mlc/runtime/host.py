"""Running a host function: `HostProgram`, built once from a plan, then called many times.

A `HostProgram` pairs a `HostPlan` (the host function read once into slots and launches, see
`plan.py`) with an `Executor` (executor.py), the device side: `CudaExecutor` (cuda_executor.py:
device buffers, PTX kernels launched with `mlc_gpu.launch`'s grid and block) or `CpuExecutor`
(cpu_executor.py: numpy buffers, native kernels called through ctypes for `loop.launch`). Tests
use their own executors (`HostMemoryExecutor`, host_memory.py, with Python kernels) to exercise
`HostProgram` without any backend. The argument checks shared by the executors are in
host_memory.py.

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

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from mlc.errors import ArgumentError, CudaError, OutOfMemoryError, format_bytes
from mlc.runtime.cpu_executor import CpuExecutor
from mlc.runtime.cuda_executor import CudaExecutor
from mlc.runtime.executor import MAX_CUDA_GRAPHS, Buffer, Executor, LoadedKernel, PointerCheck
from mlc.runtime.graph_choice import CaptureGuard, graph_pays
from mlc.runtime.slots import (
    DEFAULT_ALIGNMENT,
    AllocationSlot,
    BufferSpec,
    HostPlan,
    HostProgramError,
    ResultSlot,
    ViewSlot,
)

if TYPE_CHECKING:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

    from mlc.runtime.cuda import CudaModule, Device, Stream


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
        self._native = None
        if all(self._direct_results):
            # No reference back to the program (a cycle would keep its pool's threads until the
            # collector runs): the results' allocation is bound to the executor alone.
            allocators = [_ResultAllocator(executor, self.name, index, result.spec, self._result_alignment(result))
                          for index, result in enumerate(plan.results)]
            self._native = executor.host_call(plan, self._pointers, self._kernels, lambda index: allocators[index]())

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
            if stream is None and self._native is not None:
                results = self._run_native(arguments)
                return results if results is not None else self._run_on_device_after_native(arguments, None, None)
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
        if outputs is None and stream is None and self._native is not None:
            results = self._run_native(arguments)
            if results is not None:
                return results
        return self._run_on_device_after_native(arguments, outputs, stream)

    def _run_native(self, arguments: Sequence[object]) -> tuple[Buffer, ...] | None:
        """The executor's whole-call path (`Executor.host_call`: the CPU's native call), or None
        having done nothing when it does not take these arguments."""
        with self._lock:
            return self._native(arguments)  # type: ignore[misc]

    def _run_on_device_after_native(
        self, arguments: Sequence[object], outputs: Sequence[object] | None, stream: object
    ) -> tuple[Buffer, ...]:
        """`run_on_device` where the native call is not taken or did not take these arrays."""
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
        with self._naming_allocation(f"result #{index}", result.spec):
            return self.executor.allocate_result(result.spec, self._result_alignment(result))

    def _result_alignment(self, result: ResultSlot) -> int:
        allocation = self._allocations.get(result.slot)
        return allocation.alignment if allocation is not None else DEFAULT_ALIGNMENT

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


class _ResultAllocator:
    """Allocates result #index as `HostProgram._allocate_result` does, without the program."""

    __slots__ = ("executor", "naming", "spec", "alignment")

    def __init__(self, executor: Executor, function: str, index: int, spec: BufferSpec, alignment: int):
        self.executor, self.spec, self.alignment = executor, spec, alignment
        self.naming = _NamingAllocation(function, f"result #{index}", spec)

    def __call__(self) -> Buffer:
        with self.naming:
            return self.executor.allocate_result(self.spec, self.alignment)


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
