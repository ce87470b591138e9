"""convert-tile-rows-to-cpu: row-wise and column-wise tile kernels become loops of host-width vectors on the CPU.

The CPU pipeline runs this pass just before `convert-tile-to-loop`, whose GPU-shaped layout (a
block of threads, 4-element chunks each, reductions across threads) leaves LLVM 4-wide code and
trees of scalars on the CPU. Every *row kernel* (`row_kernel_shape.row_kernel_refusal`: tiles of one
2-d shape [R, C] and its broadcasts, maps of f32 arithmetic, reductions along the rows with
addf/maximumf/minimumf/mulf, loads and stores: softmax, layer norm, RMS norm, elementwise chains)
becomes a `loop.kernel` that runs a program's rows one after another, each as column loops over
chunks of W f32 lanes, reductions carrying U vector accumulators (`rows_cpu.py` has the layout).
Every *column kernel* (`columns_cpu.column_kernel_refusal`: the same ops, reductions over one
axis that is not the last: sums, maxima, means over axis 0) becomes row loops over the program's
strip of columns, one accumulator vector per chunk of W columns and row in flight, whose results
are the column results themselves (`columns_cpu.py`). Their `tile.launch`es become
`loop.launch`es. Other kernels are left for `convert-tile-to-loop`.

Options: `vector-width=W` (a power of two; by default the host's: 16 with AVX-512, 8 with
AVX/AVX2, 4 otherwise, from llvmlite's host CPU features) and `accumulators=U` (a power of two,
default 4: a row kernel's accumulators per reduction; a column kernel carries
`columns_cpu.ACCUMULATOR_VECTORS` in all), `prefetch-bytes=B` and `store-prefetch-bytes=S` (how
far ahead a row kernel's streaming loads and its stores prefetch, 0 for none; by default the
host's, `cpu_prefetch.host_prefetch_distances`: none for an elementwise kernel on AMD Zen cores,
`STREAMING_PREFETCH_BYTES` otherwise) and `interleaved-rows=R` (how many of a program's rows each
column loop of a row kernel computes at once, their accumulators and per-row values side by side;
cut to the program's rows, which it need not divide; default 1, `rows_cpu.DEFAULT_INTERLEAVED_ROWS`
says why), `nontemporal-stores=auto|on|off` (whether a row kernel's result stores are
non-temporal, `mlc.cpu_store_kind`; auto: where the kernel's parameters hold more bytes than
`cpu_prefetch.NONTEMPORAL_CACHE_MULTIPLE` times the host's last-level cache, on x86 hosts;
`rows_cpu.py`'s Non-temporal stores says which stores). The loop kernel records W and U as
`mlc.cpu_vector_width` / `mlc.cpu_accumulators` (cut to the row; a column kernel's U is its rows
in flight), and a row kernel R as `mlc.cpu_interleaved_rows` and B and S as `mlc.cpu_prefetch_bytes` / `mlc.cpu_store_prefetch_bytes`
(each streaming vector access carries its own distance as `mlc.cpu_prefetch_bytes`, for
convert-vector-to-llvm's prefetches); the same attributes on a tile kernel override the options
for it.

Exactness: loads, maps and stores compute what the tile interpreter computes, element by element;
a reduction combines the same elements in another order (the dialect leaves it open), which for a
sum is within the bound of any f32 summation order (`error_bounds.py`); max, min are exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.columns_cpu import column_kernel_refusal, lower_cpu_column_kernel
from mlc.transforms.lowering.cpu_micro_kernel import host_vector_width
from mlc.transforms.lowering.cpu_prefetch import STORE_KINDS, PrefetchDistances, host_prefetch_distances, store_kind
from mlc.transforms.lowering.row_kernel_shape import row_kernel_refusal
from mlc.transforms.lowering.rows_cpu import DEFAULT_ACCUMULATORS, DEFAULT_INTERLEAVED_ROWS, lower_cpu_row_kernel
from mlc.transforms.lowering.tile_kernel_lowering import is_power_of_two


def _streamed_bytes(kernel: tile.KernelOp) -> int:
    """The bytes of the kernel's memref parameters (its inputs and results), which it streams."""
    total = 0
    for argument in kernel.body.block.args:
        if isinstance(argument.type, MemRefType) and all(size >= 0 for size in argument.type.get_shape()):
            total += math.prod(argument.type.get_shape()) * byte_width(argument.type.element_type)
    return total


@dataclass(frozen=True)
class ConvertTileRowsToCpu(ModulePass):
    """Lower row-wise and column-wise tile kernels (reductions, normalisations, elementwise
    chains) to CPU loops of host vectors."""

    name = "convert-tile-rows-to-cpu"

    vector_width: int = 0
    """f32 lanes per vector (0: the host's)."""
    accumulators: int = DEFAULT_ACCUMULATORS
    """Vector accumulators per reduction."""
    prefetch_bytes: int | None = None
    """How far ahead a row kernel's streaming loads prefetch (0: none; None: the host's)."""
    store_prefetch_bytes: int | None = None
    """How far ahead a row kernel's stores prefetch (0: none; None: the host's)."""
    interleaved_rows: int = DEFAULT_INTERLEAVED_ROWS
    """Rows of a program each column loop of a row kernel computes at once."""
    nontemporal_stores: str = "auto"
    """Whether row kernels store their results non-temporally: auto (by the host's cache), on, off."""

    def __post_init__(self) -> None:
        for option, value in (("vector-width", self.vector_width or 1), ("accumulators", self.accumulators)):
            if not is_power_of_two(value):
                raise ValueError(f"{option} must be a power of two, got {value}")
        for option, value in (("prefetch-bytes", self.prefetch_bytes), ("store-prefetch-bytes", self.store_prefetch_bytes)):
            if value is not None and value < 0:
                raise ValueError(f"{option} must not be negative, got {value}")
        if self.nontemporal_stores not in STORE_KINDS:
            raise ValueError(f"nontemporal-stores must be one of {', '.join(STORE_KINDS)}, got {self.nontemporal_stores!r}")
        if self.interleaved_rows < 1:
            raise ValueError(f"interleaved-rows must be positive, got {self.interleaved_rows}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        width = self.vector_width or host_vector_width()
        lowered: set[str] = set()
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            if row_kernel_refusal(kernel) is None:
                replacement = lower_cpu_row_kernel(
                    kernel, width, self.accumulators, self._prefetch(kernel), self.interleaved_rows, store_kind(self.nontemporal_stores, _streamed_bytes(kernel))
                )
            elif column_kernel_refusal(kernel) is None:
                replacement = lower_cpu_column_kernel(kernel, width)
            else:
                continue
            Rewriter.replace_op(kernel, replacement, safe_erase=False)
            lowered.add(kernel.sym_name.data)
        for launch in [l for l in op.walk() if isinstance(l, tile.LaunchOp) and l.kernel.root_reference.data in lowered]:
            Rewriter.replace_op(launch, loop.LaunchOp(launch.kernel, launch.arguments))

    def _prefetch(self, kernel: tile.KernelOp) -> PrefetchDistances:
        """The options' distances, the host's (`host_prefetch_distances`) where an option is unset."""
        host = host_prefetch_distances(any(isinstance(op, tile.ReduceOp) for op in kernel.walk()))
        return PrefetchDistances(
            host.loads if self.prefetch_bytes is None else self.prefetch_bytes,
            host.stores if self.store_prefetch_bytes is None else self.store_prefetch_bytes,
        )
