"""Warp-level tensor-core ops: `loop.mma_sync`, `loop.ldmatrix` and `loop.round_tf32`.

What: one PTX `mma.sync` step per warp (m16n8k16 on f16/bf16 register pairs, m16n8k8 on f32 as
TF32), the `ldmatrix` load of 8x8 b16 matrices into the registers it takes, and the TF32
rounding an f32 operand gets first. Each op's docstring gives PTX's fragment layout, which is
part of the op's definition.

Preconditions: every lane of a warp executes a warp-collective op, under no lane-dependent
control flow. Limits: only the shapes above; accumulators are f32.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneType,
    UnitAttr,
    VectorType,
    f32,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.loop.syntax import print_indexed


MMA_SHAPE = "m16n8k16"
MMA_OPERAND_TYPES = ("f16", "bf16")
"""The operand element types of `loop.mma_sync` m16n8k16 (two per 32-bit register)."""
TF32_MMA_SHAPE = "m16n8k8"
"""The shape of a `loop.mma_sync` on f32 registers (TF32 products)."""
TF32_IGNORED_BITS = 13
"""The low f32 mantissa bits a TF32 tensor core ignores (it reads sign, exponent and 10 bits)."""
WARP_SIZE = 32


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
        print_indexed(printer, self.buffer, self.indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)
        printer.print_string(" -> ")
        printer.print_attribute(VectorType(self.buffer.type.element_type, [2]))  # type: ignore[attr-defined]
