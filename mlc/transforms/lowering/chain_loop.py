"""GEMM-chain tile kernels (`mlc.chain`) lowered to loops: one thread per row of the block.

`convert-tile-to-loop` hands every `tile.kernel` carrying `mlc.chain` (an attention kernel of
`attention_kernel.py`) to `lower_chain_kernel`. The kernel's tiles are *row tiles* `[1..., R, C]`
with R the block's rows BM (or 1: the same row for every thread), and the right-hand operands of
its `tile.dot`s (K transposed, V), which are only ever read by a dot.

Layout. The block has BM threads; thread r owns row r of every row tile and keeps it in a private
buffer of C elements (`memref.alloca`, space 5; hoisted to the function's entry by the LLVM
lowering). Each tile op becomes a loop over the thread's C elements:

* `tile.load` of a row tile: element c is read at origin + (r, c), the padding outside the memref
  (an `scf.if` per element); a load read only as a dot's right-hand operand, or through a
  `tile.transpose` as one (K [BN, D] read in place: element (k, j) at origin + (j, k)), is not
  copied: the dot reads it in place, with the same bounds check.
* `tile.map`: the body cloned once per element (an `scf.for` over c); `tile.broadcast` and
  `tile.splat` are read in place (element 0, the scalar); `tile.in_bounds` and `tile.range` (a
  causal mask's positions) are computed per element.
* `tile.reduce` along the last axis: a sequential combination in increasing c, the partial result
  carried by the loop (a register), stored once;
* `tile.dot`: for each output column j, the K products added in increasing k with one `math.fma`
  each, the interpreter's order, so the lowering is exact; the partial sum is carried by the k
  loop (a register, not a load and store of the private buffer per product), stored once.
* `scf.for` carrying row tiles: a private buffer per carried tile, written with the initial value
  before the loop and with the yielded value at the end of each iteration.
* `tile.store`: element c written at origin + (r, c) where inside the memref.

Uniform scalar code (program ids, index arithmetic) is cloned as it is. The result is correct on
every backend, and slow: each thread streams the dot operands from global memory, with no sharing
through shared memory and no tensor cores (the speed work of issue 16 is left to later passes).
Limits: tiles whose row dimension is neither BM nor 1, and reductions along other axes, are
reported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, math, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, f32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter, emit_if, zero_of
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering

PRIVATE = IntegerAttr(loop.PRIVATE_MEMORY_SPACE, i64)

Element = Callable[[Emitter, SSAValue], SSAValue]
"""A row tile's element at a column, emitted where the emitter is."""


def is_chain_kernel(kernel: tile.KernelOp) -> bool:
    return attributes.CHAIN.read(kernel) is not None


def _shape(value: SSAValue) -> tuple[int, ...]:
    return value.type.get_shape()  # type: ignore[attr-defined]


def _element_type(value: SSAValue) -> Attribute:
    return value.type.element_type  # type: ignore[attr-defined]


def _loop(emitter: Emitter, count: int, body: Callable[[Emitter, SSAValue], None]) -> None:
    """`for c in 0..count` with `body` emitting one iteration."""
    block = Block(arg_types=[IndexType()])
    block.args[0].name_hint = "c"
    inner = Emitter(block)
    body(inner, block.args[0])
    block.add_op(scf.YieldOp())
    emitter.builder.insert(scf.ForOp(emitter.index(0), emitter.index(count), emitter.index(1), [], block))


def _fold(emitter: Emitter, count: int, initial: SSAValue, body: Callable[[Emitter, SSAValue, SSAValue], SSAValue]) -> SSAValue:
    """`for c in 0..count` carrying one scalar (a running sum in a register, not in a private
    buffer): `body` emits one iteration from the carried value and returns the next."""
    block = Block(arg_types=[IndexType(), initial.type])
    block.args[0].name_hint = "c"
    inner = Emitter(block)
    block.add_op(scf.YieldOp(body(inner, block.args[0], block.args[1])))
    loop = scf.ForOp(emitter.index(0), emitter.index(count), emitter.index(1), [initial], block)
    emitter.builder.insert(loop)
    return loop.results[0]


@dataclass
class ChainKernelLowering(TileKernelLowering):
    block_rows: int = 0
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """Row tiles held in a private buffer, to the buffer."""
    elements: dict[SSAValue, Element] = field(default_factory=dict)
    """Row tiles read in place (broadcasts, splats, masks), to their element function."""

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        dots = [op for op in self.kernel.walk() if isinstance(op, tile.DotOp)]
        self.operands = {op.rhs for op in dots}
        self.operands |= {op.rhs.owner.source for op in dots if isinstance(op.rhs.owner, tile.TransposeOp)}
        block_rows = {_shape(op.result)[-2] for op in dots}
        if len(block_rows) != 1:
            raise PassFailure(self.kernel, "a chain kernel's products must have one number of rows")
        self.block_rows = block_rows.pop()
        thread_loop = loop.ParallelOp(self.block_rows, "thread.x", Region(Block(arg_types=[IndexType()])))
        self.thread = thread_loop.body.block.args[0]
        self.thread.name_hint = "row"
        Emitter(bodies[-1]).builder.insert(thread_loop)
        self.top = Emitter(thread_loop.body.block)
        self._ops(self.top, self.kernel.body.block.ops)
        self.finish_kernel(result, [thread_loop.body.block, *bodies])
        return result

    # -- values -----------------------------------------------------------------------------------

    def _columns(self, value: SSAValue) -> int:
        return _shape(value)[-1]

    def _row(self, value: SSAValue) -> SSAValue | None:
        """The thread's row index into a row tile of `value`'s shape (None: the tile has one row)."""
        rows = _shape(value)[-2]
        if rows == 1:
            return None
        if rows != self.block_rows:
            raise PassFailure(value.owner, f"a chain kernel's row tiles have {self.block_rows} rows or 1, got {rows}")  # type: ignore[arg-type]
        return self.thread

    def _allocate(self, value: SSAValue) -> SSAValue:
        allocation = memref.AllocaOp.get(_element_type(value), shape=[self._columns(value)], memory_space=PRIVATE)
        self.top.builder.insert(allocation)  # the thread body's start: hoisted further by the LLVM lowering
        allocation.memref.name_hint = value.name_hint
        self.buffers[value] = allocation.memref
        return allocation.memref

    def element(self, value: SSAValue) -> Element:
        if value in self.elements:
            return self.elements[value]
        buffer = self.buffers[value]
        single = self._columns(value) == 1
        return lambda e, c: e.emit(memref.LoadOp.get(buffer, [e.index(0) if single else c]))

    def _fill(self, emitter: Emitter, value: SSAValue, element: Element) -> None:
        buffer = self._allocate(value)
        _loop(emitter, self._columns(value), lambda e, c: e.builder.insert(memref.StoreOp.get(element(e, c), buffer, [c])))

    # -- ops --------------------------------------------------------------------------------------

    def _ops(self, emitter: Emitter, ops: Sequence[Operation] | object) -> None:
        for op in ops:  # type: ignore[attr-defined]
            self._op(emitter, op)

    def _op(self, emitter: Emitter, op: Operation) -> None:
        if isinstance(op, tile.ProgramIdOp | tile.ReturnOp | scf.YieldOp):
            return
        if isinstance(op, tile.TransposeOp) and op.result in self.operands:
            return  # a transposed dot operand: the dot reads its load in place
        if isinstance(op, tile.LoadOp):
            if op.result not in self.operands:
                self._fill(emitter, op.result, lambda e, c: self._read(e, op, self._row(op.result), c))
        elif isinstance(op, tile.SplatOp):
            scalar = self.values[op.value]
            self.elements[op.result] = lambda e, c: scalar
        elif isinstance(op, tile.BroadcastOp):
            self._broadcast(op)
        elif isinstance(op, tile.InBoundsOp):
            self.elements[op.result] = lambda e, c: self._in_bounds(e, op, c)
        elif isinstance(op, tile.RangeOp):
            self.elements[op.result] = lambda e, c: self._position(e, op, c)
        elif isinstance(op, tile.MapOp):
            self._map(emitter, op)
        elif isinstance(op, tile.ReduceOp):
            self._reduce(emitter, op)
        elif isinstance(op, tile.DotOp):
            self._dot(emitter, op)
        elif isinstance(op, tile.StoreOp):
            self._store(emitter, op)
        elif isinstance(op, scf.ForOp):
            self._for(emitter, op)
        elif op.regions or any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)):
            raise PassFailure(op, "a chain kernel cannot hold this op")
        else:
            clone = op.clone(value_mapper=self.values)
            emitter.builder.insert(clone)
            self.values.update(zip(op.results, clone.results))

    def _indices(self, emitter: Emitter, indices: Sequence[SSAValue], row: SSAValue | None, column: SSAValue) -> list[SSAValue]:
        mapped = [self.values[index] for index in indices]
        if row is not None:
            mapped[-2] = emitter.add(mapped[-2], row)
        mapped[-1] = emitter.add(mapped[-1], column)
        return mapped

    def _guarded_read(self, emitter: Emitter, source: SSAValue, indices: list[SSAValue], padding: Attribute) -> SSAValue:
        bounds = source.type.get_shape()  # type: ignore[attr-defined]
        inside = emitter.all_of([emitter.below(index, bound) for index, bound in zip(indices, bounds)])
        element_type = source.type.element_type  # type: ignore[attr-defined]
        return emit_if(
            emitter, inside, [element_type],
            lambda e: [e.emit(memref.LoadOp.get(source, indices))],
            lambda e: [e.emit(arith.ConstantOp(padding, element_type))],
        )[0]

    def _read(self, emitter: Emitter, op: tile.LoadOp, row: SSAValue | None, column: SSAValue) -> SSAValue:
        padding = op.padding if op.padding is not None else zero_of(_element_type(op.result))
        indices = self._indices(emitter, op.indices, row, column)
        return self._guarded_read(emitter, self.values[op.source], indices, padding)

    def _broadcast(self, op: tile.BroadcastOp) -> None:
        source_shape = _shape(op.source)
        if len(source_shape) != len(_shape(op.result)) or (source_shape[-2] != 1 and source_shape[-2] != _shape(op.result)[-2]):
            raise PassFailure(op, "a chain kernel broadcasts along its rows or columns only")
        inner = self.element(op.source)
        single = source_shape[-1] == 1
        self.elements[op.result] = lambda e, c: inner(e, e.index(0) if single else c)

    def _in_bounds(self, emitter: Emitter, op: tile.InBoundsOp, column: SSAValue) -> SSAValue:
        indices = self._indices(emitter, op.indices, self._row(op.result), column)
        bounds = op.bounds_shape()
        return emitter.all_of([emitter.below(index, bound) for index, bound in zip(indices, bounds)])

    def _position(self, emitter: Emitter, op: tile.RangeOp, column: SSAValue) -> SSAValue:
        """`tile.range` along the rows (the thread's row) or the columns (the element's column)."""
        rank = len(_shape(op.result))
        axis = op.axis.value.data
        start = self.values[op.start]
        if axis == rank - 1:
            return emitter.add(start, column)
        row = self._row(op.result) if axis == rank - 2 else None
        return start if row is None else emitter.add(start, row)

    def _map(self, emitter: Emitter, op: tile.MapOp) -> None:
        buffers = [self._allocate(output) for output in op.outputs]
        inputs = [self.element(value) for value in op.inputs]

        def step(e: Emitter, c: SSAValue) -> None:
            results = self.clone_scalar_body(e, op.body.block, [element(e, c) for element in inputs])
            for result, buffer in zip(results, buffers):
                e.builder.insert(memref.StoreOp.get(result, buffer, [c]))

        _loop(emitter, self._columns(op.outputs[0]), step)

    def _reduce(self, emitter: Emitter, op: tile.ReduceOp) -> None:
        if op.axis.value.data != len(_shape(op.source)) - 1:
            raise PassFailure(op, "a chain kernel reduces along its last axis only")
        source = self.element(op.source)
        buffer = self._allocate(op.result)

        def step(e: Emitter, c: SSAValue, partial: SSAValue) -> SSAValue:
            (combined,) = self.clone_scalar_body(e, op.body.block, [partial, source(e, e.add(c, e.index(1)))])
            return combined

        total = _fold(emitter, self._columns(op.source) - 1, source(emitter, emitter.index(0)), step)
        emitter.builder.insert(memref.StoreOp.get(total, buffer, [emitter.index(0)]))

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        rhs = op.rhs.owner
        transposed = isinstance(rhs, tile.TransposeOp)
        if transposed:  # element (k, j) of the operand is element (j, k) of the stored block
            rhs = rhs.source.owner  # type: ignore[union-attr]
        if not isinstance(rhs, tile.LoadOp):
            raise PassFailure(op, "a chain kernel's dot reads its right-hand operand with tile.load (or its tile.transpose)")
        lhs, accumulator = self.element(op.lhs), self.element(op.acc)
        buffer = self._allocate(op.result)
        depth = _shape(op.lhs)[-1]

        def widen(e: Emitter, value: SSAValue) -> SSAValue:
            return value if value.type == f32 else e.emit(arith.ExtFOp(value, f32))

        def column_step(e: Emitter, j: SSAValue) -> None:
            def product_step(inner: Emitter, k: SSAValue, partial: SSAValue) -> SSAValue:
                padding = rhs.padding if rhs.padding is not None else zero_of(_element_type(rhs.result))
                indices = self._indices(inner, rhs.indices, *((j, k) if transposed else (k, j)))
                b = widen(inner, self._guarded_read(inner, self.values[rhs.source], indices, padding))
                return inner.emit(math.FmaOp(widen(inner, lhs(inner, k)), b, partial))

            total = _fold(e, depth, accumulator(e, j), product_step)
            e.builder.insert(memref.StoreOp.get(total, buffer, [j]))

        _loop(emitter, self._columns(op.result), column_step)

    def _store(self, emitter: Emitter, op: tile.StoreOp) -> None:
        element = self.element(op.value)
        destination = self.values[op.dest]
        bounds = op.dest.type.get_shape()  # type: ignore[attr-defined]

        def step(e: Emitter, c: SSAValue) -> None:
            indices = self._indices(e, op.indices, self._row(op.value), c)
            inside = e.all_of([e.below(index, bound) for index, bound in zip(indices, bounds)])
            value = element(e, c)

            def write(then: Emitter) -> list[SSAValue]:
                then.builder.insert(memref.StoreOp.get(value, destination, indices))
                return []

            emit_if(e, inside, [], write, None)

        _loop(emitter, self._columns(op.value), step)

    def _for(self, emitter: Emitter, op: scf.ForOp) -> None:
        carried = []
        for argument, initial in zip(op.body.block.args[1:], op.iter_args):
            buffer = self._allocate(argument)
            self._copy(emitter, self.element(initial), buffer, self._columns(argument))
            carried.append(buffer)
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = op.body.block.args[0].name_hint
        self.values[op.body.block.args[0]] = body.args[0]
        self.seed_induction_variable(op)
        inner = Emitter(body)
        self._ops(inner, op.body.block.ops)
        terminator = op.body.block.last_op
        assert isinstance(terminator, scf.YieldOp)
        for value, buffer, argument in zip(terminator.arguments, carried, op.body.block.args[1:]):
            self._copy(inner, self.element(value), buffer, self._columns(argument))
        body.add_op(scf.YieldOp())
        bounds = [self.values[v] for v in (op.lb, op.ub, op.step)]
        emitter.builder.insert(scf.ForOp(*bounds, [], body))
        for result, buffer in zip(op.results, carried):
            self.buffers[result] = buffer

    def _copy(self, emitter: Emitter, element: Element, buffer: SSAValue, columns: int) -> None:
        _loop(emitter, columns, lambda e, c: e.builder.insert(memref.StoreOp.get(element(e, c), buffer, [c])))


def lower_chain_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return ChainKernelLowering(kernel, vector_bytes).lower()
