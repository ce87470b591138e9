"""The base of every error mlc's tools print without a traceback, and the API's argument errors.

`ArgumentError` and `ArgumentTypeError` are what `mlc.compile` and compiled functions raise for a
bad argument: they are `MlcError`s (tools print them as messages) and also `ValueError` /
`TypeError`, which is what Python code expects to catch for a wrong value or a wrong kind of value.
`OutOfMemoryError` says which buffer did not fit; it is also a `MemoryError`. `CudaError` is a
failed CUDA driver call (`mlc/runtime/cuda.py` raises it; it lives here so that code that only
catches it, like the host runtime, need not import the CUDA layer). `PassFailure` is how a
pass (or a reader of an `mlc.*` attribute) reports the op it cannot handle; `mlc.diagnostics` turns
it into a located message. `format_bytes` writes the sizes these messages give.

Kept free of imports so that the runtime's CUDA layer can use it without loading xDSL.
"""


_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def format_bytes(count: int) -> str:
    """`count` bytes for people: '512 bytes', '16.0 KiB', '3.64 TiB'."""
    if count < 1024:
        return f"{count} bytes"
    exponent = min(len(_UNITS) - 1, (count.bit_length() - 1) // 10)  # 1024 ** exponent <= count
    value = count / 1024**exponent
    return f"{value:.3g} {_UNITS[exponent]}" if value < 100 else f"{value:.0f} {_UNITS[exponent]}"


class MlcError(Exception):
    """An error meant for the user: tools print its message, never a traceback."""


class ArgumentError(MlcError, ValueError):
    """An argument has the right kind but a wrong value (shape, dtype, device name, ...)."""


class ArgumentTypeError(MlcError, TypeError):
    """An argument is of a kind the function does not take (None for an array, ...)."""


class OutOfMemoryError(MlcError, MemoryError):
    """A buffer cannot be allocated; the message names it, its size and what was available."""


class CudaError(MlcError):
    """A CUDA driver call failed, or CUDA cannot be used; the message says what was being done."""

    def __init__(self, message: str, error_name: str | None = None):
        super().__init__(message)
        self.error_name = error_name


class PassFailure(MlcError):
    """A pass could not handle `op` (an xDSL operation); the message says why."""

    def __init__(self, op: object, message: str):
        super().__init__(message)
        self.op = op
        self.message = message
