"""The tile dialect's structure: the tile type, kernels, program ids and the host's launch.

What: `!tile.tile<4x256xf32>` (a block of values held by one program instance), `tile.kernel`
(a tile program over memrefs, run once per point of its `grid`), `tile.return`,
`tile.program_id` (this instance's coordinate along a grid dimension) and the host's
`tile.launch`. `ops.py` states the semantics.

Verification: a tile has at least one dimension, all static and positive; a grid has one to
three positive dimensions and `num_warps` lies in 1..32; a program id's axis is one of its
kernel's grid dimensions; a launch's operands match the kernel's signature
(`mlc.dialects.kernels`). Limits: grids and tile shapes are static.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    FunctionType,
    I64,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

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
