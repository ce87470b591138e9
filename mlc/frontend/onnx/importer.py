"""The ONNX importer: one `func.func` of graph ops from an ONNX graph (see the package docstring).

The import runs in three steps over the topologically ordered nodes:

1. **Liveness.** Walking backwards from the graph outputs, a node is imported when one of its
   outputs is used as a tensor. Inputs that a handler reads as constants (a Reshape's shape,
   reduction axes) are not tensor uses, so the `Shape -> Gather -> Concat` chains that compute
   them are not imported, and nodes that feed no output are skipped.
2. **Constants on demand.** A forward pass first marks the values that depend on run-time data
   (graph inputs, random ops; `Shape` reads only its input's static shape). When a handler asks
   for a constant input, its value is computed: initializers and Constant nodes are known, and
   the nodes computing the value are run, in graph order, with onnx's reference implementation of
   each node (no recursion: preprocessing chains of weights can be long). A value that depends on
   run-time data is an error naming the consumer and the graph input. The elements computed this
   way are counted against `ImportLimits.max_evaluated_elements`, by each node's inferred output
   shapes before it runs (and by its results where shapes are not inferred).
3. **Emission.** Each imported node is handed to its handler (`registry.mappings()`), which
   builds graph ops with `GraphBuilder`. Known constants (initializers, Constant nodes, computed
   values) become `graph.constant`s where they are first used as tensors. Every node output's type
   is checked against ONNX shape inference where that is static.

A node of an op mlc does not map (or not at this version) is still imported when it does not
depend on run-time data: it is evaluated at import time and becomes a constant (shape arithmetic,
a Gather from a constant table). Mapped ops on constants are imported as graph ops: folding them
is `graph-fold-constants`' job. Graph inputs that also have an initializer (old exporters list
weights as inputs) are constants, not function arguments.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import NodeProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.element_types import SUPPORTED_ELEMENT_TYPES, from_numpy_dtype
from mlc.frontend.graph_builder import GraphBuildError, GraphBuilder
from mlc.frontend.onnx.errors import OnnxImportError, describe_node
from mlc.frontend.onnx.limits import over_limit
from mlc.frontend.onnx.model import DEFAULT_DOMAINS, PreparedModel, static_shape, tensor_type
from mlc.frontend.onnx.node import Node, NotConstant
from mlc.frontend.onnx.registry import OpMapping, mappings

NONDETERMINISTIC_OPS = frozenset(
    {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"}
)
"""Ops never evaluated at import time even when their inputs are constants."""


_UNSUPPORTED = "which mlc does not support (supported: float32, float16, bfloat16, int32, int64, bool)"


def _supported_element_type(dtype: np.dtype) -> Attribute | None:
    try:
        element_type = from_numpy_dtype(dtype)
    except ValueError:
        return None
    return element_type if element_type in SUPPORTED_ELEMENT_TYPES else None


def _dtype_name(array: np.ndarray) -> str:
    """numpy's name of the element type, except `string` for ONNX strings (numpy objects)."""
    return "string" if array.dtype.kind in "OSU" else str(array.dtype)


def value_name_hint(name: str) -> str | None:
    """An SSA name for ONNX value `name` (`/layer1/Conv_output_0` -> `_layer1_Conv_output_0`)."""
    hint = re.sub(r"[^\w$.-]", "_", name)
    if not hint:
        return None
    return hint if re.match(r"[A-Za-z_$.-]", hint) else f"v{hint}"


class GraphImporter:
    """Imports the main graph of a prepared model into one `func.func`."""

    def __init__(self, prepared: PreparedModel):
        self.graph = prepared.model.graph
        self.opsets = prepared.opsets
        self.inference_note = prepared.inference_note
        self.limits = prepared.limits
        self.evaluated_elements = 0
        """Elements of the values computed at import time so far (bounded by the limits)."""
        self.mappings = mappings()
        self.types: dict[str, onnx.TypeProto] = {}
        for value_info in [*self.graph.input, *self.graph.value_info, *self.graph.output]:
            if value_info.type.WhichOneof("value") is not None:
                self.types.setdefault(value_info.name, value_info.type)
        self.initializers = {tensor.name: tensor for tensor in self.graph.initializer}
        self.input_names = [value.name for value in self.graph.input if value.name not in self.initializers]
        self.producers: dict[str, int] = {}
        for index, node in enumerate(self.graph.node):
            for output in node.output:
                if output:
                    self.producers[output] = index
        self.run_time_sources = self.trace_run_time_sources()
        self.known: dict[str, np.ndarray] = {}
        """Values known at import time (initializers, Constant nodes, evaluated nodes)."""
        self.values: dict[str, SSAValue] = {}
        """Values materialised as graph values."""
        self.tensor_uses: set[str] = set()
        self.block = Block()
        self.builder = GraphBuilder(self.block)

    # -- the function ------------------------------------------------------------------------

    def import_function(self, entry_name: str) -> func.FuncOp:
        if self.graph.sparse_initializer:
            raise OnnxImportError("sparse initializers are not supported")
        if not self.graph.output:
            raise OnnxImportError("the graph has no outputs")
        for name in self.input_names:
            if name not in self.types:
                raise OnnxImportError(f"graph input '{name}' has no type")
            argument_type = tensor_type(self.types[name], f"graph input '{name}'")
            argument = self.block.insert_arg(argument_type, len(self.block.args))
            argument.name_hint = value_name_hint(name)
            self.values[name] = argument
        imported = self.mark_imported_nodes()
        for index, node in enumerate(self.graph.node):
            if imported[index]:
                self.import_node(node, index)
        results = [self.value(output.name, None) for output in self.graph.output]
        for output, result in zip(self.graph.output, results):
            self.check_declared_output(output, result)
        self.block.add_op(func.ReturnOp(*results))
        function_type = ([argument.type for argument in self.block.args], [result.type for result in results])
        return func.FuncOp(entry_name, function_type, Region(self.block))

    def check_declared_output(self, output: onnx.ValueInfoProto, result: SSAValue) -> None:
        declared = self.static_declared_type(output)
        if declared is not None and declared != result.type:
            raise OnnxImportError(f"graph output '{output.name}' is declared as {declared} but computes {result.type}")

    @staticmethod
    def static_declared_type(value_info: onnx.ValueInfoProto) -> TensorType | None:
        try:
            return tensor_type(value_info.type, value_info.name)
        except OnnxImportError:
            return None  # no or a dynamic declaration: the imported type is the static one

    def mark_imported_nodes(self) -> list[bool]:
        """Which nodes produce a value used as a tensor (step 1 of the module docstring)."""
        self.tensor_uses = {output.name for output in self.graph.output}
        imported = [False] * len(self.graph.node)
        for index in reversed(range(len(self.graph.node))):
            node = self.graph.node[index]
            if not any(output in self.tensor_uses for output in node.output if output):
                continue
            imported[index] = True
            mapping = self.supported_mapping(node)
            if mapping is None and self.can_evaluate(node):
                continue  # evaluated at import time: its inputs are read as constants
            for position, name in enumerate(node.input):
                if name and not (mapping and position in mapping.constant_inputs | mapping.shape_only_inputs):
                    self.tensor_uses.add(name)
        return imported

    def is_used(self, name: str) -> bool:
        return name in self.tensor_uses

    # -- nodes -------------------------------------------------------------------------------

    def import_node(self, proto: NodeProto, index: int) -> None:
        description = describe_node(proto, index)
        mapping = self.supported_mapping(proto)
        if mapping is None:
            if not self.can_evaluate(proto):
                raise OnnxImportError(self.unsupported_reason(proto), description)
            for output in proto.output:
                if output:
                    self.constant_value(output)
            return
        version = self.schema_version(proto)
        assert version is not None  # supported_mapping found the version among the mapped ones
        node = Node(self, proto, index, version)
        try:
            results = mapping.handler(node)
        except GraphBuildError as error:
            raise node.error(f"the graph ops built for it do not verify: {error}") from None
        self.record_results(node, results)

    def schema_version(self, proto: NodeProto) -> int | None:
        """The `since_version` of the node's op at the model's opset (None if it has none)."""
        try:
            return onnx.defs.get_schema(proto.op_type, self.opsets[""], "").since_version
        except onnx.defs.SchemaError:
            return None

    def supported_mapping(self, proto: NodeProto) -> OpMapping | None:
        """The handler's mapping when mlc maps this op at this version, else None."""
        if proto.domain not in DEFAULT_DOMAINS or proto.op_type not in self.mappings:
            return None
        mapping = self.mappings[proto.op_type]
        return mapping if self.schema_version(proto) in mapping.versions else None

    def unsupported_reason(self, proto: NodeProto) -> str:
        if proto.domain not in DEFAULT_DOMAINS:
            return f"op {proto.op_type} of domain '{proto.domain}' is not supported (mlc maps the default ONNX domain)"
        if proto.op_type not in self.mappings:
            suggestions = difflib.get_close_matches(proto.op_type, list(self.mappings), n=2, cutoff=0.8)
            hint = f" (did you mean {' or '.join(suggestions)}?)" if suggestions else ""
            return f"op {proto.op_type} is not supported by mlc's ONNX importer (opset {self.opsets['']}){hint}"
        version = self.schema_version(proto)
        if version is None:
            return f"op {proto.op_type} does not exist in opset {self.opsets['']}"
        versions = ", ".join(map(str, self.mappings[proto.op_type].versions))
        return (
            f"{proto.op_type} version {version} (selected by opset {self.opsets['']}) is not supported; "
            f"mlc maps versions {versions}"
        )

    def record_results(self, node: Node, results: Sequence[SSAValue | np.ndarray | None]) -> None:
        for position, name in enumerate(node.proto.output):
            if not name or not self.is_used(name):
                continue
            result = results[position] if position < len(results) else None
            if result is None:
                raise node.error(f"output #{position} '{name}' is not supported")
            if isinstance(result, np.ndarray):
                self.known[name] = result
                continue
            expected = self.static_inferred_type(name)
            if expected is not None and expected != result.type:
                raise node.error(
                    f"mlc built output '{name}' as {result.type} but ONNX shape inference gives {expected} "
                    "(a bug in mlc's importer)"
                )
            if result.name_hint is None:
                result.name_hint = value_name_hint(name)
            self.values[name] = result

    # -- values ------------------------------------------------------------------------------

    def value(self, name: str, user: Node | None) -> SSAValue:
        """`name` as a graph value; constants become a `graph.constant` on first use."""
        if name in self.values:
            return self.values[name]
        where = user.description if user else None
        if name in self.known or name in self.initializers:
            array = self.constant_value(name)
            element_type = _supported_element_type(array.dtype)
            if element_type is None:
                raise OnnxImportError(f"constant '{name}' has element type {_dtype_name(array)}, {_UNSUPPORTED}", where)
            try:
                result = self.builder.constant(array, element_type)
            except GraphBuildError as error:
                raise OnnxImportError(f"constant '{name}' cannot be imported: {error}", where) from None
            result.name_hint = value_name_hint(name)
            self.values[name] = result
            return result
        raise OnnxImportError(f"value '{name}' is not computed (a bug in mlc's importer)", where)

    def value_type(self, name: str, user: Node) -> TensorType:
        if name in self.values:
            value_type = self.values[name].type
            assert isinstance(value_type, TensorType)
            return value_type
        if name in self.known or name in self.initializers:
            array = self.constant_value(name)
            element_type = _supported_element_type(array.dtype)
            if element_type is None:
                raise user.error(f"constant '{name}' has element type {_dtype_name(array)}, {_UNSUPPORTED}")
            return TensorType(element_type, array.shape)
        return self.inferred_type(name, user)

    def static_inferred_type(self, name: str) -> TensorType | None:
        try:
            return tensor_type(self.types[name], name) if name in self.types else None
        except OnnxImportError:
            return None

    def inferred_type(self, name: str, user: Node | None) -> TensorType:
        where = user.description if user else None
        if name not in self.types:
            reason = f"ONNX shape inference gives no type for '{name}'"
            if self.inference_note:
                reason += f"; {self.inference_note}"
            raise OnnxImportError(reason, where)
        try:
            return tensor_type(self.types[name], f"value '{name}'")
        except OnnxImportError as error:
            raise OnnxImportError(error.reason, where) from None

    # -- constants (step 2 of the module docstring) --------------------------------------------

    def trace_run_time_sources(self) -> dict[str, str]:
        """For each value not computable at import time, what it depends on (for messages)."""
        sources = {name: f"the data of graph input '{name}'" for name in self.input_names}
        for index, node in enumerate(self.graph.node):
            if _reads_shape_only(node):
                continue
            if node.op_type in NONDETERMINISTIC_OPS or (not node.input and node.op_type != "Constant"):
                source: str | None = f"the run-time values of {describe_node(node, index)}"
            else:
                source = next((sources[name] for name in node.input if name in sources), None)
            if source is not None:
                for output in node.output:
                    sources[output] = source
        return sources

    def can_evaluate(self, proto: NodeProto) -> bool:
        """Whether a node's outputs can be computed at import time."""
        return bool(proto.input) and not any(output in self.run_time_sources for output in proto.output if output)

    def constant_value(self, name: str) -> np.ndarray:
        """The value of `name` computed at import time; raises `NotConstant` when it depends on data."""
        if name in self.known:
            return self.known[name]
        if name in self.initializers:
            try:
                value = numpy_helper.to_array(self.initializers[name])
            except Exception as error:  # external data that was not loaded, a corrupt tensor
                raise OnnxImportError(f"initializer '{name}' cannot be read: {error}") from None
            self.known[name] = value
            return value
        if name in self.run_time_sources:
            problem = NotConstant(self.run_time_sources[name])
            if name in self.producers:
                problem.through.append(describe_node(self.graph.node[self.producers[name]], self.producers[name]))
            raise problem
        if name not in self.producers:
            raise OnnxImportError(f"value '{name}' is not defined by any node, initializer or graph input")
        for index in self.nodes_computing(name):
            self.evaluate_node(index)
        return self.known[name]

    def nodes_computing(self, name: str) -> list[int]:
        """The nodes that compute `name` from known values, in graph order (no recursion: the
        chains of weight preprocessing can be long)."""
        needed: set[int] = set()
        pending = [name]
        while pending:
            value = pending.pop()
            if value in self.known or value in self.initializers or value not in self.producers:
                continue
            index = self.producers[value]
            if index in needed:
                continue
            needed.add(index)
            node = self.graph.node[index]
            if not _reads_shape_only(node):
                pending.extend(input_name for input_name in node.input if input_name)
        return sorted(needed)

    def evaluate_node(self, index: int) -> None:
        node = self.graph.node[index]
        if _reads_shape_only(node):
            # Only the input's shape is read: a zero-strided stand-in of that shape will do.
            shape = self.static_shape_of(node.input[0], describe_node(node, index))
            inputs: list[np.ndarray | None] = [np.broadcast_to(np.float32(0), shape)]
        else:
            inputs = [self.constant_value(name) if name else None for name in node.input]
        inferred = sum(self.inferred_element_count(name) for name in node.output if name)
        self.count_evaluated_elements(inferred, node, index)  # refused before allocating
        results = self.evaluate(node, index, inputs)
        # Outputs without a static inferred type are only counted once computed.
        self.count_evaluated_elements(sum(value.size for value in results) - inferred, node, index)
        for output, value in zip(node.output, results):
            if output:
                self.known[output] = value

    def inferred_element_count(self, name: str) -> int:
        """The element count of `name`'s static inferred type, 0 when it has none."""
        try:
            return math.prod(static_shape(self.types[name], name)) if name in self.types else 0
        except OnnxImportError:
            return 0

    def count_evaluated_elements(self, count: int, node: NodeProto, index: int) -> None:
        """Adds `count` to the elements computed at import time; refuses to pass the limit."""
        self.evaluated_elements += count
        limit = self.limits.max_evaluated_elements
        if self.evaluated_elements > limit:
            raise OnnxImportError(
                f"evaluating it at import time would bring the values computed at import time to "
                f"{self.evaluated_elements} elements, {over_limit('max_evaluated_elements', limit)}",
                describe_node(node, index),
            )

    def static_shape_of(self, name: str, where: str) -> tuple[int, ...]:
        if name in self.values:
            return tuple(self.values[name].type.get_shape())  # type: ignore[attr-defined]
        if name in self.known or name in self.initializers:
            return self.constant_value(name).shape
        if name not in self.types:
            raise OnnxImportError(f"the shape of '{name}' is not known statically", where)
        try:
            return static_shape(self.types[name], f"value '{name}'")
        except OnnxImportError as error:
            raise OnnxImportError(error.reason, where) from None

    def evaluate(self, proto: NodeProto, index: int, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        """Runs one node with onnx's reference implementation."""
        from onnx.reference import ReferenceEvaluator

        feeds = {name: value for name, value in zip(proto.input, inputs) if name and value is not None}
        graph_inputs = [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
            for name, value in feeds.items()
        ]
        graph_outputs = [helper.make_empty_tensor_value_info(name) for name in proto.output if name]
        graph = helper.make_graph([proto], "constant", graph_inputs, graph_outputs)
        try:
            evaluator = ReferenceEvaluator(graph, opsets=dict(self.opsets))
            results = evaluator.run(None, feeds)
        except Exception as error:
            reason = f"cannot be evaluated at import time: {type(error).__name__}: {error}"
            raise OnnxImportError(reason, describe_node(proto, index)) from None
        outputs = iter(np.asarray(result) for result in results)
        return [next(outputs) if name else np.zeros(0) for name in proto.output]


def _reads_shape_only(node: NodeProto) -> bool:
    return node.op_type == "Shape" and node.domain in DEFAULT_DOMAINS


def import_prepared(prepared: PreparedModel, entry_name: str) -> ModuleOp:
    importer = GraphImporter(prepared)
    function = importer.import_function(entry_name)
    module = ModuleOp([function])
    try:
        module.verify()
    except VerifyException as error:
        raise OnnxImportError(f"the imported module does not verify (a bug in mlc's importer): {error}") from None
    return module
