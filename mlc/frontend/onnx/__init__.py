"""ONNX import: an ONNX model becomes a module with one `func.func` of graph ops.

    from mlc.frontend.onnx import import_model
    module = import_model("model.onnx")                       # or a ModelProto, or its bytes
    module = import_model(model, input_shapes={"x": [1, 3, 224, 224]}, entry_name="main")

The function takes the graph inputs (those without an initializer) as static tensors, in order,
and returns the graph outputs. Initializers and Constant nodes become `graph.constant`s (dense
attributes, built from the raw bytes, so large weights are cheap) where they are used as tensors.
The frontend maps, and leaves optimisation to the graph passes (`graph-fold-constants` folds the
transposes of weights, `graph-simplify` the reshapes of reshapes, and so on).

Preconditions: every tensor the function computes has a static shape after ONNX shape inference
(with data propagation); dynamic graph inputs can be fixed with `input_shapes`. Element types are
the graph spec's: float, float16, bfloat16, int32, int64 and bool. Inputs an op reads at import time
(shapes, axes, starts, split sizes) must be constants or computable from constants and static
shapes (`Shape -> Gather -> Concat` chains are evaluated).

How ONNX ops map (each handler module's docstring has the details):

| ONNX | graph |
| --- | --- |
| Add Sub Mul Div Pow | graph.add sub mul div pow (Pow's exponent cast to the base's type if they differ) |
| Max Min Sum (n inputs), Mean | chains of graph.max / min / add; Mean divides by n |
| Neg Abs Exp Log Sqrt Reciprocal Tanh Sigmoid Relu Erf Sin Cos | the graph op of the same name |
| Gelu (opset 20) | graph.gelu {approximate} |
| Clip, LeakyRelu, PRelu, Elu, HardSigmoid, HardSwish | graph.max / min / where / cmp compositions |
| Equal Less Greater LessOrEqual GreaterOrEqual | graph.cmp eq / lt / gt / le / ge |
| Where; Not And Or Xor | graph.where; graph.cmp / graph.where on i1 |
| IsNaN; IsInf | graph.cmp ne of x with itself; graph.cmp eq with ±inf (joined by graph.where) |
| Cast | graph.cast (nothing when the type is unchanged) |
| CastLike | graph.cast to the second input's element type (only its type is read) |
| MatMul | graph.matmul (1-D operands through graph.reshape) |
| Gemm | graph.transpose, graph.matmul, graph.mul (alpha, beta), graph.add |
| Transpose | graph.transpose |
| Reshape Flatten Squeeze Unsqueeze | graph.reshape |
| Expand | graph.broadcast |
| Concat; Slice; Split | graph.concat; graph.slice; one graph.slice per output |
| Softmax | graph.softmax (before opset 13: reshaped to 2-D around it) |
| LayerNormalization | graph.layer_norm (zero bias when absent); Mean, InvStdDev: graph.reduce_mean compositions |
| ReduceSum ReduceMean ReduceMax ReduceMin | graph.reduce_sum / mean / max / min |
| Softplus; ReduceL2; Trilu | log(exp + 1); sqrt(reduce_sum(x * x)); graph.where with a constant mask (`model_ops.py`) |
| Gather | constant indices: graph.slice pieces and graph.concat; run-time indices: one-hot graph.cmp, graph.matmul |
| Einsum (two operands) | graph.transpose, graph.reshape, graph.matmul (reduce_sum for labels summed away) |
| GlobalAveragePool GlobalMaxPool | graph.reduce_mean / reduce_max over H, W (keepdims) |
| BatchNormalization (inference) | graph.sub, mul, add, rsqrt with per-channel reshapes |
| Conv (1-D, 2-D) | graph.conv2d (1-D through graph.reshape) |
| MaxPool AveragePool (1-D, 2-D) | graph.max_pool2d / avg_pool2d (count_include_pad: graph.mul by a constant) |
| MaxPool AveragePool (3-D) | two graph.max_pool2d / avg_pool2d around graph.reshape |
| MaxPool AveragePool (dilated, N-D) | strided graph.slice combined by graph.max / add (average: graph.div by a constant) |
| MaxPool's Indices | strided graph.slice, graph.cmp gt and graph.where (first maximum in kernel order) |
| Identity, Dropout (inference, or training with ratio 0) | the input |
| Constant, Shape, ConstantOfShape; Range (constant bounds) | a constant |
| Resize (nearest, linear, cubic; constant scales/sizes) | graph.matmul by a constant interpolation matrix per resized axis, graph.transpose around it (`resize.py`) |

Opsets: each op's schema version at the model's opset is looked up and must be one its handler
implements, with each version's own attributes and inputs (e.g. ReduceMean's axes attribute up
to version 13, its axes input from 18; the `broadcast`/`axis` attributes of arithmetic before 7).
Every op above is mapped at every opset from 7 (or its first) to the newest the installed onnx
knows; the versions after opset 21 only add element types. A node of an op mlc does not map is
imported only when it does not depend on run-time data: it is evaluated at import time.

Errors are `OnnxImportError`s (an `mlc.errors.MlcError`) naming the node (index, name, op) and
the reason: an unsupported op or op version, attribute value or element type, a dynamic shape, a
non-constant input where a constant is needed; a malformed graph (a value written twice, read but
never written, a cycle, nodes out of order, too many or too few inputs, an attribute of the wrong
type). A file that cannot be read or is not a model raises `ModelFileError` (an `OnnxImportError`
whose message names the file).

Safe loading (`loading.py`, bounds in `ImportLimits`): the model file's size is checked before it
is read (2 GiB by default), every tensor's element count before anything is allocated (2**31),
the elements computed at import time all together (2**31), and the nesting of subgraphs and
local functions (16); external data is read only from regular files inside the model's directory
(no absolute paths, `..` or symbolic links leaving it) and within their bounds; nothing is
unpickled.

Not supported: control flow (If, Loop, Scan), sequences and optional values, ops of other domains,
training-mode BatchNormalization, training-mode Dropout with a ratio other than 0, 3-D convolution,
pooling windows that hold only padding, data-dependent shapes, models over 2 GB.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from mlc.frontend.onnx.errors import ModelFileError, OnnxImportError
from mlc.frontend.onnx.limits import ImportLimits

if TYPE_CHECKING:
    from onnx import ModelProto

__all__ = ["ImportLimits", "ModelFileError", "OnnxImportError", "import_model"]


def import_model(
    model: str | os.PathLike[str] | ModelProto | bytes,
    *,
    entry_name: str = "main",
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    limits: ImportLimits | None = None,
) -> ModuleOp:
    """The graph-dialect module of an ONNX model (a path, a `ModelProto` or its serialised bytes).

    `input_shapes` overrides the shapes of graph inputs by name (to fix dynamic dimensions);
    `limits` bounds what the model may make mlc read or allocate (default `ImportLimits()`).
    Raises `OnnxImportError` for anything mlc cannot import; the message names the node and why.
    """
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise OnnxImportError("importing ONNX models needs the 'onnx' package: pip install 'mlc[onnx]'") from None
    from mlc.frontend.onnx.importer import import_prepared
    from mlc.frontend.onnx.model import prepare

    return import_prepared(prepare(model, input_shapes, limits), entry_name)
