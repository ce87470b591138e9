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
  Candidates go to the actors in turn; each actor times one candidate at a time, once its
  compile task has finished (Ray passes the compiled artifact from task to actor).

`submit` returns at once; `stream()` (what the search uses) starts candidates one at a time and
returns results as they finish (`ray.wait` for any). Candidates go to the actors in turn when
submitted, not to whichever actor is free first (Ray queues an actor's calls): with candidates of
very different lengths a device can wait while another has a queue, which `LocalMeasurer`'s
feeding threads avoid. A candidate past the timeout is recorded as a failure. Nodes need mlc installed (the same version: results are keyed
by it).

An address that does not answer is refused before Ray is asked (Ray itself would wait for a
minute or more): `RayUnavailableError` names the address. Ray is an optional dependency (the
`tune` extra); without it, asking for Ray measurement is an error saying which extra to install.
"""

from __future__ import annotations

import itertools
import os
import socket
import tempfile
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from mlc.errors import MlcError
from mlc.tuning.device_worker import TimingActor
from mlc.tuning.features import extract_from_text
from mlc.tuning.measure import REFERENCES_HELD, RUN_TIMEOUT, MeasureResult, MeasureTask, compile_candidate
from mlc.tuning.optional import require
from mlc.tuning.streams import lookahead

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
    def __init__(self, target: str, address: str | None = None, local_cpus: int = 2, cpus_per_task: int = 1, timeout: float = RUN_TIMEOUT):
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
            count, resources = max(1, int(available.get("CPU", 1)) // 2 // cpus_per_task), {"num_cpus": cpus_per_task}
        actor = self.ray.remote(max_restarts=0, **resources)(TimingActor)
        self._actors = [actor.remote() for _ in range(count)]
        self._next_actor = 0
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
        """`features.extract_from_text` of `configs`, one Ray task per share of the cluster's CPUs."""
        workers = max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        share = max(1, -(-len(configs) // workers))
        references = [self._remote_extract.remote(source, self.target, configs[start : start + share]) for start in range(0, len(configs), share)]
        return [result for chunk in self.ray.get(references) for result in chunk]

    def measure(self, tasks: Sequence[MeasureTask]) -> list[MeasureResult]:
        return self.submit(tasks).get()

    def submit(self, tasks: Sequence[MeasureTask]) -> RayPending:
        """The tasks start at once (see the module docstring); results by `get()`."""
        return RayPending(self, [self.start(task) for task in tasks])

    def start(self, task: MeasureTask) -> Any:
        """One task's compile task and timing call; the call's object reference."""
        key, arrays = self._arrays_of(task)
        compiled = self._compile.remote(task.without_arrays())
        actor = self._actors[self._next_actor % len(self._actors)]
        self._next_actor += 1
        return actor.run.remote(key, arrays, task.without_arrays(), compiled)

    def stream(self) -> RayStream:
        return RayStream(self)

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


class RayStream:
    """`RayMeasurer`'s `streams.Stream`: `lookahead` candidates between proposal and an actor
    (before any timing is known: `INITIAL_PER_DEVICE` each), plus the one each actor runs."""

    def __init__(self, measurer: RayMeasurer):
        self.measurer = measurer
        self._tickets: dict[Any, int] = {}
        self._numbers = itertools.count()

    def put(self, task: MeasureTask) -> int:
        ticket = next(self._numbers)
        self._tickets[self.measurer.start(task)] = ticket
        return ticket

    def wants(self) -> int:
        slots = self.measurer.slots
        return max(0, lookahead(slots, slots, None, None) + slots - len(self._tickets))

    def next(self) -> tuple[int, MeasureResult]:
        ray, timeout = self.measurer.ray, self.measurer.timeout
        ready, _ = ray.wait(list(self._tickets), num_returns=1, timeout=timeout)
        if not ready:  # nothing finished within a candidate's timeout: the oldest has failed
            oldest = next(iter(self._tickets))
            ray.cancel(oldest, force=True)
            return self._tickets.pop(oldest), MeasureResult(None, f"the Ray task took more than {timeout:.0f} s")
        return self._tickets.pop(ready[0]), _outcome(ray, ready[0])


def _outcome(ray: Any, reference: Any) -> MeasureResult:
    try:
        return ray.get(reference)
    except Exception as error:  # noqa: BLE001 - the task's worker died
        return MeasureResult(None, f"the Ray task failed: {error}")


class RayPending:
    """Submitted Ray tasks; `get()` waits for them (at most the timeout per task), in task order."""

    def __init__(self, measurer: RayMeasurer, references: list[Any]):
        self.measurer = measurer
        self.references = references

    def get(self) -> list[MeasureResult]:
        ray, references = self.measurer.ray, self.references
        timeout = self.measurer.timeout * max(1, len(references))
        _, pending = ray.wait(references, num_returns=len(references), timeout=timeout) if references else ([], [])
        results = []
        for reference in references:
            if reference in pending:
                ray.cancel(reference, force=True)
                results.append(MeasureResult(None, f"the Ray task took more than {self.measurer.timeout:.0f} s"))
                continue
            results.append(_outcome(ray, reference))
        return results
