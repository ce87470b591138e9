"""Running parallel loops one iteration at a time (the CPU's way): splitting them at their collectives
(loop fission), and `sequentialize`, which turns a parallel loop into an `scf.for`.

A `loop.all_reduce` makes every iteration of its loop wait for the others. On the CPU the
iterations of a parallel loop run in order, so the loop is cut there (loop fission): the body
before the collective runs for all iterations, the collective runs over all of them, then the
body after it does. Values that cross a cut are kept per iteration in a buffer (scalar
expansion): stored where they are computed, loaded where they are used. The collective is the
dialect's butterfly over the buffer of its operand (for each mask bit, from the lowest, element i
becomes combiner(element i, element i xor bit)), so the results are bit-identical to the GPU's;
for a symmetric combiner (add, max, ...) over a mask of low bits, a tree that gives the same
bits with one combine per element instead of one per element and bit (`Fission._emit_tree`).

Preconditions: the collectives are at the top level of their loop's body (the loop verifier
and the tile-to-loop lowering guarantee that every iteration reaches them).
"""

from __future__ import annotations

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects.loop import ops as loop


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def _inside(op: Operation, roots: set[Operation]) -> bool:
    current: Operation | None = op
    while current is not None:
        if current in roots:
            return True
        current = current.parent_op()
    return False


def _segments(body: Block) -> tuple[list[list[Operation]], list[loop.AllReduceOp]]:
    segments: list[list[Operation]] = [[]]
    collectives: list[loop.AllReduceOp] = []
    for op in body.ops:
        if isinstance(op, loop.YieldOp):
            continue
        if isinstance(op, loop.AllReduceOp):
            collectives.append(op)
            segments.append([])
        else:
            segments[-1].append(op)
    return segments, collectives


class Fission:
    """The split of one parallel loop (see the module docstring)."""

    def __init__(self, parallel: loop.ParallelOp):
        self.parallel = parallel
        self.count = parallel.trip_count
        self.segments, self.collectives = _segments(parallel.body.block)
        self.buffers: dict[SSAValue, SSAValue] = {}

    def buffer(self, value: SSAValue) -> SSAValue:
        """The per-iteration buffer of a crossing value, allocated before the loop."""
        if value not in self.buffers:
            allocation = memref.AllocaOp.get(value.type, shape=[self.count])
            Rewriter.insert_op(allocation, InsertPoint.before(self.parallel))
            self.buffers[value] = allocation.memref
        return self.buffers[value]

    def apply(self) -> None:
        for collective in self.collectives:
            if collective.enclosing_loop() is not self.parallel:
                raise PassFailure(collective, "all_reduce must be at the top level of its parallel loop")
        # Where each value becomes available: its segment, or just after its collective.
        defined_in: dict[SSAValue, float] = {}
        for index, ops in enumerate(self.segments):
            for op in ops:
                for result in op.results:
                    defined_in[result] = index
        for index, collective in enumerate(self.collectives):
            defined_in[collective.result] = index + 0.5
        for index, ops in enumerate(self.segments):
            self._emit_segment(index, ops, defined_in)
            if index < len(self.collectives):
                self._emit_collective(self.collectives[index])
        # Every use of their results now reads a buffer. Erasing them also drops their own uses of
        # their operands, which later rewrites of those operands' producers would otherwise visit.
        # Last first: a collective may combine the result of an earlier one (one per reduced axis).
        for collective in reversed(self.collectives):
            collective.erase()
        self.parallel.detach()
        self.parallel.erase(safe_erase=False)

    def _emit_segment(self, index: int, ops: list[Operation], defined_in: dict[SSAValue, float]) -> None:
        new = loop.ParallelOp(self.count, self.parallel.mapping_name(), Region(Block(arg_types=[IndexType()])))
        block = new.body.block
        iteration = block.args[0]
        iteration.name_hint = self.parallel.induction_variable.name_hint
        roots = set(ops)
        needed = {
            operand
            for op in ops
            for inner in op.walk()
            for operand in inner.operands
            if defined_in.get(operand, index) < index
        }
        # Program order (`defined_in` was filled in it), never `id()`: the same IR in every process.
        position = {value: place for place, value in enumerate(defined_in)}
        for value in sorted(needed, key=lambda v: (defined_in[v], position[v])):
            load = memref.LoadOp.get(self.buffer(value), [iteration])
            block.add_op(load)
            value.replace_uses_with_if(load.res, lambda use: _inside(use.operation, roots))
        self.parallel.induction_variable.replace_uses_with_if(iteration, lambda use: _inside(use.operation, roots))
        for op in ops:
            op.detach()
            block.add_op(op)
        crossing = [
            result
            for op in ops
            for result in op.results
            if any(not _inside(use.operation, roots) for use in result.uses)
        ]
        for value in crossing:
            block.add_op(memref.StoreOp.get(value, self.buffer(value), [iteration]))
        block.add_op(loop.YieldOp())
        Rewriter.insert_op(new, InsertPoint.before(self.parallel))

    def _emit_collective(self, collective: loop.AllReduceOp) -> None:
        """The butterfly, one sequential pass per mask bit, from the operand's buffer; a tree when
        that gives the same bits with fewer combines (`_emit_tree`)."""
        source = self.buffer(collective.value)
        result = self.buffer(collective.result)
        mask = collective.mask.value.data
        if has_commutative_combiner(collective) and mask & (mask + 1) == 0 and self.count % (mask + 1) == 0:
            self._emit_tree(collective, source, result, mask)
            collective.detach()
            return
        scratch = memref.AllocaOp.get(collective.value.type, shape=[self.count])
        Rewriter.insert_op(scratch, InsertPoint.before(self.parallel))
        self._sequential_loop(lambda i, emit: emit(memref.StoreOp.get(emit(memref.LoadOp.get(source, [i])), result, [i])))
        mask = collective.mask.value.data
        bit = 1
        while bit <= mask:
            if mask & bit:
                self._sequential_loop(lambda i, emit, bit=bit: self._combine_step(collective, result, scratch.memref, i, bit, emit))
                self._sequential_loop(
                    lambda i, emit: emit(memref.StoreOp.get(emit(memref.LoadOp.get(scratch.memref, [i])), result, [i]))
                )
            bit <<= 1
        collective.detach()

    def _emit_tree(self, collective: loop.AllReduceOp, source: SSAValue, result: SSAValue, mask: int) -> None:
        """The butterfly's result for a mask of low bits and a combiner f with f(a, b) = f(b, a).

        After the butterfly's step for a bit, both partners hold f(own, partner), which is one
        value when f is symmetric; so every group ends with one value, which a tree computes
        with one combine per element (the butterfly: one per element and bit): in place, for
        each bit from the lowest, element i (i a multiple of 2 * bit) becomes f(element i,
        element i + bit); then every element takes its group's first.
        """
        self._sequential_loop(lambda i, emit: emit(memref.StoreOp.get(emit(memref.LoadOp.get(source, [i])), result, [i])))
        bit = 1
        while bit <= mask:

            def combine(j: SSAValue, emit, bit: int = bit) -> None:
                first = emit(arith.MuliOp(j, emit(_index(2 * bit))))
                self._combine_step(collective, result, result, first, bit, emit)

            self._sequential_loop(combine, self.count // (2 * bit))
            bit <<= 1

        def broadcast(i: SSAValue, emit) -> None:
            group_first = emit(arith.SubiOp(i, emit(arith.AndIOp(i, emit(_index(mask))))))
            emit(memref.StoreOp.get(emit(memref.LoadOp.get(result, [group_first])), result, [i]))

        self._sequential_loop(broadcast)

    def _combine_step(self, collective: loop.AllReduceOp, values: SSAValue, scratch: SSAValue, i: SSAValue, bit: int, emit) -> None:
        own = emit(memref.LoadOp.get(values, [i]))
        partner_index = emit(arith.XOrIOp(i, emit(_index(bit))))
        partner = emit(memref.LoadOp.get(values, [partner_index]))
        mapping: dict[SSAValue, SSAValue] = dict(zip(collective.body.block.args, (own, partner)))
        for op in collective.body.block.ops:
            if isinstance(op, loop.YieldOp):
                emit(memref.StoreOp.get(mapping.get(op.values[0], op.values[0]), scratch, [i]))
                return
            clone = op.clone(value_mapper=mapping)
            emit(clone)
            mapping.update(zip(op.results, clone.results))

    def _sequential_loop(self, body_builder, count: int | None = None) -> None:
        body = Block(arg_types=[IndexType()])

        def emit(op: Operation) -> SSAValue | None:
            body.add_op(op)
            return op.results[0] if op.results else None

        body_builder(body.args[0], emit)
        body.add_op(scf.YieldOp())
        bounds = [_index(0), _index(self.count if count is None else count), _index(1)]
        Rewriter.insert_op([*bounds, scf.ForOp(*(b.result for b in bounds), [], body)], InsertPoint.before(self.parallel))


COMMUTATIVE_COMBINERS = (
    arith.AddfOp, arith.MulfOp, arith.MaximumfOp, arith.MinimumfOp, arith.AddiOp, arith.MuliOp,
    arith.MaxSIOp, arith.MinSIOp, arith.MaxUIOp, arith.MinUIOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp,
)  # fmt: skip
"""Ops whose result does not depend on the order of their two operands, bit for bit (IEEE add, max, ...)."""


def has_commutative_combiner(collective: loop.AllReduceOp) -> bool:
    """Whether the combiner is one op of `COMMUTATIVE_COMBINERS` applied to its two arguments (so
    that a tree, or a hardware reduction, may combine in any order and still give the same bits)."""
    body = list(collective.body.block.ops)
    if len(body) != 2 or not isinstance(body[0], COMMUTATIVE_COMBINERS):
        return False
    yielded = body[1].operands[0] if isinstance(body[1], loop.YieldOp) else None
    return yielded is body[0].results[0] and set(body[0].operands) == set(collective.body.block.args)


def split_at_collectives(kernel: Operation) -> None:
    """Splits every parallel loop of `kernel` whose body holds a `loop.all_reduce`."""
    for parallel in [op for op in kernel.walk() if isinstance(op, loop.ParallelOp)]:
        if any(isinstance(op, loop.AllReduceOp) for op in parallel.body.block.ops):
            Fission(parallel).apply()
    for op in kernel.walk():
        if isinstance(op, loop.AllReduceOp):
            raise PassFailure(op, "all_reduce must be at the top level of a parallel loop")


def sequentialize(parallel: loop.ParallelOp, bounds: tuple[SSAValue, SSAValue] | None = None) -> None:
    """Replaces `parallel` by an `scf.for` over the same iterations, or over the iterations
    [first, last) when `bounds` gives those two index values (a share of a split grid)."""
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
    if bounds is None:
        for_op = scf.ForOp(lower, upper, step, [], Region(new_body))
        Rewriter.insert_op([lower, upper, step, for_op], InsertPoint.before(parallel))
    else:
        for_op = scf.ForOp(bounds[0], bounds[1], step, [], Region(new_body))
        Rewriter.insert_op([step, for_op], InsertPoint.before(parallel))
    parallel.detach()
    parallel.erase()
