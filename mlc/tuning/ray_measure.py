"""Measuring candidates through Ray: compile tasks on the cluster's CPUs, one timing actor a device.

`RayMeasurer(target, address=...)` connects to a running cluster (`address`, e.g.
'192.168.1.5:6379' or 'ray://host:10001'), or with `address=None` starts a local one of
`local_cpus` CPUs (what CI does). A candidate is two steps, as in `LocalMeasurer`:

* a compile task (`measure.compile_candidate`, one CPU): compiles run on every CPU of every node,
  whatever holds the devices. Ray hides the GPUs from tasks that ask for none
  (CUDA_VISIBLE_DEVICES=''), while compiling for 'cuda' needs one (the GPU's architecture and
  the driver's compiled image, which travels in the artifact as with `LocalMeasurer`): the
  compile tasks run in a runtime environment of their own (so Ray never hands their worker
  processes, whose CUDA is initialised, to a timing actor) that names the node's first GPU.
* a call of a timing actor (`TimingActor`, `device_worker.run_candidate`): one actor per GPU of
  the cluster (`num_gpus=1`), or on 'cpu' one per `cpus_per_task` CPUs of half the cluster's
  CPUs (the other half compiles). The actor keeps a workload's inputs on its device for all of
  the workload's candidates; the arrays are put in Ray's object store once per workload.

`stream()` (what the search uses) starts each candidate's compile task at once and gives a
compiled candidate to an actor only when that actor is free (`RayStream`: the candidates pull
devices, as `LocalMeasurer`'s feeding threads do): one `ray.wait` over the compile tasks and the
calls running, the compiled candidates queued in the order they finished. Handing each candidate
to an actor in turn when submitted (Ray queues an actor's calls) would leave a device idle while
another holds a queue behind a long candidate. How many candidates to keep compiling is
`streams.lookahead` of the running means, as for `LocalMeasurer`. Each result says which actor
timed it (`MeasureResult.device`). `measure` is a stream's results in the tasks' order. A call
running past the timeout is a failure and its actor is replaced (an actor's call cannot be
cancelled); a compile task past it is cancelled. Feature extraction runs as tasks on the
cluster's CPUs, on demand (`extract`) or in the background (`extract_later`, `prefetch.py`).
Nodes need mlc installed (the same version: results are keyed by it).

An address that does not answer is refused before Ray is asked (Ray itself would wait for a
minute or more): `RayUnavailableError` names the address. Ray is an optional dependency (the
`tune` extra); without it, asking for Ray measurement is an error saying which extra to install.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import socket
import tempfile
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mlc.errors import MlcError
from mlc.tuning.device_worker import TimingActor
from mlc.tuning.features import extract_from_text
from mlc.tuning.measure import REFERENCES_HELD, RUN_TIMEOUT, Handles, MeasureResult, MeasureTask, compile_candidate
from mlc.tuning.optional import require
from mlc.tuning.space import device_arch
from mlc.tuning.streams import RunningSeconds, lookahead

CONNECT_TIMEOUT = 3.0


class RayUnavailableError(MlcError):
    """Ray cannot be used: not installed, or the cluster's address does not answer."""


def check_reachable(address: str) -> None:
    """Raises RayUnavailableError unless something listens at `address` ('host:port', 'ray://host:port')."""
    hostport = address.removeprefix("ray://").rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailableError(f"the Ray address '{address}' is not host:port (e.g. 127.0.0.1:6379 or ray://host:10001)")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as error:
        raise RayUnavailableError(
            f"cannot reach the Ray cluster at {address}: {error.strerror or error} "
            "(is `ray start --head` running there, and the port open?)"
        ) from None


class RayMeasurer:
    def __init__(self, target: str, address: str | None = None, local_cpus: int = 2, cpus_per_task: float = 1, timeout: float = RUN_TIMEOUT):
        self.ray = require("ray")
        self.target = target
        self.timeout = timeout
        if address is not None:
            check_reachable(address)
        if not self.ray.is_initialized():
            options: dict[str, Any] = {"address": address} if address else {"num_cpus": local_cpus, "include_dashboard": False}
            try:
                self.ray.init(**options, log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise RayUnavailableError(f"cannot start or join the Ray cluster ({address or 'local'}): {error}") from None
        self._compile = self.ray.remote(max_retries=0, num_cpus=1, **self._compile_options(target))(compile_in_ray_worker)
        self._remote_extract = self.ray.remote(max_retries=0)(extract_from_text)
        available = self.ray.cluster_resources()
        if target == "cuda":
            count, resources = max(1, int(available.get("GPU", 0))), {"num_gpus": 1, "num_cpus": 0}
        else:
            count, resources = max(1, int(int(available.get("CPU", 1)) // 2 // cpus_per_task)), {"num_cpus": cpus_per_task}
        self._actor_class = self.ray.remote(max_restarts=0, **resources)(TimingActor)
        self._actors = [self._actor_class.remote() for _ in range(count)]
        self._arrays: OrderedDict[tuple[int, int, int], tuple[int, Any, MeasureTask]] = OrderedDict()
        self._array_numbers = itertools.count()

    @staticmethod
    def _compile_options(target: str) -> dict[str, Any]:
        if target != "cuda":
            return {}
        directory = os.path.join(tempfile.gettempdir(), f"mlc-tune-compiled-{uuid.uuid4().hex[:12]}")
        return {"runtime_env": {"env_vars": {"MLC_TUNE_COMPILE_GPU": "0", "MLC_TUNE_CACHE_DIR": directory}}}

    @property
    def slots(self) -> int:
        """Candidates timed at once: the timing actors."""
        return len(self._actors)

    def extract(self, source: str, configs: list[dict]) -> list[tuple[list[float], str] | str]:
        """`features.extract_from_text` of `configs`, one Ray task per share of `extract_workers`."""
        share = max(1, -(-len(configs) // self.extract_workers))
        arch = self.arch
        references = [self._remote_extract.remote(source, self.target, configs[start : start + share], arch) for start in range(0, len(configs), share)]
        return [result for chunk in self.ray.get(references) for result in chunk]

    @functools.cached_property
    def arch(self) -> str:
        """The GPU architecture of the search's spaces (this process's device, as `SearchSpace.of`
        reads it), sent with every extraction: the extraction tasks lower for the space the search
        proposes from, whatever node they run on, and never open a device."""
        return device_arch(self.target)

    @property
    def extract_workers(self) -> int:
        """Extraction tasks at once: half the cluster's CPUs. Ray has no priorities, and a small
        space's background extraction (`prefetch.py`) keeps this many in flight: the other half
        of the CPUs stays free for compile tasks."""
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)) // 2)

    def extract_soon(self, source: str, configs: list[dict]) -> Handles:
        """`extract` without waiting (`Search.speculate`): one task per share, as `extract`."""
        share = max(1, -(-len(configs) // self.extract_workers))
        arch = self.arch
        return Handles([RayHandle(self.ray, self._remote_extract.remote(source, self.target, configs[start : start + share], arch)) for start in range(0, len(configs), share)])

    def extract_later(self, source: str, configs: list[dict]) -> RayHandle:
        """`features.extract_from_text` of `configs` as one task, in the background (`prefetch.py`)."""
        return RayHandle(self.ray, self._remote_extract.remote(source, self.target, configs, self.arch))

    def measure(self, tasks: Sequence[MeasureTask]) -> list[MeasureResult]:
        """The tasks' results in their order (measured as a stream's candidates)."""
        stream = self.stream()
        tickets = [stream.put(task) for task in tasks]
        finished = dict(stream.next() for _ in tickets)
        return [finished[ticket] for ticket in tickets]

    def stream(self) -> RayStream:
        return RayStream(self)

    def _replace_actor(self, index: int) -> None:
        """A new timing actor in place of one whose call ran past the timeout."""
        self.ray.kill(self._actors[index])
        self._actors[index] = self._actor_class.remote()

    def _arrays_of(self, task: MeasureTask) -> tuple[int, Any]:
        """The task's arrays in the object store, put once per workload (held: ids stay unique)."""
        identity = (id(task.inputs), id(task.expected), id(task.bounds))
        if identity not in self._arrays:
            self._arrays[identity] = (next(self._array_numbers), self.ray.put((task.inputs, task.expected, task.bounds)), task)
            while len(self._arrays) > REFERENCES_HELD:
                self._arrays.popitem(last=False)
        self._arrays.move_to_end(identity)
        key, arrays, _ = self._arrays[identity]
        return key, arrays

    def close(self) -> None:
        """Ends the timing actors; leaves the cluster running (it may be someone else's)."""
        for actor in self._actors:
            self.ray.kill(actor)
        self._actors.clear()
        self._arrays.clear()


def compile_in_ray_worker(task: MeasureTask) -> tuple[bytes | None, str | None, float]:
    """`compile_candidate` in a Ray compile task (see the module docstring for the GPU): on the
    GPU with a compile cache of this measurer's (the artifact keeps the driver's compiled image)."""
    gpu, cache = os.environ.get("MLC_TUNE_COMPILE_GPU"), os.environ.get("MLC_TUNE_CACHE_DIR")
    if gpu is not None and cache is not None:
        os.environ.update({"CUDA_VISIBLE_DEVICES": gpu, "MLC_CACHE": "1", "MLC_CACHE_DIR": cache})
    else:
        os.environ["MLC_CACHE"] = "0"
    os.environ["MLC_TUNING"] = "0"
    return compile_candidate(task)


@dataclass
class _Candidate:
    ticket: int
    key: int
    arrays: Any
    task: MeasureTask
    compiled: Any
    """The compile task's object reference (the actor's call takes the artifact from it)."""
    submitted: float


class RayStream:
    """`RayMeasurer`'s `streams.Stream`: compile tasks started at once, each compiled candidate
    given to the first free timing actor (see the module docstring)."""

    def __init__(self, measurer: RayMeasurer):
        self.measurer = measurer
        self._numbers = itertools.count()
        self._compiling: dict[Any, _Candidate] = {}
        self._compiled: deque[_Candidate] = deque()
        self._free = list(range(len(measurer._actors)))
        self._running: dict[Any, tuple[_Candidate, int, float]] = {}
        """A call's reference: its candidate, its actor and when it started."""
        self._seconds = {"compile": RunningSeconds(), "device": RunningSeconds()}

    def put(self, task: MeasureTask) -> int:
        ticket = next(self._numbers)
        key, arrays = self.measurer._arrays_of(task)
        light = task.without_arrays()
        compiled = self.measurer._compile.remote(light)
        self._compiling[compiled] = _Candidate(ticket, key, arrays, light, compiled, time.monotonic())
        return ticket

    def wants(self) -> int:
        """`streams.lookahead` of the mean compile and device seconds, less those compiling or
        compiled and waiting for an actor."""
        measurer = self.measurer
        compiles, device = self._seconds["compile"], self._seconds["device"]
        workers = max(1, int(measurer.ray.cluster_resources().get("CPU", 1)))
        wanted = lookahead(measurer.slots, workers, compiles.mean, device.mean, compiles.spread)
        return max(0, wanted - len(self._compiling) - len(self._compiled))

    def next(self) -> tuple[int, MeasureResult]:
        ray = self.measurer.ray
        while True:
            self._dispatch()
            waiting = [*self._compiling, *self._running]
            if not waiting:
                raise RuntimeError("no candidate in flight")
            ready, _ = ray.wait(waiting, num_returns=1, timeout=self._patience())
            if not ready:
                late = self._expire()
                if late is not None:
                    return late
                continue
            if ready[0] in self._compiling:
                self._compiled.append(self._compiling.pop(ready[0]))
                continue
            candidate, actor, started = self._running.pop(ready[0])
            self._free.append(actor)
            outcome = _outcome(ray, ready[0])
            self._seconds["device"].add(time.monotonic() - started)
            self._seconds["compile"].add(outcome.compile_seconds)
            return candidate.ticket, dataclasses.replace(outcome, device=actor)

    def _dispatch(self) -> None:
        """Compiled candidates to free actors, the earliest compiled first."""
        actors = self.measurer._actors
        while self._compiled and self._free:
            candidate = self._compiled.popleft()
            actor = self._free.pop(0)
            call = actors[actor].run.remote(candidate.key, candidate.arrays, candidate.task, candidate.compiled)
            self._running[call] = (candidate, actor, time.monotonic())

    def _patience(self) -> float:
        """Seconds until the oldest call or compile in flight is past the timeout."""
        starts = [started for _, _, started in self._running.values()] + [c.submitted for c in self._compiling.values()]
        return max(0.0, min(starts) + self.measurer.timeout - time.monotonic()) if starts else self.measurer.timeout

    def _expire(self) -> tuple[int, MeasureResult] | None:
        """The oldest call or compile past the timeout, failed (its actor replaced), or None."""
        ray, timeout, now = self.measurer.ray, self.measurer.timeout, time.monotonic()
        for call, (candidate, actor, started) in list(self._running.items()):
            if now - started >= timeout:
                del self._running[call]
                self.measurer._replace_actor(actor)
                self._free.append(actor)
                return candidate.ticket, MeasureResult(None, f"timing took more than {timeout:.0f} s", device=actor)
        for compiled, candidate in list(self._compiling.items()):
            if now - candidate.submitted >= timeout:
                del self._compiling[compiled]
                ray.cancel(compiled, force=True)
                return candidate.ticket, MeasureResult(None, f"compiling took more than {timeout:.0f} s")
        return None


class RayHandle:
    """A background task's result as `prefetch.Prefetch` asks for it: `ready()` without waiting."""

    def __init__(self, ray: Any, reference: Any):
        self._ray, self._reference = ray, reference

    def ready(self) -> bool:
        ready, _ = self._ray.wait([self._reference], num_returns=1, timeout=0)
        return bool(ready)

    def get(self, timeout: float | None = None) -> Any:
        return self._ray.get(self._reference, timeout=timeout)


def _outcome(ray: Any, reference: Any) -> MeasureResult:
    try:
        return ray.get(reference)
    except Exception as error:  # noqa: BLE001 - the task's worker died
        return MeasureResult(None, f"the Ray task failed: {error}")
