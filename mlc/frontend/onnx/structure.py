"""Checks of an ONNX graph's structure, run before shape inference and import.

`check_graph(graph, opsets)` refuses, with an `OnnxImportError` naming the node(s) and value:

* **definitions**: a value defined twice (two nodes writing the same output, a node writing a
  graph input or an initializer, a node listing an output twice, a graph input or initializer
  declared twice). ONNX graphs are in SSA form; a second writer must not silently win.
* **uses**: a node input that no graph input, initializer or node defines, and a graph output
  that nothing computes.
* **order**: a node reading a value that a later node writes. The graph is searched for a cycle
  (iteratively, over the node-to-producer edges), and the message either spells out the cycle or,
  when there is none, says that ONNX lists nodes in topological order.
* **signatures** (ops of the default domain that onnx knows at the model's opset): the number of
  inputs and outputs against the op's schema, required inputs left empty, attributes that the
  schema does not define, of the wrong type, missing when required, or given twice.

Only the main graph is checked: subgraphs of control-flow ops may read values of the enclosing
graph, and mlc imports no control flow (it may evaluate such nodes at import time, with onnx's
reference evaluator, which checks them itself).
"""

from __future__ import annotations

from collections.abc import Mapping

import onnx
from onnx import AttributeProto, GraphProto, NodeProto

from mlc.frontend.onnx.errors import DEFAULT_DOMAINS, OnnxImportError, describe_node


def check_graph(graph: GraphProto, opsets: Mapping[str, int]) -> None:
    producers = _check_definitions(graph)
    _check_uses(graph, producers)
    _check_order(graph, producers)
    for index, node in enumerate(graph.node):
        if node.domain in DEFAULT_DOMAINS:
            _check_signature(node, index, opsets[""])


# -- definitions and uses --------------------------------------------------------------------------


def _check_definitions(graph: GraphProto) -> dict[str, int]:
    """Each value's producing node (by index); refuses values defined twice."""
    inputs: set[str] = set()
    for value in graph.input:
        if value.name in inputs:
            raise OnnxImportError(f"graph input '{value.name}' is declared twice")
        inputs.add(value.name)
    initializers: set[str] = set()
    for tensor in graph.initializer:
        if tensor.name in initializers:
            raise OnnxImportError(f"initializer '{tensor.name}' is defined twice")
        initializers.add(tensor.name)
    producers: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for name in node.output:
            if not name:
                continue
            if name in producers:
                other = producers[name]
                writer = (
                    "it also lists it as an earlier output"
                    if other == index
                    else (f"{describe_node(graph.node[other], other)} also writes it")
                )
                reason = f"output '{name}' is defined twice: {writer}; each value must have one producer"
                raise OnnxImportError(reason, describe_node(node, index))
            for kind, names in (("a graph input", inputs), ("an initializer", initializers)):
                if name in names:
                    raise OnnxImportError(f"output '{name}' is also {kind}", describe_node(node, index))
            producers[name] = index
    return producers


def _check_uses(graph: GraphProto, producers: Mapping[str, int]) -> None:
    defined = {value.name for value in graph.input} | {tensor.name for tensor in graph.initializer}
    defined |= {sparse.values.name for sparse in graph.sparse_initializer}
    for index, node in enumerate(graph.node):
        for position, name in enumerate(node.input):
            if name and name not in defined and name not in producers:
                reason = f"input #{position} '{name}' is not defined by any node, initializer or graph input"
                raise OnnxImportError(reason, describe_node(node, index))
    for output in graph.output:
        if not output.name:
            raise OnnxImportError("a graph output has no name")
        if output.name not in defined and output.name not in producers:
            raise OnnxImportError(
                f"graph output '{output.name}' is not computed by any node, and is not a graph input or initializer"
            )


def _check_order(graph: GraphProto, producers: Mapping[str, int]) -> None:
    """Refuses a node that reads a later node's output: a cycle, or a graph out of order."""
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name in producers and producers[name] >= index:
                cycle = _cycle_through(graph, producers, index)
                if cycle:
                    raise OnnxImportError(f"the graph has a cycle: {cycle}")
                later = producers[name]
                raise OnnxImportError(
                    f"input '{name}' is written by a later node, {describe_node(graph.node[later], later)}; "
                    "ONNX graphs list their nodes in topological order",
                    describe_node(node, index),
                )


def _cycle_through(graph: GraphProto, producers: Mapping[str, int], start: int) -> str | None:
    """A cycle of nodes reachable from node `start` along input-to-producer edges, as text, or
    None. Iterative depth-first search (a long graph must not exhaust the stack)."""
    state: dict[int, str] = {}  # "open" while on the current path, "done" when fully explored
    path: list[tuple[int, str]] = []  # (node, the value by which it was reached)
    stack: list[tuple[int, str, bool]] = [(start, "", False)]
    while stack:
        index, via, leaving = stack.pop()
        if leaving:
            state[index] = "done"
            path.pop()
            continue
        if state.get(index) == "done":
            continue
        if state.get(index) == "open":
            first = next(position for position, (node, _) in enumerate(path) if node == index)
            return _describe_cycle(graph, [*path[first:], (index, via)])
        state[index] = "open"
        path.append((index, via))
        stack.append((index, via, True))
        for name in graph.node[index].input:
            if name in producers:
                stack.append((producers[name], name, False))
    return None


def _describe_cycle(graph: GraphProto, cycle: list[tuple[int, str]]) -> str:
    """`node #0 'a' (Relu) reads 'b', written by node #1 'c' (Neg), which reads 'a', written by
    node #0 'a' (Relu)`: each step names the value read and the node writing it."""
    (first, _), *rest = cycle
    text = describe_node(graph.node[first], first)
    for step, (index, via) in enumerate(rest):
        connective = " reads" if step == 0 else ", which reads"
        text += f"{connective} '{via}', written by {describe_node(graph.node[index], index)}"
    return text


# -- signatures ------------------------------------------------------------------------------------


def _count_text(low: int, high: int) -> str:
    if low == high:
        return str(low)
    if high >= 2**31 - 1:  # onnx's "unbounded" for variadic parameters
        return f"at least {low}"
    return f"{low} to {high}"


_ATTRIBUTE_TYPE_NAMES = {value: name for name, value in AttributeProto.AttributeType.items()}


def _check_signature(node: NodeProto, index: int, opset: int) -> None:
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, "")
    except onnx.defs.SchemaError:
        return  # not an op of this opset: the importer says so
    where = describe_node(node, index)
    op = f"{node.op_type} version {schema.since_version}"
    for kind, count, low, high in (
        ("inputs", len(node.input), schema.min_input, schema.max_input),
        ("outputs", len(node.output), schema.min_output, schema.max_output),
    ):
        if not low <= count <= high:
            noun = kind if count != 1 else kind[:-1]
            raise OnnxImportError(f"it has {count} {noun}, but {op} takes {_count_text(low, high)}", where)
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    for position, (name, parameter) in enumerate(zip(node.input, schema.inputs)):
        if not name and parameter.option == single:
            raise OnnxImportError(f"input #{position} ({parameter.name}) of {op} is required but empty", where)
    _check_attributes(node, schema, op, where)


def _check_attributes(node: NodeProto, schema: onnx.defs.OpSchema, op: str, where: str) -> None:
    seen: set[str] = set()
    for attribute in node.attribute:
        if attribute.name in seen:
            raise OnnxImportError(f"attribute {attribute.name} is given twice", where)
        seen.add(attribute.name)
        if attribute.ref_attr_name:
            raise OnnxImportError(
                f"attribute {attribute.name} refers to a function attribute ({attribute.ref_attr_name}) "
                "outside a function",
                where,
            )
        if attribute.name not in schema.attributes:
            known = ", ".join(sorted(schema.attributes)) or "none"
            raise OnnxImportError(f"{op} has no attribute {attribute.name} (its attributes: {known})", where)
        expected = _ATTRIBUTE_TYPE_NAMES.get(int(schema.attributes[attribute.name].type.value), "?")
        actual = _ATTRIBUTE_TYPE_NAMES.get(attribute.type, f"#{attribute.type}")
        if actual != expected:
            raise OnnxImportError(f"attribute {attribute.name} must be of type {expected}, but is {actual}", where)
    for name, definition in schema.attributes.items():
        if definition.required and name not in seen:
            raise OnnxImportError(f"{op} requires attribute {name}, which is missing", where)
