"""How the threads of a block share a dot's output tile: `MicroTileLayout` (TM x TN micro-tiles).

What: each thread accumulates a TM x TN micro-tile of the BM x BN block (E = BM * BN /
(32 * num_warps) outputs: TN the power of two nearest sqrt(E) from above, TM = E / TN, each cut to
the block; `MicroTileLayout.choose`); the 32 lanes of a warp take an LM x LN piece of the grid of
threads (LN = 8 where it is that wide), so a warp owns a warp tile of LM * TM by LN * TN outputs.
A thread's columns come in chunks of 4 contiguous ones (one 16-byte f32 vector). `matmul_loop.py`'s
module docstring says why (coalesced reads, 16-byte shared reads of A).

Preconditions (`check`): power-of-two block and micro-tile sizes, the micro-tile within the
block. Limits: at most `loop.MAX_THREADS_PER_BLOCK` threads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlc.diagnostics import PassFailure
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.tile_kernel_lowering import is_power_of_two


@dataclass(frozen=True)
class MicroTileLayout:
    """How the threads of a block share an output tile of `shape` (see the module docstring)."""

    shape: tuple[int, ...]
    rows: int
    """TM: micro-tile rows per thread."""
    columns: int
    """TN: micro-tile columns per thread, in chunks of `chunk` contiguous ones."""
    chunk: int = 4
    """SN: contiguous columns per chunk (one 16-byte vector of f32)."""

    @staticmethod
    def choose(shape: tuple[int, ...], num_warps: int) -> MicroTileLayout:
        block_rows, block_columns = shape[-2:]
        per_thread = max(1, block_rows * block_columns // (32 * num_warps))
        columns = min(block_columns, 1 << -(-(per_thread.bit_length() - 1) // 2))
        rows = min(block_rows, max(1, per_thread // columns))
        columns = min(block_columns, max(1, per_thread // rows))
        return MicroTileLayout(shape, rows, columns)

    @property
    def chunk_columns(self) -> int:
        return min(self.chunk, self.columns)

    @property
    def chunk_rows(self) -> int:
        """SM: contiguous rows per chunk of a thread's rows."""
        return min(self.chunk, self.rows)

    @property
    def thread_rows(self) -> int:
        return self.shape[-2] // self.rows

    @property
    def thread_columns(self) -> int:
        return self.shape[-1] // self.columns

    @property
    def threads(self) -> int:
        return self.thread_rows * self.thread_columns

    @property
    def lanes(self) -> tuple[int, int]:
        """LM x LN: how the (up to) 32 threads of a warp tile the warp's part of the block."""
        lane_columns = min(self.thread_columns, 8)
        lane_rows = min(self.thread_rows, max(1, 32 // lane_columns))
        while lane_rows * lane_columns < 32 and lane_columns < self.thread_columns:
            lane_columns *= 2
        return lane_rows, lane_columns

    @property
    def warp_tile(self) -> tuple[int, int]:
        """The outputs one warp computes: LM * TM rows by LN * TN columns."""
        lane_rows, lane_columns = self.lanes
        return lane_rows * self.rows, lane_columns * self.columns

    def check(self, kernel: tile.KernelOp) -> None:
        block_rows, block_columns = self.shape[-2:]
        if not (is_power_of_two(block_rows) and is_power_of_two(block_columns)):
            raise PassFailure(kernel, f"a dot's output tile must have power-of-two rows and columns, got {block_rows}x{block_columns}")
        if not (is_power_of_two(self.rows) and is_power_of_two(self.columns)) or self.rows > block_rows or self.columns > block_columns:
            raise PassFailure(
                kernel, f"micro-tile {self.rows}x{self.columns} must be powers of two within the {block_rows}x{block_columns} block"
            )
        if self.threads > loop.MAX_THREADS_PER_BLOCK:
            raise PassFailure(kernel, f"micro-tile {self.rows}x{self.columns} needs {self.threads} threads per block; at most {loop.MAX_THREADS_PER_BLOCK} are possible")
