"""Reading an ONNX model: loading, fixing input shapes, shape inference, and element types.

`prepare(source, input_shapes)` returns the model with local functions inlined and every value's
type inferred (`onnx.shape_inference.infer_shapes` with data propagation, so shapes computed by
`Shape -> Gather -> Concat` chains are known). Strict inference is tried first; when it fails
(an op it cannot infer, an inconsistent graph) the lenient result is used and its error message
is kept, to be shown when a value mlc needs has no inferred type.

`tensor_type(type_proto, what)` turns an inferred type into a static `TensorType`, or raises
`OnnxImportError` for a dynamic or unknown shape or an element type outside the graph spec's
f32, f16, bf16, i32, i64 and i1 (ONNX bool).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import onnx
from onnx import ModelProto, TensorProto, TypeProto
from xdsl.dialects.builtin import TensorType, bf16, f16, f32, i1, i32, i64
from xdsl.ir import Attribute

from mlc.frontend.onnx.errors import OnnxImportError

ELEMENT_TYPES: dict[int, Attribute] = {
    TensorProto.FLOAT: f32,
    TensorProto.FLOAT16: f16,
    TensorProto.BFLOAT16: bf16,
    TensorProto.INT32: i32,
    TensorProto.INT64: i64,
    TensorProto.BOOL: i1,
}
"""ONNX tensor element types and the graph element types they become."""

DEFAULT_DOMAINS = ("", "ai.onnx")


def data_type_name(data_type: int) -> str:
    try:
        return TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"type #{data_type}"


def element_type(data_type: int, what: str) -> Attribute:
    """The graph element type of ONNX `data_type`; `what` names the value in the message."""
    if data_type not in ELEMENT_TYPES:
        raise OnnxImportError(
            f"{what} has element type {data_type_name(data_type)}, which mlc does not support "
            "(supported: float, float16, bfloat16, int32, int64, bool)"
        )
    return ELEMENT_TYPES[data_type]


def static_shape(type_proto: TypeProto, what: str) -> tuple[int, ...]:
    """The static shape of a tensor type; raises for a missing or dynamic dimension."""
    if type_proto.WhichOneof("value") != "tensor_type":
        raise OnnxImportError(f"{what} is not a tensor (mlc imports tensors only)")
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        raise OnnxImportError(f"{what} has an unknown rank; mlc needs static shapes")
    shape = []
    for axis, dim in enumerate(tensor.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            shape.append(dim.dim_value)
            continue
        symbol = f" '{dim.dim_param}'" if dim.HasField("dim_param") else ""
        raise OnnxImportError(
            f"{what} has a dynamic dimension{symbol} (dimension {axis}); mlc needs static shapes "
            "(give them with input_shapes= or --input-shape NAME=2x3x...)"
        )
    return tuple(shape)


def tensor_type(type_proto: TypeProto, what: str) -> TensorType:
    shape = static_shape(type_proto, what)
    return TensorType(element_type(type_proto.tensor_type.elem_type, what), shape)


@dataclass
class PreparedModel:
    model: ModelProto
    """The model with local functions inlined and inferred value types."""
    opsets: dict[str, int]
    """Opset version per domain ("" for the default domain)."""
    inference_error: str | None
    """What strict shape inference reported, when it failed."""


def load(source: str | os.PathLike[str] | ModelProto | bytes) -> ModelProto:
    if isinstance(source, ModelProto):
        return source
    if isinstance(source, bytes):
        try:
            return onnx.load_model_from_string(source)
        except Exception as error:  # protobuf's DecodeError and friends
            raise OnnxImportError(f"the bytes are not an ONNX model: {error}") from None
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise OnnxImportError(f"cannot read {path}: no such file")
    try:
        return onnx.load(path)
    except OSError as error:
        raise OnnxImportError(f"cannot read {path}: {error.strerror or error}") from None
    except Exception as error:
        raise OnnxImportError(f"{path} is not an ONNX model: {error}") from None


def _set_input_shapes(model: ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> None:
    """Overrides the shapes of graph inputs (typically to fix dynamic batch dimensions)."""
    inputs = {value.name: value for value in model.graph.input}
    for name, shape in input_shapes.items():
        if name not in inputs:
            known = ", ".join(f"'{n}'" for n in inputs) or "none"
            raise OnnxImportError(f"input_shapes names '{name}', which is not a graph input (inputs: {known})")
        tensor = inputs[name].type.tensor_type
        tensor.ClearField("shape")
        for size in shape:
            tensor.shape.dim.add().dim_value = int(size)
    # Types inferred for the old shapes would contradict the new ones.
    del model.graph.value_info[:]


def opset_versions(model: ModelProto) -> dict[str, int]:
    opsets: dict[str, int] = {}
    for opset in model.opset_import:
        domain = "" if opset.domain in DEFAULT_DOMAINS else opset.domain
        opsets[domain] = opset.version
    if "" not in opsets:
        raise OnnxImportError("the model imports no opset of the default ONNX domain")
    newest = onnx.defs.onnx_opset_version()
    if opsets[""] > newest:
        raise OnnxImportError(
            f"the model uses opset {opsets['']}, newer than the installed onnx package knows ({newest}); "
            "upgrade onnx"
        )
    return opsets


def prepare(
    source: str | os.PathLike[str] | ModelProto | bytes,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
) -> PreparedModel:
    model = load(source)
    opsets = opset_versions(model)
    if model.functions or input_shapes:
        model = ModelProto.FromString(model.SerializeToString())
    if model.functions:
        try:
            from onnx import inliner
        except ImportError:
            raise OnnxImportError("the model has local functions, which need onnx 1.16 or newer to inline") from None
        model = inliner.inline_local_functions(model)
    if input_shapes:
        _set_input_shapes(model, input_shapes)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
        return PreparedModel(inferred, opsets, None)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        strict_error = " ".join(str(error).split())
    except ValueError as error:  # protobuf size limits: models over 2 GB
        raise OnnxImportError(f"ONNX shape inference cannot read the model: {error}") from None
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as error:
        raise OnnxImportError(f"ONNX shape inference failed: {strict_error}; {error}") from None
    return PreparedModel(inferred, opsets, strict_error)
