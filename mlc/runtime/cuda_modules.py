"""Kernels on a CUDA device: `CudaModule` (loading PTX or a cubin), `CudaFunction` (a kernel and its
launches) and `KernelArguments` (a launch site's parameter block).

Loading: PTX goes through `cuModuleLoadDataEx` (the driver JIT-compiles it); a failure raises
CudaError with the JIT's log and says when the PTX targets a newer architecture than the device.
With `keep_cubin` the PTX is compiled by the driver's JIT linker and the cubin kept (the compile
cache stores it); a given cubin is loaded without JIT. Both fall back to the PTX when the driver
refuses the image.

Launching: `KernelArguments` holds one 8-byte cell per parameter and the array of their addresses
for the lifetime of a launch site, so a call rewrites only the cells that changed (the driver
copies the parameters at enqueue time); `CudaFunction.enqueue` is `cuLaunchKernel` itself, and a
failed launch names the kernel, its grid, block and shared memory, and what kernel and device
allow. Preconditions: parameters are device pointers or numpy scalars of at most 8 bytes (no
structs by value); `enqueue` needs the device's context current (`Device.activated`).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from mlc.errors import CudaError
from mlc.runtime import cuda_driver
from mlc.runtime.cuda_devices import Device, get_device
from mlc.runtime.cuda_driver import call_in_context, check, error_from_result
from mlc.runtime.cuda_streams import Stream


def format_dimensions(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def launch_dimensions(value: int | Sequence[int], what: str) -> tuple[int, int, int]:
    """`n`, `(x,)`, `(x, y)` or `(x, y, z)` as three dimensions."""
    dimensions = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if not 1 <= len(dimensions) <= 3:
        raise ValueError(f"{what} has one to three dimensions, got {value!r}")
    return dimensions + (1,) * (3 - len(dimensions))  # type: ignore[return-value]


_JIT_LOG_BYTES = 64 * 1024


def _ptx_directive(ptx: str, directive: str) -> str | None:
    match = re.search(rf"^\s*\.{directive}\s+([\w.]+)", ptx, re.MULTILINE)
    return match.group(1) if match else None


def ptx_entry_names(ptx: str) -> list[str]:
    """The kernels (`.entry`) that a PTX text defines."""
    return re.findall(r"\.entry\s+([\w$.]+)\s*\(", ptx)


def _unload_module(driver: ModuleType, context: Any, handle: Any) -> None:
    call_in_context(driver, context, lambda: driver.cuModuleUnload(handle), "unloading a CUDA module")


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
        self._driver = cuda_driver.driver_module()
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
