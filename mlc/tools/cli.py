"""What the command-line tools share: reading the input, writing the result, and turning every
failure into a message and an exit code.

The contract (DESIGN.md): bad input gets a message for people and exit code 1, never a Python
traceback. `read_input` reads a file or standard input (`-` or no path) as bytes and decodes it
itself, so a directory, a binary file or invalid UTF-8 is reported with its location; `write_result`
reports an output it cannot write (`-` is standard output). `exit_code` runs a tool's body: an
`MlcError` is printed as its message; any other exception is a bug in mlc, printed as a short
"internal compiler error" naming the pass that raised it when one did, with the Python traceback
only when the environment variable MLC_DEBUG is set (to anything but "" or "0").
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable
from types import TracebackType

from mlc.errors import MlcError

STANDARD_STREAM = "-"
"""The path that means standard input (as the input) or standard output (as `-o`)."""


class InputError(MlcError):
    """The input cannot be read as MLIR text."""


class OutputError(MlcError):
    """The result cannot be written."""


def debugging() -> bool:
    """Whether MLC_DEBUG asks for Python tracebacks of internal errors."""
    return os.environ.get("MLC_DEBUG", "") not in ("", "0")


def read_input(path: str | None) -> tuple[str, str]:
    """The text of `path` (standard input when None or '-') and the name messages give it."""
    if path is None or path == STANDARD_STREAM:
        if sys.stdin is None:
            raise InputError("cannot read standard input: it is closed")
        return decode_source(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror}") from None
    return decode_source(data, path), path


def _line_and_column(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


def decode_source(data: bytes, name: str) -> str:
    """`data` as text; an InputError locating the first NUL byte or invalid UTF-8 sequence."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(f"{name}: error: this is UTF-16 text (a byte-order mark starts it); MLIR text must be UTF-8")
    if b"\0" in data:
        line, column = _line_and_column(data, data.index(b"\0"))
        raise InputError(f"{name}:{line}:{column}: error: a NUL byte: this is a binary file, not MLIR text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = _line_and_column(data, error.start)
        byte = data[error.start]
        raise InputError(
            f"{name}:{line}:{column}: error: invalid UTF-8 (byte 0x{byte:02x}); MLIR text must be UTF-8"
        ) from None


def write_output(text: str, output_file: str | None) -> None:
    """Writes `text` to `output_file` (standard output when None or '-'); OutputError on failure."""
    if output_file is None or output_file == STANDARD_STREAM:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    directory = os.path.dirname(output_file) or "."
    if not os.path.isdir(directory):
        raise OutputError(f"cannot write {output_file}: the directory {directory} does not exist")
    try:
        with open(output_file, "w", encoding="utf-8") as output:
            output.write(text)
    except OSError as error:
        raise OutputError(f"cannot write {output_file}: {error.strerror}") from None


def write_result(text: str, output_file: str | None, tool: str) -> int:
    """Writes `text` as `write_output` does; the exit code, with a message on failure."""
    try:
        write_output(text, output_file)
    except OutputError as error:
        sys.stderr.write(format_error(tool, str(error)) + "\n")
        return 1
    return 0


_LOCATED = re.compile(r"^[^\n]*?: (error|internal compiler error)")


def format_error(tool: str, message: str) -> str:
    """`message` as printed: located messages (`file:line:col: error: ...`) as they are, others
    after `tool: error: `."""
    return message if _LOCATED.match(message) else f"{tool}: error: {message}"


def pass_in_traceback(trace: TracebackType | None) -> str | None:
    """The name of the innermost compiler pass whose method is on the traceback, if any (for
    errors from `mlc.compile`, which runs passes without naming the one that failed)."""
    from xdsl.passes import ModulePass

    name = None
    while trace is not None:
        owner = trace.tb_frame.f_locals.get("self")
        if isinstance(owner, ModulePass):
            name = owner.name
        trace = trace.tb_next
    return name


def internal_error_message(error: BaseException, where: str) -> str:
    """The report of a bug in mlc: what was raised, in which pass, and what to do about it."""
    from mlc.diagnostics import InternalCompilerError, summarize_exception

    if isinstance(error, InternalCompilerError):
        summary = str(error)
    else:
        pass_name = pass_in_traceback(error.__traceback__)
        in_pass = f" in pass '{pass_name}'" if pass_name else ""
        summary = f"internal compiler error{in_pass}: {summarize_exception(error)}"
    return (
        f"{where}: {summary}\n"
        "note: this is a bug in mlc, not in the input; please report it with the input and the command line\n"
        "note: set MLC_DEBUG=1 to see the Python traceback"
    )


def print_traceback_when_debugging(error: BaseException) -> None:
    """With MLC_DEBUG set, the traceback of `error` (of what it wraps, for an internal error)."""
    if debugging():
        cause = error.__cause__ if error.__cause__ is not None else error
        traceback.print_exception(type(cause), cause, cause.__traceback__, file=sys.stderr)


def exit_code(run: Callable[[], int], tool: str = "mlc") -> int:
    """`run()`'s exit code, with every failure reported as a message (see the module docstring).

    0 when the reader of our output (e.g. `head`) stopped reading early: not an error of ours."""
    try:
        return run()
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    except MlcError as error:
        from mlc.diagnostics import InternalCompilerError

        if isinstance(error, InternalCompilerError):
            print_traceback_when_debugging(error)
            sys.stderr.write(internal_error_message(error, tool) + "\n")
        else:
            sys.stderr.write(format_error(tool, str(error)) + "\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"{tool}: interrupted\n")
        return 130
    except Exception as error:  # a bug in mlc, not bad input
        print_traceback_when_debugging(error)
        sys.stderr.write(internal_error_message(error, tool) + "\n")
        return 1
