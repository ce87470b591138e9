"""The interpreter's memory: byte buffers in one virtual address space.

Every buffer (a host array, a `memref.alloc`, a `memref.global`, a shared-memory allocation, an
`llvm.alloca`) is a numpy `uint8` array placed at a base address in a 64-bit virtual address space.
Pointers are plain int64 addresses, so pointer values flow through `select`, block arguments and
`ptrtoint`/`inttoptr` like any integer, and one lane array of addresses may point into several
buffers. A buffer that holds one copy per block (shared memory) or per lane (private memory) is one
allocation of `units * unit_bytes`; the interpreter adds the unit's offset to the base.

Loads and stores reinterpret the bytes with the accessed dtype (`view`), so a buffer written as
`f32` can be read as `i32` or as `vector<4xf32>`, as in LLVM. Aligned accesses use a typed view;
misaligned ones gather bytes.

Bases start at 4096 (address 0 is never valid), are aligned to 256 and separated by a 256-byte
guard, and are never reused after a buffer is released, so off-by-a-little, null and dangling
accesses land outside every buffer and are reported as `OutOfBounds`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from mlc.interpreter.errors import OutOfBounds

_FIRST_ADDRESS = 4096
_ALIGNMENT = 256
_GUARD = 256


class BufferKind:
    """Where a buffer lives, which decides how races on it are checked."""

    GLOBAL = "global"
    CONSTANT = "constant"
    SHARED = "shared"
    PRIVATE = "private"


@dataclass(eq=False)
class Buffer:
    """One allocation: `units` copies of `unit_bytes` bytes (one per block, lane, or just one)."""

    name: str
    base: int
    data: np.ndarray
    kind: str
    unit_bytes: int
    units: int
    granularity: int
    element_shape: tuple[int, ...] = ()
    read_only: bool = False
    description: str = field(default="")

    @property
    def size(self) -> int:
        return self.unit_bytes * self.units

    @property
    def end(self) -> int:
        return self.base + self.size

    def describe(self) -> str:
        kind = "" if self.kind == BufferKind.GLOBAL else f"{self.kind} "
        suffix = f" ({self.description})" if self.description else ""
        return f"{kind}buffer '{self.name}'{suffix}"

    def element_index(self, key: int) -> tuple[int, ...]:
        """The logical index of element `key` of one unit, for messages."""
        count = int(np.prod(self.element_shape)) if self.element_shape else 0
        if count and 0 <= key < count:
            return tuple(int(i) for i in np.unravel_index(key, self.element_shape))
        return (key,)


@dataclass(frozen=True)
class Piece:
    """The part of an access that falls into one buffer: `positions` select it from the access."""

    buffer: Buffer
    positions: slice | np.ndarray
    offsets: np.ndarray


class Memory:
    """All buffers of one interpreter run."""

    def __init__(self) -> None:
        self._buffers: list[Buffer] = []
        self._bases: list[int] = []
        self._next_address = _FIRST_ADDRESS

    def allocate(
        self,
        name: str,
        unit_bytes: int,
        units: int = 1,
        kind: str = BufferKind.GLOBAL,
        granularity: int = 1,
        element_shape: tuple[int, ...] = (),
        fill: np.ndarray | None = None,
        description: str = "",
    ) -> Buffer:
        """A new buffer; `fill` (a 0-d array) is repeated over its bytes, else it is zero."""
        size = unit_bytes * units
        # Round the storage up so that every dtype view of it is well formed.
        data = np.zeros(-(-max(size, 1) // 16) * 16, dtype=np.uint8)
        if fill is not None:
            pattern = np.asarray(fill).tobytes()
            if pattern and any(pattern):
                repeated = np.frombuffer(pattern * (-(-data.size // len(pattern))), dtype=np.uint8)
                data[:] = repeated[: data.size]
        base = -(-self._next_address // _ALIGNMENT) * _ALIGNMENT
        self._next_address = base + max(size, 1) + _GUARD
        buffer = Buffer(
            name,
            base,
            data,
            kind,
            unit_bytes,
            units,
            max(granularity, 1),
            element_shape,
            description=description,
        )
        index = bisect.bisect(self._bases, base)
        self._bases.insert(index, base)
        self._buffers.insert(index, buffer)
        return buffer

    def allocate_array(
        self, name: str, array: np.ndarray, kind: str = BufferKind.GLOBAL, read_only: bool = False
    ) -> Buffer:
        """A buffer holding a copy of `array` (C order)."""
        contiguous = np.ascontiguousarray(array)
        buffer = self.allocate(
            name,
            contiguous.nbytes,
            kind=kind,
            granularity=max(contiguous.dtype.itemsize, 1),
            element_shape=contiguous.shape,
        )
        buffer.data[: contiguous.nbytes] = contiguous.reshape(-1).view(np.uint8)
        buffer.read_only = read_only
        return buffer

    def release(self, buffer: Buffer) -> None:
        index = bisect.bisect_left(self._bases, buffer.base)
        if index < len(self._buffers) and self._buffers[index] is buffer:
            del self._bases[index]
            del self._buffers[index]

    def buffer_at(self, address: int) -> Buffer | None:
        index = bisect.bisect_right(self._bases, address) - 1
        if index < 0:
            return None
        buffer = self._buffers[index]
        return buffer if address < buffer.end else None

    def locate(self, addresses: np.ndarray, size: int) -> list[Piece]:
        """Splits flat `addresses` (each accessing `size` bytes) by buffer; raises `OutOfBounds`."""
        if addresses.size == 0:
            return []
        low, high = int(addresses.min()), int(addresses.max())
        buffer = self.buffer_at(low)
        if buffer is not None and high + size <= buffer.end:
            return [Piece(buffer, slice(None), addresses - buffer.base)]
        bases = np.asarray(self._bases, dtype=np.int64)
        indices = np.searchsorted(bases, addresses, side="right") - 1
        pieces = []
        for index in np.unique(indices):
            positions = np.nonzero(indices == index)[0]
            selected = addresses[positions]
            candidate = self._buffers[index] if index >= 0 else None
            if candidate is None or int(selected.max()) + size > candidate.end:
                bad = selected if candidate is None else selected[selected + size > candidate.end]
                raise OutOfBounds(self._explain(int(bad[0]), size))
            pieces.append(Piece(candidate, positions, selected - candidate.base))
        return pieces

    def _explain(self, address: int, size: int) -> str:
        index = bisect.bisect_right(self._bases, address) - 1
        if index >= 0:
            buffer = self._buffers[index]
            return (
                f"out-of-bounds access of {size} bytes at byte {address - buffer.base} of "
                f"{buffer.describe()}, which has {buffer.size} bytes"
            )
        return f"access of {size} bytes at address {address:#x}, which is in no buffer"

    @staticmethod
    def gather(piece: Piece, dtype: np.dtype) -> np.ndarray:
        offsets = piece.offsets
        itemsize = dtype.itemsize
        if not (offsets % itemsize).any():
            return piece.buffer.data.view(dtype)[offsets // itemsize]
        byte_indices = offsets[:, None] + np.arange(itemsize)
        return piece.buffer.data[byte_indices].copy().view(dtype).reshape(offsets.shape)

    @staticmethod
    def scatter(piece: Piece, dtype: np.dtype, values: np.ndarray) -> None:
        offsets = piece.offsets
        itemsize = dtype.itemsize
        values = np.asarray(values, dtype=dtype)
        if not (offsets % itemsize).any():
            piece.buffer.data.view(dtype)[offsets // itemsize] = values
            return
        byte_indices = offsets[:, None] + np.arange(itemsize)
        piece.buffer.data[byte_indices] = np.ascontiguousarray(values).view(np.uint8).reshape(-1, itemsize)

    def read_array(
        self, address: int, shape: Sequence[int], strides: Sequence[int], dtype: np.dtype
    ) -> np.ndarray:
        """The elements of a strided array at `address` (a copy), for returning results."""
        offsets = np.zeros((), dtype=np.int64)
        for axis, (size, stride) in enumerate(zip(shape, strides)):
            axis_shape = [1] * len(shape)
            axis_shape[axis] = size
            offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(axis_shape)
        offsets = np.broadcast_to(offsets, tuple(shape))
        addresses = (address + offsets * dtype.itemsize).reshape(-1)
        result = np.empty(addresses.size, dtype=dtype)
        for piece in self.locate(addresses, dtype.itemsize):
            result[piece.positions] = self.gather(piece, dtype)
        return result.reshape(tuple(shape))
