"""The SIMT level: a grid of blocks of threads, all run at once as lanes, with barriers and races.

A launch of `grid` (x, y, z) blocks of `block` (x, y, z) threads has six lane axes, ordered
(grid z, grid y, grid x, block z, block y, block x), so that C order over them is CUDA's linear
block id followed by the linear thread id. A value depending only on `threadIdx.x` has shape
(1, 1, 1, 1, 1, block x); a uniform value is 0-d. Lane ids are `block * threads_per_block +
thread`, so the block and thread of a lane are one division away.

Both the `mlc_gpu` dialect (`mlc_gpu.thread_id`, `mlc_gpu.barrier`) and lowered kernels (NVVM
intrinsics `llvm.nvvm.read.ptx.sreg.*`, `llvm.nvvm.barrier0`, `llvm.nvvm.shfl.sync.*`) run on
`GridLevel`:

* Shared memory (memref space 3, `addrspace(3)` globals) is allocated once per block; private
  memory (space 5, `llvm.alloca`) once per thread.
* `barrier` checks that every thread of a block arrived (else `BarrierDivergence`) and ends the
  block's barrier phase for the race checks (see `races.py`): shared memory is checked for
  RAW/WAR/WAW within a phase, global memory for writes by two threads of different blocks or of
  one block in one phase.
* `shuffle` implements PTX `shfl.sync` (up/down/bfly/idx with the clamp/segment operand) over warps
  of 32 consecutive linear thread ids.

Limits: threads of a warp are not modelled as a unit beyond shuffles (no warp-synchronous memory
semantics, no `vote`/`match`); barrier ids and thread counts of `bar.sync` are ignored (every
barrier is a whole-block barrier).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import Operation, Region

from mlc.interpreter.engine import LaneSpace, Level, Machine, launch
from mlc.interpreter.errors import BarrierDivergence, InterpreterError
from mlc.interpreter.races import RaceAxes, SharedMemoryTracker, WriteTracker
from mlc.interpreter.values import Mask

WARP_SIZE = 32
SHARED_MEMORY_SPACE = 3
_LANE_AXES = 6


def _three(values: Sequence[int]) -> tuple[int, int, int]:
    padded = tuple(int(v) for v in values) + (1,) * (3 - len(values))
    return padded[0], padded[1], padded[2]


class GridLevel(Level):
    """The lanes and the per-launch state of a grid of thread blocks."""

    def __init__(self, grid: Sequence[int], block: Sequence[int], check_races: bool = True):
        super().__init__()
        self.grid = _three(grid)
        self.block = _three(block)
        grid_x, grid_y, grid_z = self.grid
        block_x, block_y, block_z = self.block
        self.shape = (grid_z, grid_y, grid_x, block_z, block_y, block_x)
        self.block_count = grid_x * grid_y * grid_z
        self.threads_per_block = block_x * block_y * block_z
        self.block_linear = np.arange(self.block_count, dtype=np.int64).reshape(self.shape[:3] + (1, 1, 1))
        self.thread_linear = np.arange(self.threads_per_block, dtype=np.int64).reshape(
            (1, 1, 1) + self.shape[3:]
        )
        self.lanes = LaneSpace(self.shape, self.block_linear * self.threads_per_block + self.thread_linear)
        self.phase = np.zeros(self.block_count, dtype=np.int64)
        if check_races:
            self.shared_tracker = SharedMemoryTracker(
                self.block_count, self.threads_per_block, self.describe_block, self.describe_thread
            )
            self.phase = self.shared_tracker.phase
            self.write_tracker = WriteTracker(
                RaceAxes(
                    (self.block_count, self.threads_per_block),
                    self._epochs,
                    self.describe_lane,
                    "with no barrier between them (threads of different blocks, or of one block "
                    "in one barrier phase)",
                )
            )

    # Indices -----------------------------------------------------------------------------------

    def thread_index(self, dimension: int) -> np.ndarray:
        """threadIdx.x/y/z (`dimension` 0/1/2) as an index lane array."""
        axis = _LANE_AXES - 1 - dimension
        shape = [1] * _LANE_AXES
        shape[axis] = self.shape[axis]
        return np.arange(self.shape[axis], dtype=np.int64).reshape(shape)

    def block_index(self, dimension: int) -> np.ndarray:
        axis = 2 - dimension
        shape = [1] * _LANE_AXES
        shape[axis] = self.shape[axis]
        return np.arange(self.shape[axis], dtype=np.int64).reshape(shape)

    def describe_thread(self, thread: int) -> str:
        z, y, x = np.unravel_index(thread, self.shape[3:])
        return f"thread ({x}, {y}, {z})"

    def describe_block(self, block: int) -> str:
        z, y, x = np.unravel_index(block, self.shape[:3])
        return f"block ({x}, {y}, {z})"

    def describe_lane(self, lane: int) -> str:
        block, thread = divmod(lane, self.threads_per_block)
        return f"{self.describe_thread(thread)} of {self.describe_block(block)}"

    def _epochs(self, lanes: np.ndarray) -> list[np.ndarray]:
        return [np.zeros_like(lanes), self.phase[lanes // self.threads_per_block]]

    # Level interface ---------------------------------------------------------------------------

    def allocation_scope(self, lanes: LaneSpace, memory_space: int) -> tuple[int, np.ndarray]:
        if memory_space == SHARED_MEMORY_SPACE:
            return self.block_count, self.block_linear
        return super().allocation_scope(lanes, memory_space)

    def block_and_thread(self, lane_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return lane_ids // self.threads_per_block, lane_ids % self.threads_per_block

    # Synchronization ---------------------------------------------------------------------------

    def barrier(self, mask: Mask, op: Operation) -> None:
        """All threads of a block wait here; ends the block's phase for the race checks."""
        reached = np.ones(self.shape, dtype=bool) if mask is None else np.broadcast_to(mask, self.shape)
        reached = reached.reshape(self.block_count, self.threads_per_block)
        if self.shared_tracker is not None:
            self.shared_tracker.barrier(reached, op)
            return
        counts = reached.sum(axis=1)
        partial = np.nonzero((counts > 0) & (counts < self.threads_per_block))[0]
        if partial.size:
            block = int(partial[0])
            raise BarrierDivergence(
                f"barrier reached by only {int(counts[block])} of {self.threads_per_block} threads of "
                f"{self.describe_block(block)}",
                op,
            )
        self.phase[counts == self.threads_per_block] += 1

    def shuffle(self, value: np.ndarray, mode: str, offset: np.ndarray, clamp: object) -> np.ndarray:
        """PTX `shfl.sync.mode`: each lane reads `value` of another lane of its warp."""
        value = np.asarray(value)
        full = np.broadcast_to(value, self.shape).reshape(self.block_count, self.threads_per_block)
        offsets = np.broadcast_to(np.asarray(offset, dtype=np.int64), self.shape).reshape(full.shape)
        clamp_value = np.broadcast_to(np.asarray(clamp, dtype=np.int64), self.shape).reshape(full.shape)
        thread = np.arange(self.threads_per_block, dtype=np.int64)[None, :]
        lane = thread % WARP_SIZE
        highest = clamp_value & 0x1F
        segment = (clamp_value >> 8) & 0x1F
        lowest = lane & segment
        highest = lowest | (highest & ~segment)
        if mode == "up":
            source = lane - offsets
            valid = source >= highest
        elif mode == "down":
            source = lane + offsets
            valid = source <= highest
        elif mode == "bfly":
            source = lane ^ offsets
            valid = source <= highest
        elif mode == "idx":
            source = lowest | (offsets & ~segment)
            valid = source <= highest
        else:
            raise InterpreterError(f"unknown shuffle mode '{mode}'")
        source_thread = thread - lane + np.where(valid, source, lane)
        source_thread = np.where(source_thread < self.threads_per_block, source_thread, thread)
        result = np.take_along_axis(full, source_thread, axis=1)
        return result.reshape(self.shape)

    def special_register(self, name: str) -> np.ndarray:
        """NVVM's `%tid.x`, `%ntid.x`, `%ctaid.x`, `%nctaid.x`, `%laneid`, `%warpsize` (as i32)."""
        if name in ("laneid", "warpsize"):
            value = self.thread_linear % WARP_SIZE if name == "laneid" else np.asarray(WARP_SIZE)
            return np.asarray(value, dtype=np.int32)
        register, _, dimension_name = name.partition(".")
        dimension = "xyz".index(dimension_name) if dimension_name in ("x", "y", "z") else -1
        if dimension < 0:
            raise InterpreterError(f"unknown special register '%{name}'")
        values = {
            "tid": lambda: self.thread_index(dimension),
            "ntid": lambda: np.asarray(self.block[dimension]),
            "ctaid": lambda: self.block_index(dimension),
            "nctaid": lambda: np.asarray(self.grid[dimension]),
        }
        if register not in values:
            raise InterpreterError(f"unknown special register '%{name}'")
        return np.asarray(values[register](), dtype=np.int32)


def run_grid(
    machine: Machine,
    body: Region,
    arguments: Sequence[object],
    grid: Sequence[int],
    block: Sequence[int],
    check_races: bool | None = None,
) -> None:
    """Runs a kernel body (of `mlc_gpu.func` or `llvm.func`) on a grid of thread blocks."""
    level = GridLevel(grid, block, machine.check_races if check_races is None else check_races)
    launch(machine, body, arguments, level.lanes, level)


def grid_level(level: Level, op: Operation) -> GridLevel:
    """The running `GridLevel`, or an error naming `op` when it runs outside a GPU launch."""
    if not isinstance(level, GridLevel):
        raise InterpreterError(f"'{op.name}' can only run inside a kernel launched on a grid of threads", op)
    return level
