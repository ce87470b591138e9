"""convert-loop-to-cpu: loop kernels become `llvm.func`s for the CPU, their grid split over threads.

Every `loop.parallel` becomes an `scf.for` from 0 to its trip count (the CPU runs all iterations
of every mapping in order, which the loop level's semantics allow), after being split at its
`loop.all_reduce` collectives (`loop_fission.py`), and every `loop.kernel` an
external `llvm.func` taking one bare pointer per memref and carrying the `mlc.kernel` attribute
(see `llvm_kernel.py`). `loop.launch` ops stay: the runtime calls the function once per launch.
The standard ops in the body are left for the `convert-*-to-llvm` passes, except f32 -> bf16
truncations, which become integer round-to-nearest-even (`bfloat16_rounding.py`): LLVM's x86
lowering of them depends on the host (subnormals flushed by AVX512-BF16, or a libgcc 13 call).

Threads. The programs of a kernel (the iterations of its outermost `block.*` loop) are
independent by construction, so a kernel whose grid is worth splitting becomes two functions:
`@k__programs(pointers..., %first: i64, %last: i64)`, whose outer loop runs programs
[first, last), and `@k(pointers...)`, which calls it for all of them (the ABI every caller knows).
`@k` carries `mlc.cpu_programs = N`, and the runtime splits [0, N) over its worker threads.
A kernel is worth splitting when it has at least two programs and its buffers hold at least
`min_parallel_elements` elements (work grows with the data touched, and handing a share to a
thread costs some 10-30 us, the time of ~10^4 elements of scalar code).

Grids of several dimensions. Block loops perfectly nested in the outermost one (`block.x` whose
whole body is a `block.y` loop, ...) are first collapsed into one loop over all their programs
(`collapse_block_nest`, row-major), so that a matmul's 2-D grid of tiles is shared out tile by
tile: 512^3 f32 (128x128 tiles) has 16 programs to split, not its 4 rows of tiles, which kept 12
of 16 threads idle.

Limits: shared memory (space 3) is not supported on the CPU; a block loop with other ops beside
it in the outer one's body is not collapsed (it runs whole in each share).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Region
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

PROGRAMS_SUFFIX = "__programs"


def _reject_shared_memory(kernel: loop.KernelOp) -> None:
    for op in kernel.walk():
        for value in op.results:
            space = getattr(value.type, "memory_space", None) if isinstance(value.type, MemRefType) else None
            if isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE:
                raise PassFailure(op, "shared memory is not supported by the CPU lowering")


def _buffer_elements(kernel: loop.KernelOp) -> int:
    return sum(
        math.prod(argument.type.get_shape())
        for argument in kernel.body.block.args
        if isinstance(argument.type, MemRefType)
    )


def _is_block_loop(op: object) -> bool:
    return isinstance(op, loop.ParallelOp) and (op.mapping_name() or "").startswith("block")


def _nested_block_loop(grid: loop.ParallelOp) -> loop.ParallelOp | None:
    """The block loop that is all of `grid`'s body (perfect nesting), or None."""
    ops = [op for op in grid.body.block.ops if not isinstance(op, loop.YieldOp)]
    return ops[0] if len(ops) == 1 and _is_block_loop(ops[0]) else None  # type: ignore[return-value]


def collapse_block_nest(grid: loop.ParallelOp) -> loop.ParallelOp:
    """`grid` with the block loops perfectly nested in it folded into one loop over all their
    programs, row-major (program p is outer p / inner, inner p % inner): the programs are
    independent, so any order is valid, and this one keeps a share's programs together as the
    nest ran them (a matmul's share: consecutive column tiles of one row block)."""
    while (inner := _nested_block_loop(grid)) is not None:
        inner_trips = inner.trip_count
        collapsed = loop.ParallelOp(grid.trip_count * inner_trips, grid.mapping_name())
        body = collapsed.body.block
        program = body.args[0]
        program.name_hint = grid.induction_variable.name_hint
        trips = arith.ConstantOp(IntegerAttr(inner_trips, IndexType()))
        outer_index, inner_index = arith.DivUIOp(program, trips), arith.RemUIOp(program, trips)
        body.insert_ops_before([trips, outer_index, inner_index], body.first_op)  # type: ignore[arg-type]
        grid.induction_variable.replace_all_uses_with(outer_index.result)
        inner.induction_variable.replace_all_uses_with(inner_index.result)
        for op in [op for op in inner.body.block.ops if not isinstance(op, loop.YieldOp)]:
            op.detach()
            body.insert_op_before(op, body.last_op)  # type: ignore[arg-type]
        Rewriter.replace_op(grid, collapsed, [])
        grid = collapsed
    return grid


def splittable_grid(kernel: loop.KernelOp, min_elements: int) -> loop.ParallelOp | None:
    """The kernel's outermost block loop with the block loops perfectly nested in it collapsed
    (`collapse_block_nest`), when splitting it over threads pays (see the docstring)."""
    outer = [op for op in kernel.body.block.ops if isinstance(op, loop.ParallelOp)]
    if len(outer) != 1 or not _is_block_loop(outer[0]):
        return None
    if outer[0].trip_count * _nested_trips(outer[0]) < 2 or _buffer_elements(kernel) < min_elements:
        return None
    return collapse_block_nest(outer[0])


def _nested_trips(grid: loop.ParallelOp) -> int:
    """The programs of the block loops perfectly nested in `grid` (1 when there are none)."""
    inner = _nested_block_loop(grid)
    return 1 if inner is None else inner.trip_count * _nested_trips(inner)


def _add_program_range(function: llvm.FuncOp, grid: loop.ParallelOp) -> None:
    """Appends `%first, %last: i64` to `function` and runs `grid` over [first, last) only."""
    entry = function.body.block
    first = entry.insert_arg(i64, len(entry.args))
    last = entry.insert_arg(i64, len(entry.args))
    first.name_hint, last.name_hint = "first", "last"
    inputs = [*function.function_type.inputs.data, i64, i64]
    function.function_type = llvm.LLVMFunctionType(inputs, llvm.LLVMVoidType())
    assert function.arg_attrs is not None
    function.arg_attrs = ArrayAttr([*function.arg_attrs.data, DictionaryAttr({}), DictionaryAttr({})])
    casts = [arith.IndexCastOp(value, IndexType()) for value in (first, last)]
    Rewriter.insert_op(casts, InsertPoint.before(grid))
    sequentialize(grid, (casts[0].result, casts[1].result))


def _whole_grid_caller(function: llvm.FuncOp, name: str, programs: int) -> llvm.FuncOp:
    """`@name(pointers...)`: calls `function` for programs [0, programs)."""
    pointer_types = list(function.function_type.inputs.data[:-2])
    block = Block(arg_types=pointer_types)
    for argument, named in zip(block.args, function.body.block.args):
        argument.name_hint = named.name_hint
    bounds = [llvm.ConstantOp(IntegerAttr(value, i64), i64) for value in (0, programs)]
    call = llvm.CallOp(function.sym_name.data, *block.args, *(b.result for b in bounds))
    block.add_ops([*bounds, call, llvm.ReturnOp()])
    caller = llvm.FuncOp(
        name,
        llvm.LLVMFunctionType(pointer_types, llvm.LLVMVoidType()),
        linkage=llvm.LinkageAttr("external"),
        body=Region(block),
        extra_attrs=dict(function.attributes),
    )
    caller.arg_attrs = function.arg_attrs
    attributes.CPU_PROGRAMS.write(caller, IntegerAttr(programs, i64))
    return caller


@dataclass(frozen=True)
class ConvertLoopToCpu(ModulePass):
    """Turn loop kernels into llvm.func kernels for the CPU, large grids splittable over threads."""

    name = "convert-loop-to-cpu"

    min_parallel_elements: int = 1 << 16
    """Kernels whose buffers hold fewer elements in all run on one thread."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            _reject_shared_memory(kernel)
            grid = splittable_grid(kernel, self.min_parallel_elements)
            split_at_collectives(kernel)
            for parallel in [p for p in kernel.walk() if isinstance(p, loop.ParallelOp) and p is not grid]:
                sequentialize(parallel)
            expand_bfloat16_truncations(kernel)
            name = kernel.sym_name.data
            function = kernel_to_llvm_func(kernel, {attributes.KERNEL.name: UnitAttr()})
            replace_terminators(function, loop.ReturnOp)
            Rewriter.insert_op(function, InsertPoint.before(kernel))
            if grid is not None:
                programs = grid.trip_count
                _add_program_range(function, grid)
                function.sym_name = StringAttr(name + PROGRAMS_SUFFIX)
                Rewriter.insert_op(_whole_grid_caller(function, name, programs), InsertPoint.before(kernel))
            kernel.detach()
            kernel.erase()

