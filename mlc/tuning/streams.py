"""Candidates in flight without rounds: what the search asks of a measurer, and how many to keep.

The search (`search.tune`) runs as a steady stream, not in rounds: it hands a measurer one
candidate at a time (`Stream.put`), takes results one at a time in the order they finish
(`Stream.next`), and proposes the next candidates, from the cost model as it is after the latest
result, whenever the measurer says it can start more (`Stream.wants`). No result waits for
another: a slow compile holds only its own candidate, and each device takes the next compiled
candidate as soon as it is free (the measurer's side: one feeding thread per device pulling from
one queue in `LocalMeasurer`; `ray.wait` for any result with `RayMeasurer`).

How many candidates to keep between the search and the devices (`lookahead`) is Little's law: a
candidate spends `compile` seconds compiling before a device can take it, and a device finishes
one every `device` seconds, so `devices * compile / device` candidates must be compiling for the
devices never to wait, plus a safety stock for the spread of compile times: the compile time
counted is the mean plus `SPREAD_COVERED` standard deviations, and one more candidate waits per
device. (With the mean alone and one spare a device, in the fifth measurement on the 2-GPU
machine, compiles averaging 1.0 s, several-fold apart between configurations, against 0.155 s of
device: one GPU idle 42% of the time while the search waited 30 of 45 s with its lookahead
full.) More would only make the
proposals staler (each is ranked by a model that has not seen the results still to come) and
fill the compile pool with work the devices cannot take yet; fewer leaves a device idle. The
estimates are the measurer's running means; before its first result it fills
`INITIAL_PER_DEVICE` per device.

`SequentialStream` adapts a measurer with only `measure(tasks)` (a synthetic one in tests, a
user's): it measures one candidate per device at a time, when asked for a result.

Limits: the lookahead is capped by the compile pool (`workers + devices`): past it, candidates
would only queue for a compile slot.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from typing import Any, Protocol

from mlc.tuning.device_worker import MeasureResult

INITIAL_PER_DEVICE = 4
"""Candidates kept in flight per device before the first compile and device times are known."""
SPREAD_COVERED = 2.0
"""Standard deviations of the compile time above its mean that the lookahead covers."""

__all__ = ["INITIAL_PER_DEVICE", "SPREAD_COVERED", "RunningSeconds", "SequentialStream", "Stream", "lookahead", "stream_of"]


class Stream(Protocol):
    def put(self, task: Any) -> int:
        """Starts measuring `task` (compile, then the first free device); returns its ticket."""
        ...

    def wants(self) -> int:
        """How many more candidates the measurer could start usefully now (see `lookahead`)."""
        ...

    def next(self) -> tuple[int, MeasureResult]:
        """The next result to finish (blocks until one does), with its ticket."""
        ...


def lookahead(devices: int, workers: int, compile_seconds: float | None, device_seconds: float | None, compile_spread: float = 0.0) -> int:
    """Candidates to keep between proposal and a device (compiling, or compiled and waiting):
    Little's law on the mean compile and device seconds, with the compile time's standard
    deviation `compile_spread` covered (see the module docstring)."""
    if not compile_seconds or not device_seconds:
        wanted = INITIAL_PER_DEVICE * devices
    else:
        wanted = devices * (math.ceil((compile_seconds + SPREAD_COVERED * compile_spread) / device_seconds) + 1)
    return max(1, min(wanted, workers + devices))


class RunningSeconds:
    """Running mean and standard deviation of a step's seconds (what `lookahead` is given)."""

    def __init__(self) -> None:
        self.count, self.total, self.squares = 0, 0.0, 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.squares += seconds * seconds

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def spread(self) -> float:
        if self.count < 2:
            return 0.0
        mean = self.total / self.count
        return math.sqrt(max(0.0, self.squares / self.count - mean * mean))


class SequentialStream:
    """A `Stream` over a measurer's `measure(tasks)`: up to `slots` candidates measured together,
    when a result is asked for and none is left from the previous call."""

    def __init__(self, measurer: Any):
        self.measurer = measurer
        self._queued: list[tuple[int, Any]] = []
        self._done: deque[tuple[int, MeasureResult]] = deque()
        self._tickets = itertools.count()

    def put(self, task: Any) -> int:
        ticket = next(self._tickets)
        self._queued.append((ticket, task))
        return ticket

    def wants(self) -> int:
        return max(0, getattr(self.measurer, "slots", 1) - len(self._queued) - len(self._done))

    def next(self) -> tuple[int, MeasureResult]:
        if not self._done:
            if not self._queued:
                raise RuntimeError("no candidate in flight")
            queued, self._queued = self._queued, []
            results = self.measurer.measure([task for _, task in queued])
            self._done.extend((ticket, outcome) for (ticket, _), outcome in zip(queued, results))
        return self._done.popleft()


def stream_of(measurer: Any) -> Stream:
    """The measurer's own stream (`measurer.stream()`), else a `SequentialStream` over it."""
    open_stream = getattr(measurer, "stream", None)
    return open_stream() if open_stream is not None else SequentialStream(measurer)
