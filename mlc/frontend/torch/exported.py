"""`torch.export` programs: imported as a graph-dialect module, or compiled with fallback.

`import_exported(ep)` first runs PyTorch's core-ATen decompositions, `scaled_dot_product_attention`
kept whole unless it has dropout or grouped-query heads (`decompositions.py`; the importer maps it
to the attention chain; `decompose=False` keeps every exported op, many of which have
handlers too: linear, conv2d, layer_norm, ...), then imports
`ep.graph_module`: the user inputs are the function's arguments; parameters, buffers and
constant tensors (lifted to inputs by torch.export) become `graph.constant`s, or with
`parameters="arguments"` stay arguments in the program's order (they precede the user inputs).
Every node must import; an error names the first that does not.

`compile_exported(ep)` runs the decomposed graph through the backend's partitioning (mlc where it
compiles, PyTorch elsewhere) on the device of its tensors, and returns a callable on the user
inputs (one tensor, or a tuple when the program returns several).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from mlc.frontend.torch.errors import TorchImportError
from mlc.frontend.torch.importer import PARAMETER_MODES, FxImporter


def _lifted_tensors(ep: Any) -> dict[str, torch.Tensor]:
    """Placeholder name -> the parameter, buffer or constant tensor torch.export lifted into it."""
    from torch.export.graph_signature import InputKind

    tensors = {}
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            continue
        source = ep.constants if spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ) else ep.state_dict
        if spec.target not in source or not isinstance(source[spec.target], torch.Tensor):
            raise TorchImportError(
                f"input '{spec.arg.name}' ({spec.kind.name.lower()} '{spec.target}') has no tensor value"
            )
        tensors[spec.arg.name] = source[spec.target]
    return tensors


def _check_outputs(ep: Any) -> None:
    from torch.export.graph_signature import OutputKind

    for spec in ep.graph_signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise TorchImportError(
                f"the program mutates '{spec.target}' ({spec.kind.name.lower()}); mlc compiles pure functions"
            )


def _prepared(ep: Any, decompose: bool) -> Any:
    if not isinstance(ep, torch.export.ExportedProgram):
        raise TorchImportError(f"expected a torch.export.ExportedProgram, got {type(ep).__name__}")
    if decompose:
        from mlc.frontend.torch.decompositions import decompositions

        ep = ep.run_decompositions(decompositions(keep_attention=True))
    _check_outputs(ep)
    return ep


def import_exported(ep: Any, *, parameters: str = "constants", decompose: bool = True) -> ModuleOp:
    """The graph-dialect module of `ep` (see the module docstring)."""
    if parameters not in PARAMETER_MODES:
        raise TorchImportError(f"parameters must be one of {', '.join(map(repr, PARAMETER_MODES))}, got {parameters!r}")
    ep = _prepared(ep, decompose)
    constants = _lifted_tensors(ep) if parameters == "constants" else {}
    return FxImporter(ep.graph_module, "constants", constant_inputs=constants).import_module()


def compile_exported(ep: Any, *, device: str | None = None) -> Callable[..., Any]:
    """A callable on the user inputs of `ep` (see the module docstring)."""
    from mlc.frontend.torch.backend import compile_graph

    ep = _prepared(ep, True)
    lifted = _lifted_tensors(ep)
    placeholders = [node.name for node in ep.graph.nodes if node.op == "placeholder"]
    if device is None:
        devices = {t.device.type for t in lifted.values()}
        device = devices.pop() if len(devices) == 1 else "cpu"
    lifted = {name: tensor.to(device) for name, tensor in lifted.items()}
    compiled = compile_graph(ep.graph_module, device)
    single = len(ep.graph_signature.output_specs) == 1

    def run(*user_inputs: torch.Tensor) -> Any:
        inputs = iter(user_inputs)
        arguments = [lifted[name] if name in lifted else next(inputs) for name in placeholders]
        results = compiled(*arguments)
        return results[0] if single and isinstance(results, tuple | list) else results

    return run
