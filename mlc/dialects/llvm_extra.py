"""The xDSL `llvm` dialect, with the ops mlc needs that xDSL 0.74 lacks.

`LLVM_WITH_EXTRAS` holds xDSL's llvm ops plus `llvm.fptosi`, `llvm.fptoui`, `llvm.uitofp`,
`llvm.extractelement` and `llvm.addrspacecast`, with upstream MLIR's names and syntax, and
`llvm.fcmp` / `llvm.select` in place of xDSL's, which also take vectors as upstream MLIR's do (a
comparison of vectors gives a vector of i1; a select on one picks lane by lane):

    %i = llvm.fptosi %f : f32 to i32
    %e = llvm.extractelement %v[%c : i32] : vector<4xf32>
    %g = llvm.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr
    %m = llvm.fcmp "ogt" %a, %b : vector<16xf32>
    %s = llvm.select %m, %a, %b : vector<16xi1>, vector<16xf32>

mlc registers it under the name `llvm` in place of xDSL's dialect. Plain `xdsl-opt` cannot load
these ops (its own `llvm` dialect owns the name); everything else of mlc's llvm-level IR
parses there. Intrinsics without an op (`llvm.maximum.f32`, NVVM's special registers, ...) are
written as `llvm.call_intrinsic`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import I1, ArrayAttr, IntAttr, IntegerAttr, SignlessIntegerConstraint, VectorType, i1, i64
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    RangeOf,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect, Pure


@irdl_op_definition
class FPToSIOp(llvm.GenericCastOp):
    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(llvm.GenericCastOp):
    name = "llvm.fptoui"


@irdl_op_definition
class UIToFPOp(llvm.GenericCastOp):
    name = "llvm.uitofp"


@irdl_op_definition
class AddrSpaceCastOp(llvm.GenericCastOp):
    name = "llvm.addrspacecast"


@irdl_op_definition
class ExtractElementOp(IRDLOperation):
    """One element of a 1-d vector."""

    name = "llvm.extractelement"

    ELEMENT: ClassVar = VarConstraint("ELEMENT", AnyAttr())
    VECTOR: ClassVar = VarConstraint(
        "VECTOR_T",
        VectorType.constr(ELEMENT, shape=ArrayAttr.constr(RangeOf(IntAttr).of_length(1))),
    )

    vector = operand_def(VECTOR)
    position = operand_def(SignlessIntegerConstraint)
    res = result_def(ELEMENT)

    assembly_format = "$vector `[` $position `:` type($position) `]` attr-dict `:` type($vector)"
    traits = traits_def(NoMemoryEffect())

    def __init__(self, vector: Operation | SSAValue, position: Operation | SSAValue):
        vector_type = SSAValue.get(vector).type
        assert isinstance(vector_type, VectorType)
        element_type: Attribute = vector_type.element_type
        super().__init__(operands=[vector, position], result_types=[element_type])


BOOLEANS = I1 | VectorType.constr(I1)
"""An i1, or a vector of them."""


def boolean_type_like(value_type: Attribute) -> Attribute:
    """i1, or a vector of i1 of `value_type`'s shape where it is a vector."""
    return VectorType(i1, value_type.get_shape()) if isinstance(value_type, VectorType) else i1


@irdl_op_definition
class FCmpOp(IRDLOperation):
    """`llvm.fcmp` of two floats, or (unlike xDSL 0.74's, as upstream MLIR's) of two vectors of
    floats, lane by lane, into a vector of i1. Syntax: `llvm.fcmp "ogt" %a, %b : vector<16xf32>`."""

    name = "llvm.fcmp"

    T: ClassVar = VarConstraint("T", llvm.AnyFloatConstr | VectorType.constr(llvm.AnyFloatConstr))

    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(BOOLEANS)
    predicate = prop_def(IntegerAttr[i64])
    fastmathFlags = prop_def(llvm.FastMathAttr, default_value=llvm.FastMathAttr(None))

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
        predicate: str | IntegerAttr,
        attributes: dict[str, Attribute] | None = None,
    ):
        if isinstance(predicate, str):
            predicate = IntegerAttr(llvm.FCmpPredicateFlag(predicate).to_int(), i64)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[boolean_type_like(SSAValue.get(lhs).type)],
            attributes=attributes or {},
            properties={"predicate": predicate},
        )

    @classmethod
    def parse(cls, parser: Parser) -> FCmpOp:
        predicate = IntegerAttr(llvm.FCmpPredicateFlag(parser.parse_str_literal()).to_int(), i64)
        lhs = parser.parse_unresolved_operand()
        parser.parse_characters(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_characters(":")
        operand_type = parser.parse_type()
        operands = parser.resolve_operands([lhs, rhs], [operand_type, operand_type], parser.pos)
        return cls(operands[0], operands[1], predicate, attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(f' "{llvm.FCmpPredicateFlag.from_int(self.predicate.value.data)}" ')
        printer.print_ssa_value(self.lhs)
        printer.print_string(", ")
        printer.print_ssa_value(self.rhs)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)


@irdl_op_definition
class SelectOp(IRDLOperation):
    """`llvm.select`: an i1 condition picks a whole value; (unlike xDSL 0.74's, as upstream
    MLIR's) a vector of i1 picks lane by lane between two vectors of its shape."""

    name = "llvm.select"

    T: ClassVar = VarConstraint("T", AnyAttr())

    cond = operand_def(BOOLEANS)
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)
    fastmathFlags = prop_def(llvm.FastMathAttr, default_value=llvm.FastMathAttr(None))

    traits = traits_def(Pure())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($res)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, cond: Operation | SSAValue, lhs: Operation | SSAValue, rhs: Operation | SSAValue):
        super().__init__(operands=[cond, lhs, rhs], result_types=[SSAValue.get(lhs).type])


EXTRA_OPERATIONS = [FPToSIOp, FPToUIOp, UIToFPOp, AddrSpaceCastOp, ExtractElementOp, FCmpOp, SelectOp]
_REPLACED = {FCmpOp.name, SelectOp.name}

LLVM_WITH_EXTRAS = Dialect(
    "llvm",
    [*(op for op in llvm.LLVM.operations if op.name not in _REPLACED), *EXTRA_OPERATIONS],
    [*llvm.LLVM.attributes],
)
