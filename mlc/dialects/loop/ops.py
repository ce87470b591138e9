"""The loop dialect: explicit loop nests over buffers, with a hardware mapping per parallel loop.

A `loop.kernel` is a function over memrefs whose body is ordinary scalar (and short-vector) code
in the standard dialects (`arith`, `math`, `scf`, `memref`, `vector`) plus `loop.parallel`, a loop
whose iterations are independent and whose `mapping` says which hardware index runs them:

    loop.kernel @add(%x: memref<1024xf32>, %out: memref<1024xf32>) {
      loop.parallel %block < 4 mapping block.x {
        loop.parallel %thread < 256 mapping thread.x {
          %c256 = arith.constant 256 : index
          %base = arith.muli %block, %c256 : index
          %i = arith.addi %base, %thread : index
          %v = memref.load %x[%i] : memref<1024xf32>
          memref.store %v, %out[%i] : memref<1024xf32>
        }
      }
      loop.return
    }

Semantics. `loop.parallel %i < N` runs its body for every `0 <= %i < N`, in any order or at once.
A loop mapped to `block.x|y|z` runs its iterations on that grid dimension and one mapped to
`thread.x|y|z` on that block dimension, one iteration per block or thread: the trip count *is* the
grid or block size. A loop without a mapping is parallel but leaves the choice to the lowering
(the GPU lowering runs it sequentially inside a thread; the CPU lowering runs every parallel loop
sequentially). Statements in sequence are ordered: two sibling thread loops behave as if all
threads finish the first before any starts the second, so the loop level needs no barriers; the
GPU lowering makes that order explicit again with `mlc_gpu.barrier` where shared memory needs it.

Memory spaces are the memref's: none is global (device) memory, `3` is memory shared by the
threads of a block, `5` is private to a thread (NVVM's numbering).

Shared memory inside a thread loop is *block-synchronous*: each statement that touches a shared
buffer completes in every iteration of the thread loop before any iteration goes past it, so the
threads of a block can exchange data through shared memory within one thread loop (a cooperative
copy, then reads of what other threads copied; see `loop-promote-shared`). The control flow around
such statements must be the same for all threads. The interpreter runs thread loops in lockstep,
which is this order; `gpu-insert-barriers` realises it on the GPU with the fewest barriers. The CPU
lowering runs threads one after another and so does not accept shared buffers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    VectorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
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
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.attributes import OPERAND_MAJOR
from mlc.dialects.kernels import (
    parse_kernel_signature,
    parse_launch,
    parse_launch_types,
    print_kernel_signature,
    print_launch_arguments,
    print_launch_types,
    verify_kernel_signature,
    verify_launch,
)

BLOCK_MAPPINGS = ("block.x", "block.y", "block.z")
THREAD_MAPPINGS = ("thread.x", "thread.y", "thread.z")
MAPPINGS = BLOCK_MAPPINGS + THREAD_MAPPINGS

MAX_THREADS_PER_BLOCK = 1024

SHARED_MEMORY_SPACE = 3
PRIVATE_MEMORY_SPACE = 5


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A function over memrefs whose body is a loop nest."""

    name = "loop.kernel"
    sym_name = prop_def(StringAttr)
    function_type = prop_def(FunctionType)
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (IsolatedFromAbove(), SymbolOpInterface()))

    def __init__(self, name: str, argument_types: Sequence[Attribute], body: Region | None = None):
        if body is None:
            body = Region(Block(arg_types=argument_types))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(argument_types, []),
            },
            regions=[body],
        )

    def verify_(self) -> None:
        verify_kernel_signature(self.function_type, self.body.block)
        threads = 1
        for loop in self.walk():
            if isinstance(loop, ParallelOp) and loop.mapping_name() in THREAD_MAPPINGS:
                nested_threads = loop.thread_count_of_nest()
                threads = max(threads, nested_threads)
        if threads > MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"the thread loops ask for {threads} threads per block; at most "
                f"{MAX_THREADS_PER_BLOCK} are possible"
            )

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        name, arguments = parse_kernel_signature(parser)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(arguments)
        op = cls(name.data, [a.type for a in arguments], body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        print_kernel_signature(printer, self.sym_name, self.body.block.args)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "loop.return"
    assembly_format = "attr-dict"
    traits = traits_def(IsTerminator(), HasParent(KernelOp))


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends the body of a `loop.parallel` (implicit in the custom syntax) or an all-reduce combiner."""

    name = "loop.yield"
    values = var_operand_def()
    assembly_format = "attr-dict ($values^ `:` type($values))?"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ParallelOp, AllReduceOp)))

    def __init__(self, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[values])


@irdl_op_definition
class ParallelOp(IRDLOperation):
    """`loop.parallel %i < N [mapping M] {...}`: independent iterations `0 <= %i < N`."""

    name = "loop.parallel"
    upper_bound = prop_def(IntegerAttr[I64])
    mapping = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = lazy_traits_def(
        lambda: (SingleBlockImplicitTerminator(YieldOp), RecursiveMemoryEffect())
    )

    def __init__(self, upper_bound: int, mapping: str | None = None, body: Region | None = None):
        if body is None:
            body = Region(Block([YieldOp()], arg_types=[IndexType()]))
        properties: dict[str, Attribute] = {"upper_bound": IntegerAttr(upper_bound, i64)}
        if mapping is not None:
            properties["mapping"] = StringAttr(mapping)
        super().__init__(properties=properties, regions=[body])

    @property
    def induction_variable(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def trip_count(self) -> int:
        return self.upper_bound.value.data

    def mapping_name(self) -> str | None:
        return None if self.mapping is None else self.mapping.data

    def enclosing_parallel_loops(self) -> list[ParallelOp]:
        loops = []
        parent = self.parent_op()
        while parent is not None and not isinstance(parent, KernelOp):
            if isinstance(parent, ParallelOp):
                loops.append(parent)
            parent = parent.parent_op()
        return loops

    def thread_count_of_nest(self) -> int:
        """Threads per block implied by this thread loop and the thread loops around it."""
        count = self.trip_count
        for loop in self.enclosing_parallel_loops():
            if loop.mapping_name() in THREAD_MAPPINGS:
                count *= loop.trip_count
        return count

    def verify_(self) -> None:
        if self.trip_count <= 0:
            raise VerifyException(f"upper bound must be positive, got {self.trip_count}")
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException(
                "the body takes exactly one index argument, got ("
                + ", ".join(str(t) for t in block.arg_types)
                + ")"
            )
        mapping = self.mapping_name()
        if mapping is None:
            return
        if mapping not in MAPPINGS:
            raise VerifyException(
                f"unknown mapping '{mapping}'; expected one of {', '.join(MAPPINGS)}"
            )
        for outer in self.enclosing_parallel_loops():
            outer_mapping = outer.mapping_name()
            if outer_mapping == mapping:
                raise VerifyException(f"'{mapping}' is already mapped by an enclosing loop")
            if mapping in BLOCK_MAPPINGS and outer_mapping in THREAD_MAPPINGS:
                raise VerifyException(
                    f"a '{mapping}' loop cannot be nested in a thread loop ('{outer_mapping}')"
                )

    @classmethod
    def parse(cls, parser: Parser) -> ParallelOp:
        argument = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("<")
        upper_bound = parser.parse_integer(allow_boolean=False, allow_negative=False)
        mapping = None
        if parser.parse_optional_keyword("mapping"):
            mapping = parser.parse_identifier("mapping such as block.x or thread.x")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region([argument.resolve(IndexType())])
        if not body.block.ops or not isinstance(body.block.last_op, YieldOp):
            body.block.add_op(YieldOp())
        op = cls(upper_bound, mapping, body)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.induction_variable)
        printer.print_string(f" < {self.trip_count}")
        if self.mapping is not None:
            printer.print_string(f" mapping {self.mapping.data}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)


@irdl_op_definition
class AllReduceOp(IRDLOperation):
    """`%r = loop.all_reduce %v mask M : T {combiner}`: a collective over parallel iterations.

    Inside the innermost enclosing `loop.parallel` (N iterations, N a power of two), the
    iterations form groups that differ only in the bits of `mask` of their index; each member
    receives the combination of the group's values. The order is fixed (a butterfly): for each
    set bit of `mask`, from the lowest, every member combines its value with the value of the
    member whose index differs in that bit, `combiner(own, partner)`. The combiner must be
    associative and commutative, so every member ends with the same bits, and every iteration of
    the loop must reach the op (it is not allowed under control flow that depends on the
    iteration). Iterations are independent except here.
    """

    name = "loop.all_reduce"
    value = operand_def()
    mask = prop_def(IntegerAttr[I64])
    result = result_def()
    body = region_def("single_block")
    traits = lazy_traits_def(lambda: (RecursiveMemoryEffect(),))

    def __init__(self, value: SSAValue, mask: int, body: Region):
        super().__init__(
            operands=[value], result_types=[value.type], properties={"mask": IntegerAttr(mask, i64)}, regions=[body]
        )

    def enclosing_loop(self) -> ParallelOp | None:
        parent = self.parent_op()
        while parent is not None and not isinstance(parent, ParallelOp | KernelOp):
            parent = parent.parent_op()
        return parent if isinstance(parent, ParallelOp) else None

    def verify_(self) -> None:
        loop_op = self.enclosing_loop()
        if loop_op is None:
            raise VerifyException("must be inside a loop.parallel")
        trip_count = loop_op.trip_count
        mask = self.mask.value.data
        if trip_count & (trip_count - 1):
            raise VerifyException(f"the enclosing loop's trip count {trip_count} must be a power of two")
        if mask < 0 or mask >= trip_count:
            raise VerifyException(f"mask {mask} has bits outside the enclosing loop's {trip_count} iterations")
        if self.result.type != self.value.type:
            raise VerifyException(f"the result type {self.result.type} must be the value's type {self.value.type}")
        block = self.body.block
        value_type = self.value.type
        if tuple(block.arg_types) != (value_type, value_type):
            raise VerifyException(f"the combiner takes two {value_type} arguments")
        terminator = block.last_op
        if not isinstance(terminator, YieldOp) or tuple(v.type for v in terminator.values) != (value_type,):
            raise VerifyException(f"the combiner must end with loop.yield of one {value_type}")

    @classmethod
    def parse(cls, parser: Parser) -> AllReduceOp:
        value = parser.parse_unresolved_operand()
        parser.parse_keyword("mask")
        mask = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attributes = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        (operand,) = parser.resolve_operands([value], [value_type], parser.pos)
        op = cls(operand, mask, parser.parse_region())
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(f" mask {self.mask.value.data}")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=True)


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Host side: runs a loop kernel (or the `llvm.func` it was lowered to) with the given buffers."""

    name = "loop.launch"
    kernel = prop_def(SymbolRefAttr)
    arguments = var_operand_def(MemRefType)

    def __init__(self, kernel: str | SymbolRefAttr, arguments: Sequence[SSAValue]):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)
        super().__init__(operands=[arguments], properties={"kernel": kernel})

    def verify_(self) -> None:
        verify_launch(self, self.kernel, self.arguments, (KernelOp, llvm.FuncOp))

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


MMA_SHAPE = "m16n8k16"
MMA_OPERAND_TYPES = ("f16", "bf16")
"""The operand element types of `loop.mma_sync` m16n8k16 (two per 32-bit register)."""
TF32_MMA_SHAPE = "m16n8k8"
"""The shape of a `loop.mma_sync` on f32 registers (TF32 products)."""
TF32_IGNORED_BITS = 13
"""The low f32 mantissa bits a TF32 tensor core ignores (it reads sign, exponent and 10 bits)."""
WARP_SIZE = 32


def _print_indexed(printer: Printer, buffer: SSAValue, indices: Sequence[SSAValue]) -> None:
    """`%buffer[%i, %j]`: a memref operand and its indices, as the loop ops print them."""
    printer.print_operand(buffer)
    printer.print_string("[")
    printer.print_list(indices, printer.print_operand)
    printer.print_string("]")


def mma_shape(operand_type: Attribute) -> str | None:
    """The instruction shape of a `loop.mma_sync` whose A and B registers are `operand_type`, or
    None if no shape takes them: pairs of f16/bf16 are m16n8k16, f32 (TF32) is m16n8k8."""
    if operand_type == f32:
        return TF32_MMA_SHAPE
    if isinstance(operand_type, VectorType) and operand_type.get_shape() == (2,) and str(operand_type.element_type) in MMA_OPERAND_TYPES:
        return MMA_SHAPE
    return None


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    """`%d:4 = loop.mma_sync m16n8k16 (%a:4) * (%b:2) + (%c:4) : vector<2xf16> -> f32`.

    A warp-collective tensor-core step (PTX `mma.sync.aligned.m16n8k16.row.col.f32`): each group
    of 32 consecutive iterations (a warp) of the enclosing `thread.x` loop, or of the block once
    convert-loop-to-gpu has inlined that loop, computes D = A B + C for a 16x16 A, a 16x8 B and a
    16x8 f32 C, every one spread over the 32 lanes as registers (PTX's fragment layout). Lane
    `l` with g = l / 4 and t = l % 4 holds:

        a0 = A[g, 2t:2t+2]    a1 = A[g+8, 2t:2t+2]    a2 = A[g, 2t+8:2t+10]   a3 = A[g+8, 2t+8:2t+10]
        b0 = B[2t:2t+2, g]    b1 = B[2t+8:2t+10, g]
        c0, c1 = C[g, 2t:2t+2]                         c2, c3 = C[g+8, 2t:2t+2]     (D likewise)

    Operands are `vector<2xf16>` or `vector<2xbf16>` (one register each), accumulators f32.

    `%d:4 = loop.mma_sync m16n8k8 (%a:4) * (%b:2) + (%c:4) : f32 -> f32` is the TF32 step (PTX
    `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`): a 16x8 A, an 8x8 B, one f32 element a
    register, lane (g, t) holding

        a0 = A[g, t]   a1 = A[g+8, t]   a2 = A[g, t+4]   a3 = A[g+8, t+4]   b0 = B[t, g]   b1 = B[t+4, g]

    and C/D as above. The tensor core reads each f32 operand as TF32, its low 13 mantissa bits
    ignored (truncated toward zero); a lowering that wants another rounding rounds first.

    The definition sums each element in increasing k with f32 fused multiply-adds (products of f16,
    bf16 or TF32 are exact in f32); the hardware's order is unspecified and agrees within the dot's
    error bound. Every lane of a warp must execute it, with no control flow that depends on the lane.
    """

    name = "loop.mma_sync"
    a = var_operand_def()
    b = var_operand_def()
    c = var_operand_def()
    d = var_result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    def __init__(self, a: Sequence[SSAValue], b: Sequence[SSAValue], c: Sequence[SSAValue]):
        super().__init__(operands=[a, b, c], result_types=[[value.type for value in c]])

    def operand_type(self) -> Attribute:
        return self.a[0].type if self.a else NoneType()

    def verify_(self) -> None:
        if (len(self.a), len(self.b), len(self.c), len(self.d)) != (4, 2, 4, 4):
            raise VerifyException("an mma_sync step takes 4 A registers, 2 B registers and 4 accumulators, and gives 4")
        operand_type = self.operand_type()
        if mma_shape(operand_type) is None:
            raise VerifyException(f"A and B registers must be vector<2xf16>, vector<2xbf16> (m16n8k16) or f32 (TF32, m16n8k8), got {operand_type}")
        if any(value.type != operand_type for value in (*self.a, *self.b)):
            raise VerifyException(f"every A and B register must be {operand_type}")
        if any(value.type != f32 for value in (*self.c, *self.d)):
            raise VerifyException("accumulators and results must be f32")

    @classmethod
    def parse(cls, parser: Parser) -> MmaSyncOp:
        shape = parser.parse_identifier()
        groups = []
        for separator in ("", "*", "+"):
            if separator:
                parser.parse_punctuation(separator)
            groups.append(
                parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
            )
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        operand_type = parser.parse_type()
        if mma_shape(operand_type) not in (None, shape):  # an invalid type: the verifier says so
            parser.raise_error(f"shape '{shape}' does not take {operand_type} registers (m16n8k16: vector<2xf16|bf16>, m16n8k8: f32)")
        parser.parse_punctuation("->")
        accumulator_type = parser.parse_type()
        a, b, c = (
            parser.resolve_operands(group, [kind] * len(group), parser.pos)
            for group, kind in zip(groups, (operand_type, operand_type, accumulator_type))
        )
        op = cls(a, b, c)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {mma_shape(self.operand_type())} ")
        for separator, group in (("", self.a), (" * ", self.b), (" + ", self.c)):
            printer.print_string(separator + "(")
            printer.print_list(group, printer.print_operand)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.operand_type())
        printer.print_string(" -> ")
        printer.print_attribute(f32)


@irdl_op_definition
class RoundTf32Op(IRDLOperation):
    """`%r = loop.round_tf32 %x : f32`: `x` rounded to TF32 (10 mantissa bits), to nearest with ties
    away from zero, as an f32 (PTX `cvt.rna.tf32.f32`; `mlc/dialects/precision.py` defines the
    rounding). Infinities and NaN pass unchanged. What a TF32 `loop.mma_sync` operand is rounded
    with, so that the tensor core's truncation of the low bits changes nothing."""

    name = "loop.round_tf32"
    value = operand_def(f32)
    result = result_def(f32)
    traits = traits_def(Pure())
    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue) -> None:
        super().__init__(operands=[value], result_types=[f32])


LDMATRIX_ROW = 8
"""Elements of one row of an 8x8 matrix that a lane of `loop.ldmatrix` addresses (16 bytes of b16)."""


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """`%r:4 = loop.ldmatrix x4 [trans] %buffer[%i, %j] : memref<...xf16, 3> -> vector<2xf16>`.

    A warp-collective load of 1, 2 or 4 8x8 matrices of 16-bit elements (PTX `ldmatrix.sync.
    aligned.m8n8.x{1,2,4}[.trans].shared.b16`), in the register layout `loop.mma_sync` takes. Each
    lane `l` of a warp (32 consecutive iterations of the enclosing `thread.x` loop, or of the block
    in a GPU kernel) gives the index of the first of 8 neighbouring elements along the buffer's last
    dimension: lanes 8q..8q+7 give rows 0..7 of matrix q (the indices of lanes past the last
    matrix are ignored). Register q of lane l, with g = l / 4 and t = l % 4, holds
    M_q[g, 2t:2t+2], or with `trans` (M_q[2t, g], M_q[2t+1, g]): the A registers of an mma from a
    row-major A, or the B registers from a row-major (K x N) B.

    The buffer may be in any memory space at the loop level (an element outside its bounds reads
    as zero, as a padded tile load's); `loop-promote-shared` stages every buffer an ldmatrix reads
    in shared memory, the only space the instruction reads on the GPU. Every lane of a warp must
    execute it, with no control flow that depends on the lane.
    """

    name = "loop.ldmatrix"
    buffer = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    registers = var_result_def()
    count = prop_def(IntegerAttr[I64])
    trans = opt_prop_def(UnitAttr)

    def __init__(self, buffer: SSAValue, indices: Sequence[SSAValue], count: int, trans: bool, register_type: Attribute):
        properties: dict[str, Attribute] = {"count": IntegerAttr(count, i64)}
        if trans:
            properties["trans"] = UnitAttr()
        super().__init__(operands=[buffer, indices], result_types=[[register_type] * count], properties=properties)

    @property
    def matrices(self) -> int:
        return self.count.value.data

    @property
    def transposed(self) -> bool:
        return self.trans is not None

    def verify_(self) -> None:
        memref_type = self.buffer.type
        assert isinstance(memref_type, MemRefType)
        if self.matrices not in (1, 2, 4):
            raise VerifyException(f"ldmatrix loads 1, 2 or 4 matrices, not {self.matrices}")
        if len(self.registers) != self.matrices:
            raise VerifyException(f"x{self.matrices} gives {self.matrices} registers, not {len(self.registers)}")
        if len(self.indices) != memref_type.get_num_dims():
            raise VerifyException(f"expected {memref_type.get_num_dims()} indices, got {len(self.indices)}")
        element = str(memref_type.element_type)
        register_type = VectorType(memref_type.element_type, [2])
        if element not in MMA_OPERAND_TYPES:
            raise VerifyException(f"ldmatrix reads 16-bit f16 or bf16 elements, not {element}")
        if any(value.type != register_type for value in self.registers):
            raise VerifyException(f"every register must be {register_type}")

    @classmethod
    def parse(cls, parser: Parser) -> LdMatrixOp:
        shape = parser.parse_identifier()
        if not shape.startswith("x") or not shape[1:].isdigit():
            parser.raise_error(f"expected x1, x2 or x4, got {shape}")
        trans = parser.parse_optional_keyword("trans") is not None
        buffer = parser.parse_unresolved_operand()
        indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        memref_type = parser.parse_type()
        parser.parse_punctuation("->")
        register_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(buffer, memref_type),
            parser.resolve_operands(indices, [IndexType()] * len(indices), parser.pos),
            int(shape[1:]),
            trans,
            register_type,
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" x{self.matrices}{' trans' if self.transposed else ''} ")
        _print_indexed(printer, self.buffer, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)
        printer.print_string(" -> ")
        printer.print_attribute(VectorType(self.buffer.type.element_type, [2]))  # type: ignore[attr-defined]


WARPGROUP_SIZE = 128
"""Threads of a warpgroup: 4 consecutive warps, the unit that issues `loop.wgmma`."""
WGMMA_ROWS, WGMMA_DEPTH = 64, 16
"""M and K of one PTX `wgmma.mma_async` (m64nNk16 for f16/bf16 operands)."""
TF32_WGMMA_DEPTH = 8
"""K of one PTX `wgmma.mma_async` on f32 operands (m64nNk8, TF32 products)."""
WGMMA_OPERAND_TYPES = (*MMA_OPERAND_TYPES, "f32")


@irdl_op_definition
class WgmmaOp(IRDLOperation):
    """`%d:128 = loop.wgmma m64n256k64 %a[%i, %j], %b[%k, %l], (%c:128) : memref<..xf16>, memref<..xf16>`.

    A warpgroup-collective tensor-core product, issued asynchronously (PTX `wgmma.fence`, K/16
    `wgmma.mma_async` m64nNk16, `commit_group`: one group): each group of 128 consecutive iterations (a warpgroup) of the
    enclosing `thread.x` loop, or of the block in a GPU kernel, computes D = A B + C for the
    64 x K block of `a` at [i, j] (rows i..i+63, columns j..j+K-1 of the last two dimensions) and
    the K x N block of `b` at [k, l], both read from memory (zero outside the buffer, as a padded
    tile load's), with an f32 C and D spread over the warpgroup's registers. D may be used only
    through a `loop.wgmma_wait` that completes the op's group, and the blocks it reads must not
    be written before that wait (the read is in flight until then). Warp w of the
    warpgroup, lane l (g = l / 4, t = l % 4) holds, for each column block q < N / 8, registers
    4q .. 4q + 3 = D[16w + g, 8q + 2t], D[16w + g, 8q + 2t + 1], D[16w + g + 8, 8q + 2t],
    D[16w + g + 8, 8q + 2t + 1] (PTX's accumulator layout). The indices must be the same in every
    thread of a warpgroup.

    On the GPU both operands must be in shared memory in the layout `mlc.swizzle` names on their
    allocation (loop-promote-shared stages them; convert-gpu-to-nvvm builds the matrix
    descriptors): A K-major, B N-major (row-major K x N, PTX's transposed B). `mlc.operand_major`
    on the op ([lhs, rhs], default ["k", "n"]) says where a matmul's transposed operand is read in
    its stored layout: rhs "k", `b` holds B transposed (row-major N x K; the block at [k, l] is N x
    K, staged K-major like A, read without the instruction's B transpose); lhs "m", `a` holds A
    transposed (row-major K x M; the block at [i, j] is K x 64, staged M-major like a row-major B,
    read with the instruction's A transpose). f32 operands are TF32 products (PTX m64nNk8
    `.tf32`), B read K-major only (wgmma transposes 16-bit operands only): `mlc.operand_major`
    ["k", "k"], or ["m", "k"], where the GPU lowering loads A's M-major block from shared memory
    into registers (PTX's register-A form, any layout; a matmul computed transposed,
    `mlc.swap_operands`), each operand truncated to TF32 as the tensor core reads it (its low 13 mantissa bits
    ignored, `TF32_IGNORED_BITS`), which is how the op computes them too. The definition sums
    each element in increasing k with f32 fused multiply-adds, as `loop.mma_sync`; the hardware
    agrees within the dot's error bound. Every thread of a warpgroup must execute it, with no
    control flow that depends on the thread.

    A from registers (`%d:N = loop.wgmma m64nNkK (%a0, ...), %b[%k, %l], (%c:N) : memref<..>`,
    PTX's register-A form, FlashAttention-3's P V): no `a` buffer; each thread holds its warp's
    16 rows of A as K / 16 groups of 4 `vector<2xT>` registers, group s in `loop.mma_sync`'s A
    layout of the 16 x 16 slice at columns 16s.. (register r, element e of lane l: row
    16w + l / 4 + 8 (r % 2), column 16s + 2 (l % 4) + e + 8 (r / 2)), T the rhs's element type
    (f16 or bf16); `b` as above.
    """

    name = "loop.wgmma"
    lhs = opt_operand_def(MemRefType)
    lhs_indices = var_operand_def(IndexType)
    a = var_operand_def(VectorType)
    rhs = operand_def(MemRefType)
    rhs_indices = var_operand_def(IndexType)
    c = var_operand_def()
    d = var_result_def()
    n = prop_def(IntegerAttr[I64])
    k = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        lhs: SSAValue | None,
        lhs_indices: Sequence[SSAValue],
        rhs: SSAValue,
        rhs_indices: Sequence[SSAValue],
        c: Sequence[SSAValue],
        columns: int,
        depth: int,
        registers: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[[] if lhs is None else [lhs], lhs_indices, registers, rhs, rhs_indices, c],
            result_types=[[value.type for value in c]],
            properties={"n": IntegerAttr(columns, i64), "k": IntegerAttr(depth, i64)},
        )

    @property
    def columns(self) -> int:
        return self.n.value.data

    @property
    def depth(self) -> int:
        return self.k.value.data

    @property
    def lhs_in_registers(self) -> bool:
        """Whether A comes from registers (`a`) rather than a buffer (see the op)."""
        return self.lhs is None

    @property
    def element_type(self) -> Attribute:
        return self.rhs.type.element_type  # type: ignore[attr-defined]

    def operand_role(self, operand_index: int) -> str | None:
        """"lhs" or "rhs" for the operand position of a buffer this op reads, else None."""
        if operand_index == 0 and self.lhs is not None:
            return "lhs"
        if operand_index == (self.lhs is not None) + len(self.lhs_indices) + len(self.a):
            return "rhs"
        return None

    def _operand_major(self) -> tuple[str, str]:
        major = OPERAND_MAJOR.read(self)
        if isinstance(major, ArrayAttr) and len(major.data) == 2:
            return major.data[0].data, major.data[1].data  # type: ignore[attr-defined]
        return "k", "n"

    @property
    def lhs_m_major(self) -> bool:
        """Whether `lhs` holds A transposed, K x M (see the op)."""
        return self._operand_major()[0] == "m"

    @property
    def rhs_k_major(self) -> bool:
        """Whether `rhs` holds B transposed, N x K (see the op)."""
        return self._operand_major()[1] == "k"

    def read_region(self, role: str) -> tuple[SSAValue, Sequence[SSAValue], tuple[int, int]]:
        """The buffer, indices and (rows, columns) block that `role` ("lhs" or "rhs") reads."""
        if role == "lhs":
            assert self.lhs is not None, "A from registers reads no lhs block"
            return self.lhs, self.lhs_indices, (self.depth, WGMMA_ROWS) if self.lhs_m_major else (WGMMA_ROWS, self.depth)
        return self.rhs, self.rhs_indices, (self.columns, self.depth) if self.rhs_k_major else (self.depth, self.columns)

    def verify_(self) -> None:
        columns, depth = self.columns, self.depth
        if columns % 8 or not 8 <= columns <= 256 or depth % WGMMA_DEPTH or depth <= 0:
            raise VerifyException(f"wgmma needs N a multiple of 8 in [8, 256] and K a positive multiple of 16, got n{columns}k{depth}")
        if len(self.c) != columns // 2 or len(self.d) != columns // 2:
            raise VerifyException(f"an m64n{columns} product takes and gives {columns // 2} accumulators per thread")
        if any(value.type != f32 for value in (*self.c, *self.d)):
            raise VerifyException("accumulators and results must be f32")
        if self.lhs is None:
            self._verify_register_lhs()
            return
        lhs_type, rhs_type = self.lhs.type, self.rhs.type
        assert isinstance(lhs_type, MemRefType) and isinstance(rhs_type, MemRefType)
        if self.a:
            raise VerifyException("wgmma takes A from a buffer or from registers, not both")
        if str(lhs_type.element_type) not in WGMMA_OPERAND_TYPES or lhs_type.element_type != rhs_type.element_type:
            raise VerifyException(f"wgmma reads f16, bf16 or f32 (TF32) operands of one type, got {lhs_type.element_type} and {rhs_type.element_type}")
        if lhs_type.element_type == f32 and not self.rhs_k_major:
            raise VerifyException('wgmma reads an f32 (TF32) B K-major only: mlc.operand_major must be ["k", "k"] or ["m", "k"]')
        for name, memref_type, indices in (("lhs", lhs_type, self.lhs_indices), ("rhs", rhs_type, self.rhs_indices)):
            if memref_type.get_num_dims() < 2 or len(indices) != memref_type.get_num_dims():
                raise VerifyException(f"expected {memref_type.get_num_dims()} {name} indices (at least 2), got {len(indices)}")

    def _verify_register_lhs(self) -> None:
        rhs_type = self.rhs.type
        assert isinstance(rhs_type, MemRefType)
        if str(rhs_type.element_type) not in MMA_OPERAND_TYPES:
            raise VerifyException(f"wgmma with A from registers reads f16 or bf16 operands, got {rhs_type.element_type}")
        if self.lhs_indices:
            raise VerifyException("wgmma with A from registers takes no lhs indices")
        if len(self.a) != self.depth // WGMMA_DEPTH * 4:
            raise VerifyException(f"an m64n{self.columns}k{self.depth} product takes {self.depth // WGMMA_DEPTH * 4} A registers per thread, got {len(self.a)}")
        register_type = VectorType(rhs_type.element_type, [2])
        if any(value.type != register_type for value in self.a):
            raise VerifyException(f"A registers must be {register_type}")
        if self.lhs_m_major:
            raise VerifyException('wgmma with A from registers has no A layout: mlc.operand_major\'s lhs must be "k"')
        if rhs_type.get_num_dims() < 2 or len(self.rhs_indices) != rhs_type.get_num_dims():
            raise VerifyException(f"expected {rhs_type.get_num_dims()} rhs indices (at least 2), got {len(self.rhs_indices)}")

    @classmethod
    def parse(cls, parser: Parser) -> WgmmaOp:
        shape = parser.parse_identifier()
        match = re.fullmatch(r"m64n(\d+)k(\d+)", shape)
        if match is None:
            parser.raise_error(f"expected m64nNkK, got {shape}")
        columns, depth = int(match.group(1)), int(match.group(2))
        registers = parser.parse_optional_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        buffers = []
        for position in range(1 if registers is not None else 2):
            if position or registers is not None:
                parser.parse_punctuation(",")
            buffer = parser.parse_unresolved_operand()
            indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
            buffers.append((buffer, indices))
        if registers is not None:
            buffers.insert(0, (None, []))
        parser.parse_punctuation(",")
        accumulators = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        lhs_type = None if registers is not None else parser.parse_type()
        if registers is None:
            parser.parse_punctuation(",")
        rhs_type = parser.parse_type()
        (lhs, lhs_indices), (rhs, rhs_indices) = buffers
        register_type = VectorType(rhs_type.element_type, [2])  # type: ignore[attr-defined]
        op = cls(
            None if lhs is None else parser.resolve_operand(lhs, lhs_type),  # type: ignore[arg-type]
            parser.resolve_operands(lhs_indices, [IndexType()] * len(lhs_indices), parser.pos),
            parser.resolve_operand(rhs, rhs_type),
            parser.resolve_operands(rhs_indices, [IndexType()] * len(rhs_indices), parser.pos),
            parser.resolve_operands(accumulators, [f32] * len(accumulators), parser.pos),
            columns,
            depth,
            parser.resolve_operands(registers or [], [register_type] * len(registers or []), parser.pos),
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" m{WGMMA_ROWS}n{self.columns}k{self.depth} ")
        if self.lhs is None:
            printer.print_string("(")
            printer.print_list(self.a, printer.print_operand)
            printer.print_string("), ")
        else:
            _print_indexed(printer, self.lhs, self.lhs_indices)
            printer.print_string(", ")
        _print_indexed(printer, self.rhs, self.rhs_indices)
        printer.print_string(", (")
        printer.print_list(self.c, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        if self.lhs is not None:
            printer.print_attribute(self.lhs.type)
            printer.print_string(", ")
        printer.print_attribute(self.rhs.type)


@irdl_op_definition
class WgmmaWaitOp(IRDLOperation):
    """`%d:N = loop.wgmma_wait 0 (%acc:N)`: waits until at most `pending` of the thread's groups
    of `loop.wgmma` products are in flight (PTX `wgmma.wait_group N`), and gives the accumulators of
    a completed product (`acc`, a `loop.wgmma`'s results) for use: the wait orders every read of
    them after the product lands. The completed products' reads of shared memory are then done."""

    name = "loop.wgmma_wait"
    accumulators = var_operand_def()
    d = var_result_def()
    pending = prop_def(IntegerAttr[I64])

    def __init__(self, pending: int, accumulators: Sequence[SSAValue]) -> None:
        super().__init__(operands=[accumulators], result_types=[[value.type for value in accumulators]], properties={"pending": IntegerAttr(pending, i64)})

    @property
    def groups_in_flight(self) -> int:
        return self.pending.value.data

    def verify_(self) -> None:
        if self.groups_in_flight < 0:
            raise VerifyException(f"the number of groups left in flight must be non-negative, got {self.groups_in_flight}")
        if any(value.type != f32 for value in self.accumulators):
            raise VerifyException("wgmma accumulators are f32")

    @classmethod
    def parse(cls, parser: Parser) -> WgmmaWaitOp:
        pending = parser.parse_integer()
        accumulators = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        attributes = parser.parse_optional_attr_dict()
        op = cls(pending, parser.resolve_operands(accumulators, [f32] * len(accumulators), parser.pos))
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.groups_in_flight} (")
        printer.print_list(self.accumulators, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)


ASYNC_COPY_BYTES = (4, 8, 16)
"""The sizes one `loop.async_copy` may move (PTX `cp.async` moves 4, 8 or 16 bytes)."""


@irdl_op_definition
class AsyncCopyOp(IRDLOperation):
    """`loop.async_copy %src[%i, %j] to %dst[%s, %k, %l], 8 [if %inside] : memref<..> to memref<.., 3>`.

    Starts copying `elements` neighbouring elements (4, 8 or 16 bytes) along the last dimension
    of `source` (global memory) to `destination` (shared memory), in the background (PTX
    `cp.async.cg.shared.global`, or `.ca` below 16 bytes). With `if %inside` false the destination
    receives zeros and the source is not read (PTX's src-size 0), so that a copy past a buffer's
    end needs no branch. The copy joins the thread's current *group*; `loop.async_commit` closes
    the group and `loop.async_wait N` blocks until at most the N most recently committed groups of
    this thread are still in flight. The destination holds the copied data only after the wait
    that completes its group: reading it before (or writing it, by another op) is an error the
    interpreter reports, and another thread sees it only once a barrier (at the loop level, the
    block-synchronous order of statements) follows that wait.
    """

    name = "loop.async_copy"
    source = operand_def(MemRefType)
    source_indices = var_operand_def(IndexType)
    destination = operand_def(MemRefType)
    destination_indices = var_operand_def(IndexType)
    inside = opt_operand_def(i1)
    elements = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        source: SSAValue,
        source_indices: Sequence[SSAValue],
        destination: SSAValue,
        destination_indices: Sequence[SSAValue],
        elements: int,
        inside: SSAValue | None = None,
    ):
        super().__init__(
            operands=[source, source_indices, destination, destination_indices, [] if inside is None else [inside]],
            properties={"elements": IntegerAttr(elements, i64)},
        )

    @property
    def count(self) -> int:
        return self.elements.value.data

    def byte_count(self) -> int:
        element_type = self.source.type.element_type  # type: ignore[attr-defined]
        return self.count * (element_type.bitwidth // 8)  # type: ignore[attr-defined]

    def verify_(self) -> None:
        source_type, destination_type = self.source.type, self.destination.type
        assert isinstance(source_type, MemRefType) and isinstance(destination_type, MemRefType)
        if source_type.element_type != destination_type.element_type:
            raise VerifyException(f"source and destination element types differ: {source_type.element_type} and {destination_type.element_type}")
        for name, memref_type, indices in (("source", source_type, self.source_indices), ("destination", destination_type, self.destination_indices)):
            if len(indices) != memref_type.get_num_dims():
                raise VerifyException(f"expected {memref_type.get_num_dims()} {name} indices, got {len(indices)}")
        space = destination_type.memory_space
        if not (isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE):
            raise VerifyException("the destination of an async copy must be shared memory (memory space 3)")
        if not hasattr(source_type.element_type, "bitwidth") or self.byte_count() not in ASYNC_COPY_BYTES:
            raise VerifyException(f"an async copy moves 4, 8 or 16 bytes, not {self.count} elements of {source_type.element_type}")

    @classmethod
    def parse(cls, parser: Parser) -> AsyncCopyOp:
        source = parser.parse_unresolved_operand()
        source_indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_keyword("to")
        destination = parser.parse_unresolved_operand()
        destination_indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_punctuation(",")
        elements = parser.parse_integer()
        inside = parser.parse_unresolved_operand() if parser.parse_optional_keyword("if") is not None else None
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_keyword("to")
        destination_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(source, source_type),
            parser.resolve_operands(source_indices, [IndexType()] * len(source_indices), parser.pos),
            parser.resolve_operand(destination, destination_type),
            parser.resolve_operands(destination_indices, [IndexType()] * len(destination_indices), parser.pos),
            elements,
            None if inside is None else parser.resolve_operand(inside, i1),
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        for position, (memref_value, indices) in enumerate(((self.source, self.source_indices), (self.destination, self.destination_indices))):
            printer.print_string(" to " if position else " ")
            _print_indexed(printer, memref_value, indices)
        printer.print_string(f", {self.count}")
        if self.inside is not None:
            printer.print_string(" if ")
            printer.print_operand(self.inside)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.destination.type)


@irdl_op_definition
class AsyncCommitOp(IRDLOperation):
    """`loop.async_commit`: closes the thread's current group of async copies (PTX
    `cp.async.commit_group`); an empty group is allowed and completes at once."""

    name = "loop.async_commit"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class WarpSyncOp(IRDLOperation):
    """`loop.warp_sync`: the 32 lanes of each warp that runs it meet, and each lane's memory
    accesses before it are ordered before every lane's accesses after it (PTX `bar.warp.sync
    0xffffffff`, CUDA's `__syncwarp()`). Every lane of a warp must reach it together. So one lane
    can arrive on an mbarrier for its whole warp: its arrival releases what the warp did."""

    name = "loop.warp_sync"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class AsyncWaitOp(IRDLOperation):
    """`loop.async_wait 1`: waits until at most `pending` of the thread's committed groups of async
    copies are still in flight (PTX `cp.async.wait_group N`); their copies are then complete."""

    name = "loop.async_wait"
    pending = prop_def(IntegerAttr[I64])
    assembly_format = "$pending attr-dict"

    def __init__(self, pending: int) -> None:
        super().__init__(properties={"pending": IntegerAttr(pending, i64)})

    @property
    def groups_in_flight(self) -> int:
        return self.pending.value.data

    def verify_(self) -> None:
        if self.groups_in_flight < 0:
            raise VerifyException(f"the number of groups left in flight must be non-negative, got {self.groups_in_flight}")


def _shared_memref(memref_type: Attribute) -> bool:
    space = memref_type.memory_space if isinstance(memref_type, MemRefType) else None
    return isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE


def _verify_barrier(barrier: SSAValue, indices: Sequence[SSAValue]) -> None:
    """An mbarrier is an i64 element of a shared buffer (one 8-byte word per barrier)."""
    barrier_type = barrier.type
    if not (isinstance(barrier_type, MemRefType) and barrier_type.element_type == i64 and _shared_memref(barrier_type)):
        raise VerifyException(f"an mbarrier is an i64 of a shared buffer (memref<..xi64, 3>), not {barrier_type}")
    if len(indices) != barrier_type.get_num_dims():
        raise VerifyException(f"expected {barrier_type.get_num_dims()} barrier indices, got {len(indices)}")


def _parse_indexed(parser: Parser) -> tuple[object, list[object]]:
    return parser.parse_unresolved_operand(), parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)


def _resolve_indices(parser: Parser, indices: Sequence[object]) -> list[SSAValue]:
    return parser.resolve_operands(indices, [IndexType()] * len(indices), parser.pos)  # type: ignore[arg-type]


@irdl_op_definition
class MbarrierInitOp(IRDLOperation):
    """`loop.mbarrier_init %bars[%i], 1 : memref<4xi64, 3>`: makes the i64 at `%bars[%i]` an
    mbarrier whose phases complete after `count` arrivals (PTX `mbarrier.init.shared.b64`), in
    phase 0. The lanes that run it must all name one barrier with one count (it is issued by one
    thread in practice); other threads may use the barrier only after a barrier of the block."""

    name = "loop.mbarrier_init"
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    count = prop_def(IntegerAttr[I64])

    def __init__(self, barrier: SSAValue, indices: Sequence[SSAValue], count: int) -> None:
        super().__init__(operands=[barrier, indices], properties={"count": IntegerAttr(count, i64)})

    @property
    def arrivals(self) -> int:
        return self.count.value.data

    def verify_(self) -> None:
        _verify_barrier(self.barrier, self.indices)
        if not 1 <= self.arrivals < 1 << 20:
            raise VerifyException(f"an mbarrier's arrival count is between 1 and 2^20 - 1, got {self.arrivals}")

    @classmethod
    def parse(cls, parser: Parser) -> MbarrierInitOp:
        barrier, indices = _parse_indexed(parser)
        parser.parse_punctuation(",")
        count = parser.parse_integer()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        barrier_type = parser.parse_type()
        op = cls(parser.resolve_operand(barrier, barrier_type), _resolve_indices(parser, indices), count)  # type: ignore[arg-type]
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.barrier, self.indices)
        printer.print_string(f", {self.arrivals}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)


@irdl_op_definition
class MbarrierArriveOp(IRDLOperation):
    """`loop.mbarrier_arrive %bars[%i] [expect_tx 16384] : memref<4xi64, 3>`: each lane that runs
    it counts one arrival on the barrier's current phase (PTX `mbarrier.arrive.shared::cta.b64`);
    with `expect_tx N` it first makes the phase also wait for N more bytes of bulk copies
    (`loop.tma_load`) completing on it (`mbarrier.arrive.expect_tx`). The phase completes when
    all its arrivals are in and its expected bytes have landed; the barrier is then in the next
    phase (its parity flips)."""

    name = "loop.mbarrier_arrive"
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    expect_tx = opt_prop_def(IntegerAttr[I64])

    def __init__(self, barrier: SSAValue, indices: Sequence[SSAValue], expect_tx: int | None = None) -> None:
        properties = {} if expect_tx is None else {"expect_tx": IntegerAttr(expect_tx, i64)}
        super().__init__(operands=[barrier, indices], properties=properties)

    @property
    def transaction_bytes(self) -> int:
        return 0 if self.expect_tx is None else self.expect_tx.value.data

    def verify_(self) -> None:
        _verify_barrier(self.barrier, self.indices)
        if not 0 <= self.transaction_bytes < 1 << 20:
            raise VerifyException(f"an mbarrier expects between 0 and 2^20 - 1 transaction bytes, got {self.transaction_bytes}")

    @classmethod
    def parse(cls, parser: Parser) -> MbarrierArriveOp:
        barrier, indices = _parse_indexed(parser)
        expect_tx = parser.parse_integer() if parser.parse_optional_keyword("expect_tx") is not None else None
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        barrier_type = parser.parse_type()
        op = cls(parser.resolve_operand(barrier, barrier_type), _resolve_indices(parser, indices), expect_tx)  # type: ignore[arg-type]
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.barrier, self.indices)
        if self.expect_tx is not None:
            printer.print_string(f" expect_tx {self.transaction_bytes}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)


@irdl_op_definition
class MbarrierWaitOp(IRDLOperation):
    """`loop.mbarrier_wait %bars[%i], %parity : memref<4xi64, 3>`: blocks the lanes that run it
    until the barrier's phase of parity `%parity` (its low bit) has completed (PTX
    `mbarrier.try_wait.parity` in a loop): returns at once while the barrier's current phase has
    the other parity. The bulk copies that completed on that phase are then visible to the
    waiting threads. Waiting on a phase that never completes (arrivals or bytes missing) hangs:
    the interpreter reports it."""

    name = "loop.mbarrier_wait"
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    parity = operand_def(IndexType)

    def __init__(self, barrier: SSAValue, indices: Sequence[SSAValue], parity: SSAValue) -> None:
        super().__init__(operands=[barrier, indices, parity])

    def verify_(self) -> None:
        _verify_barrier(self.barrier, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> MbarrierWaitOp:
        barrier, indices = _parse_indexed(parser)
        parser.parse_punctuation(",")
        parity = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        barrier_type = parser.parse_type()
        op = cls(parser.resolve_operand(barrier, barrier_type), _resolve_indices(parser, indices), parser.resolve_operand(parity, IndexType()))  # type: ignore[arg-type]
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.barrier, self.indices)
        printer.print_string(", ")
        printer.print_operand(self.parity)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)


def _constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` index or integer, None for anything computed."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


TMA_BOX_LIMIT = 256
"""The most elements a bulk tensor copy's box spans along one dimension."""


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """`loop.tma_load %a[%i, %j] to %stages[%s, %c0, %c0], %bars[%b] : memref<MxKxf16> to
    memref<SxRxCxf16, 3>, memref<Sxi64, 3>`.

    A bulk tensor copy (TMA, PTX `cp.async.bulk.tensor`): each lane that runs it copies the box
    of `source` (global memory, a kernel argument) at `source_indices`, as large as the
    destination's trailing `rank(source)` dimensions, to the destination at
    `destination_indices` (the box's first element; shared memory), in the background; elements
    outside the source (past its end, or before its start: coordinates may be negative) arrive
    as zeros. The innermost start coordinate must be a multiple of 16 bytes (the hardware stops a
    copy that is not with an illegal instruction; the interpreter reports it); the others may be
    anything. The copy's bytes count against the barrier's current
    phase (`loop.mbarrier_arrive ... expect_tx`): the destination holds the box once that phase
    completes, for the threads that wait on it (`loop.mbarrier_wait`); reading or writing it
    before is an error the interpreter reports. On the GPU the copy goes through a tensor map
    (one per source and box, `mlc.tensor_maps`) that the runtime encodes.
    """

    name = "loop.tma_load"
    source = operand_def(MemRefType)
    source_indices = var_operand_def(IndexType)
    destination = operand_def(MemRefType)
    destination_indices = var_operand_def(IndexType)
    barrier = operand_def(MemRefType)
    barrier_indices = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        source: SSAValue,
        source_indices: Sequence[SSAValue],
        destination: SSAValue,
        destination_indices: Sequence[SSAValue],
        barrier: SSAValue,
        barrier_indices: Sequence[SSAValue],
    ) -> None:
        super().__init__(operands=[source, source_indices, destination, destination_indices, barrier, barrier_indices])

    def box(self) -> tuple[int, ...]:
        """The copied box: the destination's trailing dimensions, one per source dimension."""
        source_type, destination_type = self.source.type, self.destination.type
        assert isinstance(source_type, MemRefType) and isinstance(destination_type, MemRefType)
        return tuple(destination_type.get_shape()[destination_type.get_num_dims() - source_type.get_num_dims() :])

    def byte_count(self) -> int:
        element_type = self.source.type.element_type  # type: ignore[attr-defined]
        count = 1
        for size in self.box():
            count *= size
        return count * (element_type.bitwidth // 8)  # type: ignore[attr-defined]

    def verify_(self) -> None:
        source_type, destination_type = self.source.type, self.destination.type
        assert isinstance(source_type, MemRefType) and isinstance(destination_type, MemRefType)
        if source_type.element_type != destination_type.element_type:
            raise VerifyException(f"source and destination element types differ: {source_type.element_type} and {destination_type.element_type}")
        for name, memref_type, indices in (("source", source_type, self.source_indices), ("destination", destination_type, self.destination_indices)):
            if len(indices) != memref_type.get_num_dims():
                raise VerifyException(f"expected {memref_type.get_num_dims()} {name} indices, got {len(indices)}")
        if _shared_memref(source_type):
            raise VerifyException("the source of a bulk tensor copy is global memory")
        if not _shared_memref(destination_type):
            raise VerifyException("the destination of a bulk tensor copy must be shared memory (memory space 3)")
        if destination_type.get_num_dims() < source_type.get_num_dims():
            raise VerifyException(f"the destination has fewer dimensions than the {source_type.get_num_dims()} of the box")
        if not hasattr(source_type.element_type, "bitwidth") or not all(0 < size <= TMA_BOX_LIMIT for size in self.box()):
            raise VerifyException(f"a bulk tensor copy's box spans 1 to {TMA_BOX_LIMIT} elements of a scalar type per dimension, not {list(self.box())}")
        if self.box()[-1] * source_type.element_type.bitwidth % 128:  # type: ignore[attr-defined]
            raise VerifyException("a bulk tensor copy's box rows are multiples of 16 bytes")
        innermost = _constant_index(self.source_indices[-1])
        if innermost is not None and innermost * source_type.element_type.bitwidth % 128:  # type: ignore[attr-defined]
            raise VerifyException(f"a bulk tensor copy's innermost start coordinate is a multiple of 16 bytes, not {innermost} elements")
        _verify_barrier(self.barrier, self.barrier_indices)

    @classmethod
    def parse(cls, parser: Parser) -> TmaLoadOp:
        source, source_indices = _parse_indexed(parser)
        parser.parse_keyword("to")
        destination, destination_indices = _parse_indexed(parser)
        parser.parse_punctuation(",")
        barrier, barrier_indices = _parse_indexed(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_keyword("to")
        destination_type = parser.parse_type()
        parser.parse_punctuation(",")
        barrier_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(source, source_type),  # type: ignore[arg-type]
            _resolve_indices(parser, source_indices),
            parser.resolve_operand(destination, destination_type),  # type: ignore[arg-type]
            _resolve_indices(parser, destination_indices),
            parser.resolve_operand(barrier, barrier_type),  # type: ignore[arg-type]
            _resolve_indices(parser, barrier_indices),
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.source, self.source_indices)
        printer.print_string(" to ")
        _print_indexed(printer, self.destination, self.destination_indices)
        printer.print_string(", ")
        _print_indexed(printer, self.barrier, self.barrier_indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.destination.type)
        printer.print_string(", ")
        printer.print_attribute(self.barrier.type)


Loop = Dialect(
    "loop",
    [KernelOp, ReturnOp, ParallelOp, YieldOp, AllReduceOp, LaunchOp, MmaSyncOp, RoundTf32Op, LdMatrixOp, WgmmaOp, WgmmaWaitOp, AsyncCopyOp, AsyncCommitOp, AsyncWaitOp,
     WarpSyncOp, MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, TmaLoadOp],
    [],
)
