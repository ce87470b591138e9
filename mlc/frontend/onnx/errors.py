"""The errors of the ONNX importer, and how it names nodes (kept free of the `onnx` import)."""

from __future__ import annotations

from typing import Any

from mlc.errors import MlcError


class OnnxImportError(MlcError):
    """An ONNX model mlc cannot import; the message names the node or value, the op and the reason.

    `node` is the description of the node at fault (`node #3 'conv1' (Conv)`), or None when the
    problem is not a node's (a graph input with a dynamic shape, an unreadable file).
    """

    def __init__(self, message: str, node: str | None = None):
        super().__init__(f"{node}: {message}" if node else message)
        self.node = node
        self.reason = message


class ModelFileError(OnnxImportError):
    """The model file (or bytes) cannot be read or holds no model; the message names the file."""


DEFAULT_DOMAINS = ("", "ai.onnx")
"""The spellings of ONNX's default operator domain."""


def describe_node(node: Any, index: int) -> str:
    """`node #3 'conv1' (Conv)`: the index in the graph, the name when it has one, and the op."""
    name = f" '{node.name}'" if node.name else ""
    domain = f"{node.domain}." if node.domain not in DEFAULT_DOMAINS else ""
    return f"node #{index}{name} ({domain}{node.op_type})"
