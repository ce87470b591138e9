"""How a tile kernel's tiles are spread over the threads of a block (convert-tile-to-loop's layout).

`iteration_shape(kernel)` is the one shape every tile of a kernel broadcasts to; `ThreadLayout`
cuts it into chunks of V contiguous elements along the last dimension (V the widest power of two
that fits the vector width and divides the last dimension) and deals chunk c to thread `c mod T`
in repetition `c div T` (Triton's blocked layout with sizePerThread = [1, ..., V]; the reasons are
in `mlc/transforms/tile/convert_tile_to_loop.py`). `dimension_bits` says which bits of a chunk's
index select a position along an axis, which is how reductions find the threads and repetitions
that share a row. `used_from_outside(op)` lists the tile values a loop's body uses from outside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects.tile import ops as tile


@dataclass(frozen=True)
class ThreadLayout:
    """How the elements of a tile of `shape` are spread over threads (see the module docstring)."""

    shape: tuple[int, ...]
    vector: int
    threads: int

    @staticmethod
    def choose(shape: tuple[int, ...], num_warps: int, max_vector: int) -> ThreadLayout:
        vector_width = 1
        while vector_width * 2 <= max_vector and shape[-1] % (vector_width * 2) == 0:
            vector_width *= 2
        chunks = _product(shape) // vector_width
        return ThreadLayout(shape, vector_width, min(32 * num_warps, chunks))

    @property
    def chunks(self) -> int:
        return _product(self.shape) // self.vector

    @property
    def repetitions(self) -> int:
        return -(-self.chunks // self.threads)

    @property
    def chunks_per_row(self) -> int:
        return self.shape[-1] // self.vector

    def dimension_bits(self, axis: int) -> tuple[int, int]:
        """(thread bits, repetition bits) that select the position along `axis`.

        With power-of-two dimensions, a chunk's index is the concatenation of its coordinates'
        bits (row-major, the last dimension counted in chunks); its low bits are the thread
        and the high bits the repetition. The chunks that differ only along `axis` are those
        that differ only in these bits.
        """
        sizes = [*self.shape[:-1], self.chunks_per_row]
        offset = sum((size.bit_length() - 1) for size in sizes[axis + 1 :])
        width = sizes[axis].bit_length() - 1
        bits = ((1 << width) - 1) << offset
        thread_bits = self.threads.bit_length() - 1
        return bits & (self.threads - 1), bits >> thread_bits


def _product(values: Sequence[int]) -> int:
    result = 1
    for value in values:
        result *= value
    return result


def _tile_shapes(kernel: tile.KernelOp) -> list[tuple[Operation, tuple[int, ...]]]:
    shapes = []
    for op in kernel.walk():
        for value in (*op.operands, *op.results):
            if isinstance(value.type, tile.TileType):
                shapes.append((op, value.type.get_shape()))
    return shapes


def iteration_shape(kernel: tile.KernelOp) -> tuple[int, ...]:
    """The shape every tile of the kernel broadcasts to: the layout's shape."""
    shapes = _tile_shapes(kernel)
    if not shapes:
        raise PassFailure(kernel, "the kernel computes no tile")
    rank = max(len(shape) for _, shape in shapes)
    result = [1] * rank
    for _, shape in shapes:
        for dim, size in enumerate(shape):
            aligned = rank - len(shape) + dim
            result[aligned] = max(result[aligned], size)
    for op, shape in shapes:
        if any(size not in (1, result[rank - len(shape) + dim]) for dim, size in enumerate(shape)):
            raise PassFailure(
                op, f"its tile shape {'x'.join(map(str, shape))} does not broadcast to the kernel's "
                f"{'x'.join(map(str, result))}: tiles of incompatible shapes in one kernel are not supported"
            )
    return tuple(result)


def used_from_outside(op: Operation) -> list[SSAValue]:
    """The tile values defined outside `op` that ops inside it use, in order of first use."""
    inside: set[SSAValue] = set()
    used: dict[SSAValue, None] = {}
    for inner in op.walk():
        for region in inner.regions:
            for block in region.blocks:
                inside.update(block.args)
        for operand in inner.operands:
            if isinstance(operand.type, tile.TileType) and operand not in inside and inner is not op:
                used[operand] = None
        inside.update(inner.results)
    return list(used)
