"""The graph dialect's fusion group: `graph.fusion` and its terminator `graph.yield`.

A `graph.fusion` holds the graph ops that one future kernel computes (`graph-fuse` makes them;
`graph-inline-fusion` and `convert-graph-to-tile` take them apart again). Its operands are the
group's inputs, its results the group's outputs. The body is one block, isolated from above: its
arguments stand for the operands, one to one and of the same types, and it ends with a
`graph.yield` of the values the op returns. Semantics: the body evaluated on the operands.

    %y, %m = graph.fusion reduction "main_1_softmax" (%a = %x : tensor<8x32xf32>)
               -> (tensor<8x32xf32>, tensor<8x1xf32>) {
      %s = graph.softmax %a axis 1 : tensor<8x32xf32>
      %t = graph.reduce_max %a axes [1] keepdims true : tensor<8x32xf32> to tensor<8x1xf32>
      graph.yield %s, %t : tensor<8x32xf32>, tensor<8x1xf32>
    }

The custom syntax is `graph.fusion KIND ["NAME"] (%argument = %operand : type, ...) -> types
[attributes {...}] {body}`. Generic form: `"graph.fusion"(%x) <{kind = "reduction", name =
"main_1_softmax"}> ({ ^bb0(%a: tensor<8x32xf32>): ... "graph.yield"(%s, %t) : (...) -> () }) :
(tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>)`.

`kind` says what the kernel is built around (`FUSION_KINDS`): `elementwise` (elementwise,
broadcast and reshape ops only), `reduction` (reductions or normalisations with their elementwise
producers and consumers), `matmul` and `conv` (one contraction and its elementwise epilogue), `chain`
(a GEMM chain such as attention, one kernel; `mlc.chain` says which), and `opaque` (one op that fuses with nothing). `name` is free text for people and kernel names.

The verifier checks the kind, that the body's arguments match the operands in number and type,
that the yield matches the results, and that the body holds graph ops only, with no nested fusion.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.graph.support import verify_tensor, verify_tensor_type

FUSION_KINDS = ("elementwise", "reduction", "matmul", "conv", "chain", "opaque")
"""What a fusion group is built around (see the module docstring)."""


class IsolatedFusionBody(IsolatedFromAbove):
    """IsolatedFromAbove, with a message that names the op and the operand that reach outside."""

    def verify(self, op: Operation) -> None:
        for inner in (nested for region in op.regions for nested in region.walk()):
            for index, operand in enumerate(inner.operands):
                if operand.owner is op or not op.is_ancestor(operand.owner):
                    raise VerifyException(
                        f"operand #{index} of '{inner.name}' in the body is defined outside the "
                        "fusion; values from outside must enter as operands of the fusion"
                    )


@irdl_op_definition
class FusionOp(IRDLOperation):
    """A fusion group: the graph ops of one future kernel, as a region over the group's inputs."""

    name = "graph.fusion"
    inputs = var_operand_def()
    outputs = var_result_def()
    kind = prop_def(StringAttr)
    group_name = opt_prop_def(StringAttr, prop_name="name")
    body = region_def("single_block")
    traits = traits_def(IsolatedFusionBody(), RecursiveMemoryEffect())

    def __init__(
        self,
        kind: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        group_name: str | None = None,
    ):
        properties: dict[str, Attribute] = {"kind": StringAttr(kind)}
        if group_name is not None:
            properties["name"] = StringAttr(group_name)
        super().__init__(
            operands=[inputs], result_types=[result_types], properties=properties, regions=[body]
        )

    def verify_(self) -> None:
        if self.kind.data not in FUSION_KINDS:
            raise VerifyException(
                f"unknown kind '{self.kind.data}'; expected one of {', '.join(FUSION_KINDS)}"
            )
        for index, operand in enumerate(self.inputs):
            verify_tensor(operand, f"operand #{index}")
        for index, result in enumerate(self.outputs):
            verify_tensor_type(result.type, f"result #{index}")
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"the body takes {len(block.args)} arguments, but the op has {len(self.inputs)} "
                "operands; they must correspond one to one"
            )
        for index, (argument, operand) in enumerate(zip(block.args, self.inputs)):
            if argument.type != operand.type:
                raise VerifyException(
                    f"body argument #{index} has type {argument.type}, but operand #{index} has "
                    f"type {operand.type}"
                )
        self._verify_body_ops(block)
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("the body must end with 'graph.yield'")
        self._verify_yield(terminator)

    @staticmethod
    def _verify_body_ops(block: Block) -> None:
        for inner in block.ops:
            if isinstance(inner, FusionOp):
                raise VerifyException("a 'graph.fusion' may not hold another 'graph.fusion'")
            if inner.dialect_name() != "graph":
                raise VerifyException(
                    f"'{inner.name}' is not a graph op; a fusion body holds graph ops only"
                )

    def _verify_yield(self, terminator: YieldOp) -> None:
        if len(terminator.values) != len(self.outputs):
            raise VerifyException(
                f"'graph.yield' returns {len(terminator.values)} values, but the op has "
                f"{len(self.outputs)} results"
            )
        for index, (value, result) in enumerate(zip(terminator.values, self.outputs)):
            if value.type != result.type:
                raise VerifyException(
                    f"yielded value #{index} has type {value.type}, but result #{index} has "
                    f"type {result.type}"
                )

    @classmethod
    def parse(cls, parser: Parser) -> FusionOp:
        kind = parser.parse_identifier(" for the fusion kind (" + ", ".join(FUSION_KINDS) + ")")
        group_name = parser.parse_optional_str_literal()
        arguments: list[Parser.UnresolvedArgument] = []
        operands: list[UnresolvedOperand] = []
        types: list[Attribute] = []

        def parse_input() -> None:
            arguments.append(parser.parse_argument(expect_type=False))
            parser.parse_punctuation("=")
            operands.append(parser.parse_unresolved_operand())
            parser.parse_punctuation(":")
            types.append(parser.parse_type())

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_input)
        parser.parse_punctuation("->")
        result_types: list[Attribute]
        if parser.parse_optional_punctuation("(") is None:
            result_types = [parser.parse_type()]
        elif parser.parse_optional_punctuation(")") is not None:
            result_types = []
        else:
            result_types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
        attributes = parser.parse_optional_attr_dict_with_keyword()
        inputs = [parser.resolve_operand(operand, t) for operand, t in zip(operands, types)]
        body = parser.parse_region([argument.resolve(t) for argument, t in zip(arguments, types)])
        op = cls(kind, inputs, result_types, body, group_name)
        if attributes is not None:
            op.attributes |= attributes.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        if self.group_name is not None:
            printer.print_string_literal(self.group_name.data)
            printer.print_string(" ")
        printer.print_string("(")
        pairs = list(zip(self.body.block.args, self.inputs))
        for index, (argument, operand) in enumerate(pairs):
            if index:
                printer.print_string(", ")
            printer.print_block_argument(argument, print_type=False)
            printer.print_string(" = ")
            printer.print_operand(operand)
            printer.print_string(" : ")
            printer.print_attribute(operand.type)
        printer.print_string(") -> ")
        result_types = [result.type for result in self.outputs]
        if len(result_types) == 1:
            printer.print_attribute(result_types[0])
        else:
            printer.print_string("(")
            printer.print_list(result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a `graph.fusion` body: its operands are the fusion's results."""

    name = "graph.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(FusionOp), Pure()))
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])
