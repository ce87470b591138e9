"""A matmul block stored through a layout chain: the inverse index maps as `tile.scatter` indices.

`matmul_kernel.py` calls `scatter_through` for a product whose only reader is a chain of
reshapes, unit-step slices and transposes (`operand_maps.output_layout_chain`: a convolution's
padded grid -> (N, Hp, Wp, O) -> the output pixels -> NCHW). Instead of storing the block at
`(m, n)` and running the chain as a kernel of its own, the kernel writes each element of its
block where the chain puts it:

    %r = tile.range %m axis 0 : [BM, 1]      %c = tile.range %n axis 1 : [1, BN]
    %i:k = tile.map %r { the result indices that depend on the row only }      [BM, 1]
    %j:l = tile.map %c { those that depend on the column only }                [1, BN]
    tile.scatter %block, %result[broadcast %i..., %j...]

Algorithm: the product coordinates (r, c) are pushed forward through the chain, one index
expression per dimension of each value, each knowing which product coordinates it depends on:

    reshape      per group of dimensions with equal products (a split or a merge), the group's
                 source indices linearised and delinearised into its result dimensions (the
                 first without a modulo, so that rows past the product's end land outside; a
                 merged source other than the first must lie inside its size: the block's
                 columns past the product would carry into the next row);
    slice        index - start, inside when `0 <= index - start < end - start` (one unsigned compare);
    transpose    the indices permuted.

An index outside its slice becomes -1, which `tile.scatter` drops (a padded grid's extra pixels);
an index past its dimension is dropped too. Indices that depend on the row only are computed once
per row of the thread's micro-tile (a map over a [BM, 1] range), those of the column once per
column; an index depending on both (a reshape merging rows and columns) is a map over the block.

Preconditions: a 2-D product (no batch dimensions), the chain as `output_layout_chain` returns it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.elementwise_expansion import ScalarBuilder

Coordinates = dict[int, SSAValue]
"""The product coordinates a map body sees: 0 the row, 1 the column."""


@dataclass(frozen=True)
class IndexExpression:
    """One index of a value of the chain, as scalar code over the product coordinates."""

    depends_on: frozenset[int]
    """The product coordinates (0 row, 1 column) it is computed from."""
    emit: Callable[[ScalarBuilder, Coordinates], tuple[SSAValue, SSAValue | None]]
    """Emits (the index, whether it lies inside every slice on the way, None when always)."""
    coordinate: int | None = None
    """The product coordinate the index is, unchanged (its range tile is the index tile), if it is one."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_shape()


def _constant(scalar: ScalarBuilder, value: int) -> SSAValue:
    return scalar.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


def _both(scalar: ScalarBuilder, a: SSAValue | None, b: SSAValue | None) -> SSAValue | None:
    if a is None or b is None:
        return a if b is None else b
    return scalar.emit(arith.AndIOp(a, b))


def reshape_groups(source: Sequence[int], target: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Dimensions of `source` and `target` in groups of equal products (splits and merges), in
    order; dimensions of size 1 left over at the end join the last group."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(source) and j < len(target):
        sources, targets = [i], [j]
        source_size, target_size = source[i], target[j]
        i, j = i + 1, j + 1
        while source_size != target_size:
            if source_size < target_size:
                sources.append(i)
                source_size, i = source_size * source[i], i + 1
            else:
                targets.append(j)
                target_size, j = target_size * target[j], j + 1
        groups.append((sources, targets))
    if not groups:
        return [(list(range(len(source))), list(range(len(target))))]
    groups[-1][0].extend(range(i, len(source)))
    groups[-1][1].extend(range(j, len(target)))
    return groups


def _reshaped(indices: list[IndexExpression], source: Sequence[int], target: Sequence[int]) -> list[IndexExpression]:
    result: list[IndexExpression | None] = [None] * len(target)
    for sources, targets in reshape_groups(source, target):
        if len(sources) == 1 and len(targets) == 1:  # a dimension the reshape keeps
            result[targets[0]] = indices[sources[0]]
            continue
        depends_on = frozenset().union(*(indices[s].depends_on for s in sources))
        for position, dim in enumerate(targets):
            below = math.prod(target[t] for t in targets[position + 1 :])

            def emit(
                scalar: ScalarBuilder, c: Coordinates, sources: list[int] = sources, below: int = below, first: bool = position == 0, size: int = target[dim]
            ) -> tuple[SSAValue, SSAValue | None]:
                linear, inside = _constant(scalar, 0), None
                for s in sources:
                    index, condition = indices[s].emit(scalar, c)
                    if s != sources[0]:  # past its size it would carry into the next source's digit
                        condition = _both(scalar, condition, scalar.emit(arith.CmpiOp(index, _constant(scalar, source[s]), "ult")))
                    inside = _both(scalar, inside, condition)
                    linear = scalar.emit(arith.AddiOp(scalar.emit(arith.MuliOp(linear, _constant(scalar, source[s]))), index))
                digit = scalar.emit(arith.DivUIOp(linear, _constant(scalar, below))) if below != 1 else linear
                if not first:
                    digit = scalar.emit(arith.RemUIOp(digit, _constant(scalar, size)))
                return digit, inside

            result[dim] = IndexExpression(depends_on, emit)
    assert all(expression is not None for expression in result)
    return result  # type: ignore[return-value]


def _sliced(indices: list[IndexExpression], op: graph.SliceOp) -> list[IndexExpression]:
    result = []
    for expression, size, start, end in zip(indices, _shape(op.x), op.starts.get_values(), op.ends.get_values()):
        low, high, _ = slice(start, end, 1).indices(size)
        if low == 0 and high == size:
            result.append(expression)
            continue

        def emit(scalar: ScalarBuilder, c: Coordinates, inner: IndexExpression = expression, low: int = low, count: int = max(high - low, 0)) -> tuple[SSAValue, SSAValue | None]:
            index, inside = inner.emit(scalar, c)
            shifted = scalar.emit(arith.SubiOp(index, _constant(scalar, low))) if low else index
            kept = scalar.emit(arith.CmpiOp(shifted, _constant(scalar, count), "ult"))
            return shifted, _both(scalar, inside, kept)

        result.append(IndexExpression(expression.depends_on, emit))
    return result


def result_indices(chain: Sequence[Operation]) -> list[IndexExpression]:
    """The index expressions of the chain's result, for the 2-D product the chain reads."""
    first = chain[0].operands[0]
    indices = [
        IndexExpression(frozenset({axis}), lambda scalar, c, axis=axis: (c[axis], None), axis) for axis in range(len(_shape(first)))
    ]
    for op in chain:
        if isinstance(op, graph.ReshapeOp):
            indices = _reshaped(indices, _shape(op.operands[0]), _shape(op.results[0]))
        elif isinstance(op, graph.SliceOp):
            indices = _sliced(indices, op)
        else:
            assert isinstance(op, graph.TransposeOp)
            indices = [indices[axis] for axis in op.normalized_perm()]
    return indices


def scatter_through(builder: Builder, block: SSAValue, dest: SSAValue, chain: Sequence[Operation], origin: Sequence[SSAValue]) -> None:
    """Inserts, at `builder`, the scatter of `block` (the product's [BM, BN] tile at `origin`)
    into `dest` (the chain's result) through `chain` (see the module docstring)."""
    block_type = block.type
    assert isinstance(block_type, tile.TileType)
    rows, columns = block_type.get_shape()
    ranges = {
        0: builder.insert(tile.RangeOp(origin[0], 0, (rows, 1))).result,
        1: builder.insert(tile.RangeOp(origin[1], 1, (1, columns))).result,
    }
    expressions = result_indices(chain)
    index_tiles: list[SSAValue | None] = [
        None if e.coordinate is None else _broadcast(builder, ranges[e.coordinate], (rows, columns)) for e in expressions
    ]
    for depends_on in (frozenset({0}), frozenset({1}), frozenset({0, 1})):
        dims = [d for d, e in enumerate(expressions) if e.coordinate is None and (e.depends_on or frozenset({0})) == depends_on]
        if not dims:
            continue
        shape = (rows if 0 in depends_on else 1, columns if 1 in depends_on else 1)
        inputs = [ranges[axis] if shape == ranges[axis].type.get_shape() else _broadcast(builder, ranges[axis], shape) for axis in sorted(depends_on)]  # type: ignore[attr-defined]
        body = Block(arg_types=[IndexType()] * len(inputs))
        scalar = ScalarBuilder(Builder(InsertPoint.at_end(body)))
        coordinates = dict(zip(sorted(depends_on), body.args))
        yielded = []
        for d in dims:
            index, inside = expressions[d].emit(scalar, coordinates)
            yielded.append(index if inside is None else scalar.emit(arith.SelectOp(inside, index, _constant(scalar, -1))))
        scalar.builder.insert(tile.YieldOp(yielded))
        mapped = builder.insert(tile.MapOp(inputs, [tile.TileType(shape, IndexType())] * len(dims), Region(body))).outputs
        for d, index_tile in zip(dims, mapped):
            index_tiles[d] = index_tile if shape == (rows, columns) else _broadcast(builder, index_tile, (rows, columns))
    builder.insert(tile.ScatterOp(block, dest, [t for t in index_tiles if t is not None]))


def _broadcast(builder: Builder, value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    return builder.insert(tile.BroadcastOp(value, tile.TileType(shape, value.type.element_type))).result  # type: ignore[attr-defined]
