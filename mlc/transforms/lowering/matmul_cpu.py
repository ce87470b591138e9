"""Tile kernels with `tile.dot`, lowered to loops for the CPU: register micro-kernels of host vectors.

`convert-tile-dot-to-cpu` hands every `tile.kernel` holding a `tile.dot` to `lower_cpu_dot_kernel`.

Blocking (the loop order of the Goto/BLIS macro-kernel). A program computes its BM x BN output
block (the tile level's block, `matmul_blocks.cpu_tile`: the grid over programs is the
outer cache blocking, and the runtime splits the programs over worker threads). Within the block,
an unmapped `loop.parallel` (a plain loop on the CPU) runs over *panels* of NR columns; each panel
first copies its rhs rows (all of K, rounded up to the K step, masked elements as the load's
padding) into a contiguous f32 buffer (`memref.alloca`, 64-byte aligned; `mlc.cpu_packed =
["rhs"]`), then a second loop runs over the panel's *micro-tiles* of MR x NR outputs, rows
fastest, all reading the packed panel, which stays in L2 (in place, a panel of a matrix whose
rows are a power-of-two bytes long falls into a few cache sets and is read from memory: 1024^3 ran
in 40 ms unpacked against 18 ms packed on one Xeon thread). The A rows are read in place (a
block's rows are contiguous).

Micro-kernel. A micro-tile keeps its MR x NR accumulators in MR * NR / W vectors of W f32 lanes (W
the host's vector width: 16 with AVX-512, 8 with AVX2, 4 otherwise), enough independent chains to
hide the FMA latency and few enough to stay in the register file: 8 x 32 with AVX-512 is 16
accumulators of 32 `zmm` registers. The choice is recorded on the loop kernel as
`mlc.cpu_micro_kernel = array<i64: MR, NR, W>`; the same attribute on the tile kernel (or the
pass option) overrides it (`CpuMicroKernel.choose` cuts it to the block).

The K loop. The tile level's `scf.for` over K carries the accumulator tile; here it carries the
micro-tile's vectors. Each `tile.dot` of BK steps becomes an `scf.for` over its K steps (`mlc.dot`),
`STEPS_PER_ITERATION` (4) steps to an iteration where no step needs masks (LLVM left the loop of
one step as it was, 16 FMAs an iteration; 4 steps ran 2048^3 6% faster and compile in 0.21 s,
the full unrolling of loop-unroll 3x slower to compile for little more), a step loading NR / W
vectors of the packed panel and MR lhs elements (scalars, broadcast to vectors) and issuing
MR * NR / W `vector.fma`s, in increasing K: each output is the same chain of fused
multiply-adds as in the interpreter, so the lowering is exact.

The epilogue (bias, activation, residual, the stores). When everything after the K loop is maps
and stores of its results and of loads (the kernels `matmul_kernel.py` builds), the accumulators
are stored to a scratch buffer and the epilogue runs in a loop over the micro-tile's rows and
vectors of W columns, lowered once for a 1 x W chunk by `matmul_loop.py`'s `DotKernelLowering`
(which this lowering extends): a map of vector ops on the chunk's vector (`vector_maps.py`: bias,
ReLU, a GELU's erf or tanh polynomial as one vector op each: a 1024^3 MLP block's exact GELU
went from ~3.5 ms to ~0.5 ms of its time on one Xeon thread), other maps on scalars per element,
loads and stores through `chunk_access.py` (bounds checks where the index analysis cannot prove
them, W-lane vector accesses where aligned).
So the epilogue's code is that of W outputs, not MR x NR (a GELU's expanded tanh over 8 x 32
outputs took a 1024^3 MLP block 48 s to compile). Otherwise the epilogue is unrolled over the
micro-tile's scalars. A tile value carried in vectors is extracted to scalars the first time a
scalar op needs it; LLVM folds the extracts back where the scalars are only stored.

Alignment. Vector accesses of kernel parameters state at most `ASSUMED_ALIGNMENT` (16 bytes), the
alignment numpy gives, so that the runtime need not copy arguments to 64-byte boundaries.

Limits: those of `matmul_loop.py` (one output shape, batch dimensions of size 1 per program); MR,
NR, W powers of two dividing the block; the rhs is packed only when the kernel has one dot, in a
K loop from 0 at the top level, whose rhs is a plain `tile.load` at (K counter, indices from before
the loop), and the panel fits `MAX_PACKED_BYTES` (a longer K, e.g. > 4096 for NR = 32, reads the
rhs in place); the lhs is never packed (edge rows are masked in the K loop); no K blocking (KC),
so the packed panel is L2-, not L1-resident.

The micro-kernel's shape is `cpu_micro_kernel.py`'s; the vector helpers the CPU lowerings share
(alignment capping, plain loops, `pack_vector`) are `cpu_vector_code.py`'s.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    VectorType,
    f32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.cpu_micro_kernel import PACKED_ALIGNMENT, CpuMicroKernel
from mlc.transforms.lowering.cpu_vector_code import ASSUMED_ALIGNMENT, cap_vector_alignment, pack_vector, unmapped_loop
from mlc.transforms.lowering.vector_maps import vector_body, vector_map_refusal
from mlc.transforms.lowering.dot_operands import (
    OperandRead,
    _shape,
    k_step_body,
    operand_read,
    output_shape,
)
from mlc.transforms.lowering.matmul_loop import DotKernelLowering, Fragment
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering


MAX_PACKED_BYTES = 1 << 19
"""The largest packed rhs panel (K x NR f32), a stack allocation of each worker thread; a longer K
reads the rhs in place."""

STEPS_PER_ITERATION = 4
"""K steps per iteration of a dot's loop where they need no masks (LLVM does not unroll a loop of
this size by itself)."""


class VectorRows(list[list[SSAValue]]):
    """A micro-tile held as vectors: MR rows of NR / W vectors of W f32 lanes."""


class CpuDotKernelLowering(DotKernelLowering):
    """Lowers one tile kernel with dots to CPU micro-kernels (see the module docstring)."""

    def __init__(self, kernel: tile.KernelOp, vector_bytes: int, micro_kernel: Sequence[int]):
        self.requested = tuple(micro_kernel)
        super().__init__(kernel, vector_bytes)

    def __post_init__(self) -> None:
        TileKernelLowering.__post_init__(self)
        override = attributes.CPU_MICRO_KERNEL.integers(self.kernel)
        rows, columns, width = (int(v) for v in override) if override is not None else self.requested
        self.layout = CpuMicroKernel.choose(output_shape(self.kernel), rows, columns, width)  # type: ignore[assignment]
        self.layout.check(self.kernel)

    @property
    def layout_alignment(self) -> int:
        return self.layout.buffer_alignment

    def require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        super().require_alignment(memref_value, min(alignment, ASSUMED_ALIGNMENT))

    def lower(self) -> loop.KernelOp:
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        layout = self.layout
        panels = unmapped_loop(layout.shape[-1] // layout.columns, "panel")
        bodies[-1].add_op(panels)
        panel_emitter = Emitter(panels.body.block)
        column = panel_emitter.emit(arith.MuliOp(panels.body.block.args[0], panel_emitter.index(layout.columns)))
        column.name_hint = "column"
        self.packed = self._pack_rhs(panel_emitter, column)
        row_tiles = unmapped_loop(layout.row_tiles, "row_tile")
        panel_emitter.builder.insert(row_tiles)
        emitter = Emitter(row_tiles.body.block)
        self._start_micro_tile(emitter, row_tiles.body.block.args[0], column)
        self._lower_block(emitter, self.kernel.body.block)
        self.finish_kernel(result, [row_tiles.body.block, panels.body.block, *bodies])
        cap_vector_alignment(result)
        attributes.CPU_MICRO_KERNEL.write(result, DenseArrayBase.from_list(i64, [layout.rows, layout.columns, layout.chunk]))
        attributes.CPU_PACKED.write(result, ArrayAttr([StringAttr("rhs")] if self.packed is not None else []))
        return result

    def _start_micro_tile(self, emitter: Emitter, row_tile: SSAValue, column: SSAValue) -> None:
        """The micro-tile's rows and vector columns, one chunk access per (row, vector)."""
        layout = self.layout
        row = emitter.emit(arith.MuliOp(row_tile, emitter.index(layout.rows)))
        row.name_hint = "row"
        self.zero = emitter.index(0)
        self.row_indices = [emitter.add(row, emitter.index(i)) if i else row for i in range(layout.rows)]
        self.column_indices = [
            emitter.add(column, emitter.index(v * layout.chunk)) if v else column for v in range(layout.vectors)
        ]
        batch = [self.zero] * (len(layout.shape) - 2)
        self.rows = [
            [self._accesses(layout.shape, layout.chunk, [*batch, row_index, column_index]) for column_index in self.column_indices]
            for row_index in self.row_indices
        ]

    # -- packing the rhs panel ----------------------------------------------------------------------

    def _pack_rhs(self, emitter: Emitter, column: SSAValue) -> PackedPanel | None:
        """Copies the panel's rhs (all K rows, NR columns from `column`) into a contiguous f32
        buffer, masked elements as the load's padding; None where the kernel is not of the form
        packing supports (see `_packable`)."""
        found = self._packable()
        if found is None:
            return None
        dot, rhs, k_loop, steps = found
        load = rhs.load
        self.seed_induction_variable(k_loop)
        layout = self.layout
        for op in self.kernel.body.block.ops:  # the uniform code the panel's origin depends on
            if op is k_loop:
                break
            if _is_uniform_scalar(op):
                clone = op.clone(value_mapper=self.values)
                emitter.builder.insert(clone)
                self.values.update(zip(op.results, clone.results))
        depth = _shape(dot.rhs)[-2]
        buffer_type = MemRefType(f32, [steps * depth, layout.columns])
        buffer = emitter.emit(memref.AllocaOp.get(f32, PACKED_ALIGNMENT, buffer_type.get_shape()))
        buffer.name_hint = "packed_rhs"
        induction = k_loop.body.block.args[0]
        outer = Block(arg_types=[IndexType()])
        outer.args[0].name_hint = "k"
        inner = Block(arg_types=[IndexType()])
        inner.args[0].name_hint = "kk"
        copy = Emitter(inner)
        origin = [(outer.args[0] if index is induction else self.values[index], index) for index in load.indices]
        batch = [copy.index(0)] * (len(_shape(load.result)) - 2)
        row = copy.add(outer.args[0], inner.args[0])
        for v in range(layout.vectors):
            start = copy.add(column, copy.index(v * layout.chunk)) if v else column
            loaded = self._widen(copy, self.operand_elements(copy, rhs, _shape(dot.rhs), layout.chunk, [*batch, inner.args[0], start], origin))
            store = vector.StoreOp(pack_vector(copy, loaded), buffer, [row, copy.index(v * layout.chunk)])
            store.attributes["alignment"] = IntegerAttr(self.layout_alignment, i64)
            copy.builder.insert(store)
        copy.builder.insert(scf.YieldOp())
        rows = Emitter(outer)
        rows.builder.insert(scf.ForOp(rows.index(0), rows.index(depth), rows.index(1), [], Region(inner)))
        rows.builder.insert(scf.YieldOp())
        size = emitter.index(steps * depth)
        emitter.builder.insert(scf.ForOp(emitter.index(0), size, emitter.index(depth), [], Region(outer)))
        return PackedPanel(dot, buffer, induction)

    def _packable(self) -> tuple[tile.DotOp, OperandRead, scf.ForOp, int] | None:
        """(the dot, how its rhs is read, the K loop, its trip count) when the kernel has one dot, in
        an `scf.for` from 0 with constant bounds at the kernel's top level, whose rhs is a `tile.load`
        (not broadcast, or transposed: the K counter is then its column index) at (K loop counter,
        indices from before the loop) and whose packed panel fits `MAX_PACKED_BYTES`."""
        dots = [op for op in self.kernel.walk() if isinstance(op, tile.DotOp)]
        if len(dots) != 1:
            return None
        (dot,) = dots
        k_loop = dot.parent_op()
        owner = dot.rhs.owner
        if isinstance(owner, tile.TransposeOp) and isinstance(owner.source.owner, tile.LoadOp):
            rhs = OperandRead(owner.source.owner, transposed=True)
        elif isinstance(owner, tile.LoadOp):
            rhs = OperandRead(owner)
        else:
            return None
        if not isinstance(k_loop, scf.ForOp) or k_loop.parent_op() is not self.kernel:
            return None
        bounds = [self.facts(v) for v in (k_loop.lb, k_loop.ub, k_loop.step)]
        if not all(f.low == f.high for f in bounds) or bounds[0].low != 0 or bounds[2].low != _shape(dot.rhs)[-2]:
            return None
        induction = k_loop.body.block.args[0]
        *others, k_index, last = rhs.load.indices
        if rhs.transposed:
            k_index, last = last, k_index
        if k_index is not induction or any(not _defined_before(index, k_loop) for index in (*others, last, rhs.load.source)):
            return None
        steps = -(-bounds[1].low // bounds[2].low)
        if steps * bounds[2].low * self.layout.columns * 4 > MAX_PACKED_BYTES:
            return None
        return dot, rhs, k_loop, steps

    # -- tile values as vectors ---------------------------------------------------------------------

    def materialize(self, emitter: Emitter, value: SSAValue) -> Fragment:
        held = self.fragments.get(value)
        if isinstance(held, VectorRows):
            scalars = [
                [emitter.emit(vector.ExtractOp(v, [lane], f32)) for v in row for lane in range(self.layout.chunk)]
                for row in held
            ]
            self.fragments[value] = scalars
            return scalars
        return super().materialize(emitter, value)

    def _vectors(self, emitter: Emitter, value: SSAValue) -> VectorRows:
        """The micro-tile of an f32 tile value as vectors (packing its scalars where it has them)."""
        held = self.fragments.get(value)
        if isinstance(held, VectorRows):
            return held
        width = self.layout.chunk
        rows = VectorRows()
        for row in self._full(super().materialize(emitter, value)):
            rows.append([pack_vector(emitter, row[start : start + width]) for start in range(0, len(row), width)])
        return rows

    def _flatten(self, emitter: Emitter, values: Sequence[SSAValue]) -> list[SSAValue]:
        flat: list[SSAValue] = []
        for value in values:
            if isinstance(value.type, tile.TileType):
                flat += [v for row in self._vectors(emitter, value) for v in row]
            else:
                flat.append(self.values[value])
        return flat

    def _unflatten(self, targets: Sequence[SSAValue], flat: list[SSAValue]) -> None:
        position = 0
        vectors = self.layout.vectors
        for target in targets:
            if isinstance(target.type, tile.TileType):
                count = self.layout.rows * vectors
                elements = flat[position : position + count]
                for element in elements:
                    element.name_hint = target.name_hint
                self.fragments[target] = VectorRows(elements[i : i + vectors] for i in range(0, count, vectors))
                position += count
            else:
                self.values[target] = flat[position]
                position += 1

    # -- the epilogue, one vector of outputs at a time ----------------------------------------------

    def _lower_block(self, emitter: Emitter, block: Block) -> None:
        if block is not self.kernel.body.block:
            super()._lower_block(emitter, block)
            return
        self.epilogue_after = self._looped_epilogue_start()
        self.deferred: list[Operation] = []
        super()._lower_block(emitter, block)
        if self.deferred:
            self._epilogue_loop(emitter)

    def _map(self, emitter: Emitter, op: tile.MapOp) -> None:
        if not self._defer(op):
            super()._map(emitter, op)

    def _store(self, emitter: Emitter, op: tile.StoreOp) -> None:
        if not self._defer(op):
            super()._store(emitter, op)

    def _defer(self, op: Operation) -> bool:
        """Keeps the maps and stores after the K loop for `_epilogue_loop`."""
        after = self.epilogue_after
        if after is not None and op.parent_block() is self.kernel.body.block and after.is_before_in_block(op):
            self.deferred.append(op)
            return True
        return False

    def _looped_epilogue_start(self) -> scf.ForOp | None:
        """The K loop, when the kernel's ops after it are an epilogue `_epilogue_loop` can run: maps
        and stores of the loop's results, of loads, broadcasts and splats and of each other."""
        block = self.kernel.body.block
        loops = [op for op in block.ops if isinstance(op, scf.ForOp) and any(isinstance(inner, tile.DotOp) for inner in op.walk())]
        if len(loops) != 1:
            return None
        (k_loop,) = loops
        lazy = tile.LoadOp | tile.BroadcastOp | tile.SplatOp | tile.InBoundsOp | tile.ProgramIdOp
        later: set[Operation] = set()
        op = k_loop.next_op
        while op is not None:
            if not isinstance(op, lazy | tile.MapOp | tile.StoreOp | tile.ReturnOp):
                return None
            for operand in op.operands:
                owner = operand.owner
                from_loop_or_later = owner is k_loop or owner in later or isinstance(owner, lazy)
                if isinstance(operand.type, tile.TileType) and not from_loop_or_later:
                    return None
            later.add(op)
            op = op.next_op
        return k_loop

    def _epilogue_loop(self, emitter: Emitter) -> None:
        """The deferred epilogue in a loop over the micro-tile's rows and vectors of W columns: the
        accumulators go through a scratch buffer, and the maps and stores are lowered once, for a
        1 x W chunk (the code of one vector of outputs, not of MR x NR)."""
        layout, rows, fragments = self.layout, self.rows, self.fragments
        assert self.epilogue_after is not None
        results = [r for r in self.epilogue_after.results if isinstance(r.type, tile.TileType)]
        scratch = {}
        vector_type = VectorType(f32, [layout.chunk])
        for result in results:
            buffer = emitter.emit(memref.AllocaOp.get(f32, PACKED_ALIGNMENT, [layout.rows, layout.columns]))
            buffer.name_hint = "accumulators"
            for i, row in enumerate(self._vectors(emitter, result)):
                for v, value in enumerate(row):
                    store = vector.StoreOp(value, buffer, [emitter.index(i), emitter.index(v * layout.chunk)])
                    store.attributes["alignment"] = IntegerAttr(self.layout_alignment, i64)
                    emitter.builder.insert(store)
            scratch[result] = buffer
        row_body, column_body = Block(arg_types=[IndexType()]), Block(arg_types=[IndexType()])
        row_body.args[0].name_hint, column_body.args[0].name_hint = "r", "c"
        inner = Emitter(column_body)
        r, c = row_body.args[0], column_body.args[0]
        batch = [inner.index(0)] * (len(layout.shape) - 2)
        self.layout = CpuMicroKernel(layout.shape, 1, layout.chunk, layout.chunk)
        self.rows = [[self._accesses(layout.shape, layout.chunk, [*batch, inner.add(self.row_indices[0], r), inner.add(self.column_indices[0], c)])]]
        self.fragments = ChainMap()
        for result, buffer in scratch.items():
            load = vector.LoadOp(buffer, [r, c], vector_type)
            load.attributes["alignment"] = IntegerAttr(self.layout_alignment, i64)
            self.fragments[result] = VectorRows([[inner.emit(load)]])
        deferred, self.epilogue_after = self.deferred, None
        for op in deferred:
            if isinstance(op, tile.MapOp):
                self._epilogue_map(inner, op)
            else:
                assert isinstance(op, tile.StoreOp)
                super()._store(inner, op)
        inner.builder.insert(scf.YieldOp())
        self.layout, self.rows, self.fragments = layout, rows, fragments
        columns = Emitter(row_body)
        columns.builder.insert(scf.ForOp(columns.index(0), columns.index(layout.columns), columns.index(layout.chunk), [], Region(column_body)))
        columns.builder.insert(scf.YieldOp())
        emitter.builder.insert(scf.ForOp(emitter.index(0), emitter.index(layout.rows), emitter.index(1), [], Region(row_body)))

    def _epilogue_map(self, emitter: Emitter, op: tile.MapOp) -> None:
        """A map of the looped epilogue on the chunk's vector of W outputs (`vector_maps.py`: a
        GELU's erf or tanh as vector polynomials) when its body is of vector ops and every operand
        is f32 or one value for the whole chunk (a mask of the chunk's row); else element by element."""
        operands = [self._chunk_operand(emitter, value) for value in op.inputs] if vector_map_refusal(op) is None else [None]
        if any(operand is None for operand in operands) or not all(_is_f32_tile(result) for result in op.outputs):
            super()._map(emitter, op)
            return
        vector_type = VectorType(f32, [self.layout.chunk])
        for output, value in zip(op.outputs, vector_body(emitter, op.body.block, operands, vector_type, self.values)):  # type: ignore[arg-type]
            self.fragments[output] = VectorRows([[value]])

    def _chunk_operand(self, emitter: Emitter, value: SSAValue) -> SSAValue | None:
        """A map operand in the looped epilogue's chunk: its vector, or its one value for the whole
        chunk (broadcast along the columns); None for W values that are not f32 (a mask's lanes)."""
        held = self.fragments.get(value)
        if isinstance(held, VectorRows):
            return held[0][0]
        (row,) = self.materialize(emitter, value)[:1]
        if len(row) == 1:
            return row[0]
        return pack_vector(emitter, row) if _is_f32_tile(value) else None

    # -- tile.dot -----------------------------------------------------------------------------------

    def _dot(self, emitter: Emitter, op: tile.DotOp) -> None:
        """acc += lhs @ rhs, one K step at a time, as vector FMAs (see the module docstring)."""
        accumulator = [v for row in self._vectors(emitter, op.acc) for v in row]
        lhs, rhs = operand_read(op, "lhs"), operand_read(op, "rhs")
        depth = _shape(op.lhs)[-1]
        body, inner = k_step_body(op, accumulator)
        values = self._vector_step(inner, op, lhs, rhs, body.args[0], list(body.args[1:]))
        # Straight-line steps (no masked loads) come STEPS_PER_ITERATION to an iteration.
        unrolled = STEPS_PER_ITERATION if depth % STEPS_PER_ITERATION == 0 and not any(isinstance(o, scf.IfOp) for o in body.walk()) else 1
        for step in range(1, unrolled):
            values = self._vector_step(inner, op, lhs, rhs, inner.add(body.args[0], inner.index(step)), values)
        inner.builder.insert(scf.YieldOp(*values))
        steps = scf.ForOp(emitter.index(0), emitter.index(depth), emitter.index(unrolled), accumulator, Region(body))
        layout = self.layout
        attributes.DOT.write(steps, DenseArrayBase.from_list(i64, [layout.rows, layout.columns]))
        emitter.builder.insert(steps)
        result = list(steps.results)
        for element in result:
            element.name_hint = op.result.name_hint
        self.fragments[op.result] = VectorRows(result[i : i + layout.vectors] for i in range(0, len(result), layout.vectors))

    def _vector_step(
        self, emitter: Emitter, op: tile.DotOp, lhs: OperandRead, rhs: OperandRead, offset: SSAValue, accumulator: list[SSAValue]
    ) -> list[SSAValue]:
        """One K step: MR lhs scalars broadcast, NR / W rhs vectors, MR * NR / W vector FMAs."""
        layout = self.layout
        lhs_shape, rhs_shape = _shape(op.lhs), _shape(op.rhs)
        batch = [self.zero] * (len(lhs_shape) - 2)
        vector_type = VectorType(f32, [layout.chunk])
        b = []
        packed = self.packed if self.packed is not None and self.packed.dot is op else None
        for v, column in enumerate(self.column_indices):
            if packed is not None:
                row = emitter.add(self.values[packed.induction], offset)
                load = vector.LoadOp(packed.buffer, [row, emitter.index(v * layout.chunk)], vector_type)
                load.attributes["alignment"] = IntegerAttr(self.layout_alignment, i64)
                b.append(emitter.emit(load))
                continue
            loaded = self.operand_elements(emitter, rhs, rhs_shape, layout.chunk, [*batch, offset, column])
            b.append(pack_vector(emitter, self._widen(emitter, loaded)))
        result = list(accumulator)
        for i, row in enumerate(self.row_indices):
            (a,) = self._widen(emitter, self.operand_elements(emitter, lhs, lhs_shape, 1, [*batch, row, offset]))
            a_vector = emitter.emit(vector.BroadcastOp(a, vector_type))
            for j, b_vector in enumerate(b):
                position = i * layout.vectors + j
                result[position] = emitter.emit(vector.FMAOp(a_vector, b_vector, result[position]))
        return result


def _is_f32_tile(value: SSAValue) -> bool:
    return isinstance(value.type, tile.TileType) and value.type.element_type == f32


def _is_uniform_scalar(op: Operation) -> bool:
    """An op the micro-tiles share: no regions, no tile values, not a tile op."""
    return (
        op.dialect_name() != "tile"
        and not op.regions
        and not any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results))
    )


def _defined_before(value: SSAValue, loop_op: scf.ForOp) -> bool:
    """Whether `value` is a kernel parameter or made by a uniform op before `loop_op`."""
    owner = value.owner
    if isinstance(owner, Block):
        return owner is loop_op.parent_block()
    return owner.parent_block() is loop_op.parent_block() and owner.is_before_in_block(loop_op) and _is_uniform_scalar(owner)


@dataclass(frozen=True)
class PackedPanel:
    """The rhs panel of a micro-tile column, copied contiguously (rows of NR f32) before its micro-tiles."""

    dot: tile.DotOp
    buffer: SSAValue
    induction: SSAValue
    """The tile-level K loop counter: the packed row of a K step is its value plus the step."""


def lower_cpu_dot_kernel(kernel: tile.KernelOp, vector_bytes: int, micro_kernel: Sequence[int]) -> loop.KernelOp:
    return CpuDotKernelLowering(kernel, vector_bytes, micro_kernel).lower()
