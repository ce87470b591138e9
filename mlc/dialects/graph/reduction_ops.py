"""The graph dialect's reductions and normalisations: reduce_sum/max/min/mean, softmax, layer_norm.

Semantics are those of `interpret.py`; names and properties are fixed by `spec/graph-dialect.md`.

Custom syntax (the generic form always parses too; properties are printed as `name value`, in the
order of the spec):

    %s = graph.reduce_sum %x axes [1] keepdims false : tensor<4x8xf32> to tensor<4xf32>
    %m = graph.reduce_max %x axes [0, -1] keepdims true : tensor<4x8xf32> to tensor<1x1xf32>
    %p = graph.softmax %x axis 1 : tensor<8x32xf32>
    %n = graph.layer_norm %x, %scale, %bias axis -1 epsilon 1.000000e-05
           : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>

Generic form: `"graph.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}>` (`keepdims` is
a builtin `BoolAttr`: `true`/`false`, which is `1 : i1`/`0 : i1`), `"graph.softmax"(%x) <{axis = 1
: i64}>`, `"graph.layer_norm"(%x, %scale, %bias) <{axis = 1 : i64, epsilon = 1.0e-05 : f32}>`.

**Reductions** are `np.sum(x, axis=tuple(axes), keepdims=keepdims)` and likewise `np.max`,
`np.min`, `np.mean`:

- `axes` lists distinct axes, negative ones counting from the end. An empty `axes` reduces
  *nothing* (numpy's `axis=()`: the result is `x`); ONNX's "empty means all" is the importer's to
  expand into the full list. The builders' default (`axes=None`) is every axis.
- Element types: `reduce_sum` takes floats and integers (sums wrap around like the element type's
  own arithmetic), `reduce_max`/`reduce_min` also i1 (any/all), `reduce_mean` floats only.
- Reducing an axis of size 0 gives ONNX's identities: 0 for sums, -inf (the lowest integer,
  false) for max, +inf (the highest integer, true) for min, NaN for means.

**softmax** is `exp(x - max) / sum(exp(x - max))` along `axis`, floats only; the result type is
the operand's.

**layer_norm** normalises `x` over the dimensions `axis..rank-1` with the population variance,
`(x - mean) / sqrt(variance + epsilon) * scale + bias`; `scale` and `bias` have exactly the shape
of those dimensions (`x.shape[axis:]`, no broadcasting) and `x`'s float element type; `epsilon` is
an f32 and must not be negative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    I64,
    IntegerAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from mlc.dialects.graph.support import (
    TypeInferenceError,
    format_shape,
    i64_array,
    normalize_axes,
    normalize_axis,
    require_float,
    require_not_bool,
    require_same_element_type,
    verify_result_type,
    verify_tensor,
    verify_tensor_type,
)


class ReductionOp(IRDLOperation):
    """Shared definition of the reductions: `x` reduced over `axes`, keeping them or not."""

    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase.constr(i64))
    keepdims = prop_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$x `axes` $axes `keepdims` $keepdims attr-dict `:` type($x) `to` type($result)"
    )

    ACCEPTS_INTEGERS: ClassVar[bool] = True
    ACCEPTS_BOOL: ClassVar[bool] = False

    def __init__(
        self,
        x: SSAValue,
        *,
        axes: Sequence[int] | None = None,
        keepdims: bool,
        result_type: Attribute | None = None,
    ):
        # keepdims has no default: numpy's (False) and ONNX's (True) disagree.
        if axes is None:
            axes = tuple(range(x.type.get_num_dims())) if isinstance(x.type, TensorType) else ()
        if result_type is None:
            result_type = self.infer_result_type(x.type, axes=axes, keepdims=keepdims)
        super().__init__(
            operands=[x],
            result_types=[result_type],
            properties={"axes": i64_array(axes), "keepdims": IntegerAttr(int(keepdims), i1)},
        )

    @classmethod
    def infer_result_type(
        cls, x_type: Attribute, *, axes: Sequence[int], keepdims: bool
    ) -> TensorType:
        x = verify_tensor_type(x_type, "operand #0 (x)")
        if not cls.ACCEPTS_INTEGERS:
            require_float(x, "operand #0 (x)")
        elif not cls.ACCEPTS_BOOL:
            require_not_bool(x, "operand #0 (x)", cls.name)
        reduced = normalize_axes(axes, x.get_num_dims(), "axes")
        if keepdims:
            shape = [1 if dim in reduced else size for dim, size in enumerate(x.get_shape())]
        else:
            shape = [size for dim, size in enumerate(x.get_shape()) if dim not in reduced]
        return TensorType(x.element_type, shape)

    def keeps_dims(self) -> bool:
        return self.keepdims.value.data != 0

    def normalized_axes(self) -> tuple[int, ...]:
        """The reduced axes, in `[0, rank)`, in the order of the property."""
        rank = len(self.x.type.get_shape())  # type: ignore[attr-defined]
        return tuple(axis + rank if axis < 0 else axis for axis in self.axes.get_values())

    def verify_(self) -> None:
        expected = self.infer_result_type(
            self.x.type, axes=self.axes.get_values(), keepdims=self.keeps_dims()
        )
        verify_result_type(self, expected, "the reduction of operand #0 (x) over 'axes'")


@irdl_op_definition
class ReduceSumOp(ReductionOp):
    name = "graph.reduce_sum"


@irdl_op_definition
class ReduceMaxOp(ReductionOp):
    name = "graph.reduce_max"
    ACCEPTS_BOOL: ClassVar[bool] = True


@irdl_op_definition
class ReduceMinOp(ReductionOp):
    name = "graph.reduce_min"
    ACCEPTS_BOOL: ClassVar[bool] = True


@irdl_op_definition
class ReduceMeanOp(ReductionOp):
    name = "graph.reduce_mean"
    ACCEPTS_INTEGERS: ClassVar[bool] = False


@irdl_op_definition
class SoftmaxOp(IRDLOperation):
    """`exp(x - max) / sum(exp(x - max))` along `axis`."""

    name = "graph.softmax"
    T: ClassVar = VarConstraint("T", base(TensorType))
    x = operand_def(T)
    axis = prop_def(IntegerAttr[I64])
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$x `axis` $axis attr-dict `:` type($x)"

    def __init__(self, x: SSAValue, *, axis: int = -1):
        # The default is ONNX's (opset 13 and later).
        super().__init__(
            operands=[x], result_types=[x.type], properties={"axis": IntegerAttr(axis, i64)}
        )

    def normalized_axis(self) -> int:
        axis = self.axis.value.data
        return axis + len(self.x.type.get_shape()) if axis < 0 else axis  # type: ignore[attr-defined]

    def verify_(self) -> None:
        x = verify_tensor(self.x, "operand #0 (x)")
        require_float(x, "operand #0 (x)")
        axis = self.axis.value.data
        normalize_axis(axis, x.get_num_dims(), f"property 'axis' = {axis}")


@irdl_op_definition
class LayerNormOp(IRDLOperation):
    """Normalisation over the dims `axis..rank-1`, then `* scale + bias` (see the module docstring)."""

    name = "graph.layer_norm"
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    epsilon = prop_def(FloatAttr[Float32Type])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$x `,` $scale `,` $bias `axis` $axis `epsilon` $epsilon attr-dict `:` "
        "functional-type(operands, results)"
    )

    def __init__(
        self,
        x: SSAValue,
        scale: SSAValue,
        bias: SSAValue,
        *,
        axis: int = -1,
        epsilon: float = 1e-5,
        result_type: Attribute | None = None,
    ):
        # The defaults are ONNX LayerNormalization's.
        if result_type is None:
            result_type = self.infer_result_type(
                x.type, scale.type, bias.type, axis=axis, epsilon=epsilon
            )
        super().__init__(
            operands=[x, scale, bias],
            result_types=[result_type],
            properties={"axis": IntegerAttr(axis, i64), "epsilon": FloatAttr(epsilon, f32)},
        )

    @classmethod
    def infer_result_type(
        cls,
        x_type: Attribute,
        scale_type: Attribute,
        bias_type: Attribute,
        *,
        axis: int,
        epsilon: float,
    ) -> TensorType:
        x = verify_tensor_type(x_type, "operand #0 (x)")
        require_float(x, "operand #0 (x)")
        first = normalize_axis(axis, x.get_num_dims(), f"property 'axis' = {axis}")
        normalized_shape = x.get_shape()[first:]
        for tensor_type, role in ((scale_type, "operand #1 (scale)"), (bias_type, "operand #2 (bias)")):
            parameter = verify_tensor_type(tensor_type, role)
            require_same_element_type(parameter, role, x, "x")
            if parameter.get_shape() != normalized_shape:
                raise TypeInferenceError(
                    f"{role} of shape {format_shape(parameter.get_shape())} must have the shape "
                    f"{format_shape(normalized_shape)} of the normalised dimensions {first}.."
                    f"{x.get_num_dims() - 1} of operand #0 (x)"
                )
        if not epsilon >= 0 or math.isinf(epsilon):
            raise TypeInferenceError(
                f"property 'epsilon' = {epsilon} must be finite and not negative"
            )
        return x

    def normalized_axis(self) -> int:
        axis = self.axis.value.data
        return axis + len(self.x.type.get_shape()) if axis < 0 else axis  # type: ignore[attr-defined]

    def verify_(self) -> None:
        expected = self.infer_result_type(
            self.x.type,
            self.scale.type,
            self.bias.type,
            axis=self.axis.value.data,
            epsilon=self.epsilon.value.data,
        )
        verify_result_type(self, expected, "the type of operand #0 (x)")
