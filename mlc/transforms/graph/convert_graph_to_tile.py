"""convert-graph-to-tile: one tile kernel per fusion group, and a host function that launches them.

Every `func.func` over tensors becomes a host function over memrefs (same name, same argument
and result shapes) that allocates the outputs of each kernel and launches one `tile.kernel` per
group, in program order. Non-splat constants become `memref.global`s; splat constants become
scalar constants inside the kernels.

Memory. Where graph-plan-memory left a plan (`mlc.memory_plan` on the function, `mlc.buffer` on
its ops), the host function follows it: one arena, `memref.alloc() : memref<ARENA_BYTESxi8>`,
and each planned kernel output that the function does not return is a `memref.view` of it at its
planned byte offset (`lowering/host_arena.py`). Returned values are the caller's and always get
allocations of their own, as do outputs the plan does not place (values a decomposition here
made after planning); a reshape outside every kernel is a view of its operand's buffer, arena or
not. The plan is read before anything is built and refused with a diagnostic when it does not
fit: a malformed attribute, a size that is not the value's bytes, a misaligned offset, bytes past
the arena, a reshape placed apart from its operand (`memory_plan.read_recorded_plan`), or two
buffers sharing bytes while both are live in the kernels' order (`HostArena.check_lifetimes`).
Without a plan every output gets an allocation of its own. The host function does not keep
`mlc.memory_plan`: its arena is the plan, in the code.

The groups are the IR's: one kernel per `graph.fusion` (graph-fuse writes them; a person may edit
them), named after it, and one per live op outside every fusion. A reshape outside every fusion is
a view of its operand's buffer (no kernel), unless the function returns it. The pass groups
nothing itself; a fusion that cannot be one kernel (two matmuls, reductions over different axes,
an epilogue that does not read the product, a reshape in the middle, values of two domains) is a
diagnostic naming the op and the reason (`fusion_groups.group_from_ops`, `matmul_units.matmul_unit`).
Composite ops (softmax, layer norm, means, reductions that drop their axes) are decomposed first,
inside the fusions too (`graph_decomposition.py`); a reshape that a decomposition leaves at a
group's exit is a view of the group's output.

Kernel construction, for a group with domain D:

1. *Collapse dimensions.* Size-1 dimensions are dropped and adjacent dimensions merged when
   every input is either full along both or broadcast along both, so a plain elementwise kernel
   is 1-d whatever its rank and a bias add over `64x1024` stays 2-d. Parameters are memrefs of
   the collapsed shapes; the host passes its buffers unchanged (same element count).
2. *Choose the tile* (`analysis/tile_sizes.py`). Powers of two, filled from the innermost dimension outward until the tile
   holds `elements-per-program` elements (never more than the dimension needs). The grid is 1-d;
   each program decomposes its id into tile coordinates, innermost fastest, so neighbouring
   programs touch neighbouring memory. A group with reductions gets whole reduced dimensions
   (`choose_reduction_tile`), or, beyond `MAX_REDUCTION_TILE` elements, a chunk of them that its
   kernel loops over (`choose_looped_reduction_tile`, `group_kernel.py`).
3. *Body.* Load every input as a tile (a size-1 tile dimension where it broadcasts, then
   `tile.broadcast`), compute all outputs in one `tile.map` whose scalar body is the group's ops
   expanded by `elementwise_expansion.py`, store each output. Tile loads and stores mask at the
   memref bounds, so domains that are not multiples of the tile need nothing more.

Layout ops (transpose, slice, concat) are members of groups like elementwise ops, but read their
operands through index maps: a chain of them down to the group's inputs becomes coordinates,
index arithmetic and `tile.gather`s (`layout_gather.py`), so a transpose or a slice feeding an
elementwise chain, a reduction or a pool window costs no copy; such groups keep every dimension
(no collapse), since the maps name them. On the GPU a group that is one transpose of the last two dimensions,
or a convolution's NCHW <-> NHWC transpose with its padding or slice, is a shared-memory transpose
(`transpose_kernel.py`). Pools and conv2d come decomposed (graph-decompose, or this pass's own first step).

Options: `elements-per-program` (default 2048), `num-warps` (default 4) and `reduction-warps` (0,
`reduction_warps`' choice) are recorded in the IR (tile shapes, `num_warps`); `precision` (`ieee`, `tf32` or
`3xtf32`) is the precision of the f32 matmuls that have no `precision` property, written on their
`tile.dot`s. Preconditions: static shapes; graph ops of the elementwise, reduction, layout and
matmul subset after decomposition (others are reported with a diagnostic naming the op). bf16
kernels load and store bf16 and compute in f32, as f16 kernels do.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.graph import ops as graph
from mlc.dialects.precision import DEFAULT_PRECISION, PRECISIONS
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.fusion_groups import FUSIBLE_OPS, FusionGroup, GroupProblem, group_from_ops
from mlc.transforms.analysis.fusion_groups import is_splat_constant, live_ops, returned_view, shape_of
from mlc.transforms.lowering.graph_decomposition import decompose_function
from mlc.transforms.analysis.tile_sizes import choose_cpu_column_tile, choose_reduction_tile, choose_tile_shape, reduction_warps
from mlc.transforms.analysis.memory_plan import PLAN_ATTR, read_recorded_plan
from mlc.transforms.lowering.fusion_inlining import inline_fusions
from mlc.transforms.lowering.host_arena import HostArena
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS
from mlc.transforms.lowering.group_kernel import build_kernel
from mlc.transforms.lowering.group_plan import KernelPlan, collapse_dimensions, keep_dimensions
from mlc.transforms.lowering.attention_kernel import build_attention_kernel
from mlc.transforms.lowering.attention_unit import AttentionUnit, attention_unit
from mlc.transforms.lowering.matmul_blocks import check_matmul_options
from mlc.transforms.lowering.matmul_kernel import build_matmul_kernel
from mlc.transforms.lowering.matmul_plan import plan_matmul
from mlc.transforms.lowering.matmul_units import LaunchUnit, MatmulUnit, launch_order, matmul_unit
from mlc.transforms.lowering.transpose_kernel import build_gpu_layout_kernel

HOST_BUFFER_ALIGNMENT = 256


def _product(values: Sequence[int]) -> int:
    return math.prod(values)


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.element_type


def _leaves(op: Operation, group: list[Operation]) -> bool:
    """A reshape of a value of `group` that no op of the group reads leaves it: a view of the
    group's output, not part of its kernel (graph-decompose makes such reshapes of reductions that
    drop their axes)."""
    if not isinstance(op, graph.ReshapeOp) or op.x.owner not in group:
        return False
    return not any(use.operation in group for use in op.result.uses)


def _unit_ops(unit: LaunchUnit) -> list[Operation]:
    return unit.ops


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
    names: dict[int, str] = field(default_factory=dict)
    """Kernel names given by `graph.fusion` regions, by the id of their unit."""
    kernel_names: set[str] = field(default_factory=set)
    constant_count: int = 0
    arena: HostArena | None = None
    """Where graph-plan-memory's plan puts the intermediates, when the function has one."""

    def build(self) -> func.FuncOp:
        old_type = self.old.function_type
        inputs = [self._memref_type(t) for t in old_type.inputs.data]
        outputs = [self._memref_type(t) for t in old_type.outputs.data]
        new = func.FuncOp(self.old.sym_name.data, (inputs, outputs), visibility=self.old.sym_visibility)
        new.attributes |= {k: v for k, v in self.old.attributes.items() if k != PLAN_ATTR}
        self.builder = Builder(InsertPoint.at_end(new.body.block))
        plan = read_recorded_plan(self.old)  # before decomposition and inlining replace what it places
        if plan is not None:
            self.arena = HostArena(plan, new, HOST_BUFFER_ALIGNMENT)
        for old_argument, new_argument in zip(self.old.body.block.args, new.body.block.args):
            new_argument.name_hint = old_argument.name_hint
            self.buffers[old_argument] = new_argument
        decompose_function(self.old)
        units = self._kernel_units()
        terminator = self.old.body.block.last_op
        assert isinstance(terminator, func.ReturnOp)
        for value in terminator.arguments:
            if is_splat_constant(value):
                units.append(FusionGroup(domain=shape_of(value), outputs=[value]))
        try:
            ordered = launch_order(units)
        except GroupProblem as problem:
            raise PassFailure(problem.op, problem.reason) from None
        for index, unit in enumerate(ordered):
            if isinstance(unit, MatmulUnit):
                self._launch_matmul(index, unit)
            elif isinstance(unit, AttentionUnit):
                self._launch_attention(index, unit)
            else:
                self._launch(index, unit)
        returned = [self._buffer_of(value) for value in terminator.arguments]
        self.builder.insert(func.ReturnOp(*returned))
        if self.arena is not None:
            self.arena.check_lifetimes()
        return new

    def _kernel_units(self) -> list[LaunchUnit]:
        """One kernel per `graph.fusion` (its body inlined, its ops remembered as the group) and one
        per live op outside every fusion; reshapes outside are views of their operand's buffer."""
        function = self.old
        fusions = [op for op in function.body.block.ops if isinstance(op, graph.FusionOp)]
        regions = [(f.group_name, [op for op in f.body.block.ops if not isinstance(op, graph.YieldOp)], attributes.CHAIN_PLAN.read(f)) for f in fusions]
        if self.arena is not None:
            self.arena.follow_fusions(fusions)
        inline_fusions(function)
        self._check_ops()
        live = live_ops(function)
        units: list[LaunchUnit] = []
        grouped: set[Operation] = set()
        for name, ops, chain_plan in regions:
            members = [op for op in ops if op in live and not isinstance(op, graph.ConstantOp) and not _leaves(op, ops)]
            grouped.update(members)
            if members:
                units.append(self._unit(members, live, name.data if name is not None else None, chain_plan))
        for op in function.body.block.ops:
            if op in grouped or op not in live or isinstance(op, graph.ConstantOp | func.ReturnOp):
                continue
            if isinstance(op, graph.ReshapeOp) and self._is_view(op):
                continue
            units.append(self._unit([op], live, None))
        # Program order: the order in which the memory plan's liveness was computed.
        position = {op: index for index, op in enumerate(function.body.block.ops)}
        return sorted(units, key=lambda unit: min(map(position.__getitem__, _unit_ops(unit)), default=len(position)))

    def _unit(self, ops: list[Operation], live: set[Operation], name: str | None, chain: Attribute | None = None) -> LaunchUnit:
        try:
            has_matmul = any(isinstance(op, graph.MatmulOp) for op in ops)
            unit = attention_unit(ops, chain) if chain is not None else (matmul_unit if has_matmul else group_from_ops)(ops, live)
        except GroupProblem as problem:
            where = f"the fusion group '{name}'" if name else "its kernel"
            raise PassFailure(problem.op, f"{where} cannot be one kernel: {problem.reason}") from None
        if name is not None:
            self.names[id(unit)] = name
        return unit

    def _is_view(self, reshape: graph.ReshapeOp) -> bool:
        """A reshape outside every group reinterprets its operand's buffer (no kernel), unless the
        function returns it (then a kernel copies into the returned buffer) or it returns a
        kernel's output (that kernel writes the returned buffer, `returned_view`)."""
        if returned_view(reshape.x) is reshape:
            return True
        return not any(isinstance(use.operation, func.ReturnOp) for use in reshape.result.uses)

    def _memref_type(self, tensor_type: Attribute) -> MemRefType:
        assert isinstance(tensor_type, TensorType)
        return MemRefType(tensor_type.element_type, tensor_type.get_shape())

    def _check_ops(self) -> None:
        for op in self.old.body.block.ops:
            if isinstance(op, (func.ReturnOp, graph.ConstantOp, graph.MatmulOp, *FUSIBLE_OPS)):
                continue
            raise PassFailure(op, f"convert-graph-to-tile cannot lower '{op.name}' yet")

    def _buffer_of(self, value: SSAValue) -> SSAValue:
        if value in self.buffers:
            return self.buffers[value]
        owner = value.owner
        if isinstance(owner, graph.ConstantOp):
            return self._global_constant(owner)
        if isinstance(owner, graph.ReshapeOp):  # a view: kernels take buffers of the same element count
            return self._buffer_of(owner.x)
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
        if _product(group.domain) == 0:  # graph-decompose turned empty reductions into constants
            self._allocate_outputs(group)  # nothing to compute: an empty buffer is the result
            return
        for element_type in {_element_type(v) for v, _ in group.inputs} | {_element_type(v) for v in group.outputs}:
            byte_width(element_type)  # raises for element types without storage
        plan, gpu = self._plan(index, group), self.options.target == "gpu"
        self.kernels.append(kernel := (gpu and build_gpu_layout_kernel(plan.name, group)) or build_kernel(plan))
        arguments = [self._buffer_of(value) for value, _ in group.inputs] + self._allocate_outputs(group)
        self.builder.insert(tile.LaunchOp(kernel.sym_name.data, arguments))

    def _launch_matmul(self, index: int, unit: MatmulUnit) -> None:
        """One kernel (`matmul_kernel.py`) for a matmul and its epilogue; none when the result is empty."""
        outputs = self._allocate_outputs(unit.output_group)
        if _product(shape_of(unit.op.result)) == 0:
            return
        kinds = [op.name.split(".")[1] for op in unit.ops][:4]
        name = self._kernel_name(unit, f"{self.old.sym_name.data}_{index}_" + "_".join(kinds))
        options = self.options
        plan = plan_matmul(name, unit, options.matmul_tile or None, options.precision, options.target == "cpu", options.wgmma)
        kernel = build_matmul_kernel(plan)
        self.kernels.append(kernel)
        arguments = [self._buffer_of(value) for value in unit.reads()] + outputs
        self.builder.insert(tile.LaunchOp(kernel.sym_name.data, arguments))

    def _launch_attention(self, index: int, unit: AttentionUnit) -> None:  # one kernel: attention_kernel.py
        outputs = self._allocate_outputs(FusionGroup(domain=shape_of(unit.outputs[0]), outputs=unit.outputs))
        self.kernels.append(kernel := build_attention_kernel(self._kernel_name(unit, f"{self.old.sym_name.data}_{index}_attention"), unit))
        self.builder.insert(tile.LaunchOp(kernel.sym_name.data, [self._buffer_of(value) for value in unit.memory_inputs] + outputs))

    def _plan(self, index: int, group: FusionGroup) -> KernelPlan:
        participants = [seen for _, seen in group.inputs]
        if group.reduced_axes:
            participants.append(group.reduced_domain)
        if any(isinstance(op, LAYOUT_OPS) for op in group.ops):
            collapse = keep_dimensions(group.domain)
        else:
            collapse = collapse_dimensions(group.domain, participants)
        domain = collapse.domain
        name = self._kernel_name(group, _kernel_name(self.old.sym_name.data, index, group))
        if not group.reduced_axes:
            tile_shape = choose_tile_shape(domain, self.options.elements_per_program)
            return KernelPlan(name, group, collapse, tile_shape, self.options.num_warps)
        reduced_axes = collapse.axes(group.reduced_axes)
        reduction_tile = choose_cpu_column_tile(domain, reduced_axes, group, self.options.target) or choose_reduction_tile(domain, reduced_axes, self.options.elements_per_program)
        return KernelPlan(name, group, collapse, reduction_tile, self.options.reduction_warps or reduction_warps(reduction_tile))

    def _kernel_name(self, unit: LaunchUnit, generated: str) -> str:
        """The name of the unit's `graph.fusion` (as a symbol, unique in the module), else `generated`."""
        given = self.names.get(id(unit))
        name = re.sub(r"[^A-Za-z0-9_]", "_", given) if given else generated
        if name in self.kernel_names:
            name = f"{name}_{len(self.kernel_names)}"
        self.kernel_names.add(name)
        return name

    def _allocate_outputs(self, group: FusionGroup) -> list[SSAValue]:
        """A buffer per output (of the returned reshape's type when it is a returned view): a view
        of the arena where the memory plan places it, else an allocation of its own (returned
        values are the caller's, so never in the arena)."""
        buffers = []
        for output in group.outputs:
            view = returned_view(output)
            shape = shape_of(view.result if view is not None else output)
            returned = view is not None or any(isinstance(use.operation, func.ReturnOp) for use in output.uses)
            if self.arena is not None and not returned and self.arena.place_of(output) is not None:
                buffer = self.arena.view(self.builder, output, _element_type(output), shape)
            else:
                buffer = self.builder.insert(memref.AllocOp.get(_element_type(output), HOST_BUFFER_ALIGNMENT, shape)).memref
            self.buffers[output] = buffer
            if view is not None:
                self.buffers[view.result] = buffer
            buffers.append(buffer)
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
    reduction_warps: int = 0
    """Warps of reduction kernels instead of `tile_sizes.reduction_warps`' choice (0: its choice)."""
    matmul_tile: tuple[int, ...] = ()
    """(BM, BN, BK) for every matmul instead of `matmul_blocks.choose_matmul_tile`'s choice."""
    precision: str = DEFAULT_PRECISION
    """The precision of f32 matmuls without a `precision` property of their own."""
    target: str = "gpu"
    """Whose heuristic picks matmul blocks: "gpu" or "cpu" (`matmul_blocks.choose_matmul_tile`)."""
    wgmma: bool = False
    """On the GPU, f16/bf16 matmuls whose rows allow it take wgmma blocks (`choose_matmul_tile`)."""

    def __post_init__(self) -> None:
        if self.elements_per_program < 1:
            raise ValueError(f"elements-per-program must be positive, got {self.elements_per_program}")
        if not 1 <= self.num_warps <= 32 or not 0 <= self.reduction_warps <= 32:
            raise ValueError(f"num-warps must be in [1, 32] and reduction-warps in [0, 32], got {self.num_warps}, {self.reduction_warps}")
        check_matmul_options(self.matmul_tile, self.target)
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.body.block.ops if _is_graph_function(f)]:
            assert isinstance(function, func.FuncOp)
            host = HostBuilder(function, self)
            new = host.build()
            for kernel in host.kernels:
                op.body.block.insert_op_before(kernel, function)
            op.body.block.insert_op_before(new, function)
            function.detach()
            function.erase(safe_erase=False)
