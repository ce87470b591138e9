"""A multi-stage pipeline of bulk tensor copies (TMA) completing on mbarriers around a loop.

The TMA variant of `async_pipeline.StagedLoop`, which `loop-promote-shared` uses for the operands of
warpgroup products (`loop.wgmma`) in a kernel with `mlc.tma`. With S stages, one mbarrier per
stage (`%bars`, a shared `memref<Sxi64>` allocated before the thread loop) and the loop
`for k = lb to ub step s` (counters up to L) run once per thread loop, the copies go `ahead` =
S - 1 - lag iterations ahead (lag 1 in a loop of warpgroup products, as in `StagedLoop`):

    scf.if %thread == 0 { loop.mbarrier_init %bars[j], 1 for each stage j }
    scf.if %thread == 0 [and lb + j s <= L] {       } the prologue, for j < ahead: one
      loop.mbarrier_arrive %bars[j] expect_tx B    } arrival announcing the B bytes of every
      loop.tma_load <box of each buffer at lb + j s> to %stage_buffer[j, 0, ..], %bars[j]
    }
    for k ... {
      i = (k - lb) / s;  loop.mbarrier_wait %bars[i mod S], (i / S) mod 2
      scf.if %thread == 0 and k + ahead s <= L {
        loop.mbarrier_arrive %bars[(i + ahead) mod S] expect_tx B;  loop.tma_load ...
      }
      ... the body, reading stage i mod S ...
    }

Iteration i's copies complete phase i / S of their stage's barrier, so every thread waits for
parity (i / S) mod 2 before reading. Copies are issued only for counters up to L (no copy is left
in flight after the loop, unlike the clamped copies of the async pipeline); TMA fills the box's
elements past the operand's end with zeros, so no copy needs a mask. The stage a copy fills was
read `lag + 1` iterations earlier by every thread: `gpu-insert-barriers` puts one barrier before
the issuing branch (the reads of that stage, wgmma's included once waited, before the copy).
`async_pipeline.overlap_products` then moves the issuing branch below the iteration's products and
keeps each product in flight until the next iteration's `loop.wgmma_wait 1`, as for cp.async.

Why not warp-specialized (a producer warpgroup, full and empty barriers, no `bar.sync` in the
loop, as bench/tma_matmul.py): the interpreter runs a block's threads in lockstep, which cannot
run a producer loop and consumer loops in divergent branches; here every statement has one
order for all threads, so the loop-level semantics and the equivalence tests hold as they are.

Preconditions: `stages` >= 2, the loop's start and step constants, the loop directly in the thread
loop's body (it runs once per block: the barriers' phases then number its iterations), sources
that are kernel arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.async_pipeline import emitter_before, product_lag
from mlc.transforms.lowering.chunk_access import Emitter

TmaEmitter = Callable[[Emitter, SSAValue, SSAValue, SSAValue], int]
"""Emits one buffer's bulk copies for one iteration, given the counter they copy for, the stage
to fill (also its barrier's index) and the barriers; returns the bytes they copy."""


class TmaStagedLoop:
    """The TMA pipeline skeleton around `scope` (made on first use, found again by later buffers)."""

    def __init__(self, scope: scf.ForOp, stages: int, bounds: tuple[int, int], last: int | SSAValue, thread_loop: loop.ParallelOp):
        self.scope = scope
        self.stages = stages
        self.ahead = max(1, stages - 1 - product_lag(scope))
        self.low, self.step = bounds
        self.last = last
        self.thread_loop = thread_loop
        if self.existing_stages(scope) is None:
            self._build()
        self.wait = next(op for op in scope.body.block.ops if isinstance(op, loop.MbarrierWaitOp))
        before = self._ops_before_scope()
        self.issues = [op for op in (*before, *scope.body.block.ops) if isinstance(op, scf.IfOp) and issue_arrival(op) is not None]

    @staticmethod
    def existing_stages(scope: Operation) -> int | None:
        """The stage count of the TMA pipeline already around `scope`, if there is one."""
        if not isinstance(scope, scf.ForOp):
            return None
        waits = [op for op in scope.body.block.ops if isinstance(op, loop.MbarrierWaitOp)]
        return waits[0].barrier.type.get_shape()[0] if waits else None  # type: ignore[attr-defined]

    def _ops_before_scope(self) -> list[Operation]:
        parent = self.scope.parent_block()
        assert parent is not None
        ops = list(parent.ops)
        return ops[: ops.index(self.scope)]

    def _build(self) -> None:
        allocation = memref.AllocaOp.get(i64, 8, [self.stages], memory_space=IntegerAttr(loop.SHARED_MEMORY_SPACE, i64))
        allocation.memref.name_hint = "bars"
        self.thread_loop.parent_block().insert_op_before(allocation, self.thread_loop)  # type: ignore[union-attr]
        barriers = allocation.memref
        setup = emitter_before(self.scope)
        first = setup.emit(arith.CmpiOp(self.thread_loop.induction_variable, setup.index(0), "eq"))
        first.name_hint = "first"
        _branch(setup, first, [loop.MbarrierInitOp(barriers, [setup.index(stage)], 1) for stage in range(self.stages)])
        for position in range(self.ahead):
            counter = self.low + position * self.step
            if isinstance(self.last, int) and counter > self.last:
                break  # the loop ends before this counter: nothing to copy
            self._issue(setup, first, barriers, setup.index(counter), setup.index(position))
        body = self.scope.body.block
        head = emitter_before(body.first_op)  # type: ignore[arg-type]
        iteration = self._iteration(head)
        stage = head.emit(arith.RemUIOp(iteration, head.index(self.stages)))
        parity = head.emit(arith.RemUIOp(head.emit(arith.DivUIOp(iteration, head.index(self.stages))), head.index(2)))
        stage.name_hint, parity.name_hint = "stage", "parity"
        head.builder.insert(loop.MbarrierWaitOp(barriers, [stage], parity))
        following = head.add(body.args[0], head.index(self.ahead * self.step))
        next_stage = head.emit(arith.RemUIOp(head.add(iteration, head.index(self.ahead)), head.index(self.stages)))
        following.name_hint, next_stage.name_hint = "next", "next_stage"
        self._issue(head, first, barriers, following, next_stage)

    def _issue(self, emitter: Emitter, first: SSAValue, barriers: SSAValue, counter: SSAValue, stage: SSAValue) -> None:
        """`scf.if first and counter <= last { arrive on barriers[stage], expecting no bytes yet }`."""
        last = emitter.index(self.last) if isinstance(self.last, int) else self.last
        in_range = emitter.emit(arith.CmpiOp(counter, last, "ule"))
        _branch(emitter, emitter.emit(arith.AndIOp(first, in_range)), [loop.MbarrierArriveOp(barriers, [stage], 0)])

    def _iteration(self, emitter: Emitter) -> SSAValue:
        """i = (k - lb) / step, the iteration's number."""
        counter = self.scope.body.block.args[0]
        offset = emitter.emit(arith.SubiOp(counter, emitter.index(self.low))) if self.low else counter
        return emitter.emit(arith.DivUIOp(offset, emitter.index(self.step))) if self.step != 1 else offset

    def current_stage(self) -> SSAValue:
        """The stage iteration i reads (the index of the barrier it waits on)."""
        return self.wait.indices[0]

    def add_copies(self, copies: TmaEmitter) -> None:
        """Adds one buffer's bulk copies to every issuing branch and their bytes to its arrival."""
        for issue in self.issues:
            arrive = issue_arrival(issue)
            assert arrive is not None
            emitter = emitter_before(issue.true_region.block.last_op)  # type: ignore[arg-type]
            stage = arrive.indices[0]
            copied = copies(emitter, issue_counter(issue), stage, arrive.barrier)
            arrive.expect_tx = IntegerAttr(arrive.transaction_bytes + copied, i64)


def _branch(emitter: Emitter, condition: SSAValue, ops: list[Operation]) -> None:
    """`scf.if condition { ops }`."""
    block = Block()
    block.add_ops([*ops, scf.YieldOp()])
    emitter.builder.insert(scf.IfOp(condition, [], Region(block)))


def issue_arrival(op: scf.IfOp) -> loop.MbarrierArriveOp | None:
    """The arrival of an issuing branch (`TmaStagedLoop._issue`), None for another `scf.if`."""
    return next((inner for inner in op.true_region.block.ops if isinstance(inner, loop.MbarrierArriveOp)), None)


def issue_counter(issue: scf.IfOp) -> SSAValue:
    """The loop counter an issuing branch copies for: the left side of its `first and counter <= last`."""
    conjunction = issue.cond.owner
    assert isinstance(conjunction, arith.AndIOp)
    comparison = conjunction.rhs.owner
    assert isinstance(comparison, arith.CmpiOp)
    return comparison.lhs


TMA_ELEMENT_BYTES = (2, 4)
"""The element sizes of the operands the TMA pipeline copies: f16 and bf16, and f32 (the operands of
TF32 warpgroup products), each in wgmma's 128-byte-swizzled stages."""


def bulk_copies_possible(kernel: loop.KernelOp, source: SSAValue, extents: Sequence[int], scope: Operation, thread_loop: loop.ParallelOp) -> bool:
    """Whether `kernel` asks for TMA (`mlc.tma`) and the box `extents` of `source`, copied per
    iteration of `scope`, can be one bulk tensor copy: `scope` a loop directly in the thread
    loop's body, `source` a kernel argument of 16-bit or f32 elements with rows of a multiple of 16
    bytes (a tensor map's strides), a matrix (a batched operand keeps cp.async), the box 1 to 256
    elements per dimension."""
    source_type = source.type
    return (
        attributes.TMA.read(kernel) is not None
        and isinstance(scope, scf.ForOp)
        and scope.parent_op() is thread_loop
        and isinstance(source, BlockArgument)
        and isinstance(source_type, MemRefType)
        and source_type.has_static_shape()
        and byte_width(source_type.element_type) in TMA_ELEMENT_BYTES
        and source_type.get_shape()[-1] * byte_width(source_type.element_type) % 16 == 0
        and len(extents) == source_type.get_num_dims() == 2
        and all(0 < extent <= loop.TMA_BOX_LIMIT for extent in extents)
    )


def bulk_copies(source: SSAValue, shared: SSAValue, origins: Callable[[Emitter, SSAValue], list[SSAValue]]) -> TmaEmitter:
    """The `TmaEmitter` of one buffer: one `loop.tma_load` of the box at `origins(counter)` into
    the stage (the whole of `shared`'s trailing dimensions)."""

    def emit(emitter: Emitter, counter: SSAValue, stage: SSAValue, barriers: SSAValue) -> int:
        shape = shared.type.get_shape()  # type: ignore[attr-defined]
        zero = emitter.index(0)
        copy = loop.TmaLoadOp(source, origins(emitter, counter), shared, [stage] + [zero] * (len(shape) - 1), barriers, [stage])
        emitter.builder.insert(copy)
        return copy.byte_count()

    return emit
