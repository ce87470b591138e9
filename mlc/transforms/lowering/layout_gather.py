"""A layout op's tile in a group kernel: coordinates, index maps, gathers and piece selection.

`group_kernel.py` calls `LayoutTiles.build` for a value computed by a chain of layout ops
(transpose, slice, concat, broadcast; `analysis/layout_maps.py`) from the group's inputs and
splat constants. No copy of any intermediate is made; the tile is read straight from the inputs:

    %c0 = tile.range %origin0 axis 0        the value's coordinates, one index tile per dimension
    %c1 = tile.range %origin1 axis 1        that some index map uses
    %i:k = tile.map %c0, %c1 { offset + stride * c for every index of every piece;
                               -1 in the first index outside the piece's ranges (a read skipped) }
    %p_j = tile.gather %input_j[%i...]      one per piece read from memory
    %v = tile.map %p_0, ..., %c0, %c1 { select(in piece 0, p_0, select(in piece 1, p_1, ... )) }

A single piece without ranges (a transpose, a slice) is its gather, or, when each of its indices
is its own coordinate plus a constant (a slice of unit steps, a zero padding of a convolution's
input), one `tile.load` at the shifted origin: a block read whose accesses are coalesced and
vectorised where aligned, elements outside the leaf (a negative origin too) its padding; not
when the last index is shifted (the lowering's chunks along it assume an aligned start). Splat constants are pieces
without a read (the padding of a pool or a convolution, concatenated). When every read piece
reads the same input and the other pieces are one splat constant (a padded window, the slices
of a convolution's column matrix), the index map selects the applicable piece's indices and one
gather reads them, its padding the constant (index -1 where only the constant applies). Conditions and indices
whose map is constant are folded while building. Indices past the leaf's rank (the kernel's
memrefs are left-padded to the domain's rank) are 0.

Limits: every gathered element is one scalar read (no vector access), and a transpose reads one side of
each tile strided; on the GPU no shared-memory staging is done yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects.element_types import is_float
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.layout_maps import AxisMap, Piece, pieces
from mlc.transforms.analysis.operand_maps import splat_of
from mlc.transforms.lowering.elementwise_expansion import ScalarBuilder, splat_constant_value


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.element_type


def _rank(value: SSAValue) -> int:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_num_dims()


def _constant_range(condition: tuple[AxisMap, int, int]) -> bool | None:
    """The value of a range condition whose map is constant, else None."""
    axis_map, low, high = condition
    return low <= axis_map.offset < high if axis_map.dim is None else None


@dataclass
class LayoutTiles:
    """Builds layout values as tiles at one insertion point (see the module docstring)."""

    builder: Builder
    is_leaf: Callable[[SSAValue], bool]
    source_of: Callable[[SSAValue], SSAValue | None]
    """The memref a leaf is read from (a kernel parameter), None for a splat constant."""

    def build(self, value: SSAValue, tile_shape: tuple[int, ...], origin: Sequence[SSAValue]) -> SSAValue:
        """`value` as a tile of `tile_shape` at `origin` (one index per tile dimension)."""
        found = []
        for piece in pieces(value, self.is_leaf, splat_of):
            ranges = tuple(r for r in piece.ranges if _constant_range(r) is None)
            if all(_constant_range(r) is not False for r in piece.ranges):
                found.append(Piece(piece.leaf, piece.indices, ranges, piece.padding))
        read = [p for p in found if self.source_of(p.leaf) is not None]
        skipped = len(tile_shape) - _rank(value)
        if len(found) == 1 and read and not read[0].ranges:
            block = self._translated_load(read[0], skipped, tile_shape, origin, _element_type(value))
            if block is not None:
                return block
        dims = sorted({m.dim for p in found for m in (*p.indices, *(r[0] for r in p.ranges)) if m.dim is not None})
        coordinates = {d: self._insert(tile.RangeOp(origin[skipped + d], skipped + d, tile_shape)) for d in dims}
        merged = self._merged_gather(value, found, read, coordinates, tile_shape)
        if merged is not None:
            return merged
        gathered = self._gathers(read, coordinates, tile_shape)
        if len(found) == 1 and read and not found[0].ranges:
            return gathered[0]
        return self._select(value, found, gathered, coordinates, tile_shape)

    def _translated_load(
        self, piece: Piece, skipped: int, tile_shape: tuple[int, ...], origin: Sequence[SSAValue], element_type: Attribute
    ) -> SSAValue | None:
        """One `tile.load` when every index of the piece is its own coordinate plus a constant (a
        slice of unit steps, a zero padding): the block at the shifted origin, whose accesses
        lower to coalesced (vector where aligned) reads, the padding outside the leaf (a negative
        origin included). Not shifted along the last dimension: the lowering takes a chunk there
        as all in or all out when the dimension is a multiple of its width, which a shifted origin
        breaks. None for any other map."""
        source = self.source_of(piece.leaf)
        assert source is not None
        rank = source.type.get_num_dims()  # type: ignore[attr-defined]
        if rank != len(tile_shape):
            return None
        maps = [AxisMap(None, 0, 0)] * (rank - len(piece.indices)) + list(piece.indices)
        if maps[-1].offset != 0:  # chunks along the last dimension stay aligned as the lowering assumes
            return None
        indices: list[SSAValue] = []
        for dim, axis_map in enumerate(maps):
            if axis_map.dim is None and axis_map.offset == 0 and tile_shape[dim] == 1:
                indices.append(self._index_constant(0))
            elif axis_map.dim is not None and axis_map.dim + skipped == dim and axis_map.stride == 1:
                shifted = origin[dim]
                if axis_map.offset:
                    shifted = self.builder.insert(arith.AddiOp(shifted, self._index_constant(axis_map.offset))).result
                indices.append(shifted)
            else:
                return None
        load = tile.LoadOp(source, indices, tile.TileType(tile_shape, element_type))
        if piece.padding is not None:
            load.properties["padding"] = _scalar_attribute(piece.padding, element_type)
        return self.builder.insert(load).result

    def _index_constant(self, value: int) -> SSAValue:
        return self.builder.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    def _merged_gather(
        self, value: SSAValue, found: list[Piece], read: list[Piece], coordinates: dict[int, SSAValue], tile_shape: tuple[int, ...]
    ) -> SSAValue | None:
        """One gather when every piece read from memory reads the same leaf and the other pieces
        are one splat constant (padding, the windows of a convolution): the map selects the
        piece's indices, -1 (the padding) where no read piece applies. None otherwise."""
        if not read or len({p.leaf for p in read}) != 1 or (len(read) == 1 and not read[0].ranges):
            return None
        constants = {splat_constant_value(p.leaf.owner) for p in found if p not in read}  # type: ignore[arg-type]
        paddings = {p.padding for p in read if p.padding is not None}
        if len(constants | paddings) > 1:
            return None
        source = self.source_of(read[0].leaf)
        assert source is not None
        rank = source.type.get_num_dims()  # type: ignore[attr-defined]

        maps = [[AxisMap(None, 0, 0)] * (rank - len(p.indices)) + list(p.indices) for p in read]
        # A dimension every piece indexes alike needs no choice (all but the window's, for a
        # convolution); the first carries the padding's -1.
        shared = [not (constants and d == 0) and all(m[d] == maps[0][d] for m in maps) for d in range(rank)]

        def indices(scalar: ScalarBuilder, _: list[SSAValue], c: dict[int, SSAValue]) -> list[SSAValue]:
            chosen: list[SSAValue] | None = None
            if constants:  # -1 (the padding) where no read piece applies
                chosen = [_affine(scalar, maps[0][d], c) if shared[d] else _index(scalar, -1) for d in range(rank)]
            for piece, piece_maps in reversed(list(zip(read, maps))):
                own = [_affine(scalar, m, c) if chosen is None or not shared[d] else None for d, m in enumerate(piece_maps)]
                if chosen is None:
                    chosen = own  # type: ignore[assignment]
                    continue
                inside = _all_in_ranges(scalar, piece.ranges, c)
                chosen = [other if mine is None else scalar.emit(arith.SelectOp(inside, mine, other)) for mine, other in zip(own, chosen)]
            assert chosen is not None
            return chosen

        index_tiles = self._map([], coordinates, tile_shape, indices) if rank else []
        gather = tile.GatherOp(source, index_tiles, tile.TileType(tile_shape, _element_type(value)))
        if constants | paddings:
            (padding,) = constants | paddings
            gather.properties["padding"] = _scalar_attribute(padding, _element_type(value))
        return self._insert(gather)

    def _insert(self, op: tile.RangeOp | tile.GatherOp | tile.MapOp) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    def _map(
        self,
        inputs: list[SSAValue],
        coordinates: dict[int, SSAValue],
        tile_shape: tuple[int, ...],
        body: Callable[[ScalarBuilder, list[SSAValue], dict[int, SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        """A `tile.map` over `inputs` and the coordinate tiles; `body` gets their elements."""
        operands = [*inputs, *coordinates.values()]
        block = Block(arg_types=[t.type.element_type for t in operands])  # type: ignore[attr-defined]
        scalar = ScalarBuilder(Builder(InsertPoint.at_end(block)))
        elements = dict(zip(coordinates, block.args[len(inputs) :]))
        yielded = body(scalar, list(block.args[: len(inputs)]), elements)
        scalar.builder.insert(tile.YieldOp(yielded))
        result_types = [tile.TileType(tile_shape, v.type) for v in yielded]
        return list(self.builder.insert(tile.MapOp(operands, result_types, Region(block))).outputs)

    def _gathers(self, read: list[Piece], coordinates: dict[int, SSAValue], tile_shape: tuple[int, ...]) -> list[SSAValue]:
        if not read:
            return []

        def indices(scalar: ScalarBuilder, _: list[SSAValue], c: dict[int, SSAValue]) -> list[SSAValue]:
            yielded = []
            for piece in read:
                memref_rank = self.source_of(piece.leaf).type.get_num_dims()  # type: ignore[union-attr]
                padded = [AxisMap(None, 0, 0)] * (memref_rank - len(piece.indices)) + list(piece.indices)
                values = [_affine(scalar, m, c) for m in padded]
                if piece.ranges and values:
                    inside = _all_in_ranges(scalar, piece.ranges, c)
                    values[0] = scalar.emit(arith.SelectOp(inside, values[0], _index(scalar, -1)))
                yielded += values
            return yielded

        index_tiles = self._map([], coordinates, tile_shape, indices)
        results = []
        for piece in read:
            source = self.source_of(piece.leaf)
            assert source is not None
            count = source.type.get_num_dims()  # type: ignore[attr-defined]
            own, index_tiles = index_tiles[:count], index_tiles[count:]
            result_type = tile.TileType(tile_shape, _element_type(piece.leaf))
            gather = tile.GatherOp(source, own, result_type)
            if piece.padding is not None:
                gather.properties["padding"] = _scalar_attribute(piece.padding, _element_type(piece.leaf))
            results.append(self._insert(gather))
        return results

    def _select(
        self,
        value: SSAValue,
        found: list[Piece],
        gathered: list[SSAValue],
        coordinates: dict[int, SSAValue],
        tile_shape: tuple[int, ...],
    ) -> SSAValue:
        element_type = _element_type(value)

        def choose(scalar: ScalarBuilder, reads: list[SSAValue], c: dict[int, SSAValue]) -> list[SSAValue]:
            remaining = iter(reads)
            values = []
            for piece in found:
                if self.source_of(piece.leaf) is not None:
                    values.append(next(remaining))
                else:
                    constant = piece.leaf.owner
                    assert isinstance(constant, graph.ConstantOp)
                    values.append(scalar.constant(splat_constant_value(constant), element_type))  # type: ignore[arg-type]
            result = values[-1]
            for piece, element in reversed(list(zip(found[:-1], values[:-1]))):
                result = scalar.emit(arith.SelectOp(_all_in_ranges(scalar, piece.ranges, c), element, result))
            return [result]

        return self._map(gathered, coordinates, tile_shape, choose)[0]


def _index(scalar: ScalarBuilder, value: int) -> SSAValue:
    return scalar.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


def _affine(scalar: ScalarBuilder, axis_map: AxisMap, coordinates: dict[int, SSAValue]) -> SSAValue:
    """`offset + stride * c[dim]` as index arithmetic (constants folded)."""
    if axis_map.dim is None:
        return _index(scalar, axis_map.offset)
    result = coordinates[axis_map.dim]
    if axis_map.stride != 1:
        result = scalar.emit(arith.MuliOp(result, _index(scalar, axis_map.stride)))
    if axis_map.offset != 0:
        result = scalar.emit(arith.AddiOp(result, _index(scalar, axis_map.offset)))
    return result


def _all_in_ranges(
    scalar: ScalarBuilder, ranges: tuple[tuple[AxisMap, int, int], ...], coordinates: dict[int, SSAValue]
) -> SSAValue:
    """Whether `low <= map(c) < high` for every range (true when there is none)."""
    result: SSAValue | None = None
    for axis_map, low, high in ranges:
        position = _affine(scalar, axis_map, coordinates)
        # One unsigned comparison: position - low < high - low also rejects positions below low.
        shifted = scalar.emit(arith.SubiOp(position, _index(scalar, low))) if low else position
        inside = scalar.emit(arith.CmpiOp(shifted, _index(scalar, high - low), "ult"))
        result = inside if result is None else scalar.emit(arith.AndIOp(result, inside))
    if result is None:
        return scalar.emit(arith.ConstantOp(IntegerAttr(1, 1)))
    return result


def _scalar_attribute(value: float | int | None, element_type: Attribute) -> Attribute:
    if is_float(element_type):
        return FloatAttr(float(value), element_type)  # type: ignore[arg-type]
    return IntegerAttr(int(value), element_type)  # type: ignore[arg-type]


