"""Host-side execution: entry functions, numpy inputs and outputs, direct kernel launches.

A host function (`func.func`) runs as one lane of the engine: graph ops evaluate on numpy tensors
(`mlc.dialects.graph.interpret.evaluate_results`; a `graph.fusion` through its body),
`memref.alloc` makes a poisoned buffer, launches run kernels. Inputs are copied into fresh buffers (memref parameters) or converted to the parameter's
dtype (tensor and scalar parameters); results are copied out as numpy arrays, so nothing returned
aliases the interpreter's memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from mlc.dialects.element_types import from_numpy_dtype
from mlc.dialects.gpu import ops as gpu
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.interpret import evaluate_results
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.interpreter.engine import Execution, LaneSpace, Level, Machine, OperationTable, launch
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.llvm import plain_kernel_arguments
from mlc.interpreter.loop import run_kernel as run_loop_kernel
from mlc.interpreter.simt import run_grid
from mlc.interpreter.tile import run_kernel as run_tile_kernel
from mlc.interpreter.values import MemRefValue, contiguous_strides, dtype_of, trailing_shape


def _graph_op(execution: Execution, op: Operation, mask: object) -> list[object]:
    return evaluate_results(op, execution.operands(op))


def graph_table() -> OperationTable:
    """Graph ops in host functions, evaluated by the graph interpreter."""
    return OperationTable(
        MappingProxyType({op: _graph_op for op in graph.Graph.operations}), MappingProxyType({})
    )


def find_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """`entry`, or the only function with a body, or the first public one."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if entry is not None:
        for function in functions:
            if function.sym_name.data == entry:
                return function
        names = ", ".join(f"@{f.sym_name.data}" for f in functions) or "none"
        raise InterpreterError(f"no host function '@{entry}' in the module (functions: {names})")
    if len(functions) == 1:
        return functions[0]
    public = [f for f in functions if f.sym_visibility is None or f.sym_visibility.data == "public"]
    if not public:
        raise InterpreterError("the module has no public host function (func.func) to run")
    return public[0]


def to_value(machine: Machine, array: object, type_: Attribute, name: str) -> object:
    """A numpy input as the runtime value of a parameter of `type_` (memrefs get a fresh buffer)."""
    if isinstance(type_, MemRefType):
        data = np.asarray(array, dtype=dtype_of(type_.element_type))
        shape = _input_shape(tuple(type_.get_shape()), data.shape)
        if shape is None:
            raise InterpreterError(f"input '{name}' has shape {list(data.shape)}, expected {type_}")
        data = data.reshape(shape)
        buffer = machine.memory.allocate_array(name, data)
        buffer.description = str(type_)
        return MemRefValue(
            np.int64(buffer.base), np.int64(0), shape, contiguous_strides(shape), type_.element_type
        )
    dtype = dtype_of(type_)
    data = np.asarray(array, dtype=dtype)
    expected = tuple(type_.get_shape()) if isinstance(type_, TensorType) else trailing_shape(type_)
    if data.shape != expected:
        raise InterpreterError(f"input '{name}' has shape {list(data.shape)}, expected {type_}")
    return data


def _input_shape(expected: tuple[int, ...], given: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape an input takes for a memref parameter: the given one where the type is dynamic,
    the type's own when only the element counts agree (a reshape), None when neither fits."""
    if len(expected) == len(given) and all(e in (g, DYNAMIC_INDEX) for e, g in zip(expected, given)):
        return given
    if DYNAMIC_INDEX not in expected and int(np.prod(expected)) == int(np.prod(given)):
        return expected
    return None


def to_numpy(machine: Machine, value: object) -> np.ndarray:
    """A runtime value as a fresh numpy array (memrefs are read out of memory)."""
    if isinstance(value, MemRefValue):
        if np.ndim(value.base) or np.ndim(value.offset):
            raise InterpreterError("cannot return a memref whose address differs between lanes")
        dtype = value.dtype
        if value.element_shape:
            raise InterpreterError("returning memrefs of vectors is not supported")
        return machine.memory.read_array(int(value.start_address()), value.shape, value.strides, dtype)
    if isinstance(value, tuple):
        raise InterpreterError("cannot return an aggregate value as a numpy array")
    return np.array(value, copy=True)


def run_function(machine: Machine, function: func.FuncOp, inputs: Sequence[object]) -> list[np.ndarray]:
    parameter_types = function.function_type.inputs.data
    if len(inputs) != len(parameter_types):
        raise InterpreterError(
            f"@{function.sym_name.data} takes {len(parameter_types)} inputs, but {len(inputs)} were given"
        )
    arguments = [
        to_value(machine, array, type_, argument.name_hint or f"argument #{index}")
        for index, (array, type_, argument) in enumerate(
            zip(inputs, parameter_types, function.body.block.args)
        )
    ]
    results = Execution(machine, LaneSpace.single(), Level()).run_region(function.body, arguments, None)
    return [to_numpy(machine, result) for result in results]


def launch_kernel(
    machine: Machine,
    kernel: Operation,
    buffers: Sequence[np.ndarray],
    grid: Sequence[int] | None,
    block: Sequence[int] | None,
) -> list[np.ndarray]:
    """Launches one kernel of any level directly on copies of `buffers`; returns them afterwards."""
    parameter_types = kernel.function_type.inputs.data
    entry = kernel.regions[0].blocks.first
    assert entry is not None
    names = [a.name_hint or f"argument #{i}" for i, a in enumerate(entry.args)]
    if len(buffers) != len(parameter_types):
        raise InterpreterError(
            f"the kernel takes {len(parameter_types)} buffers, but {len(buffers)} were given"
        )
    values: list[MemRefValue] = []
    for array, type_, name in zip(buffers, parameter_types, names):
        if isinstance(type_, MemRefType):
            values.append(to_value(machine, array, type_, name))  # type: ignore[arg-type]
        else:
            data = np.ascontiguousarray(array)
            buffer = machine.memory.allocate_array(name, data)
            values.append(
                MemRefValue(
                    np.int64(buffer.base),
                    np.int64(0),
                    data.shape,
                    contiguous_strides(data.shape),
                    from_numpy_dtype(data.dtype),
                )
            )
    if isinstance(kernel, tile.KernelOp):
        run_tile_kernel(machine, kernel, values)
    elif isinstance(kernel, loop.KernelOp):
        run_loop_kernel(machine, kernel, values)
    elif isinstance(kernel, gpu.FuncOp):
        run_grid(machine, kernel.body, values, grid or kernel.grid_shape(), block or kernel.block_shape())
    elif isinstance(kernel, llvm.FuncOp):
        arguments = plain_kernel_arguments(values)
        if grid is None and block is None:
            launch(machine, kernel.body, arguments, LaneSpace.single(), Level())
        else:
            run_grid(machine, kernel.body, arguments, grid or (1, 1, 1), block or (1, 1, 1))
    else:
        raise InterpreterError(f"'{kernel.name}' is not a kernel")
    return [to_numpy(machine, value) for value in values]
