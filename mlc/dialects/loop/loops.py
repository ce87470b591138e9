"""The loop dialect's structure: kernels, parallel loops and their hardware mapping, collectives.

What: `loop.kernel` (a function over memrefs), `loop.return`, `loop.parallel %i < N mapping M`
(independent iterations, mapped to a grid or block dimension or left to the lowering),
`loop.yield`, `loop.all_reduce` (a butterfly over the iterations of the innermost parallel loop)
and the host's `loop.launch`; plus the dialect's mapping names, the threads-per-block limit and
the memory-space numbers every other loop module uses. `ops.py` states the semantics.

Verification: a kernel's thread loops ask for at most `MAX_THREADS_PER_BLOCK` threads; a mapping
is used once per nest and no block loop sits in a thread loop; an all-reduce's loop has a
power-of-two trip count and its mask stays inside it. Limits: trip counts are static.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    FunctionType,
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    RecursiveMemoryEffect,
    SingleBlockImplicitTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

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
