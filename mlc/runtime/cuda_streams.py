"""Ordering and timing work on a CUDA device: `Stream`, `Event`, `time_on_device`, `CapturedGraph`.

What: streams (the legacy default stream, handle 0, or created ones; `wait_for` orders a stream
after another library's through an event), events for timing, and CUDA graphs: the launches a
function enqueues, captured once on a stream and replayed with one driver call.

Preconditions: a graph is captured on a created stream (the legacy default cannot be captured)
and is valid for the parameter values (pointers) it was captured with. Limits: handles are
destroyed by `close()` or garbage collection, with their context pushed (`call_in_context`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

from mlc.errors import CudaError
from mlc.runtime import cuda_driver
from mlc.runtime.cuda_devices import Device, get_device
from mlc.runtime.cuda_driver import call_in_context, check


LEGACY_STREAM_EXCHANGE_VALUE = 1
"""How `__cuda_array_interface__` (v3) and DLPack name the legacy default stream (0 is invalid)."""


class Stream:
    """A CUDA stream. `Stream.legacy_default()` is the default (handle 0); `Stream.create()` a new one."""

    def __init__(self, device: Device, handle: Any, owned: bool):
        self.device = device
        self.handle = handle
        self._driver = cuda_driver.driver_module()
        self._wait_event: Any = None
        self._finalizer = (
            weakref.finalize(self, _destroy_stream, self._driver, device.context, handle) if owned else None
        )
        if self._finalizer is not None:
            self._finalizer.atexit = False

    @classmethod
    def legacy_default(cls, device: Device | None = None) -> Stream:
        device = device or get_device()
        return cls(device, cuda_driver.driver_module().CUstream(0), owned=False)

    @classmethod
    def create(cls, device: Device | None = None, non_blocking: bool = True) -> Stream:
        """A new stream; a non-blocking one does not order itself against the legacy default stream."""
        device = device or get_device()
        driver = cuda_driver.driver_module()
        flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING) if non_blocking else 0
        with device.activated():
            handle = check(
                driver.cuStreamCreate(flags), f"creating a stream on {device.properties.summary()}"
            )
        return cls(device, handle, owned=True)

    @property
    def is_legacy_default(self) -> bool:
        return int(self.handle) == 0

    @property
    def exchange_value(self) -> int:
        """This stream as DLPack's `stream` argument and the array interface's `stream` key want it."""
        handle = int(self.handle)
        return LEGACY_STREAM_EXCHANGE_VALUE if handle == 0 else handle

    def synchronize(self) -> None:
        with self.device.activated():
            check(self._driver.cuStreamSynchronize(self.handle), "synchronizing a CUDA stream")

    def wait_for(self, foreign_stream: int | None) -> None:
        """Orders this stream after the work enqueued so far on `foreign_stream`.

        `foreign_stream` is a stream as the array interface and DLPack exchange them: None (no
        synchronization needed), 1 (legacy default), 2 (per-thread default) or a handle.
        """
        if foreign_stream is None or foreign_stream == self.exchange_value:
            return
        with self.device.activated():
            if self._wait_event is None:
                flags = int(self._driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
                self._wait_event = check(
                    self._driver.cuEventCreate(flags), "creating a stream-ordering event"
                )
                finalizer = weakref.finalize(
                    self, _destroy_event, self._driver, self.device.context, self._wait_event
                )
                finalizer.atexit = False
            foreign = self._driver.CUstream(int(foreign_stream))
            check(
                self._driver.cuEventRecord(self._wait_event, foreign),
                f"recording an event on stream {foreign_stream}",
            )
            check(
                self._driver.cuStreamWaitEvent(self.handle, self._wait_event, 0),
                f"ordering our stream after stream {foreign_stream}",
            )

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


class Event:
    """A CUDA event, for timing work on a stream (`elapsed_milliseconds_since`) or waiting for it."""

    def __init__(self, device: Device | None = None, timing: bool = True):
        self.device = device or get_device()
        self._driver = cuda_driver.driver_module()
        flags = 0 if timing else int(self._driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        with self.device.activated():
            self.handle = check(self._driver.cuEventCreate(flags), "creating a CUDA event")
        self._finalizer = weakref.finalize(
            self, _destroy_event, self._driver, self.device.context, self.handle
        )
        self._finalizer.atexit = False

    def record(self, stream: Stream | None = None) -> None:
        handle = self._driver.CUstream(0) if stream is None else stream.handle
        with self.device.activated():
            check(self._driver.cuEventRecord(self.handle, handle), "recording a CUDA event")

    def synchronize(self) -> None:
        with self.device.activated():
            check(self._driver.cuEventSynchronize(self.handle), "waiting for a CUDA event")

    def elapsed_milliseconds_since(self, start: Event) -> float:
        """Milliseconds between `start` and this event (both recorded; waits for this one)."""
        self.synchronize()
        with self.device.activated():
            return float(
                check(
                    self._driver.cuEventElapsedTime(start.handle, self.handle),
                    "reading the time between two events",
                )
            )

    def close(self) -> None:
        self._finalizer()


def time_on_device(
    function: Callable[[], object],
    repetitions: int = 100,
    warmup: int = 10,
    stream: Stream | None = None,
    device: Device | None = None,
) -> list[float]:
    """Milliseconds of device time of each of `repetitions` calls of `function`, after `warmup`.

    Each call is bracketed by two events recorded on `stream`: what is measured is the device's
    time between them, so work `function` enqueues elsewhere is not timed, and where the kernels
    are shorter than the host's time to enqueue them, the device's wait for the host is included.
    """
    device = device or (stream.device if stream is not None else get_device())
    for _ in range(warmup):
        function()
    events = [(Event(device), Event(device)) for _ in range(repetitions)]
    for start, end in events:
        start.record(stream)
        function()
        end.record(stream)
    return [end.elapsed_milliseconds_since(start) for start, end in events]


def _destroy_stream(driver: ModuleType, context: Any, handle: Any) -> None:
    call_in_context(driver, context, lambda: driver.cuStreamDestroy(handle), "destroying a stream")


class CapturedGraph:
    """The kernel launches `record` enqueues on `stream`, captured once into a CUDA graph and
    instantiated; `launch()` replays them all with one driver call.

    Capture records each launch with the parameter values it had (the pointers), so a graph is
    valid for exactly those buffers: callers keep one graph per set of pointers. The capture
    stream must not be the legacy default stream (which cannot be captured); capture is
    thread-local, so other threads may keep using the device meanwhile. A graph may be replayed
    on any stream of the device (`launch(stream)`). The device's context must be current.
    """

    def __init__(self, stream: Stream, record: Callable[[], None]):
        if stream.is_legacy_default:
            raise CudaError("a CUDA graph cannot be captured on the legacy default stream; use Stream.create()")
        driver = cuda_driver.driver_module()
        self.stream = stream
        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        check(driver.cuStreamBeginCapture(stream.handle, mode), "beginning a CUDA graph capture")
        try:
            record()
        finally:
            graph = check(driver.cuStreamEndCapture(stream.handle), "ending a CUDA graph capture")
        try:
            self.handle = check(driver.cuGraphInstantiate(graph, 0), "instantiating a CUDA graph")
        finally:
            check(driver.cuGraphDestroy(graph), "destroying a captured CUDA graph")
        self._launch = driver.cuGraphLaunch
        self._finalizer = weakref.finalize(self, _destroy_graph, driver, stream.device.context, self.handle)
        self._finalizer.atexit = False

    def launch(self, stream: Stream | None = None) -> None:
        """Replays the graph on `stream` (default: the stream it was captured on)."""
        handle = (stream or self.stream).handle
        check(self._launch(self.handle, handle), "launching a CUDA graph")


def _destroy_graph(driver: ModuleType, context: Any, handle: Any) -> None:
    call_in_context(driver, context, lambda: driver.cuGraphExecDestroy(handle), "destroying a CUDA graph")


def _destroy_event(driver: ModuleType, context: Any, handle: Any) -> None:
    call_in_context(driver, context, lambda: driver.cuEventDestroy(handle), "destroying an event")
