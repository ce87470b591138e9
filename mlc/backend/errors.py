"""The errors of the backend: what the tools print when code generation cannot proceed.

`BackendError` is the base of everything the backend raises for people (an `MlcError`, so the
tools print its message without a traceback). `TranslationError` additionally carries the op that
could not be translated, like a pass's `PassFailure`, so that `mlc-opt -t llvm` and
`mlc-translate` point at it in the source; its `str()` names the op, so that callers of the Python
API who print the error see which op failed too.
"""

from __future__ import annotations

from xdsl.ir import Operation

from mlc.diagnostics import MlcError, PassFailure


class BackendError(MlcError):
    """Code generation failed: LLVM rejected the module, a library is missing, a bad option."""


class TranslationError(PassFailure, BackendError):
    """An op (or its function or type) cannot be translated to LLVM IR; the message says why."""

    def __init__(self, op: Operation, message: str):
        super().__init__(op, message)

    def __str__(self) -> str:
        return f"'{self.op.name}' op {self.message}"
