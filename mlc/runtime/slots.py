"""The plan of a host function as plain data: buffers as slots, launches, results.

`plan.py` reads a lowered host function into a `HostPlan` once; `host.py` runs it. The plan is
kept apart from the IR reader so that running a program, and loading one from the artifact cache
or a saved bundle (`artifacts.py`), never imports xDSL or the dialects: these classes hold only
Python values and numpy arrays. `plan.py` documents what each field means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlc.errors import MlcError

DEFAULT_ALIGNMENT = 256
"""Alignment of every buffer the runtime allocates (cuMemAlloc's own), in bytes."""

GPU_LAUNCH = "mlc_gpu.launch"
CPU_LAUNCH = "loop.launch"
"""The launch ops a plan may hold (the names of `mlc_gpu.launch` and `loop.launch`; plan.py checks)."""


class HostProgramError(MlcError):
    """The host function cannot be run as it is; the message names the op and the reason."""


@dataclass(frozen=True)
class BufferSpec:
    """A dense row-major buffer: its shape, numpy dtype and the memref type it came from."""

    shape: tuple[int, ...]
    dtype: np.dtype
    type_text: str

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # Python integers: no shape wraps around

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize


@dataclass(frozen=True)
class ArgumentSlot:
    """An argument of the host function: which slot it fills and what it must be."""

    index: int
    description: str  # "argument #0 (%x) of @main"
    spec: BufferSpec
    slot: int
    alignment: int
    alignment_reason: str


@dataclass(frozen=True)
class ConstantSlot:
    """A constant of the host function (its values are part of the plan)."""

    slot: int
    name: str
    spec: BufferSpec
    values: np.ndarray  # read-only, C-contiguous
    alignment: int


@dataclass(frozen=True)
class AllocationSlot:
    """A buffer the host function allocates: a result or an intermediate."""

    slot: int
    spec: BufferSpec
    alignment: int
    is_result: bool
    description: str  # "result #0 of @main" or "the intermediate buffer kernel 'k' writes"


@dataclass(frozen=True)
class ViewSlot:
    """A buffer that is bytes of another slot's allocation (an arena's intermediate, a reshape)."""

    slot: int
    root: int  # the allocation slot whose bytes the view holds
    byte_offset: int
    spec: BufferSpec
    description: str  # "the intermediate buffer of kernel 'k' (bytes [0, 4096) of the arena of @main)"


@dataclass(frozen=True)
class TensorMapParameter:
    """A kernel parameter after the launched buffers that holds the TMA tensor map of one of them
    (`mlc.tensor_maps`): the buffer's parameter index, the box one copy moves (outermost first) and
    the swizzle span in bytes."""

    source: int
    box: tuple[int, ...]
    swizzle: int
    view: tuple[int, ...] = ()
    """The shape in which the kernel reads the buffer (`mlc.tensor_map_views`); () its own."""


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel launch: the kernel, the slots it takes and, on the GPU, its grid and block."""

    kernel: str
    op_name: str  # GPU_LAUNCH or CPU_LAUNCH
    slots: tuple[int, ...]  # one per kernel parameter
    buffer_specs: tuple[BufferSpec, ...]  # of the buffers passed (a reshape may differ from the parameter)
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    parameter_alignments: tuple[int, ...]
    programs: int | None = None
    """CPU: the kernel's grid, when `<kernel>__programs` may run shares of it in parallel
    (`mlc.cpu_programs`); None: one call runs the whole kernel."""
    dynamic_shared_bytes: int = 0
    """GPU: the dynamic shared memory each block gets (`mlc.dynamic_shared_bytes`)."""
    tensor_maps: tuple[TensorMapParameter, ...] = ()
    """GPU: the tensor maps passed after the buffers, in parameter order (`mlc.tensor_maps`)."""

    def describe(self) -> str:
        if self.grid is None or self.block is None:
            return f"'{self.kernel}'"
        grid = ", ".join(map(str, self.grid))
        block = ", ".join(map(str, self.block))
        return f"'{self.kernel}' (grid [{grid}], block [{block}])"


@dataclass(frozen=True)
class ResultSlot:
    """A result of the host function and the slot it comes from."""

    index: int
    slot: int
    spec: BufferSpec
    source: str  # "allocation", "argument" or "constant"


@dataclass(frozen=True)
class HostPlan:
    """The host function as data: its slots and launches, read once from the IR (`plan.py`)."""

    function_name: str
    arguments: tuple[ArgumentSlot, ...]
    constants: tuple[ConstantSlot, ...]
    allocations: tuple[AllocationSlot, ...]
    launches: tuple[KernelLaunch, ...]
    results: tuple[ResultSlot, ...]
    slot_count: int
    slot_alignments: tuple[tuple[int, str], ...]  # per slot: what the kernels need, and which one
    views: tuple[ViewSlot, ...] = ()  # in program order

    @property
    def launch_kinds(self) -> set[str]:
        return {launch.op_name for launch in self.launches}
