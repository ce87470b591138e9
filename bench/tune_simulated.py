"""The GPU scaling benchmark's tuning on a CPU-only machine: the real search against a wall-clock
stand-in for the GPU machine's measurer, to find what keeps the devices waiting before spending
device time.

    python bench/tune_simulated.py [--devices 1 2] [--trials 96] [--concurrency 2] [--compile-s 0.5 --compile-sigma 0.7 --extract-s 0.1 --device-s 0.155] [--cache PATH]
    python bench/tune_simulated.py --real-host [--workers 2] [--trials 24] [--device-s 1.0]

What is real: the search (`search.tune_many`: proposals, LightGBM fits, the prefetch and the
drawn queues) in this process, and each configuration's features and fingerprint (extracted
once for the whole space by `LocalMeasurer.extract`, kept in `--cache`). What is simulated, in
wall-clock time with threads that sleep: a compile pool of `--workers` (each compile lognormal,
mean `--compile-s`, sigma `--compile-sigma`, fixed per pipeline), each device pulling the next
compiled candidate and holding it `--device-s`, the on-demand extraction pool (`--workers`) and
the background one (half), each configuration `--extract-s`. Costs are a hash of the pipeline.
The defaults' compile mean (1.0 s) and device seconds (0.155) are the fifth measurement's on the
2-GPU machine (BENCHMARKS.md; compiles were ~0.45 s in the fourth); the compile spread and the
0.15 s of an extraction there are assumptions. The shapes are that benchmark's two.

`--real-host`: the host side real instead, the devices not: `LocalMeasurer` on the CPU target
(this host's compile, extraction and background processes, compiling and extracting for real,
the search in this process) with stand-in devices that hold each compiled candidate
`--device-s` seconds (`SleepingDevices`). Its 1-vs-2 ratio shows what the host's own paths (the
proposals, the pools' contention) leave of two devices' speed-up; scale `--device-s` so that
the devices, not this host's cores, should bound (a 2-core machine compiles ~2-4 candidates a
second).

Not simulated (without `--real-host`): the host's CPU contention (a process here is a thread that sleeps), the GIL cost
of the measurer's own threads, GPU-side effects. The spaces are those of a machine without a
GPU (the generic GPU pipeline): the same knobs for these two shapes. Prints each run's wall
time, each device's busy share and idle gaps, when the first device started, and the tuning
process's propose / fit / wait seconds.
"""

from __future__ import annotations

import argparse
import itertools
import pickle
import queue
import random
import threading
import time
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from mlc.compiler import read_source
from mlc.tuning.device_worker import warm_up
from mlc.tuning.measure import GPU_PROTOCOL, Handles, LocalMeasurer, MeasureResult
from mlc.tuning.search import tune_many
from mlc.tuning.space import SearchSpace, config_key
from mlc.tuning.streams import RunningSeconds, lookahead
from mlc.tuning.workload import Workload
from tune import shapes

SHAPES = ("softmax 16384x512", "matmul 4096x64x4096 f32 (skinny)")


def _hash(text: str) -> int:
    return zlib.crc32(text.encode())


class Handle:
    """A background extraction's result as `prefetch.Prefetch` asks for it."""

    def __init__(self, future: Future):
        self._future = future

    def ready(self) -> bool:
        return self._future.done()

    def get(self, timeout: float | None = None) -> list:
        return self._future.result(timeout)


class WallClockMeasurer:
    """A `streams.Stream` with `LocalMeasurer`'s shape in wall-clock time (the module docstring)."""

    def __init__(self, devices: int, workers: int, extracted: dict[str, object], args: argparse.Namespace):
        self.slots, self.workers = devices, workers
        self.extract_workers, self.background_workers = workers, max(1, workers // 2)
        self._extracted, self._args = extracted, args
        self._compile = ThreadPoolExecutor(workers)
        self._on_demand = ThreadPoolExecutor(self.extract_workers)
        self._background = ThreadPoolExecutor(self.background_workers)
        self._compiled: queue.Queue = queue.Queue()
        self._finished: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._compiling = 0
        self._seconds = {"compile": RunningSeconds(), "device": RunningSeconds()}
        self._tickets = itertools.count()
        self.spans: list[tuple[int, float, float]] = []
        self._threads = [threading.Thread(target=self._feed, args=(device,), daemon=True) for device in range(devices)]
        for thread in self._threads:
            thread.start()

    def _extract(self, configs: list[dict]) -> list:
        time.sleep(self._args.extract_s * len(configs))
        return [self._extracted[config_key(config)] for config in configs]

    def extract(self, source: str, configs: list[dict]) -> list:
        share = max(1, -(-len(configs) // self.extract_workers))
        jobs = [self._on_demand.submit(self._extract, configs[start : start + share]) for start in range(0, len(configs), share)]
        return [result for job in jobs for result in job.result()]

    def extract_soon(self, source: str, configs: list[dict]) -> Handle:
        share = max(1, -(-len(configs) // self.extract_workers))
        jobs = [self._on_demand.submit(self._extract, configs[start : start + share]) for start in range(0, len(configs), share)]
        return Handles([Handle(job) for job in jobs])

    def extract_later(self, source: str, configs: list[dict]) -> Handle:
        return Handle(self._background.submit(self._extract, configs))

    def stream(self) -> WallClockMeasurer:
        return self

    def put(self, task: object) -> int:
        ticket = next(self._tickets)
        seconds = random.Random(_hash(task.pipeline)).lognormvariate(0.0, self._args.compile_sigma) * self._args.compile_s
        with self._lock:
            self._compiling += 1

        def compile_() -> None:
            time.sleep(seconds)
            with self._lock:
                self._compiling -= 1
                self._seconds["compile"].add(seconds)
            self._compiled.put((ticket, task, seconds))

        self._compile.submit(compile_)
        return ticket

    def wants(self) -> int:
        with self._lock:
            compiles, device = self._seconds["compile"], self._seconds["device"]
            wanted = lookahead(self.slots, self.workers, compiles.mean, device.mean, compiles.spread)
            return max(0, wanted - self._compiling - self._compiled.qsize())

    def _feed(self, device: int) -> None:
        while (entry := self._compiled.get()) is not None:
            ticket, task, seconds = entry
            started = time.perf_counter()
            time.sleep(self._args.device_s)
            self.spans.append((device, started, time.perf_counter()))
            with self._lock:
                self._seconds["device"].add(self._args.device_s)
            cost = 1e-5 * (1 + _hash(task.pipeline) % 1000 / 100)
            self._finished.put((ticket, MeasureResult(cost, None, seconds, device=device)))

    def next(self) -> tuple[int, MeasureResult]:
        return self._finished.get()

    def close(self) -> None:
        for _ in self._threads:
            self._compiled.put(None)
        for pool in (self._compile, self._on_demand, self._background):
            pool.shutdown(wait=False)


class SleepingDevices(LocalMeasurer):
    """`LocalMeasurer` ('cpu') whose devices are stand-ins: each compiled candidate holds its device
    `device_seconds` (no timing process runs it); compiles and extractions are real."""

    def __init__(self, devices: int, workers: int, device_seconds: float):
        super().__init__("cpu", workers=workers, devices=[str(device) for device in range(devices)])
        self.device_seconds = device_seconds
        self.spans: list[tuple[int, float, float]] = []

    def warm_up(self) -> None:
        with self._lock:
            jobs = [self._compiler().apply_async(warm_up, (self.target,)) for _ in range(self.workers)]
            jobs += [self._extractor().apply_async(warm_up, ("cpu",)) for _ in range(self.extract_workers)]
            jobs += [self._background().apply_async(warm_up, ("cpu",)) for _ in range(self.background_workers)]
        for job in jobs:
            job.get()

    def _time(self, device: int, item: object, artifact: bytes, seconds: float) -> MeasureResult:
        started = time.perf_counter()
        time.sleep(self.device_seconds)
        self.spans.append((device, started, time.perf_counter()))
        cost = 1e-5 * (1 + _hash(item.task.pipeline) % 1000 / 100)  # type: ignore[attr-defined]
        return MeasureResult(cost, None, seconds, phases=(("time", self.device_seconds),))


def real_host(args: argparse.Namespace, workloads: dict[str, Workload]) -> dict[int, float]:
    """`--real-host`: each device count's wall time with `SleepingDevices` (see the docstring)."""
    walls = {}
    for devices in args.devices:
        measurer = SleepingDevices(devices, args.workers, args.device_s)
        measurer.warm_up()
        started = time.perf_counter()
        options = dict(strategy=args.strategy, batch=args.batch)
        results = tune_many(list(workloads.values()), "cpu", args.trials, measurer, args.concurrency, [([], [], [])] * len(workloads), **options)
        walls[devices] = time.perf_counter() - started
        measurer.close()
        print(report(devices, walls[devices], started, measurer, results), flush=True)
    return walls


def extractions(workloads: dict[str, Workload], cache: Path) -> dict[str, object]:
    """Every valid configuration's features of each workload's space ('cuda'), kept in `cache`."""
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    extracted: dict[str, object] = {}
    measurer = LocalMeasurer("cuda", devices=[])  # extraction only: no device is asked for
    try:
        for workload in workloads.values():
            configs = list(SearchSpace.of(workload.module, "cuda").valid_configs())
            extracted.update(zip(map(config_key, configs), measurer.extract(str(workload.module), configs)))
    finally:
        measurer.close()
    cache.write_bytes(pickle.dumps(extracted))
    return extracted


def report(devices: int, wall: float, started: float, measurer: WallClockMeasurer | SleepingDevices, results: list) -> str:
    lines = [f"{devices} device(s): {wall:.1f} s, first device started after {min(s for _, s, _ in measurer.spans) - started:.2f} s"]
    for device in range(devices):
        spans = sorted((s, e) for d, s, e in measurer.spans if d == device)
        busy = sum(e - s for s, e in spans)
        gaps = sum(max(0.0, later[0] - earlier[1]) for earlier, later in zip(spans, spans[1:]))
        lines.append(f"  device {device}: busy {busy / wall:.0%}, idle between candidates {gaps:.2f} s, idle after its last {started + wall - spans[-1][1]:.2f} s")
    for result in results:
        timed = sum(1 for trial in result.trials if trial.result.device is not None)
        host = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in result.host_seconds.items())
        lines.append(f"  {result.workload.name}: {timed} timed; tuning process: {host}; extracted {result.extractions}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--trials", type=int, default=96)
    parser.add_argument("--workers", type=int, default=32, help="the GPU machine's cores")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--strategy", default="evolutionary")
    parser.add_argument("--batch", type=int)
    parser.add_argument("--compile-s", type=float, default=1.0)
    parser.add_argument("--compile-sigma", type=float, default=0.7)
    parser.add_argument("--device-s", type=float, default=0.155)
    parser.add_argument("--extract-s", type=float, default=0.15)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/mlc-tune-simulated-extractions.pkl"))
    parser.add_argument("--real-host", action="store_true", help="this host's compile and extraction processes (CPU target), stand-in devices")
    args = parser.parse_args()
    workloads = {name: Workload(read_source(shapes("cuda", False)[name])[0], "main", name) for name in SHAPES}
    if args.real_host:
        walls = real_host(args, workloads)
        print(f"scaling from {args.devices[0]} to {args.devices[-1]} devices: {walls[args.devices[0]] / walls[args.devices[-1]]:.2f}x")
        return
    extracted = extractions(workloads, args.cache)
    references = [([], [], [])] * len(workloads)  # (nothing is run: no reference needed)
    walls = {}
    for devices in args.devices:
        measurer = WallClockMeasurer(devices, args.workers, extracted, args)
        started = time.perf_counter()
        options = dict(strategy=args.strategy, batch=args.batch, protocol=GPU_PROTOCOL)
        results = tune_many(list(workloads.values()), "cuda", args.trials, measurer, args.concurrency, references, **options)
        walls[devices] = time.perf_counter() - started
        measurer.close()
        print(report(devices, walls[devices], started, measurer, results), flush=True)
    if len(walls) > 1:
        print(f"scaling from {args.devices[0]} to {args.devices[-1]} devices: {walls[args.devices[0]] / walls[args.devices[-1]]:.2f}x")


if __name__ == "__main__":
    main()
