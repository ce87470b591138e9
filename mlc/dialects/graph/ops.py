"""The graph dialect: tensor operators with value semantics.

This is mlc's entry level. Names, operand order, properties and semantics are fixed by
`spec/graph-dialect.md`; `interpret.py` beside this file is their executable definition. The ops
live in four modules, and this one gathers them into the `Graph` dialect and the op families that
passes dispatch on; import the dialect from here (`from mlc.dialects.graph import ops as graph`):

| module | ops |
| --- | --- |
| `elementwise.py` | constant, add sub mul div max min pow, cmp, where, neg abs relu exp log sqrt rsqrt tanh sigmoid erf sin cos reciprocal, gelu, cast |
| `shape_ops.py` | broadcast, reshape, transpose, concat, slice |
| `reduction_ops.py` | reduce_sum reduce_max reduce_min reduce_mean, softmax, layer_norm |
| `nn_ops.py` | matmul, conv2d, max_pool2d, avg_pool2d |
| `fusion.py` | fusion (a region: the ops of one future kernel), yield |

`support.py` holds the verifiers' shared rules (static supported tensors, broadcasting, numpy's
negative axes, the `TypeInferenceError` both verifiers and builders raise).

Custom syntax, one line per kind of op (the generic form of the spec always parses too, and
`mlc-opt --print-op-generic` prints it); properties are written `name value` in the spec's order:

    %c = graph.constant dense<1.0> : tensor<4xf32>
    %s = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
    %m = graph.cmp lt, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %e = graph.exp %a : tensor<4xf32>
    %g = graph.gelu %a {approximate = "tanh"} : tensor<4xf32>
    %h = graph.cast %a : tensor<4xf32> to tensor<4xf16>
    %t = graph.transpose %x perm [1, 0] : tensor<2x3xf32> to tensor<3x2xf32>
    %k = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
    %l = graph.slice %x starts [0, 1] ends [4, 3] steps [2, 1] : tensor<4x4xf32> to tensor<2x2xf32>
    %r = graph.reduce_sum %x axes [1] keepdims false : tensor<4x8xf32> to tensor<4xf32>
    %p = graph.softmax %x axis 1 : tensor<8x32xf32>
    %n = graph.layer_norm %x, %scale, %bias axis -1 epsilon 1.000000e-05
           : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %y = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %v = graph.conv2d %x, %w, %bias strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1
           : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %q = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0]
           : tensor<1x3x8x8xf32> to tensor<1x3x4x4xf32>
    %f = graph.fusion elementwise "main_0" (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
      %e = graph.exp %a : tensor<4xf32>
      graph.yield %e : tensor<4xf32>
    }

Every verifier names the offending operand or property. Tensors must be ranked with a static shape
and an element type from `element_types.SUPPORTED_ELEMENT_TYPES`.

Python builders: every op's constructor takes its operands first (positionally), then its
properties as keyword arguments (ONNX's defaults where ONNX has one), and an optional
`result_type=` that is inferred when left out; `SomeOp.infer_result_type(operand types...,
properties...)` is the same inference, raising `TypeInferenceError` (a `ValueError`) for
inconsistent operands. `broadcast`, `reshape` and `cast` take the result type instead, since it is
what defines them.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from mlc.dialects.graph.elementwise import (
    CMP_PREDICATES,
    GELU_APPROXIMATIONS,
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    CmpOp,
    ConstantOp,
    DivOp,
    CosOp,
    ErfOp,
    ExpOp,
    GeluOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PowOp,
    ReciprocalOp,
    ReluOp,
    RsqrtOp,
    ShapeChangingOp,
    SigmoidOp,
    SinOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOp,
    WhereOp,
)
from mlc.dialects.graph.fusion import FUSION_KINDS, FusionOp, YieldOp
from mlc.dialects.graph.nn_ops import (
    AvgPool2dOp,
    Conv2dOp,
    MatmulOp,
    MaxPool2dOp,
    Pool2dOp,
    windowed_size,
)
from mlc.dialects.graph.reduction_ops import (
    LayerNormOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceSumOp,
    ReductionOp,
    SoftmaxOp,
)
from mlc.dialects.graph.shape_ops import (
    BroadcastOp,
    ConcatOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    slice_shape,
    transpose_shape,
)
from mlc.dialects.graph.support import (
    TypeInferenceError,
    broadcast_shapes,
    format_shape,
    normalize_axis,
    verify_tensor,
    verify_tensor_type,
)

BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp)
UNARY_OPS = (
    NegOp,
    AbsOp,
    ReluOp,
    ExpOp,
    LogOp,
    SqrtOp,
    RsqrtOp,
    TanhOp,
    SigmoidOp,
    ErfOp,
    SinOp,
    CosOp,
    ReciprocalOp,
    GeluOp,
)
ELEMENTWISE_OPS = (*BINARY_OPS, CmpOp, WhereOp, *UNARY_OPS, CastOp)
"""Ops whose every result element depends only on the operand elements at the same
(broadcast) position: the ops a fused elementwise kernel may contain."""

INJECTIVE_OPS = (BroadcastOp, ReshapeOp, TransposeOp, ConcatOp, SliceOp)
"""Ops whose every result element is a copy of one operand element at a statically known
position (TVM's "injective" pattern): they compute nothing, they only move data."""

REDUCTION_OPS = (ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceMeanOp)
"""Reductions of one operand over the axes of its `axes` property."""

NORMALIZATION_OPS = (SoftmaxOp, LayerNormOp)
"""Ops that reduce along some axes and then rescale every element by the reduced values."""

POOLING_OPS = (MaxPool2dOp, AvgPool2dOp)
"""2-d window reductions over NCHW tensors."""

CONTRACTION_OPS = (MatmulOp, Conv2dOp)
"""Sums of products (the compute-bound ops): matrix products and convolutions."""

Graph = Dialect(
    "graph",
    [
        ConstantOp,
        *ELEMENTWISE_OPS,
        *INJECTIVE_OPS,
        *REDUCTION_OPS,
        *NORMALIZATION_OPS,
        *POOLING_OPS,
        *CONTRACTION_OPS,
        FusionOp,
        YieldOp,
    ],
    [],
)

__all__ = [
    "AbsOp",
    "AddOp",
    "AvgPool2dOp",
    "BINARY_OPS",
    "BinaryOp",
    "BroadcastOp",
    "CMP_PREDICATES",
    "CONTRACTION_OPS",
    "CastOp",
    "CmpOp",
    "ConcatOp",
    "ConstantOp",
    "Conv2dOp",
    "DivOp",
    "ELEMENTWISE_OPS",
    "CosOp",
    "ErfOp",
    "ExpOp",
    "FUSION_KINDS",
    "FusionOp",
    "GELU_APPROXIMATIONS",
    "GeluOp",
    "Graph",
    "INJECTIVE_OPS",
    "LayerNormOp",
    "LogOp",
    "MatmulOp",
    "MaxOp",
    "MaxPool2dOp",
    "MinOp",
    "MulOp",
    "NORMALIZATION_OPS",
    "NegOp",
    "POOLING_OPS",
    "Pool2dOp",
    "PowOp",
    "REDUCTION_OPS",
    "ReciprocalOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceMinOp",
    "ReduceSumOp",
    "ReductionOp",
    "ReluOp",
    "ReshapeOp",
    "RsqrtOp",
    "ShapeChangingOp",
    "SigmoidOp",
    "SinOp",
    "SliceOp",
    "SoftmaxOp",
    "SqrtOp",
    "SubOp",
    "TanhOp",
    "TransposeOp",
    "TypeInferenceError",
    "UNARY_OPS",
    "UnaryOp",
    "WhereOp",
    "YieldOp",
    "broadcast_shapes",
    "format_shape",
    "normalize_axis",
    "slice_shape",
    "transpose_shape",
    "verify_tensor",
    "verify_tensor_type",
    "windowed_size",
]
