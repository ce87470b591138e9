"""The CUDA stream each call of a GPU program runs on, and the order between calls on different streams.

A call of a compiled GPU function enqueues its copies and kernels (or its CUDA graph) on one stream:

1. `stream=`, when the caller gives it: an mlc `Stream`; a `torch.cuda.Stream` (any object with an
   integer `cuda_stream` attribute); an object with the `__cuda_stream__` protocol (CuPy, cuda.core);
   a cuda-python `CUstream`; or an integer handle: 0 and 1 (`CU_STREAM_LEGACY`) are the legacy
   default stream, 2 (`CU_STREAM_PER_THREAD`) the per-thread default stream, anything else the
   address of a `CUstream`;
2. else PyTorch's current stream on the program's device, when an argument or an output is a
   PyTorch CUDA tensor: the call is ordered after what PyTorch enqueued there before (the tensors'
   producers) and before what it enqueues after (their consumers), as a PyTorch op would be, also
   inside `with torch.cuda.stream(side_stream):`;
3. else the program's own stream: the legacy default stream, or the stream its CUDA graphs are
   captured on (`mlc.compile(..., cuda_graph=True)`); graphs are replayed on the call's stream.

With an explicit stream, ordering the producers of the inputs before it is the caller's business,
as in PyTorch (a tensor used on another stream than its producer's needs `wait_stream`); arrays that
name their stream (the array interface's `stream` key, DLPack) are still ordered before it.

Calls of one program share its buffers (intermediates, staging buffers of numpy arguments, the
results `run` keeps), so a call on another stream than the previous call's first makes its stream
wait for the previous one (`Stream.wait_for`: one event): calls stay ordered among themselves
whatever streams they use. Staying on one stream costs nothing; PyTorch's current stream costs one
C call per call to read.

Checks, before anything is enqueued: a value of another kind is an `ArgumentTypeError`; a negative
or wider than 64-bit handle an `ArgumentError`; a `torch.cuda.Stream` of another device, or a
handle the driver does not know as a stream of the device's primary context (`cuStreamGetCtx`, asked
once per distinct handle and program), an `ArgumentError` naming it. Limit: an integer handle is the
caller's word; one that points at no stream at all may crash the driver rather than fail the check.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mlc.errors import ArgumentError, ArgumentTypeError

if TYPE_CHECKING:
    from mlc.runtime.cuda import Device, Stream

STREAM_KINDS = (
    "an mlc Stream, a torch.cuda.Stream, an object with __cuda_stream__, a cuda-python CUstream "
    "or an integer handle (0: the legacy default stream)"
)
LEGACY_HANDLES = (0, 1)
"""The legacy default stream: the null handle, and `CU_STREAM_LEGACY`."""
PER_THREAD_HANDLE = 2
"""`CU_STREAM_PER_THREAD`: the calling thread's default stream."""
MAX_HANDLE = 2**64 - 1


def stream_handle(value: object) -> tuple[int, int | None]:
    """(the raw handle, the device ordinal the value names or None) of a `stream=` value.

    Reads the value only (no driver call): `ArgumentTypeError` for a value of another kind,
    `ArgumentError` for an integer outside 0..2**64-1."""
    from mlc.runtime.cuda import Stream

    if isinstance(value, Stream):
        return int(value.handle), value.device.ordinal
    ordinal = None
    if isinstance(value, int) and not isinstance(value, bool):
        handle: object = value
    elif hasattr(value, "__cuda_stream__"):
        handle = _stream_protocol_handle(value)
    elif hasattr(value, "cuda_stream"):
        handle = getattr(value, "cuda_stream", None)
        device_index = getattr(value, "device_index", None)
        ordinal = device_index if isinstance(device_index, int) else None
    elif type(value).__name__ == "CUstream" and hasattr(value, "getPtr"):
        handle = int(value)  # type: ignore[call-overload]
    else:
        raise ArgumentTypeError(f"stream: expected {STREAM_KINDS}, got {type(value).__name__}")
    if isinstance(handle, bool) or not isinstance(handle, int):
        raise ArgumentTypeError(
            f"stream: the {type(value).__name__}'s handle is a {type(handle).__name__}, not an integer"
        )
    if not 0 <= handle <= MAX_HANDLE:
        raise ArgumentError(f"stream={handle}: a stream handle is an address, from 0 to 2**64 - 1")
    return handle, ordinal


def _stream_protocol_handle(value: object) -> object:
    """The handle `value.__cuda_stream__()` gives, as (version, handle)."""
    try:
        _, handle = value.__cuda_stream__()  # type: ignore[attr-defined]
    except Exception as error:  # the object's own protocol failed: say so
        raise ArgumentTypeError(f"stream: {type(value).__name__}.__cuda_stream__() failed: {error}") from None
    return handle


def holds_torch_cuda_tensor(values: Iterable[object]) -> bool:
    """Whether any of `values` is a PyTorch CUDA tensor (PyTorch is not imported to find out)."""
    torch = sys.modules.get("torch")
    tensor_type = getattr(torch, "Tensor", None)
    if tensor_type is None:
        return False
    return any(isinstance(value, tensor_type) and value.is_cuda for value in values)


class CallStreams:
    """The streams the calls of one GPU program run on (see the module docstring)."""

    def __init__(self, device: Device, own: Stream):
        self.device = device
        self.own = own
        """The program's own stream: the legacy default one, or the one graphs are captured on."""
        self.current = own
        """The stream of the call in progress, else of the last call."""
        self._known: dict[int, Stream] = {int(own.handle): own}
        self._torch_current_raw_stream: Any = None

    def choose(self, requested: object, torch_tensors: bool) -> Stream:
        """The stream of a call: `requested` (a `stream=` value) or None, with `torch_tensors`
        whether an argument or output is a PyTorch CUDA tensor."""
        if requested is not None:
            handle, ordinal = stream_handle(requested)
            if ordinal is not None and ordinal != self.device.ordinal:
                raise ArgumentError(
                    f"stream: a stream of CUDA device {ordinal}, but the program runs on device "
                    f"{self.device.ordinal} ({self.device.properties.summary()})"
                )
            return self._stream(handle, requested)
        if torch_tensors:
            return self._stream(self._torch_current_stream(), None)
        return self.own

    def _torch_current_stream(self) -> int:
        if self._torch_current_raw_stream is None:
            torch = sys.modules["torch"]  # a PyTorch tensor was passed: PyTorch is imported
            self._torch_current_raw_stream = torch._C._cuda_getCurrentRawStream
        return int(self._torch_current_raw_stream(self.device.ordinal))

    def _stream(self, handle: int, requested: object) -> Stream:
        """The Stream of `handle`, made (and checked, when the caller named it) on first use."""
        if handle in LEGACY_HANDLES:
            handle = 0
        stream = self._known.get(handle)
        if stream is None:
            from mlc.runtime.cuda import Stream, driver_module

            if requested is not None and handle not in (0, PER_THREAD_HANDLE):
                self._check_context(handle, requested)
            stream = Stream(self.device, driver_module().CUstream(handle), owned=False)
            self._known[handle] = stream
        return stream

    def _check_context(self, handle: int, requested: object) -> None:
        from mlc.runtime.cuda import describe_error, driver_module

        driver = driver_module()
        error, context = driver.cuStreamGetCtx(driver.CUstream(handle))
        if error != driver.CUresult.CUDA_SUCCESS:
            name, description = describe_error(error)
            raise ArgumentError(
                f"stream={handle:#x} ({type(requested).__name__}): the driver does not know it as a stream "
                f"({name}: {description})"
            )
        if int(context) != int(self.device.context):
            raise ArgumentError(
                f"stream={handle:#x} ({type(requested).__name__}) belongs to another CUDA context than the "
                f"primary context of device {self.device.ordinal}, which mlc (like PyTorch) uses"
            )

    def switch_to(self, stream: Stream) -> bool:
        """Makes `stream` the current one, after the previous call's work; False if it already was."""
        if stream is self.current:
            return False
        stream.wait_for(self.current.exchange_value)
        self.current = stream
        return True
