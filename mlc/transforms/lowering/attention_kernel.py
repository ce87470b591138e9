"""The tile kernel of an attention chain: one kernel, the keys walked in blocks, an online softmax.

`convert-graph-to-tile` builds this kernel for a `graph.fusion` marked `mlc.chain = "attention"`
(graph-fuse: `analysis/gemm_chain.py` matches the chain, `analysis/attention_cost.py` plans it),
with the blocks of its `mlc.chain_plan` (BM query rows, BN keys; the rows-outer order,
FlashAttention's). A program owns BM rows of one (batch, head):

    %q = tile.load %Q[b, m, 0]                          [BM, D']      (D' = D padded to a power of 2)
    %state = scf.for %n = 0 to N step BN iter_args(%max = -inf, %sum = 0, %acc = 0) {
      %s  = tile.dot %q, tile.load %Kt[b, 0, %n], 0     [BM, BN]  f32
                    (a chain with `key_transpose`: tile.transpose (tile.load %K[b, %n, 0]), K read in place)
      %t  = tile.map %s, masks...  { the chain's score ops (scale, mask); -inf past N }
      %bm = tile.reduce max %t
      %new, %safe, %alpha = tile.map %max, %bm { max; 0 where the max is still -inf; exp(max - safe) }
      %p  = tile.map %t, %safe { exp(t - safe) }
      %sum' = %sum * %alpha + tile.reduce add %p
      %acc' = tile.dot (%p as the operands' type), tile.load %V[b, %n, 0], %acc * %alpha
    }
    tile.store %acc / %sum  -> %O[b, m, 0]

The running max `%max`, running sum `%sum` and the accumulator are rescaled by `%alpha` whenever
the max grows, so the result is `softmax(t) @ V` with the score tile never leaving the program
(memory independent of N squared). A row whose every score is -inf (fully masked) gives 0/0 =
NaN, as the unfused softmax does; under ONNX's NaN guard (`masked_rows = "zero"`, gemm_chain.py)
the rows whose sum is 0 or NaN give 0 instead, under core ATen's guard (`zero-masked`) the rows
whose sum is 0, as the guarded softmax does. Numerics: the products accumulate in f32; the probabilities
are rounded to f16 before the second product when V is f16 (the unfused chain rounds the
normalised ones; both are within one f16 rounding of the exact value); the rescalings add
roundings that `error_bounds` (softmax) accounts for.

Fast math (`fast_math` in the chain plan: graph-fuse's `fast-math` option, opt-in). The graph
rounds every op's result to its type, so by default the score ops run as the graph says (the
product rounded to f16, the scale applied and rounded in f16: an IEEE division per score when
1/sqrt(d) is not a power of two) and `exp` is libdevice's `expf`. With fast math, as
FlashAttention does: the score ops are evaluated in f32 without the narrow roundings (a division
by a constant becomes a product with its f32 reciprocal), and every exponential is
`exp2(fma(t, log2 e, -max * log2 e))` (libdevice's `exp2f`, 2 ulp: PTX's `ex2.approx`), the
running max scaled once per row; the result is the accumulator times the reciprocal of the sum
(one division per row, not per element). Error: the f16 roundings it skips are within the bound
the interpreter's own roundings give (`error_bounds`: an implementation may round less); the
rounded constant log2(e) moves each exponent by at most u |t - max|, and the reciprocal adds one
f32 rounding, which `error_bounds`' softmax bound counts (`FAST_SOFTMAX_EXTRA_ROUNDINGS`).

A causal mask (`AttentionChain.causal`: row r sees keys k <= r + offset) is computed in the score
map from `tile.range` positions instead of being loaded, and the key loop ends at
min(N, m + BM + offset): the key blocks past the diagonal of the row block are never visited
(FlashAttention's causal block skipping); the diagonal blocks are masked element by element.
The programs take the row blocks in reverse (the last, which visit the most keys, start first),
so that the short ones fill the tail of the launch.

Operands read in place (`analysis/chain_operand_views.py`): where the region holds the layout ops
that make Q, K or V from a stored value (the head split of a projection), the kernel's parameter is
that value viewed as [1..., outer, R, W] and each block is loaded at (outer index, row, first column)
computed from the batch coordinates (`RowView`), the batch dimensions then kept apart (not
collapsed); where it holds a transpose of O, O's blocks are stored the same way into that
transpose's result. The loads and stores are the same tiles at other addresses, so the lowerings
below (`chain_loop.py`, `chain_mma.py`) need nothing of their own.

Preconditions: the chain of `match_attention` (batch dimensions of Q, Kt, V and O equal; side
inputs broadcast to the score shape), the rows-outer order. The kernel carries `mlc.chain` and
`mlc.chain_plan` for convert-tile-to-loop (`chain_loop.py`). The unit a kernel is built from
(`AttentionUnit`, `attention_unit`: the chain, its plan, the operands read in place) is
`attention_unit.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects import math as math_dialect
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    FloatAttr,
    IndexType,
    MemRefType,
    StringAttr,
    f32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects import attributes
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.chain_operand_views import RowView
from mlc.transforms.analysis.fusion_groups import is_splat_constant, shape_of
from mlc.transforms.analysis.tile_sizes import next_power_of_two
from mlc.transforms.lowering.attention_unit import AttentionUnit, loaded_sides
from mlc.transforms.lowering.elementwise_expansion import (
    ScalarBuilder,
    expand_elementwise,
    splat_constant_value,
)
from mlc.transforms.lowering.group_plan import DimensionCollapse, collapse_dimensions, keep_dimensions


def _element(value: SSAValue) -> Attribute:
    return value.type.element_type  # type: ignore[attr-defined]


class AttentionKernelBuilder:
    """Builds the tile kernel of one attention unit (see the module docstring)."""

    def __init__(self, name: str, unit: AttentionUnit):
        self.unit, self.chain = unit, unit.chain
        _, self.rows, self.keys, depth, value_depth = self.chain.dims
        self.block_rows, self.block_keys = unit.block("block_rows"), unit.block("block_keys")
        self.depth, self.value_depth = next_power_of_two(depth), next_power_of_two(value_depth)
        output_shape = shape_of(self.chain.output.result)
        self.rank = len(output_shape)
        participants = [self._aligned(shape_of(v))[:-2] for v in unit.operands]
        # An operand read through a view steps its own strides per batch dimension: none merge.
        collapse = keep_dimensions if unit.views else lambda domain: collapse_dimensions(domain, participants)
        self.collapse: DimensionCollapse = collapse(output_shape[:-2])
        self.batch_shape = self.collapse.domain if self.collapse.groups else ()
        blocks = -(-self.rows // self.block_rows)
        grid = (math.prod(self.batch_shape), blocks) if self.batch_shape else (blocks,)
        values = [*unit.operands, self.chain.output.result]
        types = [self._memref_type(v) for v in values]
        self.kernel = tile.KernelOp(name, types, grid, num_warps=max(1, self.block_rows // 32))
        attributes.CHAIN.write(self.kernel, StringAttr(self.chain.kind))
        attributes.CHAIN_PLAN.write(self.kernel, unit.plan)
        self.parameters = dict(zip(values, self.kernel.body.block.args))
        for value, parameter in self.parameters.items():
            parameter.name_hint = unit.views[value].leaf.name_hint if value in unit.views else value.name_hint
        self.builder = Builder(InsertPoint.at_end(self.kernel.body.block))

    def _aligned(self, shape: Sequence[int]) -> tuple[int, ...]:
        return (1,) * (self.rank - len(shape)) + tuple(shape)

    def _memref_type(self, value: SSAValue) -> MemRefType:
        """The parameter of `value`: its leaf as rows of a wide matrix when read through a view."""
        if value in self.unit.views:
            return MemRefType(_element(value), self.unit.views[value].rows.memref_shape(len(self.batch_shape)))
        return MemRefType(_element(value), self._view(shape_of(value)))

    def _view(self, shape: Sequence[int]) -> tuple[int, ...]:
        aligned = self._aligned(shape)
        batch = self.collapse.shape(aligned[:-2]) if self.collapse.groups else ()
        return (*batch, *aligned[-2:])

    # -- small builders ---------------------------------------------------------------------------

    def _insert(self, op: Operation, name: str | None = None) -> SSAValue:
        self.builder.insert(op)
        if name is not None:
            op.results[0].name_hint = name
        return op.results[0]

    def _index(self, value: int) -> SSAValue:
        return self._insert(arith.ConstantOp.from_int_and_width(value, IndexType()))

    def _type(self, rows: int, columns: int, element: Attribute = f32) -> tile.TileType:
        return tile.TileType((*(1,) * len(self.batch_shape), rows, columns), element)

    def _splat(self, value: float, rows: int, columns: int, name: str) -> SSAValue:
        scalar = self._insert(arith.ConstantOp(FloatAttr(value, f32)))
        return self._insert(tile.SplatOp(scalar, self._type(rows, columns)), name)

    def _load(self, value: SSAValue, rows: SSAValue, columns: SSAValue, shape: tuple[int, int], name: str) -> SSAValue:
        if value in self.unit.views:
            indices = self._view_indices(self.unit.views[value].rows, rows, columns)
            return self._insert(tile.LoadOp(self.parameters[value], indices, self._type(*shape, _element(value))), name)
        view = self._view(shape_of(value))
        origin = [*self.batch, rows, columns]
        indices = [o if size != 1 else self.zero for o, size in zip(origin, view)]
        tile_shape = tuple(1 if size == 1 else t for size, t in zip(view[-2:], shape))
        loaded = self._insert(tile.LoadOp(self.parameters[value], indices, self._type(*tile_shape, _element(value))), name)
        if tile_shape == shape:
            return loaded
        return self._insert(tile.BroadcastOp(loaded, self._type(*shape, _element(value))))

    def _view_indices(self, view: RowView, rows: SSAValue, columns: SSAValue) -> list[SSAValue]:
        """Where a block of an operand read through `view` starts in its leaf's [outer, rows,
        width] (`chain_operand_views.py`): the outer index and the first column from the batch
        coordinates, then the block's row."""
        outer, column = self._index(view.outer_offset), self._insert(arith.AddiOp(columns, self._index(view.column_offset)))
        for coordinate, (outer_step, column_step) in zip(self.batch, view.steps):
            if outer_step:
                outer = self._insert(arith.AddiOp(outer, self._insert(arith.MuliOp(coordinate, self._index(outer_step)))))
            if column_step:
                column = self._insert(arith.AddiOp(column, self._insert(arith.MuliOp(coordinate, self._index(column_step)))))
        batch = [*(self.zero for _ in self.batch[1:]), outer] if self.batch else []
        return [*batch, rows, column]

    def _map(
        self, inputs: Sequence[SSAValue], results: Sequence[Attribute], body: Callable[[ScalarBuilder, list[SSAValue]], list[SSAValue]],
        names: Sequence[str],
    ) -> list[SSAValue]:
        shape = inputs[0].type.get_shape()  # type: ignore[attr-defined]
        block = Block(arg_types=[_element(v) for v in inputs])
        scalar = ScalarBuilder(Builder(InsertPoint.at_end(block)))
        scalar.builder.insert(tile.YieldOp(body(scalar, list(block.args))))
        op = tile.MapOp(inputs, [tile.TileType(shape, t) for t in results], Region(block))
        self.builder.insert(op)
        for output, name in zip(op.outputs, names):
            output.name_hint = name
        return list(op.outputs)

    def _broadcast(self, value: SSAValue, columns: int) -> SSAValue:
        return self._insert(tile.BroadcastOp(value, self._type(self.block_rows, columns)))

    def _reduce(self, value: SSAValue, combiner: type[arith.FloatingPointLikeBinaryOperation], name: str) -> SSAValue:
        block = Block(arg_types=[f32, f32])
        combined = combiner(*block.args)
        block.add_ops([combined, tile.YieldOp([combined.result])])
        return self._insert(tile.ReduceOp(value, self.rank_of_tiles - 1, Region(block)), name)

    # -- the kernel -------------------------------------------------------------------------------

    def build(self) -> tile.KernelOp:
        self.rank_of_tiles = len(self.batch_shape) + 2
        self.zero = self._index(0)
        self.batch = self._batch_coordinates()
        program = self._insert(tile.ProgramIdOp(len(self.batch_shape) and 1), "prow")
        if self.chain.causal is not None:  # the row blocks that visit the most keys start first
            last = self._index(-(-self.rows // self.block_rows) - 1)
            program = self._insert(arith.SubiOp(last, program), "row_block")
        self.row = self._insert(arith.MuliOp(program, self._index(self.block_rows)), "m")
        q = self._load(self.chain.scores.a, self.row, self.zero, (self.block_rows, self.depth), "q")
        plain = self.chain.kind == "matmul"
        initial = [
            *([] if plain else [self._splat(-math.inf, self.block_rows, 1, "max0"), self._splat(0.0, self.block_rows, 1, "sum0")]),
            self._splat(0.0, self.block_rows, self.value_depth, "acc0"),
        ]
        body = Block(arg_types=[IndexType(), *(v.type for v in initial)])
        for argument, name in zip(body.args, ("n", "acc") if plain else ("n", "max", "sum", "acc")):
            argument.name_hint = name
        outer, self.builder = self.builder, Builder(InsertPoint.at_end(body))
        self.builder.insert(scf.YieldOp(*(self._plain_block(q, *body.args) if plain else self._key_block(q, *body.args))))
        self.builder = outer
        loop = scf.ForOp(self.zero, self._keys_visited(), self._index(self.block_keys), initial, Region(body))
        self.builder.insert(loop)
        output = self.chain.output.result
        if plain:
            result = self._narrowed(loop.results[0], _element(output), "o")
        else:
            result = self._normalised(loop.results[1], loop.results[2], _element(output))
        if output in self.unit.views:  # written as the transpose that reads it
            indices = self._view_indices(self.unit.views[output].rows, self.row, self.zero)
        else:
            origin, view = [*self.batch, self.row, self.zero], self._view(shape_of(output))
            indices = [o if s != 1 else self.zero for o, s in zip(origin, view)]
        self._insert_store(result, self.parameters[output], indices)
        self.builder.insert(tile.ReturnOp())
        return self.kernel

    def _narrowed(self, value: SSAValue, element: Attribute, name: str) -> SSAValue:
        if element == f32:
            return value
        (narrow,) = self._map([value], [element], lambda b, args: [b.emit(arith.TruncFOp(args[0], element))], [name])
        return narrow

    def _normalised(self, total: SSAValue, accumulator: SSAValue, element: Attribute) -> SSAValue:
        """The accumulator divided by the running sum (with fast math: times its reciprocal)."""
        if self.unit.fast_math:  # one reciprocal per row, a product per element
            one_over = lambda b, args: [b.emit(arith.DivfOp(b.constant(1.0, f32), args[0]))]
            (inverse,) = self._map([total], [f32], one_over, ["inverse_sum"])
            wide, combine = self._broadcast(inverse, self.value_depth), arith.MulfOp
        else:
            wide, combine = self._broadcast(total, self.value_depth), arith.DivfOp

        zero_masked_rows = self.chain.masked_rows != "nan"
        # A fully masked row's sum is 0, its reciprocal (fast math) +inf; `ueq` (ONNX's NaN guard)
        # also takes a NaN sum, `oeq` (core ATen's guard of rows all -inf) does not.
        empty_sum = math.inf if self.unit.fast_math else 0.0
        predicate = "ueq" if self.chain.masked_rows == "zero" else "oeq"

        def normalise(b: ScalarBuilder, args: list[SSAValue]) -> list[SSAValue]:
            quotient = b.emit(combine(args[0], args[1]))
            if zero_masked_rows:  # the NaN guard: a sum of 0 (every score -inf) or NaN gives 0
                masked = b.emit(arith.CmpfOp(args[1], b.constant(empty_sum, f32), predicate))
                quotient = b.emit(arith.SelectOp(masked, b.constant(0.0, f32), quotient))
            return [quotient if element == f32 else b.emit(arith.TruncFOp(quotient, element))]

        (result,) = self._map([accumulator, wide], [element], normalise, ["o"])
        return result

    def _keys_visited(self) -> SSAValue:
        """The key loop's end: N, or with a causal mask min(N, max(0, m + BM + offset)), the keys
        past the last one the block's last row sees being skipped (whole blocks of them)."""
        keys = self._index(self.keys)
        causal = self.chain.causal
        if causal is None:
            return keys
        last_seen = self._insert(arith.AddiOp(self.row, self._index(self.block_rows + causal.offset)))
        seen = self._insert(arith.MaxSIOp(last_seen, self.zero))
        return self._insert(arith.MinSIOp(seen, keys), "keys_visited")

    def _insert_store(self, value: SSAValue, dest: SSAValue, indices: list[SSAValue]) -> None:
        self.builder.insert(tile.StoreOp(value, dest, indices))

    def _batch_coordinates(self) -> list[SSAValue]:
        if not self.batch_shape:
            return []
        remaining = self._insert(tile.ProgramIdOp(0), "batch")
        coordinates = [remaining] * len(self.batch_shape)
        for dim in reversed(range(1, len(self.batch_shape))):
            count = self._index(self.batch_shape[dim])
            coordinates[dim] = self._insert(arith.RemUIOp(remaining, count))
            remaining = self._insert(arith.DivUIOp(remaining, count))
        coordinates[0] = remaining
        return coordinates

    def _plain_block(self, q: SSAValue, n: SSAValue, acc: SSAValue) -> list[SSAValue]:
        """A plain chain's block: acc += f(q @ B[:, n]) @ C[n, :] (f's result 0 past N)."""
        intermediate = self._score_tile(q, n)
        value_type = _element(self.chain.output.b)
        narrow = self._narrowed(intermediate, value_type, "t_narrow")
        v = self._load(self.chain.output.b, n, self.zero, (self.block_keys, self.value_depth), "v")
        return [self._insert(tile.DotOp(narrow, v, acc), "new_acc")]

    def _score_tile(self, q: SSAValue, n: SSAValue) -> SSAValue:
        """The score ops of one block, in f32: -inf past N (0 for a plain chain)."""
        chain, bm, bn = self.chain, self.block_rows, self.block_keys
        if chain.key_transpose is None:
            kt = self._load(chain.keys, self.zero, n, (self.depth, bn), "kt")
        else:  # K [..., N, D] read in place: its [BN, D'] block, transposed as a tile
            kt = self._insert(tile.TransposeOp(self._load(chain.keys, n, self.zero, (bn, self.depth), "k")), "kt")
        scores = self._insert(tile.DotOp(q, kt, self._splat(0.0, bm, bn, "zeros")), "s")
        sides = loaded_sides(chain)
        side_tiles = [self._load(v, self.row, n, (bm, bn), "side") for v in sides]
        if chain.causal is not None:  # the query and key positions, for the mask
            rank = self.rank_of_tiles
            positions = [
                self._insert(tile.RangeOp(self.row, rank - 2, self._type(bm, 1).get_shape()), "query"),
                self._insert(tile.RangeOp(n, rank - 1, self._type(1, bn).get_shape()), "key"),
            ]
            side_tiles += [self._insert(tile.BroadcastOp(p, tile.TileType(self._type(bm, bn).get_shape(), IndexType()))) for p in positions]
        origin = [*(self.zero for _ in self.batch_shape), self.zero, n]
        inside = self._insert(tile.InBoundsOp(origin, [*(1 for _ in self.batch_shape), bm, self.keys], self._type(bm, bn).get_shape()))
        (masked,) = self._map([scores, *side_tiles, inside], [f32], lambda b, args: [self._scores(b, args, sides)], ["t"])
        return masked

    def _key_block(self, q: SSAValue, n: SSAValue, running_max: SSAValue, running_sum: SSAValue, acc: SSAValue) -> list[SSAValue]:
        chain, bn = self.chain, self.block_keys
        masked = self._score_tile(q, n)
        block_max = self._reduce(masked, arith.MaximumfOp, "block_max")

        fast = self.unit.fast_math

        def rescale(b: ScalarBuilder, args: list[SSAValue]) -> list[SSAValue]:
            new = b.emit(arith.MaximumfOp(args[0], args[1]))
            minus_infinity = b.constant(-math.inf, f32)
            safe = b.emit(arith.SelectOp(b.emit(arith.CmpfOp(new, minus_infinity, "oeq")), b.constant(0.0, f32), new))
            if not fast:
                return [new, safe, b.emit(math_dialect.ExpOp(b.emit(arith.SubfOp(args[0], safe))))]
            # The shifts -max log2 e are rounded: alpha moves the old block's terms from the old
            # shift to the new one exactly as rounded (old max times log2 e, recomputed: the same
            # rounding), so that the products of the alphas telescope; a -inf old max gives 0.
            log2_e = b.constant(LOG2_E, f32)
            shift = b.emit(arith.NegfOp(b.emit(arith.MulfOp(safe, log2_e))))
            old_scaled = b.emit(arith.MulfOp(args[0], log2_e))
            return [new, shift, b.emit(math_dialect.Exp2Op(b.emit(arith.AddfOp(old_scaled, shift))))]

        new_max, safe, alpha = self._map([running_max, block_max], [f32, f32, f32], rescale, ["new_max", "shift" if fast else "safe_max", "alpha"])
        if fast:  # exp(t - max) = exp2(t log2 e - max log2 e): one fma and ex2 per score
            exp = lambda b, args: [_exp2_shifted(b, args[0], args[1])]
        else:
            exp = lambda b, args: [b.emit(math_dialect.ExpOp(b.emit(arith.SubfOp(args[0], args[1]))))]
        (probabilities,) = self._map([masked, self._broadcast(safe, bn)], [f32], exp, ["p"])
        block_sum = self._reduce(probabilities, arith.AddfOp, "block_sum")
        fma = lambda b, args: [b.emit(arith.AddfOp(b.emit(arith.MulfOp(args[0], args[1])), args[2]))]
        (new_sum,) = self._map([running_sum, alpha, block_sum], [f32], fma, ["new_sum"])
        scale = lambda b, args: [b.emit(arith.MulfOp(args[0], args[1]))]
        (scaled,) = self._map([acc, self._broadcast(alpha, self.value_depth)], [f32], scale, ["scaled"])
        value_type = _element(chain.output.b)
        if value_type != f32:
            (probabilities,) = self._map([probabilities], [value_type], lambda b, args: [b.emit(arith.TruncFOp(args[0], value_type))], ["p_narrow"])
        v = self._load(chain.output.b, n, self.zero, (bn, self.value_depth), "v")
        new_acc = self._insert(tile.DotOp(probabilities, v, scaled), "new_acc")
        return [new_max, new_sum, new_acc]

    def _scores(self, b: ScalarBuilder, args: list[SSAValue], sides: list[SSAValue]) -> SSAValue:
        """The softmax's input from one product element: the score ops, in f32, -inf past N (with
        fast math, narrow floats carried in f32 throughout: see the module docstring)."""
        chain, fast = self.chain, self.unit.fast_math
        product_type = _element(chain.scores.result)
        product = args[0] if product_type == f32 or fast else b.emit(arith.TruncFOp(args[0], product_type))
        side_values = [_widened(b, value) if fast else value for value in args[1 : 1 + len(sides)]]
        element: dict[SSAValue, SSAValue] = {chain.scores.result: product, **dict(zip(sides, side_values))}
        causal = chain.causal
        if causal is not None:  # key <= query + offset: the mask's allowed value, else its masked one
            query, key = args[1 + len(sides) : 3 + len(sides)]
            limit = b.emit(arith.AddiOp(query, b.emit(arith.ConstantOp.from_int_and_width(causal.offset, IndexType()))))
            seen = b.emit(arith.CmpiOp(key, limit, "sle"))
            mask_type = _carried(_element(causal.value), fast)
            element[causal.value] = b.emit(arith.SelectOp(seen, b.constant(causal.allowed, mask_type), b.constant(causal.masked, mask_type)))

        def element_of(value: SSAValue) -> SSAValue:
            if value not in element and is_splat_constant(value):
                return b.constant(splat_constant_value(value.owner), _carried(_element(value), fast))  # type: ignore[arg-type]
            return element[value]

        for op in chain.score_ops:
            divisor = op.rhs if isinstance(op, graph.DivOp) and is_splat_constant(op.rhs) and fast else None
            if divisor is not None:  # fast math: a product with the f32 reciprocal
                reciprocal = b.constant(1.0 / splat_constant_value(divisor.owner), f32)  # type: ignore[arg-type, operator]
                element[op.results[0]] = b.emit(arith.MulfOp(element_of(op.lhs), reciprocal))
                continue
            element[op.results[0]] = expand_elementwise(op, [element_of(v) for v in op.operands], b, keep_f32=fast)
        score = element_of(chain.softmax_input)
        if score.type != f32:
            score = b.emit(arith.ExtFOp(score, f32))
        outside = 0.0 if chain.kind == "matmul" else -math.inf
        return b.emit(arith.SelectOp(args[-1], score, b.constant(outside, f32)))


def _carried(element_type: Attribute, fast: bool) -> Attribute:
    """The type a value of `element_type` is computed in: f32 for narrow floats with fast math."""
    narrow = isinstance(element_type, Float16Type | BFloat16Type)
    return f32 if fast and narrow else element_type


def _widened(b: ScalarBuilder, value: SSAValue) -> SSAValue:
    """A narrow float loaded from memory, extended to f32 (exactly) for fast math."""
    return b.emit(arith.ExtFOp(value, f32)) if isinstance(value.type, Float16Type | BFloat16Type) else value


LOG2_E = math.log2(math.e)


def _exp2_shifted(b: ScalarBuilder, value: SSAValue, shift: SSAValue) -> SSAValue:
    """exp2(value * log2 e + shift): with shift = -max * log2 e, exp(value - max)."""
    return b.emit(math_dialect.Exp2Op(b.emit(math_dialect.FmaOp(value, b.constant(LOG2_E, f32), shift))))


def build_attention_kernel(name: str, unit: AttentionUnit) -> tile.KernelOp:
    return AttentionKernelBuilder(name, unit).build()
