"""The tile dialect's memory accesses: blocks (load, store), per-element positions (gather,
scatter) and the index tiles that address them (in_bounds, range).

What: `tile.load` / `tile.store` move the block of a memref at an origin with the tile's shape,
masked at the memref's bounds (padding in, dropped out); `tile.gather` / `tile.scatter` read and
write at per-element positions given by one index tile per memref dimension; `tile.in_bounds`
is the load's mask made explicit and `tile.range` the coordinates of a block along one axis,
from which kernels compute those positions. `ops.py` states the semantics.

Verification: one index (or index tile) per memref dimension; the tile's rank equals the
memref's (blocks) or index tiles have the data tile's shape (gather, scatter); element types
agree and a padding has the memref's element type. Limits: in_bounds' bounds are static.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
    i1,
    i64,
)
from xdsl.ir import (
    Attribute,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.graph.ops import format_shape
from mlc.dialects.kernels import (
    format_integer_list,
    parse_integer_list,
)
from mlc.dialects.tile.kernel import TileType


def _verify_same_element_type(memref_type: MemRefType, memref_role: str, tile_type: TileType, tile_role: str) -> None:
    if tile_type.element_type != memref_type.element_type:
        raise VerifyException(
            f"{tile_role} tile element type {tile_type.element_type} must equal the element type "
            f"{memref_type.element_type} of {memref_role}"
        )


def _verify_block_access(
    memref_value: SSAValue,
    memref_role: str,
    indices: Sequence[SSAValue],
    tile_type: Attribute,
    tile_role: str,
) -> None:
    """Checks a load or store; the roles name the operands in messages ("source", "result")."""
    memref_type = memref_value.type
    assert isinstance(memref_type, MemRefType)
    if not isinstance(tile_type, TileType):  # pragma: no cover - the IRDL constraint checks it first
        raise VerifyException(f"{tile_role} must be a tile, got {tile_type}")
    rank = memref_type.get_num_dims()
    if len(indices) != rank:
        raise VerifyException(
            f"expected {rank} indices for {memref_role} of type {memref_type}, got {len(indices)}"
        )
    if len(tile_type.get_shape()) != rank:
        raise VerifyException(
            f"{tile_role} tile rank {len(tile_type.get_shape())} must equal the rank {rank} of "
            f"{memref_role} of type {memref_type}"
        )
    _verify_same_element_type(memref_type, memref_role, tile_type, tile_role)


def _verify_indexed_access(
    memref_value: SSAValue,
    memref_role: str,
    indices: Sequence[SSAValue],
    tile_type: Attribute,
    tile_role: str,
) -> None:
    """Checks a gather or scatter: one index tile per dimension of the memref, each a tile of
    index of the data tile's shape; the roles name the operands in messages ("dest", "value")."""
    memref_type = memref_value.type
    assert isinstance(memref_type, MemRefType) and isinstance(tile_type, TileType)
    if len(indices) != memref_type.get_num_dims():
        raise VerifyException(
            f"expected {memref_type.get_num_dims()} index tiles for {memref_role} of type {memref_type}, got {len(indices)}"
        )
    _verify_same_element_type(memref_type, memref_role, tile_type, tile_role)
    for index, position in enumerate(indices):
        index_type = position.type
        assert isinstance(index_type, TileType)
        if not isinstance(index_type.element_type, IndexType) or index_type.get_shape() != tile_type.get_shape():
            raise VerifyException(
                f"index tile #{index} must be a tile of index of the {tile_role}'s shape "
                f"{format_shape(tile_type.get_shape())}, got {index_type}"
            )


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Reads the block of `source` at origin `indices` with the result tile's shape.

    Elements outside `source` read as `padding` (zero when absent).
    """

    name = "tile.load"
    source = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    padding = opt_prop_def(FloatAttr | IntegerAttr)
    result = result_def(TileType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = (
        "$source `[` $indices `]` (`padding` $padding^)? attr-dict `:` type($source) `->` type($result)"
    )

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue], result_type: TileType):
        super().__init__(operands=[source, indices], result_types=[result_type])

    def verify_(self) -> None:
        _verify_block_access(self.source, "source", self.indices, self.result.type, "result")
        element_type = self.source.type.element_type  # type: ignore[attr-defined]
        if self.padding is not None and self.padding.type != element_type:
            raise VerifyException(
                f"padding {self.padding} must have the element type {element_type} of source"
            )


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Writes `value` to the block of `dest` at origin `indices`; elements outside `dest` are dropped."""

    name = "tile.store"
    value = operand_def(TileType)
    dest = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, indices])

    def verify_(self) -> None:
        _verify_block_access(self.dest, "dest", self.indices, self.value.type, "value")


@irdl_op_definition
class InBoundsOp(IRDLOperation):
    """Which elements of the block at `indices` (with the result's shape) lie inside `bounds`.

    The i1 tile that `tile.load` uses as its mask, made explicit: computations that must ignore
    out-of-bounds elements (reductions) select with it, since padding alone does not survive
    arbitrary elementwise ops. The bounds are static, so a kernel can mask an iteration domain
    that no single memref has (a reduction over broadcast inputs).
    """

    name = "tile.in_bounds"
    indices = var_operand_def(IndexType)
    bounds = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TileType)
    traits = traits_def(Pure())

    def __init__(self, indices: Sequence[SSAValue], bounds: Sequence[int], shape: Sequence[int]):
        super().__init__(
            operands=[indices],
            properties={"bounds": DenseArrayBase.from_list(i64, bounds)},
            result_types=[TileType(shape, i1)],
        )

    def bounds_shape(self) -> tuple[int, ...]:
        return tuple(self.bounds.get_values())  # type: ignore[arg-type]

    def verify_(self) -> None:
        result_type = self.result.type
        assert isinstance(result_type, TileType)
        bounds = self.bounds_shape()
        if result_type.element_type != i1:
            raise VerifyException(f"result must be a tile of i1, got {result_type}")
        if len(self.indices) != len(bounds):
            raise VerifyException(f"expected {len(bounds)} indices for bounds {format_integer_list(bounds)}, got {len(self.indices)}")
        if len(result_type.get_shape()) != len(bounds):
            raise VerifyException(f"result rank {len(result_type.get_shape())} must equal the rank of the bounds {len(bounds)}")
        if any(b < 0 for b in bounds):
            raise VerifyException(f"bounds must not be negative, got {format_integer_list(bounds)}")

    @classmethod
    def parse(cls, parser: Parser) -> InBoundsOp:
        indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType()))
        parser.parse_keyword("within")
        bounds = parse_integer_list(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result_type = parser.parse_type()
        return cls.create(
            operands=indices,
            properties={"bounds": DenseArrayBase.from_list(i64, bounds)},
            result_types=[result_type],
            attributes=attributes,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" [")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string(f"] within {format_integer_list(self.bounds_shape())}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)


@irdl_op_definition
class RangeOp(IRDLOperation):
    """The coordinates along `axis` of a block: element p holds `start + p[axis]` (index).

    Triton's `arange`, placed in a block: with `start` the block's origin along `axis`, it gives
    each element its index in the iteration domain, from which a kernel computes the positions
    it gathers (`tile.gather`) when a value is read through an index map (a transpose, a slice,
    a concatenation).
    """

    name = "tile.range"
    start = operand_def(IndexType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TileType)
    traits = traits_def(Pure())
    assembly_format = "$start `axis` $axis attr-dict `:` type($result)"

    def __init__(self, start: SSAValue, axis: int, shape: Sequence[int]):
        super().__init__(
            operands=[start], properties={"axis": IntegerAttr(axis, i64)}, result_types=[TileType(shape, IndexType())]
        )

    def verify_(self) -> None:
        result_type = self.result.type
        assert isinstance(result_type, TileType)
        if not isinstance(result_type.element_type, IndexType):
            raise VerifyException(f"result must be a tile of index, got {result_type}")
        rank = len(result_type.get_shape())
        if not 0 <= self.axis.value.data < rank:
            raise VerifyException(f"axis {self.axis.value.data} is outside the result's {rank} dimensions")


@irdl_op_definition
class GatherOp(IRDLOperation):
    """Reads `source` at per-element positions: element p is `source[indices[0][p], ...]`.

    One index tile per dimension of `source`, each of the result's shape. Elements whose
    position lies outside `source` (an index below 0 or past the dimension) read `padding`
    (zero when absent), as `tile.load` does at the memref's bounds; a kernel selects an
    element away by giving it the index -1. The general access of values read through an index
    map; lowerings emit one bounds-checked scalar read per element.
    """

    name = "tile.gather"
    source = operand_def(MemRefType)
    indices = var_operand_def(TileType)
    padding = opt_prop_def(FloatAttr | IntegerAttr)
    result = result_def(TileType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = (
        "$source `[` $indices `]` (`padding` $padding^)? attr-dict `:` type($source) `,` type($indices) `->` type($result)"
    )

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue], result_type: TileType):
        super().__init__(operands=[source, indices], result_types=[result_type])

    def verify_(self) -> None:
        _verify_indexed_access(self.source, "source", self.indices, self.result.type, "result")
        element_type = self.source.type.element_type  # type: ignore[attr-defined]
        if self.padding is not None and self.padding.type != element_type:
            raise VerifyException(f"padding {self.padding} must have the element type {element_type} of source")


@irdl_op_definition
class ScatterOp(IRDLOperation):
    """Writes `value` at per-element positions: element p goes to `dest[indices[0][p], ...]`.

    `tile.gather`'s counterpart: one index tile per dimension of `dest`, each of the value's
    shape. Elements whose position lies outside `dest` (an index below 0 or past the dimension)
    are dropped, as `tile.store` drops those outside the memref; a kernel drops an element by
    giving it the index -1. Positions of kept elements must be distinct. What a matmul's epilogue
    uses to write its product through the inverse of a layout chain (a convolution's slice and
    transpose back to NCHW, `lowering/scattered_store.py`); lowerings emit one bounds-checked
    scalar write per element.
    """

    name = "tile.scatter"
    value = operand_def(TileType)
    dest = operand_def(MemRefType)
    indices = var_operand_def(TileType)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$value `,` $dest `[` $indices `]` attr-dict `:` type($value) `,` type($dest) `,` type($indices)"

    def __init__(self, value: SSAValue, dest: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, indices])

    def verify_(self) -> None:
        _verify_indexed_access(self.dest, "dest", self.indices, self.value.type, "value")
