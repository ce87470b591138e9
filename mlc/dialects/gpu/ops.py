"""The mlc_gpu dialect: SIMT kernels with explicit thread and block indices and barriers.

This is mlc's GPU level (the `gpu` of the design). Its namespace is `mlc_gpu` because xDSL and MLIR
already own `gpu`, and two dialects of one name cannot be loaded together (an `xdsl.universe`
clash). Where an op has an upstream `gpu` counterpart it keeps that name and meaning.

    mlc_gpu.func @add(%x: memref<1024xf32>, %out: memref<1024xf32>) grid [4, 1, 1] block [256, 1, 1] {
      %b = mlc_gpu.block_id x
      %t = mlc_gpu.thread_id x
      %n = mlc_gpu.block_dim x
      %base = arith.muli %b, %n : index
      %i = arith.addi %base, %t : index
      %v = memref.load %x[%i] : memref<1024xf32>
      memref.store %v, %out[%i] : memref<1024xf32>
      mlc_gpu.return
    }

    mlc_gpu.launch @add(%x, %out) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>

Every thread of every block runs the body of `mlc_gpu.func`. `grid` and `block` are static and
part of the kernel: the lowering from the loop level chose them. `mlc_gpu.barrier` waits until all
threads of the block reach it, and orders their shared-memory accesses before it against those
after it; all threads of a block must reach the same barriers. The launch repeats the grid and
block so that the host side stays complete once the kernel itself has become an `llvm.func`.

`mlc_gpu.shuffle` reads a value from another lane of the warp (as upstream `gpu.shuffle`).
Shared memory is `memref.alloca` in memory space 3 at the top of a kernel: one buffer per block.

A function marked `mlc.block_synchronous` (set by convert-loop-to-gpu when the loop level left
shared-memory accesses inside a thread loop) still has the loop level's order for shared memory:
each statement touching it completes in every thread before any thread goes on, as in Triton's IR
before its Membar pass. `gpu-insert-barriers` makes that order explicit with barriers and drops
the mark; the interpreter runs a marked function in lockstep without reporting races, and
convert-gpu-to-nvvm refuses one.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    f16,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasAncestor,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    MemoryReadEffect,
    MemoryWriteEffect,
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

DIMENSIONS = ("x", "y", "z")
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIMS = (1024, 1024, 64)
MAX_GRID_DIMS = (2**31 - 1, 65535, 65535)


def _launch_shape(values: Sequence[int]) -> tuple[int, int, int]:
    padded = tuple(values) + (1,) * (3 - len(values))
    return padded  # type: ignore[return-value]


def verify_launch_configuration(grid: Sequence[int], block: Sequence[int]) -> None:
    for what, sizes in (("grid", grid), ("block", block)):
        if len(sizes) != 3:
            raise VerifyException(
                f"{what} must have three dimensions (x, y, z), got {len(sizes)}: "
                f"{format_integer_list(sizes)}"
            )
    for dim, size, limit in zip(DIMENSIONS, grid, MAX_GRID_DIMS):
        if not 1 <= size <= limit:
            raise VerifyException(f"grid size along {dim} must be in [1, {limit}], got {size}")
    for dim, size, limit in zip(DIMENSIONS, block, MAX_BLOCK_DIMS):
        if not 1 <= size <= limit:
            raise VerifyException(f"block size along {dim} must be in [1, {limit}], got {size}")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise VerifyException(
            f"a block of {format_integer_list(block)} has {threads} threads; at most "
            f"{MAX_THREADS_PER_BLOCK} are possible"
        )




@irdl_op_definition
class FuncOp(IRDLOperation):
    """A kernel run by every thread of a `grid` of blocks of `block` threads."""

    name = "mlc_gpu.func"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    grid = prop_def(DenseArrayBase.constr(i64))
    block = prop_def(DenseArrayBase.constr(i64))
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (IsolatedFromAbove(), SymbolOpInterface()))

    def __init__(
        self,
        name: str,
        argument_types: Sequence[Attribute],
        grid: Sequence[int],
        block: Sequence[int],
        body: Region | None = None,
    ):
        if body is None:
            body = Region(Block(arg_types=argument_types))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(argument_types, []),
                "grid": DenseArrayBase.from_list(i64, _launch_shape(grid)),
                "block": DenseArrayBase.from_list(i64, _launch_shape(block)),
            },
            regions=[body],
        )

    def grid_shape(self) -> tuple[int, ...]:
        return tuple(self.grid.get_values())  # type: ignore[arg-type]

    def block_shape(self) -> tuple[int, ...]:
        return tuple(self.block.get_values())  # type: ignore[arg-type]

    def verify_(self) -> None:
        verify_launch_configuration(self.grid_shape(), self.block_shape())
        verify_kernel_signature(self.function_type, self.body.block)

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name, arguments = parse_kernel_signature(parser)
        parser.parse_keyword("grid")
        grid = parse_integer_list(parser)
        parser.parse_keyword("block")
        block = parse_integer_list(parser)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(arguments)
        op = cls(name.data, [a.type for a in arguments], grid, block, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        print_kernel_signature(printer, self.sym_name, self.body.block.args)
        printer.print_string(f" grid {format_integer_list(self.grid_shape())}")
        printer.print_string(f" block {format_integer_list(self.block_shape())}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "mlc_gpu.return"
    assembly_format = "attr-dict"
    traits = traits_def(IsTerminator(), HasParent(FuncOp))


class IndexQueryOp(IRDLOperation):
    """Shared definition of the thread and block index queries: `%t = mlc_gpu.thread_id x`."""

    dimension = prop_def(StringAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure(), HasAncestor(FuncOp))

    def __init__(self, dimension: str):
        super().__init__(properties={"dimension": StringAttr(dimension)}, result_types=[IndexType()])

    def axis(self) -> int:
        return DIMENSIONS.index(self.dimension.data)

    def verify_(self) -> None:
        if self.dimension.data not in DIMENSIONS:
            raise VerifyException(f"dimension must be x, y or z, got '{self.dimension.data}'")

    @classmethod
    def parse(cls, parser: Parser) -> IndexQueryOp:
        dimension = parser.parse_identifier("dimension x, y or z")
        attributes = parser.parse_optional_attr_dict()
        op = cls(dimension)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.dimension.data}")
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class ThreadIdOp(IndexQueryOp):
    name = "mlc_gpu.thread_id"


@irdl_op_definition
class BlockIdOp(IndexQueryOp):
    name = "mlc_gpu.block_id"


@irdl_op_definition
class BlockDimOp(IndexQueryOp):
    name = "mlc_gpu.block_dim"


@irdl_op_definition
class GridDimOp(IndexQueryOp):
    name = "mlc_gpu.grid_dim"


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Waits for all threads of the block and orders their shared-memory accesses."""

    name = "mlc_gpu.barrier"
    assembly_format = "attr-dict"
    # Reading and writing memory keeps the barrier in place under DCE, CSE and code motion.
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect(), HasAncestor(FuncOp))


SHUFFLE_MODES = ("xor", "up", "down", "idx")
WARP_SIZE = 32


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """`%r = mlc_gpu.shuffle xor %v, 16 : f32`: read `%v` from another lane of the warp.

    The source lane is `lane xor offset`, `lane - offset`, `lane + offset` or `offset` (modes
    xor, up, down, idx, as upstream `gpu.shuffle`), over the full 32-lane warp; a source outside
    the warp leaves the lane's own value. Every lane of the warp must execute it. Values are 32-bit
    (f32, i32), f16 (moved as 32 bits) or i64 (moved as two 32-bit halves).
    """

    name = "mlc_gpu.shuffle"
    mode = prop_def(StringAttr)
    offset = prop_def(IntegerAttr[I64])
    value = operand_def()
    result = result_def()
    traits = traits_def(HasAncestor(FuncOp))

    def __init__(self, mode: str, value: SSAValue, offset: int):
        super().__init__(
            operands=[value],
            result_types=[value.type],
            properties={"mode": StringAttr(mode), "offset": IntegerAttr(offset, i64)},
        )

    def verify_(self) -> None:
        if self.mode.data not in SHUFFLE_MODES:
            raise VerifyException(f"mode must be one of {', '.join(SHUFFLE_MODES)}, got '{self.mode.data}'")
        if not 0 <= self.offset.value.data < WARP_SIZE:
            raise VerifyException(f"offset must be in [0, {WARP_SIZE}), got {self.offset.value.data}")
        if self.value.type not in (f32, i32, f16, i64):
            raise VerifyException(f"shuffles move f32, i32, f16 or i64 values, got {self.value.type}")
        if self.result.type != self.value.type:
            raise VerifyException("the result has the value's type")

    @classmethod
    def parse(cls, parser: Parser) -> ShuffleOp:
        mode = parser.parse_identifier("shuffle mode (xor, up, down, idx)")
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        offset = parser.parse_integer(allow_boolean=False)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        (operand,) = parser.resolve_operands([value], [value_type], parser.pos)
        op = cls(mode, operand, offset)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.mode.data} ")
        printer.print_operand(self.value)
        printer.print_string(f", {self.offset.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Host side: launches a kernel on a grid of blocks with the given buffers."""

    name = "mlc_gpu.launch"
    kernel = prop_def(SymbolRefAttr)
    grid = prop_def(DenseArrayBase.constr(i64))
    block = prop_def(DenseArrayBase.constr(i64))
    arguments = var_operand_def(MemRefType)

    def __init__(
        self,
        kernel: str | SymbolRefAttr,
        arguments: Sequence[SSAValue],
        grid: Sequence[int],
        block: Sequence[int],
    ):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)
        super().__init__(
            operands=[arguments],
            properties={
                "kernel": kernel,
                "grid": DenseArrayBase.from_list(i64, _launch_shape(grid)),
                "block": DenseArrayBase.from_list(i64, _launch_shape(block)),
            },
        )

    def grid_shape(self) -> tuple[int, ...]:
        return tuple(self.grid.get_values())  # type: ignore[arg-type]

    def block_shape(self) -> tuple[int, ...]:
        return tuple(self.block.get_values())  # type: ignore[arg-type]

    def verify_(self) -> None:
        verify_launch_configuration(self.grid_shape(), self.block_shape())
        kernel = verify_launch(self, self.kernel, self.arguments, (FuncOp, llvm.FuncOp))
        if isinstance(kernel, FuncOp) and (
            kernel.grid_shape() != self.grid_shape() or kernel.block_shape() != self.block_shape()
        ):
            raise VerifyException(
                f"launch configuration grid {format_integer_list(self.grid_shape())} block "
                f"{format_integer_list(self.block_shape())} differs from the kernel's grid "
                f"{format_integer_list(kernel.grid_shape())} block "
                f"{format_integer_list(kernel.block_shape())}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> LaunchOp:
        kernel, operands = parse_launch(parser)
        parser.parse_keyword("grid")
        grid = parse_integer_list(parser)
        parser.parse_keyword("block")
        block = parse_integer_list(parser)
        attributes = parser.parse_optional_attr_dict()
        arguments = parse_launch_types(parser, operands)
        op = cls(kernel, arguments, grid, block)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        print_launch_arguments(printer, self.kernel, self.arguments)
        printer.print_string(f" grid {format_integer_list(self.grid_shape())}")
        printer.print_string(f" block {format_integer_list(self.block_shape())}")
        printer.print_op_attributes(self.attributes)
        print_launch_types(printer, self.arguments)


MlcGpu = Dialect(
    "mlc_gpu",
    [
        FuncOp,
        ReturnOp,
        ThreadIdOp,
        BlockIdOp,
        BlockDimOp,
        GridDimOp,
        BarrierOp,
        ShuffleOp,
        LaunchOp,
    ],
    [],
)
