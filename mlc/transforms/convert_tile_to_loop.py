"""convert-tile-to-loop: distribute each tile over the threads of a block, coalesced and vectorised.

Every `tile.kernel` becomes a `loop.kernel` whose grid is a nest of block-mapped parallel loops
and whose program is a thread-mapped parallel loop; every `tile.launch` becomes a `loop.launch`.

Layout. All tiles a kernel computes and stores share one shape S. The tile's elements, in
row-major order, are cut into *chunks* of V contiguous elements along the last dimension, where V
is the largest power of two that fits `vector-bytes` (16) for the widest element type of the
kernel and divides S's last dimension. Chunk c goes to thread `c mod T` in repetition `c div T`
(T = 32 * num_warps, fewer when the tile has fewer chunks). Consecutive threads therefore touch
consecutive V-element pieces of memory: each warp reads or writes one contiguous span per
repetition (coalesced), and each thread moves its V elements with one vector access (16 bytes
for f32 and f16). This is Triton's blocked layout with sizePerThread = [1, ..., V].

Per thread, one repetition is generated once inside an `scf.for` over the repetitions: uniform
index code from the tile kernel is cloned before it; each tile value becomes V scalars
(broadcast tiles a single scalar), `tile.map` bodies are cloned once per element.

Masks and vectors. The loads and stores of a chunk are emitted by `chunk_access.py`: a range and
divisibility analysis of the tile origins (`index_analysis.py`) proves most accesses in bounds
(no mask) and aligned (one 16-byte vector access); the rest are guarded, and partial chunks fall
back to scalar accesses. The kernel records in `mlc.arg_alignment` the alignment each parameter
then needs (the runtime checks it).

Limits: tiles of several shapes in one kernel (other than broadcast operands) and tile ops other
than load, store, broadcast, splat and map are reported as unsupported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, ModuleOp, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from mlc.diagnostics import PassFailure
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.chunk_access import ChunkAccesses, Emitter, emit_if
from mlc.transforms.index_analysis import IndexFacts, facts_of

BLOCK_MAPPINGS = ("block.x", "block.y", "block.z")


@dataclass(frozen=True)
class ThreadLayout:
    """How the elements of a tile of `shape` are spread over threads (see the module docstring)."""

    shape: tuple[int, ...]
    vector: int
    threads: int

    @staticmethod
    def choose(shape: tuple[int, ...], num_warps: int, max_vector: int) -> ThreadLayout:
        vector_width = 1
        while vector_width * 2 <= max_vector and shape[-1] % (vector_width * 2) == 0:
            vector_width *= 2
        chunks = _product(shape) // vector_width
        return ThreadLayout(shape, vector_width, min(32 * num_warps, chunks))

    @property
    def chunks(self) -> int:
        return _product(self.shape) // self.vector

    @property
    def repetitions(self) -> int:
        return -(-self.chunks // self.threads)

    @property
    def chunks_per_row(self) -> int:
        return self.shape[-1] // self.vector


def _product(values: Sequence[int]) -> int:
    result = 1
    for value in values:
        result *= value
    return result


@dataclass
class KernelLowering:
    kernel: tile.KernelOp
    vector_bytes: int
    layout: ThreadLayout = field(init=False)
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    elements: dict[SSAValue, list[SSAValue]] = field(default_factory=dict)
    facts_cache: dict[SSAValue, IndexFacts] = field(default_factory=dict)
    seeds: dict[SSAValue, IndexFacts] = field(default_factory=dict)
    alignment: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        shapes: set[tuple[int, ...]] = set()
        for op in self.kernel.walk():
            if isinstance(op, tile.StoreOp):
                shapes.add(op.value.type.get_shape())  # type: ignore[attr-defined]
            elif isinstance(op, tile.MapOp):
                shapes.add(op.tile_shape())
        if len(shapes) > 1:
            raise PassFailure(self.kernel, "tiles of several shapes in one kernel are not supported yet")
        if not shapes:
            raise PassFailure(self.kernel, "the kernel stores no tile")
        widest = max(byte_width(t.element_type) for t in self.kernel.function_type.inputs.data)  # type: ignore[attr-defined]
        num_warps = self.kernel.num_warps.value.data if self.kernel.num_warps is not None else 4
        self.layout = ThreadLayout.choose(next(iter(shapes)), num_warps, max(1, self.vector_bytes // widest))
        for index, argument in enumerate(self.kernel.body.block.args):
            self.alignment[index] = byte_width(argument.type.element_type)  # type: ignore[attr-defined]

    def lower(self) -> loop.KernelOp:
        argument_types = list(self.kernel.function_type.inputs.data)
        result = loop.KernelOp(self.kernel.sym_name.data, argument_types)
        for old, new in zip(self.kernel.body.block.args, result.body.block.args):
            new.name_hint = old.name_hint
            self.values[old] = new
        bodies = self._grid_loops(result.body.block)
        thread_loop = loop.ParallelOp(self.layout.threads, "thread.x", Region(Block(arg_types=[IndexType()])))
        thread_loop.body.block.args[0].name_hint = "thread"
        Emitter(bodies[-1]).builder.insert(thread_loop)
        self._thread_body(thread_loop.body.block)
        for body in (thread_loop.body.block, *bodies):
            body.add_op(loop.YieldOp())
        result.body.block.add_op(loop.ReturnOp())
        result.attributes["mlc.arg_alignment"] = DenseArrayBase.from_list(
            i64, [self.alignment[i] for i in range(len(argument_types))]
        )
        return result

    def _grid_loops(self, block: Block) -> list[Block]:
        """One block-mapped loop per grid dimension; returns their bodies, outermost first."""
        grid = self.kernel.grid_shape()
        program_ids = [op for op in self.kernel.walk() if isinstance(op, tile.ProgramIdOp)]
        bodies = []
        for axis, size in enumerate(grid):
            parallel = loop.ParallelOp(size, BLOCK_MAPPINGS[axis], Region(Block(arg_types=[IndexType()])))
            induction = parallel.body.block.args[0]
            induction.name_hint = "program" if len(grid) == 1 else f"program{axis}"
            Emitter(block).builder.insert(parallel)
            for program_id in program_ids:
                if program_id.axis.value.data == axis:
                    self.values[program_id.result] = induction
                    self.seeds[program_id.result] = IndexFacts.range(0, size - 1)
            block = parallel.body.block
            bodies.append(block)
        return bodies

    def _thread_body(self, block: Block) -> None:
        emitter = Emitter(block)
        thread = block.args[0]
        for op in self.kernel.body.block.ops:
            if not _is_tile_op(op) and not isinstance(op, tile.ProgramIdOp | tile.ReturnOp):
                self._clone_uniform(op, emitter)
        layout = self.layout
        if layout.repetitions == 1:
            self._chunk(emitter, thread)
            return
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = "repetition"
        chunk_emitter = Emitter(body)
        start = chunk_emitter.emit(arith.MuliOp(body.args[0], chunk_emitter.index(layout.threads)))
        chunk = chunk_emitter.add(start, thread)
        if layout.chunks % layout.threads:
            inside = chunk_emitter.below(chunk, layout.chunks)
            emit_if(chunk_emitter, inside, [], lambda e: self._chunk(e, chunk) or [], None)
        else:
            self._chunk(chunk_emitter, chunk)
        body.add_op(scf.YieldOp())
        emitter.builder.insert(scf.ForOp(emitter.index(0), emitter.index(layout.repetitions), emitter.index(1), [], body))

    def _clone_uniform(self, op: Operation, emitter: Emitter) -> None:
        if any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)) or op.regions:
            raise PassFailure(op, "convert-tile-to-loop cannot lower this op inside a tile kernel")
        clone = op.clone(value_mapper=self.values)
        emitter.builder.insert(clone)
        for old, new in zip(op.results, clone.results):
            self.values[old] = new

    def _chunk(self, emitter: Emitter, chunk: SSAValue) -> None:
        """Generates the work of one chunk: coordinates, then every tile op in order."""
        self.elements = {}
        self.coordinates = self._chunk_coordinates(emitter, chunk)
        self.accesses = ChunkAccesses(
            self.layout.shape,
            self.layout.vector,
            self.coordinates,
            lambda value: facts_of(value, self.seeds, self.facts_cache),
            self._require_alignment,
        )
        for op in self.kernel.body.block.ops:
            if isinstance(op, tile.StoreOp):
                self._store(emitter, op)
            elif isinstance(op, tile.MapOp):
                self._map(emitter, op)
            elif _is_tile_op(op) and not isinstance(
                op, tile.LoadOp | tile.BroadcastOp | tile.SplatOp | tile.ProgramIdOp | tile.ReturnOp
            ):
                raise PassFailure(op, "convert-tile-to-loop cannot lower this tile op yet")

    def _chunk_coordinates(self, emitter: Emitter, chunk: SSAValue) -> list[SSAValue]:
        """The position of the chunk's first element in the tile, one index per dimension."""
        shape, layout = self.layout.shape, self.layout
        coordinates: list[SSAValue] = [chunk] * len(shape)
        remaining = chunk
        per_row = layout.chunks_per_row
        if per_row == 1:
            coordinates[-1] = emitter.index(0)
        else:
            column = remaining if len(shape) == 1 else emitter.emit(arith.RemUIOp(remaining, emitter.index(per_row)))
            coordinates[-1] = emitter.emit(arith.MuliOp(column, emitter.index(layout.vector))) if layout.vector > 1 else column
            if len(shape) > 1:
                remaining = emitter.emit(arith.DivUIOp(remaining, emitter.index(per_row)))
        for dim in reversed(range(len(shape) - 1)):
            if shape[dim] == 1:
                coordinates[dim] = emitter.index(0)
            elif dim == 0:
                coordinates[dim] = remaining
            else:
                coordinates[dim] = emitter.emit(arith.RemUIOp(remaining, emitter.index(shape[dim])))
                remaining = emitter.emit(arith.DivUIOp(remaining, emitter.index(shape[dim])))
        return coordinates

    # -- tile values as per-chunk scalars ---------------------------------------------------

    def materialize(self, emitter: Emitter, value: SSAValue) -> list[SSAValue]:
        """The chunk's elements of a tile value: V scalars, or one when constant along the chunk."""
        if value in self.elements:
            return self.elements[value]
        owner = value.owner
        if isinstance(owner, tile.LoadOp):
            result = self._load(emitter, owner)
        elif isinstance(owner, tile.BroadcastOp):
            result = self.materialize(emitter, owner.source)
        elif isinstance(owner, tile.SplatOp):
            result = [self.values[owner.value]]
        elif isinstance(owner, tile.MapOp):
            self._map(emitter, owner)
            result = self.elements[value]
        else:
            raise PassFailure(owner if isinstance(owner, Operation) else self.kernel, "unsupported tile value")
        self.elements[value] = result
        return result

    def _map(self, emitter: Emitter, op: tile.MapOp) -> None:
        if op.outputs[0] in self.elements:
            return
        inputs = [self.materialize(emitter, value) for value in op.inputs]
        count = max([len(elements) for elements in inputs], default=1)
        results: list[list[SSAValue]] = [[] for _ in op.outputs]
        for position in range(count):
            mapping: dict[SSAValue, SSAValue] = dict(self.values)
            for argument, elements in zip(op.body.block.args, inputs):
                mapping[argument] = elements[position if len(elements) > 1 else 0]
            for body_op in op.body.block.ops:
                if isinstance(body_op, tile.YieldOp):
                    for index, yielded in enumerate(body_op.values):
                        results[index].append(mapping.get(yielded, yielded))
                    continue
                clone = body_op.clone(value_mapper=mapping)
                emitter.builder.insert(clone)
                mapping.update(zip(body_op.results, clone.results))
        for output, elements in zip(op.outputs, results):
            self.elements[output] = elements

    # -- memory accesses (see chunk_access.py) -----------------------------------------------------

    def _require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        for index, argument in enumerate(self.kernel.body.block.args):
            if self.values.get(argument) is memref_value:
                self.alignment[index] = max(self.alignment[index], alignment)

    def _origin(self, indices: Sequence[SSAValue]) -> list[tuple[SSAValue, SSAValue]]:
        return [(self.values[index], index) for index in indices]

    def _load(self, emitter: Emitter, op: tile.LoadOp) -> list[SSAValue]:
        tile_type = op.result.type
        assert isinstance(tile_type, tile.TileType)
        return self.accesses.load(
            emitter, self.values[op.source], self._origin(op.indices), tile_type.get_shape(), op.padding
        )

    def _store(self, emitter: Emitter, op: tile.StoreOp) -> None:
        tile_type = op.value.type
        assert isinstance(tile_type, tile.TileType)
        elements = self.materialize(emitter, op.value)
        self.accesses.store(emitter, elements, self.values[op.dest], self._origin(op.indices), tile_type.get_shape())


def _is_tile_op(op: Operation) -> bool:
    return op.dialect_name() == "tile"


@dataclass(frozen=True)
class ConvertTileToLoop(ModulePass):
    """Distribute tile kernels over blocks and threads as coalesced, vectorised loop nests."""

    name = "convert-tile-to-loop"

    vector_bytes: int = 16

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.vector_bytes < 1:
            raise ValueError("vector-bytes must be positive")
        for kernel in [k for k in op.walk() if isinstance(k, tile.KernelOp)]:
            lowered = KernelLowering(kernel, self.vector_bytes).lower()
            kernel.parent_block().insert_op_before(lowered, kernel)  # type: ignore[union-attr]
            kernel.detach()
            kernel.erase(safe_erase=False)
        for launch in [l for l in op.walk() if isinstance(l, tile.LaunchOp)]:
            replacement = loop.LaunchOp(launch.kernel, launch.arguments)
            launch.parent_block().insert_op_before(replacement, launch)  # type: ignore[union-attr]
            launch.detach()
            launch.erase()
