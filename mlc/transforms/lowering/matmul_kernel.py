"""The tile kernel of one `graph.matmul` and its elementwise epilogue: a K loop of `tile.dot`s.

`convert-graph-to-tile` lowers every `graph.matmul` (`np.matmul` of operands of rank >= 2, batch
dimensions broadcast) to one `tile.kernel`:

    grid [batch, ceil(M / BM), ceil(N / BN)]           (no batch axis when there is one matrix)
    %m = program_id(M axis) * BM,  %n = program_id(N axis) * BN
    %acc = scf.for %k = 0 to K step BK iter_args(%partial = splat 0.0) {
      %a = tile.load %A[batch..., %m, %k]  -> [1..., BM, BK]
      %b = tile.load %B[batch..., %k, %n]  -> [1..., BK, BN]
      scf.yield tile.dot %a, %b, %partial  (f32 accumulation)
    }
    %c = tile.map %acc, epilogue inputs... { truncf to f16/bf16 (f16/bf16 operands), the epilogue ops }
    tile.store %c (each epilogue output) -> %C[batch..., %m, %n]

Loads and stores mask at the memref bounds, so M, N and K need not be multiples of the block:
padded elements are zeros and add nothing. Batch dimensions are collapsed as fusion groups do
(`group_plan.collapse_dimensions`: size-1 dimensions dropped, neighbours that every operand has
alike merged); every operand keeps one dimension per collapsed batch dimension, of size 1 where it
broadcasts (indexed at 0), so a `3x64x48 @ 48x80` matmul reads B as `1x48x80`. The host passes its
buffers unchanged (same element count). The batch program id is decomposed into the collapsed
coordinates, innermost fastest.

Epilogues (`matmul_unit`). A `graph.fusion` of kind matmul (graph-fuse makes them) holds one
matmul and the elementwise ops that consume its product (a bias add, an activation, a residual
add; broadcasts included, reshapes and reductions not) over the product's shape: that epilogue is
computed by the matmul's kernel. Its other inputs are loaded at the output block (size-1
dimensions where they broadcast), its ops expanded into the map after the K loop
(`elementwise_expansion.py`), and its outputs stored instead of the product, which never reaches
memory. A matmul outside any fusion stores its product for the kernels that read it.

Implicit GEMMs. A group whose matmul's lhs is row-shifted slices of one value (`mlc.implicit_gemm`
on its `graph.fusion`, `analysis/operand_maps.py`) reads that value instead of the lhs: K step k
loads the block at `(m + shift(k / C), k % C)`, the shift computed from the digits of the piece
number (`_lhs_indices`); BK is cut to divide C so that a step stays in one piece; rows past the
value read zeros (the load's bounds), as the chain's zero rows do. The tensor-core and CPU
lowerings see an ordinary tile load at a computed origin (the pipelined copies recompute it for
their own K step). The kernel records `mlc.implicit_gemm` too.

Computed transposed. A TF32 matmul with a row-major B that graph-transpose-tf32-rhs marked
`mlc.swap_operands` (Hopper's TF32 wgmma reads a B from shared memory K-major only, and a
row-major B is N-major) gets the kernel of C^T = B^T A^T (`takes_swapped_operands`: a plain 2-D
product, no epilogue): the dot's lhs is B's stored K x BN block transposed, its rhs A's BM x K
block transposed (`mlc.operand_major` = ["m", "k"]), its BN x BM accumulator C^T's block, which
one `tile.scatter` stores at C[m + j, n + i]; the block (BM, BN, BK) stays C's, chosen as the
transposed problem's (`choose_tf32_wgmma_tile(N, M)` with `wgmma`). On the GPU the lhs, M-major,
is wgmma's A loaded into registers, the rhs, K-major, wgmma's B (`matmul_wgmma.py`).

Stored through a layout chain. A group holding the matmul and, instead of an epilogue, the chain of
reshapes, unit-step slices and transposes that alone reads the product (`output_layout_chain`:
graph-fuse{store-layouts=true} puts a convolution's slice and transpose back to NCHW there) writes
the chain's result: its block goes out as one `tile.scatter` through the chain's inverse index maps
(`scattered_store.py`), elements the chain drops (a padded grid's extra pixels) not at all.

Block sizes are `matmul_blocks.py`'s choice (`choose_matmul_tile`, `choose_tf32_wgmma_tile`);
`convert-graph-to-tile{matmul-tile=BM,BN,BK}` overrides it. The dot carries the matmul's
`precision` (its property, else `convert-graph-to-tile{precision=...}` for f32 products) for the
lowering of `tile.dot`; warps: `matmul_blocks.matmul_warps`. The kernel records its block as
`mlc.matmul_tile = array<i64: BM, BN, BK>`; the tile types carry it too. How threads share the
block is decided below, by `convert-tile-to-loop` (`matmul_loop.py`).

Limits: f32, f16 and bf16 operands (the graph verifier admits integer matmuls; they are reported);
an in-place lhs only for the shifted rows of a 2-D matmul.

Modules: `matmul_units.py` says which kernels there are (`matmul_unit`, `launch_order`),
`matmul_plan.py` decides a kernel's block, precision and batch collapse (`plan_matmul`,
`takes_swapped_operands`); this one builds its IR (`build_matmul_kernel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects import attributes
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.fusion_groups import is_splat_constant, shape_of
from mlc.transforms.analysis.operand_maps import operand_major
from mlc.transforms.lowering.elementwise_expansion import (
    ScalarBuilder,
    expand_elementwise,
    splat_constant_value,
)
from mlc.transforms.lowering.matmul_blocks import matmul_warps
from mlc.transforms.lowering.matmul_plan import MatmulPlan
from mlc.transforms.lowering.scattered_store import scatter_through


def _element_type(value: SSAValue) -> Attribute:
    return value.type.element_type  # type: ignore[attr-defined]


@dataclass
class MatmulKernelBuilder:
    """Builds the `tile.kernel` of one plan (see the module docstring)."""

    plan: MatmulPlan
    parameters: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """Graph values read or written by the kernel, to its parameters."""
    constants: dict[int, SSAValue] = field(default_factory=dict)

    def build(self) -> tile.KernelOp:
        plan, unit = self.plan, self.plan.unit
        op = plan.op
        lhs, rhs = unit.lhs_source, unit.source(op.b)
        inputs = [(lhs, shape_of(lhs)), (rhs, shape_of(rhs)), *unit.epilogue_inputs]
        parameter_types = [MemRefType(_element_type(value), plan.view(seen)) for value, seen in inputs]
        parameter_types += [MemRefType(_element_type(value), self._output_view(value)) for value in unit.outputs]
        block_rows, block_columns, _ = plan.block
        kernel = tile.KernelOp(plan.name, parameter_types, plan.grid, num_warps=matmul_warps(block_rows, block_columns))
        attributes.MATMUL_TILE.write(kernel, DenseArrayBase.from_list(i64, plan.block))
        if unit.lhs_rows is not None:
            attributes.IMPLICIT_GEMM.write(kernel, DenseArrayBase.from_list(i64, unit.lhs_rows.shifts))
        if unit.transposes or plan.swapped:
            major = operand_major(True, True) if plan.swapped else unit.operand_major
            attributes.OPERAND_MAJOR.write(kernel, ArrayAttr([StringAttr(side) for side in major]))
        if plan.swapped:
            attributes.SWAP_OPERANDS.write(kernel, UnitAttr())
        arguments = kernel.body.block.args
        for index, ((value, _), parameter) in enumerate(zip(inputs, arguments)):
            parameter.name_hint = value.name_hint or f"input{index}"
            self.parameters[value] = parameter
        for index, (value, parameter) in enumerate(zip(unit.outputs, arguments[len(inputs) :])):
            parameter.name_hint = f"output{index}"
            self.parameters[value] = parameter
        self.top = Builder(InsertPoint.at_start(kernel.body.block))
        self.builder = Builder(InsertPoint.at_end(kernel.body.block))
        self.zero = self._index(0)
        self.batch = self._batch_coordinates()
        rows_axis = len(plan.grid) - 2
        self.rows_origin = self._block_origin(rows_axis, block_rows, "m")
        self.columns_origin = self._block_origin(rows_axis + 1, block_columns, "n")
        results = self._epilogue(self._accumulate())
        for value, result in zip(unit.outputs, results):
            if plan.swapped:
                self._store_transposed(result, self.parameters[value])
            elif unit.output_chain:  # through the chain's inverse maps (`scattered_store.py`)
                scatter_through(self.builder, result, self.parameters[value], unit.output_chain, (self.rows_origin, self.columns_origin))
            else:
                self.builder.insert(tile.StoreOp(result, self.parameters[value], self._indices(shape_of(value))))
        self.builder.insert(tile.ReturnOp())
        return kernel

    # -- indices ----------------------------------------------------------------------------------

    def _output_view(self, value: SSAValue) -> tuple[int, ...]:
        """The kernel's view of an output: the product's, or the chain's result as it is."""
        return shape_of(value) if self.plan.unit.output_chain else self.plan.view(shape_of(value))

    def _index(self, value: int) -> SSAValue:
        """An index constant, made once at the top of the kernel."""
        if value not in self.constants:
            constant = arith.ConstantOp(IntegerAttr(value, IndexType()))
            constant.result.name_hint = f"c{value}"
            self.top.insert(constant)
            self.constants[value] = constant.result
        return self.constants[value]

    def _block_origin(self, axis: int, size: int, name: str) -> SSAValue:
        program = self.builder.insert(tile.ProgramIdOp(axis)).result
        program.name_hint = f"p{name}"
        origin = self.builder.insert(arith.MuliOp(program, self._index(size))).result
        origin.name_hint = name
        return origin

    def _batch_coordinates(self) -> list[SSAValue]:
        """The collapsed batch coordinates of this program, decomposed innermost fastest."""
        shape = self.plan.batch_shape
        if not shape:
            return []
        remaining = self.builder.insert(tile.ProgramIdOp(0)).result
        remaining.name_hint = "batch"
        coordinates: list[SSAValue] = [remaining] * len(shape)
        for dim in reversed(range(1, len(shape))):
            count = self._index(shape[dim])
            coordinates[dim] = self.builder.insert(arith.RemUIOp(remaining, count)).result
            remaining = self.builder.insert(arith.DivUIOp(remaining, count)).result
        coordinates[0] = remaining
        for dim, coordinate in enumerate(coordinates):
            coordinate.name_hint = f"batch{dim}" if len(shape) > 1 else "batch"
        return coordinates

    def _indices(self, shape: Sequence[int], rows: SSAValue | None = None, columns: SSAValue | None = None) -> list[SSAValue]:
        """The block origin in a value of `shape`: 0 along its size-1 dimensions (broadcast)."""
        view = self.plan.view(shape)
        origin = [*self.batch, rows or self.rows_origin, columns or self.columns_origin]
        return [o if size != 1 else self.zero for o, size in zip(origin, view)]

    # -- the K loop -------------------------------------------------------------------------------

    def _tile_type(self, rows: int, columns: int, element_type: Attribute) -> tile.TileType:
        return tile.TileType((*(1,) * len(self.plan.batch_shape), rows, columns), element_type)

    def _accumulate(self) -> SSAValue:
        """The f32 accumulator tile after the K loop (no loop when K is 0: the product is zeros)."""
        plan = self.plan
        op = plan.op
        block_rows, block_columns, block_depth = plan.block
        zero = self.builder.insert(arith.ConstantOp(FloatAttr(0.0, f32))).result
        zero.name_hint = "zero"
        accumulator_shape = (block_columns, block_rows) if plan.swapped else (block_rows, block_columns)
        initial = self.builder.insert(tile.SplatOp(zero, self._tile_type(*accumulator_shape, f32))).result
        initial.name_hint = "zeros"
        if plan.depth == 0:
            return initial
        element_type = _element_type(op.a)
        body = Block(arg_types=[IndexType(), initial.type])
        k, partial = body.args
        k.name_hint, partial.name_hint = "k", "partial"
        outer, self.builder = self.builder, Builder(InsertPoint.at_end(body))
        if plan.swapped:  # C^T = B^T A^T: B's stored K x BN block and A's BM x K block, transposed
            a_tile = self._transposed_load(op.b, k, self.columns_origin, (block_depth, block_columns))
        elif plan.unit.transposed(op.a) is not None:
            a_tile = self._transposed_load(op.a, k, self.rows_origin, (block_depth, block_rows))
        else:  # rows past a shifted-rows leaf read as zeros: the zero rows its layout ops append
            lhs_type = self._tile_type(block_rows, block_depth, element_type)
            a_tile = self.builder.insert(tile.LoadOp(self.parameters[plan.unit.lhs_source], self._lhs_indices(k), lhs_type)).result
        if plan.swapped:
            b_tile = self._transposed_load(op.a, self.rows_origin, k, (block_rows, block_depth))
        elif plan.unit.transposed(op.b) is not None:
            b_tile = self._transposed_load(op.b, self.columns_origin, k, (block_columns, block_depth))
        else:
            rhs_type = self._tile_type(block_depth, block_columns, element_type)
            b_tile = self.builder.insert(tile.LoadOp(self.parameters[op.b], self._indices(shape_of(op.b), rows=k), rhs_type)).result
        a_tile.name_hint, b_tile.name_hint = "a_tile", "b_tile"
        product = self.builder.insert(tile.DotOp(a_tile, b_tile, partial, plan.precision)).result
        product.name_hint = "next"
        self.builder.insert(scf.YieldOp(product))
        self.builder = outer
        loop = scf.ForOp(self.zero, self._index(plan.depth), self._index(block_depth), [initial], Region(body))
        result = self.builder.insert(loop).results[0]
        result.name_hint = "acc"
        return result

    def _transposed_load(self, operand: SSAValue, rows: SSAValue, columns: SSAValue, block: tuple[int, int]) -> SSAValue:
        """`operand`'s block read from its transpose's input (stored layout): the `block` (rows x
        columns of the stored matrix) at origin (`rows`, `columns`), transposed as a tile."""
        stored = self.plan.unit.source(operand)
        stored_type = self._tile_type(*block, _element_type(stored))
        loaded = self.builder.insert(tile.LoadOp(self.parameters[stored], self._indices(shape_of(stored), rows, columns), stored_type)).result
        loaded.name_hint = "stored"
        return self.builder.insert(tile.TransposeOp(loaded)).result

    def _store_transposed(self, block: SSAValue, dest: SSAValue) -> None:
        """Stores the dot's BN x BM block of C^T (a swapped plan) into C: element (i, j) at
        C[m + j, n + i], one `tile.scatter` (indices past C drop their element)."""
        block_rows, block_columns, _ = self.plan.block
        shape = (block_columns, block_rows)
        columns = self.builder.insert(tile.RangeOp(self.columns_origin, 0, (block_columns, 1))).result
        rows = self.builder.insert(tile.RangeOp(self.rows_origin, 1, (1, block_rows))).result
        indices = [self.builder.insert(tile.BroadcastOp(index, tile.TileType(shape, IndexType()))).result for index in (rows, columns)]
        self.builder.insert(tile.ScatterOp(block, dest, indices))

    def _lhs_indices(self, k: SSAValue) -> list[SSAValue]:
        """The origin of the lhs block at K counter `k`: `(m, k)`, or for shifted rows (module
        docstring of `operand_maps.py`) `(m + shift(t), k - t * C)` with `t = k / C`."""
        shifted = self.plan.unit.lhs_rows
        if shifted is None:
            return self._indices(shape_of(self.plan.op.a), columns=k)
        emit = self.builder.insert
        piece_columns = self._index(shifted.piece_columns)
        piece = emit(arith.DivUIOp(k, piece_columns)).result
        column = emit(arith.RemUIOp(k, piece_columns)).result
        q, a, b = shifted.digits
        row = self.rows_origin
        for digit, scale in ((emit(arith.DivUIOp(piece, self._index(q))).result, a), (emit(arith.RemUIOp(piece, self._index(q))).result, b)):
            if scale:
                term = digit if scale == 1 else emit(arith.MuliOp(digit, self._index(scale))).result
                row = emit(arith.AddiOp(row, term)).result
        piece.name_hint, column.name_hint, row.name_hint = "piece", "channel", "shifted"
        return self._indices(shape_of(shifted.leaf), rows=row, columns=column)

    # -- the epilogue -----------------------------------------------------------------------------

    def _epilogue(self, accumulator: SSAValue) -> list[SSAValue]:
        """The outputs' tiles: the product in its element type, then the epilogue's ops, in one map."""
        plan, unit = self.plan, self.plan.unit
        result = plan.op.result
        element_type = _element_type(result)
        if unit.epilogue is None and element_type == f32:
            return [accumulator]
        shape = accumulator.type.get_shape()  # type: ignore[attr-defined]
        frontier = [accumulator] + [self._load_input(value, seen, shape) for value, seen in unit.epilogue_inputs]
        body = Block(arg_types=[t.type.element_type for t in frontier])  # type: ignore[attr-defined]
        scalar = ScalarBuilder(Builder(InsertPoint.at_end(body)))
        product = body.args[0] if element_type == f32 else scalar.emit(arith.TruncFOp(body.args[0], element_type))
        element: dict[SSAValue, SSAValue] = {result: product}
        element.update({value: argument for (value, _), argument in zip(unit.epilogue_inputs, body.args[1:])})

        def element_of(value: SSAValue) -> SSAValue:
            if value not in element and is_splat_constant(value):
                return scalar.constant(splat_constant_value(value.owner), _element_type(value))  # type: ignore[arg-type]
            return element[value]

        for op in unit.epilogue.ops if unit.epilogue is not None else []:
            element[op.results[0]] = expand_elementwise(op, [element_of(v) for v in op.operands], scalar)
        outputs = [result] if unit.output_chain else unit.outputs  # a chain's elements are the product's
        scalar.builder.insert(tile.YieldOp([element_of(v) for v in outputs]))
        result_types = [tile.TileType(shape, _element_type(v)) for v in outputs]
        tiles = list(self.builder.insert(tile.MapOp(frontier, result_types, Region(body))).outputs)
        for value, tile_value in zip(outputs, tiles):
            tile_value.name_hint = value.name_hint or "result"
        return tiles

    def _load_input(self, value: SSAValue, seen: tuple[int, ...], shape: tuple[int, ...]) -> SSAValue:
        """An epilogue input's block, broadcast to the output block where its dimensions are 1."""
        view = self.plan.view(seen)
        tile_shape = tuple(size if dim != 1 else 1 for size, dim in zip(shape, view))
        loaded = self.builder.insert(
            tile.LoadOp(self.parameters[value], self._indices(seen), tile.TileType(tile_shape, _element_type(value)))
        ).result
        if tile_shape == shape:
            return loaded
        return self.builder.insert(tile.BroadcastOp(loaded, tile.TileType(shape, _element_type(value)))).result


def build_matmul_kernel(plan: MatmulPlan) -> tile.KernelOp:
    return MatmulKernelBuilder(plan).build()
