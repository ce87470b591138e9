"""Measuring candidates: compile in worker processes, check once, time on one device at a time.

A `MeasureTask` is a workload (its graph text and entry), a target and a pipeline (a candidate
configuration spelled out), seeded inputs and the reference results with their error bounds
(`error_bounds.result_bounds`, computed once per workload by the search). Measuring it:

1. `compile_candidate`: `mlc.compile(text, device, entry, pipeline)` in a worker process; the
   result travels back as an artifact (`mlc.caching.artifact_of`, the bytes of a bundle);
2. `run_candidate`: the artifact is loaded by the runtime in the device's worker, called once and
   checked against the reference within the derived bounds (`check_results`), then timed:
   `warmup` calls, then `repeats` timed samples (`mlc.runtime.measurement.time_calls`; on the GPU
   each sample is back-to-back calls lasting at least `SAMPLE_SECONDS`); the cost is their median
   in seconds per call.

Anything that goes wrong (a compile error, a wrong result, a crash, a timeout) is a result with
`cost=None` and the error, never an exception: a failed candidate is a data point.

Two measurers share these steps:

* `LocalMeasurer` (the default): a pool of `workers` compile processes and one timing process
  per device (the CPU; each visible GPU), so that candidates are compiled in parallel but timed
  alone. A call past its timeout terminates its pool (a fresh one is started).
* `RayMeasurer` (`mlc/tuning/ray_measure.py`): one Ray task per candidate, compiling and timing,
  each holding a whole device (a GPU, or `cpus_per_task` cores) while it runs.

Processes are started with 'spawn' (no fork of a process that holds threads, a CUDA context or a
JIT), with the compile cache off (tuning candidates are not programs to keep).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import statistics
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.pool import AsyncResult, Pool

import numpy as np

SAMPLE_SECONDS = 1e-3
"""The least a timed sample lasts on the GPU (back-to-back calls, `time_calls`): a candidate's cost
is its kernels' time in a stream, as a model runs them, not its launch path's (the first GPU runs
timed each call alone: every row-reduction candidate cost ~43 us, its launch, whether its kernels
took 25 or 40)."""
COMPILE_TIMEOUT = 300.0
RUN_TIMEOUT = 120.0
MAX_WORKERS = 32
"""Compile processes at most (each holds an interpreter with mlc and xDSL imported)."""


@dataclass(frozen=True)
class MeasureTask:
    source: str
    entry: str
    target: str
    pipeline: str
    inputs: Sequence[np.ndarray]
    expected: Sequence[np.ndarray]
    bounds: Sequence[np.ndarray]
    warmup: int = 2
    repeats: int = 5


@dataclass(frozen=True)
class MeasureResult:
    cost: float | None
    """Median seconds per call; None when the candidate failed."""
    error: str | None = None
    compile_seconds: float = 0.0
    costs: tuple[float, ...] = field(default_factory=tuple)


def _describe(error: BaseException) -> str:
    from mlc.errors import MlcError

    if isinstance(error, MlcError):
        return f"{type(error).__name__}: {error}"
    return f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=4)}"


def compile_candidate(task: MeasureTask) -> tuple[bytes | None, str | None, float]:
    """(artifact bytes, None, seconds) or (None, error, seconds): step 1 of the docstring."""
    start = time.perf_counter()
    try:
        import mlc
        from mlc.caching import artifact_of, target_description
        from mlc.runtime.artifacts import encode

        compiled = mlc.compile(task.source, device=task.target, entry=task.entry, pipeline=task.pipeline)
        artifact = encode(artifact_of(compiled, target_description(task.target)))
        return artifact, None, time.perf_counter() - start
    except Exception as error:  # noqa: BLE001 - a candidate that does not compile is a measured failure
        return None, _describe(error), time.perf_counter() - start


def run_candidate(task: MeasureTask, artifact: bytes, compile_seconds: float = 0.0) -> MeasureResult:
    """Step 2 of the docstring: load, check once, time."""
    try:
        from mlc.caching import function_from_artifact
        from mlc.dialects.graph.error_bounds import check_results
        from mlc.runtime.artifacts import decode
        from mlc.runtime.measurement import time_calls

        compiled = function_from_artifact(decode(artifact))
        results = compiled(*task.inputs)
        results = results if isinstance(results, tuple) else (results,)
        comparison = check_results(results, task.expected, task.bounds)
        if comparison.failure is not None:
            return MeasureResult(None, f"wrong result: {comparison.failure}", compile_seconds)
        costs = time_calls(compiled, task.inputs, task.target, task.repeats, task.warmup, SAMPLE_SECONDS)
        return MeasureResult(statistics.median(costs), None, compile_seconds, tuple(costs))
    except Exception as error:  # noqa: BLE001 - a candidate that fails to run is a measured failure
        return MeasureResult(None, _describe(error), compile_seconds)


def compile_and_run(task: MeasureTask) -> MeasureResult:
    artifact, error, seconds = compile_candidate(task)
    if artifact is None:
        return MeasureResult(None, error, seconds)
    return run_candidate(task, artifact, seconds)


def _worker_setup(visible_device: str | None) -> None:
    os.environ["MLC_CACHE"] = "0"
    os.environ["MLC_TUNING"] = "0"
    if visible_device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = visible_device


def compile_and_run_in_worker(task: MeasureTask) -> MeasureResult:
    """`compile_and_run` in a process of someone else's pool (a Ray worker): cache off first."""
    _worker_setup(None)
    return compile_and_run(task)


class LocalMeasurer:
    """Compile pool plus one timing process per device (see the module docstring).

    `devices` names the GPUs to time on (as CUDA_VISIBLE_DEVICES spells them; default: every GPU
    this process sees). A candidate goes to a free device as soon as it has compiled, so the
    devices time while later candidates still compile."""

    def __init__(self, target: str, workers: int | None = None, timeout: float = RUN_TIMEOUT, devices: Sequence[str] | None = None):
        self.target = target
        self.workers = workers or max(1, min(MAX_WORKERS, os.cpu_count() or 1))
        self.timeout = timeout
        self.devices: list[str | None] = (list(devices) or [None]) if devices is not None else _visible_gpus() if target == "cuda" else [None]
        self._context = multiprocessing.get_context("spawn")
        self._compile_pool: Pool | None = None
        self._device_pools: dict[int, Pool] = {}

    @property
    def slots(self) -> int:
        """Candidates timed at once: one per device."""
        return len(self.devices)

    def _compiler(self) -> Pool:
        if self._compile_pool is None:
            self._compile_pool = self._context.Pool(self.workers, _worker_setup, (None,))
        return self._compile_pool

    def _device(self, index: int) -> Pool:
        if index not in self._device_pools:
            self._device_pools[index] = self._context.Pool(1, _worker_setup, (self.devices[index],))
        return self._device_pools[index]

    def measure(self, tasks: Sequence[MeasureTask]) -> list[MeasureResult]:
        compiling = [self._compile(task) for task in tasks]
        results: list[MeasureResult | None] = [None] * len(tasks)
        timing: dict[int, tuple[int, AsyncResult]] = {}  # device -> (task, its timing job)
        for i, pending in enumerate(compiling):
            try:
                artifact, error, seconds = pending.get(COMPILE_TIMEOUT)
            except multiprocessing.TimeoutError:
                artifact, error, seconds = None, f"compiling took more than {COMPILE_TIMEOUT:.0f} s", COMPILE_TIMEOUT
                self._restart_compiler()
                compiling[i + 1 :] = [self._compile(task) for task in tasks[i + 1 :]]
            if artifact is None:
                results[i] = MeasureResult(None, error, seconds)
                continue
            device = next((d for d in range(len(self.devices)) if d not in timing), None)
            if device is None:  # every device busy: wait for the one that started first
                device = next(iter(timing))
                self._collect(device, timing.pop(device), results)
            timing[device] = (i, self._device(device).apply_async(run_candidate, (tasks[i], artifact, seconds)))
        for device, job in list(timing.items()):
            self._collect(device, job, results)
        return [result for result in results if result is not None]

    def extract(self, source: str, configs: list[dict]) -> list[tuple[list[float], str] | str]:
        """`features.extract_from_text` of `configs`, spread over the compile processes."""
        from mlc.tuning.features import extract_from_text

        share = max(1, -(-len(configs) // self.workers))
        chunks = [configs[start : start + share] for start in range(0, len(configs), share)]
        jobs = [self._compiler().apply_async(extract_from_text, (source, self.target, chunk)) for chunk in chunks]
        return [result for job in jobs for result in job.get(COMPILE_TIMEOUT)]

    def _compile(self, task: MeasureTask) -> AsyncResult:
        # The compile workers need the program, not the (possibly large) inputs and references.
        return self._compiler().apply_async(compile_candidate, (dataclasses.replace(task, inputs=(), expected=(), bounds=()),))

    def _collect(self, device: int, job: tuple[int, AsyncResult], results: list[MeasureResult | None]) -> None:
        """Waits for one timing job and stores its result; a device that hangs or dies gets a
        fresh process."""
        index, pending = job
        try:
            results[index] = pending.get(self.timeout)
        except multiprocessing.TimeoutError:
            results[index] = MeasureResult(None, f"running took more than {self.timeout:.0f} s")
            self._device_pools.pop(device).terminate()
        except Exception as error:  # noqa: BLE001 - the worker died (a crash in the kernel)
            results[index] = MeasureResult(None, f"the measuring process failed: {error}")
            self._device_pools.pop(device).terminate()

    def _restart_compiler(self) -> None:
        if self._compile_pool is not None:
            self._compile_pool.terminate()
            self._compile_pool = None

    def close(self) -> None:
        self._restart_compiler()
        for pool in self._device_pools.values():
            pool.terminate()
        self._device_pools.clear()


def _visible_gpus() -> list[str | None]:
    """What each timing process's CUDA_VISIBLE_DEVICES names: one GPU of those this process sees."""
    from mlc.runtime.cuda import device_count

    inherited = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    names = inherited or [str(index) for index in range(device_count())]
    return list(names[: device_count()]) or [None]
