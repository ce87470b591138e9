"""PyTorch frontend: torch.fx graphs into the graph dialect, a `torch.compile` backend, and
`torch.export` programs through mlc (needs the optional `torch` package: `pip install 'mlc[torch]'`).

    from mlc.frontend import torch as mlc_torch
    module = mlc_torch.import_graph(gm, example_inputs)          # an FX GraphModule -> ModuleOp
    compiled = torch.compile(model, backend="mlc")               # the registered backend
    print(mlc_torch.explain(model, inputs))                      # which ops ran in mlc, which in PyTorch
    module = mlc_torch.import_exported(torch.export.export(model, inputs))
    f = mlc_torch.compile_exported(exported_program)             # a callable on torch tensors

Import (`importer.py`): ATen-level FX graphs (what AOT autograd hands a backend, and what
`torch.export` produces, before or after `run_decompositions()`), one handler per ATen op
(`elementwise.py`, `shapes.py`, `neural.py` list the mappings), types checked against PyTorch's.
Parameters are constants or arguments, as the caller chooses.

The backend (`backend.py`) lowers each graph dynamo captures to core ATen (AOT autograd with
PyTorch's core-ATen decompositions), asks mlc which nodes it can compile on the tensors' device
(each distinct node is imported alone and lowered with the device's pipeline: mlc answers, not a
list kept here), runs the rest in PyTorch by partitioning the graph (`CapabilityBasedPartitioner`),
and logs one line per unsupported node. Shapes are static: a graph with symbolic sizes is compiled
again for each concrete shape it is called with.

Errors are `TorchImportError`s naming the FX node, its op and the reason; without torch, using
this package raises `MissingTorchError` naming the extra (importing `mlc` never needs torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlc.frontend.torch.errors import MissingTorchError, TorchImportError, require_torch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from xdsl.dialects.builtin import ModuleOp

__all__ = [
    "MissingTorchError",
    "TorchImportError",
    "compile_exported",
    "explain",
    "import_exported",
    "import_graph",
    "mlc_backend",
    "require_torch",
]


def import_graph(gm: Any, example_inputs: Sequence[Any] = (), *, parameters: str = "constants") -> ModuleOp:
    """The graph-dialect module of FX GraphModule `gm`: placeholders are the arguments, the
    module's own tensors (`get_attr`) constants or, with `parameters="arguments"`, arguments after
    them. `example_inputs` type graphs whose nodes carry no `meta["val"]`."""
    require_torch()
    from mlc.frontend.torch.importer import import_graph as import_fx

    return import_fx(gm, example_inputs, parameters=parameters)


def import_exported(exported: Any, *, parameters: str = "constants", decompose: bool = True) -> ModuleOp:
    """The graph-dialect module of a `torch.export.ExportedProgram` (see `exported.py`)."""
    require_torch()
    from mlc.frontend.torch.exported import import_exported as import_program

    return import_program(exported, parameters=parameters, decompose=decompose)


def compile_exported(exported: Any, *, device: str | None = None) -> Any:
    """A callable on torch tensors running a `torch.export.ExportedProgram` with mlc (and in
    PyTorch what mlc cannot compile), on `device` ('cpu', 'cuda'; default: the parameters')."""
    require_torch()
    from mlc.frontend.torch.exported import compile_exported as compile_program

    return compile_program(exported, device=device)


def mlc_backend(gm: Any, example_inputs: Sequence[Any], **options: Any) -> Any:
    """The `torch.compile` backend registered as "mlc" (`torch.compile(model, backend="mlc")`)."""
    require_torch()
    from mlc.frontend.torch.backend import mlc_backend as backend

    return backend(gm, example_inputs, **options)


def explain(model: Any, inputs: Sequence[Any], **options: Any) -> Any:
    """Compiles `model` with the mlc backend, runs it on `inputs`, and reports which nodes ran
    in mlc and which in PyTorch, and why (`Explanation`; `str()` of it is a table)."""
    require_torch()
    from mlc.frontend.torch.backend import explain as explain_model

    return explain_model(model, inputs, **options)
