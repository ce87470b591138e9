"""The tile kernel of one fusion group: loads, `tile.map`s, masked `tile.reduce`s and stores.

`convert-graph-to-tile` decides a `KernelPlan` (collapsed domain, tile shape, warps) for every
fusion group (`fusion_groups.py`) and calls `build_kernel`. Each program of the kernel computes one
tile of the collapsed domain; a group with reductions has tiles that span the reduced dimensions
whole, so a program holds complete rows and reduces them in registers.

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

f16 reductions never reach this module: graph-decompose computes them in f32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType, MemRefType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects.element_types import is_bool, is_float
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.elementwise_expansion import ScalarBuilder, expand_elementwise, splat_constant_value
from mlc.transforms.fusion_groups import REDUCTIONS, FusionGroup, is_splat_constant, shape_of


@dataclass(frozen=True)
class DimensionCollapse:
    """Which dimensions of a group's domain merge into each dimension of the kernel's domain.

    Size-1 dimensions are dropped and adjacent dimensions merge when every participant shape (the
    inputs, the reduced shape) is full along both or broadcast along both, so a plain elementwise
    kernel is 1-d whatever its rank, a bias add over `64x1024` stays 2-d, and reduced dimensions
    never merge with kept ones.
    """

    original: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]
    """The original dimensions of each collapsed dimension."""

    @property
    def domain(self) -> tuple[int, ...]:
        if not self.groups:
            return (1,)
        return tuple(math.prod(self.original[d] for d in dims) for dims in self.groups)

    def shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The collapsed shape of a value whose shape broadcasts to the original domain."""
        if not self.groups:
            return (1,)
        aligned = (1,) * (len(self.original) - len(shape)) + tuple(shape)
        return tuple(math.prod(aligned[d] for d in dims) for dims in self.groups)

    def axes(self, original_axes: Sequence[int]) -> tuple[int, ...]:
        """The collapsed dimensions made of the given original dimensions."""
        return tuple(i for i, dims in enumerate(self.groups) if set(dims) <= set(original_axes))


def collapse_dimensions(domain: Sequence[int], participants: Sequence[Sequence[int]]) -> DimensionCollapse:
    rank = len(domain)
    aligned = [(1,) * (rank - len(s)) + tuple(s) for s in participants]
    groups: list[tuple[tuple[bool, ...], list[int]]] = []
    for dim in range(rank):
        if domain[dim] == 1:
            continue
        pattern = tuple(shape[dim] != 1 for shape in aligned)
        if groups and groups[-1][0] == pattern:
            groups[-1][1].append(dim)
        else:
            groups.append((pattern, [dim]))
    return DimensionCollapse(tuple(domain), tuple(tuple(dims) for _, dims in groups))


@dataclass
class KernelPlan:
    """The decisions for one group's kernel, computed before any IR is built."""

    name: str
    group: FusionGroup
    collapse: DimensionCollapse
    tile_shape: tuple[int, ...]
    num_warps: int
    domain: tuple[int, ...] = field(init=False)
    reduced_axes: tuple[int, ...] = field(init=False)
    grid_counts: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.domain = self.collapse.domain
        self.reduced_axes = self.collapse.axes(self.group.reduced_axes) if self.group.reduced_axes else ()
        self.grid_counts = tuple(-(-d // t) for d, t in zip(self.domain, self.tile_shape))

    def needs_mask(self) -> bool:
        """Whether the tile overhangs the domain along a reduced dimension."""
        return any(self.tile_shape[axis] > self.domain[axis] for axis in self.reduced_axes)


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.element_type


def _constant_index(builder: Builder, value: int) -> SSAValue:
    return builder.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result


def _identity(op: Operation, element_type: Attribute) -> Attribute:
    """The value that does not change the reduction `op` (what masked-off elements hold)."""
    if isinstance(op, graph.ReduceSumOp):
        return FloatAttr(0.0, element_type) if is_float(element_type) else IntegerAttr(0, element_type)  # type: ignore[arg-type]
    lowest = isinstance(op, graph.ReduceMaxOp)
    if is_float(element_type):
        return FloatAttr(-math.inf if lowest else math.inf, element_type)  # type: ignore[arg-type]
    assert isinstance(element_type, IntegerType)
    if is_bool(element_type):
        return IntegerAttr(0 if lowest else 1, element_type)
    bits = element_type.width.data
    return IntegerAttr(-(1 << (bits - 1)) if lowest else (1 << (bits - 1)) - 1, element_type)


def _combiner(op: Operation, element_type: Attribute) -> Region:
    """`tile.reduce`'s combining region for the reduction `op`."""
    block = Block(arg_types=[element_type, element_type])
    lhs, rhs = block.args
    floating = is_float(element_type)
    if isinstance(op, graph.ReduceSumOp):
        combined: Operation = arith.AddfOp(lhs, rhs) if floating else arith.AddiOp(lhs, rhs)
    elif isinstance(op, graph.ReduceMaxOp):
        unsigned = is_bool(element_type)
        combined = arith.MaximumfOp(lhs, rhs) if floating else (arith.MaxUIOp if unsigned else arith.MaxSIOp)(lhs, rhs)
    else:
        unsigned = is_bool(element_type)
        combined = arith.MinimumfOp(lhs, rhs) if floating else (arith.MinUIOp if unsigned else arith.MinSIOp)(lhs, rhs)
    block.add_ops([combined, tile.YieldOp([combined.results[0]])])
    return Region(block)


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
        self.after_reduction: set[SSAValue] = set()
        for op in group.ops:
            if isinstance(op, REDUCTIONS) or any(v in self.after_reduction for v in op.operands):
                self.after_reduction.update(op.results)
        self.tiles: dict[SSAValue, SSAValue] = {}
        self.loaded: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        self.broadcasts: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        self.masks: dict[tuple[int, ...], SSAValue] = {}

    # -- shapes ---------------------------------------------------------------------------------

    def tile_shape_of(self, shape: Sequence[int]) -> tuple[int, ...]:
        collapsed = self.plan.collapse.shape(shape)
        return tuple(t if s != 1 else 1 for t, s in zip(self.plan.tile_shape, collapsed))

    def _indices(self, shape: Sequence[int]) -> list[SSAValue]:
        """The tile origin for a value of collapsed `shape` (index 0 along its size-1 dims)."""
        collapsed = self.plan.collapse.shape(shape)
        return [o if s != 1 else self.zero for o, s in zip(self.origin, collapsed)]

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
        self.builder = Builder(InsertPoint.at_end(block))
        self.origin = self._tile_origin()
        self.zero = _constant_index(self.builder, 0)
        for key in group.inputs:
            self._load(key)
        for op in group.ops:
            if isinstance(op, REDUCTIONS):
                self.value(op.results[0])
        self._compute_outputs()
        for output, parameter in zip(group.outputs, block.args[len(group.inputs) :]):
            self.builder.insert(tile.StoreOp(self.value(output), parameter, self._indices(shape_of(output))))
        self.builder.insert(tile.ReturnOp())
        return kernel

    def _tile_origin(self) -> list[SSAValue]:
        """Decomposes the program id into the origin of this program's tile, innermost fastest."""
        plan, builder = self.plan, self.builder
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

    def _compute_outputs(self) -> None:
        """One map per tile shape for the outputs not yet computed, smallest shapes first."""
        pending: dict[tuple[int, ...], list[_MapTarget]] = {}
        for output in self.plan.group.outputs:
            if output not in self.tiles and self._input_key(output) is None:
                pending.setdefault(self.tile_shape_of(shape_of(output)), []).append(_MapTarget(output))
        for shape in sorted(pending, key=lambda s: (math.prod(s), s)):
            self._map(pending[shape], shape)

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
        if key not in self.loaded:
            value, seen = key
            tile_type = tile.TileType(self.tile_shape_of(seen), _element_type(value))
            load = tile.LoadOp(self.parameters[key], self._indices(seen), tile_type)
            self.loaded[key] = self.builder.insert(load).result
        return self.loaded[key]

    def value(self, value: SSAValue) -> SSAValue:
        """`value` as a tile of its tile shape, computing it (and what it needs) first."""
        if value in self.tiles:
            return self.tiles[value]
        key = self._input_key(value)
        if key is not None:
            return self._load(key)
        owner = value.owner
        if isinstance(owner, REDUCTIONS):
            self.tiles[value] = self._reduce(owner)
        else:
            self._map([_MapTarget(value)], self.tile_shape_of(shape_of(value)))
        return self.tiles[value]

    def _broadcast(self, tile_value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        tile_type = tile_value.type
        assert isinstance(tile_type, tile.TileType)
        if tile_type.get_shape() == shape:
            return tile_value
        if (tile_value, shape) not in self.broadcasts:
            result_type = tile.TileType(shape, tile_type.element_type)
            self.broadcasts[(tile_value, shape)] = self.builder.insert(tile.BroadcastOp(tile_value, result_type)).result
        return self.broadcasts[(tile_value, shape)]

    def _reduce(self, op: Operation) -> SSAValue:
        assert isinstance(op, graph.ReductionOp)
        operand = op.x
        element_type = _element_type(operand)
        shape = self.tile_shape_of(shape_of(operand))
        if self.plan.needs_mask():
            source = self._map([_MapTarget(operand, _identity(op, element_type))], shape, served=op)[0]
        else:
            source = self.value(operand)
        for axis in self.plan.reduced_axes:
            source = self.builder.insert(tile.ReduceOp(source, axis, _combiner(op, element_type))).result
        source.name_hint = op.results[0].name_hint
        return source

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
        map_op = self.builder.insert(tile.MapOp(frontier_tiles, result_types, Region(body)))
        results = list(map_op.outputs)
        for target, result in zip(targets, results):
            if target.identity is None:
                self._record(target.value, result)
        for value, result in zip(extras, results[len(targets) :]):
            self._record(value, result)
        return results[: len(targets)]

    def _record(self, value: SSAValue, tile_value: SSAValue) -> None:
        tile_value.name_hint = value.name_hint
        self.tiles[value] = tile_value

    def _closure(self, targets: list[SSAValue], shape: tuple[int, ...]) -> tuple[set[Operation], list[SSAValue]]:
        """The ops a map of `shape` inlines to compute `targets`, and the tiles it reads."""
        inlined: set[Operation] = set()
        frontier: list[SSAValue] = []
        worklist = list(targets)
        while worklist:
            value = worklist.pop()
            owner = value.owner
            if value in frontier or (owner in inlined):
                continue
            if self._is_frontier(value, shape):
                frontier.append(value)
            elif not is_splat_constant(value):
                assert isinstance(owner, Operation)
                inlined.add(owner)
                worklist += list(owner.operands)
        frontier.sort(key=self._frontier_order)
        return inlined, frontier

    def _is_frontier(self, value: SSAValue, shape: tuple[int, ...]) -> bool:
        if value in self.tiles or self._input_key(value) is not None:
            return True
        if isinstance(value.owner, REDUCTIONS):
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
        """Values the map computes at its own shape that ops outside it use (yielded, not recomputed)."""
        reused = []
        for op in sorted(inlined, key=self.position.__getitem__):
            value = op.results[0]
            if value in exclude or self.tile_shape_of(shape_of(value)) != shape:
                continue
            users = {use.operation for use in value.uses} & self.members
            if users - inlined - {served}:
                reused.append(value)
        return reused

    def _in_bounds(self, shape: tuple[int, ...]) -> SSAValue:
        if shape not in self.masks:
            indices = [o if t != 1 else self.zero for o, t in zip(self.origin, shape)]
            bounds = [d if t != 1 else 1 for d, t in zip(self.plan.domain, shape)]
            self.masks[shape] = self.builder.insert(tile.InBoundsOp(indices, bounds, shape)).result
        return self.masks[shape]


def build_kernel(plan: KernelPlan) -> tile.KernelOp:
    return GroupKernelBuilder(plan).build()
