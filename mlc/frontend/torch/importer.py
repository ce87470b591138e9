"""The FX importer: one `func.func @main` of graph ops from a `torch.fx` GraphModule.

The graph is walked in its (topological) order:

* `placeholder` nodes are the function's arguments, typed from `node.meta["val"]` (what dynamo,
  AOT autograd and torch.export record) or, for graphs without it, from `example_inputs` by fake
  tensor propagation (`FakeTensorProp`: shapes only, nothing computed);
* `get_attr` nodes (the module's own parameters and buffers, as `make_fx` or
  `symbolic_trace` leave them) become `graph.constant`s (`parameters="constants"`) or further
  arguments after the placeholders, in graph order (`parameters="arguments"`);
* `call_function` nodes of ATen ops go to their handler (`handlers()`, by schema name, any
  overload), which builds graph ops with `GraphBuilder`; `operator.getitem` picks a result of a
  multi-result op; an op with no tensor inputs that draws no random numbers (`full`, `arange`,
  `scalar_tensor`, ...) is run by PyTorch at import time and becomes a constant;
* the `output` node's tensors are the function's results.

Every imported value's type is checked against the type PyTorch recorded for the node, so a
mapping that disagrees with PyTorch fails at import naming the node, not later with wrong numbers.

Preconditions: static shapes (a symbolic size is an error saying so; the torch.compile backend
compiles one graph per concrete shape), the dtypes of `emitter.ELEMENT_TYPES`, a functional ATen
graph (in-place and out= ops are what AOT autograd and torch.export's decompositions remove).
Errors are `TorchImportError`s naming the node, its op and the reason; `supported(node)` asks
whether a node would import, without building anything the caller keeps.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region, SSAValue

from mlc.frontend.graph_builder import (
    GraphBuilder,
    GraphBuildError,
    element_type_of,
    shape_of,
)
from mlc.frontend.torch import elementwise, neural, shapes
from mlc.frontend.torch.emitter import (
    Emitter,
    Handler,
    ImportedValue,
    bind_arguments,
    describe_node,
    element_type,
    fake_value,
    static_shape,
    target_name,
    tensor_to_numpy,
)
from mlc.frontend.torch.errors import TorchImportError

PARAMETER_MODES = ("constants", "arguments")


def handlers() -> dict[str, Handler]:
    """ATen op name (`aten::add`) -> the handler that imports it."""
    return {**elementwise.HANDLERS, **shapes.HANDLERS, **neural.HANDLERS}


def schema_name(node: torch.fx.Node) -> str | None:
    schema = getattr(node.target, "_schema", None)
    return schema.name if schema is not None else None


def is_constant_constructor(node: torch.fx.Node) -> bool:
    """An ATen op with no tensor inputs and no randomness: PyTorch computes it at import time."""
    if node.op != "call_function" or node.all_input_nodes or not isinstance(node.target, torch._ops.OpOverload):
        return False
    return torch.Tag.nondeterministic_seeded not in node.target.tags and isinstance(fake_value(node), torch.Tensor)


def construct_constant(node: torch.fx.Node) -> tuple[np.ndarray, torch.dtype]:
    """Runs a constant constructor (`is_constant_constructor`) for real, on the CPU: AOT autograd
    calls its compilers with fake tensor mode active (`scalar_tensor` would give a fake tensor,
    which has no data), and the constant becomes numpy data wherever the graph runs: the data and
    PyTorch's type."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    kwargs = {**node.kwargs, "device": "cpu"} if "device" in node.kwargs else node.kwargs
    with unset_fake_temporarily():
        tensor = node.target(*node.args, **kwargs)  # type: ignore[operator]
        return tensor_to_numpy(tensor), tensor.dtype


def live_nodes(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The nodes the output node depends on."""
    output = next(node for node in reversed(graph.nodes) if node.op == "output")
    live, pending = set(), list(output.all_input_nodes)
    while pending:
        node = pending.pop()
        if node not in live:
            live.add(node)
            pending.extend(node.all_input_nodes)
    return live


def tensor_type_of(value: torch.Tensor, where: str | None = None) -> TensorType:
    return TensorType(element_type(value.dtype, where), static_shape(value))


def ensure_types(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """Records `meta["val"]` on every node by fake tensor propagation when a node lacks it."""
    if all("val" in node.meta or node.op == "output" for node in gm.graph.nodes):
        return
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
    if len(example_inputs) != len(placeholders):
        raise TorchImportError(
            f"the graph has {len(placeholders)} inputs but {len(example_inputs)} example inputs were given"
        )
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake_inputs = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in example_inputs]
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fake_inputs)


class FxImporter:
    """Imports one GraphModule (see the module docstring)."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        parameters: str = "constants",
        constant_inputs: Mapping[str, torch.Tensor] | None = None,
    ):
        if parameters not in PARAMETER_MODES:
            raise TorchImportError(
                f"parameters must be one of {', '.join(map(repr, PARAMETER_MODES))}, got {parameters!r}"
            )
        self.gm = gm
        self.parameters = parameters
        self.handlers = handlers()
        self.block = Block()
        self.builder = GraphBuilder(self.block)
        self.values: dict[torch.fx.Node, ImportedValue] = {}
        self.live: set[torch.fx.Node] | None = None
        """The nodes that reach the output (dead ones, such as unread indices, are not imported)."""
        self.constant_inputs = dict(constant_inputs or {})
        """Placeholders that are constants (torch.export's lifted parameters), by name."""

    def import_module(self, function_name: str = "main") -> ModuleOp:
        nodes = list(self.gm.graph.nodes)
        for node in nodes:
            if node.op == "placeholder" and node.name in self.constant_inputs:
                tensor = self.constant_inputs[node.name]
                self.values[node] = self.builder.constant(
                    tensor_to_numpy(tensor),
                    element_type(tensor.dtype, describe_node(node)),
                )
            elif node.op == "placeholder":
                self._argument(node, fake_value(node))
        if self.parameters == "arguments":
            for node in nodes:
                if node.op == "get_attr":
                    self._argument(node, self._attribute(node))
        self.live = live_nodes(self.gm.graph)
        results: list[SSAValue] = []
        for node in nodes:
            if node.op == "placeholder" or node in self.values or (node.op != "output" and node not in self.live):
                continue
            if node.op == "output":
                results = self._outputs(node)
                break
            self.values[node] = self.import_node(node)
        return_types = [value.type for value in results]
        self.block.add_op(func.ReturnOp(*results))
        function = func.FuncOp(
            function_name,
            ([arg.type for arg in self.block.args], return_types),
            Region(self.block),
        )
        return ModuleOp([function])

    def _argument(self, node: torch.fx.Node, value: Any) -> None:
        if not isinstance(value, torch.Tensor):
            raise TorchImportError(
                f"input of type {type(value).__name__} ({value!r}): graph functions take tensors only; "
                "symbolic sizes are dynamic shapes (mlc compiles one graph per concrete shape)",
                describe_node(node),
            )
        argument = self.block.insert_arg(tensor_type_of(value, describe_node(node)), len(self.block.args))
        argument.name_hint = _name_hint(node.name)
        self.values[node] = argument

    def _attribute(self, node: torch.fx.Node) -> torch.Tensor:
        owner: Any = self.gm
        for part in str(node.target).split("."):
            owner = getattr(owner, part)
        if not isinstance(owner, torch.Tensor):
            raise TorchImportError(
                f"attribute '{node.target}' is a {type(owner).__name__}, not a tensor",
                describe_node(node),
            )
        return owner

    def _outputs(self, node: torch.fx.Node) -> list[SSAValue]:
        returned = node.args[0]
        flat = list(returned) if isinstance(returned, list | tuple) else [returned]
        results = []
        for item in flat:
            value = self.values.get(item) if isinstance(item, torch.fx.Node) else None
            if not isinstance(value, SSAValue):
                raise TorchImportError(
                    f"the graph returns {item!r}, which is not a tensor mlc computes",
                    "the output node",
                )
            results.append(value)
        return results

    # -- one node -------------------------------------------------------------------------------

    def import_node(self, node: torch.fx.Node) -> ImportedValue:
        """Builds the node's graph ops (appended to the function) and returns its value(s)."""
        where = describe_node(node)
        if node.op == "get_attr":
            tensor = self._attribute(node)
            return self.builder.constant(tensor_to_numpy(tensor), element_type(tensor.dtype, where))
        if node.op == "call_function" and node.target is operator.getitem:
            source, index = node.args
            produced = self.values.get(source)  # type: ignore[arg-type]
            if not isinstance(produced, tuple) or not isinstance(index, int) or produced[index] is None:
                raise TorchImportError("picks a result mlc did not import", where)
            return produced[index]
        if is_constant_constructor(node):
            data, dtype = construct_constant(node)
            return self.builder.constant(data, element_type(dtype, where))
        handler = self.handlers.get(schema_name(node) or "") if node.op == "call_function" else None
        if handler is None:
            raise TorchImportError(f"{target_name(node)} has no graph-dialect mapping", where)
        try:
            imported = handler(Emitter(self.builder, node, self.values, self.live), bind_arguments(node))
        except GraphBuildError as error:
            raise TorchImportError(str(error), where) from None
        self._check_types(node, imported)
        return imported

    def _check_types(self, node: torch.fx.Node, imported: ImportedValue) -> None:
        expected = fake_value(node)
        pairs = zip(imported, expected) if isinstance(imported, tuple) else [(imported, expected)]
        for value, tensor in pairs:
            if value is None or not isinstance(tensor, torch.Tensor):
                continue
            want = (
                static_shape(tensor),
                element_type(tensor.dtype, describe_node(node)),
            )
            got = (shape_of(value), element_type_of(value))
            if got != want:
                raise TorchImportError(
                    f"mlc computed {_type_text(*got)} where PyTorch has {_type_text(*want)} (a bug in the mapping)",
                    describe_node(node),
                )


def _type_text(shape: tuple[int, ...], element: Any) -> str:
    return str(TensorType(element, shape))


def _name_hint(name: str) -> str | None:
    return name if name.replace("_", "a").isalnum() and not name[0].isdigit() else None


def import_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any] = (),
    *,
    parameters: str = "constants",
    function_name: str = "main",
) -> ModuleOp:
    """The graph-dialect module of `gm` (see the module docstring)."""
    if not isinstance(gm, torch.fx.GraphModule):
        raise TorchImportError(f"expected a torch.fx.GraphModule, got {type(gm).__name__}")
    ensure_types(gm, example_inputs)
    return FxImporter(gm, parameters).import_module(function_name)
