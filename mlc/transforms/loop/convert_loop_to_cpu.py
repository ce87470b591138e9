"""convert-loop-to-cpu: loop kernels become sequential `llvm.func`s for the CPU.

Every `loop.parallel` becomes an `scf.for` from 0 to its trip count (the CPU runs all iterations
of every mapping in order, which the loop level's semantics allow), after being split at its
`loop.all_reduce` collectives (`loop_fission.py`), and every `loop.kernel` an
external `llvm.func` taking one bare pointer per memref and carrying the `mlc.kernel` attribute
(see `llvm_kernel.py`). `loop.launch` ops stay: the runtime calls the function once per launch.
The standard ops in the body are left for the `convert-*-to-llvm` passes, except f32 -> bf16
truncations, which become integer round-to-nearest-even (`bfloat16_rounding.py`): LLVM's x86
lowering of them depends on the host (subnormals flushed by AVX512-BF16, or a libgcc 13 call).

Limits: no multithreading yet; shared memory (space 3) is not supported on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.bfloat16_rounding import expand_bfloat16_truncations
from mlc.transforms.lowering.llvm_kernel import (
    SHARED_MEMORY_SPACE,
    kernel_to_llvm_func,
    replace_terminators,
)
from mlc.transforms.lowering.loop_fission import sequentialize, split_at_collectives


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
            expand_bfloat16_truncations(kernel)
            function = kernel_to_llvm_func(kernel, {attributes.KERNEL.name: UnitAttr()})
            replace_terminators(function, loop.ReturnOp)
            Rewriter.insert_op(function, InsertPoint.before(kernel))
            kernel.detach()
            kernel.erase()
