"""The tile dialect: SPMD block programs over tiles, in the manner of Triton.

A `tile.kernel` is a program run once per point of its `grid`; `tile.program_id` tells an instance
which point it is. The program moves whole tiles (`!tile.tile<4x256xf32>`, values held by the
program, never in memory) between memrefs and computes on them:

    tile.kernel @add(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) grid [4] {
      %pid = tile.program_id 0
      %c256 = arith.constant 256 : index
      %offset = arith.muli %pid, %c256 : index
      %a = tile.load %x[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
      %b = tile.load %y[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
      %s = tile.map %a, %b : !tile.tile<256xf32>, !tile.tile<256xf32> -> !tile.tile<256xf32> {
      ^bb0(%u: f32, %v: f32):
        %w = arith.addf %u, %v : f32
        tile.yield %w : f32
      }
      tile.store %s, %out[%offset] : !tile.tile<256xf32>, memref<1000xf32>
      tile.return
    }

`tile.load` and `tile.store` address a block of the memref whose origin is the index list and
whose shape is the tile's: elements outside the memref are read as `padding` (zero unless given)
and are never written. This implicit masking at the memref's bounds is what lets one kernel cover
sizes that are not multiples of the tile. Elementwise computation is one region, `tile.map`, whose
body is scalar `arith`/`math` code applied to every element; a fused chain of graph ops becomes one
map. `tile.broadcast` stretches size-1 dimensions (numpy rules). Host functions launch kernels
with `tile.launch` (see `mlc.dialects.kernels` for the host/kernel contract).

`tile.reduce` combines along an axis; `tile.dot` multiplies two tiles into an f32 accumulator.
A K loop is an `scf.for` inside the kernel whose iteration arguments carry accumulator tiles:

    %acc = scf.for %k = %c0 to %cK step %c16 iter_args(%partial = %zero) -> (!tile.tile<64x64xf32>) {
      %a = tile.load %x[%m, %k] : memref<100x200xf16> -> !tile.tile<64x16xf16>
      %b = tile.load %y[%k, %n] : memref<200x300xf16> -> !tile.tile<16x64xf16>
      %next = tile.dot %a, %b, %partial : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
      scf.yield %next : !tile.tile<64x64xf32>
    }

The upstream loop is used rather than a `tile.for` of our own: its syntax, verifier, interpreter,
canonicalisation (a single-trip loop is inlined) and region-aware passes (cse, licm) all apply
unchanged, as they do for Triton's K loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    BFloat16Type,
    Float16Type,
    Float32Type,
    FloatAttr,
    FunctionType,
    I64,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    i1,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
    Pure,
    RecursiveMemoryEffect,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.graph.ops import broadcast_shapes, format_shape
from mlc.dialects.kernels import (
    format_integer_list,
    parse_integer_list,
    parse_kernel_signature,
    parse_launch,
    parse_launch_types,
    print_kernel_signature,
    print_launch_arguments,
    print_launch_types,
    verify_kernel_signature,
    verify_launch,
)
from mlc.dialects.precision import DEFAULT_PRECISION, precision_problem


@irdl_attr_definition
class TileType(ParametrizedAttribute, TypeAttribute):
    """`!tile.tile<4x256xf32>`: a block of values held by one program instance."""

    name = "tile.tile"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type)

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    def element_count(self) -> int:
        count = 1
        for dim in self.get_shape():
            count *= dim
        return count

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            position = parser.pos
            shape, element_type = parser.parse_ranked_shape()
            # Reported here as well as in verify(), so that the message points into the source.
            problem = _tile_shape_problem(shape)
            if problem is not None:
                parser.raise_error(problem, position, parser.pos)
        return ArrayAttr(IntAttr(d) for d in shape), element_type

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_dimension_list(self.get_shape())
            printer.print_string("x")
            printer.print_attribute(self.element_type)

    def verify(self) -> None:
        problem = _tile_shape_problem(self.get_shape())
        if problem is not None:
            raise VerifyException(problem)


def _tile_shape_problem(shape: Sequence[int]) -> str | None:
    """Why `shape` cannot be a tile's shape, or None."""
    if not shape:
        return "a tile has at least one dimension"
    if any(d <= 0 for d in shape):
        dims = "x".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape)
        return f"tile dimensions must be static and positive, got {dims}"
    return None


def _grid_of(op: IRDLOperation) -> tuple[int, ...]:
    kernel = op.parent_op()
    while kernel is not None and not isinstance(kernel, KernelOp):
        kernel = kernel.parent_op()
    return kernel.grid_shape() if kernel is not None else ()


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A tile program, run once per point of `grid` (up to three dimensions)."""

    name = "tile.kernel"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    grid = prop_def(DenseArrayBase.constr(i64))
    num_warps = opt_prop_def(IntegerAttr[I64])
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (IsolatedFromAbove(), SymbolOpInterface()))

    def __init__(
        self,
        name: str,
        argument_types: Sequence[Attribute],
        grid: Sequence[int],
        body: Region | None = None,
        num_warps: int | None = None,
    ):
        if body is None:
            body = Region(Block(arg_types=argument_types))
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(argument_types, []),
            "grid": DenseArrayBase.from_list(i64, grid),
        }
        if num_warps is not None:
            properties["num_warps"] = IntegerAttr(num_warps, i64)
        super().__init__(properties=properties, regions=[body])

    def grid_shape(self) -> tuple[int, ...]:
        return tuple(self.grid.get_values())  # type: ignore[arg-type]

    def verify_(self) -> None:
        grid = self.grid_shape()
        if not 1 <= len(grid) <= 3:
            raise VerifyException(f"grid must have 1 to 3 dimensions, got {len(grid)}")
        if any(d <= 0 for d in grid):
            raise VerifyException(f"grid dimensions must be positive, got {format_integer_list(grid)}")
        if self.num_warps is not None and not 1 <= self.num_warps.value.data <= 32:
            raise VerifyException(f"num_warps must be between 1 and 32, got {self.num_warps.value.data}")
        verify_kernel_signature(self.function_type, self.body.block)

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, arguments = parse_kernel_signature(parser)
        parser.parse_keyword("grid")
        grid = parse_integer_list(parser)
        num_warps = None
        if parser.parse_optional_keyword("num_warps"):
            num_warps = parser.parse_integer()
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(arguments)
        op = cls(name.data, [a.type for a in arguments], grid, body, num_warps)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        print_kernel_signature(printer, self.sym_name, self.body.block.args)
        printer.print_string(f" grid {format_integer_list(self.grid_shape())}")
        if self.num_warps is not None:
            printer.print_string(f" num_warps {self.num_warps.value.data}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "tile.return"
    assembly_format = "attr-dict"
    traits = traits_def(IsTerminator(), HasParent(KernelOp))


@irdl_op_definition
class ProgramIdOp(IRDLOperation):
    """The coordinate of this program instance along grid dimension `axis`."""

    name = "tile.program_id"
    axis = prop_def(IntegerAttr[I64])
    result = result_def(IndexType)
    traits = traits_def(Pure(), HasAncestor(KernelOp))
    assembly_format = "$axis attr-dict"

    def __init__(self, axis: int):
        super().__init__(properties={"axis": IntegerAttr(axis, i64)}, result_types=[IndexType()])

    def verify_(self) -> None:
        grid = _grid_of(self)
        if grid and not 0 <= self.axis.value.data < len(grid):
            raise VerifyException(
                f"axis {self.axis.value.data} is outside the kernel's {len(grid)}-d grid"
            )


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
class BroadcastOp(IRDLOperation):
    """Stretches size-1 dimensions (and adds leading ones) by numpy's rules."""

    name = "tile.broadcast"
    source = operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result_type: TileType):
        super().__init__(operands=[source], result_types=[result_type])

    def verify_(self) -> None:
        source_type, result_type = self.source.type, self.result.type
        assert isinstance(source_type, TileType) and isinstance(result_type, TileType)
        if source_type.element_type != result_type.element_type:
            raise VerifyException(
                f"result element type {result_type.element_type} must equal the element type "
                f"{source_type.element_type} of source"
            )
        target = result_type.get_shape()
        if broadcast_shapes(source_type.get_shape(), target) != target:
            raise VerifyException(
                f"source tile of shape {format_shape(source_type.get_shape())} cannot be broadcast "
                f"to {format_shape(target)}"
            )


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """Swaps the last two dimensions of a tile (`np.swapaxes(t, -1, -2)`).

    On the GPU it is the block-wide exchange of a shared-memory transpose: the source is loaded
    coalesced along its rows, the result stored coalesced along its own (`transpose_loop.py`)."""

    name = "tile.transpose"
    source = operand_def(TileType)
    result = result_def(TileType)
    traits = traits_def(Pure())
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue):
        source_type = source.type
        assert isinstance(source_type, TileType)
        shape = list(source_type.get_shape())
        shape[-2:] = shape[-1], shape[-2]
        super().__init__(operands=[source], result_types=[TileType(shape, source_type.element_type)])

    def verify_(self) -> None:
        source_type, result_type = self.source.type, self.result.type
        assert isinstance(source_type, TileType) and isinstance(result_type, TileType)
        shape = list(source_type.get_shape())
        if len(shape) < 2:
            raise VerifyException(f"source tile of rank {len(shape)} has no two dimensions to swap")
        shape[-2:] = shape[-1], shape[-2]
        if result_type.element_type != source_type.element_type or tuple(result_type.get_shape()) != tuple(shape):
            raise VerifyException(
                f"result type {result_type} must be the source's with its last two dimensions swapped "
                f"({TileType(shape, source_type.element_type)})"
            )


@irdl_op_definition
class SplatOp(IRDLOperation):
    """A tile whose every element is the scalar `value`."""

    name = "tile.splat"
    value = operand_def()
    result = result_def(TileType)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($value) `->` type($result)"

    def __init__(self, value: SSAValue, result_type: TileType):
        super().__init__(operands=[value], result_types=[result_type])

    def verify_(self) -> None:
        result_type = self.result.type
        assert isinstance(result_type, TileType)
        if self.value.type != result_type.element_type:
            raise VerifyException(
                f"splat value of type {self.value.type} must have the tile's element type "
                f"{result_type.element_type}"
            )


@irdl_op_definition
class MapOp(IRDLOperation):
    """Applies its scalar body to every element of its operand tiles (all of one shape).

    The body's arguments are one element of each operand; `tile.yield` gives one element of
    each result. The body may use scalar values defined above the map.
    """

    name = "tile.map"
    inputs = var_operand_def(TileType)
    outputs = var_result_def(TileType)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (RecursiveMemoryEffect(),))

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[TileType], body: Region):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    def tile_shape(self) -> tuple[int, ...]:
        first = (self.outputs[0] if self.outputs else self.inputs[0]).type
        assert isinstance(first, TileType)
        return first.get_shape()

    def verify_(self) -> None:
        if not self.outputs:
            raise VerifyException("a map has at least one result")
        shape = self.tile_shape()
        for index, value in enumerate(self.inputs):
            assert isinstance(value.type, TileType)
            if value.type.get_shape() != shape:
                raise VerifyException(
                    f"operand #{index} has shape {format_shape(value.type.get_shape())}, but the "
                    f"map's tiles are {format_shape(shape)}"
                )
        for index, value in enumerate(self.outputs):
            assert isinstance(value.type, TileType)
            if value.type.get_shape() != shape:
                raise VerifyException(
                    f"result #{index} has shape {format_shape(value.type.get_shape())}, but the "
                    f"map's tiles are {format_shape(shape)}"
                )
        block = self.body.block
        expected_arguments = tuple(v.type.element_type for v in self.inputs)  # type: ignore[attr-defined]
        if tuple(block.arg_types) != expected_arguments:
            raise VerifyException(
                "the body's arguments must be the element types of the operands: ("
                + ", ".join(str(t) for t in expected_arguments)
                + f"), got ({', '.join(str(t) for t in block.arg_types)})"
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("the body must end with tile.yield")
        expected_results = tuple(v.type.element_type for v in self.outputs)  # type: ignore[attr-defined]
        yielded = tuple(v.type for v in terminator.values)
        if yielded != expected_results:
            raise VerifyException(
                "tile.yield must give the element types of the results: ("
                + ", ".join(str(t) for t in expected_results)
                + f"), got ({', '.join(str(t) for t in yielded)})"
            )

    @classmethod
    def parse(cls, parser: Parser) -> MapOp:
        operands = parser.parse_optional_undelimited_comma_separated_list(
            parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
        ) or []
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        input_types: list[Attribute] = []
        if operands:
            input_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("->")
        result_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        inputs = parser.resolve_operands(operands, input_types, parser.pos)
        body = parser.parse_region()
        op = cls(inputs, result_types, body)  # type: ignore[arg-type]
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        if self.inputs:
            printer.print_string(" ")
            printer.print_list(self.inputs, printer.print_operand)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        if self.inputs:
            printer.print_list((v.type for v in self.inputs), printer.print_attribute)
            printer.print_string(" ")
        printer.print_string("-> ")
        printer.print_list((v.type for v in self.outputs), printer.print_attribute)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)


@irdl_op_definition
class YieldOp(IRDLOperation):
    name = "tile.yield"
    values = var_operand_def()
    assembly_format = "attr-dict ($values^ `:` type($values))?"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(MapOp, ReduceOp)))

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Combines the elements of a tile along `axis` with the combiner region; keeps the axis (size 1).

    The combiner takes two elements and yields their combination; it must be associative and
    commutative, since the order in which elements are combined is not specified (lowerings
    combine within a thread first, then across threads). Results broadcast back against the
    operand with `tile.broadcast`.
    """

    name = "tile.reduce"
    source = operand_def(TileType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TileType)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (RecursiveMemoryEffect(),))

    def __init__(self, source: SSAValue, axis: int, body: Region):
        source_type = source.type
        assert isinstance(source_type, TileType)
        shape = list(source_type.get_shape())
        shape[axis] = 1
        super().__init__(
            operands=[source],
            result_types=[TileType(shape, source_type.element_type)],
            properties={"axis": IntegerAttr(axis, i64)},
            regions=[body],
        )

    def verify_(self) -> None:
        source_type, result_type = self.source.type, self.result.type
        assert isinstance(source_type, TileType) and isinstance(result_type, TileType)
        axis = self.axis.value.data
        rank = len(source_type.get_shape())
        if not 0 <= axis < rank:
            raise VerifyException(f"axis {axis} is outside the rank-{rank} tile {source_type}")
        expected = list(source_type.get_shape())
        expected[axis] = 1
        if result_type != TileType(expected, source_type.element_type):
            raise VerifyException(
                f"result type {result_type} must be {TileType(expected, source_type.element_type)}: the "
                f"operand with dimension {axis} reduced to 1"
            )
        element = source_type.element_type
        block = self.body.block
        if tuple(block.arg_types) != (element, element):
            raise VerifyException(f"the combiner takes two {element} arguments, got ({', '.join(str(t) for t in block.arg_types)})")
        terminator = block.last_op
        if not isinstance(terminator, YieldOp) or tuple(v.type for v in terminator.values) != (element,):
            raise VerifyException(f"the combiner must end with tile.yield of one {element}")

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        source = parser.parse_unresolved_operand()
        parser.parse_keyword("axis")
        axis = parser.parse_integer(allow_boolean=False)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        (operand,) = parser.resolve_operands([source], [source_type], parser.pos)
        body = parser.parse_region()
        op = cls.create(
            operands=[operand],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64)},
            regions=[body],
        )
        if attributes is not None:
            op.attributes |= attributes.data
        return op  # type: ignore[return-value]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        printer.print_string(f" axis {self.axis.value.data}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)


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


DOT_INPUT_TYPES = (Float16Type, BFloat16Type, Float32Type)
"""Element types `tile.dot` multiplies (always accumulating in f32)."""


@irdl_op_definition
class DotOp(IRDLOperation):
    """`acc + lhs @ rhs` over the last two dimensions; leading (batch) dimensions are equal.

    `lhs` is `[..., M, K]`, `rhs` `[..., K, N]`, the accumulator and the result `[..., M, N]` in
    f32 whatever the inputs (f16, bf16 or f32), accumulated in f32. The order of the sum is not
    specified; the interpreter (and the loop lowering) adds the products to the accumulator in
    increasing K order, each with one fused multiply-add rounded once to f32. `precision`
    (`{precision = "tf32"}`; default "ieee", f32 operands only) lets f32 products use TF32 as
    `mlc/dialects/precision.py` defines: the interpreter multiplies the operands it rounds or
    splits (3xtf32: three fused multiply-adds per K index, small parts first).
    """

    name = "tile.dot"
    T: ClassVar = VarConstraint("T", base(TileType))
    lhs = operand_def(TileType)
    rhs = operand_def(TileType)
    acc = operand_def(T)
    result = result_def(T)
    precision = opt_prop_def(StringAttr, default_value=StringAttr(DEFAULT_PRECISION))
    """How f32 products are computed: "ieee", "tf32" or "3xtf32" (`mlc/dialects/precision.py`)."""
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$lhs `,` $rhs `,` $acc attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, acc: SSAValue, precision: str | None = None):
        properties = {} if precision is None or precision == DEFAULT_PRECISION else {"precision": StringAttr(precision)}
        super().__init__(operands=[lhs, rhs, acc], result_types=[acc.type], properties=properties)

    def verify_(self) -> None:
        lhs_type, rhs_type, acc_type = self.lhs.type, self.rhs.type, self.acc.type
        assert isinstance(lhs_type, TileType) and isinstance(rhs_type, TileType) and isinstance(acc_type, TileType)
        lhs, rhs, acc = lhs_type.get_shape(), rhs_type.get_shape(), acc_type.get_shape()
        if len(lhs) < 2 or len(rhs) != len(lhs) or len(acc) != len(lhs):
            raise VerifyException(
                f"lhs, rhs and accumulator must have one rank of at least 2, got {format_shape(lhs)}, "
                f"{format_shape(rhs)} and {format_shape(acc)}"
            )
        if lhs[-1] != rhs[-2]:
            raise VerifyException(f"lhs {format_shape(lhs)} has {lhs[-1]} columns but rhs {format_shape(rhs)} has {rhs[-2]} rows")
        expected = (*lhs[:-1], rhs[-1])
        if lhs[:-2] != rhs[:-2] or acc != expected:
            raise VerifyException(
                f"accumulator shape {format_shape(acc)} must be {format_shape(expected)}: the batch "
                f"dimensions of lhs {format_shape(lhs)} and rhs {format_shape(rhs)} (equal), then M and N"
            )
        if lhs_type.element_type != rhs_type.element_type or not isinstance(lhs_type.element_type, DOT_INPUT_TYPES):
            raise VerifyException(
                f"lhs and rhs must have one element type, f16, bf16 or f32, got {lhs_type.element_type} and "
                f"{rhs_type.element_type}"
            )
        if not isinstance(acc_type.element_type, Float32Type):
            raise VerifyException(f"the accumulator must be a tile of f32, got {acc_type}")
        problem = precision_problem(self.precision.data, isinstance(lhs_type.element_type, Float32Type))
        if problem is not None:
            raise VerifyException(problem)


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Host side: runs `kernel` over its grid with the given buffers."""

    name = "tile.launch"
    kernel = prop_def(SymbolRefAttr)
    arguments = var_operand_def(MemRefType)

    def __init__(self, kernel: str | SymbolRefAttr, arguments: Sequence[SSAValue]):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)
        super().__init__(operands=[arguments], properties={"kernel": kernel})

    def verify_(self) -> None:
        verify_launch(self, self.kernel, self.arguments, (KernelOp,))

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        kernel, operands = parse_launch(parser)
        attributes = parser.parse_optional_attr_dict()
        arguments = parse_launch_types(parser, operands)
        op = cls(kernel, arguments)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        print_launch_arguments(printer, self.kernel, self.arguments)
        printer.print_op_attributes(self.attributes)
        print_launch_types(printer, self.arguments)


Tile = Dialect(
    "tile",
    [
        KernelOp,
        ReturnOp,
        ProgramIdOp,
        LoadOp,
        StoreOp,
        BroadcastOp,
        TransposeOp,
        SplatOp,
        MapOp,
        ReduceOp,
        InBoundsOp,
        RangeOp,
        GatherOp,
        ScatterOp,
        DotOp,
        YieldOp,
        LaunchOp,
    ],
    [TileType],
)
