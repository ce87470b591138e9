"""The graph dialect's constants and elementwise ops.

`constant`, the binary ops (`add sub mul div max min pow`, with numpy broadcasting), `cmp`,
`where`, the unary ops (`neg abs relu exp log sqrt rsqrt tanh sigmoid erf sin cos reciprocal`), `gelu` and
`cast`: the ops whose every result element depends only on the operand elements at the same
(broadcast) position, which a fused elementwise kernel may contain. Semantics are those of
`interpret.py`; names and properties are fixed by `spec/graph-dialect.md`.

Custom syntax (the generic form `"graph.add"(%a, %b) : (...) -> ...` always parses too):

    %c = graph.constant dense<1.0> : tensor<4xf32>
    %s = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %m = graph.cmp lt, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %w = graph.where %m, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %e = graph.exp %a : tensor<4xf32>
    %g = graph.gelu %a {approximate = "tanh"} : tensor<4xf32>
    %h = graph.cast %a : tensor<4xf32> to tensor<4xf16>

Binary ops take two operands of one element type (i1 only for `cmp`); the unary ops other than
`neg`, `abs` and `relu` take floats only.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.element_types import is_bool, is_float
from mlc.dialects.graph.support import (
    TypeInferenceError,
    broadcast_shapes,
    format_shape,
    verify_tensor,
)


class BinaryOp(IRDLOperation):
    """Shared definition of the broadcasting binary ops (`lhs`, `rhs` -> `result`)."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    ALLOWS_BOOL: ClassVar[bool] = False
    """Whether i1 operands are accepted (comparisons accept them, arithmetic does not)."""

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute | None = None):
        if result_type is None:
            result_type = self.infer_result_type(lhs.type, rhs.type)
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return operand_element_type

    @classmethod
    def infer_result_type(cls, lhs_type: Attribute, rhs_type: Attribute) -> TensorType:
        assert isinstance(lhs_type, TensorType) and isinstance(rhs_type, TensorType)
        shape = broadcast_shapes(lhs_type.get_shape(), rhs_type.get_shape())
        if shape is None:
            raise TypeInferenceError(
                f"shapes {format_shape(lhs_type.get_shape())} and "
                f"{format_shape(rhs_type.get_shape())} do not broadcast"
            )
        return TensorType(cls.result_element_type(lhs_type.element_type), shape)

    def verify_(self) -> None:
        lhs_type = verify_tensor(self.lhs, "operand #0 (lhs)")
        rhs_type = verify_tensor(self.rhs, "operand #1 (rhs)")
        if lhs_type.element_type != rhs_type.element_type:
            raise VerifyException(
                f"operand #1 (rhs) has element type {rhs_type.element_type}, but lhs has "
                f"{lhs_type.element_type}; both must be equal"
            )
        if is_bool(lhs_type.element_type) and not self.ALLOWS_BOOL:
            raise VerifyException(
                f"operands #0 (lhs) and #1 (rhs) have element type i1, which '{self.name}' "
                "does not accept"
            )
        shape = broadcast_shapes(lhs_type.get_shape(), rhs_type.get_shape())
        if shape is None:
            raise VerifyException(
                f"operand #1 (rhs) of shape {format_shape(rhs_type.get_shape())} does not "
                f"broadcast with lhs of shape {format_shape(lhs_type.get_shape())}"
            )
        expected = TensorType(self.result_element_type(lhs_type.element_type), shape)
        if self.result.type != expected:
            raise VerifyException(
                f"result type {self.result.type} does not match the broadcast of the "
                f"operands; expected {expected}"
            )


@irdl_op_definition
class AddOp(BinaryOp):
    name = "graph.add"


@irdl_op_definition
class SubOp(BinaryOp):
    name = "graph.sub"


@irdl_op_definition
class MulOp(BinaryOp):
    name = "graph.mul"


@irdl_op_definition
class DivOp(BinaryOp):
    """Division; integer division truncates toward zero (C and ONNX semantics)."""

    name = "graph.div"


@irdl_op_definition
class MaxOp(BinaryOp):
    name = "graph.max"


@irdl_op_definition
class MinOp(BinaryOp):
    name = "graph.min"


@irdl_op_definition
class PowOp(BinaryOp):
    name = "graph.pow"


CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


@irdl_op_definition
class CmpOp(BinaryOp):
    """Broadcasting comparison with an i1 result; NaN compares unequal to everything."""

    name = "graph.cmp"
    predicate = prop_def(StringAttr)
    ALLOWS_BOOL: ClassVar[bool] = True
    assembly_format = None

    def __init__(
        self,
        predicate: str,
        lhs: SSAValue,
        rhs: SSAValue,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            result_type = self.infer_result_type(lhs.type, rhs.type)
        IRDLOperation.__init__(
            self,
            operands=[lhs, rhs],
            result_types=[result_type],
            properties={"predicate": StringAttr(predicate)},
        )

    @classmethod
    def result_element_type(cls, operand_element_type: Attribute) -> Attribute:
        return i1

    def verify_(self) -> None:
        if self.predicate.data not in CMP_PREDICATES:
            raise VerifyException(
                f"unknown predicate '{self.predicate.data}'; expected one of "
                + ", ".join(CMP_PREDICATES)
            )
        super().verify_()

    @classmethod
    def parse(cls, parser: Parser) -> CmpOp:
        predicate = parser.parse_identifier("comparison predicate")
        parser.parse_punctuation(",")
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        operands = parser.resolve_operands([lhs, rhs], function_type.inputs.data, parser.pos)
        op = cls(predicate, operands[0], operands[1], function_type.outputs.data[0])
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.predicate.data}, ")
        printer.print_operand(self.lhs)
        printer.print_string(", ")
        printer.print_operand(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_operation_type(self)


@irdl_op_definition
class WhereOp(IRDLOperation):
    """`np.where(cond, a, b)` with numpy broadcasting of all three operands."""

    name = "graph.where"
    condition = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$condition `,` $true_value `,` $false_value attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        condition: SSAValue,
        true_value: SSAValue,
        false_value: SSAValue,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            shapes = [v.type.get_shape() for v in (condition, true_value, false_value)]  # type: ignore[attr-defined]
            shape = broadcast_shapes(broadcast_shapes(shapes[0], shapes[1]) or (), shapes[2])
            if shape is None:
                raise TypeInferenceError("operands of graph.where do not broadcast")
            result_type = TensorType(true_value.type.element_type, shape)  # type: ignore[attr-defined]
        super().__init__(
            operands=[condition, true_value, false_value], result_types=[result_type]
        )

    def verify_(self) -> None:
        condition_type = verify_tensor(self.condition, "operand #0 (condition)")
        true_type = verify_tensor(self.true_value, "operand #1 (true_value)")
        false_type = verify_tensor(self.false_value, "operand #2 (false_value)")
        if condition_type.element_type != i1:
            raise VerifyException(
                f"operand #0 (condition) must have element type i1, got "
                f"{condition_type.element_type}"
            )
        if true_type.element_type != false_type.element_type:
            raise VerifyException(
                f"operand #2 (false_value) has element type {false_type.element_type}, but "
                f"true_value has {true_type.element_type}; both must be equal"
            )
        condition_and_true = broadcast_shapes(condition_type.get_shape(), true_type.get_shape())
        if condition_and_true is None:
            raise VerifyException(
                f"operand #1 (true_value) of shape {format_shape(true_type.get_shape())} does not "
                f"broadcast with condition of shape {format_shape(condition_type.get_shape())}"
            )
        shape = broadcast_shapes(condition_and_true, false_type.get_shape())
        if shape is None:
            raise VerifyException(
                f"operand #2 (false_value) of shape {format_shape(false_type.get_shape())} does "
                f"not broadcast with shape {format_shape(condition_and_true)} of condition and "
                "true_value"
            )
        expected = TensorType(true_type.element_type, shape)
        if self.result.type != expected:
            raise VerifyException(
                f"result type {self.result.type} does not match the broadcast of the "
                f"operands; expected {expected}"
            )


class UnaryOp(IRDLOperation):
    """Shared definition of the elementwise unary ops: the result type is the operand's."""

    T: ClassVar = VarConstraint("T", base(TensorType))
    x = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($x)"

    FLOAT_ONLY: ClassVar[bool] = True
    """Whether only float element types are accepted."""

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=[x.type])

    def verify_(self) -> None:
        x_type = verify_tensor(self.x, "operand #0 (x)")
        element_type = x_type.element_type
        if self.FLOAT_ONLY and not is_float(element_type):
            raise VerifyException(
                f"operand #0 (x) must have a float element type, got {element_type}"
            )
        if is_bool(element_type):
            raise VerifyException(f"operand #0 (x) of '{self.name}' must not be i1")


@irdl_op_definition
class NegOp(UnaryOp):
    name = "graph.neg"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class AbsOp(UnaryOp):
    name = "graph.abs"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ReluOp(UnaryOp):
    name = "graph.relu"
    FLOAT_ONLY: ClassVar[bool] = False


@irdl_op_definition
class ExpOp(UnaryOp):
    name = "graph.exp"


@irdl_op_definition
class LogOp(UnaryOp):
    name = "graph.log"


@irdl_op_definition
class SqrtOp(UnaryOp):
    name = "graph.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryOp):
    name = "graph.rsqrt"


@irdl_op_definition
class TanhOp(UnaryOp):
    name = "graph.tanh"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    name = "graph.sigmoid"


@irdl_op_definition
class ErfOp(UnaryOp):
    name = "graph.erf"


@irdl_op_definition
class SinOp(UnaryOp):
    name = "graph.sin"


@irdl_op_definition
class CosOp(UnaryOp):
    name = "graph.cos"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    name = "graph.reciprocal"


GELU_APPROXIMATIONS = ("none", "tanh")


@irdl_op_definition
class GeluOp(UnaryOp):
    """x·Φ(x) with the erf form (`approximate = "none"`, the default) or the tanh form."""

    name = "graph.gelu"
    approximate = opt_prop_def(StringAttr, default_value=StringAttr("none"))
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue, approximate: str = "none"):
        IRDLOperation.__init__(
            self,
            operands=[x],
            result_types=[x.type],
            properties={"approximate": StringAttr(approximate)},
        )

    def verify_(self) -> None:
        if self.approximate.data not in GELU_APPROXIMATIONS:
            raise VerifyException(
                f"approximate must be \"none\" or \"tanh\", got \"{self.approximate.data}\""
            )
        super().verify_()


class ShapeChangingOp(IRDLOperation):
    """Shared definition of `cast`, `broadcast` and `reshape`: `%y = op %x : T to U`."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x attr-dict `:` type($x) `to` type($result)"

    def __init__(self, x: SSAValue, result_type: Attribute):
        super().__init__(operands=[x], result_types=[result_type])

    def verify_types(self) -> tuple[TensorType, TensorType]:
        x_type = verify_tensor(self.x, "operand #0 (x)")
        result_type = verify_tensor(self.result, "result")
        return x_type, result_type

    def verify_types_keeping_element_type(self) -> tuple[TensorType, TensorType]:
        """`verify_types`, for the ops that change only the shape (broadcast, reshape)."""
        x_type, result_type = self.verify_types()
        if x_type.element_type != result_type.element_type:
            raise VerifyException(
                f"result element type {result_type.element_type} must equal the element "
                f"type {x_type.element_type} of operand #0 (x)"
            )
        return x_type, result_type


@irdl_op_definition
class CastOp(ShapeChangingOp):
    """`x.astype(result element type)`; float to integer truncates toward zero."""

    name = "graph.cast"

    def verify_(self) -> None:
        x_type, result_type = self.verify_types()
        if x_type.get_shape() != result_type.get_shape():
            raise VerifyException(
                f"result shape {format_shape(result_type.get_shape())} must equal the "
                f"shape {format_shape(x_type.get_shape())} of operand #0 (x)"
            )




@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A constant tensor: `%c = graph.constant dense<...> : tensor<...>`."""

    name = "graph.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(properties={"value": value}, result_types=[value.type])

    def verify_(self) -> None:
        verify_tensor(self.result, "result")
        if self.value.type != self.result.type:
            raise VerifyException(
                f"value of type {self.value.type} does not match the result type "
                f"{self.result.type}"
            )

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        # Imported here: the constants module needs the interpreter, which needs these ops.
        from mlc.dialects.graph.constants import parse_dense_literal

        value = parse_dense_literal(parser)
        attributes = parser.parse_optional_attr_dict()
        op = cls(value)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        # Imported here: the constants module needs the interpreter, which needs these ops.
        from mlc.dialects.graph.constants import exact_text

        printer.print_string(" " + exact_text(self.value))
        printer.print_op_attributes(self.attributes)
