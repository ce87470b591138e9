"""The tile dialect's computations on tiles: reshaping (broadcast, transpose, splat), elementwise
(map, yield), reductions (reduce) and products (dot).

What: `tile.broadcast` stretches size-1 dimensions by numpy's rules, `tile.transpose` swaps the
last two, `tile.splat` fills a tile with a scalar; `tile.map` applies a scalar body to every
element and `tile.yield` ends it (and `tile.reduce`'s combiner); `tile.reduce` combines along an
axis, keeping it with size 1; `tile.dot` is `acc + lhs @ rhs` in f32. `ops.py` states the
semantics.

Verification: shapes and element types follow each op's rule (a map's operands and results
share one shape and its body takes and yields their element types; a reduction's combiner takes
and yields two, one element; a product's operands are f16, bf16 or f32 with an f32 accumulator
and a precision `mlc/dialects/precision.py` allows). Limits: a map has at least one result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    I64,
    IntegerAttr,
    StringAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
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
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.graph.ops import broadcast_shapes, format_shape
from mlc.dialects.precision import DEFAULT_PRECISION, precision_problem
from mlc.dialects.tile.kernel import TileType


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
