"""What the loop lowerings of `tile.dot` share: the output shape, how an operand is read, the K-step body.

What: `contains_dot` (which kernels are dot kernels), `output_shape` (the one accumulator shape of
a kernel's dots, batch dimensions of size 1), `operand_read` (a dot operand is a `tile.load`,
through `tile.broadcast`s, or the `tile.transpose` of one: `OperandRead`), `k_step_body` (the block
of a loop over K steps carrying the accumulator) and `_tag_loads` (marks the loads of a step
`mlc.operand = "lhs"` / `"rhs"`, for loop-promote-shared). Used by the SIMT (`matmul_loop.py`),
tensor-core (`matmul_mma.py`, `matmul_wgmma.py`) and CPU (`matmul_cpu.py`) lowerings.

Preconditions: a `tile.kernel` holding `tile.dot`s. Limits: an operand read otherwise (a block
argument, a computed tile) is a `PassFailure`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import memref, vector
from xdsl.dialects.builtin import IndexType, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter


def contains_dot(kernel: tile.KernelOp) -> bool:
    return any(isinstance(op, tile.DotOp) for op in kernel.walk())


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, tile.TileType)
    return value_type.get_shape()


def output_shape(kernel: tile.KernelOp) -> tuple[int, ...]:
    """The accumulator shape every dot of the kernel shares, with batch dimensions of size 1."""
    shapes = {_shape(op.acc) for op in kernel.walk() if isinstance(op, tile.DotOp)}
    if len(shapes) != 1:
        raise PassFailure(kernel, "the dots of one kernel must have one accumulator shape")
    (shape,) = shapes
    if any(size != 1 for size in shape[:-2]):
        raise PassFailure(kernel, f"a dot's batch dimensions must have size 1 (one matrix per program), got {'x'.join(map(str, shape))}")
    return shape


def _tag_loads(block: Block, first: Operation | None, tag: str) -> None:
    """Marks the loads among the ops of `block` from `first` on (nested ones included)."""
    op = first
    while op is not None:
        for inner in op.walk():
            if isinstance(inner, memref.LoadOp | vector.LoadOp):
                attributes.OPERAND.write(inner, StringAttr(tag))
        op = op.next_op


def k_step_body(dot: tile.DotOp, accumulator: Sequence[SSAValue]) -> tuple[Block, Emitter]:
    """The body of a loop over `dot`'s K steps that carries `accumulator`: block arguments (the
    step `kk`, then the accumulator named after `dot`'s), and an emitter appending to it."""
    body = Block(arg_types=[IndexType(), *(value.type for value in accumulator)])
    body.args[0].name_hint = "kk"
    for argument in body.args[1:]:
        argument.name_hint = dot.acc.name_hint
    return body, Emitter(body)


@dataclass(frozen=True)
class OperandRead:
    """Where a dot operand's elements come from: a `tile.load`, of the operand itself or, when
    `transposed`, of its stored layout (the operand is the load's `tile.transpose`)."""

    load: tile.LoadOp
    transposed: bool = False


def operand_read(dot: tile.DotOp, role: str) -> OperandRead:
    """How the dot's `lhs` or `rhs` is read: a `tile.load` through `tile.broadcast`s, or the
    `tile.transpose` of a `tile.load`."""
    owner = getattr(dot, role).owner
    while isinstance(owner, tile.BroadcastOp):
        owner = owner.source.owner
    if isinstance(owner, tile.TransposeOp) and isinstance(owner.source.owner, tile.LoadOp):
        return OperandRead(owner.source.owner, transposed=True)
    if not isinstance(owner, tile.LoadOp):
        found = f"'{owner.name}'" if isinstance(owner, Operation) else "a block argument"
        raise PassFailure(dot, f"the {role} of a dot must be a tile.load (possibly broadcast or transposed) for convert-tile-to-loop, got {found}")
    return OperandRead(owner)
