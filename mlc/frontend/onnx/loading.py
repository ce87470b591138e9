"""Reading an ONNX model safely: bounded reads, bounded nesting, external data kept in its directory.

`read_model(source, limits)` turns a path, serialised bytes or a `ModelProto` into a `ModelProto`
whose every tensor holds its own data, and refuses with a clear `OnnxImportError`:

* **a file that is not a model**: missing, a directory or another non-regular file (a FIFO would
  block the read), empty, truncated or corrupt, or a message without a graph. A path is checked
  with `stat` before it is opened, and a file over `ImportLimits.max_model_bytes` (default 2 GiB,
  protobuf's own limit) is refused before a byte of it is read.
* **nesting**: subgraphs (If/Loop/Scan bodies) deeper than `max_subgraph_depth`, and local
  functions that call themselves (directly or through others) or nest calls deeper than that
  limit. The walk is iterative, so a hostile model cannot exhaust Python's stack; onnx's own
  inliner and shape inference (C++) only ever see bounded models.
* **tensor sizes**: any tensor (initializer, sparse part, attribute tensor, in any subgraph or
  function) whose dimensions multiply to more than `max_tensor_elements`, or that has a negative
  dimension, is refused from its dimensions alone, before anything is allocated; raw data whose
  length disagrees with the shape and type is refused too.
* **external data** (`data_location = EXTERNAL`): the data is read by this module, never by
  onnx. A location must be a relative path that stays inside the model's directory once `..` and
  symbolic links are resolved (absolute paths, traversal and links leaving the directory are
  refused); the file must be a regular file; `offset` and `length` must lie within it, and the
  length must be what the tensor's shape and type need. A model given as bytes or a `ModelProto`
  has no directory: its external references are refused. The bytes read become the tensor's
  `raw_data`, so nothing downstream (onnx's shape inference, `numpy_helper`, the reference
  evaluator) opens a file.

Nothing here (or anywhere in the importer) unpickles: models are protobuf, tensors raw bytes.

Limits: the total size of a model's external data is not bounded (each tensor is, by
`max_tensor_elements` and by its file); a file may change between the checks and the read (the
model's directory is trusted not to be modified concurrently).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass

import onnx
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper

from mlc.frontend.onnx.errors import ModelFileError, OnnxImportError, describe_node
from mlc.frontend.onnx.limits import ImportLimits, over_limit

# -- reading ---------------------------------------------------------------------------------------


@dataclass
class LoadedModel:
    """A parsed model, and where its external data lives."""

    model: ModelProto
    directory: str | None
    """The directory external data is read from (None for bytes and `ModelProto`s)."""


def read_model(source: str | os.PathLike[str] | ModelProto | bytes, limits: ImportLimits) -> ModelProto:
    """The model of `source`, checked and with its external data read (see the module docstring)."""
    loaded = _load(source, limits)
    check_nesting(loaded.model, limits)
    for tensor, what in model_tensors(loaded.model):
        check_tensor(tensor, what, limits, loaded.directory)
    return loaded.model


def _load(source: str | os.PathLike[str] | ModelProto | bytes, limits: ImportLimits) -> LoadedModel:
    if isinstance(source, ModelProto):
        if not source.HasField("graph"):
            raise OnnxImportError("the ModelProto has no graph")
        return LoadedModel(source, None)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if len(data) > limits.max_model_bytes:
            raise ModelFileError(
                f"the model bytes are {len(data)} bytes, {over_limit('max_model_bytes', limits.max_model_bytes)}"
            )
        return LoadedModel(_parse(data, "the bytes are", None), None)
    path = os.fspath(source)
    data = _read_file(path, limits)
    return LoadedModel(_parse(data, f"{path} is", os.path.splitext(path)[1]), os.path.dirname(os.path.abspath(path)))


def _read_file(path: str, limits: ImportLimits) -> bytes:
    try:
        status = os.stat(path)
    except OSError as error:
        reason = "no such file" if isinstance(error, FileNotFoundError) else error.strerror or str(error)
        raise ModelFileError(f"cannot read {path}: {reason}") from None
    if stat.S_ISDIR(status.st_mode):
        raise ModelFileError(f"cannot read {path}: it is a directory, not a model file")
    if not stat.S_ISREG(status.st_mode):
        raise ModelFileError(f"cannot read {path}: not a regular file")
    if status.st_size > limits.max_model_bytes:
        raise ModelFileError(
            f"{path} is {status.st_size} bytes, {over_limit('max_model_bytes', limits.max_model_bytes)}"
        )
    try:
        with open(path, "rb") as file:
            data = file.read(limits.max_model_bytes + 1)
    except OSError as error:
        raise ModelFileError(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > limits.max_model_bytes:  # it grew after the stat
        raise ModelFileError(f"{path} is larger than {over_limit('max_model_bytes', limits.max_model_bytes)}")
    return data


def _serialisation_format(extension: str | None) -> str | None:
    """onnx's format for a file extension (`.onnxtxt`, `.json`, ...); None means binary protobuf."""
    if not extension:
        return None
    try:
        from onnx import serialization
    except ImportError:  # onnx before 1.15 reads binary protobuf only
        return None
    return serialization.registry.get_format_from_file_extension(extension)


def _parse(data: bytes, subject: str, extension: str | None) -> ModelProto:
    """`subject` starts the messages: `model.onnx is`, `the bytes are`."""
    if not data:
        raise ModelFileError(f"{subject} not an ONNX model: it is empty")
    format_name = _serialisation_format(extension)
    try:
        if format_name in (None, "protobuf"):
            model = ModelProto()
            model.ParseFromString(data)
        else:
            model = onnx.load_model_from_string(data, format=format_name)
    except DecodeError as error:
        detail = " ".join(str(error).split())
        if "depth" in detail.lower():
            reason = f"its messages nest deeper than protobuf's parser allows ({detail})"
        else:
            reason = f"protobuf cannot parse it (is it truncated, corrupt or another format? {detail})"
        raise ModelFileError(f"{subject} not an ONNX model: {reason}") from None
    except Exception as error:  # the text formats' parsers raise their own errors
        raise ModelFileError(f"{subject} not an ONNX model: {' '.join(str(error).split())}") from None
    if not model.HasField("graph"):
        raise ModelFileError(f"{subject} not an ONNX model: it has no graph")
    field_path = _text_that_is_not_utf8(model)
    if field_path is not None:
        raise ModelFileError(f"{subject} not a valid ONNX model: {field_path} is not valid UTF-8 text")
    return model


def _is_repeated(descriptor: FieldDescriptor) -> bool:
    flag = getattr(descriptor, "is_repeated", None)  # protobuf 6 and newer
    return descriptor.label == descriptor.LABEL_REPEATED if flag is None else bool(flag)


def _text_that_is_not_utf8(model: ModelProto) -> str | None:
    """The path of a string field that is not UTF-8 (`graph.node[3].op_type`), or None.

    protobuf's upb parser hands such a field over as `bytes` instead of `str`, which neither
    onnx's C++ functions nor messages could take. Iterative: messages nest as deep as the parser
    allows."""
    pending: list[tuple[Message, str]] = [(model, "")]
    while pending:
        message, path = pending.pop()
        for descriptor in message.DESCRIPTOR.fields:  # not ListFields: it would copy tensors' raw data
            if descriptor.type not in (descriptor.TYPE_STRING, descriptor.TYPE_MESSAGE):
                continue
            name = f"{path}.{descriptor.name}" if path else descriptor.name
            if _is_repeated(descriptor):
                items = [(f"{name}[{i}]", item) for i, item in enumerate(getattr(message, descriptor.name))]
            elif descriptor.type == descriptor.TYPE_STRING or message.HasField(descriptor.name):
                items = [(name, getattr(message, descriptor.name))]
            else:
                continue  # an unset message: reading it would build defaults, recursively for TypeProto
            for where, item in items:
                if isinstance(item, bytes):
                    return where
                if isinstance(item, Message):
                    pending.append((item, where))
    return None


# -- nesting ---------------------------------------------------------------------------------------


def _subgraphs(node: NodeProto) -> Iterator[tuple[str, GraphProto]]:
    for attribute in node.attribute:
        if attribute.HasField("g"):
            yield attribute.name, attribute.g
        for graph in attribute.graphs:
            yield attribute.name, graph


def _walk_graphs(model: ModelProto) -> Iterator[tuple[GraphProto, int, str]]:
    """Every graph of the model (main graph, function bodies as graphs of nodes, subgraphs) with
    its depth and how messages place it (`""` for the main graph), without recursion.

    A subgraph is placed by the node holding it and by the outermost node (or function) it is
    within: ` (in attribute then_branch of node #0 (If) in subgraph 'b2', within node #3 'top' (If))`.
    """
    pending: list[tuple[GraphProto | onnx.FunctionProto, int, str, str]] = [(model.graph, 0, "", "")]
    for function in model.functions:
        name = f"local function {function.domain}.{function.name}"
        pending.append((function, 0, f" (in {name})", name))
    while pending:
        graph, depth, where, outermost = pending.pop()
        yield graph, depth, where  # type: ignore[misc]
        for index, node in enumerate(graph.node):
            holder = describe_node(node, index)
            for attribute, subgraph in _subgraphs(node):
                if depth == 0:
                    inner = f" (in attribute {attribute} of {holder}{' in ' + outermost if outermost else ''})"
                    pending.append((subgraph, 1, inner, outermost or holder))
                else:
                    inner = f" (in attribute {attribute} of {holder} in subgraph '{graph.name}', within {outermost})"
                    pending.append((subgraph, depth + 1, inner, outermost))


def check_nesting(model: ModelProto, limits: ImportLimits) -> None:
    """Refuses subgraphs nested deeper than the limit, and recursive or too deeply nested calls
    between local functions."""
    for graph, depth, where in _walk_graphs(model):
        if depth > limits.max_subgraph_depth:
            raise OnnxImportError(
                f"subgraph '{graph.name}'{where} is nested {depth} deep, "
                f"{over_limit('max_subgraph_depth', limits.max_subgraph_depth)}"
            )
    _check_function_calls(model, limits)


def _check_function_calls(model: ModelProto, limits: ImportLimits) -> None:
    """Local functions form a call graph; it must be acyclic and no deeper than the limit."""
    local = {(function.domain, function.name) for function in model.functions}
    if not local:
        return
    calls = {
        (function.domain, function.name): {
            (n.domain, n.op_type) for n in function.node if (n.domain, n.op_type) in local
        }
        for function in model.functions
    }
    depth: dict[tuple[str, str], int] = {}
    for root in calls:
        # Iterative depth-first search; `path` is the current chain of calls, for the message.
        path: list[tuple[str, str]] = [root]
        iterators = [iter(sorted(calls[root]))]
        while iterators:
            callee = next(iterators[-1], None)
            if callee is None:
                finished = path.pop()
                iterators.pop()
                depth[finished] = 1 + max((depth[c] for c in calls[finished]), default=0)
                continue
            if callee in path:
                chain = " -> ".join(f"{domain}.{name}" for domain, name in [*path[path.index(callee) :], callee])
                raise OnnxImportError(f"local function {callee[0]}.{callee[1]} calls itself ({chain})")
            if callee in depth:
                continue
            path.append(callee)
            iterators.append(iter(sorted(calls[callee])))
            if len(path) > limits.max_subgraph_depth:
                chain = " -> ".join(f"{domain}.{name}" for domain, name in path)
                raise OnnxImportError(
                    f"calls between local functions nest {len(path)} deep ({chain}), "
                    f"{over_limit('max_subgraph_depth', limits.max_subgraph_depth)}"
                )


# -- tensors ---------------------------------------------------------------------------------------


def _attribute_tensors(node: NodeProto, what: str) -> Iterator[tuple[TensorProto, str]]:
    for attribute in node.attribute:
        where = f"attribute {attribute.name} of {what}"
        if attribute.HasField("t"):
            yield attribute.t, where
        for position, tensor in enumerate(attribute.tensors):
            yield tensor, f"tensor #{position} of {where}"
        sparse = [attribute.sparse_tensor] if attribute.HasField("sparse_tensor") else []
        for sparse_tensor in [*sparse, *attribute.sparse_tensors]:
            yield sparse_tensor.values, f"the values of {where}"
            yield sparse_tensor.indices, f"the indices of {where}"


def model_tensors(model: ModelProto) -> Iterator[tuple[TensorProto, str]]:
    """Every tensor of the model that the importer or onnx may read, with how messages name it."""
    for graph, _, where in _walk_graphs(model):
        for tensor in getattr(graph, "initializer", ()):
            yield tensor, f"initializer '{tensor.name}'{where}"
        for sparse in getattr(graph, "sparse_initializer", ()):
            yield sparse.values, f"sparse initializer '{sparse.values.name}'{where}"
            yield sparse.indices, f"the indices of sparse initializer '{sparse.values.name}'{where}"
        for index, node in enumerate(graph.node):
            yield from _attribute_tensors(node, f"{describe_node(node, index)}{where}")


_SUB_BYTE_BITS = {"INT4": 4, "UINT4": 4, "FLOAT4E2M1": 4, "INT2": 2, "UINT2": 2}


def element_bits(data_type: int) -> int | None:
    """Bits per element of raw data of `data_type` (None for strings and unknown types)."""
    try:
        name = TensorProto.DataType.Name(data_type)
    except ValueError:
        return None
    if name in _SUB_BYTE_BITS:
        return _SUB_BYTE_BITS[name]
    if name in ("STRING", "UNDEFINED"):
        return None
    try:
        return 8 * helper.tensor_dtype_to_np_dtype(data_type).itemsize
    except (KeyError, TypeError, ValueError):
        return None


def check_tensor(tensor: TensorProto, what: str, limits: ImportLimits, directory: str | None) -> None:
    """Refuses an oversized or inconsistent tensor; reads its external data (see the docstring)."""
    if any(dim < 0 for dim in tensor.dims):
        raise OnnxImportError(f"{what} has a negative dimension ({_shape_text(tensor.dims)})")
    count = math.prod(tensor.dims)
    if count > limits.max_tensor_elements:
        raise OnnxImportError(
            f"{what} has {count} elements ({_shape_text(tensor.dims)}), "
            f"{over_limit('max_tensor_elements', limits.max_tensor_elements)}"
        )
    bits = element_bits(tensor.data_type)
    needed = None if bits is None else (count * bits + 7) // 8
    if tensor.data_location == TensorProto.EXTERNAL:
        tensor.raw_data = _read_external_data(tensor, what, directory, needed)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
    elif tensor.raw_data and needed is not None and len(tensor.raw_data) != needed:
        raise OnnxImportError(
            f"{what} holds {len(tensor.raw_data)} bytes of data, but its shape ({_shape_text(tensor.dims)}) "
            f"and type ({_type_name(tensor.data_type)}) need {needed}"
        )


def _shape_text(dims: object) -> str:
    return "x".join(map(str, dims)) or "a scalar"  # type: ignore[call-overload]


def _type_name(data_type: int) -> str:
    try:
        return TensorProto.DataType.Name(data_type).lower()
    except ValueError:
        return f"type #{data_type}"


# -- external data ---------------------------------------------------------------------------------


def _external_entries(tensor: TensorProto, what: str) -> tuple[str, int, int | None]:
    entries = {entry.key: entry.value for entry in tensor.external_data}
    location = entries.get("location", "")
    if not location:
        raise OnnxImportError(f"{what} keeps its data in an external file but gives no location")
    numbers: dict[str, int | None] = {}
    for key in ("offset", "length"):
        text = entries.get(key)
        if text is None:
            numbers[key] = None
        elif re.fullmatch(r"\d+", text.strip()):
            numbers[key] = int(text)
        else:
            raise OnnxImportError(f"{what}: external data {key} '{text}' is not a non-negative integer")
    return location, numbers["offset"] or 0, numbers["length"]


def external_data_path(location: str, directory: str, what: str) -> str:
    """The file `location` names, resolved; refuses anything outside `directory`."""
    inside = f"the model's directory ({directory})"
    if "\0" in location:
        raise OnnxImportError(f"{what}: external data location {location!r} contains a NUL character")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", location):
        raise OnnxImportError(
            f"{what}: external data location '{location}' is an absolute path; mlc reads external data "
            f"only from {inside}"
        )
    if os.path.normpath(location).split(os.sep)[0] == os.pardir:
        raise OnnxImportError(f"{what}: external data location '{location}' leaves {inside}")
    real_directory = os.path.realpath(directory)
    resolved = os.path.realpath(os.path.join(real_directory, location))
    if os.path.commonpath([resolved, real_directory]) != real_directory:
        raise OnnxImportError(f"{what}: external data location '{location}' resolves to {resolved}, outside {inside}")
    try:
        status = os.stat(resolved)
    except FileNotFoundError:
        raise OnnxImportError(f"{what}: external data file '{location}' does not exist in {directory}") from None
    except OSError as error:
        raise OnnxImportError(f"{what}: cannot read external data file '{location}': {error.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise OnnxImportError(f"{what}: external data location '{location}' is not a regular file")
    return resolved


def _read_external_data(tensor: TensorProto, what: str, directory: str | None, needed: int | None) -> bytes:
    location, offset, length = _external_entries(tensor, what)
    if directory is None:
        raise OnnxImportError(
            f"{what} keeps its data in the external file '{location}', which mlc reads only when the "
            "model is given as a path (so that the file is found beside it)"
        )
    path = external_data_path(location, directory, what)
    size = os.stat(path).st_size
    if offset > size:
        raise OnnxImportError(f"{what}: external data offset {offset} is beyond the end of '{location}' ({size} bytes)")
    if length is None:
        length = size - offset if needed is None else needed
    if offset + length > size:
        raise OnnxImportError(
            f"{what}: external data at offset {offset} with length {length} runs past the end of "
            f"'{location}' ({size} bytes)"
        )
    if needed is not None and length != needed:
        raise OnnxImportError(
            f"{what}: external data length {length} does not match its shape ({_shape_text(tensor.dims)}) "
            f"and type ({_type_name(tensor.data_type)}), which need {needed} bytes"
        )
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            return file.read(length)
    except OSError as error:
        raise OnnxImportError(f"{what}: cannot read external data file '{location}': {error.strerror}") from None
