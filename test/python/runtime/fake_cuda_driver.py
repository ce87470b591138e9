"""A stand-in for `cuda.bindings.driver` that runs on any machine, for testing mlc's CUDA layer.

It is no CUDA: "device memory" is host memory, modules are PTX texts whose `.entry` names are
looked up in `KERNELS`, and a launch runs that kernel's numpy emulation on the buffers its
parameter block points to, at once, whatever its stream (the stream is recorded: `launch_streams`,
and which stream waited for which: `stream_waits`). A stream being captured records its launches
into a graph instead, which `cuGraphLaunch` runs. What it checks is mlc's plumbing: that every driver call is made with
the arguments the real driver takes, that parameter blocks hold the right pointers and scalars,
that contexts are pushed and popped in pairs, that memory is freed once, and that errors travel
with their names. Where libcuda is missing, every call's arguments also go through the real
cuda-python binding, which converts and type-checks them before it looks for the driver. The
real driver is exercised by the `gpu` tests.

Install it with `install(monkeypatch)`, which also forgets the devices mlc retained.
"""

from __future__ import annotations

import ctypes
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

real = __import__("cuda.bindings.driver", fromlist=["driver"])
SUCCESS = real.CUresult.CUDA_SUCCESS
INVALID_VALUE = real.CUresult.CUDA_ERROR_INVALID_VALUE


@dataclass
class Kernel:
    parameters: tuple[str, ...]  # "ptr" or a numpy dtype name for scalars
    run: Callable[..., None]  # (grid, block, *parameter values)
    max_threads_per_block: int = 1024


def _array(pointer: int, count: int, dtype: type = np.float32) -> np.ndarray:
    if count == 0:
        return np.empty(0, dtype)
    return np.frombuffer((ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(pointer), dtype)


def _threads(grid: tuple[int, int, int], block: tuple[int, int, int]) -> int:
    return grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]


def _vadd(grid, block, a, b, c, n):  # type: ignore[no-untyped-def]
    count = min(int(n), _threads(grid, block))
    _array(c, count)[:] = _array(a, count) + _array(b, count)


def _add3(grid, block, a, b, c):  # type: ignore[no-untyped-def]
    count = _threads(grid, block)
    _array(c, count)[:] = _array(a, count) + _array(b, count)


def _block_reverse(grid, block, source, destination):  # type: ignore[no-untyped-def]
    count = grid[0] * 256
    _array(destination, count).reshape(-1, 256)[:] = _array(source, count).reshape(-1, 256)[:, ::-1]


FAKE_TENSOR_MAP_WORDS = 16
"""A fake tensor map's 128 bytes as u64 words: the operand's address, the rank, then the global
sizes innermost first (`cuTensorMapEncodeTiled`'s order), then the box sizes."""


def _tensor_map_doubled(grid, block, source, destination, tensor_map):  # type: ignore[no-untyped-def]
    """destination = 2 * the f32 operand that `tensor_map` (a fake map in device memory) maps,
    read through the map's address: it fails unless the launch passed the right map."""
    words = _array(tensor_map, FAKE_TENSOR_MAP_WORDS, np.uint64)
    address, rank = int(words[0]), int(words[1])
    count = int(np.prod(words[2 : 2 + rank]))
    _array(destination, count)[:] = 2 * _array(address, count)


def _fault(grid, block, a):  # type: ignore[no-untyped-def]
    raise _Fault()


class _Fault(Exception):
    pass


KERNELS = {
    "vadd": Kernel(("ptr", "ptr", "ptr", "int32"), _vadd),
    "add3": Kernel(("ptr", "ptr", "ptr"), _add3),
    "add3_small": Kernel(("ptr", "ptr", "ptr"), _add3, max_threads_per_block=128),
    "block_reverse": Kernel(("ptr", "ptr"), _block_reverse),
    "block_reverse_llvm": Kernel(("ptr", "ptr"), _block_reverse),
    "fault": Kernel(("ptr",), _fault),
    "tensor_map_doubled": Kernel(("ptr", "ptr", "ptr"), _tensor_map_doubled),
}


@dataclass
class FakeState:
    """What the fake driver holds, open to tests' inspection."""

    allocations: dict[int, Any] = field(default_factory=dict)  # pointer -> (ctypes buffer, size)
    freed: list[int] = field(default_factory=list)
    modules: dict[int, list[str]] = field(default_factory=dict)
    functions: dict[int, tuple[str, Kernel]] = field(default_factory=dict)
    events: dict[int, float] = field(default_factory=dict)
    streams: set[int] = field(default_factory=set)
    other_context_streams: set[int] = field(default_factory=set)  # streams of another CUDA context
    launch_streams: list[int] = field(default_factory=list)  # the stream of each of `launches`
    event_streams: dict[int, int] = field(default_factory=dict)  # event -> stream it was recorded on
    stream_waits: list[tuple[int, int]] = field(default_factory=list)  # (waiting stream, stream waited for)
    capturing: dict[int, list[Callable[[], None]]] = field(default_factory=dict)  # stream -> captured launches
    graphs: dict[int, list[Callable[[], None]]] = field(default_factory=dict)  # graph or graph exec -> launches
    graph_launch_streams: list[int] = field(default_factory=list)
    tensor_maps: list[Any] = field(default_factory=list)  # each encoded map's 128 bytes (a ctypes buffer)
    launches: list[tuple[str, tuple[int, int, int], tuple[int, int, int], tuple[object, ...]]] = field(
        default_factory=list
    )
    links: dict[int, list[bytes]] = field(default_factory=dict)  # link state -> PTX added
    link_images: dict[int, Any] = field(default_factory=dict)  # link state -> its image (a ctypes buffer)
    sticky_error: Any = None
    next_handle: int = 0x1000
    local: threading.local = field(default_factory=threading.local)

    def handle(self) -> int:
        self.next_handle += 16
        return self.next_handle

    def context_stack(self) -> list[Any]:
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def owns(self, pointer: int, nbytes: int) -> bool:
        return any(
            start <= pointer and pointer + nbytes <= start + size
            for start, (_, size) in self.allocations.items()
        )


FAKE_CUBIN = b"FAKE-CUBIN\n"
"""How the fake's compiled images begin (then the PTX they were linked from); `cuModuleLoadData`
refuses any other image, as the driver refuses a cubin for another GPU."""

PRIMARY_CONTEXT = 0xC0
DEVICE_ATTRIBUTES = {
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": 132,
    "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK": 1024,
    "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X": 1024,
    "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y": 1024,
    "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z": 64,
    "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X": 2**31 - 1,
    "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y": 65535,
    "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z": 65535,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK": 49152,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 232448,
    "CU_DEVICE_ATTRIBUTE_WARP_SIZE": 32,
}


def make_driver(state: FakeState) -> SimpleNamespace:
    """A module-like namespace with the driver functions mlc calls, over `state`."""

    def needs_context() -> Any:
        if not state.context_stack() or int(state.context_stack()[-1]) != PRIMARY_CONTEXT:
            return real.CUresult.CUDA_ERROR_INVALID_CONTEXT
        return state.sticky_error or SUCCESS

    def cuInit(flags: int) -> tuple[Any]:
        return (SUCCESS,)

    def cuDeviceGetCount() -> tuple[Any, int]:
        return SUCCESS, 1

    def cuDeviceGet(ordinal: int) -> tuple[Any, Any]:
        return (
            (SUCCESS, real.CUdevice(ordinal))
            if ordinal == 0
            else (real.CUresult.CUDA_ERROR_INVALID_DEVICE, None)
        )

    def cuDeviceGetAttribute(attribute: Any, device: Any) -> tuple[Any, int]:
        return SUCCESS, DEVICE_ATTRIBUTES[attribute.name]

    def cuDeviceGetName(length: int, device: Any) -> tuple[Any, bytes]:
        return SUCCESS, b"Fake H200".ljust(length, b"\0")

    def cuDeviceTotalMem(device: Any) -> tuple[Any, int]:
        return SUCCESS, 141 * 2**30

    def cuDriverGetVersion() -> tuple[Any, int]:
        return SUCCESS, 13000

    def cuDevicePrimaryCtxRetain(device: Any) -> tuple[Any, Any]:
        return SUCCESS, real.CUcontext(PRIMARY_CONTEXT)

    def cuCtxGetCurrent() -> tuple[Any, Any]:
        stack = state.context_stack()
        return SUCCESS, stack[-1] if stack else real.CUcontext(0)

    def cuCtxPushCurrent(context: Any) -> tuple[Any]:
        state.context_stack().append(context)
        return (SUCCESS,)

    def cuCtxPopCurrent() -> tuple[Any, Any]:
        stack = state.context_stack()
        return (SUCCESS, stack.pop()) if stack else (real.CUresult.CUDA_ERROR_INVALID_CONTEXT, None)

    def cuCtxSynchronize() -> tuple[Any]:
        return (needs_context(),)

    def cuMemGetInfo() -> tuple[Any, int, int]:
        return needs_context(), 100 * 2**30, 141 * 2**30

    def cuMemAlloc(nbytes: int) -> tuple[Any, Any]:
        error = needs_context()
        if error or nbytes == 0:
            return error or INVALID_VALUE, None
        memory = (ctypes.c_char * (nbytes + 256))()
        pointer = ctypes.addressof(memory) + (-ctypes.addressof(memory)) % 256
        state.allocations[pointer] = (memory, nbytes)
        return SUCCESS, real.CUdeviceptr(pointer)

    def cuMemFree(pointer: Any) -> tuple[Any]:
        error = needs_context()
        if error:
            return (error,)
        if int(pointer) not in state.allocations:
            return (INVALID_VALUE,)
        del state.allocations[int(pointer)]
        state.freed.append(int(pointer))
        return (SUCCESS,)

    def copy(
        destination: int, source: int, nbytes: int, device_destination: bool, device_source: bool
    ) -> tuple[Any]:
        error = needs_context()
        if error:
            return (error,)
        if (device_destination and not state.owns(destination, nbytes)) or (
            device_source and not state.owns(source, nbytes)
        ):
            return (INVALID_VALUE,)
        ctypes.memmove(destination, source, nbytes)
        return (SUCCESS,)

    def cuMemcpyHtoDAsync(destination: Any, source: Any, nbytes: int, stream: Any) -> tuple[Any]:
        return copy(int(destination), int(source), nbytes, True, False)

    def cuMemcpyDtoHAsync(destination: Any, source: Any, nbytes: int, stream: Any) -> tuple[Any]:
        return copy(int(destination), int(source), nbytes, False, True)

    def cuMemcpyDtoDAsync(destination: Any, source: Any, nbytes: int, stream: Any) -> tuple[Any]:
        return copy(int(destination), int(source), nbytes, True, True)

    def cuMemsetD8Async(destination: Any, value: int, nbytes: int, stream: Any) -> tuple[Any]:
        error = needs_context()
        if error or not state.owns(int(destination), nbytes):
            return (error or INVALID_VALUE,)
        ctypes.memset(int(destination), value, nbytes)
        return (SUCCESS,)

    def cuPointerGetAttribute(attribute: Any, pointer: Any) -> tuple[Any, Any]:
        assert attribute == real.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        return (SUCCESS, 0) if state.owns(int(pointer), 1) else (INVALID_VALUE, None)

    def cuModuleLoadDataEx(
        image: bytes, count: int, options: list[Any], values: list[Any]
    ) -> tuple[Any, Any]:
        error = needs_context()
        if error:
            return error, None
        assert image.endswith(b"\0") and count == len(options) == len(values)
        text = image[:-1].decode()
        if "not_an_instruction" in text:
            log = b"ptxas application ptx input, line 6; error   : Not a name of any known instruction: 'not_an_instruction'"
            buffer = values[options.index(real.CUjit_option.CU_JIT_ERROR_LOG_BUFFER)]
            buffer[: len(log)] = log
            return real.CUresult.CUDA_ERROR_INVALID_PTX, None
        handle = state.handle()
        state.modules[handle] = re.findall(r"\.entry\s+(\w+)\s*\(", text)
        return SUCCESS, real.CUmodule(handle)

    def cuLinkCreate(count: int, options: list[Any], values: list[Any]) -> tuple[Any, Any]:
        error = needs_context()
        if error:
            return error, None
        handle = state.handle()
        state.links[handle] = []
        return SUCCESS, real.CUlinkState(handle)

    def cuLinkAddData(
        link: Any, kind: Any, data: bytes, size: int, name: bytes, count: int, options: list[Any], values: list[Any]
    ) -> tuple[Any]:
        assert kind == real.CUjitInputType.CU_JIT_INPUT_PTX and data.endswith(b"\0") and size == len(data)
        if b"not_an_instruction" in data:
            return (real.CUresult.CUDA_ERROR_INVALID_PTX,)
        state.links[int(link)].append(data[:-1])
        return (SUCCESS,)

    def cuLinkComplete(link: Any) -> tuple[Any, int, int]:
        image = FAKE_CUBIN + b"".join(state.links[int(link)])
        buffer = ctypes.create_string_buffer(image, len(image))
        state.link_images[int(link)] = buffer  # owned by the link state, as the driver's is
        return SUCCESS, ctypes.addressof(buffer), len(image)

    def cuLinkDestroy(link: Any) -> tuple[Any]:
        state.links.pop(int(link))
        state.link_images.pop(int(link), None)
        return (SUCCESS,)

    def cuModuleLoadData(image: bytes) -> tuple[Any, Any]:
        error = needs_context()
        if error:
            return error, None
        if not image.startswith(FAKE_CUBIN):
            return real.CUresult.CUDA_ERROR_INVALID_IMAGE, None
        handle = state.handle()
        state.modules[handle] = re.findall(r"\.entry\s+(\w+)\s*\(", image[len(FAKE_CUBIN) :].decode())
        return SUCCESS, real.CUmodule(handle)

    def cuModuleUnload(module: Any) -> tuple[Any]:
        error = needs_context()
        return (error or (SUCCESS if state.modules.pop(int(module), None) is not None else INVALID_VALUE),)

    def cuModuleGetFunction(module: Any, name: bytes) -> tuple[Any, Any]:
        error = needs_context()
        if error:
            return error, None
        if name.decode() not in state.modules.get(int(module), []):
            return real.CUresult.CUDA_ERROR_NOT_FOUND, None
        handle = state.handle()
        state.functions[handle] = (name.decode(), KERNELS[name.decode()])
        return SUCCESS, real.CUfunction(handle)

    def cuFuncGetAttribute(attribute: Any, function: Any) -> tuple[Any, int]:
        _, kernel = state.functions[int(function)]
        values = {
            "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK": kernel.max_threads_per_block,
            "CU_FUNC_ATTRIBUTE_NUM_REGS": 16,
            "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES": 0,
        }
        return SUCCESS, values[attribute.name]

    def cuLaunchKernel(
        function: Any,
        gx: int,
        gy: int,
        gz: int,
        bx: int,
        by: int,
        bz: int,
        shared: int,
        stream: Any,
        parameters: int,
        extra: int,
    ) -> tuple[Any]:
        error = needs_context()
        if error:
            return (error,)
        name, kernel = state.functions[int(function)]
        if bx * by * bz > kernel.max_threads_per_block or bx > 1024 or bz > 64:
            return (INVALID_VALUE,)
        addresses = (ctypes.c_uint64 * len(kernel.parameters)).from_address(parameters)
        values: list[object] = []
        for kind, address in zip(kernel.parameters, addresses):
            if kind == "ptr":
                values.append(ctypes.c_uint64.from_address(address).value)
            else:
                values.append(np.frombuffer(ctypes.string_at(address, np.dtype(kind).itemsize), kind)[0])

        def run() -> None:
            state.launches.append((name, (gx, gy, gz), (bx, by, bz), tuple(values)))
            state.launch_streams.append(int(stream))
            try:
                kernel.run((gx, gy, gz), (bx, by, bz), *values)
            except _Fault:
                state.sticky_error = real.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS  # reported later, like a real fault

        if int(stream) in state.capturing:
            state.capturing[int(stream)].append(run)
        else:
            run()
        return (SUCCESS,)

    def cuStreamGetCtx(stream: Any) -> tuple[Any, Any]:
        handle = int(stream)
        if handle in state.streams:
            return SUCCESS, real.CUcontext(PRIMARY_CONTEXT)
        if handle in state.other_context_streams:
            return SUCCESS, real.CUcontext(PRIMARY_CONTEXT + 1)
        return real.CUresult.CUDA_ERROR_INVALID_HANDLE, None

    def cuStreamBeginCapture(stream: Any, mode: Any) -> tuple[Any]:
        if int(stream) in (0, 1):
            return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        state.capturing[int(stream)] = []
        return (needs_context(),)

    def cuStreamEndCapture(stream: Any) -> tuple[Any, Any]:
        graph = state.handle()
        state.graphs[graph] = state.capturing.pop(int(stream))
        return needs_context(), real.CUgraph(graph)

    def cuGraphInstantiate(graph: Any, flags: int) -> tuple[Any, Any]:
        executable = state.handle()
        state.graphs[executable] = list(state.graphs[int(graph)])
        return needs_context(), real.CUgraphExec(executable)

    def cuGraphDestroy(graph: Any) -> tuple[Any]:
        del state.graphs[int(graph)]
        return (needs_context(),)

    def cuGraphLaunch(executable: Any, stream: Any) -> tuple[Any]:
        state.graph_launch_streams.append(int(stream))
        for run in state.graphs[int(executable)]:
            run()
        return (needs_context(),)

    def cuGraphExecDestroy(executable: Any) -> tuple[Any]:
        state.graphs.pop(int(executable), None)
        return (needs_context(),)

    def cuStreamCreate(flags: int) -> tuple[Any, Any]:
        handle = state.handle()
        state.streams.add(handle)
        return needs_context(), real.CUstream(handle)

    def cuStreamDestroy(stream: Any) -> tuple[Any]:
        state.streams.discard(int(stream))
        return (needs_context(),)

    def cuStreamSynchronize(stream: Any) -> tuple[Any]:
        return (needs_context(),)

    def cuStreamWaitEvent(stream: Any, event: Any, flags: int) -> tuple[Any]:
        state.stream_waits.append((int(stream), state.event_streams[int(event)]))
        return (needs_context(),)

    def cuEventCreate(flags: int) -> tuple[Any, Any]:
        handle = state.handle()
        state.events[handle] = 0.0
        return needs_context(), real.CUevent(handle)

    def cuEventRecord(event: Any, stream: Any) -> tuple[Any]:
        state.events[int(event)] = time.perf_counter()
        state.event_streams[int(event)] = int(stream)
        return (needs_context(),)

    def cuEventSynchronize(event: Any) -> tuple[Any]:
        return (needs_context(),)

    def cuEventElapsedTime(start: Any, end: Any) -> tuple[Any, float]:
        return needs_context(), 1000 * (state.events[int(end)] - state.events[int(start)]) + 1e-3

    def cuEventDestroy(event: Any) -> tuple[Any]:
        state.events.pop(int(event), None)
        return (needs_context(),)

    def cuTensorMapEncodeTiled(
        data_type: Any,
        rank: int,
        address: int,
        sizes: list[Any],
        strides: list[Any],
        box: list[Any],
        element_strides: list[Any],
        interleave: Any,
        swizzle: Any,
        promotion: Any,
        fill: Any,
    ) -> tuple[Any, Any]:
        error = needs_context()
        if error:
            return error, None
        words = [int(address), int(rank), *(int(size) for size in sizes), *(int(extent) for extent in box)]
        encoded = (ctypes.c_uint64 * FAKE_TENSOR_MAP_WORDS)(*words)
        state.tensor_maps.append(encoded)
        return SUCCESS, SimpleNamespace(getPtr=lambda: ctypes.addressof(encoded))

    def cuGetErrorName(error: Any) -> tuple[Any, bytes]:
        return SUCCESS, error.name.encode()

    def cuGetErrorString(error: Any) -> tuple[Any, bytes]:
        return SUCCESS, f"fake description of {error.name}".encode()

    functions = {name: value for name, value in locals().items() if name.startswith("cu")}
    if _real_driver_is_missing():
        functions = {name: _checked_by_real_binding(name, function) for name, function in functions.items()}
    types = {
        name: getattr(real, name)
        for name in (
            "CUresult",
            "CUstream",
            "CUevent",
            "CUgraph",
            "CUgraphExec",
            "CUstreamCaptureMode",
            "CUcontext",
            "CUdevice",
            "CUdeviceptr",
            "CUdevice_attribute",
            "CUfunction_attribute",
            "CUjit_option",
            "CUjitInputType",
            "CUlinkState",
            "CUevent_flags",
            "CUstream_flags",
            "CUpointer_attribute",
            "cuuint32_t",
            "cuuint64_t",
            "CUtensorMapDataType",
            "CUtensorMapInterleave",
            "CUtensorMapSwizzle",
            "CUtensorMapL2promotion",
            "CUtensorMapFloatOOBfill",
        )
    }
    return SimpleNamespace(**functions, **types)


def _real_driver_is_missing() -> bool:
    """True where libcuda cannot be loaded, so that calling the real bindings cannot reach a GPU."""
    with _in_real_binding():
        try:
            real.cuInit(0)
        except Exception:  # cuda-python's "driver library not found"
            return True
    return False


_inside_real_binding = threading.local()
"""Whether this thread is inside a real binding's call (see `_checked_by_real_binding`)."""


@contextmanager
def _in_real_binding() -> Iterator[None]:
    """Marks this thread as inside a real binding's call for the block.

    A finalizer (a module unloaded when its last reference goes, from an earlier test's fake) can
    run inside any real binding's call, `cuInit` in `_real_driver_is_missing` included, while the
    binding holds its library-loading lock, which is not reentrant: a checked call made there
    must not call the real binding again (the suite hung so in test_call_streams.py, three times).
    """
    outer = getattr(_inside_real_binding, "active", False)
    _inside_real_binding.active = True
    try:
        yield
    finally:
        _inside_real_binding.active = outer


def _checked_by_real_binding(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, after passing its arguments through the real binding of `name`.

    cuda-python converts arguments before it loads libcuda, so without a driver the real call
    fails with "library not found" when the arguments are acceptable, and with TypeError or
    ValueError (or OverflowError) when the real driver would reject them too.
    """
    binding = getattr(real, name)

    def checked(*arguments: Any) -> Any:
        # Nested in a real binding's call (a finalizer's call, see `_in_real_binding`), the check
        # is skipped: the outer call checks its own arguments.
        if getattr(_inside_real_binding, "active", False):
            return function(*arguments)
        with _in_real_binding():
            try:
                binding(*arguments)
            except (TypeError, ValueError, OverflowError) as error:
                raise AssertionError(f"the real {name} rejects the arguments {arguments!r}: {error}") from error
            except Exception:  # the driver library is missing: the arguments were accepted
                pass
        return function(*arguments)

    return checked


def install(monkeypatch: Any) -> FakeState:
    """Routes mlc.runtime.cuda to a fresh fake driver for the test; returns its state."""
    from mlc.runtime import cuda_devices, cuda_driver

    state = FakeState()
    driver = make_driver(state)
    monkeypatch.setattr(cuda_driver, "driver_module", lambda: driver)
    monkeypatch.setattr(cuda_devices, "_DEVICES", {})
    return state
