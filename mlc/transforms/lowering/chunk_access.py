"""The memory accesses of one chunk of a tile: masks where needed, vectors where aligned.

Used by `convert-tile-to-loop`. A thread holds, per repetition, one *chunk*: V elements of the
tile, contiguous along its last dimension, at tile position `coordinates` (see `ThreadLayout`).
`ChunkAccesses.load` and `.store` emit the `memref`/`vector` ops that move a chunk of a tile load
or store, given the access's origin both as loop-level values (to emit) and as tile-level values
(to reason about with `index_analysis`).

Per access:

* a dimension needs no bounds check when the range analysis proves the whole tile inside the
  memref along it; otherwise a row outside is skipped (`arith.cmpi ult`, which also rejects
  negative indices), and along the last dimension a chunk is all in or all out when the
  dimension and the origin there are multiples of V, else a full chunk (its first and last
  element inside) takes the fast path and a partial one falls back to one guarded scalar access
  per element;
* the chunk moves with one vector access when the element type is at least a byte wide (LLVM
  packs vectors of i1) and the analysis proves it aligned: origin along the last dimension and
  row length multiples of V. The access records `alignment = V * element bytes` and the kernel
  parameter is told to require it (`require_alignment`); with `unaligned_vectors` (the CPU's row
  kernels) a chunk not proven aligned moves with one vector access too, stating the element's
  alignment;
* a tile broadcast along its last dimension (size 1 there) is one scalar for the whole chunk;
* masked-off loads read the load's padding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, VectorType, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.diagnostics import PassFailure
from mlc.dialects.element_types import byte_width, is_float
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.index_analysis import IndexFacts


ASYNC_COPY_BYTES = 16
"""The size of the async copies chunks become (PTX `cp.async.cg`, which moves 16 bytes)."""


class Emitter:
    """Appends ops at an insertion point; small helpers for index arithmetic."""

    def __init__(self, block: Block):
        self.builder = Builder(InsertPoint.at_end(block))

    def emit(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    def index(self, value: int) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.AddiOp(a, b))

    def below(self, value: SSAValue, bound: int) -> SSAValue:
        # Unsigned comparison also rejects negative indices.
        return self.emit(arith.CmpiOp(value, self.index(bound), "ult"))

    def all_of(self, conditions: Sequence[SSAValue]) -> SSAValue:
        result = conditions[0]
        for condition in conditions[1:]:
            result = self.emit(arith.AndIOp(result, condition))
        return result


def emit_if(
    emitter: Emitter,
    condition: SSAValue,
    result_types: Sequence[Attribute],
    then_body: Callable[[Emitter], list[SSAValue]],
    else_body: Callable[[Emitter], list[SSAValue]] | None,
) -> list[SSAValue]:
    """Emits `scf.if` whose regions are filled by the two callbacks (which return the yields)."""
    then_block = Block()
    then_values = then_body(Emitter(then_block))
    then_block.add_op(scf.YieldOp(*then_values))
    else_region = None
    if else_body is not None:
        else_block = Block()
        else_values = else_body(Emitter(else_block))
        else_block.add_op(scf.YieldOp(*else_values))
        else_region = Region(else_block)
    op = scf.IfOp(condition, result_types, Region(then_block), else_region)
    emitter.builder.insert(op)
    return list(op.results)


def zero_of(element_type: Attribute) -> Attribute:
    if is_float(element_type):
        return FloatAttr(0.0, element_type)  # type: ignore[arg-type]
    return IntegerAttr(0, element_type)  # type: ignore[arg-type]


@dataclass
class AccessPlan:
    """How one tile load or store is carried out for the current chunk."""

    memref_value: SSAValue | None
    """The accessed memref; None for a pure bounds check (`tile.in_bounds`)."""
    bounds: tuple[int, ...]
    coordinates: list[SSAValue]
    count: int
    vectorized: bool
    row_conditions: list[SSAValue]
    last_condition: SSAValue | None
    partial_last: bool
    may_start_below_zero: bool = False
    """Whether a chunk's first element can lie before the memref (a negative origin)."""
    aligned: bool = True
    """Whether the vector access is proven aligned to its size (else it states element alignment)."""

    @property
    def last_bound(self) -> int:
        return self.bounds[-1]


@dataclass
class ChunkAccesses:
    """Emits the loads and stores of one chunk (see the module docstring)."""

    full_shape: tuple[int, ...]
    vector_width: int
    coordinates: list[SSAValue]
    """The chunk's first element in the tile, one loop-level index per dimension."""
    facts: Callable[[SSAValue], IndexFacts]
    """What is known about a tile-level index value."""
    require_alignment: Callable[[SSAValue, int], None]
    """Records that a memref (loop-level value) is accessed with this byte alignment."""
    unaligned_vectors: bool = False
    """Whether chunks not proven aligned may still move with one vector access (the CPU, where an
    unaligned vector load costs little; GPUs need aligned ones)."""
    boolean_vectors: bool = False
    """Whether chunks of i1 move with one vector access too (the CPU's row kernels: the CPU's
    convert-vector-to-llvm writes a vector of i1 as one byte an element, as memrefs of i1 hold
    them)."""

    def load(
        self,
        emitter: Emitter,
        memref_value: SSAValue,
        origin: Sequence[tuple[SSAValue, SSAValue]],
        tile_shape: tuple[int, ...],
        padding: Attribute | None,
    ) -> list[SSAValue]:
        """The chunk's elements of a tile load: V scalars, or one if broadcast along the chunk.

        `origin` pairs each loop-level index of the load's origin with its tile-level value.
        """
        plan = self._plan(emitter, memref_value, memref_value.type.get_shape(), origin, tile_shape)  # type: ignore[attr-defined]
        element_type = memref_value.type.element_type  # type: ignore[attr-defined]
        padding = padding if padding is not None else zero_of(element_type)

        def read_all(inner: Emitter) -> list[SSAValue]:
            if plan.vectorized:
                load = vector.LoadOp(memref_value, plan.coordinates, VectorType(element_type, [plan.count]))
                load.attributes["alignment"] = IntegerAttr(self._vector_bytes(plan, element_type), i64)
                loaded = inner.emit(load)
                return [inner.emit(vector.ExtractOp(loaded, [p], element_type)) for p in range(plan.count)]
            return [
                inner.emit(memref.LoadOp.get(memref_value, self._element_coordinates(inner, plan, p)))
                for p in range(plan.count)
            ]

        def pad(inner: Emitter) -> list[SSAValue]:
            return [inner.emit(arith.ConstantOp(padding))] * plan.count

        condition = self._conditions(emitter, plan)
        types = [element_type] * plan.count
        if plan.partial_last:
            guarded = lambda inner: self._guarded_loads(inner, plan, condition, element_type, padding)  # noqa: E731
            return emit_if(emitter, self._full_chunk(emitter, plan, condition), types, read_all, guarded)
        if condition is None:
            return read_all(emitter)
        return emit_if(emitter, condition, types, read_all, pad)

    def store(
        self,
        emitter: Emitter,
        elements: list[SSAValue],
        memref_value: SSAValue,
        origin: Sequence[tuple[SSAValue, SSAValue]],
        tile_shape: tuple[int, ...],
    ) -> None:
        """Stores the chunk's `elements` (one element stands for all of a broadcast chunk)."""
        plan = self._plan(emitter, memref_value, memref_value.type.get_shape(), origin, tile_shape)  # type: ignore[attr-defined]
        if len(elements) == 1 and plan.count > 1:
            elements = elements * plan.count
        element_type = memref_value.type.element_type  # type: ignore[attr-defined]

        def write_all(inner: Emitter) -> list[SSAValue]:
            if plan.vectorized:
                packed = inner.emit(vector.BroadcastOp(elements[0], VectorType(element_type, [plan.count])))
                for position in range(1, plan.count):
                    packed = inner.emit(vector.InsertOp(elements[position], packed, [position]))
                store = vector.StoreOp(packed, memref_value, plan.coordinates)
                store.attributes["alignment"] = IntegerAttr(self._vector_bytes(plan, element_type), i64)
                inner.builder.insert(store)
                return []
            for position in range(plan.count):
                coordinates = self._element_coordinates(inner, plan, position)
                inner.builder.insert(memref.StoreOp.get(elements[position], memref_value, coordinates))
            return []

        condition = self._conditions(emitter, plan)
        if plan.partial_last:
            guarded = lambda inner: self._guarded_stores(inner, plan, condition, elements)  # noqa: E731
            emit_if(emitter, self._full_chunk(emitter, plan, condition), [], write_all, guarded)
        elif condition is None:
            write_all(emitter)
        else:
            emit_if(emitter, condition, [], write_all, None)

    def async_copy(
        self,
        emitter: Emitter,
        memref_value: SSAValue,
        origin: Sequence[tuple[SSAValue, SSAValue]],
        tile_shape: tuple[int, ...],
        destination: SSAValue,
        destination_indices: Sequence[SSAValue],
    ) -> bool:
        """The chunk as one 16-byte `loop.async_copy` into `destination`, if it can be one.

        It can when the chunk would be one aligned 16-byte vector load that is all in or all out
        of the memref: a chunk outside is zero-filled (the copy's `if`). Returns False, having
        emitted only index arithmetic, otherwise.
        """
        plan = self._plan(emitter, memref_value, memref_value.type.get_shape(), origin, tile_shape)  # type: ignore[attr-defined]
        element_type = memref_value.type.element_type  # type: ignore[attr-defined]
        if not plan.vectorized or plan.partial_last or plan.count * byte_width(element_type) != ASYNC_COPY_BYTES:
            return False
        self._vector_bytes(plan, element_type)
        condition = self._conditions(emitter, plan)
        emitter.builder.insert(loop.AsyncCopyOp(memref_value, plan.coordinates, destination, destination_indices, plan.count, condition))
        return True

    def in_bounds(
        self,
        emitter: Emitter,
        bounds: tuple[int, ...],
        origin: Sequence[tuple[SSAValue, SSAValue]],
        tile_shape: tuple[int, ...],
    ) -> list[SSAValue]:
        """The chunk's elements of `tile.in_bounds`: one i1 when the whole chunk agrees, else V."""
        plan = self._plan(emitter, None, bounds, origin, tile_shape)
        rows = self._conditions(emitter, plan)
        if not plan.partial_last:
            if rows is None:
                return [emitter.emit(arith.ConstantOp(IntegerAttr(1, IntegerType(1))))]
            return [rows]
        return [self._element_guard(emitter, plan, rows, position)[0] for position in range(plan.count)]

    def range(self, emitter: Emitter, start: SSAValue, axis: int, tile_shape: tuple[int, ...]) -> list[SSAValue]:
        """The chunk's elements of `tile.range`: V coordinates along the last dimension, else one."""
        if tile_shape[axis] == 1:
            return [start]
        first = emitter.add(start, self.coordinates[len(self.full_shape) - len(tile_shape) + axis])
        if axis < len(tile_shape) - 1:
            return [first]
        return [first] + [emitter.add(first, emitter.index(position)) for position in range(1, self.vector_width)]

    # -- deciding ------------------------------------------------------------------------------

    def _plan(
        self,
        emitter: Emitter,
        memref_value: SSAValue | None,
        bounds: tuple[int, ...],
        origin: Sequence[tuple[SSAValue, SSAValue]],
        tile_shape: tuple[int, ...],
    ) -> AccessPlan:
        full = self.full_shape
        rank = len(tile_shape)
        broadcast_last = tile_shape[-1] == 1 and full[-1] != 1
        count = 1 if broadcast_last else self.vector_width
        coordinates, row_conditions = [], []
        last_condition: SSAValue | None = None
        partial_last = may_start_below_zero = False
        for dim, (position, tile_value) in enumerate(origin):
            offset_within_tile = tile_shape[dim] != 1
            if offset_within_tile:
                position = emitter.add(position, self.coordinates[len(full) - rank + dim])
            coordinates.append(position)
            facts = self.facts(tile_value)
            extent = tile_shape[dim] if offset_within_tile else 1
            if facts.low >= 0 and facts.high + extent <= bounds[dim]:
                continue
            if dim < rank - 1:
                row_conditions.append(emitter.below(position, bounds[dim]))
            elif count == 1 or (bounds[dim] % count == 0 and facts.divisor % count == 0):
                last_condition = emitter.below(position, bounds[dim])
            else:
                # A chunk can straddle an end of the dimension: check it element by element.
                partial_last = True
                may_start_below_zero = facts.low < 0
        aligned = self.facts(origin[-1][1]).divisor % count == 0 and (rank == 1 or bounds[-1] % count == 0)
        vectorized = (
            memref_value is not None
            and count > 1
            and self._vectorizable_element(memref_value)
            and (aligned or self.unaligned_vectors)
        )
        return AccessPlan(
            memref_value, tuple(bounds), coordinates, count, vectorized, row_conditions, last_condition, partial_last, may_start_below_zero, aligned
        )

    def _vectorizable_element(self, memref_value: SSAValue) -> bool:
        """Sub-byte elements (i1) do not pack into vectors the way the backend lays out memory,
        unless `boolean_vectors` says the backend stores them as bytes."""
        element_type = memref_value.type.element_type  # type: ignore[attr-defined]
        minimum_width = 1 if self.boolean_vectors else 8
        return is_float(element_type) or (isinstance(element_type, IntegerType) and element_type.width.data >= minimum_width)

    def _vector_bytes(self, plan: AccessPlan, element_type: Attribute) -> int:
        width = plan.count * byte_width(element_type) if plan.aligned else byte_width(element_type)
        self.require_alignment(plan.memref_value, width)
        return width

    # -- emitting ------------------------------------------------------------------------------

    @staticmethod
    def _conditions(emitter: Emitter, plan: AccessPlan) -> SSAValue | None:
        conditions = list(plan.row_conditions)
        if plan.last_condition is not None:
            conditions.append(plan.last_condition)
        return emitter.all_of(conditions) if conditions else None

    @staticmethod
    def _element_coordinates(emitter: Emitter, plan: AccessPlan, position: int) -> list[SSAValue]:
        if position == 0:
            return plan.coordinates
        return [*plan.coordinates[:-1], emitter.add(plan.coordinates[-1], emitter.index(position))]

    @staticmethod
    def _full_chunk(emitter: Emitter, plan: AccessPlan, rows: SSAValue | None) -> SSAValue:
        """Whether the whole chunk lies inside the memref (the common case of a partial tile)."""
        last = emitter.add(plan.coordinates[-1], emitter.index(plan.count - 1))
        inside = emitter.below(last, plan.last_bound)
        if plan.may_start_below_zero:
            inside = emitter.emit(arith.AndIOp(emitter.below(plan.coordinates[-1], plan.last_bound), inside))
        return inside if rows is None else emitter.emit(arith.AndIOp(rows, inside))

    def _element_guard(self, emitter: Emitter, plan: AccessPlan, rows: SSAValue | None, position: int) -> tuple[SSAValue, list[SSAValue]]:
        coordinates = self._element_coordinates(emitter, plan, position)
        inside = emitter.below(coordinates[-1], plan.last_bound)
        guard = inside if rows is None else emitter.emit(arith.AndIOp(rows, inside))
        return guard, coordinates

    def _guarded_loads(
        self, emitter: Emitter, plan: AccessPlan, rows: SSAValue | None, element_type: Attribute, padding: Attribute
    ) -> list[SSAValue]:
        """Element by element, each load guarded by its own bounds check."""
        values = []
        for position in range(plan.count):
            guard, coordinates = self._element_guard(emitter, plan, rows, position)
            values += emit_if(
                emitter,
                guard,
                [element_type],
                lambda inner, c=coordinates: [inner.emit(memref.LoadOp.get(plan.memref_value, c))],
                lambda inner: [inner.emit(arith.ConstantOp(padding))],
            )
        return values

    def _guarded_stores(
        self, emitter: Emitter, plan: AccessPlan, rows: SSAValue | None, elements: list[SSAValue]
    ) -> list[SSAValue]:
        """Element by element, each store guarded by its own bounds check."""
        for position in range(plan.count):
            guard, coordinates = self._element_guard(emitter, plan, rows, position)

            def store(inner: Emitter, value: SSAValue = elements[position], at: list[SSAValue] = coordinates) -> list[SSAValue]:
                inner.builder.insert(memref.StoreOp.get(value, plan.memref_value, at))
                return []

            emit_if(emitter, guard, [], store, None)
        return []


def indexed_elements(
    emitter: Emitter,
    value: SSAValue,
    kernel: Operation,
    accesses: ChunkAccesses,
    values: dict[SSAValue, SSAValue],
    elements_of: Callable[[SSAValue], list[SSAValue]],
) -> list[SSAValue]:
    """A chunk's elements of a `tile.range` (`ChunkAccesses.range`) or `tile.gather`
    (`gather_elements`) value; `values` maps uniform tile-level values to loop-level ones,
    `elements_of` gives a tile operand's elements. Other values are reported (at `kernel` when
    they have no op)."""
    op = value.owner
    if isinstance(op, tile.RangeOp):
        shape = op.result.type.get_shape()  # type: ignore[attr-defined]
        return accesses.range(emitter, values[op.start], op.axis.value.data, shape)
    if isinstance(op, tile.GatherOp):
        return gather_elements(emitter, values[op.source], [elements_of(index) for index in op.indices], op.padding)
    raise PassFailure(op if isinstance(op, Operation) else kernel, "unsupported tile value")


def gather_elements(
    emitter: Emitter, source: SSAValue, indices: Sequence[list[SSAValue]], padding: Attribute | None
) -> list[SSAValue]:
    """A chunk's elements of `tile.gather`: one scalar read per element at its own position
    (`indices`: each dimension's elements, V or one), padding outside the memref.

    Branch-free: an index outside its dimension is replaced by 0 before the read (so the read
    stays inside the buffer) and the element is selected away afterwards; no vector access and no
    coalescing (a gather through a transpose reads one side strided).
    """
    element_type = source.type.element_type  # type: ignore[attr-defined]
    bounds = source.type.get_shape()  # type: ignore[attr-defined]
    padding = padding if padding is not None else zero_of(element_type)
    count = max((len(elements) for elements in indices), default=1)
    if 0 in bounds:
        return [emitter.emit(arith.ConstantOp(padding))] * count
    results: list[SSAValue] = []
    zero = emitter.index(0)
    for position in range(count):
        at = [elements[position if len(elements) > 1 else 0] for elements in indices]
        inside = [emitter.below(index, bound) for index, bound in zip(at, bounds)]
        clamped = [emitter.emit(arith.SelectOp(ok, index, zero)) for ok, index in zip(inside, at)]
        value = emitter.emit(memref.LoadOp.get(source, clamped))
        if inside:
            value = emitter.emit(arith.SelectOp(emitter.all_of(inside), value, emitter.emit(arith.ConstantOp(padding))))
        results.append(value)
    return results
