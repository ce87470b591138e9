"""Preparing an ONNX model: loading, fixing input shapes, checks, shape inference, element types.

`prepare(source, input_shapes, limits)` reads the model safely (`loading`: bounded sizes and
nesting, external data kept in the model's directory), inlines local functions, checks the
graph's structure (`structure`: SSA definitions, uses, topological order, op signatures) and
infers every value's type with `onnx.shape_inference.infer_shapes`:

* first without data propagation, which is enough for graphs of static shapes; when a node
  output is left without a static type, again with it (so shapes computed by
  `Shape -> Gather -> Concat` chains are known), unless the 1-D values it would have to hold are
  too long (`MAX_PROPAGATED_ELEMENTS`: onnx holds each element as a protobuf message, so a long
  1-D tensor in a tiny model would exhaust memory);
* strict inference is tried first; when it fails (an op it cannot infer, an inconsistent graph)
  the lenient result is used and its error message is kept, to be shown when a value mlc needs
  has no inferred type;
* every graph input and inferred value is checked against `ImportLimits.max_tensor_elements`
  before the importer allocates anything (a ConstantOfShape of 2**40 elements is refused by its
  inferred shape, not when it is evaluated).

`tensor_type(type_proto, what)` turns an inferred type into a static `TensorType`, or raises
`OnnxImportError` for a dynamic or unknown shape or an element type outside the graph spec's
f32, f16, bf16, i32, i64 and i1 (ONNX bool).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import onnx
from onnx import ModelProto, TensorProto, TypeProto
from xdsl.dialects.builtin import TensorType, bf16, f16, f32, i1, i32, i64
from xdsl.ir import Attribute

from mlc.frontend.onnx.errors import DEFAULT_DOMAINS, OnnxImportError, describe_node
from mlc.frontend.onnx.limits import ImportLimits, over_limit
from mlc.frontend.onnx.loading import read_model
from mlc.frontend.onnx.structure import check_graph

ELEMENT_TYPES: dict[int, Attribute] = {
    TensorProto.FLOAT: f32,
    TensorProto.FLOAT16: f16,
    TensorProto.BFLOAT16: bf16,
    TensorProto.INT32: i32,
    TensorProto.INT64: i64,
    TensorProto.BOOL: i1,
}
"""ONNX tensor element types and the graph element types they become."""


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
        if dim.HasField("dim_value"):
            raise OnnxImportError(f"{what} has a negative dimension {dim.dim_value} (dimension {axis})")
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
    inference_note: str | None
    """Why shape inference may have left types unknown: what strict inference reported when it
    failed, or why data propagation was skipped."""
    limits: ImportLimits
    """The bounds the import runs under."""


def _set_input_shapes(model: ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> None:
    """Overrides the shapes of graph inputs (typically to fix dynamic batch dimensions)."""
    inputs = {value.name: value for value in model.graph.input}
    for name, shape in input_shapes.items():
        if name not in inputs:
            known = ", ".join(f"'{n}'" for n in inputs) or "none"
            raise OnnxImportError(f"input_shapes names '{name}', which is not a graph input (inputs: {known})")
        if any(int(size) < 0 for size in shape):
            raise OnnxImportError(f"input_shapes gives '{name}' a negative dimension: {list(shape)}")
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
        if domain in opsets:
            raise OnnxImportError(f"the model imports the opset of domain '{domain or 'ai.onnx'}' twice")
        opsets[domain] = opset.version
    if "" not in opsets:
        raise OnnxImportError("the model imports no opset of the default ONNX domain")
    if opsets[""] < 1:
        raise OnnxImportError(f"the model imports opset {opsets['']} of the default ONNX domain; opsets start at 1")
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
    limits: ImportLimits | None = None,
) -> PreparedModel:
    limits = limits or ImportLimits()
    model = read_model(source, limits)
    opsets = opset_versions(model)
    if model.functions or input_shapes:
        model = ModelProto.FromString(model.SerializeToString())
    if model.functions:
        try:
            from onnx import inliner
        except ImportError:
            raise OnnxImportError("the model has local functions, which need onnx 1.16 or newer to inline") from None
        try:
            model = inliner.inline_local_functions(model)
        except Exception as error:  # onnx's checks of the functions
            reason = " ".join(str(error).split())
            raise OnnxImportError(f"the model's local functions cannot be inlined: {reason}") from None
    if input_shapes:
        _set_input_shapes(model, input_shapes)
    check_graph(model.graph, opsets)
    inferred, note = infer_types(model, opsets, limits)
    return PreparedModel(inferred, opsets, note, limits)


# -- shape inference -------------------------------------------------------------------------------

MAX_PROPAGATED_ELEMENTS = 2**20
"""How many elements of 1-D values ONNX's data propagation may be given in all. It holds each
element of a 1-D input of a propagating op (Cast, Add, Gather, Concat, ...) as a protobuf
dimension of about 150 bytes, whatever the value's type, so a long 1-D tensor in a tiny model
would exhaust memory; shape tensors, which data propagation is for, have a few elements."""


def infer_types(model: ModelProto, opsets: Mapping[str, int], limits: ImportLimits) -> tuple[ModelProto, str | None]:
    """The model with inferred value types, and why some may be missing (see `PreparedModel`).

    Inference runs first without data propagation; it runs again with it only when a node output
    is left without a static type and data propagation is bounded (`MAX_PROPAGATED_ELEMENTS`).
    Every inferred type is checked against `max_tensor_elements` before anything uses it.
    """
    inferred, note = _infer(model, data_prop=False)
    check_value_sizes(inferred.graph, limits)
    if _node_outputs_are_static(inferred.graph):
        return inferred, note
    long_value = _too_long_for_data_propagation(inferred.graph, opsets[""])
    if long_value is not None:
        skipped = f"ONNX data propagation was skipped: {long_value}"
        return inferred, f"{note}; {skipped}" if note else skipped
    inferred, note = _infer(model, data_prop=True)
    check_value_sizes(inferred.graph, limits)
    return inferred, note


def _infer(model: ModelProto, data_prop: bool) -> tuple[ModelProto, str | None]:
    """Strict inference, or when it fails the lenient one with the strict one's message."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=data_prop)
        return inferred, None
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        strict_error = " ".join(str(error).split())
    except ValueError as error:  # protobuf size limits: models over 2 GB
        raise OnnxImportError(f"ONNX shape inference cannot read the model: {error}") from None
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=data_prop)
    except Exception as error:
        raise OnnxImportError(f"ONNX shape inference failed: {strict_error}; {error}") from None
    return inferred, f"strict shape inference reported: {strict_error}"


def _typed_values(graph: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    return [*graph.input, *graph.value_info, *graph.output]


def _node_outputs_are_static(graph: onnx.GraphProto) -> bool:
    static = set()
    for value in _typed_values(graph):
        try:
            static_shape(value.type, value.name)
        except OnnxImportError:
            continue
        static.add(value.name)
    return all(name in static for node in graph.node for name in node.output if name)


def _too_long_for_data_propagation(graph: onnx.GraphProto, opset: int) -> str | None:
    """What makes data propagation unbounded (a description), or None when it is bounded.

    What onnx holds for an input (`DataPropagationContextImpl::getInputData`): an initializer's
    values when it is a 1-D integer tensor (none for other initializers), else one dimension per
    element of any 1-D value of static length."""
    integers = (TensorProto.INT32, TensorProto.INT64)
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    lengths = {name: tensor.dims[0] for name, tensor in initializers.items() if len(tensor.dims) == 1}
    lengths = {name: length for name, length in lengths.items() if initializers[name].data_type in integers}
    for value in _typed_values(graph):
        dims = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []
        if value.name not in initializers and len(dims) == 1 and dims[0].HasField("dim_value"):
            lengths[value.name] = dims[0].dim_value
    total = 0
    for node in graph.node:
        if node.domain not in DEFAULT_DOMAINS or not _propagates_data(node.op_type, opset):
            continue
        for name in node.input:
            total += lengths.get(name, 0)
            if total > MAX_PROPAGATED_ELEMENTS:
                return (
                    f"the 1-D inputs of its ops (here '{name}' of {node.op_type}) hold more than "
                    f"{MAX_PROPAGATED_ELEMENTS} elements"
                )
    return None


def _propagates_data(op_type: str, opset: int) -> bool:
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except onnx.defs.SchemaError:
        return False
    return bool(getattr(schema, "has_data_propagation_function", True))


def check_value_sizes(graph: onnx.GraphProto, limits: ImportLimits) -> None:
    """Refuses a graph input or inferred value with more than `max_tensor_elements` elements (a
    lower bound when some dimensions are unknown), before any is allocated."""
    producers = {name: index for index, node in enumerate(graph.node) for name in node.output if name}
    inputs = {value.name for value in graph.input}
    for value in _typed_values(graph):
        if not value.type.HasField("tensor_type") or not value.type.tensor_type.HasField("shape"):
            continue
        dims = [dim.dim_value if dim.HasField("dim_value") else None for dim in value.type.tensor_type.shape.dim]
        count = math.prod(1 if dim is None else dim for dim in dims)
        if count <= limits.max_tensor_elements:
            continue
        raise OnnxImportError(
            f"{_describe_value(graph, value.name, inputs, producers)} has {'at least ' if None in dims else ''}"
            f"{count} elements ({'x'.join('?' if dim is None else str(dim) for dim in dims)}), "
            f"{over_limit('max_tensor_elements', limits.max_tensor_elements)}"
        )


def _describe_value(graph: onnx.GraphProto, name: str, inputs: set[str], producers: Mapping[str, int]) -> str:
    """`graph input 'x'`, `value 'c' (output #0 of node #2 'fill' (ConstantOfShape))`, `value 'v'`."""
    if name in inputs:
        return f"graph input '{name}'"
    if name not in producers:
        return f"value '{name}'"
    index = producers[name]
    position = list(graph.node[index].output).index(name)
    return f"value '{name}' (output #{position} of {describe_node(graph.node[index], index)})"
