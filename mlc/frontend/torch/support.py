"""Which FX nodes mlc compiles on a device: asked of mlc, node by node.

`SupportOracle.reason(node)` imports the node alone, as a function whose arguments are its tensor
inputs (typed from PyTorch's `meta["val"]`), and lowers that function with the device's pipeline
(`mlc.lower`: every pass, no code generation). The answer is None when it lowers, else why not:
the importer's reason (an op with no graph-dialect mapping, an argument it does not take) or the
lowering's (`LoweringError`: "convert-graph-to-tile cannot lower 'graph.transpose' yet"). So the
answer follows mlc as it grows, with no list of supported ops to keep in step.

Cost: one lowering per distinct one-node function (its printed IR is the memo key, so the 24
identical `addmm`s of a model are asked once); nodes that import to no op (views that change
nothing, `getitem`) are answered without lowering. A node's support in isolation is necessary,
not sufficient, for its partition to compile (fusion may group ops that cannot be one kernel):
the backend compiles each partition and runs it in PyTorch when that fails.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

from mlc.errors import MlcError
from mlc.frontend.graph_builder import GraphBuilder
from mlc.frontend.torch.emitter import fake_value
from mlc.frontend.torch.errors import TorchImportError
from mlc.frontend.torch.importer import FxImporter, tensor_type_of


def single_node_module(importer: FxImporter, node: torch.fx.Node) -> ModuleOp:
    """Node `node` alone as a function of its input nodes (raises `TorchImportError`)."""
    block = Block()
    importer.block, importer.builder, importer.values = block, GraphBuilder(block), {}
    for index, source in enumerate(node.all_input_nodes):
        value = fake_value(source)
        if not isinstance(value, torch.Tensor):
            raise TorchImportError(f"input '{source.name}' is not a tensor ({type(value).__name__})")
        importer.values[source] = block.insert_arg(tensor_type_of(value), index)
    imported = importer.import_node(node)
    results = [v for v in (imported if isinstance(imported, tuple) else (imported,)) if isinstance(v, SSAValue)]
    block.add_op(func.ReturnOp(*results))
    function = func.FuncOp(
        "main",
        ([arg.type for arg in block.args], [r.type for r in results]),
        Region(block),
    )
    return ModuleOp([function])


Lowering = Callable[[ModuleOp, str], object]
"""`mlc.lower(module, device)`: raises `mlc.CompileError` when mlc cannot compile the module."""


@dataclass
class SupportOracle:
    """Answers, and remembers, whether mlc compiles a node on `device` ('cpu' or 'cuda'), by
    lowering it with `lower` (the backend passes `mlc.lower`)."""

    device: str
    lower: Lowering
    answers: dict[str, str | None] = field(default_factory=dict)

    def reason(self, node: torch.fx.Node) -> str | None:
        """None when mlc compiles `node` on the device, else why it does not."""
        if node.op != "call_function":
            return f"{node.op} nodes are not compiled"
        if node.target is operator.getitem:
            return self.reason(node.args[0]) if isinstance(node.args[0], torch.fx.Node) else "getitem of a non-node"  # type: ignore[arg-type]
        importer = FxImporter(
            node.graph.owning_module or torch.fx.GraphModule({}, torch.fx.Graph()),
            "arguments",
        )
        try:
            module = single_node_module(importer, node)
        except TorchImportError as error:
            return error.reason
        function = next(iter(module.body.block.ops))
        if all(isinstance(op, func.ReturnOp) for op in function.body.block.ops):  # type: ignore[attr-defined]
            return None
        key = str(module)
        if key not in self.answers:
            self.answers[key] = self._lowering_problem(module)
        return self.answers[key]

    def _lowering_problem(self, module: ModuleOp) -> str | None:
        try:
            self.lower(module, self.device)
        except MlcError as error:
            return _first_line(str(error))
        return None


def _first_line(message: str) -> str:
    line = message.strip().splitlines()[0] if message.strip() else message
    return line.removeprefix("<module>: error: ")
