"""Matmul operands read in place through layout ops: the row-shifted lhs of an implicit GEMM.

A matmul's lhs `A` (M x K) built by layout ops from one 2-D value `L` (R x C) as

    A = concat([slice(Lz, rows s_t : s_t + M) for t in 0..T-1], axis=1)      (K = T * C)
    Lz = concat([L, broadcast(0)], axis=0)     (optional: L continued by zero rows)

has, for every block of A whose K columns stay inside one piece t (a K step that divides C), the
block of L at origin `(m + s_t, k - t * C)`, zero past L's last row: a plain tile load of L
at a shifted origin, which the matmul kernel does instead of reading a materialised A
(`matmul_kernel.py`). This is the convolution's implicit GEMM (`window_decomposition.py`):
L is the zero-padded NHWC input flattened to (N * Hp * Wp, C) rows of pixels, piece t is the
kernel offset (kh, kw) and s_t = kh * dh * Wp + kw * dw is how far that offset moves along the
flattened pixels; the column matrix (kh * kw times the input) never reaches memory.

Algorithm: `layout_maps.pieces` composes the chain's index maps; the lhs matches when every piece
reads the same 2-D leaf with row index `c0 + s_t`, column index `c1 - t * C`, applies where
`t * C <= c1 < (t + 1) * C` (the pieces in order, all C wide) and reads zeros (or nothing, for
slices inside L) outside the leaf. The shifts are then written as digits of t,
`s_t = (t / q) * a + (t % q) * b` (q = kw, a = dh * Wp, b = dw for a convolution), so that the
kernel computes them with index arithmetic the index analysis understands.

Transposed operands. Either operand may be a `graph.transpose` swapping its last two dimensions
(batch dimensions in place): the torch `linear` weight `transpose(W)` with W N x K, ONNX Gemm's
transA / transB. The kernel then reads the transpose's input in its stored layout: the block at
the swapped origin, transposed as a tile (`matmul_kernel.py`), so no transposed copy is written.
`operand_major` names the dimension that is contiguous in memory for each operand (the wgmma
terms: "k" for a row-major A and a transposed B, "m" for a transposed A, "n" for a row-major B).

Stored through layout ops. A 2-D product whose only reader is a chain of reshapes, unit-step
slices and transposes, each read only by the next (`output_layout_chain`: the convolution's
padded grid, reshaped to (N, Hp, Wp, O), sliced to the output pixels and transposed to NCHW), can be
written by the matmul kernel straight to the chain's result: each element of the product is one
element of the result or none (a slice drops it), so the kernel scatters its block through the
inverse maps (`lowering/scattered_store.py`) and the chain is never a kernel of its own.

Limits: one leaf, 2-D operands (no batch), row shifts of that two-digit form only; the rhs
of an implicit GEMM keeps its own buffer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS, AxisMap, pieces
from mlc.transforms.lowering.elementwise_expansion import splat_constant_value

CHAIN_OPS = (*LAYOUT_OPS, graph.BroadcastOp)
"""The ops an in-place operand may be built with."""


@dataclass(frozen=True)
class ShiftedRows:
    """A matmul's lhs read as row-shifted blocks of `leaf` (see the module docstring)."""

    leaf: SSAValue
    """The 2-D value (R x C) the kernel reads."""
    piece_columns: int
    """C: the width of each piece, the K extent one shift applies to."""
    digits: tuple[int, int, int]
    """(q, a, b): piece t starts `(t / q) * a + (t % q) * b` rows down the leaf."""
    pieces: int
    """T: the number of pieces (K = T * C)."""
    ops: tuple[Operation, ...]
    """The layout ops between the leaf and the lhs, in program order."""

    def shift(self, piece: int) -> int:
        q, a, b = self.digits
        return (piece // q) * a + (piece % q) * b

    @property
    def shifts(self) -> tuple[int, ...]:
        return tuple(self.shift(t) for t in range(self.pieces))


def matrix_transpose(value: SSAValue) -> graph.TransposeOp | None:
    """The `graph.transpose` that `value` is when it swaps the last two dimensions only, else None."""
    owner = value.owner
    if not isinstance(owner, graph.TransposeOp):
        return None
    perm = owner.normalized_perm()
    rank = len(perm)
    return owner if rank >= 2 and perm == (*range(rank - 2), rank - 1, rank - 2) else None


def operand_major(lhs_transposed: bool, rhs_transposed: bool) -> tuple[str, str]:
    """The dimension contiguous in memory of a matmul's lhs and rhs as its kernel reads them
    (see the module docstring): ("k", "n") for row-major operands."""
    return ("m" if lhs_transposed else "k", "k" if rhs_transposed else "n")


def _matmul_in(ops: Iterable[Operation]) -> graph.MatmulOp | None:
    return next((op for op in ops if isinstance(op, graph.MatmulOp)), None)


def transposed_operands(ops: Iterable[Operation]) -> list[graph.TransposeOp]:
    """The transposes of the last two dimensions that the matmul among `ops` reads as operands and
    that nothing else reads, each once (empty without a matmul)."""
    matmul = _matmul_in(ops)
    if matmul is None:
        return []
    found = (matrix_transpose(operand) for operand in dict.fromkeys((matmul.a, matmul.b)))
    return [t for t in found if t is not None and all(use.operation is matmul for use in t.result.uses)]


def ends_transpose_chain(ops: Sequence[Operation], transpose: Operation) -> bool:
    """Whether `ops` (a planned kernel) are transposes only, `transpose` last and reading the one
    before it: the matmul then reads `transpose` in place and the kernel writes the one before
    (graph-transpose-tf32-rhs's materialised B transposed, read back K-major by TF32 wgmma)."""
    chain = len(ops) >= 2 and ops[-1] is transpose and transpose.operands[0].owner is ops[-2]
    return chain and all(isinstance(op, graph.TransposeOp) for op in ops)


def operand_major_in(block: Block) -> tuple[str, str] | None:
    """`operand_major` of the matmul in `block` when one of its operands is a transpose of `block`
    (read in place), else None."""
    matmul = _matmul_in(block.ops)
    if matmul is None:
        return None
    transposed = [(t := matrix_transpose(operand)) is not None and t.parent_block() is block for operand in (matmul.a, matmul.b)]
    return operand_major(*transposed) if any(transposed) else None


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_shape()


def splat_of(value: SSAValue) -> float | int | None:
    """The value of a splat constant, seen through broadcasts; None for any other value."""
    while isinstance(value.owner, graph.BroadcastOp):
        value = value.owner.x
    constant = value.owner
    return splat_constant_value(constant) if isinstance(constant, graph.ConstantOp) else None


def _chain_ops(value: SSAValue) -> list[Operation]:
    """The layout ops and broadcasts from `value` down to the first other values."""
    found: list[Operation] = []
    stack = [value]
    while stack:
        owner = stack.pop().owner
        if isinstance(owner, CHAIN_OPS) and owner not in found:
            found.append(owner)
            stack.extend(owner.operands)
    return found


def fit_digits(shifts: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(q, a, b) with `shifts[t] == (t / q) * a + (t % q) * b` for every t, or None."""
    count = len(shifts)
    for q in range(1, count + 1):
        if count % q:
            continue
        b = shifts[1] - shifts[0] if q > 1 else 0
        a = shifts[q] - shifts[0] if q < count else 0
        if shifts[0] == 0 and all(s == (t // q) * a + (t % q) * b for t, s in enumerate(shifts)):
            return q, a, b
    return None


def match_shifted_rows(lhs: SSAValue) -> ShiftedRows | None:
    """`lhs` as row-shifted blocks of one leaf, or None when it is not built that way."""
    if not isinstance(lhs.owner, LAYOUT_OPS) or len(_shape(lhs)) != 2:
        return None
    chain = _chain_ops(lhs)
    members = {result for op in chain for result in op.results}
    try:
        found = pieces(lhs, lambda v: v not in members, splat_of)
    except ValueError:
        return None
    leaves = {piece.leaf for piece in found}
    if len(leaves) != 1:
        return None
    (leaf,) = leaves
    if len(_shape(leaf)) != 2 or splat_of(leaf) is not None or min(_shape(leaf)) < 2:
        return None
    columns = _shape(leaf)[1]
    if _shape(lhs)[1] != columns * len(found):
        return None
    shifts = []
    for t, piece in enumerate(found):
        rows, cols = piece.indices
        if piece.padding not in (None, 0, 0.0) or rows.dim != 0 or rows.stride != 1 or cols != AxisMap(1, -t * columns, 1):
            return None
        expected = ((AxisMap(1, 0, 1), t * columns, (t + 1) * columns),) if len(found) > 1 else ()
        if piece.ranges != expected:
            return None
        shifts.append(rows.offset)
    digits = fit_digits(tuple(shifts))
    if digits is None:
        return None
    order = {op: index for index, op in enumerate(lhs.owner.parent_block().ops)} if lhs.owner.parent_block() else {}  # type: ignore[union-attr]
    ordered = tuple(sorted(chain, key=lambda op: order.get(op, 0)))
    return ShiftedRows(leaf, columns, digits, len(found), ordered)


OUTPUT_CHAIN_OPS = (graph.ReshapeOp, graph.SliceOp, graph.TransposeOp)
"""The layout ops a product may be stored through (each product element lands once or not at all)."""


def output_layout_chain(product: SSAValue) -> list[Operation] | None:
    """The layout chain that alone reads the 2-D `product`, in order, when the product can be
    stored through it (see the module docstring): reshapes, unit-step slices and transposes, each
    the only reader of the previous value, holding at least one slice or transpose. None otherwise."""
    if len(_shape(product)) != 2:
        return None
    chain: list[Operation] = []
    value = product
    while len(uses := list(value.uses)) == 1:
        user = uses[0].operation
        if not isinstance(user, OUTPUT_CHAIN_OPS) or (isinstance(user, graph.SliceOp) and any(step != 1 for step in user.steps.get_values())):
            break
        chain.append(user)
        value = user.results[0]
    while chain and isinstance(chain[-1], graph.ReshapeOp):
        chain.pop()  # a trailing reshape is a view of the chain's result: it stays outside
    if not any(isinstance(op, graph.SliceOp | graph.TransposeOp) for op in chain):
        return None
    return chain
