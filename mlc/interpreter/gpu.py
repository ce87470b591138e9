"""The mlc_gpu interpreter: the executable definition of the mlc_gpu ops, on the shared engine.

An `mlc_gpu.launch` runs every thread of every block of the grid at once, as the lanes of a
`mlc.interpreter.simt.GridLevel`: `mlc_gpu.thread_id x` is a lane array varying along the block-x
axis, `mlc_gpu.block_id x` along the grid-x axis, and the dimension queries are uniform. Divergent
control flow runs under masks (see `mlc.interpreter.standard`).

`mlc_gpu.barrier` must be reached by all threads of a block or by none (else `BarrierDivergence`);
it ends the block's barrier phase. Within a phase, two threads of a block touching one element of
shared memory (memref space 3, allocated once per block) with at least one write is a `DataRace`
naming the buffer, the element, both threads and the kind (RAW, WAR, WAW); so is a write of one
global-memory element by two threads that no barrier orders (threads of different blocks never are).

A launch of an `llvm.func` (the kernel after `convert-gpu-to-nvvm`) runs it the same way on the
launch's grid and block, with bare pointers for the buffers; NVVM intrinsics give the indices
(see `mlc.interpreter.llvm`).
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from xdsl.dialects import llvm
from xdsl.ir import Operation

from mlc.dialects import attributes
from mlc.dialects.gpu import ops as gpu
from mlc.interpreter.engine import Execution, Exit, OperationTable
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.llvm import plain_kernel_arguments
from mlc.interpreter.simt import grid_level, run_grid
from mlc.interpreter.values import Mask, kernel_parameters


def _thread_id(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, gpu.IndexQueryOp)
    return [grid_level(execution.level, op).thread_index(op.axis())]


def _block_id(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, gpu.IndexQueryOp)
    return [grid_level(execution.level, op).block_index(op.axis())]


def _block_dim(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, gpu.IndexQueryOp)
    return [np.int64(grid_level(execution.level, op).block[op.axis()])]


def _grid_dim(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, gpu.IndexQueryOp)
    return [np.int64(grid_level(execution.level, op).grid[op.axis()])]


def _barrier(execution: Execution, op: Operation, mask: Mask) -> None:
    grid_level(execution.level, op).barrier(mask, op)
    return None


_SHUFFLE_MODES = {"xor": "bfly", "up": "up", "down": "down", "idx": "idx"}


def _shuffle(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, gpu.ShuffleOp)
    level = grid_level(execution.level, op)
    value = execution.get(op.value)
    return [level.shuffle(value, _SHUFFLE_MODES[op.mode.data], op.offset.value.data, 0x1F)]


def _launch(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, gpu.LaunchOp)
    machine = execution.machine
    kernel = machine.lookup(op.kernel.root_reference.data, op)
    arguments = execution.operands(op)
    if isinstance(kernel, gpu.FuncOp):
        parameters = kernel_parameters(arguments, kernel.function_type.inputs.data)
        # A block-synchronous kernel's order of shared memory is its lockstep run (see the dialect).
        check_races = machine.check_races and attributes.BLOCK_SYNCHRONOUS.name not in kernel.attributes
        run_grid(machine, kernel.body, parameters, op.grid_shape(), op.block_shape(), check_races)
    elif isinstance(kernel, llvm.FuncOp):
        run_grid(machine, kernel.body, plain_kernel_arguments(arguments), op.grid_shape(), op.block_shape())
    else:
        raise InterpreterError(f"'mlc_gpu.launch' cannot run a '{kernel.name}'", op)
    return None


def _return(execution: Execution, op: Operation, mask: Mask) -> Exit:
    return Exit([])


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType(
            {
                gpu.ThreadIdOp: _thread_id,
                gpu.BlockIdOp: _block_id,
                gpu.BlockDimOp: _block_dim,
                gpu.GridDimOp: _grid_dim,
                gpu.BarrierOp: _barrier,
                gpu.ShuffleOp: _shuffle,
                gpu.LaunchOp: _launch,
            }
        ),
        MappingProxyType({gpu.ReturnOp: _return}),
    )
