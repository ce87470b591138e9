"""The CPU matmul's register micro-kernel: MR x NR outputs in vectors of W f32 lanes (`CpuMicroKernel`).

What: `host_vector_width` reads W from llvmlite's host CPU features (16 with AVX-512, 8 with AVX
or AVX2, 4 otherwise), `default_micro_kernel` gives (MR, NR, W) = (8, 2W, W): 16 accumulators of
32 `zmm` registers with AVX-512, enough independent FMA chains to hide the latency and few enough
to stay in registers; `CpuMicroKernel.choose` cuts the requested one to the block.
`matmul_cpu.py`'s module docstring says how the lowering uses it (`mlc.cpu_micro_kernel`).

Preconditions (`check`): block, MR, NR and W powers of two, NR a multiple of W. Limits: W is the
compiling host's, as llvmlite reports its CPU features.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import binding

from mlc.diagnostics import PassFailure
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.tile_kernel_lowering import is_power_of_two


PACKED_ALIGNMENT = 64
"""Byte alignment of a packed panel (a cache line, an AVX-512 register)."""


DEFAULT_MICRO_KERNEL_ROWS = 8


DEFAULT_MICRO_KERNEL_VECTORS = 2
"""MR and NR / W of the default micro-kernel: 8 rows of two host vectors (8 x 32 with AVX-512)."""


def host_vector_width() -> int:
    """f32 lanes of the host's widest vector registers, from llvmlite's host CPU features."""
    try:
        features = binding.get_host_cpu_features()
    except RuntimeError:  # LLVM cannot tell: the SSE baseline of x86-64
        return 4
    if features.get("avx512f"):
        return 16
    if features.get("avx") or features.get("avx2"):
        return 8
    return 4


def default_micro_kernel() -> tuple[int, int, int]:
    """(MR, NR, W) for the host: 8 rows of two host vectors."""
    width = host_vector_width()
    return DEFAULT_MICRO_KERNEL_ROWS, DEFAULT_MICRO_KERNEL_VECTORS * width, width


@dataclass(frozen=True)
class CpuMicroKernel:
    """How a program's block is cut into register micro-tiles (see the module docstring)."""

    shape: tuple[int, ...]
    rows: int
    """MR: rows of a micro-tile."""
    columns: int
    """NR: columns of a micro-tile, in NR / W vectors."""
    chunk: int
    """W: lanes of one vector (f32)."""

    @staticmethod
    def choose(shape: tuple[int, ...], rows: int, columns: int, width: int) -> CpuMicroKernel:
        """The requested micro-kernel, cut to the block (small blocks get smaller micro-tiles)."""
        block_rows, block_columns = shape[-2:]
        width = min(width, block_columns)
        return CpuMicroKernel(shape, min(rows, block_rows), min(columns, block_columns), width)

    @property
    def chunk_columns(self) -> int:
        return self.chunk

    @property
    def buffer_alignment(self) -> int:
        """The alignment of a vector access to a row-major buffer of micro-tile rows (a packed panel,
        the scratch accumulators): every row and vector starts on a multiple of W f32 lanes."""
        return min(PACKED_ALIGNMENT, self.chunk * 4)

    @property
    def vectors(self) -> int:
        return self.columns // self.chunk

    @property
    def row_tiles(self) -> int:
        return self.shape[-2] // self.rows

    @property
    def threads(self) -> int:
        return self.row_tiles * (self.shape[-1] // self.columns)

    def check(self, kernel: tile.KernelOp) -> None:
        sizes = (*self.shape[-2:], self.rows, self.columns, self.chunk)
        if not all(is_power_of_two(size) for size in sizes):
            raise PassFailure(kernel, f"block {self.shape[-2]}x{self.shape[-1]} and micro-kernel {self.rows}x{self.columns} of {self.chunk} lanes must be powers of two")
        if self.columns % self.chunk:
            raise PassFailure(kernel, f"micro-kernel columns {self.columns} must be a multiple of its vector width {self.chunk}")
