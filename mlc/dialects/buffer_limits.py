"""How large a tensor or buffer mlc accepts: no more than its targets can address.

`MAX_BUFFER_BYTES` is 2**48 bytes (256 TiB). No target mlc compiles for can hold a larger buffer:
an x86-64 Linux process has 2**47 bytes of address space (more only with 5-level paging, when it
asks), and an NVIDIA GPU's device memory is at most a few hundred GiB within a 2**49-byte unified
address space. The limit also keeps every index computation of the lowering, done in i64
(element offsets, their products with the element size, bounds rounded up to whole tiles and
blocks), far below 2**63, so none can overflow; the kernels use no i32 index arithmetic (thread
and block ids are read as i32 and widened first).

The graph dialect's verifier checks every tensor type with `buffer_size_problem`, the kernel
verifier every kernel parameter, and the runtime every host buffer before it allocates anything;
each names the value and its type. Whether a buffer below the limit fits in the memory of the
machine at hand is the runtime's question (mlc/runtime/host.py), asked before allocating.

Sizes are computed with Python integers, so no shape, however large, wraps around.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import Attribute

from mlc.errors import format_bytes  # noqa: F401 - re-exported: sizes in the dialects' messages

MAX_BUFFER_BYTES = 2**48


def element_bytes(element_type: Attribute) -> int:
    """Bytes one element of `element_type` takes in memory (i1 takes a byte; index 8)."""
    if isinstance(element_type, IndexType):
        return 8
    if isinstance(element_type, IntegerType):
        return max(1, (element_type.width.data + 7) // 8)
    bitwidth = getattr(element_type, "bitwidth", None)
    return max(1, (bitwidth + 7) // 8) if isinstance(bitwidth, int) else 8


def buffer_bytes(shape: Sequence[int], element_type: Attribute) -> int:
    return math.prod(shape) * element_bytes(element_type)


def buffer_size_problem(shape: Sequence[int], element_type: Attribute, type_text: str) -> str | None:
    """Why a buffer of `shape` and `element_type` (printed as `type_text`) is too large, or None."""
    nbytes = buffer_bytes(shape, element_type)
    if nbytes <= MAX_BUFFER_BYTES:
        return None
    return (
        f"{type_text} has {math.prod(shape)} elements ({format_bytes(nbytes)}), more than any target of mlc "
        f"can address (at most {format_bytes(MAX_BUFFER_BYTES)} a buffer)"
    )
