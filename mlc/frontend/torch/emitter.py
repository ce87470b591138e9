"""What an op handler sees of the FX node it imports: its bound arguments, its operands as graph
values, the types PyTorch inferred for its results, and the builder.

An ATen op's arguments are bound by name from its schema (`bind_arguments`): positional and
keyword arguments, and defaults for the missing ones, so a handler reads `args["alpha"]` however
the graph spelled the call. Types come from the FX node's `meta["val"]` (a FakeTensor or a real
tensor, as dynamo, AOT autograd and torch.export leave them); the importer fills it in with fake
tensor propagation when a graph has none.

Element types: float32, float16, bfloat16, int32, int64 and bool map to f32, f16, bf16, i32, i64
and i1; any other dtype is an error naming the node. Python numbers become rank-0 constants of
the type the op computes in (they broadcast against any shape).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerType,
    bf16,
    f16,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from mlc.frontend.graph_builder import GraphBuilder, element_type_of
from mlc.frontend.torch.errors import TorchImportError

ELEMENT_TYPES: dict[torch.dtype, Attribute] = {
    torch.float32: f32,
    torch.float16: f16,
    torch.bfloat16: bf16,
    torch.int32: i32,
    torch.int64: i64,
    torch.bool: i1,
}
"""PyTorch dtypes and the graph dialect's element types."""


def element_type(dtype: torch.dtype, where: str | None = None) -> Attribute:
    if dtype not in ELEMENT_TYPES:
        supported = ", ".join(str(d).removeprefix("torch.") for d in ELEMENT_TYPES)
        raise TorchImportError(
            f"dtype {str(dtype).removeprefix('torch.')} is not supported (supported: {supported})",
            where,
        )
    return ELEMENT_TYPES[dtype]


def torch_dtype(element: Attribute) -> torch.dtype:
    return next(dtype for dtype, known in ELEMENT_TYPES.items() if known == element)


def is_float_type(element: Attribute) -> bool:
    return isinstance(element, Float32Type | Float16Type | BFloat16Type)


def is_bool_type(element: Attribute) -> bool:
    return isinstance(element, IntegerType) and element.width.data == 1


def target_name(node: torch.fx.Node) -> str:
    """`aten.addmm.default`, `getitem`, `placeholder`: how messages name what a node does."""
    if node.op in ("call_function", "call_method"):
        return getattr(node.target, "__name__", None) if node.target is operator.getitem else str(node.target)
    return node.op


def describe_node(node: torch.fx.Node) -> str:
    return f"node '{node.name}' ({target_name(node)})"


def bind_arguments(node: torch.fx.Node) -> dict[str, Any]:
    """The node's arguments by schema name, defaults filled in."""
    schema = node.target._schema  # type: ignore[union-attr]
    bound: dict[str, Any] = {}
    for index, argument in enumerate(schema.arguments):
        if not argument.kwarg_only and index < len(node.args):
            bound[argument.name] = node.args[index]
        elif argument.name in node.kwargs:
            bound[argument.name] = node.kwargs[argument.name]
        else:
            bound[argument.name] = argument.default_value if argument.has_default_value() else None
    return bound


def fake_value(node: torch.fx.Node) -> Any:
    """What PyTorch knows of the node's result (a tensor, or a tuple of them)."""
    return node.meta.get("val", node.meta.get("example_value"))


ImportedValue = SSAValue | tuple[SSAValue | None, ...] | None


@dataclass
class Emitter:
    """The context of one node's import (see the module docstring)."""

    builder: GraphBuilder
    node: torch.fx.Node
    values: Mapping[torch.fx.Node, ImportedValue]
    live: Set[torch.fx.Node] | None = None
    """The nodes whose values reach the graph's outputs (None: every node)."""

    def unsupported(self, reason: str) -> TorchImportError:
        return TorchImportError(reason, describe_node(self.node))

    # -- operands ------------------------------------------------------------------------------

    def value(self, argument: Any) -> SSAValue:
        """The graph value of a tensor argument (an FX node)."""
        if not isinstance(argument, torch.fx.Node):
            raise self.unsupported(f"expected a tensor operand, got {type(argument).__name__} {argument!r}")
        value = self.values.get(argument)
        if not isinstance(value, SSAValue):
            raise self.unsupported(f"operand '{argument.name}' is not a tensor mlc imported")
        return value

    def operand(self, argument: Any, element: Attribute) -> SSAValue:
        """A tensor argument converted to `element`, or a Python number as a rank-0 constant of it."""
        if isinstance(argument, torch.fx.Node):
            return self.cast(self.value(argument), element)
        if isinstance(argument, bool | int | float):
            return self.builder.scalar(argument, element)
        raise self.unsupported(f"expected a tensor or a number, got {type(argument).__name__} {argument!r}")

    def cast(self, value: SSAValue, element: Attribute) -> SSAValue:
        return value if element_type_of(value) == element else self.builder.cast(value, element)

    def constant(self, array: np.ndarray | torch.Tensor, element: Attribute) -> SSAValue:
        if isinstance(array, torch.Tensor):
            array = tensor_to_numpy(array)
        return self.builder.constant(np.asarray(array), element)

    # -- what PyTorch inferred -------------------------------------------------------------------

    def result(self, index: int | None = None) -> torch.Tensor:
        value = fake_value(self.node)
        if index is not None:
            value = value[index]
        if not isinstance(value, torch.Tensor):
            raise self.unsupported("PyTorch recorded no tensor type for this result")
        return value

    def result_element(self, index: int | None = None) -> Attribute:
        return element_type(self.result(index).dtype, describe_node(self.node))

    def result_shape(self, index: int | None = None) -> tuple[int, ...]:
        return static_shape(self.result(index), self)

    def argument_dtype(self, argument: Any) -> torch.dtype | None:
        """The dtype of a tensor argument, None for a Python number."""
        if isinstance(argument, torch.fx.Node):
            value = fake_value(argument)
            if isinstance(value, torch.Tensor):
                return value.dtype
            return torch_dtype(element_type_of(self.value(argument)))
        return None

    def used_outputs(self) -> set[int]:
        """The indices of this multi-result node's results that other nodes read."""
        readers = [user for user in self.node.users if self.live is None or user in self.live]
        return {user.args[1] for user in readers if user.target is operator.getitem}  # type: ignore[misc]

    def axis(self, dim: int, rank: int) -> int:
        if not -max(rank, 1) <= dim < max(rank, 1):
            raise self.unsupported(f"dimension {dim} is out of range for rank {rank}")
        return dim % max(rank, 1)

    def axes(self, dims: Sequence[int] | int | None, rank: int) -> list[int]:
        if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
            return list(range(rank))
        if isinstance(dims, int):
            dims = [dims]
        return sorted({self.axis(int(d), rank) for d in dims})


def static_shape(value: torch.Tensor, emitter: Emitter | None = None) -> tuple[int, ...]:
    shape = []
    for size in value.shape:
        if not isinstance(size, int):
            message = f"dimension {size} is dynamic; mlc compiles static shapes (torch.compile: one compilation per concrete shape)"
            raise emitter.unsupported(message) if emitter else TorchImportError(message)
        shape.append(size)
    return tuple(shape)


def tensor_to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A CPU numpy copy of a real tensor (bf16 through its bits, which numpy lacks)."""
    tensor = tensor.detach().to("cpu").contiguous()
    if tensor.dtype == torch.bfloat16:
        from mlc.dialects.element_types import bfloat16_dtype

        return tensor.view(torch.int16).numpy().view(bfloat16_dtype())
    return tensor.numpy()


Handler = Callable[[Emitter, dict[str, Any]], ImportedValue]
"""Imports one node: builds graph ops with `emitter.builder` from the bound arguments."""
