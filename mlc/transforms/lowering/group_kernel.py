"""The tile kernel of one fusion group: loads, `tile.map`s, masked `tile.reduce`s and stores.

`convert-graph-to-tile` decides a `KernelPlan` (collapsed domain, tile shape, warps) for every
fusion group (`fusion_groups.py`) and calls `build_kernel`. Each program of the kernel computes one
tile of the collapsed domain; a group with reductions has tiles that span the reduced dimensions
whole when they fit (`MAX_REDUCTION_TILE` elements), so a program holds complete rows and reduces
them in registers. Longer rows are covered chunk by chunk (*looped rows*, below).

Every graph value of the group has a *tile shape*: the plan's tile shape with size 1 where the
value's collapsed shape is 1 (a bias along rows, a reduced value). Values are materialised as
tiles on demand, in stages:

1. Each reduction, in program order, needs its operand as a tile. One `tile.map` at the operand's
   tile shape computes it from tiles that exist (loaded inputs, earlier reductions) by expanding
   the elementwise ops in between (`elementwise_expansion.py`). When the reduced dimensions of the
   domain are not multiples of the tile, the map also selects the reduction's identity (0, -inf,
   +inf, the integer extremes) outside the domain, using `tile.in_bounds`: padding alone does not
   survive arbitrary elementwise ops (exp(0) is 1). Then one `tile.reduce` per reduced dimension.
2. The group's outputs: one `tile.map` per tile shape, then one `tile.store` per output.

A map inlines its producers, except values computed after a reduction whose tile shape differs
from the map's: those get their own, smaller map first and are broadcast (so `rsqrt(var + eps)`
is computed once per row, not once per element). A map also yields every value it computed that a
later stage uses, so nothing is computed twice (the exponentials of a softmax are reused by its
division). A group without reductions is a single map over loaded, broadcast inputs.

Looped rows. When the plan's tile spans only a chunk of some reduced dimensions
(`KernelPlan.loop_axes`: rows of more than 65536 elements, see `choose_looped_reduction_tile`),
the grid has one program per kept tile and each stage runs in nested `scf.for`s over the chunks,
outermost looped dimension outermost, the chunk's origin being the induction variable:

    %partials = scf.for %chunk = 0 to L step C iter_args(%acc = splat -inf) {    each reduction
      %x = tile.load %input[%row, %chunk]        (-inf past L: tile.in_bounds, arith.select)
      scf.yield tile.map(maximumf) %acc, %x
    }
    %max = tile.reduce %partials
    scf.for %chunk = 0 to L step C {                                              the outputs
      tile.load, tile.map, tile.store at [%row, %chunk]
    }

A reduction carries an *accumulator tile* of the chunk's shape, starting at the identity and
combined lane by lane with each chunk's masked operand by the reduction's own combiner; the
`tile.reduce`s run once, on it, after the loops. The outputs of the domain's shape are computed
and stored by one last loop. Inputs are therefore read once per stage (a softmax reads x three
times and writes y once) rather than once: the price of rows that do not fit. Values that do not
change from chunk to chunk (reduced values, per-row inputs, maps of them) are built once, before
the loops (`_before_loops`); tiles made inside a loop body belong to it (`_Scope`). Known
weakness: a program per kept row leaves most of a GPU idle when there are few rows (a 2x100000
softmax is two programs); splitting rows over several programs needs a second kernel to combine
their partial results and is not done.

f16 reductions never reach this module: graph-decompose computes them in f32.

The plan (collapse, tile shape, warps) is `group_plan.py`'s; the reductions' identities and
combiners are `group_reductions.py`'s.
"""

from __future__ import annotations

import math
from collections import ChainMap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.elementwise_expansion import ScalarBuilder, expand_elementwise, splat_constant_value
from mlc.transforms.analysis.fusion_groups import REDUCTIONS, is_splat_constant, shape_of
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS
from mlc.transforms.lowering.group_plan import KernelPlan
from mlc.transforms.lowering.group_reductions import reduction_combiner, reduction_identity
from mlc.transforms.lowering.layout_gather import LayoutTiles


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.element_type


def _constant_index(builder: Builder, value: int) -> SSAValue:
    return builder.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result


@dataclass
class _Scope:
    """Where tiles are being built, and the tiles that exist there.

    The kernel's top level, or the body of the chunk loops (`KernelPlan.loop_axes`): tiles made
    there are one chunk's, so the caches of a loop body are children of the top level's that are
    dropped when the loops end.
    """

    builder: Builder
    origin: list[SSAValue]
    """The origin of the program's tile, or of the current chunk inside the loops."""
    loops: scf.ForOp | None = None
    """The outermost chunk loop the builder is in (None at the top level)."""
    tiles: ChainMap[SSAValue, SSAValue] = field(default_factory=ChainMap)
    loaded: ChainMap[tuple[SSAValue, tuple[int, ...]], SSAValue] = field(default_factory=ChainMap)
    broadcasts: ChainMap[tuple[SSAValue, tuple[int, ...]], SSAValue] = field(default_factory=ChainMap)
    masks: ChainMap[tuple[int, ...], SSAValue] = field(default_factory=ChainMap)

    def inside(self, body: Block, origin: list[SSAValue], loop: scf.ForOp) -> _Scope:
        """The scope of a chunk loop's body (`loop`, unless it is nested in another one)."""
        caches = (self.tiles, self.loaded, self.broadcasts, self.masks)
        return _Scope(Builder(InsertPoint.at_end(body)), origin, self.loops or loop, *(c.new_child() for c in caches))


@dataclass
class _MapTarget:
    value: SSAValue
    identity: Attribute | None = None
    """When set, the map yields the value masked to this identity outside the domain."""


class GroupKernelBuilder:
    """Builds the `tile.kernel` of one plan (see the module docstring)."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        group = plan.group
        self.members = set(group.ops)
        self.position = {op: index for index, op in enumerate(group.ops)}
        self.input_index = {key: index for index, key in enumerate(group.inputs)}
        self.block_inputs = {
            key
            for op in group.ops
            if not isinstance(op, (*LAYOUT_OPS, graph.ReshapeOp))
            for operand in op.operands
            if (key := self._input_key(operand)) is not None
        }
        """The inputs some op reads as blocks of the domain (the others are read through index maps)."""
        self.after_reduction: set[SSAValue] = set()
        for op in group.ops:
            if isinstance(op, REDUCTIONS) or any(v in self.after_reduction for v in op.operands):
                self.after_reduction.update(op.results)

    # -- shapes ---------------------------------------------------------------------------------

    def tile_shape_of(self, shape: Sequence[int]) -> tuple[int, ...]:
        collapsed = self.plan.collapse.shape(shape)
        return tuple(t if s != 1 else 1 for t, s in zip(self.plan.tile_shape, collapsed))

    def is_looped(self, shape: Sequence[int]) -> bool:
        """Whether tiles of `shape` change from chunk to chunk (they are made inside the loops)."""
        return any(shape[axis] != 1 for axis in self.plan.loop_axes)

    def _indices(self, shape: Sequence[int]) -> list[SSAValue]:
        """The tile origin for a value of collapsed `shape` (index 0 along its size-1 dims)."""
        collapsed = self.plan.collapse.shape(shape)
        return [o if s != 1 else self.zero for o, s in zip(self.scope.origin, collapsed)]

    # -- the kernel -----------------------------------------------------------------------------

    def build(self) -> tile.KernelOp:
        plan, group = self.plan, self.plan.group
        collapse = plan.collapse
        parameter_types: list[Attribute] = [
            MemRefType(_element_type(value), collapse.shape(seen)) for value, seen in group.inputs
        ]
        parameter_types += [MemRefType(_element_type(v), collapse.shape(shape_of(v))) for v in group.outputs]
        grid = [math.prod(plan.grid_counts)]
        kernel = tile.KernelOp(plan.name, parameter_types, grid, num_warps=plan.num_warps)
        block = kernel.body.block
        for index, (parameter, (value, _)) in enumerate(zip(block.args, group.inputs)):
            parameter.name_hint = value.name_hint or f"input{index}"
        for index, parameter in enumerate(block.args[len(group.inputs) :]):
            parameter.name_hint = f"output{index}"
        self.parameters = {key: parameter for key, parameter in zip(group.inputs, block.args)}
        builder = Builder(InsertPoint.at_end(block))
        self.top = self.scope = _Scope(builder, self._tile_origin(builder))
        self.zero = _constant_index(builder, 0)
        for key in group.inputs:
            # Inputs read only through layout ops are gathered; looped ones are loaded chunk by chunk.
            if key in self.block_inputs and not self.is_looped(self.tile_shape_of(key[1])):
                self._load(key)
        for op in group.ops:
            if isinstance(op, REDUCTIONS):
                self.value(op.results[0])
        outputs = list(zip(group.outputs, block.args[len(group.inputs) :]))
        looped = [(output, parameter) for output, parameter in outputs if self.is_looped(self.tile_shape_of(shape_of(output)))]
        self._store_outputs([pair for pair in outputs if pair not in looped])
        if looped:
            self._over_chunks([], lambda _: self._store_outputs(looped))
        builder.insert(tile.ReturnOp())
        return kernel

    def _tile_origin(self, builder: Builder) -> list[SSAValue]:
        """Decomposes the program id into the origin of this program's tile, innermost fastest."""
        plan = self.plan
        remaining = builder.insert(tile.ProgramIdOp(0)).result
        origin: list[SSAValue] = [remaining] * len(plan.domain)
        for dim in reversed(range(len(plan.domain))):
            count = plan.grid_counts[dim]
            if count == 1:
                origin[dim] = _constant_index(builder, 0)
                continue
            if dim == 0:
                coordinate = remaining
            else:
                count_value = _constant_index(builder, count)
                coordinate = builder.insert(arith.RemUIOp(remaining, count_value)).result
                remaining = builder.insert(arith.DivUIOp(remaining, count_value)).result
            if plan.tile_shape[dim] == 1:
                origin[dim] = coordinate
            else:
                origin[dim] = builder.insert(arith.MuliOp(coordinate, _constant_index(builder, plan.tile_shape[dim]))).result
        return origin

    def _store_outputs(self, outputs: list[tuple[SSAValue, SSAValue]]) -> list[SSAValue]:
        """Computes the outputs not yet computed, one map per tile shape (smallest first); stores them.

        Returns no value to carry: it is also the body of the output stage's chunk loops.
        """
        pending: dict[tuple[int, ...], list[_MapTarget]] = {}
        for output, _ in outputs:
            if isinstance(output.owner, LAYOUT_OPS):
                self.value(output)
            elif output not in self.scope.tiles and self._input_key(output) is None:
                pending.setdefault(self.tile_shape_of(shape_of(output)), []).append(_MapTarget(output))
        for shape in sorted(pending, key=lambda s: (math.prod(s), s)):
            self._map(pending[shape], shape)
        for output, parameter in outputs:
            self.scope.builder.insert(tile.StoreOp(self.value(output), parameter, self._indices(shape_of(output))))
        return []

    # -- chunk loops ------------------------------------------------------------------------------

    def _over_chunks(self, initial: list[SSAValue], step: Callable[[list[SSAValue]], list[SSAValue]]) -> list[SSAValue]:
        """`step` for every chunk of the looped axes, in nested `scf.for`s carrying `initial`.

        `step` gets the carried values and returns their next ones; the loops' results are returned.
        """
        return self._chunk_loop(0, initial, step)

    def _chunk_loop(self, depth: int, carried: list[SSAValue], step: Callable[[list[SSAValue]], list[SSAValue]]) -> list[SSAValue]:
        plan, outer = self.plan, self.scope
        if depth == len(plan.loop_axes):
            return step(carried)
        axis = plan.loop_axes[depth]
        bounds = [self.zero, _constant_index(outer.builder, plan.domain[axis]), _constant_index(outer.builder, plan.tile_shape[axis])]
        body = Block(arg_types=[IndexType(), *(value.type for value in carried)])
        body.args[0].name_hint = "chunk"
        for argument, value in zip(body.args[1:], carried):
            argument.name_hint = value.name_hint
        loop = outer.builder.insert(scf.ForOp(*bounds, carried, Region(body)))
        origin = list(outer.origin)
        origin[axis] = body.args[0]
        self.scope = outer.inside(body, origin, loop)
        self.scope.builder.insert(scf.YieldOp(*self._chunk_loop(depth + 1, list(body.args[1:]), step)))
        self.scope = outer
        for result, value in zip(loop.results, carried):
            result.name_hint = value.name_hint
        return list(loop.results)

    def _before_loops(self, compute: Callable[[], SSAValue]) -> SSAValue:
        """Computes a value that is the same for every chunk once, before the chunk loops."""
        inner = self.scope
        assert inner.loops is not None
        self.scope = replace(self.top, builder=Builder(InsertPoint.before(inner.loops)))
        try:
            return compute()
        finally:
            self.scope = inner

    # -- values as tiles --------------------------------------------------------------------------

    def _input_key(self, value: SSAValue) -> tuple[SSAValue, tuple[int, ...]] | None:
        """The group input that holds `value` (a reshape reads its operand with its own shape)."""
        owner = value.owner
        if owner in self.members:
            return (owner.x, shape_of(value)) if isinstance(owner, graph.ReshapeOp) else None
        if is_splat_constant(value):
            return None
        return (value, shape_of(value))

    def _load(self, key: tuple[SSAValue, tuple[int, ...]]) -> SSAValue:
        if key not in self.scope.loaded:
            value, seen = key
            tile_type = tile.TileType(self.tile_shape_of(seen), _element_type(value))
            load = tile.LoadOp(self.parameters[key], self._indices(seen), tile_type)
            self.scope.loaded[key] = self.scope.builder.insert(load).result
        return self.scope.loaded[key]

    def value(self, value: SSAValue) -> SSAValue:
        """`value` as a tile of its tile shape, computing it (and what it needs) first."""
        if value in self.scope.tiles:
            return self.scope.tiles[value]
        if self.scope.loops is not None and not self.is_looped(self.tile_shape_of(shape_of(value))):
            return self._before_loops(lambda: self.value(value))
        key = self._input_key(value)
        if key is not None:
            return self._load(key)
        owner = value.owner
        if isinstance(owner, REDUCTIONS):
            self.scope.tiles[value] = self._reduce(owner)
        elif isinstance(owner, LAYOUT_OPS):
            self._record(value, self._layout(value))
        else:
            self._map([_MapTarget(value)], self.tile_shape_of(shape_of(value)))
        return self.scope.tiles[value]

    def _layout(self, value: SSAValue) -> SSAValue:
        """A layout op's value, gathered from the inputs through its index maps (`layout_gather.py`)."""

        def is_leaf(leaf: SSAValue) -> bool:
            return is_splat_constant(leaf) or self._input_key(leaf) is not None

        def source_of(leaf: SSAValue) -> SSAValue | None:
            key = self._input_key(leaf)
            return None if key is None else self.parameters[key]

        shape = shape_of(value)
        layout = LayoutTiles(self.scope.builder, is_leaf, source_of)
        return layout.build(value, self.tile_shape_of(shape), self._indices(shape))

    def _broadcast(self, tile_value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        tile_type = tile_value.type
        assert isinstance(tile_type, tile.TileType)
        if tile_type.get_shape() == shape:
            return tile_value
        if (tile_value, shape) not in self.scope.broadcasts:
            result_type = tile.TileType(shape, tile_type.element_type)
            self.scope.broadcasts[(tile_value, shape)] = self.scope.builder.insert(tile.BroadcastOp(tile_value, result_type)).result
        return self.scope.broadcasts[(tile_value, shape)]

    def _reduce(self, op: Operation) -> SSAValue:
        assert isinstance(op, graph.ReductionOp)
        element_type = _element_type(op.x)
        shape = self.tile_shape_of(shape_of(op.x))
        source = self._accumulate_chunks(op, shape) if self.plan.loop_axes else self._reduction_operand(op, shape)
        for axis in self.plan.reduced_axes:
            source = self.scope.builder.insert(tile.ReduceOp(source, axis, reduction_combiner(op, element_type))).result
        source.name_hint = op.results[0].name_hint
        return source

    def _reduction_operand(self, op: graph.ReductionOp, shape: tuple[int, ...]) -> SSAValue:
        """The reduction's operand as a tile, with the identity outside the domain where needed."""
        if self.plan.needs_mask():
            return self._map([_MapTarget(op.x, reduction_identity(op, _element_type(op.x)))], shape, served=op)[0]
        return self.value(op.x)

    def _accumulate_chunks(self, op: graph.ReductionOp, shape: tuple[int, ...]) -> SSAValue:
        """One tile holding the combination, lane by lane, of the operand's chunks (looped rows).

        It starts as the identity and is combined with each chunk by the reduction's combiner;
        lanes outside the domain take the identity, so reducing this tile reduces the rows.
        """
        element_type = _element_type(op.x)
        tile_type = tile.TileType(shape, element_type)
        builder = self.scope.builder
        identity = builder.insert(arith.ConstantOp(reduction_identity(op, element_type))).result
        initial = builder.insert(tile.SplatOp(identity, tile_type)).result
        initial.name_hint = f"{op.results[0].name_hint or 'reduction'}_partials"

        def combine(carried: list[SSAValue]) -> list[SSAValue]:
            chunk = self._reduction_operand(op, shape)
            combined = tile.MapOp([carried[0], chunk], [tile_type], reduction_combiner(op, element_type))
            return [self.scope.builder.insert(combined).outputs[0]]

        return self._over_chunks([initial], combine)[0]

    # -- maps -----------------------------------------------------------------------------------

    def _map(self, targets: list[_MapTarget], shape: tuple[int, ...], served: Operation | None = None) -> list[SSAValue]:
        """One `tile.map` of `shape` computing the targets; returns their tiles (masked ones masked).

        `served` is the reduction a masked target is computed for: its use of the unmasked value
        does not make the map yield that value too.
        """
        inlined, frontier = self._closure([t.value for t in targets], shape)
        frontier_tiles = [self._broadcast(self.value(v), shape) for v in frontier]
        masked = any(t.identity is not None for t in targets)
        if masked:
            frontier_tiles.append(self._in_bounds(shape))
        body = Block(arg_types=[t.type.element_type for t in frontier_tiles])  # type: ignore[attr-defined]
        scalar = ScalarBuilder(Builder(InsertPoint.at_end(body)))
        element: dict[SSAValue, SSAValue] = dict(zip(frontier, body.args))

        def element_of(value: SSAValue) -> SSAValue:
            if value in element:
                return element[value]
            constant = value.owner
            assert isinstance(constant, graph.ConstantOp)
            return scalar.constant(splat_constant_value(constant), _element_type(value))  # type: ignore[arg-type]

        for op in sorted(inlined, key=self.position.__getitem__):
            element[op.results[0]] = expand_elementwise(op, [element_of(v) for v in op.operands], scalar)

        yielded: list[SSAValue] = []
        for target in targets:
            if target.identity is None:
                yielded.append(element_of(target.value))
            else:
                identity = scalar.emit(arith.ConstantOp(target.identity))
                yielded.append(scalar.emit(arith.SelectOp(body.args[-1], element_of(target.value), identity)))
        extras = self._reused_later(inlined, shape, served, exclude={t.value for t in targets if t.identity is None})
        yielded += [element[v] for v in extras]
        scalar.builder.insert(tile.YieldOp(yielded))
        result_types = [tile.TileType(shape, v.type) for v in yielded]
        map_op = self.scope.builder.insert(tile.MapOp(frontier_tiles, result_types, Region(body)))
        results = list(map_op.outputs)
        for target, result in zip(targets, results):
            if target.identity is None:
                self._record(target.value, result)
        for value, result in zip(extras, results[len(targets) :]):
            self._record(value, result)
        return results[: len(targets)]

    def _record(self, value: SSAValue, tile_value: SSAValue) -> None:
        tile_value.name_hint = value.name_hint
        self.scope.tiles[value] = tile_value

    def _closure(self, targets: list[SSAValue], shape: tuple[int, ...]) -> tuple[set[Operation], list[SSAValue]]:
        """The ops a map of `shape` inlines to compute `targets`, and the tiles it reads."""
        inlined: set[Operation] = set()
        frontier: list[SSAValue] = []
        worklist = list(targets)
        while worklist:
            value = worklist.pop()
            owner = value.owner
            if value in frontier or (owner in inlined) or is_splat_constant(value):
                continue  # a splat constant is a scalar in the map's body, whatever its shape
            if self._is_frontier(value, shape):
                frontier.append(value)
            else:
                assert isinstance(owner, Operation)
                inlined.add(owner)
                worklist += list(owner.operands)
        frontier.sort(key=self._frontier_order)
        return inlined, frontier

    def _is_frontier(self, value: SSAValue, shape: tuple[int, ...]) -> bool:
        if value in self.scope.tiles or self._input_key(value) is not None:
            return True
        if isinstance(value.owner, (*REDUCTIONS, *LAYOUT_OPS)):
            return True
        return value in self.after_reduction and self.tile_shape_of(shape_of(value)) != shape

    def _frontier_order(self, value: SSAValue) -> tuple[int, int]:
        key = self._input_key(value)
        if key is not None:
            return (0, self.input_index[key])
        return (1, self.position[value.owner])  # type: ignore[index]

    def _reused_later(
        self, inlined: set[Operation], shape: tuple[int, ...], served: Operation | None, exclude: set[SSAValue]
    ) -> list[SSAValue]:
        """Values the map computes at its own shape that ops outside it, not computed yet, use.

        The map yields them, so that they are not computed again (a value used only by a reduction
        that is already done, as in a softmax's last chunk loop, is not yielded).
        """
        reused = []
        for op in sorted(inlined, key=self.position.__getitem__):
            value = op.results[0]
            if value in exclude or self.tile_shape_of(shape_of(value)) != shape:
                continue
            users = {use.operation for use in value.uses} & self.members
            pending = {user for user in users - inlined - {served} if user.results[0] not in self.scope.tiles}
            if pending:
                reused.append(value)
        return reused

    def _in_bounds(self, shape: tuple[int, ...]) -> SSAValue:
        if shape not in self.scope.masks:
            indices = [o if t != 1 else self.zero for o, t in zip(self.scope.origin, shape)]
            bounds = [d if t != 1 else 1 for d, t in zip(self.plan.domain, shape)]
            self.scope.masks[shape] = self.scope.builder.insert(tile.InBoundsOp(indices, bounds, shape)).result
        return self.scope.masks[shape]


def build_kernel(plan: KernelPlan) -> tile.KernelOp:
    return GroupKernelBuilder(plan).build()
