"""Arrays owned by other libraries, used in place: `__cuda_array_interface__`, DLPack, PyTorch.

`device_array_view(value)` gives the device pointer, shape and dtype behind another library's
CUDA array (PyTorch, CuPy, JAX, ...) after checking that it is C-contiguous and on a CUDA device,
and orders the producer's pending work before the stream that will use it (the interface's
`stream` key, DLPack's `stream` argument). `__cuda_array_interface__` is tried first (no capsule
to create), then DLPack (which also covers bf16 and tensors whose array interface refuses). Host
arrays (DLPack CPU) give None: the caller copies them.

`TorchFastCheck` is the shortcut for PyTorch CUDA tensors on the hot path of small kernels: a few
C-level accessors instead of building the array interface and asking the driver which device a
pointer belongs to; anything unusual falls back to `device_array_view`.

Built on `cuda.py` (streams, the driver's pointer queries), which knows nothing of this module: a
view's `pointer` is what `KernelArguments` takes as device memory.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlc.runtime import cuda
from mlc.runtime.cuda import LEGACY_STREAM_EXCHANGE_VALUE, Stream, describe_error


DLPACK_CPU = 1
DLPACK_CUDA = 2
DLPACK_CUDA_HOST = 3
DLPACK_CUDA_MANAGED = 13
_DLPACK_DEVICE_NAMES = {
    1: "CPU",
    2: "CUDA",
    3: "CUDA host (pinned)",
    4: "OpenCL",
    7: "Vulkan",
    8: "Metal",
    10: "ROCm",
    13: "CUDA managed",
}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


# Private prototypes, so that the shared `ctypes.pythonapi` function objects keep their settings.
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


@dataclass(frozen=True)
class DeviceArrayView:
    """Device memory owned by another library; `owner` keeps it alive while the view is used."""

    pointer: int
    shape: tuple[int, ...]
    dtype: np.dtype
    device_ordinal: int
    owner: object
    protocol: str  # "__cuda_array_interface__" or "DLPack"


def _dlpack_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    if lanes != 1:
        raise ValueError(f"DLPack vector types ({lanes} lanes) are not supported")
    if code == 0 and bits in (8, 16, 32, 64):
        return np.dtype(f"int{bits}")
    if code == 1 and bits in (8, 16, 32, 64):
        return np.dtype(f"uint{bits}")
    if code == 2 and bits in (16, 32, 64):
        return np.dtype(f"float{bits}")
    if code == 4 and bits == 16:
        from mlc.dialects.element_types import bfloat16_dtype

        return bfloat16_dtype()
    if code == 6 and bits == 8:
        return np.dtype(np.bool_)
    raise ValueError(f"unsupported DLPack dtype (code {code}, {bits} bits)")


def is_c_contiguous(shape: Sequence[int], strides: Sequence[int] | None, unit: int) -> bool:
    """Whether `strides` (in multiples of `unit`) describe a dense row-major array of `shape`."""
    if strides is None:
        return True
    expected = unit
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size == 0:
            return True
        if size != 1 and stride != expected:  # a stride of a dimension of size 1 never matters
            return False
        expected *= size
    return True


def _cuda_array_interface(value: object) -> tuple[dict[str, Any] | None, Exception | None]:
    try:
        return value.__cuda_array_interface__, None  # type: ignore[attr-defined]
    except AttributeError:
        return None, None
    except Exception as error:  # e.g. PyTorch refuses tensors that require grad, and bf16
        return None, error


def _pointer_device_ordinal(pointer: int, description: str) -> int:
    driver = cuda.driver_module()  # looked up on the module, so tests can substitute a fake driver
    attribute = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    error, ordinal = driver.cuPointerGetAttribute(attribute, pointer)
    if error:
        name, text = describe_error(error)
        raise ValueError(
            f"{description}: its __cuda_array_interface__ pointer {pointer:#x} is not memory CUDA "
            f"knows ({name}: {text})"
        )
    return int(ordinal)


def _view_from_interface(
    value: object, interface: dict[str, Any], description: str, stream: Stream | None
) -> DeviceArrayView:
    if interface.get("mask") is not None:
        raise ValueError(f"{description}: masked arrays are not supported")
    shape = tuple(int(d) for d in interface["shape"])
    dtype = np.dtype(interface["typestr"])
    strides = interface.get("strides")
    if not is_c_contiguous(shape, strides, dtype.itemsize):
        raise ValueError(
            f"{description}: the array is not C-contiguous (strides {tuple(strides)} bytes for shape "
            f"{shape}); pass a contiguous copy (e.g. tensor.contiguous())"
        )
    pointer = int(interface["data"][0] or 0)
    ordinal = (
        _pointer_device_ordinal(pointer, description) if pointer else (stream.device.ordinal if stream else 0)
    )
    if stream is not None:
        stream.wait_for(interface.get("stream"))
    return DeviceArrayView(pointer, shape, dtype, ordinal, value, "__cuda_array_interface__")


def dlpack_device(value: object) -> tuple[int, int] | None:
    """(DLPack device type, device id) of `value`, or None when it does not speak DLPack."""
    query = getattr(value, "__dlpack_device__", None)
    if query is None or not hasattr(value, "__dlpack__"):
        return None
    device_type, device_id = query()
    return int(device_type), int(device_id)


def _managed_tensor(capsule: object, description: str) -> _DLTensor:
    if _capsule_is_valid(capsule, b"dltensor"):
        return _DLManagedTensor.from_address(_capsule_get_pointer(capsule, b"dltensor")).dl_tensor
    if _capsule_is_valid(capsule, b"dltensor_versioned"):
        managed = _DLManagedTensorVersioned.from_address(_capsule_get_pointer(capsule, b"dltensor_versioned"))
        return managed.dl_tensor
    raise ValueError(f"{description}: __dlpack__ did not return a DLPack capsule")


def _view_from_dlpack(value: object, description: str, stream: Stream | None) -> DeviceArrayView:
    exchange = stream.exchange_value if stream is not None else LEGACY_STREAM_EXCHANGE_VALUE
    try:
        try:  # the producer orders the consumer's stream after its pending work on the array
            capsule = value.__dlpack__(stream=exchange)  # type: ignore[attr-defined]
        except TypeError:  # producers older than the `stream` keyword
            capsule = value.__dlpack__()  # type: ignore[attr-defined]
    except Exception as error:  # e.g. PyTorch refuses tensors that require grad
        raise ValueError(f"{description}: exporting it through DLPack failed: {error}") from error
    # The capsule is not renamed "used_dltensor": its destructor returns the tensor to the
    # producer when the view (which keeps the capsule as its owner) is dropped.
    tensor = _managed_tensor(capsule, description)
    shape = tuple(int(tensor.shape[i]) for i in range(tensor.ndim))
    dtype = _dlpack_dtype(tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    strides = tuple(int(tensor.strides[i]) for i in range(tensor.ndim)) if tensor.strides else None
    if not is_c_contiguous(shape, strides, 1):
        raise ValueError(
            f"{description}: the array is not C-contiguous (strides {strides} elements for shape "
            f"{shape}); pass a contiguous copy (e.g. tensor.contiguous())"
        )
    pointer = int(tensor.data or 0) + int(tensor.byte_offset)
    return DeviceArrayView(pointer, shape, dtype, int(tensor.device.device_id), (value, capsule), "DLPack")


_TORCH_DTYPE_NAMES = {
    "float32": "float32",
    "float16": "float16",
    "float64": "float64",
    "bfloat16": "bfloat16",
    "int32": "int32",
    "int64": "int64",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}


class TorchFastCheck:
    """Takes a PyTorch CUDA tensor's pointer with a few C-level calls, when nothing is unusual.

    `pointer(value)` returns the pointer of a contiguous tensor of the expected dtype and shape on
    the expected device, aligned enough, not requiring grad; otherwise None, and the caller takes
    the general path (`device_array_view`), which also reports any problem precisely. Reading
    PyTorch's `__cuda_array_interface__` and asking the driver which device a pointer belongs to
    cost several microseconds per tensor: for small kernels, more than the launch. Which stream
    the call then runs on (PyTorch's current one, unless the caller names another) is
    `call_streams.py`'s choice, not this check's.
    """

    def __init__(self, dtype: np.dtype, shape: tuple[int, ...], ordinal: int, alignment: int):
        self.dtype_name = _TORCH_DTYPE_NAMES.get(np.dtype(dtype).name, "")
        self.shape = tuple(shape)
        self.ordinal = ordinal
        self.alignment = max(alignment, 1)
        self._torch_dtype: object = None

    def _resolve(self) -> bool:
        torch = sys.modules.get("torch")
        if torch is None or not self.dtype_name:
            return False
        self._torch_dtype = getattr(torch, self.dtype_name, None)
        return self._torch_dtype is not None

    def pointer(self, value: object) -> int | None:
        if type(value).__name__ != "Tensor" or not getattr(value, "is_cuda", False):
            return None
        if self._torch_dtype is None and not self._resolve():
            return None
        tensor: Any = value
        if (
            tensor.dtype is not self._torch_dtype
            or tensor.shape != self.shape
            or not tensor.is_contiguous()
            or tensor.get_device() != self.ordinal
            or tensor.requires_grad
        ):
            return None
        pointer = tensor.data_ptr()
        return None if pointer % self.alignment else pointer


def device_array_view(
    value: object, description: str = "the array", stream: Stream | None = None
) -> DeviceArrayView | None:
    """The device memory behind `value`, used in place; None when `value` exposes no device memory.

    Tries `__cuda_array_interface__` first (no capsule to create), then DLPack (which also covers
    bf16 and tensors whose array interface refuses). Non-contiguous arrays and pointers CUDA does
    not know raise ValueError naming `description`. `stream` is the stream that will use the
    memory: the producer's pending work is ordered before it (the interface's `stream` key, or
    DLPack's `stream` argument). Arrays in host memory (DLPack CPU) give None: copy them instead.
    """
    interface, interface_error = _cuda_array_interface(value)
    if interface is not None:
        return _view_from_interface(value, interface, description, stream)
    device = dlpack_device(value)
    if device is not None:
        device_type, _ = device
        if device_type in (DLPACK_CUDA, DLPACK_CUDA_MANAGED):
            return _view_from_dlpack(value, description, stream)
        if device_type in (DLPACK_CPU,):
            return None
        raise ValueError(
            f"{description}: DLPack arrays on {_DLPACK_DEVICE_NAMES.get(device_type, f'device type {device_type}')} "
            "memory are not supported; pass a CUDA or host array"
        )
    if interface_error is not None:
        raise ValueError(f"{description}: reading its __cuda_array_interface__ failed: {interface_error}")
    return None
