"""The xDSL `llvm` dialect, with the ops mlc needs that xDSL 0.74 lacks.

`LLVM_WITH_EXTRAS` holds xDSL's llvm ops plus `llvm.fptosi`, `llvm.fptoui`, `llvm.uitofp`,
`llvm.extractelement` and `llvm.addrspacecast`, with upstream MLIR's names and syntax:

    %i = llvm.fptosi %f : f32 to i32
    %e = llvm.extractelement %v[%c : i32] : vector<4xf32>
    %g = llvm.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr

mlc registers it under the name `llvm` in place of xDSL's dialect. Plain `xdsl-opt` cannot load
these five ops (its own `llvm` dialect owns the name); everything else of mlc's llvm-level IR
parses there. Intrinsics without an op (`llvm.maximum.f32`, NVVM's special registers, ...) are
written as `llvm.call_intrinsic`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ArrayAttr, IntAttr, SignlessIntegerConstraint, VectorType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    RangeOf,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect


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


EXTRA_OPERATIONS = [FPToSIOp, FPToUIOp, UIToFPOp, AddrSpaceCastOp, ExtractElementOp]

LLVM_WITH_EXTRAS = Dialect(
    "llvm",
    [*llvm.LLVM.operations, *EXTRA_OPERATIONS],
    [*llvm.LLVM.attributes],
)
