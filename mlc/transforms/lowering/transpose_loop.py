"""Transpose kernels lowered to loops: a coalesced read into a padded shared tile, a coalesced write.

`convert-tile-to-loop` hands every `tile.kernel` holding a `tile.transpose` to
`lower_transpose_kernel`. Such a kernel (`transpose_kernel.py`) loads one [1..., T, T] block of
its source, transposes it and stores it. Per program:

    %stage = memref.alloca() : memref<T x (T + 1) x E, 3>      the shared tile, one column of padding
    loop.parallel %thread < P mapping thread.x {
      c = thread mod T, r_s = thread div T + s * (P / T)     for each step s < T * T / P (unrolled)
      %stage[r_s, c] = source[origin + (r_s, c)]             read the source block (0 outside it)
      result[origin' + (r_s, c)] = %stage[c, r_s]            write the result block (inside it only)
    }

The steps are unrolled: their indices are then affine in the thread with constant offsets, which
gpu-insert-barriers' alias analysis separates (in a loop, the next iteration's writes could
collide with this one's, and it would put a barrier in every iteration). Consecutive threads take
consecutive columns in both directions, so each warp reads and writes one
contiguous span of a row of global memory (coalesced on both sides), and the transposed read of
the shared tile walks a column: T + 1 words apart, a different bank for each of 32 threads
(no bank conflicts). gpu-insert-barriers puts the barrier between the loops (the second reads
what other threads wrote in the first). Bounds are checked only along dimensions whose extent
is not a multiple of T (the origins are multiples of T): an edge block reads zeros outside the
source and skips stores outside the result.

A windowed transpose (`transpose_kernel.py`) reads its block with a `tile.gather` instead: each
element's position is computed from the gather's index tiles (`tile.range`, `tile.splat` and the
`tile.map` of the window), evaluated at the element's (row, column) of the block, and read
branch-free with the gather's padding outside the source (`chunk_access.gather_elements`).

Preconditions: the kernel is one `tile.load` (or a `tile.gather` of index tiles made of
`tile.range`, `tile.splat` and `tile.map`), its `tile.transpose` and a `tile.store` of that,
with scalar index code (other kernels with `tile.transpose` are reported); T * T a multiple of
the P = `num_warps` * 32 threads (`transpose_kernel.py` chooses both). Limits: scalar accesses
(one element per thread and step, no vectors).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, i64
from xdsl.ir import Block, Region, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter, emit_if, gather_elements, zero_of
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering, is_power_of_two


INDEX_TILE_OPS = tile.RangeOp | tile.SplatOp | tile.MapOp
"""The tile ops that may compute a gathered transpose's indices."""


def contains_transpose(kernel: tile.KernelOp) -> bool:
    """Whether `kernel` is a transpose kernel (a matmul's transposed operand tile is the dot's)."""
    ops = list(kernel.walk())
    return any(isinstance(op, tile.TransposeOp) for op in ops) and not any(isinstance(op, tile.DotOp) for op in ops)


class TransposeKernelLowering(TileKernelLowering):
    """Lowers one transpose kernel (see the module docstring)."""

    def lower(self) -> loop.KernelOp:
        load, transpose, store = self._parts()
        source_shape = load.result.type.get_shape()  # type: ignore[attr-defined]
        block = source_shape[-1]
        threads = 32 * (self.kernel.num_warps.value.data if self.kernel.num_warps is not None else 4)
        if source_shape[-2] != block or not is_power_of_two(block) or (block * block) % threads:
            raise PassFailure(transpose, f"a transpose kernel moves square power-of-two blocks shared by its {threads} threads")
        result = self.new_kernel()
        bodies = self.grid_loops(result.body.block)
        outer = Emitter(bodies[-1])
        for op in self.kernel.body.block.ops:
            if op.dialect_name() != "tile":
                clone = op.clone(value_mapper=self.values)
                outer.builder.insert(clone)
                self.values.update(zip(op.results, clone.results))
        element_type = load.result.type.element_type  # type: ignore[attr-defined]
        space = IntegerAttr(loop.SHARED_MEMORY_SPACE, i64)
        stage = outer.emit(memref.AllocaOp.get(element_type, 16, [block, block + 1], memory_space=space))
        stage.name_hint = "stage"
        thread_loop = loop.ParallelOp(threads, "thread.x", Region(Block(arg_types=[IndexType()])))
        thread = thread_loop.body.block.args[0]
        thread.name_hint = "thread"
        bodies[-1].add_op(thread_loop)
        emitter = Emitter(thread_loop.body.block)
        # Thread t takes column t mod T of rows t div T + s * (P / T): affine in the step s, so
        # gpu-insert-barriers sees that no two threads touch one element within a direction.
        first_row = emitter.emit(arith.DivUIOp(thread, emitter.index(block)))
        column = emitter.emit(arith.RemUIOp(thread, emitter.index(block)))
        rows = [emitter.add(first_row, emitter.index(step * threads // block)) for step in range(block * block // threads)]
        for row in rows:
            self._read(emitter, load, stage, row, column)
        for row in rows:
            self._write(emitter, store, stage, row, column)
        self.finish_kernel(result, [thread_loop.body.block, *bodies])
        attributes.TRANSPOSE_BLOCK.write(result, IntegerAttr(block, i64))
        return result

    def _parts(self) -> tuple[tile.LoadOp | tile.GatherOp, tile.TransposeOp, tile.StoreOp]:
        tile_ops = [op for op in self.kernel.body.block.ops if op.dialect_name() == "tile"]
        loads = [op for op in tile_ops if isinstance(op, tile.LoadOp | tile.GatherOp)]
        transposes = [op for op in tile_ops if isinstance(op, tile.TransposeOp)]
        stores = [op for op in tile_ops if isinstance(op, tile.StoreOp)]
        known = tile.LoadOp | tile.GatherOp | tile.TransposeOp | tile.StoreOp | tile.ProgramIdOp | tile.ReturnOp | INDEX_TILE_OPS
        others = [op for op in tile_ops if not isinstance(op, known)]
        shaped = len(loads) == len(transposes) == len(stores) == 1 and not others
        if not shaped or transposes[0].source.owner is not loads[0] or stores[0].value.owner is not transposes[0]:
            raise PassFailure(transposes[0] if transposes else self.kernel, "a transpose kernel holds one tile.load, its tile.transpose and a tile.store of that")
        if any(op.regions for op in self.kernel.body.block.ops if not isinstance(op, tile.MapOp)):
            raise PassFailure(self.kernel, "a transpose kernel has no loops")
        return loads[0], transposes[0], stores[0]

    def _position(self, emitter: Emitter, origin: Sequence[SSAValue], row: SSAValue, column: SSAValue) -> list[SSAValue]:
        """The global position of block element (row, column) of an access at `origin`."""
        leading = [self.values[index] for index in origin[:-2]]
        return [*leading, emitter.add(self.values[origin[-2]], row), emitter.add(self.values[origin[-1]], column)]

    @staticmethod
    def _inside(emitter: Emitter, position: Sequence[SSAValue], shape: Sequence[int], block: int) -> SSAValue | None:
        """Whether `position` is inside `shape`, checked along the last two dimensions whose
        extents are not multiples of the block (None when nothing needs checking)."""
        checks = [emitter.below(index, extent) for index, extent in zip(position[-2:], shape[-2:]) if extent % block]
        return emitter.all_of(checks) if checks else None

    def _element(self, emitter: Emitter, value: SSAValue, coordinates: Sequence[SSAValue]) -> SSAValue:
        """Element `coordinates` of the index tile `value` (a range, a splat or a map of those)."""
        op = value.owner
        if isinstance(op, tile.SplatOp):
            return self.values[op.value]
        if isinstance(op, tile.RangeOp):
            return emitter.add(self.values[op.start], coordinates[op.axis.value.data])
        if isinstance(op, tile.MapOp):
            scalars = dict(self.values)
            scalars.update((argument, self._element(emitter, operand, coordinates)) for argument, operand in zip(op.body.block.args, op.inputs))
            for inner in op.body.block.ops:
                if isinstance(inner, tile.YieldOp):
                    return scalars[inner.operands[list(op.outputs).index(value)]]  # type: ignore[arg-type]
                clone = inner.clone(value_mapper=scalars)
                emitter.builder.insert(clone)
                scalars.update(zip(inner.results, clone.results))
        raise PassFailure(op if op is not None else self.kernel, "a gathered transpose's indices are ranges, splats and maps of those")

    def _read(self, emitter: Emitter, load: tile.LoadOp | tile.GatherOp, stage: SSAValue, row: SSAValue, column: SSAValue) -> None:
        if isinstance(load, tile.GatherOp):
            coordinates = [emitter.index(0)] * (len(load.indices) - 2) + [row, column]
            position = [[self._element(emitter, index, coordinates)] for index in load.indices]
            (value,) = gather_elements(emitter, self.values[load.source], position, load.padding)
            emitter.builder.insert(memref.StoreOp.get(value, stage, [row, column]))
            return
        source = self.values[load.source]
        shape = source.type.get_shape()  # type: ignore[attr-defined]
        element_type = source.type.element_type  # type: ignore[attr-defined]
        position = self._position(emitter, load.indices, row, column)
        inside = self._inside(emitter, position, shape, stage.type.get_shape()[0])  # type: ignore[attr-defined]
        if inside is None:
            value = emitter.emit(memref.LoadOp.get(source, position))
        else:
            (value,) = emit_if(
                emitter,
                inside,
                [element_type],
                lambda inner: [inner.emit(memref.LoadOp.get(source, position))],
                lambda inner: [inner.emit(arith.ConstantOp(load.padding if load.padding is not None else zero_of(element_type)))],
            )
        emitter.builder.insert(memref.StoreOp.get(value, stage, [row, column]))

    def _write(self, emitter: Emitter, store: tile.StoreOp, stage: SSAValue, row: SSAValue, column: SSAValue) -> None:
        destination = self.values[store.dest]
        shape = destination.type.get_shape()  # type: ignore[attr-defined]
        position = self._position(emitter, store.indices, row, column)
        inside = self._inside(emitter, position, shape, stage.type.get_shape()[0])  # type: ignore[attr-defined]

        def write(inner: Emitter) -> list[SSAValue]:
            value = inner.emit(memref.LoadOp.get(stage, [column, row]))
            inner.builder.insert(memref.StoreOp.get(value, destination, position))
            return []

        if inside is None:
            write(emitter)
        else:
            emit_if(emitter, inside, [], write, None)


def lower_transpose_kernel(kernel: tile.KernelOp, vector_bytes: int) -> loop.KernelOp:
    return TransposeKernelLowering(kernel, vector_bytes).lower()
