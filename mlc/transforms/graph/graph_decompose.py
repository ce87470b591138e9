"""graph-decompose: composite graph ops rewritten into the primitives the code generator lowers.

After this pass a graph function holds no `softmax`, `layer_norm`, `reduce_mean`, pool,
`conv2d` or integer `matmul`, and every
remaining `reduce_sum`/`reduce_max`/`reduce_min` keeps its reduced dimensions, is computed in f32
when its input is a narrow float, and reduces more than one element. `convert-graph-to-tile` then
needs to know only one kind of reduction, with a keepdims shape that broadcasts against its input.

Rewrites (x of element type T, f32 for the arithmetic when T is f16 or bf16):

* `softmax(x, axis)` -> `e = exp(x - reduce_max(x)); e * reciprocal(reduce_sum(e))`
  (max-subtraction keeps exp from overflowing and leaves the quotient unchanged; one division per
  row and a multiplication per element cost an extra rounding, where a division per element
  costs about ten instructions on a GPU).
* `layer_norm(x, scale, bias, axis, eps)` over the dimensions `axis..rank-1` ->
  `d = x - mean(x); d * rsqrt(mean(d * d) + eps) * scale + bias`, the population variance as the
  interpreter defines it, two passes over the row.
* `reduce_mean(x)` -> `reduce_sum(x) / count`.
* A narrow-float reduction -> cast to f32, reduce, cast back (fp32 accumulation; max and min are
  exact either way, and the code generator then needs no f16 shuffles).
* `keepdims = false` -> the keepdims reduction and a `graph.reshape` to the requested shape (a free
  reinterpretation of a contiguous buffer).
* A reduction of exactly one element -> its input (reshaped when the rank drops).
* A reduction over an empty axis -> a constant: the identity of its combiner, as the interpreter
  defines it (0 for sum, -inf/+inf or the integer extremes for max/min, NaN for mean).
* `max_pool2d` / `avg_pool2d` -> strided slices of the input padded by concatenation (-inf / 0),
  combined by `graph.max` / `graph.add` (then divided by a constant of per-window counts); larger
  windows separably (`lowering/window_decomposition.py`).
* `conv2d` with stride 1, one group and channels a multiple of 8 -> the implicit GEMM: the input
  NHWC and padded, flattened to rows of pixels, its row-shifted slices (one per kernel offset)
  side by side as the lhs of one `graph.matmul` (graph-fuse then reads them in place), the product
  back to NCHW and sliced to the output pixels (for at most `direct-layout-elements`, default
  2^20, both transposes are index maps of the neighbouring kernels, not kernels of their own); a depthwise `conv2d` -> the sum over kernel
  offsets of the window's strided slice times the offset's weights (one elementwise kernel);
  any other `conv2d` -> an im2col column matrix (padding, strided slices, concat, transpose), the
  weights transposed, `graph.matmul`, the product transposed back to NCHW (f32 for f16
  convolutions with a bias), the bias added (`lowering/window_decomposition.py`).
* An integer `matmul` -> `reduce_sum` over K of the broadcast products of (..., M, K, 1) and
  (..., 1, K, N) in i32 (i64 for i64), wrapping like the interpreter's result truncated.

Numerics: every op of a decomposition rounds to f32 where the interpreter's composite evaluates in
float64 and rounds once, so results differ by a few f32 ulps relative to the row's scale; the
Hypothesis check states the tolerance. Limits: integer `reduce_mean` and reductions over an empty
axis (which need an identity constant such as -inf) are left as they are, and
`convert-graph-to-tile` reports them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlc.transforms.lowering.graph_decomposition import decompose_function
from mlc.transforms.lowering.window_decomposition import DIRECT_LAYOUT_ELEMENTS


@dataclass(frozen=True)
class GraphDecompose(ModulePass):
    """Rewrite softmax, layer_norm and reduce_mean into keepdims sum/max/min reductions and elementwise ops."""

    name = "graph-decompose"

    direct_layout_elements: int = DIRECT_LAYOUT_ELEMENTS
    """An implicit GEMM's input or product of at most this many elements is transposed by the
    neighbouring kernel's index map, not by a shared-memory transpose kernel (0: never)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp):
                decompose_function(function, self.direct_layout_elements)
