"""`mlc.compile`: from graph-level MLIR to a callable on the GPU or the CPU.

    f = mlc.compile(source, device="auto", entry=None)
    y = f(x_numpy, w_numpy)           # numpy in, numpy out (a tuple when there are several results)

`source` is MLIR text, a path to a `.mlir` file, or an xDSL `ModuleOp` (which is not modified).
The steps, each an inspectable stage kept on the result:

1. parse and verify (errors are located `CompileError`s, never tracebacks);
2. lower with the device's named pipeline (`mlc-lower-to-gpu` / `mlc-lower-to-cpu`) or a
   pipeline given in xDSL or MLIR spelling;
3. the backend turns the kernels into PTX for the device's architecture, or a native object;
4. the runtime loads them and plans the entry's host function (`HostProgram`).

`CompiledFunction.reference(*arrays)` runs the graph interpreter on the same inputs (what
`mlc-run --check` compares with); `run_on_device` returns device buffers without copying back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError

from mlc.diagnostics import PassFailure, describe_op, format_parse_error, parse_module, verify
from mlc.dialects import make_context
from mlc.errors import MlcError

DEVICES = ("auto", "cuda", "cpu")


class CompileError(MlcError):
    """The source could not be compiled; the message says where and why."""


def resolve_device(device: str) -> str:
    """'cuda' or 'cpu' for a requested device ('auto' takes the GPU when one is present)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got '{device}'")
    if device != "auto":
        return device
    from mlc.runtime import is_available

    return "cuda" if is_available() else "cpu"


def select_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function `entry`, else the only function, else the first public one."""
    functions = [op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if entry is not None:
        for function in functions:
            if function.sym_name.data == entry:
                return function
        names = ", ".join(f"@{f.sym_name.data}" for f in functions) or "none"
        raise CompileError(f"no function @{entry} in the module (functions: {names})")
    if not functions:
        raise CompileError("the module has no function to run")
    if len(functions) == 1:
        return functions[0]
    public = [f for f in functions if f.sym_visibility is None or f.sym_visibility.data == "public"]
    return (public or functions)[0]


def _read_source(source: str | os.PathLike[str] | ModuleOp) -> tuple[ModuleOp, str, Any]:
    """The module (a private copy), a name for messages, and its source map (or None)."""
    if isinstance(source, ModuleOp):
        return source.clone(), "<module>", None
    text, name = str(source), "<string>"
    looks_like_path = isinstance(source, os.PathLike) or ("\n" not in text and text.rstrip().endswith(".mlir"))
    if looks_like_path:
        path = Path(source)
        try:
            text, name = path.read_text(encoding="utf-8"), str(path)
        except OSError as error:
            raise CompileError(f"cannot read {path}: {error.strerror}") from None
    try:
        module, source_map = parse_module(text, make_context(), name)
    except ParseError as error:
        raise CompileError(format_parse_error(error)) from None
    return module, name, source_map


@dataclass
class CompiledFunction:
    """A compiled entry function; calling it runs it on `device`."""

    name: str
    device: str
    graph_module: ModuleOp
    lowered_module: ModuleOp
    program: Any
    kernels: str | bytes
    """PTX text (cuda) or the native object file (cpu)."""
    pipeline: str

    def __call__(self, *arrays: object) -> np.ndarray | tuple[np.ndarray, ...]:
        results = self.program.run(*arrays)
        return results[0] if len(results) == 1 else results

    def run_on_device(self, *arrays: object, outputs: Sequence[object] | None = None) -> tuple[Any, ...]:
        """Results as device buffers (GPU: `__cuda_array_interface__`), without a copy back."""
        return self.program.run_on_device(*arrays, outputs=outputs)

    def synchronize(self) -> None:
        self.program.synchronize()

    def reference(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The graph interpreter's results for the same inputs (the semantic reference)."""
        from mlc.interpreter import run

        return tuple(run(self.graph_module, self.name, [np.asarray(a) for a in arrays]))

    @property
    def ir(self) -> str:
        """The lowered module as MLIR text (kernels and host function)."""
        text = StringIO()
        Printer(stream=text).print_op(self.lowered_module)
        return text.getvalue()

    def __repr__(self) -> str:
        return f"<mlc.CompiledFunction @{self.name} on {self.device}>"


def lower(module: ModuleOp, pipeline: str, source_map: Any = None, name: str = "<module>") -> None:
    """Runs `pipeline` (xDSL or MLIR spelling) on `module` in place, verifying after each pass."""
    from mlc.passes import build_pipeline
    from mlc.transforms import all_passes

    mlir_syntax = "(" in pipeline
    context = make_context()
    for module_pass in build_pipeline(pipeline, all_passes(), mlir_syntax=mlir_syntax):
        try:
            module_pass.apply(context, module)
        except PassFailure as failure:
            raise CompileError(describe_op(failure.op, failure.message, source_map, name)) from None
        verify(module, source_map, name)


def compile(  # noqa: A001 - the public name the spec fixes
    source: str | os.PathLike[str] | ModuleOp,
    device: str = "auto",
    entry: str | None = None,
    pipeline: str | None = None,
) -> CompiledFunction:
    """Compiles the entry function of `source` for `device` (see the module docstring)."""
    target = resolve_device(device)
    module, name, source_map = _read_source(source)
    verify(module, source_map, name)
    function_name = select_entry(module, entry).sym_name.data
    graph_module = module.clone()
    chosen = pipeline or ("mlc-lower-to-gpu" if target == "cuda" else "mlc-lower-to-cpu")
    lower(module, chosen, source_map, name)
    from mlc import backend
    from mlc.runtime import HostProgram

    if target == "cuda":
        from mlc.runtime import get_device

        gpu = get_device()
        kernels: str | bytes = backend.compile_to_ptx(module, arch=gpu.arch)
        program = HostProgram.for_cuda(module, kernels, entry=function_name, device=gpu)
    else:
        kernels = backend.compile_to_cpu_object(module)
        program = HostProgram.for_cpu(module, kernels, entry=function_name)
    return CompiledFunction(function_name, target, graph_module, module, program, kernels, chosen)
