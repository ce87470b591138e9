"""TMA tensor maps in device memory: encoded once per operand pointer, passed as plain pointers.

What. A bulk tensor copy (`cp.async.bulk.tensor`, sm_90) reads its source's shape, strides, box
and swizzle from a 128-byte *tensor map* (`CUtensorMap`) that holds the operand's device address.
The usual way to hand it to a kernel is a 128-byte by-value `__grid_constant__` parameter, which
mlc's launch path (one 8-byte cell per parameter) and llvmlite 0.50 (no typed `byval` on opaque
pointers, no string parameter attributes) cannot express. The CUDA programming guide allows the
map in global memory instead: the host encodes it (`cuTensorMapEncodeTiled`) and copies it to
device memory, the kernel receives an ordinary pointer, and each thread that issues copies from
it first runs `fence.proxy.tensormap::generic.acquire.gpu [map], 128` (PTX 8.3, sm_90), which
orders the map's bytes, written through the generic proxy, before the copy engine reads them
through the tensormap proxy. `TMA_FENCE` is that instruction.

Algorithm. `TensorMapTable` keeps the maps of one program in a single device allocation of
`capacity` 128-byte slots (64-byte aligned, as the driver requires), keyed by (operand pointer,
`TensorMapGeometry`). `address(pointer, geometry)` returns the device address of the slot holding
that key's map, encoding and uploading it on first use (`on_device` waits for the upload, so a
launch enqueued afterwards on any stream sees the bytes; it is rare: a new operand pointer).
The host runtime (`runtime.host`) gives each tensor-map parameter of a kernel (`mlc.tensor_maps`,
read by `runtime.plan`) a table of its own and updates the parameter when its buffer moves. A slot's bytes never change while its key
is cached: a map depends only on its key.

CUDA graphs. A captured graph keeps the kernel parameters it saw, i.e. the slot addresses, not
the bytes. Since a slot is immutable while cached, a graph replays correctly as long as every
slot it captured still holds its key. When the table is full, the least recently used slot is
reused for a new key and `generation` increases: a program that keeps captured graphs (keyed by
its operand pointers, `runtime.host`) drops them when the generation it captured under changes,
so no graph can see a slot rewritten for another operand.

Preconditions: a device of compute capability 9.0 or newer; operands of rank 1 to 5 whose strides
(all but the innermost, which is 1 element) are multiples of 16 bytes and whose base address is
16-byte aligned; box sizes of 1 to 256 elements with the innermost box a multiple of 16 bytes (and,
with a swizzle, at most the swizzle span).
Limits: tiled maps only (no im2col); f16, bf16 and f32 elements; no L2 promotion hints.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGNMENT = 64
TMA_FENCE = "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;"
"""Inline PTX (operand: the map's generic address, constraint `l`) run by a thread before its
first bulk tensor copy from a map that lives in global memory (see the module docstring)."""
SWIZZLE_SPANS = (0, 32, 64, 128)
"""Swizzle spans in bytes a tensor map can apply (0: none)."""
ELEMENT_TYPES = {"f16": ("FLOAT16", 2), "bf16": ("BFLOAT16", 2), "f32": ("FLOAT32", 4)}
"""Element type -> (`CU_TENSOR_MAP_DATA_TYPE_*` suffix, bytes)."""

TENSOR_MAP_OPERAND_ALIGNMENT = 16
"""Bytes a tensor map's operand address must be a multiple of."""


def element_of_dtype(dtype: np.dtype) -> str | None:
    """The tensor-map element name of a numpy dtype (ml_dtypes' bfloat16 too), or None."""
    return {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}.get(np.dtype(dtype).name)


class TensorMapError(ValueError):
    """A tensor map that the copy engine cannot take (see the module docstring's preconditions)."""


@dataclass(frozen=True)
class TensorMapGeometry:
    """What a tensor map says besides the operand's address: the element type, the operand's
    shape and byte strides, the box one copy moves and the swizzle it writes shared memory with.
    Dimensions are listed outermost first (numpy's order; the driver's is reversed)."""

    element: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int = 128

    @classmethod
    def row_major(cls, element: str, shape: tuple[int, ...], box: tuple[int, ...], swizzle: int = 128) -> TensorMapGeometry:
        """The geometry of a contiguous row-major operand."""
        size = ELEMENT_TYPES[element][1]
        strides, stride = [], size
        for extent in reversed(shape):
            strides.append(stride)
            stride *= extent
        return cls(element, tuple(shape), tuple(reversed(strides)), tuple(box), swizzle)

    @property
    def box_bytes(self) -> int:
        """Bytes one copy writes into shared memory (what its mbarrier's transaction count is)."""
        return int(np.prod(self.box)) * ELEMENT_TYPES[self.element][1]

    def check(self) -> None:
        """Raises TensorMapError naming the first precondition the geometry breaks."""
        if self.element not in ELEMENT_TYPES:
            raise TensorMapError(f"tensor maps take {', '.join(ELEMENT_TYPES)} elements, not {self.element}")
        size = ELEMENT_TYPES[self.element][1]
        rank = len(self.shape)
        if not 1 <= rank <= 5 or len(self.strides) != rank or len(self.box) != rank:
            raise TensorMapError(f"a tensor map has rank 1 to 5 with one stride and box size per dimension: {self}")
        if self.strides[-1] != size:
            raise TensorMapError(f"the innermost dimension must be contiguous ({size}-byte stride), not {self.strides[-1]}")
        if any(stride % 16 for stride in self.strides[:-1]):
            raise TensorMapError(f"every outer stride must be a multiple of 16 bytes: {self.strides}")
        if any(not 1 <= extent <= 256 for extent in self.box):
            raise TensorMapError(f"box sizes must be 1 to 256 elements: {self.box}")
        inner_bytes = self.box[-1] * size
        if inner_bytes % 16:
            raise TensorMapError(f"the innermost box must be a multiple of 16 bytes, not {inner_bytes}")
        if self.swizzle not in SWIZZLE_SPANS:
            raise TensorMapError(f"swizzle spans are {SWIZZLE_SPANS} bytes, not {self.swizzle}")
        if self.swizzle and inner_bytes > self.swizzle:
            raise TensorMapError(f"a {self.swizzle}-byte swizzle takes an innermost box of at most {self.swizzle} bytes, not {inner_bytes}")


def encode_tensor_map(driver: Any, pointer: int, geometry: TensorMapGeometry) -> bytes:
    """The 128 bytes of the tiled tensor map of the operand at `pointer` (`cuTensorMapEncodeTiled`)."""
    geometry.check()
    if pointer % TENSOR_MAP_OPERAND_ALIGNMENT:
        raise TensorMapError(f"a tensor map's operand must be 16-byte aligned, not at {pointer:#x}")
    cuuint64, cuuint32 = driver.cuuint64_t, driver.cuuint32_t
    data_type = getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{ELEMENT_TYPES[geometry.element][0]}")
    swizzle_name = "NONE" if not geometry.swizzle else f"{geometry.swizzle}B"
    error, tensor_map = driver.cuTensorMapEncodeTiled(
        data_type,
        len(geometry.shape),
        pointer,
        [cuuint64(extent) for extent in reversed(geometry.shape)],
        [cuuint64(stride) for stride in reversed(geometry.strides[:-1])],
        [cuuint32(extent) for extent in reversed(geometry.box)],
        [cuuint32(1) for _ in geometry.box],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzle_name}"),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if error:
        raise TensorMapError(f"cuTensorMapEncodeTiled refused {geometry} at {pointer:#x}: {error}")
    return ctypes.string_at(tensor_map.getPtr(), TENSOR_MAP_BYTES)


Upload = Callable[[int, np.ndarray], None]
"""Copies host bytes to a device address, ordered before later launches on the table's stream."""
Encode = Callable[[int, TensorMapGeometry], bytes]


class TensorMapTable:
    """The device-resident tensor maps of one program (see the module docstring)."""

    def __init__(self, base: int, capacity: int, encode: Encode, upload: Upload):
        if base % TENSOR_MAP_ALIGNMENT:
            raise TensorMapError(f"the table's slots must be {TENSOR_MAP_ALIGNMENT}-byte aligned, not at {base:#x}")
        self.base = base
        self.capacity = capacity
        self.generation = 0
        """Increases whenever a slot is given to another key (captured graphs must then go)."""
        self._encode = encode
        self._upload = upload
        self._slots: OrderedDict[tuple[int, TensorMapGeometry], int] = OrderedDict()

    @classmethod
    def on_device(cls, capacity: int = 64, device: Any = None) -> tuple[TensorMapTable, Any]:
        """A table in a new allocation on `device` (the default device if None; returned too, to be
        kept alive with the table) whose uploads finish before `address` returns."""
        from mlc.runtime.cuda import DeviceBuffer, Stream, copy_host_to_device, driver_module, get_device

        driver = driver_module()
        device = device or get_device()
        stream = Stream.legacy_default(device)
        storage = DeviceBuffer.empty((capacity * TENSOR_MAP_BYTES,), np.uint8, device=device)

        def encode(pointer: int, geometry: TensorMapGeometry) -> bytes:
            with stream.device.activated():  # the driver encodes in the current context
                return encode_tensor_map(driver, pointer, geometry)

        def upload(address: int, raw: np.ndarray) -> None:
            copy_host_to_device(address, raw, stream)
            stream.synchronize()  # rare (a new operand), and then seen by launches on any stream

        return cls(storage.pointer, capacity, encode, upload), storage

    def address(self, pointer: int, geometry: TensorMapGeometry) -> int:
        """The device address of the map of the operand at `pointer` (encoded on first use)."""
        key = (pointer, geometry)
        slot = self._slots.get(key)
        if slot is not None:
            self._slots.move_to_end(key)
            return self.base + slot * TENSOR_MAP_BYTES
        raw = np.frombuffer(self._encode(pointer, geometry), dtype=np.uint8)
        if len(self._slots) < self.capacity:
            slot = len(self._slots)
        else:
            _, slot = self._slots.popitem(last=False)
            self.generation += 1
        self._upload(self.base + slot * TENSOR_MAP_BYTES, raw)
        self._slots[key] = slot
        return self.base + slot * TENSOR_MAP_BYTES
