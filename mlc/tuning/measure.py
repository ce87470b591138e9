"""Measuring candidates: compile in worker processes, check once, time on one device at a time.

A `MeasureTask` is a workload (its graph text and entry), a target and a pipeline (a candidate
configuration spelled out), seeded inputs and the reference results with their error bounds
(`error_bounds.result_bounds`, computed once per workload by the search). Measuring it:

1. `compile_candidate`: `mlc.compile(text, device, entry, pipeline)` in a worker process; the
   result travels back as an artifact (`mlc.caching.artifact_of`, the bytes of a bundle). On the
   GPU the compile workers run with a compile cache of the measurer's own (a temporary
   directory): the cache keeps the driver's compiled image (cubin) in the artifact, so the
   timing process loads it without a second JIT of the PTX, and a candidate compiled before by
   this measurer (the same program text and pipeline: an exhaustive search after a learned one)
   is a cache hit.
2. `device_worker.run_candidate`: load, call once, check against the reference, time (see there)
   by the task's timing protocol (`TimingProtocol`, below).

The timing protocol on the GPU (`GPU_PROTOCOL`), what real tuners spend per candidate: Triton's
`do_bench` (what `@triton.autotune` times each configuration with) warms up for 25 ms and times
for 100 ms; TVM's GPU tutorials ask for `min_repeat_ms` of 150-300 ms. Here: a sizing sample,
then `warmup_samples` = 2 samples of back-to-back calls timed and thrown away (>= 20 ms more of
warm-up: clocks up, caches and TLBs in their steady state), then `samples` = 10 samples of at
least `sample_seconds` = 10 ms each (>= 100 ms timed); the cost is their median. Why these
numbers: a 10 ms sample puts the CUDA events' resolution (~0.5 us) and one launch's latency
(paid once a sample) below 0.1% of it, for kernels of a
few microseconds as for milliseconds; with 10 samples the 2nd and 9th smallest bracket the true
median with 97.9% confidence (order statistics: 1 - 2 * P(Binomial(10, 1/2) <= 1) = 1 - 22/1024),
so two candidates whose brackets do not overlap are ordered at that confidence, which is what a
search needs of a cost (the benchmark prints the brackets' widths). So a candidate holds its GPU
for at least ~0.13 s whatever its kernel's length: by design the devices, not the host, bound a
GPU tuning once the compile pool outruns them. The CPU (`CPU_PROTOCOL`): 5 timed calls after 2
untimed (its tests and CI tune there; the CPU timing is not what the 2-GPU scaling is about).

Anything that goes wrong (a compile error, a wrong result, a crash, a timeout) is a result with
`cost=None` and the error, never an exception: a failed candidate is a data point.

Two measurers share these steps:

* `LocalMeasurer` (the default): a pool of `workers` compile processes shared by all devices
  (default: one per core of the host), one timing process per device (the CPU; each visible
  GPU), and a pool of as many processes for the search's feature extraction (`extract`,
  ~50 ms a configuration against compiling's 0.3-2 s), which is on the search's critical path:
  in the compile pool it would wait behind the compiles in flight. As many, because a proposal
  draws (and waits for) one configuration per extraction process at a time, and a small space is
  extracted in the background at the start of its tuning (`prefetch.py`), when few compiles run:
  with half as many, proposals during that phase could not keep two GPUs fed (2-3x the round
  trips; a wall-clock simulation of the 2-GPU benchmark left each GPU idle 2.5 s of 16). The
  extraction processes never open a device: the search's GPU architecture (`arch`) travels with
  each extraction. (When each asked the device itself, the 2-GPU machine had 48 more CUDA
  contexts on GPU 0, opened during the tuning, beside 32 busy compile processes; compiles took
  2.8 s there. With this, the parsed workload kept per process and the draws extracted ahead,
  they took 0.4-0.6 s, all of it CPU: BENCHMARKS.md, the sixth measurement; which change freed
  them is not isolated.) `extract_soon` is `extract` without waiting (`Search.speculate`).
  `submit(tasks)` returns at once (a `Pending`): the tasks are queued for compiling, and
  each compiled candidate goes to the first free device (one thread per device feeds its timing
  process), so that a search can propose and compile its next batch while this one is timed.
  A workload's inputs and reference are sent to a timing process once, not with each candidate
  (`device_worker.device_loop`). A compile past `COMPILE_TIMEOUT` restarts the compile pool (the
  other compiles in flight are queued again); a timing process past the run timeout, or one that
  dies, is replaced.
* `RayMeasurer` (`mlc/tuning/ray_measure.py`): one Ray task per candidate, compiling and timing,
  each holding a whole device (a GPU, or `cpus_per_task` cores) while it runs.

Processes are started with 'spawn' (no fork of a process that holds threads, a CUDA context or a
JIT). Outside the compile cache above, the compile cache is off (candidates are not programs to
keep) and the tuning database is not consulted.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import multiprocessing
import os
import queue
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.pool import Pool
from typing import Any

import numpy as np

from mlc.tuning.device_worker import REFERENCES_KEPT, MeasureResult, describe_error, device_loop, run_candidate, warm_up
from mlc.tuning.space import device_arch
from mlc.tuning.streams import RunningSeconds, lookahead

COMPILE_TIMEOUT = 300.0
RUN_TIMEOUT = 120.0
MAX_WORKERS = 32
"""Compile processes at most (each holds an interpreter with mlc and xDSL imported)."""
WORKER_NICENESS = 5
"""Added to the compile and on-demand extraction processes' niceness: when the host's cores are
all busy, the timing processes, whose samples launch every call from the host, and the search's
own process run first."""
BACKGROUND_NICENESS = 15
"""The background extraction's (`extract_later`): it takes what CPU the others leave."""
REFERENCES_HELD = 8
"""Workloads' arrays the parent keeps identified (see `LocalMeasurer._reference_key`)."""

__all__ = ["COMPILE_TIMEOUT", "CPU_PROTOCOL", "GPU_PROTOCOL", "RUN_TIMEOUT", "LocalMeasurer", "MeasureResult", "MeasureTask", "Pending", "TimingProtocol", "protocol_for", "run_candidate"]


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
    min_sample_seconds: float = 0.0
    """GPU only: the least a timed sample lasts (see `TimingProtocol`)."""
    warmup_samples: int = 0
    """GPU only: samples timed and thrown away before the `repeats` kept."""

    def without_arrays(self) -> MeasureTask:
        """What a process that already has (or does not need) the arrays is sent."""
        return dataclasses.replace(self, inputs=(), expected=(), bounds=())


@dataclass(frozen=True)
class TimingProtocol:
    """How each candidate is timed (the module docstring says why the GPU's is what it is)."""

    samples: int
    """Timed samples kept; the cost is their median."""
    warmup: int
    """Untimed calls first."""
    sample_seconds: float = 0.0
    """GPU: the least a sample of back-to-back calls lasts."""
    warmup_samples: int = 0
    """GPU: samples timed and thrown away after the untimed calls."""

    def task(self, source: str, entry: str, target: str, pipeline: str, inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], bounds: Sequence[np.ndarray]) -> MeasureTask:
        return MeasureTask(source, entry, target, pipeline, inputs, expected, bounds, self.warmup, self.samples, self.sample_seconds, self.warmup_samples)


GPU_PROTOCOL = TimingProtocol(samples=10, warmup=2, sample_seconds=10e-3, warmup_samples=2)
CPU_PROTOCOL = TimingProtocol(samples=5, warmup=2)


def protocol_for(target: str) -> TimingProtocol:
    return GPU_PROTOCOL if target == "cuda" else CPU_PROTOCOL


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
        return None, describe_error(error), time.perf_counter() - start


COMPILE_USAGE = ("cpu s", "blocked", "preempted", "page faults")
"""What `compile_candidate_timed` reports of a compiling process (`MeasureResult.compile_usage`)."""


def compile_candidate_timed(task: MeasureTask) -> tuple[bytes | None, str | None, float, tuple[tuple[str, float], ...]]:
    """`compile_candidate` and what its process used meanwhile (`COMPILE_USAGE`, from getrusage):
    CPU seconds of all its threads (the backend's and the driver's JIT too), voluntary context
    switches (waits: for the device, the driver, the disk), involuntary ones (preempted: more
    runnable threads than cores) and page faults (memory first touched). A compile whose wall
    time is well above its CPU time waited, and these say for what."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF)
    artifact, error, seconds = compile_candidate(task)
    after = resource.getrusage(resource.RUSAGE_SELF)
    used = (
        after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
        after.ru_nvcsw - before.ru_nvcsw,
        after.ru_nivcsw - before.ru_nivcsw,
        after.ru_minflt + after.ru_majflt - before.ru_minflt - before.ru_majflt,
    )
    return artifact, error, seconds, tuple(zip(COMPILE_USAGE, map(float, used)))


def _worker_setup(environment: dict[str, str], niceness: int) -> None:
    os.environ.update(environment)
    os.nice(niceness)


class Pending:
    """The results of submitted tasks, in the tasks' order, filled in as they arrive;
    `on_result(index, result)` is called with each as it arrives (a stream's queue)."""

    def __init__(self, count: int, on_result: Callable[[int, MeasureResult], None] | None = None):
        self._results: list[MeasureResult | None] = [None] * count
        self._left = count
        self._arrived = threading.Condition()
        self._on_result = on_result

    def set(self, index: int, result: MeasureResult) -> None:
        with self._arrived:
            if self._results[index] is not None:
                return
            self._results[index] = result
            self._left -= 1
            self._arrived.notify_all()
        if self._on_result is not None:
            self._on_result(index, result)

    def get(self) -> list[MeasureResult]:
        with self._arrived:
            self._arrived.wait_for(lambda: self._left == 0)
            return list(self._results)  # type: ignore[arg-type]


@dataclass
class _Compiling:
    pending: Pending
    index: int
    task: MeasureTask
    reference: int
    started: float
    compile_usage: tuple[tuple[str, float], ...] = ()


class _TimingProcess:
    """One device's timing process (`device_worker.device_loop`) and the references it holds."""

    def __init__(self, context: Any, environment: dict[str, str]):
        self._connection, child = context.Pipe()
        self._process = context.Process(target=device_loop, args=(child, environment), daemon=True)
        self._process.start()
        child.close()
        self._held: OrderedDict[int, None] = OrderedDict()

    def run(self, item: _Compiling, artifact: bytes, seconds: float, timeout: float) -> MeasureResult:
        """Raises TimeoutError, or EOFError/OSError when the process died."""
        task = item.task
        if item.reference not in self._held:
            self._connection.send(("reference", item.reference, task.target, task.inputs, task.expected, task.bounds))
            self._held[item.reference] = None
            while len(self._held) > REFERENCES_KEPT:  # as the process drops them
                self._held.popitem(last=False)
        else:
            self._held.move_to_end(item.reference)
        self._connection.send(("run", item.reference, task.without_arrays(), artifact, seconds))
        if not self._connection.poll(timeout):
            raise TimeoutError
        return self._connection.recv()

    def warm(self, target: str) -> None:
        self._connection.send(("warm", target))
        self._connection.recv()

    def close(self) -> None:
        try:
            self._connection.send(("stop",))
        except OSError:
            pass
        self._process.join(1.0)
        if self._process.is_alive():
            self._process.terminate()
        self._connection.close()


class LocalMeasurer:
    """Shared compile pool plus one timing process per device (see the module docstring).

    `devices` names the GPUs to time on (as CUDA_VISIBLE_DEVICES spells them; default: every GPU
    this process sees); `workers` the compile processes (default: the host's cores, at most
    `MAX_WORKERS`)."""

    def __init__(self, target: str, workers: int | None = None, timeout: float = RUN_TIMEOUT, devices: Sequence[str] | None = None):
        self.target = target
        self.workers = workers or max(1, min(MAX_WORKERS, os.cpu_count() or 1))
        self.extract_workers = self.workers
        self.background_workers = max(1, self.workers // 2)
        self.timeout = timeout
        self.devices: list[str | None] = (list(devices) or [None]) if devices is not None else _visible_gpus() if target == "cuda" else [None]
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.RLock()
        self._compile_pool: Pool | None = None
        self._extract_pool: Pool | None = None
        self._background_pool: Pool | None = None
        self._cache_directory: str | None = None
        self._compiling: dict[int, _Compiling] = {}
        self._jobs = itertools.count()
        self._compiled: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._timing: list[_TimingProcess | None] = [None] * len(self.devices)
        self._references: OrderedDict[tuple[int, int, int], tuple[int, MeasureTask]] = OrderedDict()
        self._reference_numbers = itertools.count()
        self._closed = False
        self._seconds = {"compile": RunningSeconds(), "device": RunningSeconds()}
        """The compile workers' and the devices' seconds a candidate."""

    @property
    def slots(self) -> int:
        """Candidates timed at once: one per device."""
        return len(self.devices)

    def measure(self, tasks: Sequence[MeasureTask]) -> list[MeasureResult]:
        return self.submit(tasks).get()

    def submit(self, tasks: Sequence[MeasureTask], on_result: Callable[[int, MeasureResult], None] | None = None) -> Pending:
        """Queues `tasks` (see the module docstring); their results arrive in the `Pending`."""
        pending = Pending(len(tasks), on_result)
        with self._lock:
            for index, task in enumerate(tasks):
                self._submit_compile(_Compiling(pending, index, task, self._reference_key(task), 0.0))
            self._start_devices()
        return pending

    def stream(self) -> LocalStream:
        """Candidates one at a time, results as they finish (`streams.Stream`)."""
        return LocalStream(self)

    def wants(self) -> int:
        """Candidates to start now: `streams.lookahead` of the mean compile and device seconds,
        less those compiling or compiled and waiting for a device."""
        with self._lock:
            compiles, device = self._seconds["compile"], self._seconds["device"]
            wanted = lookahead(len(self.devices), self.workers, compiles.mean, device.mean, compiles.spread)
            waiting = len(self._compiling) + self._compiled.qsize()
        return max(0, wanted - waiting)

    def _count(self, step: str, seconds: float) -> None:
        with self._lock:
            self._seconds[step].add(seconds)

    def warm_up(self) -> None:
        """Starts every process now and loads in each what its first candidate would (imports, the
        GPU's context): a benchmark can then time tuning alone, not the measurer's start."""
        with self._lock:
            jobs = [self._compiler().apply_async(warm_up, (self.target,)) for _ in range(self.workers)]
            jobs += [self._extractor().apply_async(warm_up, ("cpu",)) for _ in range(self.extract_workers)]
            jobs += [self._background().apply_async(warm_up, ("cpu",)) for _ in range(self.background_workers)]
        for device in range(len(self.devices)):
            self._timing_process(device).warm(self.target)
        for job in jobs:
            job.get(COMPILE_TIMEOUT)

    @functools.cached_property
    def arch(self) -> str:
        """The GPU architecture the search's spaces are made for (`space.device_arch`; the search's
        process has opened the device already), sent with every extraction: the extraction
        processes then never open a device of their own."""
        return device_arch(self.target)

    def extract(self, source: str, configs: list[dict]) -> list[tuple[list[float], str] | str]:
        """`features.extract_from_text` of `configs`, spread over the extraction processes."""
        from mlc.tuning.features import extract_from_text

        share = max(1, -(-len(configs) // self.extract_workers))
        chunks = [configs[start : start + share] for start in range(0, len(configs), share)]
        arch = self.arch
        with self._lock:
            jobs = [self._extractor().apply_async(extract_from_text, (source, self.target, chunk, arch)) for chunk in chunks]
        return [result for job in jobs for result in job.get(COMPILE_TIMEOUT)]

    def extract_soon(self, source: str, configs: list[dict]) -> Handles:
        """`extract` without waiting: a handle with `ready()` and `get()` (`Search.speculate`)."""
        from mlc.tuning.features import extract_from_text

        share = max(1, -(-len(configs) // self.extract_workers))
        chunks = [configs[start : start + share] for start in range(0, len(configs), share)]
        arch = self.arch
        with self._lock:
            return Handles([self._extractor().apply_async(extract_from_text, (source, self.target, chunk, arch)) for chunk in chunks])

    def extract_later(self, source: str, configs: list[dict]) -> Any:
        """`features.extract_from_text` of `configs` in one process of the background pool (its own,
        so that an on-demand extraction never queues behind it; the lowest priority): a handle with
        `ready()` and `get()` (`prefetch.Prefetch`)."""
        from mlc.tuning.features import extract_from_text

        arch = self.arch
        with self._lock:
            return self._background().apply_async(extract_from_text, (source, self.target, configs, arch))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            stopped, self._compile_pool = self._compile_pool, None
        for pool in (stopped, self._extract_pool, self._background_pool):
            if pool is not None:
                pool.terminate()
        self._extract_pool = self._background_pool = None
        for _ in self._threads:
            self._compiled.put(None)
        for thread in self._threads:
            thread.join()
        self._threads.clear()
        for process in self._timing:
            if process is not None:
                process.close()
        self._timing = [None] * len(self.devices)
        if self._cache_directory is not None:
            shutil.rmtree(self._cache_directory, ignore_errors=True)
            self._cache_directory = None

    # -- compiling -------------------------------------------------------------------------

    def _reference_key(self, task: MeasureTask) -> int:
        """A number for the task's arrays: tasks of one workload share the same array objects
        (the search makes them once), and holding them keeps their identities unique."""
        identity = (id(task.inputs), id(task.expected), id(task.bounds))
        if identity not in self._references:
            self._references[identity] = (next(self._reference_numbers), task)
            while len(self._references) > REFERENCES_HELD:
                self._references.popitem(last=False)
        self._references.move_to_end(identity)
        return self._references[identity][0]

    def _compiler(self) -> Pool:
        if self._compile_pool is None:
            environment = {"MLC_TUNING": "0", "MLC_CACHE": "0"}
            if self.target == "cuda":  # the cubin travels in the artifact; repeated candidates hit
                self._cache_directory = self._cache_directory or tempfile.mkdtemp(prefix="mlc-tune-compiled-")
                environment = {"MLC_TUNING": "0", "MLC_CACHE": "1", "MLC_CACHE_DIR": self._cache_directory}
            self._compile_pool = self._context.Pool(self.workers, _worker_setup, (environment, WORKER_NICENESS))
        return self._compile_pool

    def _extractor(self) -> Pool:
        if self._extract_pool is None:
            self._extract_pool = self._context.Pool(self.extract_workers, _worker_setup, ({"MLC_TUNING": "0", "MLC_CACHE": "0"}, WORKER_NICENESS))
        return self._extract_pool

    def _background(self) -> Pool:
        if self._background_pool is None:
            environment = {"MLC_TUNING": "0", "MLC_CACHE": "0"}
            self._background_pool = self._context.Pool(self.background_workers, _worker_setup, (environment, BACKGROUND_NICENESS))
        return self._background_pool

    def _submit_compile(self, item: _Compiling) -> None:
        job = next(self._jobs)
        item.started = time.monotonic()
        self._compiling[job] = item
        self._compiler().apply_async(
            compile_candidate_timed,
            (item.task.without_arrays(),),  # the compile workers need the program only
            callback=lambda outcome: self._on_compiled(job, outcome),
            error_callback=lambda error: self._on_compiled(job, (None, f"the compiling process failed: {error}", 0.0, ())),
        )

    def _on_compiled(self, job: int, outcome: tuple[bytes | None, str | None, float, tuple[tuple[str, float], ...]]) -> None:
        with self._lock:
            item = self._compiling.pop(job, None)
        if item is None:  # timed out and given up meanwhile
            return
        artifact, error, seconds, usage = outcome
        self._count("compile", seconds)
        item.compile_usage = usage
        if artifact is None:
            item.pending.set(item.index, MeasureResult(None, error, seconds, compile_usage=usage))
        else:
            self._compiled.put((item, artifact, seconds))

    def _expire_compiles(self) -> None:
        """Fails the compiles past COMPILE_TIMEOUT and restarts the pool for the others."""
        with self._lock:
            now = time.monotonic()
            late = {job: item for job, item in self._compiling.items() if now - item.started > COMPILE_TIMEOUT}
            if not late or self._closed:
                return
            others = [item for job, item in self._compiling.items() if job not in late]
            self._compiling.clear()  # what the old pool still reports is ignored
            stopped, self._compile_pool = self._compile_pool, None
        for item in late.values():
            item.pending.set(item.index, MeasureResult(None, f"compiling took more than {COMPILE_TIMEOUT:.0f} s", COMPILE_TIMEOUT))
        if stopped is not None:  # outside the lock: terminating waits for the pool's result thread
            stopped.terminate()
        with self._lock:
            for item in others:
                self._submit_compile(item)

    # -- timing ----------------------------------------------------------------------------

    def _start_devices(self) -> None:
        while len(self._threads) < len(self.devices):
            thread = threading.Thread(target=self._feed_device, args=(len(self._threads),), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _feed_device(self, device: int) -> None:
        """One device's thread: compiled candidates to its timing process, one at a time."""
        while True:
            try:
                entry = self._compiled.get(timeout=1.0)
            except queue.Empty:
                self._expire_compiles()
                continue
            if entry is None:
                return
            item, artifact, seconds = entry
            started = time.perf_counter()
            measured = self._time(device, item, artifact, seconds)
            self._count("device", time.perf_counter() - started)
            item.pending.set(item.index, dataclasses.replace(measured, device=device, compile_usage=item.compile_usage))

    def _timing_process(self, device: int) -> _TimingProcess:
        process = self._timing[device]
        if process is None:
            environment = {"MLC_TUNING": "0", "MLC_CACHE": "0"}
            if self.devices[device] is not None:
                environment["CUDA_VISIBLE_DEVICES"] = str(self.devices[device])
            process = self._timing[device] = _TimingProcess(self._context, environment)
        return process

    def _time(self, device: int, item: _Compiling, artifact: bytes, seconds: float) -> MeasureResult:
        process = self._timing_process(device)
        try:
            return process.run(item, artifact, seconds, self.timeout)
        except TimeoutError:
            error = f"running took more than {self.timeout:.0f} s"
        except (EOFError, OSError) as failure:  # the process died (a crash in the kernel)
            error = f"the measuring process failed: {type(failure).__name__}: {failure}"
        self._timing[device] = None
        process.close()
        return MeasureResult(None, error, seconds)


class Handles:
    """Several jobs' results as one (`ready()` when all are, `get()` their lists joined in order)."""

    def __init__(self, jobs: Sequence[Any]):
        self._jobs = list(jobs)

    def ready(self) -> bool:
        return all(job.ready() for job in self._jobs)

    def get(self) -> list:
        return [result for job in self._jobs for result in job.get(COMPILE_TIMEOUT)]


class LocalStream:
    """`LocalMeasurer`'s `streams.Stream`: each candidate a one-task submission whose result goes
    to one queue as it arrives."""

    def __init__(self, measurer: LocalMeasurer):
        self._measurer = measurer
        self._finished: queue.Queue[tuple[int, MeasureResult]] = queue.Queue()
        self._tickets = itertools.count()

    def put(self, task: MeasureTask) -> int:
        ticket = next(self._tickets)
        self._measurer.submit([task], lambda _, result: self._finished.put((ticket, result)))
        return ticket

    def wants(self) -> int:
        return self._measurer.wants()

    def next(self) -> tuple[int, MeasureResult]:
        return self._finished.get()


def _visible_gpus() -> list[str | None]:
    """What each timing process's CUDA_VISIBLE_DEVICES names: one GPU of those this process sees."""
    from mlc.runtime.cuda import device_count

    inherited = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    names = inherited or [str(index) for index in range(device_count())]
    return list(names[: device_count()]) or [None]
