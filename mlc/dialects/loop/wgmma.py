"""Warpgroup-level tensor-core ops (Hopper): `loop.wgmma` and `loop.wgmma_wait`.

What: an asynchronous m64nNkK product of a warpgroup (128 threads) reading A and B blocks from
memory (or A from registers), with f32 accumulators in PTX's layout, and the wait that completes
its group and hands the accumulators back for use. `mlc.operand_major` on the op says how a
transposed operand is stored. The op docstrings (PTX's layouts) are the ops' definition.

Preconditions: every thread of a warpgroup executes the op with the same indices; the blocks it
reads are not written before the wait. Limits: N a multiple of 8 in [8, 256], K a multiple of
16 (8 for TF32); an f32 B is read K-major only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    I64,
    IndexType,
    IntegerAttr,
    MemRefType,
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
    opt_operand_def,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.attributes import OPERAND_MAJOR
from mlc.dialects.loop.mma import MMA_OPERAND_TYPES
from mlc.dialects.loop.syntax import print_indexed


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
            print_indexed(printer, self.lhs, self.lhs_indices)
            printer.print_string(", ")
        print_indexed(printer, self.rhs, self.rhs_indices)
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
