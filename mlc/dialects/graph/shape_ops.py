"""The graph dialect's data-movement ops: broadcast, reshape, transpose, concat and slice.

Each result element is a copy of one operand element; nothing is computed. Semantics are those of
`interpret.py` (numpy's); names and properties are fixed by `spec/graph-dialect.md`.

Custom syntax (the generic form always parses too; properties are printed as `name value`, in the
order of the spec, and array properties as `[...]`):

    %b = graph.broadcast %x : tensor<4xf32> to tensor<3x4xf32>
    %r = graph.reshape %x : tensor<2x6xf32> to tensor<3x4xf32>
    %t = graph.transpose %x perm [1, 0] : tensor<2x3xf32> to tensor<3x2xf32>
    %c = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
    %s = graph.slice %x starts [0, -1] ends [4, -5] steps [2, -1] : tensor<4x4xf32> to tensor<2x3xf32>

Generic form: `"graph.transpose"(%x) <{perm = array<i64: 1, 0>}>`, `"graph.concat"(%a, %b)
<{axis = 0 : i64}>`, `"graph.slice"(%x) <{starts = array<i64: ...>, ends = ..., steps = ...}>`.

**transpose** is `np.transpose(x, perm)`: `perm` has one entry per dimension, entries may be
negative (numpy normalises them, and so does the verifier), and together they name every dimension
once. The builders' default `perm` reverses the dimensions, as numpy's and ONNX's do.

**concat** is `np.concatenate(xs, axis)`: one or more operands of one element type and one rank
(at least 1), equal in every dimension but `axis`.

**slice** is `x[starts[0]:ends[0]:steps[0], ...]` with exactly Python's rules for a slice of one
dimension of size `d` (`slice(start, end, step).indices(d)`), one entry per dimension:

- a negative `start` or `end` counts from the end: `-1` is `d - 1`. So `end = -1` stops *before*
  the last element, never "before index 0";
- after that, bounds are clamped: into `[0, d]` when `step > 0`, into `[-1, d - 1]` when `step < 0`,
  where an end of `-1` means "through index 0";
- there is no "omitted" bound: write `start = 0, end = d` (or any `end >= d`, such as ONNX's
  INT64_MAX) for the whole dimension, and `start = d - 1` (or more), `end = -d - 1` (or less, such
  as INT64_MIN) to walk it backwards to index 0;
- `step` must not be 0; an empty range gives a dimension of size 0 (not an error).

These are also ONNX's `Slice` rules when every axis is listed, so the importer passes ONNX's
`starts`/`ends`/`steps` through unchanged after filling in the axes it omits.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, I64, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.graph.elementwise import ShapeChangingOp
from mlc.dialects.graph.support import (
    TypeInferenceError,
    broadcast_shapes,
    format_list,
    format_shape,
    i64_array,
    normalize_axis,
    require_same_element_type,
    verify_result_type,
    verify_tensor_type,
)


@irdl_op_definition
class BroadcastOp(ShapeChangingOp):
    """`np.broadcast_to(x, result shape)`."""

    name = "graph.broadcast"

    def verify_(self) -> None:
        x_type, result_type = self.verify_types_keeping_element_type()
        target = result_type.get_shape()
        if broadcast_shapes(x_type.get_shape(), target) != target:
            raise VerifyException(
                f"operand #0 (x) of shape {format_shape(x_type.get_shape())} cannot be "
                f"broadcast to {format_shape(target)}"
            )


@irdl_op_definition
class ReshapeOp(ShapeChangingOp):
    """`np.reshape(x, result shape)` (row-major; element counts must agree)."""

    name = "graph.reshape"

    def verify_(self) -> None:
        x_type, result_type = self.verify_types_keeping_element_type()
        if x_type.element_count() != result_type.element_count():
            raise VerifyException(
                f"operand #0 (x) has {x_type.element_count()} elements but the result "
                f"{result_type} has {result_type.element_count()}"
            )


def transpose_shape(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """The shape of `np.transpose(x, perm)` for `x` of `shape`; checks `perm`."""
    rank = len(shape)
    if len(perm) != rank:
        raise TypeInferenceError(
            f"property 'perm' = {format_list(perm)} must have one entry per dimension of "
            f"operand #0 (x) of rank {rank}"
        )
    normalized = [
        normalize_axis(axis, rank, f"entry {axis} of property 'perm'") for axis in perm
    ]
    if sorted(normalized) != list(range(rank)):
        raise TypeInferenceError(
            f"property 'perm' = {format_list(perm)} is not a permutation of the {rank} "
            "dimensions of operand #0 (x)"
        )
    return tuple(shape[axis] for axis in normalized)


@irdl_op_definition
class TransposeOp(IRDLOperation):
    """`np.transpose(x, perm)`: result dimension `i` is dimension `perm[i]` of `x`."""

    name = "graph.transpose"
    x = operand_def(TensorType)
    perm = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$x `perm` $perm attr-dict `:` type($x) `to` type($result)"

    def __init__(
        self,
        x: SSAValue,
        *,
        perm: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        if perm is None:
            rank = x.type.get_num_dims() if isinstance(x.type, TensorType) else 0
            perm = tuple(reversed(range(rank)))
        if result_type is None:
            result_type = self.infer_result_type(x.type, perm=perm)
        super().__init__(
            operands=[x], result_types=[result_type], properties={"perm": i64_array(perm)}
        )

    @classmethod
    def infer_result_type(cls, x_type: Attribute, *, perm: Sequence[int]) -> TensorType:
        x = verify_tensor_type(x_type, "operand #0 (x)")
        return TensorType(x.element_type, transpose_shape(x.get_shape(), perm))

    def normalized_perm(self) -> tuple[int, ...]:
        rank = len(self.perm.get_values())
        return tuple(axis + rank if axis < 0 else axis for axis in self.perm.get_values())

    def verify_(self) -> None:
        expected = self.infer_result_type(self.x.type, perm=self.perm.get_values())
        verify_result_type(self, expected, "the transpose of operand #0 (x) by 'perm'")


def concat_operand_role(index: int) -> str:
    return f"operand #{index} (xs[{index}])"


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """`np.concatenate(xs, axis)`."""

    name = "graph.concat"
    xs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$xs `axis` $axis attr-dict `:` functional-type(operands, results)"

    def __init__(
        self,
        xs: Sequence[SSAValue],
        *,
        axis: int,
        result_type: Attribute | None = None,
    ):
        if result_type is None:
            result_type = self.infer_result_type([x.type for x in xs], axis=axis)
        super().__init__(
            operands=[list(xs)],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64)},
        )

    @classmethod
    def infer_result_type(cls, xs_types: Sequence[Attribute], *, axis: int) -> TensorType:
        if not xs_types:
            raise TypeInferenceError("'graph.concat' needs at least one operand")
        first = verify_tensor_type(xs_types[0], concat_operand_role(0))
        rank = first.get_num_dims()
        axis = normalize_axis(axis, rank, f"property 'axis' = {axis}", concat_operand_role(0))
        size = 0
        for index, x_type in enumerate(xs_types):
            role = concat_operand_role(index)
            x = verify_tensor_type(x_type, role)
            require_same_element_type(x, role, first, concat_operand_role(0))
            shape = x.get_shape()
            other = first.get_shape()
            if len(shape) != rank or any(
                shape[dim] != other[dim] for dim in range(rank) if dim != axis
            ):
                raise TypeInferenceError(
                    f"{role} of shape {format_shape(shape)} does not match "
                    f"{concat_operand_role(0)} of shape {format_shape(other)} outside the "
                    f"concatenation axis {axis}"
                )
            size += shape[axis]
        shape = list(first.get_shape())
        shape[axis] = size
        return TensorType(first.element_type, shape)

    def normalized_axis(self) -> int:
        axis = self.axis.value.data
        return axis + len(self.result.type.get_shape()) if axis < 0 else axis  # type: ignore[attr-defined]

    def verify_(self) -> None:
        expected = self.infer_result_type(
            [x.type for x in self.xs], axis=self.axis.value.data
        )
        verify_result_type(self, expected, "the concatenation of the operands")


def slice_shape(
    shape: Sequence[int], starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]
) -> tuple[int, ...]:
    """The shape of `x[starts[0]:ends[0]:steps[0], ...]` for `x` of `shape`; checks the lists."""
    rank = len(shape)
    for name, values in (("starts", starts), ("ends", ends), ("steps", steps)):
        if len(values) != rank:
            raise TypeInferenceError(
                f"property '{name}' = {format_list(values)} must have one entry per dimension "
                f"of operand #0 (x) of rank {rank}"
            )
    if 0 in steps:
        raise TypeInferenceError(f"property 'steps' = {format_list(steps)} must not contain 0")
    return tuple(
        len(range(*slice(start, end, step).indices(size)))
        for size, start, end, step in zip(shape, starts, ends, steps)
    )


@irdl_op_definition
class SliceOp(IRDLOperation):
    """`x[starts[0]:ends[0]:steps[0], ...]` with Python's slice rules (see the module docstring)."""

    name = "graph.slice"
    x = operand_def(TensorType)
    starts = prop_def(DenseArrayBase.constr(i64))
    ends = prop_def(DenseArrayBase.constr(i64))
    steps = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$x `starts` $starts `ends` $ends `steps` $steps attr-dict `:` type($x) `to` "
        "type($result)"
    )

    def __init__(
        self,
        x: SSAValue,
        *,
        starts: Sequence[int],
        ends: Sequence[int],
        steps: Sequence[int] | None = None,
        result_type: Attribute | None = None,
    ):
        if steps is None:
            steps = (1,) * len(starts)
        if result_type is None:
            result_type = self.infer_result_type(x.type, starts=starts, ends=ends, steps=steps)
        super().__init__(
            operands=[x],
            result_types=[result_type],
            properties={
                "starts": i64_array(starts),
                "ends": i64_array(ends),
                "steps": i64_array(steps),
            },
        )

    @classmethod
    def infer_result_type(
        cls,
        x_type: Attribute,
        *,
        starts: Sequence[int],
        ends: Sequence[int],
        steps: Sequence[int],
    ) -> TensorType:
        x = verify_tensor_type(x_type, "operand #0 (x)")
        return TensorType(x.element_type, slice_shape(x.get_shape(), starts, ends, steps))

    def slices(self) -> tuple[slice, ...]:
        """The Python slices this op applies, one per dimension."""
        return tuple(
            slice(start, end, step)
            for start, end, step in zip(
                self.starts.get_values(), self.ends.get_values(), self.steps.get_values()
            )
        )

    def verify_(self) -> None:
        expected = self.infer_result_type(
            self.x.type,
            starts=self.starts.get_values(),
            ends=self.ends.get_values(),
            steps=self.steps.get_values(),
        )
        verify_result_type(self, expected, "the slice of operand #0 (x)")
