"""The graph dialect's contractions and windows: matmul, conv2d, max_pool2d and avg_pool2d.

Semantics are those of `interpret.py`; names and properties are fixed by `spec/graph-dialect.md`.

Custom syntax (the generic form always parses too; properties are printed as `name value`, in the
order of the spec, arrays as `[...]`):

    %y = graph.matmul %a, %b : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
    %c = graph.conv2d %x, %w, %bias strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %c = graph.conv2d %x, %w strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] group 1
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x3x3xf32>
    %p = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0]
           : tensor<1x3x8x8xf32> to tensor<1x3x4x4xf32>
    %q = graph.avg_pool2d %x kernel [3, 3] strides [1, 1] pads [1, 1, 1, 1]
           : tensor<1x3x8x8xf32> to tensor<1x3x8x8xf32>

Generic form: `"graph.conv2d"(%x, %w, %bias) <{strides = array<i64: 1, 1>, pads = array<i64: 1,
1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}>`, and likewise for the pools with
`kernel`, `strides` and `pads`.

**matmul** is `np.matmul(a, b)` for operands of rank 2 or more: `a` is `[..., M, K]`, `b` is
`[..., K, N]`, the result `[..., M, N]` where the leading (batch) dimensions broadcast as numpy
broadcasts. Rank-1 operands, which numpy promotes to matrices and then drops the dimension, are
rejected: the ONNX importer reshapes them explicitly, which keeps every matmul a plain batched
matrix product for the lowering. Floats and integers (not i1) of one element type; integer
products and sums wrap around like the element type's arithmetic. The optional `precision`
property (`"ieee"`, the default, `"tf32"` or `"3xtf32"`; f32 only) says how f32 products may be
computed (`mlc/dialects/precision.py`): `%y = graph.matmul %a, %b {precision = "tf32"} : ...`,
generic `"graph.matmul"(%a, %b) <{precision = "tf32"}> : ...`.

**conv2d** is ONNX `Conv` with explicit padding (`auto_pad = NOTSET`): `x` is `[N, C, H, W]`, `w`
is `[O, C / group, kH, kW]`, the optional `bias` is `[O]`; `pads` is `(top, left, bottom, right)`
(ONNX's begin..., end... order), zero-filled; output size per spatial dimension is
`floor((size + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1`, which must be at least
1. `group` divides `C` and `O`; group `g` convolves input channels `[g*C/group, (g+1)*C/group)`
into output channels `[g*O/group, (g+1)*O/group)`. Floats only, one element type.

**max_pool2d** and **avg_pool2d** are ONNX `MaxPool` / `AveragePool` with explicit padding,
`ceil_mode = 0`, dilations 1, and for the average `count_include_pad = 0`: padded positions are
never the maximum and are not counted in the average. Each pad must be smaller than the kernel
along its axis, so every window holds at least one element of `x`. Floats only.
"""

from __future__ import annotations

from collections.abc import Sequence
from xdsl.dialects.builtin import DenseArrayBase, I64, IntegerAttr, StringAttr, TensorType, f32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.graph.support import (
    TypeInferenceError,
    broadcast_shapes,
    format_list,
    format_shape,
    i64_array,
    require_at_least,
    require_float,
    require_length,
    require_not_bool,
    require_rank,
    require_same_element_type,
    verify_result_type,
    verify_tensor_type,
)
from mlc.dialects.precision import DEFAULT_PRECISION, precision_problem


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """`np.matmul(a, b)` for operands of rank 2 or more, batch dimensions broadcast."""

    name = "graph.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    precision = opt_prop_def(StringAttr, default_value=StringAttr(DEFAULT_PRECISION))
    """How f32 products are computed: "ieee", "tf32" or "3xtf32" (`mlc/dialects/precision.py`)."""
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$a `,` $b attr-dict `:` functional-type(operands, results)"

    def __init__(
        self, a: SSAValue, b: SSAValue, *, result_type: Attribute | None = None, precision: str | None = None
    ):
        if result_type is None:
            result_type = self.infer_result_type(a.type, b.type)
        properties = {} if precision is None else {"precision": StringAttr(precision)}
        super().__init__(operands=[a, b], result_types=[result_type], properties=properties)

    @classmethod
    def infer_result_type(cls, a_type: Attribute, b_type: Attribute) -> TensorType:
        a = verify_tensor_type(a_type, "operand #0 (a)")
        b = verify_tensor_type(b_type, "operand #1 (b)")
        require_same_element_type(b, "operand #1 (b)", a, "a")
        require_not_bool(a, "operands #0 (a) and #1 (b)", cls.name)
        for tensor_type, role in ((a, "operand #0 (a)"), (b, "operand #1 (b)")):
            if tensor_type.get_num_dims() < 2:
                raise TypeInferenceError(
                    f"{role} must have rank 2 or more, got {tensor_type} (reshape a vector to "
                    "a 1xK or Kx1 matrix)"
                )
        *a_batch, rows, inner = a.get_shape()
        *b_batch, b_inner, columns = b.get_shape()
        if inner != b_inner:
            raise TypeInferenceError(
                f"operand #1 (b) of shape {format_shape(b.get_shape())} has {b_inner} rows, but "
                f"operand #0 (a) of shape {format_shape(a.get_shape())} has {inner} columns; "
                "they must be equal"
            )
        batch = broadcast_shapes(a_batch, b_batch)
        if batch is None:
            raise TypeInferenceError(
                f"batch dimensions {format_shape(b_batch)} of operand #1 (b) do not broadcast "
                f"with batch dimensions {format_shape(a_batch)} of operand #0 (a)"
            )
        return TensorType(a.element_type, (*batch, rows, columns))

    def verify_(self) -> None:
        expected = self.infer_result_type(self.a.type, self.b.type)
        verify_result_type(self, expected, "the matrix product of the operands")
        problem = precision_problem(self.precision.data, expected.element_type == f32)
        if problem is not None:
            raise VerifyException(problem)


def windowed_size(
    size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1
) -> int:
    """Output positions of a window sliding over `size` padded elements (ONNX, floor mode)."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def windowed_shape(
    x: TensorType,
    channels: int,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],
    dilations: Sequence[int],
) -> TensorType:
    """`[N, channels, H_out, W_out]` of a 2-d window over `x` (NCHW); the window must fit."""
    batch, _, height, width = x.get_shape()
    extent = [dilation * (size - 1) + 1 for size, dilation in zip(kernel, dilations)]
    padded = [height + pads[0] + pads[2], width + pads[1] + pads[3]]
    if extent[0] > padded[0] or extent[1] > padded[1]:
        raise TypeInferenceError(
            f"the window of {format_shape(extent)} elements (dilated kernel) is larger than the "
            f"padded spatial dimensions {format_shape(padded)} of operand #0 (x)"
        )
    return TensorType(
        x.element_type,
        (
            batch,
            channels,
            windowed_size(height, kernel[0], strides[0], pads[0], pads[2], dilations[0]),
            windowed_size(width, kernel[1], strides[1], pads[1], pads[3], dilations[1]),
        ),
    )


def check_window_properties(strides: Sequence[int], pads: Sequence[int]) -> None:
    require_length(strides, 2, "property 'strides'", "height, width")
    require_at_least(strides, 1, "property 'strides'")
    require_length(pads, 4, "property 'pads'", "top, left, bottom, right")
    require_at_least(pads, 0, "property 'pads'")


@irdl_op_definition
class Conv2dOp(IRDLOperation):
    """ONNX `Conv` over NCHW `x` with OIHW `w` and an optional bias (see the module docstring)."""

    name = "graph.conv2d"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    dilations = prop_def(DenseArrayBase.constr(i64))
    group = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$x `,` $w (`,` $bias^)? `strides` $strides `pads` $pads `dilations` $dilations "
        "`group` $group attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        x: SSAValue,
        w: SSAValue,
        bias: SSAValue | None = None,
        *,
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        dilations: Sequence[int] = (1, 1),
        group: int = 1,
        result_type: Attribute | None = None,
    ):
        # The defaults are ONNX Conv's.
        if result_type is None:
            result_type = self.infer_result_type(
                x.type,
                w.type,
                None if bias is None else bias.type,
                strides=strides,
                pads=pads,
                dilations=dilations,
                group=group,
            )
        super().__init__(
            operands=[x, w, [] if bias is None else [bias]],
            result_types=[result_type],
            properties={
                "strides": i64_array(strides),
                "pads": i64_array(pads),
                "dilations": i64_array(dilations),
                "group": IntegerAttr(group, i64),
            },
        )

    @classmethod
    def infer_result_type(
        cls,
        x_type: Attribute,
        w_type: Attribute,
        bias_type: Attribute | None,
        *,
        strides: Sequence[int],
        pads: Sequence[int],
        dilations: Sequence[int],
        group: int,
    ) -> TensorType:
        check_window_properties(strides, pads)
        require_length(dilations, 2, "property 'dilations'", "height, width")
        require_at_least(dilations, 1, "property 'dilations'")
        if group < 1:
            raise TypeInferenceError(f"property 'group' = {group} must be positive")
        x = verify_tensor_type(x_type, "operand #0 (x)")
        w = verify_tensor_type(w_type, "operand #1 (w)")
        require_float(x, "operand #0 (x)")
        require_same_element_type(w, "operand #1 (w)", x, "x")
        require_rank(x, "operand #0 (x)", 4, "N, C, H, W")
        require_rank(w, "operand #1 (w)", 4, "O, C / group, kH, kW")
        channels = x.get_shape()[1]
        outputs, group_channels, kernel_height, kernel_width = w.get_shape()
        if channels % group != 0 or outputs % group != 0:
            raise TypeInferenceError(
                f"property 'group' = {group} must divide the {channels} channels of operand #0 "
                f"(x) and the {outputs} output channels of operand #1 (w)"
            )
        if group_channels != channels // group:
            raise TypeInferenceError(
                f"operand #1 (w) of shape {format_shape(w.get_shape())} must have "
                f"{channels // group} input channels (dimension 1): the {channels} channels of "
                f"operand #0 (x) divided by group {group}"
            )
        if kernel_height < 1 or kernel_width < 1:
            raise TypeInferenceError(
                f"operand #1 (w) of shape {format_shape(w.get_shape())} has an empty kernel"
            )
        if bias_type is not None:
            bias = verify_tensor_type(bias_type, "operand #2 (bias)")
            require_same_element_type(bias, "operand #2 (bias)", x, "x")
            if bias.get_shape() != (outputs,):
                raise TypeInferenceError(
                    f"operand #2 (bias) of shape {format_shape(bias.get_shape())} must have the "
                    f"shape {outputs} of the output channels of operand #1 (w)"
                )
        kernel = (kernel_height, kernel_width)
        return windowed_shape(x, outputs, kernel, strides, pads, dilations)

    def verify_(self) -> None:
        expected = self.infer_result_type(
            self.x.type,
            self.w.type,
            None if self.bias is None else self.bias.type,
            strides=self.strides.get_values(),
            pads=self.pads.get_values(),
            dilations=self.dilations.get_values(),
            group=self.group.value.data,
        )
        verify_result_type(self, expected, "the convolution of the operands")


class Pool2dOp(IRDLOperation):
    """Shared definition of the 2-d pools over NCHW `x` (see the module docstring)."""

    x = operand_def(TensorType)
    kernel = prop_def(DenseArrayBase.constr(i64))
    strides = prop_def(DenseArrayBase.constr(i64))
    pads = prop_def(DenseArrayBase.constr(i64))
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$x `kernel` $kernel `strides` $strides `pads` $pads attr-dict `:` type($x) `to` "
        "type($result)"
    )

    def __init__(
        self,
        x: SSAValue,
        *,
        kernel: Sequence[int],
        strides: Sequence[int] = (1, 1),
        pads: Sequence[int] = (0, 0, 0, 0),
        result_type: Attribute | None = None,
    ):
        # The defaults are ONNX's.
        if result_type is None:
            result_type = self.infer_result_type(x.type, kernel=kernel, strides=strides, pads=pads)
        super().__init__(
            operands=[x],
            result_types=[result_type],
            properties={
                "kernel": i64_array(kernel),
                "strides": i64_array(strides),
                "pads": i64_array(pads),
            },
        )

    @classmethod
    def infer_result_type(
        cls,
        x_type: Attribute,
        *,
        kernel: Sequence[int],
        strides: Sequence[int],
        pads: Sequence[int],
    ) -> TensorType:
        require_length(kernel, 2, "property 'kernel'", "height, width")
        require_at_least(kernel, 1, "property 'kernel'")
        check_window_properties(strides, pads)
        if not all(pad < kernel[index % 2] for index, pad in enumerate(pads)):
            raise TypeInferenceError(
                f"property 'pads' = {format_list(pads)} must be smaller than the kernel "
                f"{format_list(kernel)} along each axis, so that no window is only padding"
            )
        x = verify_tensor_type(x_type, "operand #0 (x)")
        require_float(x, "operand #0 (x)")
        require_rank(x, "operand #0 (x)", 4, "N, C, H, W")
        return windowed_shape(x, x.get_shape()[1], kernel, strides, pads, (1, 1))

    def verify_(self) -> None:
        expected = self.infer_result_type(
            self.x.type,
            kernel=self.kernel.get_values(),
            strides=self.strides.get_values(),
            pads=self.pads.get_values(),
        )
        verify_result_type(self, expected, "the pooling of operand #0 (x)")


@irdl_op_definition
class MaxPool2dOp(Pool2dOp):
    """ONNX `MaxPool`: the largest element of each window; padding is never the maximum."""

    name = "graph.max_pool2d"


@irdl_op_definition
class AvgPool2dOp(Pool2dOp):
    """ONNX `AveragePool` with `count_include_pad = 0`: the mean of the window's elements of `x`."""

    name = "graph.avg_pool2d"
