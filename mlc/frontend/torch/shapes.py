"""Handlers of ATen's layout ops: views, permutations, broadcasts, concatenation and slicing.

Every view op that keeps the element order (view, reshape, _unsafe_view, squeeze, unsqueeze,
flatten, unflatten) is one `graph.reshape` to the shape PyTorch inferred (graph values have no
strides, so aliasing is not a concern: the importer sees functional graphs). `permute`,
`transpose` and `t` are `graph.transpose` (nothing for the identity permutation); `expand` is
`graph.broadcast`; `cat` is `graph.concat` (operands cast to the result type); `slice` is
`graph.slice` with PyTorch's bounds (clamped like Python's); `select` is a one-element
`graph.slice` and a reshape dropping the axis; `split`, `split_with_sizes` and `unbind` give one
slice per piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import SSAValue

from mlc.frontend.graph_builder import shape_of
from mlc.frontend.torch.emitter import Emitter, Handler

INT64_MAX = 2**63 - 1


def _reshape(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args.get("self", args.get("input")))
    shape = emit.result_shape()
    return x if shape_of(x) == shape else emit.builder.reshape(x, shape)


def _transpose_to(emit: Emitter, x: SSAValue, permutation: Sequence[int]) -> SSAValue:
    if list(permutation) == list(range(len(permutation))):
        return x
    return emit.builder.transpose(x, permutation)


def _permute(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    rank = len(shape_of(x))
    return _transpose_to(emit, x, [emit.axis(d, rank) for d in args["dims"]])


def _transpose(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    rank = len(shape_of(x))
    permutation = list(range(rank))
    if rank >= 2:
        first, second = (emit.axis(args["dim0"], rank), emit.axis(args["dim1"], rank)) if "dim0" in args else (0, 1)
        permutation[first], permutation[second] = (
            permutation[second],
            permutation[first],
        )
    return _transpose_to(emit, x, permutation)


def _expand(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    shape = emit.result_shape()
    return x if shape_of(x) == shape else emit.builder.broadcast(x, shape)


def _cat(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    element = emit.result_element()
    # PyTorch skips 1-D empty tensors in cat (a legacy rule); so does the import.
    pieces = [emit.operand(t, element) for t in args["tensors"]]
    pieces = [p for p in pieces if shape_of(p) != (0,)] or pieces[:1]
    rank = len(emit.result_shape())
    return pieces[0] if len(pieces) == 1 else emit.builder.concat(pieces, emit.axis(args["dim"], rank))


def _slice_along(emit: Emitter, x: SSAValue, axis: int, start: int, end: int, step: int) -> SSAValue:
    shape = shape_of(x)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], ends[axis], steps[axis] = start, min(end, INT64_MAX), step
    if (start, step) == (0, 1) and end >= shape[axis]:
        return x
    return emit.builder.slice(x, starts, ends, steps)


def _slice(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    axis = emit.axis(args["dim"], len(shape_of(x)))
    start = args.get("start") or 0
    end = INT64_MAX if args.get("end") is None else args["end"]
    step = args.get("step") or 1
    if step < 1:
        raise emit.unsupported(f"slice step {step}: PyTorch requires a positive step")
    return _slice_along(emit, x, axis, start, end, step)


def _select_index(emit: Emitter, x: SSAValue, axis: int, index: int) -> SSAValue:
    size = shape_of(x)[axis]
    if not -size <= index < size:
        raise emit.unsupported(f"index {index} is out of range for dimension {axis} of size {size}")
    index %= size
    piece = _slice_along(emit, x, axis, index, index + 1, 1)
    shape = tuple(s for a, s in enumerate(shape_of(piece)) if a != axis)
    return emit.builder.reshape(piece, shape)


def _select(emit: Emitter, args: dict[str, Any]) -> SSAValue:
    x = emit.value(args["self"])
    return _select_index(emit, x, emit.axis(args["dim"], len(shape_of(x))), args["index"])


def _split(emit: Emitter, args: dict[str, Any]) -> tuple[SSAValue, ...]:
    x = emit.value(args["self"])
    axis = emit.axis(args.get("dim", 0), len(shape_of(x)))
    size = shape_of(x)[axis]
    sizes = args.get("split_sizes") if args.get("split_sizes") is not None else args.get("split_size")
    if isinstance(sizes, int):
        sizes = [min(sizes, size - start) for start in range(0, size, max(sizes, 1))] or [0]
    pieces, start = [], 0
    for length in sizes:
        pieces.append(_slice_along(emit, x, axis, start, start + length, 1))
        start += length
    return tuple(pieces)


def _unbind(emit: Emitter, args: dict[str, Any]) -> tuple[SSAValue, ...]:
    x = emit.value(args["self"])
    axis = emit.axis(args.get("dim", 0), len(shape_of(x)))
    return tuple(_select_index(emit, x, axis, index) for index in range(shape_of(x)[axis]))


VIEWS = (
    "view",
    "reshape",
    "_unsafe_view",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "view_as",
    "reshape_as",
)

HANDLERS: dict[str, Handler] = {
    **{f"aten::{name}": _reshape for name in VIEWS},
    "aten::permute": _permute,
    "aten::transpose": _transpose,
    "aten::t": _transpose,
    "aten::expand": _expand,
    "aten::expand_as": _expand,
    "aten::cat": _cat,
    "aten::concat": _cat,
    "aten::slice": _slice,
    "aten::select": _select,
    "aten::split": _split,
    "aten::split_with_sizes": _split,
    "aten::unbind": _unbind,
}
"""ATen op name (schema name, any overload) -> handler."""
