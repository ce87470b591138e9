"""Elementwise and reduction tile kernels as loop nests: convert-tile-to-loop's default lowering.

`KernelLowering` turns a `tile.kernel` without dots, chains or transposes into a `loop.kernel`:
the layout, loops, masks and vectors of `tile/convert_tile_to_loop.py`'s docstring (chunks of V
contiguous elements per thread and repetition, `tile.map` bodies cloned per element, reductions
combined across the block with `tile_reductions.py`). The pass chooses which lowering a kernel
takes; this module is the one for everything but matmuls, chains and transposes.

Preconditions and limits: those the pass lists (tiles of one shape but broadcast operands, the
tile ops named there, no scalars carried by loops, no `tile.reduce` inside a loop, at most
`MAX_UNROLLED_REPETITIONS` repetitions per thread in kernels with reductions).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, Region, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.thread_layout import ThreadLayout, iteration_shape, used_from_outside
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter, emit_if, indexed_elements
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering, is_power_of_two
from mlc.transforms.lowering.tile_reductions import all_reduce, combine_tree, reduction_terms


MAX_UNROLLED_REPETITIONS = 64
"""Kernels with reductions keep every repetition's values in registers; beyond this many per thread,
a tile does not fit and is reported (convert-graph-to-tile loops over chunks of longer rows)."""


@dataclass
class Repetition:
    """The code-generation state of one repetition of a thread: where its chunk is."""

    coordinates: list[SSAValue]
    accesses: ChunkAccesses
    index: int | None
    """The repetition's number when it is known (unrolled), else None (inside the scf.for)."""


@dataclass
class KernelLowering(TileKernelLowering):
    layout: ThreadLayout = field(init=False)
    elements: ChainMap[tuple[SSAValue, int], list[SSAValue]] = field(default_factory=ChainMap)
    """Each repetition's elements of tile values; a new child per loop body, so that values made
    inside stay there."""
    repetitions: dict[int, Repetition] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        shape = iteration_shape(self.kernel)
        widest = max(byte_width(t.element_type) for t in self.kernel.function_type.inputs.data)  # type: ignore[attr-defined]
        num_warps = self.kernel.num_warps.value.data if self.kernel.num_warps is not None else 4
        self.layout = ThreadLayout.choose(shape, num_warps, max(1, self.vector_bytes // widest))
        if self.layout.chunks % self.layout.threads:  # chunks past the tile's end would go unguarded
            raise PassFailure(self.kernel, f"the tile shape {shape} is not a whole number of {self.layout.threads}-thread repetitions of {self.layout.vector}-element chunks; use power-of-two tile dimensions")
        self.reductions = [op for op in self.kernel.walk() if isinstance(op, tile.ReduceOp)]
        # Reductions combine values of several repetitions, and a tile stored once (broadcast along
        # some dimensions) is stored by some repetitions only: both need every repetition explicit.
        self.unrolled = bool(self.reductions) or any(
            isinstance(op, tile.StoreOp) and op.value.type.get_shape() != shape[-len(op.value.type.get_shape()) :]  # type: ignore[attr-defined]
            for op in self.kernel.walk()
        )
        if self.reductions:
            if not all(is_power_of_two(size) for size in shape):
                raise PassFailure(self.reductions[0], f"reductions need power-of-two tile dimensions, got {shape}")
            if self.layout.repetitions > MAX_UNROLLED_REPETITIONS:
                message = f"the tile needs {self.layout.repetitions} repetitions per thread; a reduction keeps at most {MAX_UNROLLED_REPETITIONS} in registers"
                raise PassFailure(self.reductions[0], message + " (use a smaller tile or more warps)")

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        thread_loop = loop.ParallelOp(self.layout.threads, "thread.x", Region(Block(arg_types=[IndexType()])))
        thread_loop.body.block.args[0].name_hint = "thread"
        Emitter(bodies[-1]).builder.insert(thread_loop)
        self._thread_body(thread_loop.body.block)
        self.finish_kernel(result, [thread_loop.body.block, *bodies])
        return result

    def _thread_body(self, block: Block) -> None:
        """Uniform code, then the repetitions: unrolled with reductions, else an `scf.for`."""
        emitter = Emitter(block)
        self.thread = block.args[0]
        for op in self.kernel.body.block.ops:
            if not _is_tile_op(op) and not isinstance(op, scf.ForOp):
                self._clone_uniform(op, emitter)
        layout = self.layout
        if self.unrolled or layout.repetitions == 1:
            for number in range(layout.repetitions):
                start = emitter.index(number * layout.threads) if number else None
                chunk = emitter.add(start, self.thread) if start is not None else self.thread
                self._start_repetition(emitter, number, chunk, number)
            self._tile_ops(emitter, self.kernel.body.block, list(range(layout.repetitions)))
            return
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = "repetition"
        chunk_emitter = Emitter(body)
        start = chunk_emitter.emit(arith.MuliOp(body.args[0], chunk_emitter.index(layout.threads)))
        self._start_repetition(chunk_emitter, 0, chunk_emitter.add(start, self.thread), None)
        self._tile_ops(chunk_emitter, self.kernel.body.block, [0])
        body.add_op(scf.YieldOp())
        emitter.builder.insert(scf.ForOp(emitter.index(0), emitter.index(layout.repetitions), emitter.index(1), [], body))

    def _clone_uniform(self, op: Operation, emitter: Emitter) -> None:
        if any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)) or op.regions:
            raise PassFailure(op, "convert-tile-to-loop cannot lower this op inside a tile kernel")
        clone = op.clone(value_mapper=self.values)
        emitter.builder.insert(clone)
        for old, new in zip(op.results, clone.results):
            self.values[old] = new

    def _start_repetition(self, emitter: Emitter, key: int, chunk: SSAValue, number: int | None) -> None:
        coordinates = self._chunk_coordinates(emitter, chunk)
        accesses = ChunkAccesses(
            self.layout.shape,
            self.layout.vector,
            coordinates,
            self.facts,
            self.require_alignment,
        )
        self.repetitions[key] = Repetition(coordinates, accesses, number)

    def _tile_ops(self, emitter: Emitter, block: Block, keys: list[int]) -> None:
        """Every tile op of `block` in program order, for every repetition (values are materialized
        lazily). Uniform code in a loop body is cloned in place (the top level's is cloned first)."""
        lazy = (tile.LoadOp, tile.BroadcastOp, tile.SplatOp, tile.ReduceOp, tile.InBoundsOp, tile.ProgramIdOp, tile.RangeOp, tile.GatherOp)
        for op in block.ops:
            if isinstance(op, tile.StoreOp):
                for key in keys:
                    self._store(emitter, op, key)
            elif isinstance(op, tile.MapOp):
                for key in keys:
                    self._map(emitter, op, key)
            elif isinstance(op, scf.ForOp):
                self._for(emitter, op, keys)
            elif _is_tile_op(op):
                if not isinstance(op, (*lazy, tile.ReturnOp)):
                    raise PassFailure(op, "convert-tile-to-loop cannot lower this tile op yet")
            elif block is not self.kernel.body.block and not isinstance(op, scf.YieldOp):
                self._clone_uniform(op, emitter)

    # -- loops ---------------------------------------------------------------------------------------

    def _for(self, emitter: Emitter, op: scf.ForOp, keys: list[int]) -> None:
        """A loop carrying tiles carries each repetition's elements of them (see the docstring)."""
        if any(not isinstance(value.type, tile.TileType) for value in op.iter_args):
            raise PassFailure(op, "convert-tile-to-loop only lowers loops that carry tiles")
        for inner in op.body.walk():
            if isinstance(inner, tile.ReduceOp):
                raise PassFailure(inner, "a tile.reduce inside a loop is not supported: reduce the tile the loop carries after it")
        for value in used_from_outside(op):
            for key in keys:
                self.materialize(emitter, value, key)
        initial = self._flatten(emitter, op.iter_args, keys)
        body = Block(arg_types=[IndexType(), *(value.type for value in initial)])
        induction = op.body.block.args[0]
        body.args[0].name_hint = induction.name_hint
        self.values[induction] = body.args[0]
        self.seed_induction_variable(op)
        self.elements = self.elements.new_child()
        self._unflatten(op.body.block.args[1:], list(body.args[1:]), keys)
        inner = Emitter(body)
        self._tile_ops(inner, op.body.block, keys)
        terminator = op.body.block.last_op
        assert isinstance(terminator, scf.YieldOp)
        inner.builder.insert(scf.YieldOp(*self._flatten(inner, terminator.arguments, keys)))
        self.elements = self.elements.parents
        new_loop = scf.ForOp(self.values[op.lb], self.values[op.ub], self.values[op.step], initial, Region(body))
        emitter.builder.insert(new_loop)
        self._unflatten(op.results, list(new_loop.results), keys)

    def _carried_width(self, value: SSAValue) -> int:
        """How many scalars per repetition a carried tile takes: V, or 1 when broadcast along the chunk."""
        shape = value.type.get_shape()  # type: ignore[attr-defined]
        return self.layout.vector if shape[-1] == self.layout.shape[-1] else 1

    def _flatten(self, emitter: Emitter, values: Sequence[SSAValue], keys: list[int]) -> list[SSAValue]:
        """The scalars that carry tiles: each repetition's elements in turn (a single one repeated)."""
        flat: list[SSAValue] = []
        for value in values:
            width = self._carried_width(value)
            for key in keys:
                elements = self.materialize(emitter, value, key)
                flat += elements if len(elements) == width else elements * width
        return flat

    def _unflatten(self, targets: Sequence[SSAValue], flat: list[SSAValue], keys: list[int]) -> None:
        position = 0
        for target in targets:
            width = self._carried_width(target)
            for key in keys:
                elements = flat[position : position + width]
                for element in elements:
                    element.name_hint = target.name_hint
                self.elements[(target, key)] = elements
                position += width

    def _chunk_coordinates(self, emitter: Emitter, chunk: SSAValue) -> list[SSAValue]:
        """The position of the chunk's first element in the tile, one index per dimension."""
        shape, layout = self.layout.shape, self.layout
        coordinates: list[SSAValue] = [chunk] * len(shape)
        remaining = chunk
        per_row = layout.chunks_per_row
        if per_row == 1:
            coordinates[-1] = emitter.index(0)
        else:
            column = remaining if len(shape) == 1 else emitter.emit(arith.RemUIOp(remaining, emitter.index(per_row)))
            coordinates[-1] = emitter.emit(arith.MuliOp(column, emitter.index(layout.vector))) if layout.vector > 1 else column
            if len(shape) > 1:
                remaining = emitter.emit(arith.DivUIOp(remaining, emitter.index(per_row)))
        for dim in reversed(range(len(shape) - 1)):
            if shape[dim] == 1:
                coordinates[dim] = emitter.index(0)
            elif dim == 0:
                coordinates[dim] = remaining
            else:
                coordinates[dim] = emitter.emit(arith.RemUIOp(remaining, emitter.index(shape[dim])))
                remaining = emitter.emit(arith.DivUIOp(remaining, emitter.index(shape[dim])))
        return coordinates

    # -- tile values as per-chunk scalars ---------------------------------------------------

    def materialize(self, emitter: Emitter, value: SSAValue, key: int) -> list[SSAValue]:
        """A repetition's elements of a tile value: V scalars, or one when constant along the chunk."""
        if (value, key) in self.elements:
            return self.elements[(value, key)]
        owner = value.owner
        if isinstance(owner, tile.LoadOp):
            result = self._load(emitter, owner, key)
        elif isinstance(owner, tile.BroadcastOp):
            result = self.materialize(emitter, owner.source, key)
        elif isinstance(owner, tile.SplatOp):
            result = [self.values[owner.value]]
        elif isinstance(owner, tile.MapOp):
            self._map(emitter, owner, key)
            result = self.elements[(value, key)]
        elif isinstance(owner, tile.ReduceOp):
            result = self._reduce(emitter, owner, key)
        elif isinstance(owner, tile.InBoundsOp):
            result = self._in_bounds(emitter, owner, key)
        else:  # tile.range, tile.gather (per-element positions), or a report naming the op
            result = indexed_elements(emitter, value, self.kernel, self.repetitions[key].accesses, self.values, lambda v: self.materialize(emitter, v, key))
        self.elements[(value, key)] = result
        return result

    def _map(self, emitter: Emitter, op: tile.MapOp, key: int) -> None:
        if (op.outputs[0], key) in self.elements:
            return
        inputs = [self.materialize(emitter, value, key) for value in op.inputs]
        count = max([len(elements) for elements in inputs], default=1)
        results: list[list[SSAValue]] = [[] for _ in op.outputs]
        for position in range(count):
            arguments = [elements[position if len(elements) > 1 else 0] for elements in inputs]
            for index, element in enumerate(self.clone_scalar_body(emitter, op.body.block, arguments)):
                results[index].append(element)
        for output, elements in zip(op.outputs, results):
            self.elements[(output, key)] = elements

    # -- reductions ------------------------------------------------------------------------------

    def _reduce(self, emitter: Emitter, op: tile.ReduceOp, key: int) -> list[SSAValue]:
        """In registers over the thread's chunks of the group, then across threads (all_reduce)."""
        source_type = op.source.type
        assert isinstance(source_type, tile.TileType)
        rank = len(self.layout.shape)
        axis = rank - len(source_type.get_shape()) + op.axis.value.data
        thread_bits, repetition_bits = self.layout.dimension_bits(axis)
        members = [other for other in self.repetitions if other & ~repetition_bits == key & ~repetition_bits]
        partials = [self.materialize(emitter, op.source, member) for member in members]
        results = []
        for terms in reduction_terms(partials, axis == rank - 1, self.layout.vector):
            combined = combine_tree(terms, lambda pair: self.clone_scalar_body(emitter, op.body.block, pair)[0])
            results.append(all_reduce(emitter, op, combined, thread_bits) if thread_bits else combined)
        for member in members:
            self.elements[(op.result, member)] = results
        return results

    def _in_bounds(self, emitter: Emitter, op: tile.InBoundsOp, key: int) -> list[SSAValue]:
        result_type = op.result.type
        assert isinstance(result_type, tile.TileType)
        accesses = self.repetitions[key].accesses
        return accesses.in_bounds(emitter, op.bounds_shape(), self.origin(op.indices), result_type.get_shape())

    # -- memory accesses (see chunk_access.py) -----------------------------------------------------

    def _load(self, emitter: Emitter, op: tile.LoadOp, key: int) -> list[SSAValue]:
        tile_type = op.result.type
        assert isinstance(tile_type, tile.TileType)
        accesses = self.repetitions[key].accesses
        return accesses.load(emitter, self.values[op.source], self.origin(op.indices), tile_type.get_shape(), op.padding)

    def _store(self, emitter: Emitter, op: tile.StoreOp, key: int) -> None:
        """Stores the repetition's chunk; a tile broadcast along some dimensions is stored once.

        Its elements are repeated in every chunk that differs only along those dimensions: only
        the chunk whose position there is 0 writes (other repetitions skip the store, other
        threads are guarded out).
        """
        tile_type = op.value.type
        assert isinstance(tile_type, tile.TileType)
        shape = tile_type.get_shape()
        rank = len(self.layout.shape)
        thread_bits = repetition_bits = 0
        for dim, size in enumerate(self.layout.shape):
            stored = shape[dim - (rank - len(shape))] if dim >= rank - len(shape) else 1
            if stored == 1 and size > 1:
                threads, repetitions = self.layout.dimension_bits(dim)
                thread_bits, repetition_bits = thread_bits | threads, repetition_bits | repetitions
        repetition = self.repetitions[key]
        if repetition.index is not None and repetition.index & repetition_bits:
            return
        elements = self.materialize(emitter, op.value, key)

        def store(inner: Emitter) -> list[SSAValue]:
            repetition.accesses.store(inner, elements, self.values[op.dest], self.origin(op.indices), shape)
            return []

        if not thread_bits:
            store(emitter)
            return
        owned = emitter.emit(arith.AndIOp(self.thread, emitter.index(thread_bits)))
        first = emitter.emit(arith.CmpiOp(owned, emitter.index(0), "eq"))
        emit_if(emitter, first, [], store, None)


def _is_tile_op(op: Operation) -> bool:
    return op.dialect_name() == "tile"
