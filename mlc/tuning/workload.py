"""A workload: one entry function of a graph module, named by its canonical IR, on one target.

The key of a workload (`Workload.key`) is a hash of its canonical text: the module printed with
its SSA names and locations dropped (so renaming a value or reformatting the file keeps the
key) and the entry's name. The target key (`target_key`) is what decides which configuration is
fastest besides the program: 'cpu:<LLVM's name of the host CPU>' or 'cuda:<arch>'.

`tuned_record(module, entry, target)` is how `mlc.compile` consults the database: the best record
(its pipeline and configuration) for this workload, target and mlc version, or None. It opens the database only
when the file exists, and never fails a compile: an unreadable database is a warning.
"""

from __future__ import annotations

import os
import warnings
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from mlc.tuning.database import (
    Record,
    TuningDatabase,
    TuningDatabaseError,
    default_path,
    workload_key,
)


def canonical_text(module: ModuleOp) -> str:
    copy = module.clone()
    for op in copy.walk():
        for result in op.results:
            result.name_hint = None
        for region in op.regions:
            for block in region.blocks:
                for argument in block.args:
                    argument.name_hint = None
    return str(copy)


def target_key(target: str) -> str:
    from mlc.caching import target_description

    description = target_description(target)
    return f"cuda:{description['arch']}" if target == "cuda" else f"cpu:{description['cpu']}"


@dataclass
class Workload:
    module: ModuleOp
    entry: str
    name: str

    @property
    def key(self) -> str:
        return workload_key(canonical_text(self.module), self.entry)

    @property
    def function(self) -> func.FuncOp:
        from mlc.compiler import select_entry

        return select_entry(self.module, self.entry)

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        from mlc.runtime.measurement import random_inputs

        return random_inputs(self.function.function_type, seed)


def load_workload(path: str | os.PathLike[str], entry: str | None = None) -> Workload:
    """The workload of an `.onnx` model or an MLIR file (graph level); `MlcError`s for a missing
    file, a file that does not parse or import, an unknown entry."""
    from mlc.compiler import CompileError, read_source, select_entry

    file = Path(path)
    if not file.is_file():
        raise CompileError(f"{file}: no such file" if not file.exists() else f"{file} is not a file")
    if file.suffix.lower() == ".onnx":
        from mlc.frontend.onnx import import_model

        module = import_model(file)
    else:
        from mlc.diagnostics import verify

        module, name, source_map = read_source(file)
        verify(module, source_map, name)
    function = select_entry(module, entry)
    return Workload(module, function.sym_name.data, f"{file.stem}@{function.sym_name.data}")


def tuned_record(module: ModuleOp, entry: str, target: str) -> Record | None:
    """The best record for `entry` of `module` on `target`, or None (see the docstring)."""
    path = default_path()
    if not path.exists():
        return None
    try:
        with closing(TuningDatabase(path)) as database:
            best = database.best(workload_key(canonical_text(module), entry), target_key(target))
    except TuningDatabaseError as error:
        warnings.warn(f"the tuning database is not used: {error}", stacklevel=3)
        return None
    return best
