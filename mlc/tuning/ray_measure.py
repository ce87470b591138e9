"""Measuring candidates through Ray: one task per candidate, each holding a whole device.

`RayMeasurer(target, address=...)` connects to a running cluster (`address`, e.g.
'192.168.1.5:6379' or 'ray://host:10001'), or with `address=None` starts a local one of
`local_cpus` CPUs (what CI does). Each candidate is one task running `measure.compile_and_run`:
on 'cuda' it asks for `num_gpus=1`, so Ray runs one candidate per GPU of every node at a time;
on 'cpu' for `cpus_per_task` CPUs. A task past the timeout is cancelled and recorded as a
failure. `submit` returns at once (the search proposes its next batch meanwhile). Nodes need mlc installed (the same version: results are keyed by it).

An address that does not answer is refused before Ray is asked (Ray itself would wait for a
minute or more): `RayUnavailableError` names the address. Ray is an optional dependency (the
`tune` extra); without it, asking for Ray measurement is an error saying which extra to install.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from mlc.errors import MlcError
from mlc.tuning.features import extract_from_text
from mlc.tuning.measure import (
    RUN_TIMEOUT,
    MeasureResult,
    MeasureTask,
    compile_and_run_in_worker,
)
from mlc.tuning.optional import require

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
        resources = {"num_gpus": 1} if target == "cuda" else {"num_cpus": cpus_per_task}
        self._per_task = resources
        self._remote = self.ray.remote(max_retries=0, **resources)(compile_and_run_in_worker)
        self._remote_extract = self.ray.remote(max_retries=0)(extract_from_text)

    @property
    def slots(self) -> int:
        """Candidates measured at once: the cluster's GPUs (or its CPUs over `cpus_per_task`)."""
        available = self.ray.cluster_resources()
        if self.target == "cuda":
            return max(1, int(available.get("GPU", 0)))
        return max(1, int(available.get("CPU", 1)) // self._per_task["num_cpus"])

    def extract(self, source: str, configs: list[dict]) -> list[tuple[list[float], str] | str]:
        """`features.extract_from_text` of `configs`, one Ray task per share of the cluster's CPUs."""
        workers = max(1, int(self.ray.cluster_resources().get("CPU", 1)))
        share = max(1, -(-len(configs) // workers))
        references = [self._remote_extract.remote(source, self.target, configs[start : start + share]) for start in range(0, len(configs), share)]
        return [result for chunk in self.ray.get(references) for result in chunk]

    def measure(self, tasks: Sequence[MeasureTask]) -> list[MeasureResult]:
        return self.submit(tasks).get()

    def submit(self, tasks: Sequence[MeasureTask]) -> RayPending:
        """The tasks start at once (Ray queues them for free devices); results by `get()`."""
        return RayPending(self, [self._remote.remote(task) for task in tasks])

    def close(self) -> None:
        """Leaves the cluster running when it was joined or started by someone else."""


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
            try:
                results.append(ray.get(reference))
            except Exception as error:  # noqa: BLE001 - the task's worker died
                results.append(MeasureResult(None, f"the Ray task failed: {error}"))
        return results
