"""Host-memory (numpy) buffers: the checks every executor shares, and `HostMemoryExecutor`.

The checks (dtype and shape, alignment, what counts as a host array, the messages that say how to
convert a value) are the ones `HostProgram` applies to arguments and outputs on every device
(host.py's docstring, "Arguments"). `NumpyFastCheck` takes the pointer of a numpy array that is
exactly what a slot expects in one step; anything else goes to `_HostArgumentBinder`, which uses
an array in place when it can and otherwise stages it into an aligned buffer of the program.
`HostMemoryExecutor` is the executor whose buffers are aligned numpy arrays: `CpuExecutor`'s base
(cpu_executor.py), and the tests' (with Python kernels).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError, OutOfMemoryError, format_bytes
from mlc.runtime.executor import ArgumentBinder, Buffer, Executor, PointerCheck
from mlc.runtime.slots import ArgumentSlot, BufferSpec

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
