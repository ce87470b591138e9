"""Warp-collective tensor-core ops: `loop.mma_sync`, `loop.ldmatrix` and the warpgroup's `loop.wgmma`
in loop and GPU kernels, and the rounding of TF32 operands (`loop.round_tf32`).

The engine runs every thread of a launch at once as lanes (see `engine.py`), so a warp-collective
op sees the registers of all 32 lanes of each warp: the implementation gathers them into whole
matrices (`fragment_matrices`), multiplies, and scatters the result back into each lane's
registers, following the fragment layout the dialect defines (`loop.MmaSyncOp`).

Warps. In a loop kernel the warp is 32 consecutive iterations of the enclosing `thread.x`
loop (its lane axis, see `loop.py`); in a GPU kernel 32 consecutive linear thread ids of a block
(`simt.py`). The op must be reached by whole warps: a warp that runs it in only some lanes is an
error, as `mma.sync.aligned` is undefined then.

`loop.ldmatrix` (and its NVVM intrinsic `llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16`)
reads each lane's 8-element row as an ordinary load does (so the race checker sees it as that
lane's read), then hands the rows' elements to the lanes that the fragment layout names.

`loop.wgmma` is collective over a warpgroup (128 consecutive threads, same grouping): its
threads share the reads of the A and B blocks (the race checker sees each element read by one
thread of the warpgroup), and the reads stay in flight until `loop.wgmma_wait` (`async_copy.py`
reports a write of them before). With A from registers the warpgroup's 64 x K block of A is
gathered from its threads' registers (`_register_block`, the m16n8k16 A layout per warp). Its
NVVM form (inline `wgmma.mma_async` assembly with matrix descriptors) is not interpreted.

Arithmetic: each element is accumulated in increasing k with f32 fused multiply-adds, as
`tile.dot` is, so a lowering that keeps the K order is exact against the tile level. A TF32
`loop.mma_sync` (m16n8k8, f32 registers) first truncates its operands to TF32, as the tensor core
reads them.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from xdsl.dialects.builtin import f32
from xdsl.ir import Operation

from mlc.dialects.loop import ops as loop
from mlc.dialects.precision import round_to_tf32, truncate_to_tf32
from mlc.interpreter.async_copy import issue_product
from mlc.interpreter.engine import Execution, Level, OperationTable
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.loop import LoopNestLevel
from mlc.interpreter.memory_ops import vector_addresses
from mlc.interpreter.scalar import fma
from mlc.interpreter.simt import GridLevel
from mlc.interpreter.values import Mask, MemRefValue, as_array, dtype_of

WARP_SIZE = loop.WARP_SIZE
_LANE = np.arange(WARP_SIZE)
_GROUP, _THREAD_IN_GROUP = _LANE // 4, _LANE % 4
WARPGROUP_SIZE = loop.WARPGROUP_SIZE
_UNIT = {WARP_SIZE: "warp", WARPGROUP_SIZE: "warpgroup"}


def _a_position(register: int, element: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of A that register `register`, element `element` holds, per lane."""
    return _GROUP + 8 * (register % 2), 2 * _THREAD_IN_GROUP + element + 8 * (register // 2)


def _b_position(register: int, element: int) -> tuple[np.ndarray, np.ndarray]:
    return 2 * _THREAD_IN_GROUP + element + 8 * register, _GROUP


def _c_position(register: int) -> tuple[np.ndarray, np.ndarray]:
    return _GROUP + 8 * (register // 2), 2 * _THREAD_IN_GROUP + register % 2


def _tf32_a_position(register: int) -> tuple[np.ndarray, np.ndarray]:
    """m16n8k8 (TF32): rows and columns of A that register `register` holds, per lane."""
    return _GROUP + 8 * (register % 2), _THREAD_IN_GROUP + 4 * (register // 2)


def _tf32_b_position(register: int) -> tuple[np.ndarray, np.ndarray]:
    return _THREAD_IN_GROUP + 4 * register, _GROUP


def as_tf32(values: np.ndarray) -> np.ndarray:
    """f32 values as a TF32 tensor core reads them: the low 13 mantissa bits cleared (truncation)."""
    return truncate_to_tf32(values)


def mma_m16n8k16(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """D = A B + C per warp. a: (..., 32, 4, 2), b: (..., 32, 2, 2), c: (..., 32, 4) -> like c.

    With one element a register (a: (..., 32, 4, 1), b: (..., 32, 2, 1)) it is the TF32 m16n8k8."""
    batch = c.shape[:-2]
    tf32 = a.shape[-1] == 1
    depth = 8 if tf32 else 16
    lhs = np.zeros((*batch, 16, depth), dtype=np.float32)
    rhs = np.zeros((*batch, depth, 8), dtype=np.float32)
    result = np.zeros((*batch, 16, 8), dtype=np.float32)
    for register in range(4):
        if tf32:
            lhs[(..., *_tf32_a_position(register))] = as_tf32(a[..., register, 0])
        else:
            for element in range(2):
                lhs[(..., *_a_position(register, element))] = a[..., register, element]
        result[(..., *_c_position(register))] = c[..., register]
    for register in range(2):
        if tf32:
            rhs[(..., *_tf32_b_position(register))] = as_tf32(b[..., register, 0])
        else:
            for element in range(2):
                rhs[(..., *_b_position(register, element))] = b[..., register, element]
    for k in range(depth):
        result = fma(lhs[..., :, k : k + 1], rhs[..., k : k + 1, :], result)
    return np.stack([result[(..., *_c_position(register))] for register in range(4)], axis=-1)


class _WarpView:
    """Reshapes lane arrays of the running code into (..., warps, 32) + trailing, and back."""

    def __init__(self, execution: Execution, op: Operation, size: int = WARP_SIZE):
        level: Level = execution.level
        self.lanes = execution.lanes.shape
        if isinstance(level, GridLevel):
            self.axis = len(self.lanes) - 1
            threads = level.threads_per_block
            self.grouped = (level.block_count, threads // size, size)
            if threads % size:
                raise InterpreterError(f"'{op.name}' needs whole {_UNIT[size]}s; the block has {threads} threads", op)
        elif isinstance(level, LoopNestLevel):
            parallel = op.parent_op()
            while parallel is not None and not (isinstance(parallel, loop.ParallelOp) and parallel.mapping_name() == "thread.x"):
                parallel = parallel.parent_op()
            if parallel is None:
                raise InterpreterError(f"'{op.name}' must be inside a thread.x loop", op)
            self.axis = level.depths[parallel]
            trip_count = parallel.trip_count
            if trip_count % size:
                raise InterpreterError(f"'{op.name}' needs whole {_UNIT[size]}s; its thread loop has {trip_count} iterations", op)
            outer = self.lanes[: self.axis] + self.lanes[self.axis + 1 :]
            self.grouped = (*outer, trip_count // size, size)
        else:
            raise InterpreterError(f"'{op.name}' can only run in a loop kernel or a GPU kernel", op)
        self.size = size
        self.moved = self.lanes[: self.axis] + self.lanes[self.axis + 1 :] + (self.lanes[self.axis],)

    def gather(self, value: np.ndarray, trailing: tuple[int, ...]) -> np.ndarray:
        full = np.broadcast_to(value, self.lanes + trailing)
        moved = np.moveaxis(full, self.axis, len(self.lanes) - 1)
        return moved.reshape(self.grouped + trailing)

    def scatter(self, value: np.ndarray) -> np.ndarray:
        return np.moveaxis(value.reshape(self.moved), len(self.lanes) - 1, self.axis)


def _check_whole_warps(view: _WarpView, mask: Mask, op: Operation) -> None:
    if mask is None:
        return
    active = view.gather(np.asarray(mask, dtype=bool), ())
    counts = active.sum(axis=-1)
    size = view.size
    if np.any((counts > 0) & (counts < size)):
        raise InterpreterError(f"'{op.name}' reached by only part of a {_UNIT[size]} ({int(counts[(counts > 0) & (counts < size)].flat[0])} of {size} lanes)", op)


def _warp_mma(
    execution: Execution, op: Operation, mask: Mask, a: list[np.ndarray], b: list[np.ndarray], c: list[np.ndarray], tf32: bool = False
) -> list[np.ndarray]:
    """The lanes' D registers from their A, B (lane arrays of pairs, or of f32 scalars with `tf32`)
    and C registers."""
    view = _WarpView(execution, op)
    _check_whole_warps(view, mask, op)

    def registers(values: list[np.ndarray], trailing: tuple[int, ...]) -> np.ndarray:
        return np.stack([view.gather(value, trailing) for value in values], axis=-1 - len(trailing)).astype(np.float32)

    if tf32:  # one element a register: a trailing axis of 1
        a, b = ([np.asarray(value)[..., None] for value in group] for group in (a, b))
    width = 1 if tf32 else 2
    d = mma_m16n8k16(registers(a, (width,)), registers(b, (width,)), registers(c, ()))
    return [view.scatter(np.ascontiguousarray(d[..., register])) for register in range(4)]


def mma_sync(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.MmaSyncOp)
    tf32 = loop.mma_shape(op.operand_type()) == loop.TF32_MMA_SHAPE
    operand_dtype = np.dtype(np.float32) if tf32 else dtype_of(op.operand_type())
    a, b = ([as_array(execution.get(value), operand_dtype) for value in group] for group in (op.a, op.b))
    c = [as_array(execution.get(value), np.dtype(np.float32)) for value in op.c]
    return list(_warp_mma(execution, op, mask, a, b, c, tf32))


MMA_INTRINSICS = {
    "llvm.nvvm.mma.m16n8k16.row.col.f32.f32": "f16",
    "llvm.nvvm.mma.m16n8k16.row.col.bf16": "bf16",
    "llvm.nvvm.mma.m16n8k8.row.col.tf32": "tf32",
}
"""The NVVM intrinsics `loop.mma_sync` lowers to, with their operands: f16 pairs as `<2 x half>`,
bf16 pairs packed in an i32 (element 0 in the low half), TF32 as the f32's bits in an i32."""


def _unpack_bf16(value: object) -> np.ndarray:
    """i32 registers -> pairs of bf16 (as f32), element 0 from the low 16 bits."""
    bits = np.asarray(value).astype(np.uint32)
    halves = np.stack([bits & 0xFFFF, bits >> 16], axis=-1)
    return (halves << 16).astype(np.uint32).view(np.float32)


def mma_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    """`llvm.nvvm.mma.m16n8k{16,8}.row.col.*`: 4 A, 2 B registers, 4 f32 accumulators -> a struct of 4."""
    operands = MMA_INTRINSICS[op.intrin.data]  # type: ignore[attr-defined]
    if operands == "bf16":
        registers = [_unpack_bf16(value) for value in arguments[:6]]
    elif operands == "tf32":
        registers = [np.asarray(value).astype(np.int32).view(np.float32) for value in arguments[:6]]
    else:
        registers = [np.asarray(value, dtype=np.float32) for value in arguments[:6]]
    c = [np.asarray(value, dtype=np.float32) for value in arguments[6:]]
    return [tuple(_warp_mma(execution, op, mask, registers[:4], registers[4:6], c, operands == "tf32"))]


def _distribute_rows(execution: Execution, op: Operation, mask: Mask, rows: np.ndarray, matrices: int, trans: bool) -> list[np.ndarray]:
    """Each lane's registers (lane arrays of pairs) from the 8-element rows that the lanes read.

    `rows` has the lane axes then 8 elements; lanes 8q..8q+7 of a warp read the rows of matrix q.
    """
    view = _WarpView(execution, op)
    _check_whole_warps(view, mask, op)
    warp_rows = view.gather(rows, (loop.LDMATRIX_ROW,))
    registers = []
    for matrix in range(matrices):
        block = warp_rows[..., 8 * matrix : 8 * matrix + 8, :]
        if trans:
            pairs = np.stack([block[..., 2 * _THREAD_IN_GROUP + e, _GROUP] for e in range(2)], axis=-1)
        else:
            pairs = np.stack([block[..., _GROUP, 2 * _THREAD_IN_GROUP + e] for e in range(2)], axis=-1)
        registers.append(np.stack([view.scatter(np.ascontiguousarray(pairs[..., e])) for e in range(2)], axis=-1))
    return registers


def _wgmma_accumulator_positions(columns: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the 64 x N accumulator that each register holds, per warpgroup thread:
    arrays of shape (128, N / 2), register 4q + 2h + e at D[16w + g + 8h, 8q + 2t + e]."""
    thread = np.arange(WARPGROUP_SIZE)[:, None]
    register = np.arange(columns // 2)[None, :]
    lane, warp = thread % WARP_SIZE, thread // WARP_SIZE
    block, half, element = register // 4, (register // 2) % 2, register % 2
    return 16 * warp + lane // 4 + 8 * half, 8 * block + 2 * (lane % 4) + element


def _warpgroup_block(execution: Execution, op: loop.WgmmaOp, mask: Mask, view: _WarpView, role: str, reads: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """The (rows x columns) block of `role` each warpgroup reads, as f32 of shape (..., groups, rows, columns).

    The warpgroup's threads share the reads: thread i reads elements i, i + 128, ... of the
    block in row-major order (so the race checker sees reads, spread over the warpgroup); elements
    outside the buffer read as zero.
    """
    buffer, index_values, (rows, columns) = op.read_region(role)
    memref_value = execution.get(buffer)
    assert isinstance(memref_value, MemRefValue)
    indices = [np.asarray(execution.get(value), dtype=np.int64) for value in index_values]
    for index in indices:
        grouped = view.gather(index, ())
        if np.any(grouped != grouped[..., :1]):
            raise InterpreterError(f"'{op.name}': the {role} indices differ between the threads of a warpgroup", op)
    count = rows * columns // WARPGROUP_SIZE
    thread = view.scatter(np.ascontiguousarray(np.broadcast_to(np.arange(WARPGROUP_SIZE), view.grouped)))
    position = thread[..., None] + WARPGROUP_SIZE * np.arange(count)
    row, column = position // columns, position % columns
    lanes = execution.lanes.shape
    inside = np.ones(lanes + (count,), dtype=bool)
    element_indices = [*(index[..., None] for index in indices[:-2]), indices[-2][..., None] + row, indices[-1][..., None] + column]
    for index, size in zip(element_indices, memref_value.shape):
        inside = inside & (index >= 0) & (index < size)
    offsets = row * memref_value.strides[-2] + column * memref_value.strides[-1]
    addresses = np.asarray(memref_value.address(indices), dtype=np.int64)[..., None] + offsets * memref_value.dtype.itemsize
    values = execution.read(addresses, memref_value.dtype, mask, op, 1, inside)
    values = np.where(inside, np.asarray(values).astype(np.float32), np.float32(0))
    shared = view.gather(values, (count,))
    reads.append((addresses[inside if mask is None else inside & _widened_mask(mask, inside)], memref_value.dtype.itemsize))
    return np.swapaxes(shared, -1, -2).reshape(shared.shape[:-2] + (rows, columns))


def _register_block(execution: Execution, op: loop.WgmmaOp, view: _WarpView) -> np.ndarray:
    """The 64 x K block of A each warpgroup holds in registers (A from registers, see the op), as
    f32 of shape (..., groups, 64, K): warp w's lanes hold rows 16w.. of each 16-deep slice in
    `loop.mma_sync`'s A layout."""
    operand_dtype = dtype_of(op.element_type)
    registers = [view.gather(as_array(execution.get(value), operand_dtype), (2,)).astype(np.float32) for value in op.a]
    block = np.zeros(registers[0].shape[:-2] + (loop.WGMMA_ROWS, op.depth), dtype=np.float32)
    warp = np.arange(WARPGROUP_SIZE) // WARP_SIZE
    lane = np.arange(WARPGROUP_SIZE) % WARP_SIZE
    for index, register in enumerate(registers):
        depth_slice, position = divmod(index, 4)
        for element in range(2):
            rows, columns = _a_position(position, element)
            block[..., 16 * warp + rows[lane], 16 * depth_slice + columns[lane]] = register[..., element]
    return block


def _widened_mask(mask: object, inside: np.ndarray) -> np.ndarray:
    mask = np.asarray(mask, dtype=bool)
    return np.broadcast_to(mask.reshape(mask.shape + (1,) * (inside.ndim - mask.ndim)), inside.shape)


def wgmma(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """`loop.wgmma`: each warpgroup's D = A B + C in increasing k (see the op); its reads stay in
    flight (a write of them is a race) until a `loop.wgmma_wait` completes its group."""
    assert isinstance(op, loop.WgmmaOp)
    view = _WarpView(execution, op, WARPGROUP_SIZE)
    _check_whole_warps(view, mask, op)
    reads: list[tuple[np.ndarray, int]] = []
    if op.lhs_in_registers:
        lhs = _register_block(execution, op, view)
    else:
        lhs = _warpgroup_block(execution, op, mask, view, "lhs", reads)
        lhs = np.swapaxes(lhs, -1, -2) if op.lhs_m_major else lhs  # A stored K x M
    rhs = _warpgroup_block(execution, op, mask, view, "rhs", reads)
    rhs = np.swapaxes(rhs, -1, -2) if op.rhs_k_major else rhs  # B stored N x K
    if op.element_type == f32:  # TF32: the low bits ignored
        lhs, rhs = as_tf32(lhs), as_tf32(rhs)
    issue_product(execution, reads)
    c = np.stack([view.gather(as_array(execution.get(value), np.dtype(np.float32)), ()) for value in op.c], axis=-1)
    rows, columns = _wgmma_accumulator_positions(op.columns)
    result = np.zeros(c.shape[:-2] + (loop.WGMMA_ROWS, op.columns), dtype=np.float32)
    result[..., rows, columns] = c
    for k in range(op.depth):
        result = fma(lhs[..., :, k : k + 1], rhs[..., k : k + 1, :], result)
    d = result[..., rows, columns]
    return [view.scatter(np.ascontiguousarray(d[..., register])) for register in range(op.columns // 2)]


def ldmatrix(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """`loop.ldmatrix`: elements outside the buffer read as zero (see the op)."""
    assert isinstance(op, loop.LdMatrixOp)
    memref_value, *indices = execution.operands(op)
    assert isinstance(memref_value, MemRefValue)
    width = loop.LDMATRIX_ROW
    lanes = execution.lanes.shape
    inside = np.ones(lanes + (width,), dtype=bool)
    for axis, (index, size) in enumerate(zip(indices, memref_value.shape)):
        index = np.asarray(index, dtype=np.int64)[..., None]
        if axis == len(indices) - 1:
            index = index + np.arange(width)
        inside = inside & (index >= 0) & (index < size)
    addresses = vector_addresses(memref_value, indices, (width,))
    rows = execution.read(addresses, memref_value.dtype, mask, op, 1, inside)
    return list(_distribute_rows(execution, op, mask, rows, op.matrices, op.transposed))


LDMATRIX_INTRINSICS = {
    f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.b16.p3": (count, trans)
    for count in (1, 2, 4)
    for trans in (False, True)
}
"""`ldmatrix` in LLVM 22's spelling (overloaded on the shared pointer): matrices, transposed."""


def ldmatrix_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    """`llvm.nvvm.ldmatrix...`: each lane's row address -> i32 registers (element 0 in the low half)."""
    count, trans = LDMATRIX_INTRINSICS[op.intrin.data]  # type: ignore[attr-defined]
    halves = np.dtype(np.uint16)
    addresses = np.asarray(arguments[0], dtype=np.int64)[..., None] + halves.itemsize * np.arange(loop.LDMATRIX_ROW)
    rows = execution.read(addresses, halves, mask, op, 1)
    registers = [
        (pair[..., 0].astype(np.uint32) | (pair[..., 1].astype(np.uint32) << 16)).view(np.int32)
        for pair in _distribute_rows(execution, op, mask, rows, count, trans)
    ]
    return [registers[0] if count == 1 else tuple(registers)]


def round_tf32(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """`loop.round_tf32`: to nearest, ties away from zero (`precision.round_to_tf32`)."""
    (value,) = execution.operands(op)
    return [round_to_tf32(as_array(value, np.dtype(np.float32)))]


TF32_INTRINSIC = "llvm.nvvm.f2tf32.rna"
"""`cvt.rna.tf32.f32`: `loop.round_tf32`'s NVVM form, the rounded f32's bits as an i32."""


def tf32_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    return [np.ascontiguousarray(round_to_tf32(np.asarray(arguments[0], dtype=np.float32))).view(np.int32)]


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType({loop.MmaSyncOp: mma_sync, loop.RoundTf32Op: round_tf32, loop.LdMatrixOp: ldmatrix, loop.WgmmaOp: wgmma}), MappingProxyType({})
    )
