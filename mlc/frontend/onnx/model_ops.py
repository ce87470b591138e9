"""ONNX ops that exported transformers and CNNs use, as compositions of graph ops.

    Softplus(x)            log(exp(x) + 1), as ONNX's reference computes it
    ReduceL2(x)            sqrt(reduce_sum(x * x)), axes as the other reductions read them
    Trilu(x, k)            where(mask, x, 0) with the triangle's mask a constant (k a constant)
    Gather(data, indices)  constant indices: strided graph.slice pieces and graph.concat (a
                           layout chain: one gather kernel); run-time indices (embeddings): a
                           one-hot matrix (graph.cmp of the indices against a constant range,
                           negative indices wrapped first) times data viewed as (V, rest), so
                           the lookup runs on the matmul kernel. It is exact for finite data
                           (each output is one product by 1 plus zeros); an inf or NaN in a row of
                           data poisons every lookup (0 * inf).
    Einsum                 two operands without repeated or ellipsis labels: labels in both and
                           the output are batch, in both only contracted, in one only free (summed
                           first when not in the output); each operand is transposed and reshaped
                           to (batch, M, K) / (batch, K, N), multiplied, and the product reshaped
                           and transposed to the output's labels

Shape, ConstantOfShape and Expand's shape are computed at import time for static shapes
(the importer evaluates nodes whose inputs are known); Range and Resize are in `resize.py`, Sin
and Cos with the other unary ops. Not mapped: Einsum with one or three operands, ellipses or
diagonals.
"""

from __future__ import annotations

import re

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from mlc.frontend.graph_builder import element_type_of, shape_of
from mlc.frontend.onnx.errors import OnnxImportError
from mlc.frontend.onnx.node import Node
from mlc.frontend.onnx.registry import HandlerResult, maps


@maps("Softplus", (1, 22))
def softplus(node: Node) -> HandlerResult:
    x = node.input(0)
    one = node.builder.scalar(1.0, element_type_of(x))
    return [node.builder.unary("graph.log", node.builder.binary("graph.add", node.builder.unary("graph.exp", x), one))]


@maps("ReduceL2", (1, 11, 13, 18), constant_inputs=(1,))
def reduce_l2(node: Node) -> HandlerResult:
    x = node.input(0)
    rank = len(shape_of(x))
    if node.version >= 18:
        axes = node.constant_ints(1, "axes")
        if not axes and node.flag("noop_with_empty_axes", 0):
            return [node.builder.unary("graph.abs", x)]
    else:
        axes = node.attribute("axes")
    axes = node.axes(axes, rank) if axes else list(range(rank))
    squares = node.builder.binary("graph.mul", x, x)
    total = node.builder.reduce("sum", squares, axes, node.flag("keepdims", 1)) if axes else squares
    return [node.builder.unary("graph.sqrt", total)]


@maps("Trilu", (14,), constant_inputs=(1,))
def trilu(node: Node) -> HandlerResult:
    x = node.input(0)
    shape = shape_of(x)
    if len(shape) < 2:
        raise node.error(f"input of rank {len(shape)} has no matrix (Trilu needs rank >= 2)")
    diagonal = node.constant_ints(1, "k")
    k = diagonal[0] if diagonal else 0
    rows, columns = shape[-2:]
    keep = np.triu(np.ones((rows, columns), dtype=bool), k) if node.flag("upper", 1) else np.tril(np.ones((rows, columns), dtype=bool), k)
    mask = node.builder.constant(keep, i1)
    return [node.builder.where(mask, x, node.builder.scalar(0, element_type_of(x)))]


def _known(node: Node, index: int) -> np.ndarray | None:
    """Input `index`'s value when it is known at import time, else None (a run-time value)."""
    try:
        return node.constant(index, "input")
    except OnnxImportError:
        return None


@maps("Gather", (1, 11, 13))
def gather(node: Node) -> HandlerResult:
    indices = _known(node, 1)
    data = node.input(0)
    shape = shape_of(data)
    axis = node.axis(node.attribute("axis", 0), len(shape))
    size = shape[axis]
    if indices is not None:
        return [_gather_constant(node, data, axis, np.asarray(indices, dtype=np.int64))]
    return [_gather_one_hot(node, data, axis, size)]


def _gather_constant(node: Node, data: SSAValue, axis: int, indices: np.ndarray) -> SSAValue:
    shape = shape_of(data)
    size = shape[axis]
    flat = indices.reshape(-1)
    if np.any((flat < -size) | (flat >= size)):
        raise node.error(f"indices {flat.tolist()} are out of range for axis {axis} of size {size}")
    pieces = []
    for index in flat % size if size else flat:
        starts, ends = [0] * len(shape), list(shape)
        starts[axis], ends[axis] = int(index), int(index) + 1
        pieces.append(node.builder.slice(data, starts, ends, [1] * len(shape)))
    result_shape = (*shape[:axis], *indices.shape, *shape[axis + 1 :])
    if not pieces:
        return node.builder.constant(np.zeros(result_shape), element_type_of(data))
    joined = pieces[0] if len(pieces) == 1 else node.builder.concat(pieces, axis)
    return node.builder.reshape(joined, result_shape)


def _gather_one_hot(node: Node, data: SSAValue, axis: int, size: int) -> SSAValue:
    builder, shape = node.builder, shape_of(data)
    indices = node.input(1)
    index_shape = shape_of(indices)
    index_type = element_type_of(indices)
    zero = builder.scalar(0, index_type)
    wrapped = builder.where(builder.compare("lt", indices, zero), builder.binary("graph.add", indices, builder.scalar(size, index_type)), indices)
    flat = builder.reshape(wrapped, (int(np.prod(index_shape, dtype=np.int64)), 1))
    positions = builder.constant(np.arange(size).reshape(1, size), index_type)
    one_hot = builder.cast(builder.compare("eq", flat, positions), element_type_of(data))
    rest = [d for d in range(len(shape)) if d != axis]
    moved = builder.transpose(data, [axis, *rest]) if axis else data
    rest_shape = [shape[d] for d in rest]
    table = builder.reshape(moved, (size, int(np.prod(rest_shape, dtype=np.int64))))
    rows = builder.reshape(builder.matmul(one_hot, table), (*index_shape, *rest_shape))
    if axis == 0:
        return rows
    # The indexed dimensions go back to the position of `axis`.
    count = len(index_shape)
    order = [*range(count, count + axis), *range(count), *range(count + axis, count + len(rest))]
    return builder.transpose(rows, order)


_EINSUM = re.compile(r"^\s*([a-zA-Z]*)\s*,\s*([a-zA-Z]*)\s*->\s*([a-zA-Z]*)\s*$")


@maps("Einsum", (12, 28))
def einsum(node: Node) -> HandlerResult:
    equation = node.attribute("equation", "")
    equation = equation.decode() if isinstance(equation, bytes) else equation
    match = _EINSUM.match(equation)
    if match is None or len(node.inputs()) != 2:
        raise node.reject_attribute("equation", equation, "mlc maps two-operand equations with an explicit output, without '...'")
    a_labels, b_labels, out_labels = match.groups()
    if any(len(set(labels)) != len(labels) for labels in (a_labels, b_labels, out_labels)):
        raise node.reject_attribute("equation", equation, "a label repeated within one operand (a diagonal) is not supported")
    builder = node.builder
    a, b = node.input(0), node.input(1)
    sizes = dict(zip(a_labels, shape_of(a))) | dict(zip(b_labels, shape_of(b)))
    # Labels in one operand only and not in the output are summed away first.
    a, a_labels = _sum_labels(node, a, a_labels, set(b_labels) | set(out_labels))
    b, b_labels = _sum_labels(node, b, b_labels, set(a_labels) | set(out_labels))
    batch = [label for label in out_labels if label in a_labels and label in b_labels]
    contracted = [label for label in a_labels if label in b_labels and label not in out_labels]
    a_free = [label for label in a_labels if label not in b_labels]
    b_free = [label for label in b_labels if label not in a_labels]

    def prepared(x: SSAValue, labels: str, groups: list[list[str]]) -> SSAValue:
        order = [labels.index(label) for group in groups for label in group]
        if order != list(range(len(labels))):
            x = builder.transpose(x, order)
        return builder.reshape(x, [int(np.prod([sizes[label] for label in group], dtype=np.int64)) for group in groups])

    product = builder.matmul(prepared(a, a_labels, [batch, a_free, contracted]), prepared(b, b_labels, [batch, contracted, b_free]))
    labels = batch + a_free + b_free
    product = builder.reshape(product, [sizes[label] for label in labels])
    order = [labels.index(label) for label in out_labels]
    return [builder.transpose(product, order) if order != list(range(len(labels))) else product]


def _sum_labels(node: Node, x: SSAValue, labels: str, kept: set[str]) -> tuple[SSAValue, str]:
    summed = [position for position, label in enumerate(labels) if label not in kept]
    if not summed:
        return x, labels
    remaining = "".join(label for label in labels if label in kept)
    return node.builder.reduce("sum", x, summed, False), remaining
