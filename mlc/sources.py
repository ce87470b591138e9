"""Reading a program for the API: what `source=` may be, its text, its module, its entry function;
and the errors a compile raises.

What: `check_source_kind` refuses what is neither MLIR text, a path nor an xDSL `ModuleOp`;
`source_text` gives a source's text (a path is read, a module printed), `read_source` its module
(parsed with a source map for located errors, or a private copy of a module), `select_entry` the
function a compile runs, `print_module` a module's text. `CompileError` (the source could not be
compiled) and `LoweringError` (a pass could not lower an op of a valid program) are the API's
errors; they live here, where the first of them is raised, and `mlc.compiler` re-exports them.

Algorithm: a `str` is a path when it is one line naming an existing file or directory or ending
in `.mlir`, and MLIR text otherwise (`mlc/compiler.py`'s docstring states the rule for users).
Preconditions: none; every function checks its argument. Limits: files are read whole, as UTF-8.
xDSL is imported inside the functions that need it, so that `import mlc` and a cache hit load
none of it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlc.errors import ArgumentTypeError, MlcError

if TYPE_CHECKING:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp


class CompileError(MlcError):
    """The source could not be compiled; the message says where and why."""


class LoweringError(CompileError):
    """A pass could not lower an op of a valid program: something mlc cannot compile yet (the
    message names the op and the reason), as opposed to an error in the source."""


def close_matches(word: str, possibilities: Sequence[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """difflib's close matches, imported only for a message (a cache hit never needs it)."""
    import difflib

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


def select_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function `entry`, else the only function, else the first public one."""
    from xdsl.dialects import func

    functions = [op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if entry is not None:
        entry = entry.removeprefix("@")
        for function in functions:
            if function.sym_name.data == entry:
                return function
        names = [f.sym_name.data for f in functions]
        close = close_matches(entry, names, n=1)
        hint = f"; did you mean @{close[0]}?" if close else ""
        listing = ", ".join(f"@{name}" for name in names) or "none"
        raise CompileError(f"no function @{entry} in the module (functions: {listing}){hint}")
    if not functions:
        raise CompileError("the module has no function to run")
    if len(functions) == 1:
        return functions[0]
    public = [f for f in functions if f.sym_visibility is None or f.sym_visibility.data == "public"]
    return (public or functions)[0]


SOURCE_KINDS = "MLIR text (str), a path to a file (str or os.PathLike) or an xDSL ModuleOp"


def _source_path(source: str | os.PathLike[str]) -> Path | None:
    """The path `source` names (see the module docstring), or None when it is MLIR text."""
    if isinstance(source, os.PathLike):
        return Path(source)
    if "\n" in source or not source.strip():
        return None
    # os.path.exists is False (never an error) for names the OS refuses: NUL bytes, overlong text.
    if os.path.exists(source) or source.rstrip().endswith(".mlir"):
        return Path(source)
    return None


def _read_file(path: Path) -> str:
    if path.is_dir():
        raise CompileError(f"{path} is a directory, not an MLIR file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CompileError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CompileError(
            f"{path} is not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start}); "
            "MLIR files are UTF-8"
        ) from None


def _is_module(source: object) -> bool:
    """Whether `source` is an xDSL ModuleOp (only possible when xDSL is loaded: then import it)."""
    if "xdsl.dialects.builtin" not in sys.modules:
        return False
    from xdsl.dialects.builtin import ModuleOp

    return isinstance(source, ModuleOp)


def check_source_kind(source: object) -> None:
    if not isinstance(source, str | os.PathLike) and not _is_module(source):
        hint = " (decode bytes first, e.g. source.decode())" if isinstance(source, bytes | bytearray) else ""
        raise ArgumentTypeError(f"source must be {SOURCE_KINDS}; got {type(source).__name__}{hint}")


def source_text(source: str | os.PathLike[str] | ModuleOp) -> tuple[str, str, bool]:
    """The source as MLIR text, a name for messages, and whether it is a file's text."""
    check_source_kind(source)
    if _is_module(source):
        return print_module(source), "<module>", False
    assert isinstance(source, str | os.PathLike)
    path = _source_path(source)
    if path is not None:
        return _read_file(path), str(path), True
    return str(source), "<string>", False


def read_source(source: str | os.PathLike[str] | ModuleOp, text: tuple[str, str, bool] | None = None) -> tuple[ModuleOp, str, Any]:
    """The module (a private copy), a name for messages, and its source map (or None).

    `text` is `source_text(source)` when the caller has it already."""
    from xdsl.utils.exceptions import ParseError

    from mlc.diagnostics import format_parse_error, parse_module
    from mlc.dialects import make_context

    check_source_kind(source)
    if _is_module(source):
        return source.clone(), "<module>", None  # type: ignore[union-attr]
    text, name, from_file = text or source_text(source)
    if not text.strip():
        raise CompileError(f"{name} is empty: there is no function to compile")
    try:
        module, source_map = parse_module(text, make_context(), name)
    except ParseError as error:
        message = format_parse_error(error)
        if not from_file and "\n" not in text:
            message += f"\nnote: '{text}' names no file, so it was parsed as MLIR text"
        raise CompileError(message) from None
    return module, name, source_map


def print_module(module: ModuleOp) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    text = StringIO()
    Printer(stream=text).print_op(module)
    return text.getvalue()
