"""`CudaExecutor`: runs a host program's `mlc_gpu.launch`es on one CUDA device.

Kernels come from a `CudaModule` (PTX, or a cubin from the cache) and are enqueued with their
parameter blocks on the stream `call_streams.py` chooses; tensor-map parameters (`mlc.tensor_maps`)
follow the buffers they map (`_TensorMapCells`). Buffers are `DeviceBuffer`s, views of the arena
(`DeviceView`), or the caller's CUDA arrays (`foreign_arrays.py`), checked in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError, CudaError, OutOfMemoryError
from mlc.runtime.executor import MAX_CUDA_GRAPHS, ArgumentBinder, Buffer, Executor, LoadedKernel, PointerCheck
from mlc.runtime.host_memory import (
    check_alignment,
    check_shape_and_dtype,
    host_array,
    in_native_byte_order,
    not_an_array,
)
from mlc.runtime.slots import GPU_LAUNCH, ArgumentSlot, BufferSpec, HostProgramError, KernelLaunch

if TYPE_CHECKING:
    from mlc.runtime.cuda import CudaModule, DeviceBuffer, Stream
    from mlc.runtime.foreign_arrays import DeviceArrayView


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
