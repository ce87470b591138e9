"""Device memory: `DeviceBuffer` (arrays mlc allocates) and the copies between host and device.

What: `cuMemAlloc`'d row-major arrays, aligned to at least 256 bytes, freed by `close()` or
garbage collection; copies host -> device, device -> host and device -> device on a stream; a
`__cuda_array_interface__` (v3) that names the stream producers enqueue work on.

Preconditions: host arrays are C-contiguous (the destination of a copy to the host writable).
Limits: copies with pageable host memory are synchronous for the host (the driver makes them
so); freeing memory synchronizes the device, so reuse buffers in loops; the array interface
describes bf16 as `<V2` (it has no bf16 type code).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from mlc.errors import CudaError
from mlc.runtime import cuda_driver
from mlc.runtime.cuda_devices import Device, get_device
from mlc.runtime.cuda_driver import call_in_context, check
from mlc.runtime.cuda_streams import Stream


def copy_host_to_device(destination: int, source: np.ndarray, stream: Stream) -> None:
    """Copies the C-contiguous `source` to device memory at `destination` (host-synchronous)."""
    if source.nbytes == 0:
        return
    driver = cuda_driver.driver_module()
    with stream.device.activated():
        check(
            driver.cuMemcpyHtoDAsync(destination, source.ctypes.data, source.nbytes, stream.handle),
            f"copying {source.nbytes} bytes from the host to device memory at {destination:#x}",
        )


def copy_device_to_host(destination: np.ndarray, source: int, stream: Stream) -> None:
    """Copies device memory at `source` into the C-contiguous, writable `destination`.

    Into pageable memory the driver returns only once the copy is done, so the data is ready.
    """
    if destination.nbytes == 0:
        return
    driver = cuda_driver.driver_module()
    with stream.device.activated():
        check(
            driver.cuMemcpyDtoHAsync(destination.ctypes.data, source, destination.nbytes, stream.handle),
            f"copying {destination.nbytes} bytes from device memory at {source:#x} to the host",
        )


def copy_device_to_device(destination: int, source: int, nbytes: int, stream: Stream) -> None:
    if nbytes == 0:
        return
    driver = cuda_driver.driver_module()
    with stream.device.activated():
        check(
            driver.cuMemcpyDtoDAsync(destination, source, nbytes, stream.handle),
            f"copying {nbytes} bytes on the device from {source:#x} to {destination:#x}",
        )


def _free_memory(driver: ModuleType, context: Any, pointer: int) -> None:
    call_in_context(
        driver, context, lambda: driver.cuMemFree(pointer), f"freeing device memory at {pointer:#x}"
    )


class DeviceBuffer:
    """A contiguous row-major array in device memory that mlc allocated (`cuMemAlloc`).

    Allocations are aligned to at least 256 bytes. The memory is freed by `close()` or when the
    buffer is garbage collected. `stream` is the stream its producers enqueue work on; the array
    interface reports it, so that consumers such as PyTorch order themselves after that work.
    """

    ALIGNMENT = 256

    def __init__(
        self,
        shape: Sequence[int],
        dtype: np.dtype | type,
        device: Device | None = None,
        stream: Stream | None = None,
    ):
        self.device = device or get_device()
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        self.stream = stream or Stream.legacy_default(self.device)
        self._driver = cuda_driver.driver_module()
        self._pointer = 0
        self._finalizer: weakref.finalize | None = None
        if self.nbytes == 0:  # cuMemAlloc rejects 0 bytes; an empty array needs no memory
            return
        with self.device.activated():
            pointer = check(
                self._driver.cuMemAlloc(self.nbytes),
                f"allocating {self.nbytes} bytes for a {self.dtype.name} array of shape {self.shape} "
                f"on {self.device.properties.summary()}",
            )
        self._pointer = int(pointer)
        self._finalizer = weakref.finalize(
            self, _free_memory, self._driver, self.device.context, self._pointer
        )
        self._finalizer.atexit = False  # the process is ending: the driver reclaims everything

    @classmethod
    def empty(
        cls, shape: Sequence[int], dtype: np.dtype | type, device: Device | None = None
    ) -> DeviceBuffer:
        return cls(shape, dtype, device)

    @classmethod
    def zeros(
        cls, shape: Sequence[int], dtype: np.dtype | type, device: Device | None = None
    ) -> DeviceBuffer:
        buffer = cls(shape, dtype, device)
        buffer.fill_zero()
        return buffer

    @classmethod
    def from_numpy(
        cls, array: np.ndarray, device: Device | None = None, stream: Stream | None = None
    ) -> DeviceBuffer:
        buffer = cls(array.shape, array.dtype, device, stream)
        buffer.copy_from_host(array)
        return buffer

    @property
    def pointer(self) -> int:
        if self._finalizer is not None and not self._finalizer.alive:
            raise CudaError(f"{self!r} was closed; its device memory is freed")
        return self._pointer

    @property
    def closed(self) -> bool:
        return self._finalizer is not None and not self._finalizer.alive

    def close(self) -> None:
        """Frees the device memory now (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"at {self._pointer:#x}"
        return f"<DeviceBuffer {self.dtype.name}{list(self.shape)} {state} on device {self.device.ordinal}>"

    def _check_host_array(self, array: np.ndarray, what: str) -> None:
        if array.dtype != self.dtype or array.size != self.size:
            raise ValueError(
                f"cannot copy {what} a {array.dtype.name} array of shape {array.shape}: the device "
                f"buffer holds {self.dtype.name} of shape {self.shape}"
            )

    def copy_from_host(self, array: np.ndarray, stream: Stream | None = None) -> None:
        """Copies `array` (same dtype and element count) into this buffer."""
        self._check_host_array(array, "from")
        copy_host_to_device(
            self.pointer if self.nbytes else 0, np.ascontiguousarray(array), stream or self.stream
        )

    def copy_to_host(self, out: np.ndarray | None = None, stream: Stream | None = None) -> np.ndarray:
        """This buffer as a new numpy array (or written into `out`, C-contiguous, same dtype and size)."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        else:
            self._check_host_array(out, "into")
            if not out.flags.c_contiguous or not out.flags.writeable:
                raise ValueError("the host array to copy into must be C-contiguous and writable")
        copy_device_to_host(out, self.pointer if self.nbytes else 0, stream or self.stream)
        return out

    def to_numpy(self) -> np.ndarray:
        return self.copy_to_host()

    def copy_from_device(self, source_pointer: int, nbytes: int, stream: Stream | None = None) -> None:
        """Copies `nbytes` from device memory at `source_pointer` into this buffer."""
        if nbytes != self.nbytes:
            raise ValueError(f"cannot copy {nbytes} bytes into {self!r}, which holds {self.nbytes}")
        copy_device_to_device(self.pointer if nbytes else 0, source_pointer, nbytes, stream or self.stream)

    def fill_zero(self, stream: Stream | None = None) -> None:
        if self.nbytes == 0:
            return
        stream = stream or self.stream
        with self.device.activated():
            check(
                self._driver.cuMemsetD8Async(self.pointer, 0, self.nbytes, stream.handle), f"zeroing {self!r}"
            )

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.pointer, False),
            "strides": None,
            "version": 3,
            "stream": self.stream.exchange_value,
        }
