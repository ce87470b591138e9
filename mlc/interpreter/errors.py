"""The errors the interpreters raise: each names the op, and a race names buffer, element and threads.

`InterpreterError` is an `MlcError`, so the tools print it without a traceback. Subclasses let
tests and callers tell the kinds apart: `UnsupportedOperation` (the interpreter has no semantics
for an op), `OutOfBounds` (an active lane touched memory outside every buffer, or a memref index
outside its shape), `DataRace` (two threads touched one element without an ordering between
them) and `BarrierDivergence` (a barrier reached by only some threads of a block).
"""

from __future__ import annotations

from xdsl.ir import Operation

from mlc.errors import MlcError

_MAXIMUM_OP_TEXT = 160


def describe_op(op: Operation | None) -> str:
    """`'memref.store' (%v, %out[%i])`-like text naming `op` for a message."""
    if op is None:
        return ""
    if op.regions:
        text = op.name
    else:
        try:
            text = str(op)
        except Exception:  # pragma: no cover - printing is best effort inside an error path
            text = op.name
        text = " ".join(text.split())
        if len(text) > _MAXIMUM_OP_TEXT:
            text = text[: _MAXIMUM_OP_TEXT - 3] + "..."
    function = op.parent_op()
    while function is not None and "sym_name" not in function.properties:
        function = function.parent_op()
    where = ""
    if function is not None:
        where = f" in @{function.properties['sym_name'].data}"  # type: ignore[attr-defined]
    return f"'{op.name}'{where}: {text}" if text != op.name else f"'{op.name}'{where}"


class InterpreterError(MlcError):
    """Something went wrong while interpreting `op` (None when no single op is to blame)."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op: Operation | None = None
        if op is not None:
            self.locate(op)

    def locate(self, op: Operation) -> None:
        """Names `op` as the place of the error, unless a more precise op was named already."""
        if self.op is None:
            self.op = op
            self.args = (f"{self.args[0]}\n  at {describe_op(op)}", *self.args[1:])


class UnsupportedOperation(InterpreterError):
    """The interpreter has no semantics for this op (or for this use of it)."""


class OutOfBounds(InterpreterError):
    """An active lane read or wrote memory outside the buffer it addresses."""


class BarrierDivergence(InterpreterError):
    """A barrier was reached by only some threads of a block."""


class DataRace(InterpreterError):
    """Two threads accessed one element with no ordering between them, and at least one wrote.

    `kind` is "RAW" (read after another thread's write), "WAR" (write after another thread's
    read) or "WAW" (two writes); `buffer` names the buffer, `index` the element, and `threads`
    describes the two threads (the earlier access first).
    """

    def __init__(
        self,
        kind: str,
        buffer: str,
        index: tuple[int, ...],
        threads: tuple[str, str],
        detail: str,
        op: Operation | None = None,
    ):
        super().__init__(f"data race ({kind}) on {buffer} element {list(index)}: {detail}", op)
        self.kind = kind
        self.buffer = buffer
        self.index = index
        self.threads = threads
