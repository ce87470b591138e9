"""Semantics of the memref and vector dialects: buffers, element access, vector transfers.

`memref.load`/`store` (and the vector loads and stores) check every index of every active lane
against the memref's shape, so an out-of-bounds access is an `OutOfBounds` error naming the op
and the index, then go through the engine, which resolves addresses and checks races. Memory from
`memref.alloc`/`alloca` is poisoned (NaN, 0xA5 bytes) so that outputs nobody wrote stand out; the
level decides how many copies an allocation has (one per lane, one per block for GPU shared
memory). `memref.global`s are allocated on first use: once per run, or once per launch (and per
block) in the shared and private memory spaces. `memref.atomic_rmw` serializes lanes that hit one
element in lane order and is exempt from race checks.

Vectors are the trailing axes of a value (see `values.py`): `vector.load` reads the vector along
the memref's last dimensions, `vector.transfer_read` follows its permutation map (dimensions or
broadcast zeros) and pads outside the memref, reductions run left to right.

Limits: sizes, subview sizes and strides and vector positions must be the same in every lane;
`collapse_shape`/`expand_shape` need a contiguous source; no `memref.dma_*`, `vector.print`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import MappingProxyType

import numpy as np
from xdsl.dialects import builtin, memref, vector
from xdsl.dialects.builtin import DYNAMIC_INDEX, DenseArrayBase, DenseIntOrFPElementsAttr, MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr

from mlc.interpreter import scalar
from mlc.interpreter.engine import Execution, Implementation, OperationTable, TerminatorImplementation
from mlc.interpreter.errors import InterpreterError, OutOfBounds, UnsupportedOperation
from mlc.interpreter.operations import by_name, exit_with_operands, result_dtype, static_int, ternary
from mlc.interpreter.values import (
    Mask,
    MemRefValue,
    as_array,
    constant_value,
    contiguous_strides,
    dtype_of,
    element_count,
    memory_space,
    memref_from_address,
    poison_value,
    trailing_shape,
)


# memref ------------------------------------------------------------------------------------------


def checked_indices(
    memref_value: MemRefValue, indices: Sequence[object], mask: Mask, extents: Sequence[int] = ()
) -> None:
    """Raises `OutOfBounds` when an active lane's index is outside the shape.

    `extents` are the sizes of a vector accessed along the last dimensions from the index.
    """
    rank = len(memref_value.shape)
    if len(indices) != rank:
        raise InterpreterError(f"expected {rank} indices, got {len(indices)}")
    padded = (0,) * (rank - len(extents)) + tuple(e - 1 for e in extents)
    for axis, (index, size, extra) in enumerate(zip(indices, memref_value.shape, padded)):
        index = np.asarray(index)
        bad = (index < 0) | (index + extra >= size)
        if mask is not None:
            bad = bad & mask
        if bad.any():
            value = int(np.broadcast_to(index, bad.shape)[bad].reshape(-1)[0]) if bad.ndim else int(index)
            shown = f"{value}" if not extra else f"{value}..{value + extra}"
            raise OutOfBounds(
                f"index {shown} is out of bounds for dimension {axis} of size {size} "
                f"(memref of shape {list(memref_value.shape)})"
            )


def element_addresses(memref_value: MemRefValue, address: np.ndarray) -> tuple[np.ndarray, int]:
    """Byte addresses of the scalars of one element (a memref of vectors has several), and their rank."""
    shape = memref_value.element_shape
    if not shape:
        return address, 0
    offsets = (np.arange(element_count(shape)) * memref_value.dtype.itemsize).reshape(shape)
    return np.asarray(address)[(...,) + (None,) * len(shape)] + offsets, len(shape)


def load_element(
    execution: Execution, memref_value: MemRefValue, indices: Sequence[object], mask: Mask, op: Operation
) -> np.ndarray:
    checked_indices(memref_value, indices, mask)
    addresses, rank = element_addresses(memref_value, memref_value.address(indices))
    return execution.read(addresses, memref_value.dtype, mask, op, rank)


def store_element(
    execution: Execution,
    value: object,
    memref_value: MemRefValue,
    indices: Sequence[object],
    mask: Mask,
    op: Operation,
) -> None:
    checked_indices(memref_value, indices, mask)
    addresses, rank = element_addresses(memref_value, memref_value.address(indices))
    execution.write(addresses, value, memref_value.dtype, mask, op, rank)


def _memref_load(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    memref_value, *indices = execution.operands(op)
    return [load_element(execution, memref_value, indices, mask, op)]  # type: ignore[arg-type]


def _memref_store(execution: Execution, op: Operation, mask: Mask) -> None:
    value, memref_value, *indices = execution.operands(op)
    store_element(execution, value, memref_value, indices, mask, op)  # type: ignore[arg-type]


def allocated_shape(memref_type: MemRefType, dynamic_sizes: Sequence[object]) -> tuple[int, ...]:
    sizes = iter(dynamic_sizes)
    return tuple(
        static_int(next(sizes), "a dynamic memref size") if d == DYNAMIC_INDEX else d
        for d in memref_type.get_shape()
    )


def _memref_alloc(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    memref_type = op.results[0].type
    assert isinstance(memref_type, MemRefType)
    dynamic_sizes = [execution.get(v) for v in op.dynamic_sizes]  # type: ignore[attr-defined]
    shape = allocated_shape(memref_type, dynamic_sizes)
    element_type = memref_type.element_type
    strides = memref_type.get_strides()
    if strides is None or any(s is None or s == DYNAMIC_INDEX for s in strides) or len(strides) != len(shape):
        strides = contiguous_strides(shape)
    dtype = dtype_of(element_type)
    size = element_count(shape) * dtype.itemsize * element_count(trailing_shape(element_type))
    name = op.results[0].name_hint or "alloc"
    base = execution.allocate(name, size, memory_space(memref_type), dtype, shape, str(memref_type))
    return [MemRefValue(base, np.int64(0), shape, tuple(strides), element_type)]  # type: ignore[arg-type]


def global_buffer(execution: Execution, op: Operation, name: str) -> np.ndarray:
    """The address of `memref.global @name` (per block for shared memory, else one per run)."""
    global_op = execution.machine.lookup(name, op)
    if not isinstance(global_op, memref.GlobalOp):
        raise InterpreterError(f"'@{name}' is a '{global_op.name}', not a 'memref.global'", op)
    memref_type = global_op.type
    space = memory_space(memref_type)
    level = execution.level
    cache = level.launch_globals if space in (3, 5) else execution.machine.module_globals
    address = cache.get(name)
    if address is not None:
        return address
    dtype = dtype_of(memref_type.element_type)
    shape = tuple(memref_type.get_shape())
    if space in (3, 5):
        address = execution.allocate(
            name, element_count(shape) * dtype.itemsize, space, dtype, shape, str(memref_type)
        )
    else:
        initial = global_op.initial_value
        if isinstance(initial, DenseIntOrFPElementsAttr):
            array = np.asarray(constant_value(initial, builtin.TensorType(memref_type.element_type, shape)))
            buffer = execution.machine.memory.allocate_array(
                name, np.broadcast_to(array, shape).astype(dtype), read_only=global_op.constant is not None
            )
        else:
            buffer = execution.machine.memory.allocate(
                name,
                element_count(shape) * dtype.itemsize,
                granularity=dtype.itemsize,
                element_shape=shape,
                fill=np.asarray(poison_value(dtype)),
            )
        buffer.description = str(memref_type)
        address = np.int64(buffer.base)
    cache[name] = address
    return address


def _memref_get_global(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, memref.GetGlobalOp)
    memref_type = op.memref.type
    assert isinstance(memref_type, MemRefType)
    address = global_buffer(execution, op, op.name_.root_reference.data)
    return [memref_from_address(address, memref_type)]


def _mixed(execution: Execution, static: DenseArrayBase, dynamic: Sequence[SSAValue]) -> list[object]:
    """Offsets, sizes or strides given as static values with `DYNAMIC_INDEX` where an operand goes."""
    values = iter(execution.get(v) for v in dynamic)
    return [next(values) if s == DYNAMIC_INDEX else s for s in static.get_values()]


def _mixed_ints(
    execution: Execution, static: DenseArrayBase, dynamic: Sequence[SSAValue], what: str
) -> list[int]:
    return [static_int(value, what) for value in _mixed(execution, static, dynamic)]


def _kept_dimensions(sizes: Sequence[int], result_shape: Sequence[int]) -> list[int]:
    """The dimensions a rank-reducing subview keeps: it drops unit dimensions the result lacks."""
    kept = []
    position = 0
    for axis, size in enumerate(sizes):
        if position >= len(result_shape):
            break
        expected = result_shape[position]
        droppable = size == 1 and len(sizes) - axis > len(result_shape) - position
        if expected in (size, DYNAMIC_INDEX) and not droppable:
            kept.append(axis)
            position += 1
    return kept


def _memref_subview(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, memref.SubviewOp)
    source = execution.get(op.source)
    assert isinstance(source, MemRefValue)
    offsets = _mixed(execution, op.static_offsets, op.offsets)
    sizes = _mixed_ints(execution, op.static_sizes, op.sizes, "a subview size")
    steps = _mixed_ints(execution, op.static_strides, op.strides, "a subview stride")
    offset = source.offset
    for index, stride in zip(offsets, source.strides):
        offset = offset + np.asarray(index, dtype=np.int64) * stride
    strides = [stride * step for stride, step in zip(source.strides, steps)]
    result_type = op.result.type
    assert isinstance(result_type, MemRefType)
    result_shape = result_type.get_shape()
    if len(result_shape) < len(sizes):
        kept = _kept_dimensions(sizes, result_shape)
        sizes = [sizes[a] for a in kept]
        strides = [strides[a] for a in kept]
    offset = np.asarray(offset, np.int64)
    return [MemRefValue(source.base, offset, tuple(sizes), tuple(strides), source.element_type)]


def _memref_identity(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return [execution.get(op.operands[0])]


def _memref_cast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    source: MemRefValue = execution.get(op.operands[0])  # type: ignore[assignment]
    return [source]


def _memref_reinterpret_cast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, memref.ReinterpretCastOp)
    source = execution.get(op.source)
    assert isinstance(source, MemRefValue)
    offset = np.asarray(_mixed(execution, op.static_offsets, op.offsets)[0], np.int64)
    sizes = _mixed_ints(execution, op.static_sizes, op.sizes, "a size")
    strides = _mixed_ints(execution, op.static_strides, op.strides, "a stride")
    return [MemRefValue(source.base, offset, tuple(sizes), tuple(strides), source.element_type)]


def _memref_reshape(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """collapse_shape / expand_shape of a contiguous memref (the layouts mlc produces)."""
    source: MemRefValue = execution.get(op.operands[0])  # type: ignore[assignment]
    result_type = op.results[0].type
    assert isinstance(result_type, MemRefType)
    if not source.is_contiguous():
        raise UnsupportedOperation(f"'{op.name}' of a non-contiguous memref")
    dynamic = iter(execution.get(v) for v in op.operands[1:])
    shape = (
        [static_int(next(dynamic), "a size") if d == DYNAMIC_INDEX else d for d in result_type.get_shape()]
        if len(op.operands) > 1
        else list(result_type.get_shape())
    )
    if DYNAMIC_INDEX in shape:
        known = element_count([d for d in shape if d != DYNAMIC_INDEX])
        shape = [element_count(source.shape) // max(known, 1) if d == DYNAMIC_INDEX else d for d in shape]
    return [
        MemRefValue(source.base, source.offset, tuple(shape), contiguous_strides(shape), source.element_type)
    ]


def _memref_dim(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    source, index = execution.operands(op)
    return [np.int64(source.shape[static_int(index, "a dimension index")])]  # type: ignore[attr-defined]


def _memref_rank(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (source,) = execution.operands(op)
    return [np.int64(len(source.shape))]  # type: ignore[attr-defined]


def element_grid(memref_value: MemRefValue) -> np.ndarray:
    """Byte addresses of every element: lane axes, then the memref's axes."""
    offsets = np.zeros((), dtype=np.int64)
    rank = len(memref_value.shape)
    for axis, (size, stride) in enumerate(zip(memref_value.shape, memref_value.strides)):
        shape = [1] * rank
        shape[axis] = size
        offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    start = np.asarray(memref_value.start_address())
    return start[(...,) + (None,) * rank] + offsets * memref_value.element_size


def _memref_copy(execution: Execution, op: Operation, mask: Mask) -> None:
    source, target = execution.operands(op)
    assert isinstance(source, MemRefValue) and isinstance(target, MemRefValue)
    if source.shape != target.shape:
        raise InterpreterError(f"memref.copy between shapes {list(source.shape)} and {list(target.shape)}")
    rank = len(source.shape)
    values = execution.read(element_grid(source), source.dtype, mask, op, rank)
    execution.write(element_grid(target), values, target.dtype, mask, op, rank)


ATOMIC_KINDS: tuple[str, ...] = (
    "addf",
    "addi",
    "assign",
    "maximumf",
    "maxs",
    "maxu",
    "minimumf",
    "mins",
    "minu",
    "mulf",
    "muli",
    "ori",
    "andi",
    "maxnumf",
    "minnumf",
)
"""memref.atomic_rmw kinds in the order of their integer encoding."""

ATOMIC_COMBINE: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "addf": np.add,
    "addi": np.add,
    "assign": lambda old, new: new,
    "maximumf": scalar.maximumf,
    "maxs": np.maximum,
    "maxu": scalar.maxui,
    "minimumf": scalar.minimumf,
    "mins": np.minimum,
    "minu": scalar.minui,
    "mulf": np.multiply,
    "muli": np.multiply,
    "ori": np.bitwise_or,
    "andi": np.bitwise_and,
    "maxnumf": np.fmax,
    "minnumf": np.fmin,
}


def _memref_atomic_rmw(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, memref.AtomicRMWOp)
    value, memref_value, *indices = execution.operands(op)
    assert isinstance(memref_value, MemRefValue)
    kind = ATOMIC_KINDS[op.kind.value.data]
    checked_indices(memref_value, indices, mask)
    address = memref_value.address(indices)
    return [execution.atomic(address, value, memref_value.dtype, mask, op, ATOMIC_COMBINE[kind])]


def _memref_dealloc(execution: Execution, op: Operation, mask: Mask) -> None:
    return None


def _memref_extract_aligned_pointer(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (source,) = execution.operands(op)
    return [np.asarray(source.base, dtype=np.int64)]  # type: ignore[attr-defined]


def _memref_extract_strided_metadata(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (source,) = execution.operands(op)
    assert isinstance(source, MemRefValue)
    base = MemRefValue(source.base, np.int64(0), (), (), source.element_type)
    sizes = [np.int64(s) for s in source.shape]
    strides = [np.int64(s) for s in source.strides]
    return [base, source.offset, *sizes, *strides]


def _memref_view(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    source, shift, *sizes = execution.operands(op)
    assert isinstance(source, MemRefValue)
    result_type = op.results[0].type
    assert isinstance(result_type, MemRefType)
    shape = allocated_shape(result_type, sizes)
    base = source.start_address() + np.asarray(shift, dtype=np.int64)
    return [MemRefValue(base, np.int64(0), shape, contiguous_strides(shape), result_type.element_type)]


def _memref_alloca_scope(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return execution.run_region(op.regions[0], [], mask)


MEMREF: dict[str, Implementation] = {
    "memref.load": _memref_load,
    "memref.store": _memref_store,
    "memref.alloc": _memref_alloc,
    "memref.alloca": _memref_alloc,
    "memref.dealloc": _memref_dealloc,
    "memref.get_global": _memref_get_global,
    "memref.subview": _memref_subview,
    "memref.cast": _memref_cast,
    "memref.memory_space_cast": _memref_cast,
    "memref.assume_alignment": _memref_identity,
    "memref.reinterpret_cast": _memref_reinterpret_cast,
    "memref.collapse_shape": _memref_reshape,
    "memref.expand_shape": _memref_reshape,
    "memref.dim": _memref_dim,
    "memref.rank": _memref_rank,
    "memref.copy": _memref_copy,
    "memref.atomic_rmw": _memref_atomic_rmw,
    "memref.extract_aligned_pointer_as_index": _memref_extract_aligned_pointer,
    "memref.extract_strided_metadata": _memref_extract_strided_metadata,
    "memref.view": _memref_view,
    "memref.alloca_scope": _memref_alloca_scope,
}
MEMREF_TERMINATORS: dict[str, TerminatorImplementation] = {"memref.alloca_scope.return": exit_with_operands}

# vector ------------------------------------------------------------------------------------------


def vector_addresses(
    memref_value: MemRefValue, indices: Sequence[object], vector_shape: Sequence[int]
) -> np.ndarray:
    """Addresses of a vector of `vector_shape` along the memref's last dimensions, from `indices`."""
    start = np.asarray(memref_value.address(indices))
    rank = len(vector_shape)
    strides = memref_value.strides[len(memref_value.strides) - rank :]
    offsets = np.zeros((), dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(vector_shape, strides)):
        shape = [1] * rank
        shape[axis] = size
        offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return start[(...,) + (None,) * rank] + offsets * memref_value.dtype.itemsize


def _vector_load(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    memref_value, *indices = execution.operands(op)
    assert isinstance(memref_value, MemRefValue)
    shape = trailing_shape(op.results[0].type)
    checked_indices(memref_value, indices, mask, shape)
    return [
        execution.read(
            vector_addresses(memref_value, indices, shape), memref_value.dtype, mask, op, len(shape)
        )
    ]


def _vector_store(execution: Execution, op: Operation, mask: Mask) -> None:
    value, memref_value, *indices = execution.operands(op)
    assert isinstance(memref_value, MemRefValue)
    shape = trailing_shape(op.operands[0].type)
    checked_indices(memref_value, indices, mask, shape)
    execution.write(
        vector_addresses(memref_value, indices, shape), value, memref_value.dtype, mask, op, len(shape)
    )


def _vector_maskedload(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    memref_value, *rest = execution.operands(op)
    indices, vector_mask, pass_through = rest[:-2], rest[-2], rest[-1]
    assert isinstance(memref_value, MemRefValue)
    shape = trailing_shape(op.results[0].type)
    addresses = vector_addresses(memref_value, indices, shape)
    loaded = execution.read(
        addresses, memref_value.dtype, mask, op, len(shape), np.asarray(vector_mask, dtype=bool)
    )
    return [np.where(vector_mask, loaded, pass_through)]


def _vector_maskedstore(execution: Execution, op: Operation, mask: Mask) -> None:
    memref_value, *rest = execution.operands(op)
    indices, vector_mask, value = rest[:-2], rest[-2], rest[-1]
    assert isinstance(memref_value, MemRefValue)
    shape = trailing_shape(op.operands[-1].type)
    addresses = vector_addresses(memref_value, indices, shape)
    execution.write(
        addresses, value, memref_value.dtype, mask, op, len(shape), np.asarray(vector_mask, dtype=bool)
    )


def _transfer_layout(
    op: Operation, memref_value: MemRefValue, indices: Sequence[object], vector_shape: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Addresses and in-bounds mask of a transfer, following its permutation map."""
    results = op.properties["permutation_map"].data.results  # type: ignore[attr-defined]
    rank = len(vector_shape)
    positions: list[np.ndarray] = [np.asarray(i, dtype=np.int64)[(...,) + (None,) * rank] for i in indices]
    for axis, (expression, size) in enumerate(zip(results, vector_shape)):
        if isinstance(expression, AffineDimExpr):
            shape = [1] * rank
            shape[axis] = size
            dimension = expression.position
            positions[dimension] = positions[dimension] + np.arange(size, dtype=np.int64).reshape(shape)
        elif not (isinstance(expression, AffineConstantExpr) and expression.value == 0):
            raise UnsupportedOperation(f"'{op.name}' with permutation map result {expression}")
    in_bounds = np.ones((), dtype=bool)
    for position, size in zip(positions, memref_value.shape):
        in_bounds = in_bounds & (position >= 0) & (position < size)
    safe = [np.where(in_bounds, p, 0) for p in positions]
    return memref_value.address(safe), in_bounds


def _vector_transfer_read(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, vector.TransferReadOp)
    memref_value = execution.get(op.source)
    if not isinstance(memref_value, MemRefValue):
        raise UnsupportedOperation("vector.transfer_read from a tensor")
    indices = [execution.get(i) for i in op.indices]
    padding = execution.get(op.padding)
    shape = trailing_shape(op.result.type)
    addresses, in_bounds = _transfer_layout(op, memref_value, indices, shape)
    if op.mask is not None:
        in_bounds = in_bounds & np.asarray(execution.get(op.mask), dtype=bool)
    loaded = execution.read(addresses, memref_value.dtype, mask, op, len(shape), in_bounds)
    return [np.where(in_bounds, loaded, np.asarray(padding)[(...,) + (None,) * len(shape)])]


def _vector_transfer_write(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, vector.TransferWriteOp)
    memref_value = execution.get(op.source)
    if not isinstance(memref_value, MemRefValue):
        raise UnsupportedOperation("vector.transfer_write to a tensor")
    indices = [execution.get(i) for i in op.indices]
    value = execution.get(op.vector)
    shape = trailing_shape(op.vector.type)
    addresses, in_bounds = _transfer_layout(op, memref_value, indices, shape)
    if op.mask is not None:
        in_bounds = in_bounds & np.asarray(execution.get(op.mask), dtype=bool)
    execution.write(addresses, value, memref_value.dtype, mask, op, len(shape), in_bounds)


def _vector_broadcast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (source,) = execution.operands(op)
    result_shape = trailing_shape(op.results[0].type)
    source_shape = trailing_shape(op.operands[0].type)
    source = np.asarray(source)
    lane_shape = source.shape[: source.ndim - len(source_shape)]
    padded = source.reshape(lane_shape + (1,) * (len(result_shape) - len(source_shape)) + tuple(source_shape))
    return [np.broadcast_to(padded, lane_shape + tuple(result_shape))]


def _vector_extract(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, vector.ExtractOp)
    source = np.asarray(execution.get(op.vector))
    rank = len(trailing_shape(op.vector.type))
    positions = _mixed_ints(execution, op.static_position, op.dynamic_position, "a vector position")
    lane_rank = source.ndim - rank
    index = (slice(None),) * lane_rank + tuple(positions)
    return [source[index]]


def _vector_insert(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, vector.InsertOp)
    source = np.asarray(execution.get(op.source))
    destination = np.asarray(execution.get(op.dest))
    rank = len(trailing_shape(op.dest.type))
    positions = _mixed_ints(execution, op.static_position, op.dynamic_position, "a vector position")
    lane_shape = np.broadcast_shapes(
        destination.shape[: destination.ndim - rank],
        source.shape[: source.ndim - len(trailing_shape(op.source.type))],
    )
    result = np.broadcast_to(destination, lane_shape + destination.shape[destination.ndim - rank :]).copy()
    result[(slice(None),) * len(lane_shape) + tuple(positions)] = source
    return [result]


def _reduce_sequential(
    function: Callable[[np.ndarray, np.ndarray], np.ndarray], values: np.ndarray, start: object
) -> np.ndarray:
    """Left-to-right reduction over the last axis (the order LLVM's ordered reductions define)."""
    result = values[..., 0] if start is None else function(np.asarray(start), values[..., 0])
    for position in range(1, values.shape[-1]):
        result = function(result, values[..., position])
    return result


REDUCTIONS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": scalar.addi,
    "mul": scalar.muli,
    "minui": scalar.minui,
    "minsi": scalar.minsi,
    "maxui": scalar.maxui,
    "maxsi": scalar.maxsi,
    "minnumf": np.fmin,
    "maxnumf": np.fmax,
    "minimumf": scalar.minimumf,
    "maximumf": scalar.maximumf,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


def _vector_reduction(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, vector.ReductionOp)
    values = np.asarray(execution.get(op.vector))
    start = execution.get(op.acc) if op.acc is not None else None
    kind = op.kind.data.value
    function = REDUCTIONS[kind]
    if kind in ("add", "mul") and values.dtype.kind == "f":
        function = np.add if kind == "add" else np.multiply
    return [as_array(_reduce_sequential(function, values, start), result_dtype(op))]


def _vector_create_mask(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    sizes = execution.operands(op)
    shape = trailing_shape(op.results[0].type)
    rank = len(shape)
    result = np.ones((), dtype=bool)
    for axis, (size, extent) in enumerate(zip(sizes, shape)):
        axis_shape = [1] * rank
        axis_shape[axis] = extent
        positions = np.arange(extent).reshape(axis_shape)
        result = result & (positions < np.asarray(size)[(...,) + (None,) * rank])
    lane_shape = result.shape[: result.ndim - rank]
    return [np.broadcast_to(result, lane_shape + tuple(shape))]


def _vector_shuffle(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    first, second = (np.asarray(v) for v in execution.operands(op))
    rank = len(trailing_shape(op.operands[0].type))
    lanes = np.broadcast_shapes(first.shape[: first.ndim - rank], second.shape[: second.ndim - rank])
    first = np.broadcast_to(first, lanes + first.shape[first.ndim - rank :])
    second = np.broadcast_to(second, lanes + second.shape[second.ndim - rank :])
    joined = np.concatenate([first, second], axis=len(lanes))
    selection = [int(i) for i in op.properties["mask"].get_values()]  # type: ignore[attr-defined]
    return [np.take(joined, selection, axis=len(lanes))]


def _vector_bitcast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (source,) = execution.operands(op)
    source = np.ascontiguousarray(source)
    target_shape = trailing_shape(op.results[0].type)
    lane_shape = source.shape[: source.ndim - len(trailing_shape(op.operands[0].type))]
    return [source.view(result_dtype(op)).reshape(lane_shape + tuple(target_shape))]


VECTOR: dict[str, Implementation] = {
    "vector.load": _vector_load,
    "vector.store": _vector_store,
    "vector.maskedload": _vector_maskedload,
    "vector.maskedstore": _vector_maskedstore,
    "vector.transfer_read": _vector_transfer_read,
    "vector.transfer_write": _vector_transfer_write,
    "vector.broadcast": _vector_broadcast,
    "vector.extract": _vector_extract,
    "vector.insert": _vector_insert,
    "vector.fma": ternary(scalar.fma),
    "vector.reduction": _vector_reduction,
    "vector.create_mask": _vector_create_mask,
    "vector.shuffle": _vector_shuffle,
    "vector.bitcast": _vector_bitcast,
}


def table() -> OperationTable:
    """The implementations of this module, keyed by op class."""
    operations = {**by_name(memref.MemRef, MEMREF), **by_name(vector.Vector, VECTOR)}
    terminators = by_name(memref.MemRef, MEMREF_TERMINATORS)
    return OperationTable(
        MappingProxyType(operations),  # type: ignore[arg-type]
        MappingProxyType(terminators),  # type: ignore[arg-type]
    )
