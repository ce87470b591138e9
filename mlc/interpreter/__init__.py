"""mlc's reference interpreter: runs a module at any level of the pipeline on numpy inputs.

    from mlc.interpreter import run
    outputs = run(module, "main", [x, y])          # list of numpy arrays

`run` executes a host function (`func.func`) whatever the level: graph functions on tensors, or
host code that allocates buffers and launches `tile.kernel`s, `loop.kernel`s, `mlc_gpu.func`s or
lowered `llvm.func`s. Every pass is checked by running the module before and after it on the same
random inputs and comparing the outputs.

The pieces:
* `engine` — the lane-vectorized execution engine (values are numpy arrays over lanes; masks;
  lockstep "minimum program counter" execution of unstructured control flow).
* `simt` — grids of thread blocks: indices, barriers, shuffles, per-block shared memory.
* `memory`, `races` — byte-addressed buffers; data-race detection.
* `standard`, `memory_ops`, `llvm`, `intrinsics`, `scalar` — semantics of arith, math, scf, cf,
  func, memref, vector, llvm and the NVVM intrinsics.
* `tile`, `loop`, `gpu` — semantics of mlc's own kernel dialects (`tile.py` is the executable
  definition of the tile ops, and so on); `warp` — warp-collective tensor-core ops (`loop.mma_sync`).
* `host` — host functions, entry points and direct kernel launches; graph ops evaluate through
  `mlc.dialects.graph.interpret`, the graph dialect's own numpy definition, which needs no engine.

Layering: this package imports the dialects; no dialect imports it (a dialect knows nothing of its
execution; `test/python/test_layering.py` checks it).

Errors are `InterpreterError`s that name the op: `UnsupportedOperation`, `OutOfBounds`,
`DataRace` (buffer, element, threads, RAW/WAR/WAW) and `BarrierDivergence`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from mlc.interpreter import async_copy, gpu, intrinsics, llvm, loop, mbarrier, memory_ops, standard, tile, warp
from mlc.interpreter.engine import Machine, OperationTable
from mlc.interpreter.errors import (
    BarrierDivergence,
    DataRace,
    InterpreterError,
    OutOfBounds,
    UnsupportedOperation,
)
from mlc.interpreter.host import find_entry, graph_table, launch_kernel, run_function


def operation_table() -> OperationTable:
    """The implementations of every op the interpreter runs, from every level."""
    result = OperationTable()
    for part in (
        standard.table(),
        memory_ops.table(),
        llvm.table(),
        intrinsics.table(),
        graph_table(),
        tile.table(),
        loop.table(),
        gpu.table(),
        warp.table(),
        async_copy.table(),
        mbarrier.table(),
    ):
        result = result.merged(part)
    return result


def make_machine(module: ModuleOp, check_races: bool = True) -> Machine:
    """The interpreter state for one run over `module` (for callers that launch step by step)."""
    return Machine(module, operation_table(), check_races)


def run(
    module: ModuleOp,
    entry: str | None = None,
    inputs: Sequence[np.ndarray] = (),
    *,
    check_races: bool = True,
) -> list[np.ndarray]:
    """Runs host function `entry` on `inputs` and returns its results as numpy arrays.

    `entry` defaults to the module's only `func.func`, else its first public one. Inputs for
    memref parameters are copied into fresh buffers; results are copies. With `check_races`
    (the default) kernels are checked for data races and raise `DataRace`.
    """
    machine = make_machine(module, check_races)
    function = find_entry(module, entry)
    with np.errstate(all="ignore"):
        return run_function(machine, function, inputs)


def run_kernel(
    module: ModuleOp,
    kernel: str,
    buffers: Sequence[np.ndarray],
    *,
    grid: Sequence[int] | None = None,
    block: Sequence[int] | None = None,
    check_races: bool = True,
) -> list[np.ndarray]:
    """Launches kernel `@kernel` (any level) on copies of `buffers`; returns them after the launch.

    `grid` and `block` are needed only for an `llvm.func` run as a GPU kernel (without them it runs
    once, as a CPU kernel); an `mlc_gpu.func` uses its own unless they are given.
    """
    machine = make_machine(module, check_races)
    kernel_op = machine.lookup(kernel)
    with np.errstate(all="ignore"):
        return launch_kernel(machine, kernel_op, buffers, grid, block)


__all__ = [
    "BarrierDivergence",
    "DataRace",
    "InterpreterError",
    "OutOfBounds",
    "UnsupportedOperation",
    "make_machine",
    "operation_table",
    "run",
    "run_kernel",
]
