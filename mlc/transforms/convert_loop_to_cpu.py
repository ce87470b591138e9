"""convert-loop-to-cpu: loop kernels become sequential `llvm.func`s for the CPU.

Every `loop.parallel` becomes an `scf.for` from 0 to its trip count (the CPU runs all iterations
of every mapping in order, which the loop level's semantics allow), after being split at its
`loop.all_reduce` collectives (`loop_fission.py`), and every `loop.kernel` an
external `llvm.func` taking one bare pointer per memref and carrying the `mlc.kernel` attribute
(see `llvm_kernel.py`). `loop.launch` ops stay: the runtime calls the function once per launch.
The standard ops in the body are left for the `convert-*-to-llvm` passes.

Limits: no multithreading yet; shared memory (space 3) is not supported on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects.loop import ops as loop
from mlc.transforms.llvm_kernel import SHARED_MEMORY_SPACE, kernel_to_llvm_func, replace_terminators
from mlc.transforms.loop_fission import split_at_collectives


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def sequentialize(parallel: loop.ParallelOp) -> None:
    """Replaces `parallel` by an `scf.for` over the same iterations."""
    lower, upper, step = _index(0), _index(parallel.trip_count), _index(1)
    body = parallel.body.block
    new_body = Block(arg_types=[IndexType()])
    new_body.args[0].name_hint = body.args[0].name_hint
    body.args[0].replace_all_uses_with(new_body.args[0])
    for op in list(body.ops):
        op.detach()
        if isinstance(op, loop.YieldOp):
            op.erase()
            continue
        new_body.add_op(op)
    new_body.add_op(scf.YieldOp())
    for_op = scf.ForOp(lower, upper, step, [], Region(new_body))
    Rewriter.insert_op([lower, upper, step, for_op], InsertPoint.before(parallel))
    parallel.detach()
    parallel.erase()


def _reject_shared_memory(kernel: loop.KernelOp) -> None:
    for op in kernel.walk():
        for value in op.results:
            space = getattr(value.type, "memory_space", None) if isinstance(value.type, MemRefType) else None
            if isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE:
                raise PassFailure(op, "shared memory is not supported by the CPU lowering")


@dataclass(frozen=True)
class ConvertLoopToCpu(ModulePass):
    """Turn loop kernels into sequential llvm.func kernels for the CPU."""

    name = "convert-loop-to-cpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            _reject_shared_memory(kernel)
            split_at_collectives(kernel)
            for parallel in [p for p in kernel.walk() if isinstance(p, loop.ParallelOp)]:
                sequentialize(parallel)
            function = kernel_to_llvm_func(kernel, {"mlc.kernel": UnitAttr()})
            replace_terminators(function, loop.ReturnOp)
            Rewriter.insert_op(function, InsertPoint.before(kernel))
            kernel.detach()
            kernel.erase()
