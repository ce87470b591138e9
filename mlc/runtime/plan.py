"""From a host `func.func` to a flat plan of buffers and launches, built once per program.

After lowering, a host function holds only memref arguments, `memref.alloc` (outputs and
intermediates), `memref.view`s of an allocation at constant byte offsets (`arith.constant ... :
index`), `memref.get_global` of module-level `memref.global` constants, launches
(`mlc_gpu.launch` with a grid and block, or `loop.launch`), optionally `memref.dealloc`, and a
`func.return` of memrefs. `plan_host_function` reads it once into a `HostPlan`: every buffer gets
a *slot* (an index), every launch becomes a `KernelLaunch` listing the slots it passes, and the
results name their slots. Running a program then walks plain lists, never the IR.

Views. convert-graph-to-tile places the intermediates that graph-plan-memory planned in one
`memref<Nxi8>` allocation, the *arena*, as `memref.view %arena[%offset][]`. Each view is a
`ViewSlot`: a slot that aliases its *root* allocation (a view of a view is resolved to the root,
offsets added) at a byte offset, so the runtime allocates the arena once and hands out the views
as pointer + offset (GPU) or numpy views of the arena's bytes (CPU). A view must lie within its
root, and its root must be an intermediate allocation (not an argument, a constant or a returned
buffer, whose memory changes between calls).

Alignment. A kernel may state the alignment each pointer parameter needs, as the `llvm.func`
attribute `mlc.arg_alignment = array<i64: 16, 16, 4>` (one power of two per parameter, in bytes).
Every slot needs at least its element size; each slot's `alignment` is the largest need of any
launch it is passed to, and `alignment_reason` names that launch, for the runtime's error message
when a caller's pointer falls short. A view's needs pass to its root (which is aligned to the
largest of them, and to at least 256 bytes), and its byte offset must be a multiple of each:
graph-plan-memory's offsets are multiples of its alignment (256 by default), so they are.

Sizes. Every buffer is checked against what the targets can address
(`dialects/buffer_limits.py`) while planning, before anything is allocated; each allocation is
described for messages by what it holds (`AllocationSlot.description`: the result it returns or
the kernel that first writes it), since the host function's values have lost their names.

Preconditions: the module verifies; launch targets are `llvm.func`s taking one pointer per
buffer (GPU kernels also carry `nvvm.kernel`); memrefs have static shapes, the identity layout and
the default memory space. `memref.dealloc` is ignored (the runtime owns buffer lifetimes). Any
other op in a host function is reported with `HostProgramError`, naming the op.

Limits: a single block (no control flow on the host); constants of `memref.global`s come from
dense attributes (`dense_resource` is not read) and uninitialized globals are zero-filled.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, func, llvm, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    UnitAttr,
)
from xdsl.ir import Operation, SSAValue

from mlc.diagnostics import first_line_of
from mlc.dialects import attributes
from mlc.dialects.buffer_limits import buffer_size_problem
from mlc.dialects.element_types import to_numpy_dtype
from mlc.dialects.gpu.ops import LaunchOp as GpuLaunchOp
from mlc.dialects.loop.ops import LaunchOp as LoopLaunchOp
from mlc.errors import PassFailure
from mlc.runtime.tensor_maps import TENSOR_MAP_OPERAND_ALIGNMENT, TensorMapError, TensorMapGeometry, element_of_dtype
from mlc.runtime.slots import (  # noqa: F401 - re-exported: the plan's classes are read from here too
    CPU_LAUNCH,
    DEFAULT_ALIGNMENT,
    GPU_LAUNCH,
    AllocationSlot,
    ArgumentSlot,
    BufferSpec,
    ConstantSlot,
    HostPlan,
    HostProgramError,
    KernelLaunch,
    ResultSlot,
    TensorMapParameter,
    ViewSlot,
)

ARGUMENT_ALIGNMENT_ATTRIBUTE = attributes.ARG_ALIGNMENT.name
GPU_KERNEL_ATTRIBUTE = "nvvm.kernel"
assert (GPU_LAUNCH, CPU_LAUNCH) == (GpuLaunchOp.name, LoopLaunchOp.name), "slots.py names the launch ops"


def public_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and (op.sym_visibility is None or op.sym_visibility.data == "public")
    ]


def find_host_function(module: ModuleOp, entry: str | None = None) -> func.FuncOp:
    """The entry function: `entry` by name, else the only function, else the first public one."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if entry is not None:
        for function in functions:
            if function.sym_name.data == entry:
                return function
        names = [f.sym_name.data for f in functions]
        close = difflib.get_close_matches(entry, names, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else f"; it has: {', '.join(names) or 'none'}"
        raise HostProgramError(f"the module has no function '@{entry}'{hint}")
    if len(functions) == 1:
        return functions[0]
    public = public_functions(module)
    if not public:
        raise HostProgramError("the module has no public func.func to run")
    return public[0]


def _buffer_spec(memref_type: object, what: str, op: Operation | None) -> BufferSpec:
    location = f" ('{first_line_of(op)}')" if op is not None else ""
    if not isinstance(memref_type, MemRefType):
        raise HostProgramError(f"{what} must be a memref, got {memref_type}{location}")
    if not memref_type.has_static_shape():
        raise HostProgramError(f"{what} has a dynamic shape ({memref_type}){location}")
    if not isinstance(memref_type.layout, NoneAttr):
        raise HostProgramError(
            f"{what} has a non-identity layout ({memref_type}); host buffers are dense{location}"
        )
    if not isinstance(memref_type.memory_space, NoneAttr):
        raise HostProgramError(
            f"{what} is in memory space {memref_type.memory_space} ({memref_type}); host buffers use the default space{location}"
        )
    try:
        dtype = to_numpy_dtype(memref_type.element_type)
    except NotImplementedError as error:
        raise HostProgramError(f"{what}: {error}{location}") from None
    too_large = buffer_size_problem(memref_type.get_shape(), memref_type.element_type, str(memref_type))
    if too_large is not None:
        raise HostProgramError(f"{what}: {too_large}{location}")
    return BufferSpec(tuple(memref_type.get_shape()), dtype, str(memref_type))


def _constant_values(global_op: memref.GlobalOp, spec: BufferSpec) -> np.ndarray:
    initial = global_op.initial_value
    name = global_op.sym_name.data
    if isinstance(initial, UnitAttr):  # an uninitialized global starts as zeros
        values = np.zeros(spec.shape, spec.dtype)
    elif isinstance(initial, DenseIntOrFPElementsAttr):
        raw = initial.data.data
        storage = np.dtype(np.uint8) if spec.dtype == np.bool_ else spec.dtype
        if len(raw) % storage.itemsize:
            raise HostProgramError(
                f"the initial value of memref.global @{name} has {len(raw)} bytes, not whole {spec.dtype.name} elements"
            )
        flat = np.frombuffer(raw, dtype=storage)
        if spec.dtype == np.bool_:
            flat = flat != 0
        if flat.size == 1 and spec.size != 1:  # a splat
            flat = np.full(spec.size, flat[0], dtype=spec.dtype)
        if flat.size != spec.size:
            raise HostProgramError(
                f"the initial value of memref.global @{name} has {flat.size} elements; its type {spec.type_text} has {spec.size}"
            )
        values = flat.astype(spec.dtype, copy=True).reshape(spec.shape)
    else:
        raise HostProgramError(
            f"memref.global @{name}: initial values of kind {type(initial).__name__} are not supported (use a dense attribute)"
        )
    values.setflags(write=False)
    return values


def _cpu_programs(kernel: llvm.FuncOp) -> int | None:
    value = attributes.CPU_PROGRAMS.read(kernel)
    return value.value.data if isinstance(value, IntegerAttr) else None


def _dynamic_shared_bytes(kernel: llvm.FuncOp) -> int:
    value = attributes.DYNAMIC_SHARED_BYTES.read(kernel)
    return value.value.data if isinstance(value, IntegerAttr) else 0


def _parameter_alignments(kernel: llvm.FuncOp, parameter_count: int) -> tuple[int, ...]:
    attribute = kernel.attributes.get(ARGUMENT_ALIGNMENT_ATTRIBUTE)
    name = kernel.sym_name.data
    if attribute is None:
        return (1,) * parameter_count
    if not isinstance(attribute, DenseArrayBase):
        raise HostProgramError(
            f"kernel '{name}': {ARGUMENT_ALIGNMENT_ATTRIBUTE} must be an array<i64: ...>, got {attribute}"
        )
    values = tuple(int(v) for v in attribute.get_values())
    if len(values) != parameter_count:
        raise HostProgramError(
            f"kernel '{name}': {ARGUMENT_ALIGNMENT_ATTRIBUTE} has {len(values)} entries for {parameter_count} parameters"
        )
    for index, value in enumerate(values):
        if value <= 0 or value & (value - 1):
            raise HostProgramError(
                f"kernel '{name}': the alignment of parameter #{index} must be a power of two, got {value}"
            )
    return values


def _tensor_maps(kernel: llvm.FuncOp, specs: Sequence[BufferSpec]) -> tuple[TensorMapParameter, ...]:
    """The kernel's `mlc.tensor_maps`, checked against the buffers the launch passes."""
    name = kernel.sym_name.data
    try:
        attribute = attributes.TENSOR_MAPS.read(kernel)
    except PassFailure as failure:
        raise HostProgramError(f"kernel '{name}': {failure}") from None
    if attribute is None:
        return ()
    views_attribute = attributes.TENSOR_MAP_VIEWS.read(kernel)
    views = [tuple(int(v) for v in view.get_values()) for view in views_attribute.data] if views_attribute is not None else []  # type: ignore[attr-defined]
    if views and len(views) != len(attribute.data):  # type: ignore[attr-defined]
        raise HostProgramError(f"kernel '{name}': {len(views)} views ({attributes.TENSOR_MAP_VIEWS.name}) for {len(attribute.data)} tensor maps")  # type: ignore[attr-defined]
    maps = []
    for index, entry in enumerate(attribute.data):  # type: ignore[attr-defined]
        source, swizzle, *box = (int(v) for v in entry.get_values())
        where = f"kernel '{name}': tensor map #{index} ({attributes.TENSOR_MAPS.name})"
        if source >= len(specs):
            raise HostProgramError(f"{where} reads parameter #{source}; the launch passes {len(specs)} buffers")
        spec = specs[source]
        element = element_of_dtype(spec.dtype)
        if element is None:
            raise HostProgramError(f"{where}: tensor maps take f16, bf16 or f32 buffers, not {spec.type_text}")
        view = views[index] if views else tuple(spec.shape)
        if len(box) != len(view):
            raise HostProgramError(f"{where}: a box of {len(box)} dimensions for {spec.type_text} read as {list(view)}")
        if math.prod(view) != math.prod(spec.shape):
            raise HostProgramError(f"{where}: the kernel reads {spec.type_text} as {list(view)}, which is not a view of its elements")
        try:
            TensorMapGeometry.row_major(element, view, tuple(box), swizzle).check()
        except TensorMapError as error:
            raise HostProgramError(f"{where} for {spec.type_text}: {error}") from None
        maps.append(TensorMapParameter(source, tuple(box), swizzle, view if view != tuple(spec.shape) else ()))
    return tuple(maps)


def _launch_target(module: ModuleOp, launch: Operation, kernel_name: str, gpu: bool) -> llvm.FuncOp:
    kernel = next(
        (
            op
            for op in module.ops
            if getattr(op, "sym_name", None) is not None and op.sym_name.data == kernel_name
        ),
        None,
    )
    if kernel is None:
        raise HostProgramError(f"'{first_line_of(launch)}': the module has no kernel '{kernel_name}'")
    if not isinstance(kernel, llvm.FuncOp):
        raise HostProgramError(
            f"'{first_line_of(launch)}': kernel '{kernel_name}' is a '{kernel.name}'; the runtime runs kernels "
            "lowered to llvm.func (run the lowering pipeline first)"
        )
    if gpu and GPU_KERNEL_ATTRIBUTE not in kernel.attributes:
        raise HostProgramError(
            f"'{first_line_of(launch)}': llvm.func '{kernel_name}' is launched on the GPU but lacks the "
            f"'{GPU_KERNEL_ATTRIBUTE}' attribute that makes it a kernel"
        )
    parameters = kernel.function_type.inputs.data
    for index, parameter in enumerate(parameters):
        if not isinstance(parameter, llvm.LLVMPointerType):
            raise HostProgramError(
                f"kernel '{kernel_name}': parameter #{index} is {parameter}; the runtime passes one pointer per buffer"
            )
    return kernel


def _argument_description(function: func.FuncOp, index: int, value: SSAValue) -> str:
    name = f" (%{value.name_hint})" if value.name_hint else ""
    return f"argument #{index}{name} of @{function.sym_name.data}"


class _PlanBuilder:
    """Walks one host function once, numbering its buffers."""

    def __init__(self, module: ModuleOp, function: func.FuncOp):
        self.module = module
        self.function = function
        self.slots: dict[SSAValue, int] = {}
        self.specs: list[BufferSpec] = []
        self.kinds: list[str] = []  # per slot: "argument", "constant", "allocation" or "view"
        self.alignments: list[tuple[int, str]] = []
        self.constants: list[tuple[int, str, BufferSpec, np.ndarray]] = []
        self.allocations: list[tuple[int, BufferSpec, int]] = []
        self.launches: list[KernelLaunch] = []
        self.constant_slots: dict[str, int] = {}
        self.index_constants: dict[SSAValue, int] = {}
        self.views: list[tuple[memref.ViewOp, int, int, int]] = []  # (op, slot, root slot, byte offset)

    def new_slot(self, value: SSAValue, spec: BufferSpec, kind: str, alignment: int = 1) -> int:
        slot = len(self.specs)
        self.slots[value] = slot
        self.specs.append(spec)
        self.kinds.append(kind)
        self.alignments.append((max(alignment, spec.dtype.itemsize), "its element type"))
        return slot

    def slot_of(self, value: SSAValue, user: Operation) -> int:
        if value not in self.slots:
            raise HostProgramError(f"'{first_line_of(user)}' uses a value that is not a host buffer")
        return self.slots[value]

    def build(self) -> HostPlan:
        blocks = list(self.function.body.blocks)
        if len(blocks) != 1:
            raise HostProgramError(
                f"@{self.function.sym_name.data} has {len(blocks)} blocks; host functions have one"
            )
        arguments = []
        for index, value in enumerate(blocks[0].args):
            description = _argument_description(self.function, index, value)
            spec = _buffer_spec(value.type, description, None)
            arguments.append((index, description, spec, self.new_slot(value, spec, "argument")))
        results: list[ResultSlot] = []
        for op in blocks[0].ops:
            self.add_op(op, results)
        if not isinstance(blocks[0].last_op, func.ReturnOp):
            raise HostProgramError(f"@{self.function.sym_name.data} does not end with func.return")
        result_slots = {r.slot for r in results}
        self.check_views(result_slots)
        return HostPlan(
            function_name=self.function.sym_name.data,
            arguments=tuple(
                ArgumentSlot(index, description, spec, slot, *self.alignments[slot])
                for index, description, spec, slot in arguments
            ),
            constants=tuple(
                ConstantSlot(slot, name, spec, values, max(self.alignments[slot][0], DEFAULT_ALIGNMENT))
                for slot, name, spec, values in self.constants
            ),
            allocations=tuple(
                AllocationSlot(
                    slot,
                    spec,
                    max(self.alignments[slot][0], requested, DEFAULT_ALIGNMENT),
                    slot in result_slots,
                    self.describe_allocation(slot, results),
                )
                for slot, spec, requested in self.allocations
            ),
            launches=tuple(self.launches),
            results=tuple(results),
            slot_count=len(self.specs),
            slot_alignments=tuple(self.alignments),
            views=tuple(
                ViewSlot(slot, root, offset, self.specs[slot], self.describe_view(slot, offset, results))
                for _, slot, root, offset in self.views
            ),
        )

    def check_views(self, result_slots: set[int]) -> None:
        """Each view's root is kept between calls, and the view is aligned as its launches need;
        passes those needs on to the root (see the module docstring)."""
        for op, slot, root, offset in self.views:
            if root in result_slots:
                raise HostProgramError(
                    f"'{first_line_of(op)}': a view of a returned buffer; views are of the host function's "
                    "intermediate allocations (the arena)"
                )
            needed, reason = self.alignments[slot]
            if offset % needed:
                raise HostProgramError(
                    f"'{first_line_of(op)}': the view starts at byte {offset} of its buffer, which is not "
                    f"aligned to the {needed} bytes that {reason} needs"
                )
            if needed > self.alignments[root][0]:
                self.alignments[root] = (needed, f"{reason}, through a view")

    def describe_arena(self, slot: int) -> str:
        """'the arena of @main, which holds the intermediate buffers of kernels 'a' and 'b''."""
        name = f"the arena of @{self.function.sym_name.data}"
        first_users = (
            next((launch for launch in self.launches if view_slot in launch.slots), None)
            for _, view_slot, root, _ in self.views
            if root == slot
        )
        writers = list(dict.fromkeys(f"'{launch.kernel}'" for launch in first_users if launch is not None))
        if not writers:
            return name
        named = writers[0] if len(writers) == 1 else f"{', '.join(writers[:-1])} and {writers[-1]}"
        if len(writers) > 4:
            named = f"{', '.join(writers[:3])} and {len(writers) - 3} more"
        kernels = "kernel" if len(writers) == 1 else "kernels"
        return f"{name}, which holds the intermediate buffers of {kernels} {named}"

    def describe_view(self, slot: int, offset: int, results: Sequence[ResultSlot]) -> str:
        within = f"bytes [{offset}, {offset + self.specs[slot].nbytes}) of the arena of @{self.function.sym_name.data}"
        return f"{self.describe_allocation(slot, results)} ({within})"

    def describe_allocation(self, slot: int, results: Sequence[ResultSlot]) -> str:
        returned = [result.index for result in results if result.slot == slot]
        if returned:
            return f"result #{returned[0]} of @{self.function.sym_name.data}"
        writer = next((launch for launch in self.launches if slot in launch.slots), None)
        if writer is None and any(root == slot for _, _, root, _ in self.views):
            return self.describe_arena(slot)
        if writer is None:
            return "a buffer no kernel uses"
        return f"the intermediate buffer of kernel '{writer.kernel}'"

    def add_op(self, op: Operation, results: list[ResultSlot]) -> None:
        if isinstance(op, memref.AllocOp):
            if op.dynamic_sizes or op.symbol_operands:
                raise HostProgramError(f"'{first_line_of(op)}': dynamic sizes are not supported")
            spec = _buffer_spec(op.memref.type, "the allocation", op)
            requested = op.alignment.value.data if isinstance(op.alignment, IntegerAttr) else 1
            slot = self.new_slot(op.memref, spec, "allocation")
            self.allocations.append((slot, spec, requested))
        elif isinstance(op, memref.ViewOp):
            self.add_view(op)
        elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
            assert isinstance(op.value, IntegerAttr)
            self.index_constants[op.result] = op.value.value.data
        elif isinstance(op, memref.GetGlobalOp):
            self.add_constant(op)
        elif isinstance(op, GpuLaunchOp | LoopLaunchOp):
            self.add_launch(op)
        elif isinstance(op, memref.DeallocOp):
            pass  # buffers live as long as the runtime keeps them
        elif isinstance(op, func.ReturnOp):
            for index, value in enumerate(op.arguments):
                slot = self.slot_of(value, op)
                spec = _buffer_spec(value.type, f"result #{index}", op)
                results.append(ResultSlot(index, slot, spec, self.kinds[slot]))
        else:
            raise HostProgramError(
                f"'{first_line_of(op)}': '{op.name}' cannot run on the host; host functions hold only "
                "memref.alloc, memref.view, index constants, memref.get_global, launches and func.return"
            )

    def add_view(self, op: memref.ViewOp) -> None:
        source = self.slot_of(op.source, op)
        if self.kinds[source] not in ("allocation", "view"):
            raise HostProgramError(
                f"'{first_line_of(op)}': a view of {self.kinds[source]} memory; views are of the host "
                "function's intermediate allocations (the arena)"
            )
        shift = self.index_constants.get(op.byte_shift)
        if shift is None or op.sizes:
            raise HostProgramError(
                f"'{first_line_of(op)}': a view needs a constant byte shift (arith.constant) and a static shape"
            )
        spec = _buffer_spec(op.result.type, "the view", op)
        root, offset = source, shift
        parent = next((view for view in self.views if view[1] == source), None)
        if parent is not None:  # a view of a view: of the same root, further in
            root, offset = parent[2], parent[3] + shift
        root_bytes = self.specs[root].nbytes
        if shift < 0 or shift + spec.nbytes > self.specs[source].nbytes:
            raise HostProgramError(
                f"'{first_line_of(op)}': the view's bytes [{shift}, {shift + spec.nbytes}) are not all within "
                f"its buffer's {self.specs[source].nbytes} bytes"
            )
        assert offset + spec.nbytes <= root_bytes
        self.views.append((op, self.new_slot(op.result, spec, "view"), root, offset))

    def add_constant(self, op: memref.GetGlobalOp) -> None:
        name = op.name_.root_reference.data
        global_op = next(
            (g for g in self.module.ops if isinstance(g, memref.GlobalOp) and g.sym_name.data == name), None
        )
        if global_op is None:
            raise HostProgramError(f"'{first_line_of(op)}': the module has no memref.global @{name}")
        spec = _buffer_spec(global_op.type, f"memref.global @{name}", global_op)
        if name in self.constant_slots:  # two get_globals of one global share its buffer
            self.slots[op.memref] = self.constant_slots[name]
            return
        requested = global_op.alignment
        alignment = requested.value.data if isinstance(requested, IntegerAttr) else 1
        slot = self.new_slot(op.memref, spec, "constant", alignment)
        self.constant_slots[name] = slot
        self.constants.append((slot, name, spec, _constant_values(global_op, spec)))

    def add_launch(self, op: GpuLaunchOp | LoopLaunchOp) -> None:
        gpu = isinstance(op, GpuLaunchOp)
        name = op.kernel.root_reference.data
        kernel = _launch_target(self.module, op, name, gpu)
        operands: Sequence[SSAValue] = op.arguments
        slots = tuple(self.slot_of(value, op) for value in operands)
        tensor_maps = _tensor_maps(kernel, tuple(self.specs[slot] for slot in slots)) if gpu else ()
        if len(kernel.function_type.inputs.data) != len(operands) + len(tensor_maps):
            maps = f" and {len(tensor_maps)} tensor maps ({attributes.TENSOR_MAPS.name})" if tensor_maps else ""
            raise HostProgramError(
                f"'{first_line_of(op)}': kernel '{name}' takes {len(kernel.function_type.inputs.data)} "
                f"parameters, the launch passes {len(operands)}{maps}"
            )
        alignments = _parameter_alignments(kernel, len(operands))
        if tensor_maps:  # the copy engine reads operands from 16-byte aligned addresses
            alignments = tuple(
                max(alignment, TENSOR_MAP_OPERAND_ALIGNMENT) if any(m.source == index for m in tensor_maps) else alignment
                for index, alignment in enumerate(alignments)
            )
        launch = KernelLaunch(
            kernel=name,
            op_name=op.name,
            slots=slots,
            buffer_specs=tuple(self.specs[slot] for slot in slots),
            grid=tuple(op.grid_shape()) if gpu else None,  # type: ignore[arg-type]
            block=tuple(op.block_shape()) if gpu else None,  # type: ignore[arg-type]
            parameter_alignments=alignments,
            programs=None if gpu else _cpu_programs(kernel),
            dynamic_shared_bytes=_dynamic_shared_bytes(kernel) if gpu else 0,
            tensor_maps=tensor_maps,
        )
        for parameter, (slot, alignment) in enumerate(zip(slots, alignments)):
            if alignment > self.alignments[slot][0]:
                self.alignments[slot] = (
                    alignment,
                    f"parameter #{parameter} of kernel {launch.describe()} ({ARGUMENT_ALIGNMENT_ATTRIBUTE})",
                )
        self.launches.append(launch)


def plan_host_function(module: ModuleOp, entry: str | func.FuncOp | None = None) -> HostPlan:
    """Reads the host function `entry` (a name, the op, or None for the default) into a plan."""
    function = entry if isinstance(entry, func.FuncOp) else find_host_function(module, entry)
    return _PlanBuilder(module, function).build()
