"""What every level's kernels and launches share: signature syntax and launch checking.

From the tile level down, a compiled module holds *kernels* (`tile.kernel`, `loop.kernel`,
`mlc_gpu.func`, and finally `llvm.func`) beside *host functions* (`func.func`). A host function
only allocates buffers (`memref.alloc`; the intermediates are `memref.view`s of one arena at
constant byte offsets), names constants (`memref.get_global`) and launches kernels; the runtime
executes it step by step, and the conversions to LLVM leave it alone.

A kernel takes memrefs (bare pointers once it is an `llvm.func`), none larger than the targets
can address (`buffer_limits`), and returns nothing; it writes its outputs through its memref
arguments (destination-passing style). A launch passes host buffers to a kernel. A buffer may be
passed for a parameter of another static shape when the element type and the element count agree:
both are contiguous row-major buffers, so this reinterpretation is how a reshape costs nothing.

Kernel ops print as `<op> @name(%a: memref<4xf32>, %b: memref<4xf32>) <clauses> {body}`; this
module parses and prints the `@name(...)` part.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, FunctionType, MemRefType, NoneAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from mlc.dialects import attributes

from mlc.dialects.buffer_limits import buffer_size_problem


def parse_kernel_signature(parser: Parser) -> tuple[StringAttr, list[Parser.Argument]]:
    """Parses `@name(%a: type, ...)` and returns the name and the typed arguments."""
    name = parser.parse_symbol_name()
    arguments = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
    )
    return name, arguments


def print_kernel_signature(printer: Printer, name: StringAttr, arguments: Sequence[BlockArgument]) -> None:
    printer.print_string(" ")
    printer.print_symbol_name(name.data)
    printer.print_string("(")
    printer.print_list(arguments, printer.print_block_argument)
    printer.print_string(")")


def parse_integer_list(parser: Parser) -> list[int]:
    """Parses `[1, 2, 3]`."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def format_integer_list(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def verify_kernel_signature(function_type: FunctionType, body_block: Block | None) -> None:
    """Kernels take static memrefs and return nothing; the entry block must match."""
    if function_type.outputs.data:
        raise VerifyException("a kernel returns no values; write outputs through its memref arguments")
    for index, input_type in enumerate(function_type.inputs.data):
        if not isinstance(input_type, MemRefType):
            raise VerifyException(f"kernel argument #{index} must be a memref, got {input_type}")
        if not input_type.has_static_shape():
            raise VerifyException(f"kernel argument #{index} has a dynamic shape ({input_type})")
        too_large = buffer_size_problem(input_type.get_shape(), input_type.element_type, str(input_type))
        if too_large is not None:
            raise VerifyException(f"kernel argument #{index}: {too_large}")
    if body_block is not None and tuple(body_block.arg_types) != function_type.inputs.data:
        raise VerifyException("the entry block's argument types must equal the kernel's argument types")


def element_count(memref_type: MemRefType) -> int:
    count = 1
    for dim in memref_type.get_shape():
        count *= dim
    return count


def is_reinterpretable(buffer_type: Attribute, parameter_type: Attribute) -> bool:
    """Whether a buffer of `buffer_type` may be passed for a parameter of `parameter_type`."""
    if buffer_type == parameter_type:
        return True
    if not isinstance(buffer_type, MemRefType) or not isinstance(parameter_type, MemRefType):
        return False
    return (
        buffer_type.element_type == parameter_type.element_type
        and buffer_type.memory_space == parameter_type.memory_space
        and buffer_type.has_static_shape()
        and parameter_type.has_static_shape()
        and element_count(buffer_type) == element_count(parameter_type)
        and isinstance(buffer_type.layout, NoneAttr)
        and isinstance(parameter_type.layout, NoneAttr)
    )


def kernel_parameter_types(kernel: Operation) -> Sequence[Attribute] | None:
    """The parameter types of a kernel-like op (anything with a `function_type`)."""
    function_type = getattr(kernel, "function_type", None)
    if isinstance(function_type, FunctionType | llvm.LLVMFunctionType):
        return function_type.inputs.data
    return None


def _is_passable(argument_type: Attribute, parameter_type: Attribute) -> bool:
    # A kernel already lowered to `llvm.func` takes bare pointers: any buffer may be passed.
    if isinstance(parameter_type, llvm.LLVMPointerType):
        return isinstance(argument_type, MemRefType)
    return is_reinterpretable(argument_type, parameter_type)


def verify_launch(
    launch: Operation,
    kernel_name: SymbolRefAttr,
    arguments: Sequence[SSAValue],
    accepted_kernels: tuple[type[Operation], ...],
) -> Operation:
    """Checks that `kernel_name` names a kernel of an accepted kind with matching parameters.

    Returns the kernel op so that callers can check level-specific properties.
    """
    kernel = SymbolTable.lookup_symbol(launch, kernel_name)
    if kernel is None:
        raise VerifyException(f"'{kernel_name.string_value()}' does not name a kernel in this module")
    if not isinstance(kernel, accepted_kernels):
        kinds = ", ".join(f"'{k.name}'" for k in accepted_kernels)
        raise VerifyException(
            f"'{kernel_name.string_value()}' is a '{kernel.name}', but this launch takes {kinds}"
        )
    parameter_types = kernel_parameter_types(kernel)
    if parameter_types is None:  # pragma: no cover - every accepted kernel has a function_type
        raise VerifyException(f"cannot read the signature of '{kernel_name.string_value()}'")
    maps = kernel.attributes.get(attributes.TENSOR_MAPS.name)
    if isinstance(maps, ArrayAttr) and maps.data:  # trailing parameters the runtime fills
        parameter_types = parameter_types[: max(0, len(parameter_types) - len(maps.data))]
    if len(parameter_types) != len(arguments):
        maps_note = f" and {len(maps.data)} tensor maps" if isinstance(maps, ArrayAttr) and maps.data else ""
        raise VerifyException(
            f"kernel '{kernel_name.string_value()}' takes {len(parameter_types)} arguments{maps_note}, "
            f"but the launch passes {len(arguments)}"
        )
    for index, (argument, parameter_type) in enumerate(zip(arguments, parameter_types)):
        if not _is_passable(argument.type, parameter_type):
            raise VerifyException(
                f"launch argument #{index} of type {argument.type} cannot be passed for "
                f"kernel parameter of type {parameter_type}"
            )
    return kernel


def parse_launch(parser: Parser) -> tuple[SymbolRefAttr, list[SSAValue]]:
    """Parses `@kernel(%a, %b)` followed later by `: type, type` (the caller parses the middle)."""
    kernel = parser.parse_attribute()
    if not isinstance(kernel, SymbolRefAttr):
        parser.raise_error("expected a kernel symbol such as @kernel")
    operands = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )
    return kernel, operands  # type: ignore[return-value]


def parse_launch_types(parser: Parser, operands: Sequence[object]) -> list[SSAValue]:
    """Parses `: type, type` and resolves the operands parsed by `parse_launch`."""
    types: list[Attribute] = []
    if operands:
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    return parser.resolve_operands(operands, types, parser.pos)  # type: ignore[arg-type]


def print_launch_arguments(printer: Printer, kernel: SymbolRefAttr, arguments: Sequence[SSAValue]) -> None:
    printer.print_string(" ")
    printer.print_attribute(kernel)
    printer.print_string("(")
    printer.print_list(arguments, printer.print_operand)
    printer.print_string(")")


def print_launch_types(printer: Printer, arguments: Sequence[SSAValue]) -> None:
    if arguments:
        printer.print_string(" : ")
        printer.print_list((a.type for a in arguments), printer.print_attribute)
