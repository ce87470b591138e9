"""The `mlc.*` attributes: decisions that one pass writes into the IR and another reads.

mlc keeps its decisions in the IR (tile shapes, thread layouts, memory plans, what was staged in
shared memory and why), so that every stage can be printed, edited and resumed. The attributes
that carry them across pass boundaries are declared here, once each: the name, the form of its
value, what it means, who writes it and who reads it. `DeclaredAttribute.read(op)` is how a reader
gets one: a value of the wrong form (a hand edit, a stale pass) is a `PassFailure` naming the op,
the attribute and the form it needs, never a crash or a silent misreading. The check is where the
attribute is read, not at every verification, so that a pass may overwrite a stale value (graph-
plan-memory replaces an old plan). `malformed(op)` lists the declared attributes of the wrong form
in a whole module (the tests check every stage of the pipelines with it). Attributes outside this
table (`mlc.note`, ...) are left to their users.

The README's architecture section lists the table (`ATTRIBUTES`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation

from mlc.errors import PassFailure

Check = Callable[[Attribute], bool]


@dataclass(frozen=True)
class DeclaredAttribute:
    """One `mlc.*` attribute: its name, the form of its value and its contract."""

    name: str
    form: str
    """The form its value must have, as MLIR prints it (for people and for messages)."""
    meaning: str
    written_by: str
    read_by: str
    check: Check

    def read(self, op: Operation) -> Attribute | None:
        """The attribute of `op`, checked; None when `op` has none."""
        value = op.attributes.get(self.name)
        if value is not None and not self.check(value):
            raise PassFailure(op, f"'{self.name}' must be {self.form}, got {value}")
        return value

    def integers(self, op: Operation) -> tuple[int, ...] | None:
        """The values of an `array<i64: ...>` attribute of `op`, checked; None when absent."""
        value = self.read(op)
        return None if value is None else tuple(value.get_values())  # type: ignore[attr-defined]

    def write(self, op: Operation, value: Attribute) -> None:
        assert self.check(value), f"{self.name} written as {value}, not {self.form}"
        op.attributes[self.name] = value


def _i64_array(length: int | None = None, powers_of_two: bool = False) -> Check:
    def check(value: Attribute) -> bool:
        if not isinstance(value, DenseArrayBase) or value.elt_type != i64:
            return False
        values = value.get_values()
        if length is not None and len(values) != length:
            return False
        return all(v > 0 and (not powers_of_two or v & (v - 1) == 0) for v in values)

    return check


def _shifts(value: Attribute) -> bool:
    """An `array<i64>` of non-negative values, the first 0."""
    if not isinstance(value, DenseArrayBase) or value.elt_type != i64:
        return False
    values = value.get_values()
    return bool(values) and values[0] == 0 and all(v >= 0 for v in values)


def _unit(value: Attribute) -> bool:
    return isinstance(value, UnitAttr)


def _string(value: Attribute) -> bool:
    return isinstance(value, StringAttr)


def _strings(value: Attribute) -> bool:
    return isinstance(value, ArrayAttr) and all(isinstance(v, StringAttr) for v in value.data)


def _positive_integer(value: Attribute) -> bool:
    return isinstance(value, IntegerAttr) and value.value.data > 0


def _integer_dictionary(*keys: str) -> Check:
    def check(value: Attribute) -> bool:
        if not isinstance(value, DictionaryAttr) or set(value.data) != set(keys):
            return False
        return all(isinstance(v, IntegerAttr) and v.value.data >= 0 for v in value.data.values())

    return check


_BUFFER_ENTRY = _integer_dictionary("offset", "size")


def _buffer(value: Attribute) -> bool:
    def entry(item: Attribute) -> bool:
        return isinstance(item, DictionaryAttr) and (not item.data or _BUFFER_ENTRY(item))

    return entry(value) or (isinstance(value, ArrayAttr) and all(entry(item) for item in value.data))


ARG_ALIGNMENT = DeclaredAttribute(
    "mlc.arg_alignment",
    "array<i64: ...>, one power of two per kernel parameter",
    "the alignment in bytes each kernel parameter's pointer needs (its vector accesses)",
    "convert-tile-to-loop, loop-promote-shared (raises it for 16-byte copies)",
    "the runtime (checks the caller's pointers), convert-loop-to-*/-gpu-to-nvvm (carry it on)",
    _i64_array(powers_of_two=True),
)
BUFFER = DeclaredAttribute(
    "mlc.buffer",
    "{offset = N : i64, size = N : i64} (or {} outside the arena), an array of them for several results",
    "where a top-level graph op's result lives in its function's arena",
    "graph-plan-memory",
    "convert-graph-to-tile (the host code's arena offsets)",
    _buffer,
)
MEMORY_PLAN = DeclaredAttribute(
    "mlc.memory_plan",
    "{arena_bytes, unplanned_bytes, buffers, alignment} of i64",
    "a graph function's arena: its size (the peak of the intermediates), the unplanned total",
    "graph-plan-memory (removed by graph-fuse and graph-inline-fusion, which regroup)",
    "convert-graph-to-tile, people (graph-plan-memory{report})",
    _integer_dictionary("arena_bytes", "unplanned_bytes", "buffers", "alignment"),
)
MATMUL_TILE = DeclaredAttribute(
    "mlc.matmul_tile",
    "array<i64: BM, BN, BK> of powers of two",
    "the block of a matmul kernel: rows, columns and the K step of one program",
    "convert-graph-to-tile (its heuristic or matmul-tile=...)",
    "people (the tile types carry the same block to convert-tile-to-loop)",
    _i64_array(3, powers_of_two=True),
)
IMPLICIT_GEMM = DeclaredAttribute(
    "mlc.implicit_gemm",
    "array<i64: s_0, ..., s_T-1> (s_0 = 0, none negative)",
    "a matmul whose lhs is read in place as row-shifted blocks of one 2-D value (a convolution's "
    "implicit GEMM): K piece t of the lhs is the value's rows shifted down by s_t",
    "graph-fuse (on the graph.fusion holding the layout ops and the matmul), convert-graph-to-tile "
    "(on the tile.kernel)",
    "people (convert-graph-to-tile reads the fusion's layout ops themselves)",
    _shifts,
)
OPERAND_MAJOR = DeclaredAttribute(
    "mlc.operand_major",
    '["m" | "k", "k" | "n"] (lhs, rhs)',
    "the dimension contiguous in memory of a matmul's lhs and rhs as its kernel reads them: a "
    "transposed operand (graph.transpose of the last two dimensions) is read in its stored layout, "
    '"m" for a transposed lhs, "k" for a transposed rhs (wgmma\'s K-major B)',
    "graph-fuse (on the graph.fusion holding the transposes and the matmul), convert-graph-to-tile "
    "(on the tile.kernel)",
    "people (convert-graph-to-tile reads the fusion's transposes themselves)",
    lambda value: _strings(value)
    and len(value.data) == 2  # type: ignore[attr-defined]
    and value.data[0].data in ("m", "k")  # type: ignore[attr-defined]
    and value.data[1].data in ("k", "n"),  # type: ignore[attr-defined]
)
SWAP_OPERANDS = DeclaredAttribute(
    "mlc.swap_operands",
    "unit",
    "a TF32 matmul C = A B with a row-major B computed transposed, C^T = B^T A^T: its kernel's dot "
    "reads B's stored K x N block as the lhs (M-major, which Hopper's wgmma takes from registers) and "
    "A's M x K block as a K-major rhs, and stores the transposed accumulator (tile.scatter)",
    "graph-transpose-tf32-rhs{wgmma=true} (on the graph.matmul), convert-graph-to-tile (on the tile.kernel), "
    "convert-tile-to-loop{wgmma=true} (on the loop.kernel)",
    "convert-graph-to-tile (the kernel's roles), people",
    lambda value: isinstance(value, UnitAttr),
)
TRANSPOSE_BLOCK = DeclaredAttribute(
    "mlc.transpose_block",
    "a positive i64 (a power of two)",
    "the side T of the square block a shared-memory transpose kernel moves per program",
    "convert-graph-to-tile (GPU target, a lone transpose of the last two dimensions)",
    "convert-tile-to-loop (the staging buffer and the threads' share of the block)",
    lambda value: _positive_integer(value) and value.value.data & (value.value.data - 1) == 0,  # type: ignore[attr-defined]
)
MICRO_TILE = DeclaredAttribute(
    "mlc.micro_tile",
    "array<i64: rows, columns>",
    "the register tile of outputs each thread of a matmul kernel computes",
    "convert-tile-to-loop (or a person, on the tile.kernel, to override its choice)",
    "convert-tile-to-loop (an override on the tile.kernel)",
    _i64_array(2),
)
WARP_TILE = DeclaredAttribute(
    "mlc.warp_tile",
    "array<i64: rows, columns>",
    "the block of outputs one warp of a matmul kernel computes",
    "convert-tile-to-loop",
    "people",
    _i64_array(2),
)
CPU_MICRO_KERNEL = DeclaredAttribute(
    "mlc.cpu_micro_kernel",
    "array<i64: MR, NR, W> of powers of two",
    "a CPU matmul kernel's register micro-tile: MR x NR outputs held in vectors of W f32 lanes",
    "convert-tile-dot-to-cpu (its option, the host's vector width; or a person, on the tile.kernel)",
    "convert-tile-dot-to-cpu (an override on the tile.kernel), people",
    _i64_array(3, powers_of_two=True),
)
CPU_PACKED = DeclaredAttribute(
    "mlc.cpu_packed",
    'an array of strings ("rhs")',
    "the operands a CPU matmul kernel copies into contiguous panels before its micro-kernels",
    "convert-tile-dot-to-cpu",
    "people",
    _strings,
)
CPU_VECTOR_WIDTH = DeclaredAttribute(
    "mlc.cpu_vector_width",
    "a positive i64 (a power of two)",
    "the f32 lanes of the vectors a CPU row or column kernel (reductions, normalisations, elementwise chains) computes its columns in",
    "convert-tile-rows-to-cpu (its option, the host's vector width; or a person, on the tile.kernel)",
    "convert-tile-rows-to-cpu (an override on the tile.kernel), people",
    _positive_integer,
)
CPU_PREFETCH_BYTES = DeclaredAttribute(
    "mlc.cpu_prefetch_bytes",
    "a non-negative i64 (0: none)",
    "how far ahead, in bytes, a vector load or store prefetches its stream (x86 prefetcht0 / prefetchw), on each "
    "vector.load / vector.store it applies to (a CPU row kernel's loads of a row's first loop to read an operand, "
    "its whole-chunk stores); on a loop.kernel or tile.kernel, the distance of its loads "
    "(`mlc.cpu_store_prefetch_bytes` is its stores'; on a tile.kernel without that, of its stores too)",
    "convert-tile-rows-to-cpu (its prefetch-bytes option; or a person, on the tile.kernel)",
    "convert-tile-rows-to-cpu (an override on the tile.kernel), convert-vector-to-llvm (the accesses'), people",
    lambda value: isinstance(value, IntegerAttr) and value.value.data >= 0,
)
CPU_STORE_PREFETCH_BYTES = DeclaredAttribute(
    "mlc.cpu_store_prefetch_bytes",
    "a non-negative i64 (0: none)",
    "how far ahead, in bytes, a CPU row kernel's whole-chunk vector stores prefetch (prefetchw) their output: on "
    "the loop.kernel (each store carries it as its `mlc.cpu_prefetch_bytes`)",
    "convert-tile-rows-to-cpu (its store-prefetch-bytes option; or a person, on the tile.kernel)",
    "convert-tile-rows-to-cpu (an override on the tile.kernel), people",
    lambda value: isinstance(value, IntegerAttr) and value.value.data >= 0,
)
CPU_INTERLEAVED_ROWS = DeclaredAttribute(
    "mlc.cpu_interleaved_rows",
    "a positive i64",
    "the rows of a program that each column loop of a CPU row kernel computes at once (their chunks, accumulators and "
    "per-row values side by side, so that one row's reduction tails overlap the others'); the rows it does not divide "
    "run one at a time after them",
    "convert-tile-rows-to-cpu (its interleaved-rows option, 1 by default; or a person, on the tile.kernel)",
    "convert-tile-rows-to-cpu (an override on the tile.kernel), people",
    _positive_integer,
)
CPU_STORE_KIND = DeclaredAttribute(
    "mlc.cpu_store_kind",
    '"nontemporal" or "ordinary"',
    "how a CPU row kernel writes its results: \"nontemporal\" marks its whole-chunk vector stores to its parameters "
    "`nontemporal` (x86 streaming stores, which skip the read-for-ownership of each output line and leave no line in "
    "the caches: for streams larger than the last-level cache), \"ordinary\" leaves them plain",
    "convert-tile-rows-to-cpu (its nontemporal-stores option, auto: from the kernel's bytes and the host's "
    "last-level cache; or a person, on the tile.kernel)",
    "convert-tile-rows-to-cpu (an override on the tile.kernel), people",
    lambda value: isinstance(value, StringAttr) and value.data in ("nontemporal", "ordinary"),
)
CPU_ACCUMULATORS = DeclaredAttribute(
    "mlc.cpu_accumulators",
    "a positive i64 (a power of two)",
    "the vector accumulators each reduction of a CPU row kernel carries through its column loop; in a column kernel, the rows each iteration of its row loops reads (one accumulator vector per row and chunk of columns)",
    "convert-tile-rows-to-cpu (its option; or a person, on the tile.kernel)",
    "convert-tile-rows-to-cpu (an override on the tile.kernel), people",
    _positive_integer,
)
MMA = DeclaredAttribute(
    "mlc.mma",
    "array<i64: M, N, K>",
    "a matmul or attention-chain kernel whose products run on tensor cores: the shape of one warp's loop.mma_sync step (16, 8, 16; 16, 8, 8 for TF32)",
    "convert-tile-to-loop{tensor-cores=true}",
    "people (the loop.mma_sync ops carry the decision to the GPU lowering)",
    _i64_array(3),
)
WARP_GRID = DeclaredAttribute(
    "mlc.warp_grid",
    "array<i64: rows, columns>",
    "how the warps of a tensor-core matmul kernel tile its block (each one a mlc.warp_tile); of a chain kernel, [BM / warp_rows, 1] (mlc.chain_plan's warp_rows, 16 by default)",
    "convert-tile-to-loop{tensor-cores=true}",
    "people",
    _i64_array(2),
)
WGMMA = DeclaredAttribute(
    "mlc.wgmma",
    "array<i64: M, N, K>",
    "a matmul kernel whose products run on Hopper tensor cores: the shape of one warpgroup's "
    "wgmma.mma_async (64, N, 16; 64, N, 8 for TF32: its loop.wgmma ops issue K-step / K of them)",
    "convert-tile-to-loop{wgmma=true}",
    "people (the loop.wgmma ops carry the decision to the GPU lowering)",
    _i64_array(3),
)
SWIZZLE = DeclaredAttribute(
    "mlc.swizzle",
    "a positive i64",
    "a shared allocation stored in wgmma's swizzled layout: the swizzle span in bytes (128): columns "
    "in blocks of 64 16-bit elements, each block row-major, 16-byte chunks of row r XORed with r mod 8",
    "loop-promote-shared (for buffers loop.wgmma reads)",
    "convert-gpu-to-nvvm (addresses of async copies, wgmma matrix descriptors, 1024-byte alignment)",
    _positive_integer,
)
REQUIRED_ARCH = DeclaredAttribute(
    "mlc.required_arch",
    "a string",
    "an NVVM kernel that needs a particular PTX target (\"sm_90a\": wgmma)",
    "convert-gpu-to-nvvm",
    "the NVPTX back end (builds sm_90a for an sm_90 device, refuses other targets)",
    _string,
)
PIPELINE_STAGES = DeclaredAttribute(
    "mlc.pipeline_stages",
    "a positive i64",
    "how many shared buffers each per-iteration copy of a loop kernel gets: 2 or more pipeline "
    "async copies (cp.async) that many iterations deep, 1 copies through registers",
    "convert-tile-to-loop{tensor-cores=true} (copied from the tile.kernel when set there, a tuner's knob)",
    "loop-promote-shared (fewer where they do not fit in shared memory)",
    _positive_integer,
)
TMA = DeclaredAttribute(
    "mlc.tma",
    "a unit attribute",
    "a loop kernel of warpgroup products whose operands are staged by bulk tensor copies (TMA) "
    "completing on mbarriers instead of cp.async, where the operand allows (opt-in)",
    "loop-promote-shared{tma=true} (mlc-lower-to-gpu{arch=sm_90 tma=true}) on each wgmma kernel, or by hand",
    "loop-promote-shared (tma_pipeline.py; cp.async where a box or an operand cannot be one bulk copy)",
    _unit,
)
WARP_ROLES = DeclaredAttribute(
    "mlc.warp_roles",
    "array<i64: producer registers, consumer registers> (each 0, or a multiple of 8 in 24..256)",
    "an scf.if splitting a kernel's threads into warp roles that synchronize only through mbarriers: "
    "its then-region is the producer (the threads where the condition holds: they issue the bulk "
    "copies), its else-region the consumers; the numbers are each role's register count "
    "(setmaxnreg; 0 keeps the allocation)",
    "loop-promote-shared{tma=true warp-specialize=true} (warp_specialization.py: 40 and at most 232), or by hand",
    "the interpreter (runs the two regions as coroutines that hand over at mbarrier waits), "
    "convert-gpu-to-nvvm (setmaxnreg.dec / .inc first in each region)",
    lambda value: _i64_array(2)(value) and all(count == 0 or (24 <= count <= 256 and count % 8 == 0) for count in value.get_values()),  # type: ignore[attr-defined]
)
OPERAND = DeclaredAttribute(
    "mlc.operand",
    'a string ("a" or "b")',
    "which matmul operand a load reads",
    "convert-tile-to-loop",
    "loop-promote-shared (stages the marked reads of an mlc.mma kernel whatever their reuse; elsewhere it finds reuse from the indices)",
    _string,
)
DOT = DeclaredAttribute(
    "mlc.dot",
    "array<i64: rows, columns>",
    "an scf.for of K steps that accumulates a thread's micro-tile",
    "convert-tile-to-loop",
    "people",
    _i64_array(2),
)
UNROLL = DeclaredAttribute(
    "mlc.unroll",
    "a unit attribute",
    "an scf.for with constant bounds to unroll completely",
    "convert-tile-to-loop (a matmul's K steps)",
    "loop-unroll",
    _unit,
)
UNROLL_BY = DeclaredAttribute(
    "mlc.unroll_by",
    "a positive i64",
    "an scf.for with a constant start, end and step to unroll by N: a loop of N copies of the body "
    "per iteration, then the iterations left over (fewer than N) as copies after it",
    "loop-unroll (around a loop.wgmma with mlc.a_register_sets = N), people",
    "loop-unroll",
    _positive_integer,
)
A_REGISTER_SETS = DeclaredAttribute(
    "mlc.a_register_sets",
    "a positive i64",
    "a loop.wgmma whose A the GPU lowering loads into registers (f32, A M-major): its K loop runs N "
    "copies of it an iteration (loop-unroll), so the A registers a product reads are rewritten N "
    "steps later, and the loads wait only until N - 1 product groups are in flight, not 0 (1: no "
    "copies; the loads wait for every product)",
    "convert-tile-to-loop{wgmma=true} (2, on a TF32 product with an M-major A), loop-unroll (1 where "
    "it cannot unroll the loop)",
    "loop-unroll, convert-gpu-to-nvvm",
    _positive_integer,
)
PROMOTED = DeclaredAttribute(
    "mlc.promoted",
    "a string",
    "a shared-memory copy of a global buffer, and why it was made (box, reads, reuse, padding)",
    "loop-promote-shared, loop-double-buffer (the second copy)",
    "loop-double-buffer (which allocations it may double), people",
    _string,
)
DOUBLE_BUFFERED = DeclaredAttribute(
    "mlc.double_buffered",
    "an array of strings",
    "a loop over pairs of iterations, the named shared copies doubled",
    "loop-double-buffer",
    "people",
    _strings,
)
BLOCK_SYNCHRONOUS = DeclaredAttribute(
    "mlc.block_synchronous",
    "a unit attribute",
    "a GPU kernel whose shared-memory statements are ordered block-wide, barriers not yet placed",
    "convert-loop-to-gpu",
    "gpu-insert-barriers (places them, then removes it), convert-gpu-to-nvvm (refuses it), the interpreter",
    _unit,
)
STAGED_EPILOGUE = DeclaredAttribute(
    "mlc.staged_epilogue",
    "array<i64: rows, columns, padded columns>",
    "a warpgroup-product kernel stores its tile through shared memory: each warp's 16-row band "
    "`rows` x `columns` a round (16 / rows x W / columns rounds of its W = mlc.warp_tile columns; a "
    "row padded to `padded columns`) written in fragment layout, then stored 16 bytes a lane",
    "loop-stage-epilogue",
    "people",
    _i64_array(3),
)
EPILOGUE_STAGING = DeclaredAttribute(
    "mlc.epilogue_staging",
    "unit",
    "the shared buffer through which a kernel's epilogue stores its tile (mlc.staged_epilogue)",
    "loop-stage-epilogue",
    "people",
    _unit,
)
TILE_GROUP = DeclaredAttribute(
    "mlc.tile_group",
    "a positive i64",
    "the kernel's 2-D grid runs in grouped order: G row blocks (block.x) at a time down every column block",
    "loop-group-tiles",
    "people",
    _positive_integer,
)
PERSISTENT_TILES = DeclaredAttribute(
    "mlc.persistent_tiles",
    "a positive i64",
    "the kernel runs a persistent grid of P blocks, each looping over the tiles b, b + P, ... (in the "
    "launch order the grid had); its producer's stage and phase counters run on across tiles",
    "loop-persistent-tiles",
    "people",
    _positive_integer,
)
MIN_BLOCKS_PER_MULTIPROCESSOR = DeclaredAttribute(
    "mlc.min_blocks_per_multiprocessor",
    "a positive i64",
    "how many blocks of the kernel should fit one multiprocessor at once (PTX .minnctapersm)",
    "loop-double-buffer, loop-promote-shared{warp-specialize=true} (1: ptxas honours setmaxnreg only then)",
    "convert-gpu-to-nvvm",
    _positive_integer,
)
DYNAMIC_SHARED_BYTES = DeclaredAttribute(
    "mlc.dynamic_shared_bytes",
    "a positive i64",
    "a GPU kernel whose shared memory (over 48 KiB) is dynamic: the bytes each block needs; also on "
    "its external `[0 x i8]` shared global",
    "convert-gpu-to-nvvm",
    "the runtime (the launch's dynamic shared memory), the interpreter (the global's size)",
    _positive_integer,
)
def _tensor_maps(value: Attribute) -> bool:
    """An array of `array<i64: source, swizzle, box...>`: a parameter index >= 0, a swizzle span
    of 0/32/64/128 bytes and at least one positive box size."""

    def entry(item: Attribute) -> bool:
        if not isinstance(item, DenseArrayBase) or item.elt_type != i64:
            return False
        values = item.get_values()
        return len(values) >= 3 and values[0] >= 0 and values[1] in (0, 32, 64, 128) and all(v > 0 for v in values[2:])

    return isinstance(value, ArrayAttr) and all(entry(item) for item in value.data)


TENSOR_MAPS = DeclaredAttribute(
    "mlc.tensor_maps",
    "[array<i64: source, swizzle, box...>, ...]",
    "a GPU kernel that reads operands with bulk tensor copies (TMA): one trailing pointer parameter "
    "per entry, after the launched buffers, holds the tensor map of buffer parameter `source` (its "
    "shape and element type) with that box (outermost first) and swizzle span in bytes",
    "convert-gpu-to-nvvm (the kernel's `loop.tma_load`s: one map per source, swizzle and box); hand-built TMA kernels (bench/tma_matmul.py)",
    "the runtime (encodes each map once per operand pointer into device memory: runtime/tensor_maps.py)",
    _tensor_maps,
)
def _tensor_map_views(value: Attribute) -> bool:
    """An array of `array<i64: extents...>`, each extent positive."""
    return isinstance(value, ArrayAttr) and all(
        isinstance(item, DenseArrayBase) and item.elt_type == i64 and len(item.get_values()) >= 1 and all(v > 0 for v in item.get_values())
        for item in value.data
    )


TENSOR_MAP_VIEWS = DeclaredAttribute(
    "mlc.tensor_map_views",
    "[array<i64: extents...>, ...]",
    "beside `mlc.tensor_maps`, one per entry: the shape in which the kernel reads its source buffer "
    "(rank of the box), a row-major view of the buffer launched (an implicit GEMM's padded NHWC input "
    "read as [pixels, channels], a transformer's O [S, B, H, d] read as [S*B, H*d])",
    "convert-gpu-to-nvvm (the memref type of each `loop.tma_load`'s source)",
    "the runtime (each map's geometry: the view's extents over the buffer's elements)",
    _tensor_map_views,
)
KERNEL = DeclaredAttribute(
    "mlc.kernel",
    "a unit attribute",
    "an llvm.func that is a CPU kernel (an entry point the runtime calls)",
    "convert-loop-to-cpu",
    "the backend (keeps it external), the runtime",
    _unit,
)
CPU_PROGRAMS = DeclaredAttribute(
    "mlc.cpu_programs",
    "a positive i64",
    "a CPU kernel whose grid may be split over threads: its N programs are independent, and "
    "`@<kernel>__programs(pointers..., first, last)` runs programs [first, last) (the kernel runs all N)",
    "convert-loop-to-cpu (absent: the kernel is too small to gain from threads)",
    "the runtime (splits the programs over its worker threads)",
    _positive_integer,
)
CPU_ROW_SPLITS = DeclaredAttribute(
    "mlc.cpu_row_splits",
    "an i64 >= 2",
    "a partial reduction over row blocks: a long f32 reduction over a non-last axis split into P "
    "blocks of rows (this op, over the block's rows) whose P partial results a second reduction combines",
    "graph-split-column-reductions (CPU pipeline; where the row blocks fit SPLIT_BLOCK_BYTES)",
    "people (the split is in the graph itself; graph-split-column-reductions leaves an op that has it alone)",
    lambda value: isinstance(value, IntegerAttr) and value.value.data >= 2,
)
TUNED = DeclaredAttribute(
    "mlc.tuned",
    'a string ("pass.option=value ...")',
    "a module compiled with a configuration from the tuning database: the pass options it set",
    "mlc.compile (from mlc-tune's database, `mlc/tuning/workload.py`)",
    "people (the options themselves are in the compile's pipeline)",
    _string,
)


def _chain_plan(value: Attribute) -> bool:
    if not isinstance(value, DictionaryAttr) or set(value.data) - {"fast_math", "warp_rows", "products"} != {"order", *_CHAIN_PLAN_NUMBERS}:
        return False
    products = value.data.get("products")
    if products is not None and not (isinstance(products, StringAttr) and products.data in ("wgmma", "mma_sync")):
        return False
    if "fast_math" in value.data and not isinstance(value.data["fast_math"], UnitAttr):
        return False
    warp_rows = value.data.get("warp_rows")
    if warp_rows is not None and not (isinstance(warp_rows, IntegerAttr) and warp_rows.value.data in (16, 32)):
        return False
    order = value.data["order"]
    numbers = [value.data[key] for key in _CHAIN_PLAN_NUMBERS]
    return (
        isinstance(order, StringAttr) and order.data in ("rows-outer", "keys-outer")
        and all(isinstance(v, IntegerAttr) and v.value.data > 0 for v in numbers)
    )


_CHAIN_PLAN_NUMBERS = ("block_rows", "block_keys", "fused_bytes", "separate_bytes", "on_chip_bytes")

CHAIN = DeclaredAttribute(
    "mlc.chain",
    '"attention" or "matmul"',
    "a GEMM chain fused into one kernel (attention: matmul, scale/mask, softmax, matmul with an online "
    "softmax; matmul: matmul, elementwise, matmul, graph-fuse's opt-in matmul-chains)",
    "graph-fuse (on the graph.fusion), convert-graph-to-tile (on the tile.kernel), convert-tile-to-loop "
    "(on the loop.kernel of a tensor-core chain)",
    "convert-graph-to-tile (builds the chain's kernel), convert-tile-to-loop (lowers it), loop-promote-shared "
    "(stages the key loop's operands per iteration)",
    lambda value: isinstance(value, StringAttr) and value.data in ("attention", "matmul"),
)
CHAIN_PLAN = DeclaredAttribute(
    "mlc.chain_plan",
    '{order = "rows-outer"|"keys-outer", block_rows, block_keys, fused_bytes, separate_bytes, on_chip_bytes} (i64)'
    ", optional fast_math (unit), optional warp_rows (16 or 32), optional products (\"wgmma\" or \"mma_sync\")",
    "the data-movement model's choice for a chain: block order and sizes, bytes moved fused and as "
    "separate kernels, the blocks' on-chip footprint; fast_math: the kernel may skip the graph's per-op "
    "roundings of the scores and use exp2 (graph-fuse's opt-in fast-math, or a mlc.fused_attention "
    "product); warp_rows: the query rows each warp of the tensor-core kernel owns (default 16); products: "
    '"wgmma" asks for warpgroup products (FlashAttention-3 style, chain_wgmma.py) where the target has them '
    '(convert-tile-to-loop{wgmma=true}), "mma_sync" (the default) for mma.sync warps',
    "graph-fuse (analysis/attention_cost.py), copied by convert-graph-to-tile onto the kernel",
    "convert-graph-to-tile (the block sizes), convert-tile-to-loop (warp_rows, products), people",
    _chain_plan,
)
FUSED_ATTENTION = DeclaredAttribute(
    "mlc.fused_attention",
    "unit",
    "the scores product of an attention imported from PyTorch's scaled_dot_product_attention (or its "
    "fused kernels), which computes the scores in f32 and exponentiates with exp2: its chain may do the same "
    "(fast_math in the chain plan)",
    "the torch frontend (neural.py)",
    "graph-fuse",
    lambda value: isinstance(value, UnitAttr),
)
CHAIN_FALLBACK = DeclaredAttribute(
    "mlc.chain_fallback",
    "a string",
    "why an attention chain ending at this matmul was left to separate kernels",
    "graph-fuse",
    "people",
    _string,
)

ATTRIBUTES: tuple[DeclaredAttribute, ...] = (
    CHAIN,
    CHAIN_PLAN,
    FUSED_ATTENTION,
    CHAIN_FALLBACK,
    TUNED,
    ARG_ALIGNMENT,
    BUFFER,
    MEMORY_PLAN,
    MATMUL_TILE,
    IMPLICIT_GEMM,
    OPERAND_MAJOR,
    SWAP_OPERANDS,
    TRANSPOSE_BLOCK,
    MICRO_TILE,
    WARP_TILE,
    CPU_MICRO_KERNEL,
    CPU_PACKED,
    CPU_VECTOR_WIDTH,
    CPU_PREFETCH_BYTES,
    CPU_STORE_PREFETCH_BYTES,
    CPU_ACCUMULATORS,
    CPU_INTERLEAVED_ROWS,
    CPU_STORE_KIND,
    MMA,
    WARP_GRID,
    WGMMA,
    PIPELINE_STAGES,
    OPERAND,
    DOT,
    UNROLL,
    UNROLL_BY,
    A_REGISTER_SETS,
    TMA,
    WARP_ROLES,
    PROMOTED,
    DOUBLE_BUFFERED,
    SWIZZLE,
    BLOCK_SYNCHRONOUS,
    MIN_BLOCKS_PER_MULTIPROCESSOR,
    TILE_GROUP,
    PERSISTENT_TILES,
    STAGED_EPILOGUE,
    EPILOGUE_STAGING,
    DYNAMIC_SHARED_BYTES,
    TENSOR_MAP_VIEWS,
    TENSOR_MAPS,
    REQUIRED_ARCH,
    KERNEL,
    CPU_PROGRAMS,
)
"""Every declared attribute, in the order of the pipeline that writes them."""

BY_NAME = {attribute.name: attribute for attribute in ATTRIBUTES}


def malformed(op: Operation) -> Iterator[tuple[Operation, str]]:
    """(op, message) for each declared attribute of `op` or the ops inside it that has the wrong form."""
    for inner in op.walk():
        for name, value in inner.attributes.items():
            declared = BY_NAME.get(name)
            if declared is not None and not declared.check(value):
                yield inner, f"'{name}' must be {declared.form}, got {value}"

