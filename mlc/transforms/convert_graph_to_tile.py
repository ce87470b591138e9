"""convert-graph-to-tile: one tile kernel per fusion group, and a host function that launches them.

Every `func.func` over tensors becomes a host function over memrefs (same name, same argument
and result shapes) that allocates the outputs of each fusion group and launches one
`tile.kernel` per group (see `elementwise_fusion.py` for the grouping). Non-splat constants
become `memref.global`s; splat constants become scalar constants inside the kernels.

Kernel construction, for a group with domain D:

1. *Collapse dimensions.* Size-1 dimensions are dropped and adjacent dimensions merged when
   every input is either full along both or broadcast along both, so a plain elementwise kernel
   is 1-d whatever its rank and a bias add over `64x1024` stays 2-d. Parameters are memrefs of
   the collapsed shapes; the host passes its buffers unchanged (same element count).
2. *Choose the tile.* Powers of two, filled from the innermost dimension outward until the tile
   holds `elements-per-program` elements (never more than the dimension needs). The grid is 1-d;
   each program decomposes its id into tile coordinates, innermost fastest, so neighbouring
   programs touch neighbouring memory.
3. *Body.* Load every input as a tile (a size-1 tile dimension where it broadcasts, then
   `tile.broadcast`), compute all outputs in one `tile.map` whose scalar body is the group's ops
   expanded by `elementwise_expansion.py`, store each output. Tile loads and stores mask at the
   memref bounds, so domains that are not multiples of the tile need nothing more.

Options: `elements-per-program` (default 2048) and `num-warps` (default 4) are recorded in the IR
(tile shapes, `num_warps`) for the next levels. Preconditions: static shapes; graph ops of the
elementwise subset (others are reported with a diagnostic naming the op). Limits: bf16 is not
lowered yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    BFloat16Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from mlc.diagnostics import PassFailure
from mlc.dialects.element_types import byte_width
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.elementwise_expansion import ScalarBuilder, expand_elementwise, splat_constant_value
from mlc.transforms.elementwise_fusion import (
    FUSIBLE_OPS,
    FusionGroup,
    is_splat_constant,
    partition,
    returned_view,
    shape_of,
)

HOST_BUFFER_ALIGNMENT = 256


def collapse_dimensions(
    domain: Sequence[int], input_shapes: Sequence[Sequence[int]]
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """The collapsed domain and the collapsed shape of each input (see the module docstring)."""
    rank = len(domain)
    aligned = [(1,) * (rank - len(s)) + tuple(s) for s in input_shapes]
    groups: list[tuple[tuple[bool, ...], list[int]]] = []
    for dim in range(rank):
        if domain[dim] == 1:
            continue
        pattern = tuple(shape[dim] != 1 for shape in aligned)
        if groups and groups[-1][0] == pattern:
            groups[-1][1].append(dim)
        else:
            groups.append((pattern, [dim]))
    if not groups:
        return (1,), [(1,) for _ in input_shapes]
    collapsed_domain = tuple(_product(domain[d] for d in dims) for _, dims in groups)
    collapsed_inputs = [
        tuple(size if pattern[index] else 1 for (pattern, _), size in zip(groups, collapsed_domain))
        for index in range(len(input_shapes))
    ]
    return collapsed_domain, collapsed_inputs


def _product(values: Sequence[int] | object) -> int:
    result = 1
    for value in values:  # type: ignore[attr-defined]
        result *= value
    return result


def _next_power_of_two(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


def choose_tile_shape(domain: Sequence[int], elements_per_program: int) -> tuple[int, ...]:
    """Powers of two filled innermost-first up to `elements_per_program` elements."""
    budget = max(1, elements_per_program)
    tile_shape = []
    for size in reversed(domain):
        dim = min(_next_power_of_two(size), _next_power_of_two(budget))
        tile_shape.append(dim)
        budget = max(1, budget // dim)
    return tuple(reversed(tile_shape))


@dataclass
class KernelPlan:
    """The decisions for one group's kernel, computed before any IR is built."""

    name: str
    group: FusionGroup
    domain: tuple[int, ...]
    input_shapes: list[tuple[int, ...]]
    tile_shape: tuple[int, ...]
    grid_counts: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.grid_counts = tuple(-(-d // t) for d, t in zip(self.domain, self.tile_shape))


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.element_type


def _constant_index(builder: Builder, value: int) -> SSAValue:
    return builder.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result


def _tile_origin(builder: Builder, plan: KernelPlan) -> list[SSAValue]:
    """Decomposes the program id into the origin of this program's tile, innermost fastest."""
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
            origin[dim] = builder.insert(
                arith.MuliOp(coordinate, _constant_index(builder, plan.tile_shape[dim]))
            ).result
    return origin


def build_kernel(plan: KernelPlan, num_warps: int) -> tile.KernelOp:
    group = plan.group
    parameter_types: list[Attribute] = [
        MemRefType(_element_type(value), shape) for (value, _), shape in zip(group.inputs, plan.input_shapes)
    ]
    parameter_types += [MemRefType(_element_type(value), plan.domain) for value in group.outputs]
    kernel = tile.KernelOp(plan.name, parameter_types, [_product(plan.grid_counts)], num_warps=num_warps)
    block = kernel.body.block
    for index, (parameter, (value, _)) in enumerate(zip(block.args, group.inputs)):
        parameter.name_hint = value.name_hint or f"input{index}"
    for index, parameter in enumerate(block.args[len(group.inputs) :]):
        parameter.name_hint = f"output{index}"
    builder = Builder(InsertPoint.at_end(block))
    origin = _tile_origin(builder, plan)
    zero = _constant_index(builder, 0)

    full_tile = plan.tile_shape
    loaded: list[SSAValue] = []
    for parameter, shape in zip(block.args, plan.input_shapes):
        tile_shape = tuple(t if s != 1 else 1 for t, s in zip(full_tile, shape))
        indices = [o if s != 1 else zero for o, s in zip(origin, shape)]
        element_type = parameter.type.element_type  # type: ignore[attr-defined]
        value = builder.insert(tile.LoadOp(parameter, indices, tile.TileType(tile_shape, element_type))).result
        if tile_shape != full_tile:
            value = builder.insert(tile.BroadcastOp(value, tile.TileType(full_tile, element_type))).result
        loaded.append(value)

    result_types = [tile.TileType(full_tile, _element_type(v)) for v in group.outputs]
    map_op = tile.MapOp(loaded, result_types, _map_body(group))
    builder.insert(map_op)
    outputs = block.args[len(group.inputs) :]
    for result, parameter in zip(map_op.outputs, outputs):
        builder.insert(tile.StoreOp(result, parameter, origin))
    builder.insert(tile.ReturnOp())
    return kernel


def _map_body(group: FusionGroup) -> Region:
    """The scalar body computing one element of every group output."""
    body = Block(arg_types=[_element_type(value) for value, _ in group.inputs])
    scalar = ScalarBuilder(Builder(InsertPoint.at_end(body)))
    element: dict[SSAValue, SSAValue] = {}
    input_elements = {(value, seen): argument for (value, seen), argument in zip(group.inputs, body.args)}

    def element_of(value: SSAValue, user: Operation) -> SSAValue:
        if is_splat_constant(value):
            constant_op = value.owner
            assert isinstance(constant_op, graph.ConstantOp)
            return scalar.constant(splat_constant_value(constant_op), _element_type(value))  # type: ignore[arg-type]
        if value in element:
            return element[value]
        seen = shape_of(user.results[0]) if isinstance(user, graph.ReshapeOp) else shape_of(value)
        return input_elements[(value, seen)]

    for op in group.ops:
        operands = [element_of(v, op) for v in op.operands]
        element[op.results[0]] = expand_elementwise(op, operands, scalar)
    # An output is computed by a group op, or is a splat constant (a fill kernel).
    yielded = [element[v] if v in element else element_of(v, v.owner) for v in group.outputs]  # type: ignore[arg-type]
    scalar.builder.insert(tile.YieldOp(yielded))
    return Region(body)


def _kernel_name(function_name: str, index: int, group: FusionGroup) -> str:
    kinds = [op.name.split(".")[1] for op in group.ops][:4] or ["fill"]
    return f"{function_name}_{index}_" + "_".join(kinds)


@dataclass
class HostBuilder:
    """Builds the host function that replaces one graph function."""

    old: func.FuncOp
    options: "ConvertGraphToTile"
    kernels: list[Operation] = field(default_factory=list)
    buffers: dict[SSAValue, SSAValue] = field(default_factory=dict)
    constant_count: int = 0

    def build(self) -> func.FuncOp:
        old_type = self.old.function_type
        inputs = [self._memref_type(t) for t in old_type.inputs.data]
        outputs = [self._memref_type(t) for t in old_type.outputs.data]
        new = func.FuncOp(self.old.sym_name.data, (inputs, outputs), visibility=self.old.sym_visibility)
        new.attributes |= self.old.attributes
        self.builder = Builder(InsertPoint.at_end(new.body.block))
        for old_argument, new_argument in zip(self.old.body.block.args, new.body.block.args):
            new_argument.name_hint = old_argument.name_hint
            self.buffers[old_argument] = new_argument
        self._check_ops()
        groups = partition(self.old)
        terminator = self.old.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        for value in terminator.arguments:
            if is_splat_constant(value):
                groups.append(FusionGroup(domain=shape_of(value), outputs=[value]))
        for index, group in enumerate(groups):
            self._launch(index, group)
        returned = [self._buffer_of(value) for value in terminator.arguments]
        self.builder.insert(func.ReturnOp(*returned))
        return new

    def _memref_type(self, tensor_type: Attribute) -> MemRefType:
        assert isinstance(tensor_type, TensorType)
        return MemRefType(tensor_type.element_type, tensor_type.get_shape())

    def _check_ops(self) -> None:
        for op in self.old.body.block.ops:
            if isinstance(op, (func.ReturnOp, graph.ConstantOp, *FUSIBLE_OPS)):
                for value in (*op.operands, *op.results):
                    if isinstance(value.type, TensorType) and isinstance(value.type.element_type, BFloat16Type):
                        raise PassFailure(op, "bf16 tensors are not lowered to the tile level yet")
                continue
            raise PassFailure(op, f"convert-graph-to-tile cannot lower '{op.name}' yet")

    def _buffer_of(self, value: SSAValue) -> SSAValue:
        if value in self.buffers:
            return self.buffers[value]
        owner = value.owner
        if isinstance(owner, graph.ConstantOp):
            return self._global_constant(owner)
        raise PassFailure(owner if isinstance(owner, Operation) else self.old, "value has no buffer")  # pragma: no cover

    def _global_constant(self, constant: graph.ConstantOp) -> SSAValue:
        symbol = f"{self.old.sym_name.data}_constant_{self.constant_count}"
        self.constant_count += 1
        memref_type = self._memref_type(constant.result.type)
        global_op = memref.GlobalOp.get(
            StringAttr(symbol), memref_type, constant.value, constant=UnitAttr(), alignment=HOST_BUFFER_ALIGNMENT
        )
        self.kernels.append(global_op)
        value = self.builder.insert(memref.GetGlobalOp(symbol, memref_type)).memref
        self.buffers[constant.result] = value
        return value

    def _launch(self, index: int, group: FusionGroup) -> None:
        if _product(group.domain) == 0:
            self._allocate_outputs(group)  # nothing to compute: an empty buffer is the result
            return
        for element_type in {_element_type(v) for v, _ in group.inputs} | {_element_type(v) for v in group.outputs}:
            byte_width(element_type)  # raises for element types without storage
        domain, input_shapes = collapse_dimensions(group.domain, [seen for _, seen in group.inputs])
        plan = KernelPlan(
            name=_kernel_name(self.old.sym_name.data, index, group),
            group=group,
            domain=domain,
            input_shapes=input_shapes,
            tile_shape=choose_tile_shape(domain, self.options.elements_per_program),
        )
        kernel = build_kernel(plan, self.options.num_warps)
        self.kernels.append(kernel)
        arguments = [self._buffer_of(value) for value, _ in group.inputs]
        arguments += self._allocate_outputs(group)
        self.builder.insert(tile.LaunchOp(plan.name, arguments))

    def _allocate_outputs(self, group: FusionGroup) -> list[SSAValue]:
        """A buffer per output (of the returned reshape's type when it is a returned view)."""
        buffers = []
        for output in group.outputs:
            view = returned_view(output)
            shape = shape_of(view.result if view is not None else output)
            allocation = memref.AllocOp.get(_element_type(output), HOST_BUFFER_ALIGNMENT, shape)
            self.builder.insert(allocation)
            self.buffers[output] = allocation.memref
            if view is not None:
                self.buffers[view.result] = allocation.memref
            buffers.append(allocation.memref)
        return buffers


def _is_graph_function(op: Operation) -> bool:
    if not isinstance(op, func.FuncOp) or not op.body.blocks:
        return False
    function_type = op.function_type
    types = (*function_type.inputs.data, *function_type.outputs.data)
    return any(isinstance(t, TensorType) for t in types) or any(
        isinstance(inner, (graph.ConstantOp, *FUSIBLE_OPS)) for inner in op.body.block.ops
    )


@dataclass(frozen=True)
class ConvertGraphToTile(ModulePass):
    """Lower graph functions to tile kernels (one per fusion group) and host launches."""

    name = "convert-graph-to-tile"

    elements_per_program: int = 2048
    num_warps: int = 4

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.elements_per_program < 1 or not 1 <= self.num_warps <= 32:
            raise ValueError("elements-per-program must be positive and num-warps in [1, 32]")
        for function in [f for f in op.body.block.ops if _is_graph_function(f)]:
            assert isinstance(function, func.FuncOp)
            host = HostBuilder(function, self)
            new = host.build()
            for kernel in host.kernels:
                op.body.block.insert_op_before(kernel, function)
            op.body.block.insert_op_before(new, function)
            function.detach()
            function.erase(safe_erase=False)
