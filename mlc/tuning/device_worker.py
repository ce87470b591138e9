"""The timing side of measurement: load a compiled candidate, check it once, time it on one device.

`run_candidate(task, artifact, compile_seconds, prepared)` is what every measurer runs where the
device is: the artifact (`mlc.caching.artifact_of`'s bytes, with the GPU's compiled image when
the compile worker kept one: no driver JIT here) is loaded, called once on the workload's inputs
and checked against the reference within its derived bounds (`Prepared.check`: in the result's
own precision first, `check_results` deciding anything near a bound), then timed
(`time_calls`: `warmup` calls, then `repeats` samples; on the GPU each sample is back-to-back
calls lasting at least the task's `min_sample_seconds`, after `warmup_samples` samples thrown
away: `measure.TimingProtocol`); the cost is the samples' median.

`Prepared` is a workload's inputs and reference as the device keeps them: on the GPU the inputs
are copied to the device once and every candidate of the workload is called and timed on those
buffers (a candidate costs no host-to-device copy and no pickled arrays). `device_loop` is the
body of `LocalMeasurer`'s timing processes: it receives a workload's reference once
("reference" messages) and then candidates ("run"), keeping the `REFERENCES_KEPT` most recently
used references (the parent mirrors them, so it knows which it must send again). `TimingActor`
is the same for `RayMeasurer`.

Each result carries where the time went (`MeasureResult.phases`: load, check, time; the compile
worker adds compile), which the benchmark sums to tell a compile-bound tuning from a
device-bound one. Anything that goes wrong is a result with `cost=None`, never an exception.
"""

from __future__ import annotations

import statistics
import time
import traceback
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

REFERENCES_KEPT = 2
"""Workloads whose inputs a timing process keeps (on the device for the GPU)."""


@dataclass(frozen=True)
class MeasureResult:
    cost: float | None
    """Median seconds per call; None when the candidate failed."""
    error: str | None = None
    compile_seconds: float = 0.0
    costs: tuple[float, ...] = field(default_factory=tuple)
    phases: tuple[tuple[str, float], ...] = ()
    """Seconds spent in each step where the device is: ('load', s), ('check', s), ('time', s)."""
    device: int | None = None
    """Which of the measurer's devices timed it (None: not timed, or not said)."""
    compile_usage: tuple[tuple[str, float], ...] = ()
    """What the compiling process used for it (`measure.COMPILE_USAGE`; empty: not said)."""


def describe_error(error: BaseException) -> str:
    from mlc.errors import MlcError

    if isinstance(error, MlcError):
        return f"{type(error).__name__}: {error}"
    return f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=4)}"


@dataclass
class Prepared:
    """A workload's inputs, expected results and bounds where the candidates run."""

    target: str
    inputs: Sequence[np.ndarray]
    expected: Sequence[np.ndarray]
    bounds: Sequence[np.ndarray]
    device_inputs: list[Any] | None = None
    """The inputs copied to the GPU (made on first use, in the process that owns the device)."""
    lower_bounds: list[np.ndarray | None] | None = None
    """Per result, `inner_bounds` (made on first use)."""

    def check(self, results: Sequence[np.ndarray]) -> str | None:
        """None when every result is within its bounds, else `check_results`' failure. A fast
        test in the results' own precision accepts what is certainly within (`inner_bounds`);
        anything else (a NaN, an element near its bound, a shape or type that differs) is
        decided by the exact float64 comparison. The tuner checks every candidate once, and in
        float64 an 8M-element result costs ~0.2 s of the device's timing process."""
        if self.lower_bounds is None:
            self.lower_bounds = [inner_bounds(want, bound) for want, bound in zip(self.expected, self.bounds)]
        if len(results) == len(self.expected) and all(
            lower is not None and got.shape == want.shape and got.dtype == want.dtype and _certainly_within(got, want, lower)
            for got, want, lower in zip(results, self.expected, self.lower_bounds)
        ):
            return None
        from mlc.dialects.graph.error_bounds import check_results

        return check_results(results, self.expected, self.bounds).failure

    def arguments(self) -> Sequence[Any]:
        if self.target != "cuda":
            return self.inputs
        if self.device_inputs is None:
            from mlc.runtime.cuda import DeviceBuffer

            self.device_inputs = [DeviceBuffer.from_numpy(np.ascontiguousarray(a)) for a in self.inputs]
        return self.device_inputs


def run_candidate(task: Any, artifact: bytes, compile_seconds: float = 0.0, prepared: Prepared | None = None) -> MeasureResult:
    """Load, check once, time (see the module docstring); `prepared` defaults to `task`'s arrays."""
    prepared = prepared or Prepared(task.target, task.inputs, task.expected, task.bounds)
    phases: list[tuple[str, float]] = []
    try:
        from mlc.caching import function_from_artifact
        from mlc.runtime.artifacts import decode
        from mlc.runtime.measurement import time_calls, time_device_calls

        start = time.perf_counter()
        compiled = function_from_artifact(decode(artifact))
        arguments = prepared.arguments()
        phases.append(("load", time.perf_counter() - start))
        start = time.perf_counter()
        if task.target == "cuda":
            outputs = list(compiled.run_on_device(*arguments))
            compiled.synchronize()
            results: tuple = tuple(output.copy_to_host() for output in outputs)
        else:
            called = compiled(*arguments)
            results = called if isinstance(called, tuple) else (called,)
        failure = prepared.check(results)
        phases.append(("check", time.perf_counter() - start))
        if failure is not None:
            return MeasureResult(None, f"wrong result: {failure}", compile_seconds, phases=tuple(phases))
        start = time.perf_counter()
        if task.target == "cuda":
            samples = time_device_calls(compiled, arguments, outputs, task.warmup_samples + task.repeats, task.warmup, task.min_sample_seconds)
            costs = samples[task.warmup_samples :]
        else:
            costs = time_calls(compiled, arguments, task.target, task.repeats, task.warmup)
        phases.append(("time", time.perf_counter() - start))
        return MeasureResult(statistics.median(costs), None, compile_seconds, tuple(costs), tuple(phases))
    except Exception as error:  # noqa: BLE001 - a candidate that fails to run is a measured failure
        return MeasureResult(None, describe_error(error), compile_seconds, phases=tuple(phases))


def inner_bounds(expected: np.ndarray, bounds: np.ndarray) -> np.ndarray | None:
    """Bounds in `expected`'s floating type, rounded down with a margin, such that a difference
    computed in that type (`|got - want|`, rounded) at most this is, exactly, within `bounds`:
    the rounded difference is within a factor 1 + eps of the exact one (exact when subnormal),
    and the margin 1 - 4 eps absorbs it. Unknown (non-finite) bounds become +inf (a NaN
    difference still fails the fast test). None for non-float results (the exact test decides)."""
    if not np.issubdtype(expected.dtype, np.floating) or np.dtype(expected.dtype).itemsize < 2:
        return None
    bounds = np.asarray(bounds, dtype=np.float64)
    with np.errstate(all="ignore"):
        scaled = bounds * (1.0 - 4.0 * float(np.finfo(expected.dtype).eps))
        lower = scaled.astype(expected.dtype)
        above = lower.astype(np.float64) > scaled
        lower[above] = np.nextafter(lower[above], np.zeros((), expected.dtype))
        lower[~np.isfinite(bounds)] = np.inf
    return lower


def _certainly_within(got: np.ndarray, want: np.ndarray, lower: np.ndarray) -> bool:
    with np.errstate(all="ignore"):
        difference = np.abs(np.subtract(got, want))
        return bool(np.all(difference <= lower))


def warm_up(target: str) -> None:
    """Imports what compiling and timing a candidate use and, on the GPU, makes the context: the
    first candidate of a fresh process would otherwise pay for it (`LocalMeasurer.warm_up`)."""
    import mlc.caching  # noqa: F401
    import mlc.compiler  # noqa: F401
    import mlc.tuning.features  # noqa: F401
    from mlc.transforms import all_passes

    for load in all_passes().values():  # the passes' modules load on first use: in the first candidate's time
        load()

    if target == "cuda":
        from mlc.runtime import get_device

        get_device()


def device_loop(connection: Connection, environment: dict[str, str]) -> None:
    """A timing process's body (see the module docstring): until "stop" or the parent is gone."""
    import os

    os.environ.update(environment)
    references: OrderedDict[int, Prepared] = OrderedDict()
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message[0] == "stop":
            return
        if message[0] == "warm":
            warm_up(message[1])
            connection.send(None)
            continue
        if message[0] == "reference":
            _, key, target, inputs, expected, bounds = message
            references[key] = Prepared(target, inputs, expected, bounds)
            while len(references) > REFERENCES_KEPT:
                references.popitem(last=False)
            continue
        _, key, task, artifact, compile_seconds = message
        if key not in references:  # the parent's mirror of `references` disagrees: a bug, not a crash
            connection.send(MeasureResult(None, f"the timing process does not hold reference {key}", compile_seconds))
            continue
        references.move_to_end(key)  # as the parent's mirror does on every use
        connection.send(run_candidate(task, artifact, compile_seconds, references[key]))


class TimingActor:
    """`device_loop`'s work as a Ray actor (`RayMeasurer`: one per device, made remote there):
    keeps the `REFERENCES_KEPT` most recent workloads' inputs on its device."""

    def __init__(self) -> None:
        import os

        os.environ.update({"MLC_CACHE": "0", "MLC_TUNING": "0"})
        self.references: OrderedDict[int, Prepared] = OrderedDict()

    def run(self, key: int, arrays: tuple, task: Any, compiled: tuple[bytes | None, str | None, float]) -> MeasureResult:
        artifact, error, seconds = compiled
        if artifact is None:
            return MeasureResult(None, error, seconds)
        if key not in self.references:
            self.references[key] = Prepared(task.target, *arrays)
            while len(self.references) > REFERENCES_KEPT:
                self.references.popitem(last=False)
        self.references.move_to_end(key)
        return run_candidate(task, artifact, seconds, self.references[key])
