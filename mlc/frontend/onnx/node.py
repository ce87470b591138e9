"""`Node`: one ONNX node as its handler sees it.

A handler reads the node's attributes (with ONNX's defaults given at the call), its inputs as graph
values (`input`), as types (`input_type`, also for inputs that are not imported) or as constants
known at import time (`constant`), and builds graph ops with `builder`. `error` makes an
`OnnxImportError` that names the node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from mlc.frontend.graph_builder import GraphBuilder
from mlc.frontend.onnx.errors import OnnxImportError, describe_node

if TYPE_CHECKING:
    from mlc.frontend.onnx.importer import GraphImporter


class NotConstant(Exception):
    """A value needed as a constant depends on `source`, known only at run time."""

    def __init__(self, source: str):
        super().__init__(source)
        self.source = source
        self.through: list[str] = []


class Node:
    """One ONNX node as its handler sees it: attributes, inputs as graph values or constants."""

    def __init__(self, importer: GraphImporter, proto: NodeProto, index: int, version: int):
        self.importer = importer
        self.proto = proto
        self.index = index
        self.version = version
        """The op's schema version (`since_version`) at the model's opset."""
        self.description = describe_node(proto, index)
        self.attributes = {attribute.name: attribute for attribute in proto.attribute}

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def builder(self) -> GraphBuilder:
        return self.importer.builder

    def error(self, reason: str) -> OnnxImportError:
        return OnnxImportError(reason, self.description)

    # -- attributes ----------------------------------------------------------------------------

    def attribute(self, name: str, default: Any = None) -> Any:
        """The attribute's value (bytes decoded to str, tensors as numpy arrays), or `default`."""
        if name not in self.attributes:
            return default
        value = helper.get_attribute_value(self.attributes[name])
        if isinstance(value, bytes):
            return value.decode("utf-8")
        if isinstance(value, TensorProto):
            return numpy_helper.to_array(value)
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [item.decode("utf-8") for item in value]
        return value

    def flag(self, name: str, default: int) -> bool:
        """A 0/1 attribute (keepdims, transA, ceil_mode, ...) as a bool. Other values are refused:
        ONNX's tools disagree on them (shape inference keeps dimensions only for keepdims=1, the
        reference evaluator for any non-zero value)."""
        value = self.attribute(name, default)
        if value not in (0, 1):
            raise self.reject_attribute(name, value, "it must be 0 or 1")
        return bool(value)

    def has_attribute(self, name: str) -> bool:
        return name in self.attributes

    def reject_attribute(self, name: str, value: Any, reason: str) -> OnnxImportError:
        return self.error(f"attribute {name}={value!r} is not supported: {reason}")

    # -- inputs --------------------------------------------------------------------------------

    def has_input(self, index: int) -> bool:
        return index < len(self.proto.input) and bool(self.proto.input[index])

    def input(self, index: int) -> SSAValue:
        """Input `index` as a graph value (a constant is materialised on first use)."""
        if not self.has_input(index):
            raise self.error(f"input #{index} is missing")
        return self.importer.value(self.proto.input[index], self)

    def inputs(self) -> list[SSAValue]:
        """Every present input as a graph value (for variadic ops)."""
        return [self.input(index) for index in range(len(self.proto.input)) if self.has_input(index)]

    def input_type(self, index: int) -> TensorType:
        """The type of input `index` (also for inputs that are not materialised)."""
        return self.importer.value_type(self.proto.input[index], self)

    def input_shape(self, index: int) -> tuple[int, ...]:
        return tuple(self.input_type(index).get_shape())

    def input_rank(self, index: int) -> int:
        return len(self.input_shape(index))

    def constant(self, index: int, role: str) -> np.ndarray | None:
        """The value of constant input `index` (`role` names it in messages); None when absent."""
        if not self.has_input(index):
            return None
        name = self.proto.input[index]
        try:
            return self.importer.constant_value(name)
        except NotConstant as problem:
            through = f" (through {', '.join(problem.through)})" if problem.through else ""
            raise self.error(
                f"input #{index} ({role}) '{name}' must be a constant (an initializer, a Constant node, "
                f"or computed from them and static shapes), but it depends on {problem.source}{through}"
            ) from None

    def constant_ints(self, index: int, role: str) -> list[int] | None:
        value = self.constant(index, role)
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]

    # -- outputs -------------------------------------------------------------------------------

    def output_used(self, index: int) -> bool:
        return index < len(self.proto.output) and self.importer.is_used(self.proto.output[index])

    # -- helpers for handlers -----------------------------------------------------------------

    def axis(self, axis: int, rank: int, what: str = "axis") -> int:
        """`axis` normalised to [0, rank), or an error naming the attribute."""
        if not -rank <= axis < rank:
            raise self.error(f"{what} {axis} is out of range for rank {rank}")
        return axis + rank if axis < 0 else axis

    def axes(self, axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
        normalised = [self.axis(axis, rank, what) for axis in axes]
        if len(set(normalised)) != len(normalised):
            raise self.error(f"{what} {list(axes)} repeat an axis")
        return normalised
