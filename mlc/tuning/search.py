"""The search: which configurations to measure, in batches, until the trials are spent.

`tune(workload, target, trials, measurer, ...)` runs one tuning:

1. The space (`SearchSpace.of`) and the reference (the graph interpreter's results on seeded
   inputs, with their derived error bounds) are made once.
2. Trial 0 is always the heuristic configuration (every knob at its pass's default): the best
   result is the cheapest successful measurement, so it is never worse than the heuristic as
   measured in the same tuning. That is what `TuneResult.best` promises.
3. Each later batch is proposed by the strategy, from candidates that pass the knobs' pruning
   rules and whose loop-level program (`features.extract`'s fingerprint) has not been measured
   yet: configurations that make the same program are measured once. A configuration that does
   not lower to the loop level is a failed trial (recorded, not measured).
   * 'random': uniform samples of the space.
   * 'evolutionary' (Ansor-like): a population of mutations (one knob changed) and crossovers
     (each knob from either of two parents) of the best measured configurations, plus random
     samples; the cost model (`CostModel`, retrained after every batch, seeded with earlier
     tunings of the target from the database) ranks them, and the batch takes the predicted
     best, with one random member per batch to keep exploring. Until the model has data (the
     heuristic's measurement and earlier tunings' records count) it behaves as 'random'.
4. Rounds are pipelined: up to `depth` rounds are in flight (`PIPELINE_DEPTH`), so round k+1 is
   proposed from the model of rounds up to k-1 and compiles while round k is timed (a measurer
   without `submit` measures one round at a time). Candidates in flight count as measured for
   the proposals (no program is proposed twice). Round k's results are recorded, in its order,
   before the model is refitted and round k+2 proposed. The heuristic is round 0 (its trial is
   always trial 0): the first batch does not wait for its measurement.
5. Every measurement (failures too) goes to the database (when one is given) as it arrives, and
   to `on_trial` (the progress bar).

The search stops early when no unmeasured program is left (a small space measured exhaustively).
Deterministic for a given `seed` (the measured costs aside).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mlc.tuning.cost_model import CostModel
from mlc.tuning.database import Record, TuningDatabase, current_version
from mlc.tuning.measure import SAMPLE_SECONDS, MeasureResult, MeasureTask
from mlc.tuning.space import Config, SearchSpace, config_key
from mlc.tuning.workload import Workload, target_key

STRATEGIES = ("evolutionary", "random")
POPULATION_PER_BATCH = 4
PARENTS = 4
ATTEMPTS_PER_CANDIDATE = 4
"""Draws per wanted candidate before sampling gives up (each new configuration is lowered to the
loop level for its features; knobs with nothing to act on make many draws repeat a program)."""
BATCH_PER_SLOT = 4
"""Candidates per round for each device the measurer times on at once (the default batch)."""
PIPELINE_DEPTH = 2
"""Rounds in flight: the next round is proposed (from the model of the rounds measured so far)
and compiled while this one is timed, so the devices do not wait for the host's proposing,
compiling and refitting between rounds."""
EXHAUSTIVE_CHUNK = 64
"""Configurations of a small space extracted together while enumerating it."""
EXHAUSTIVE_SPACE = 1 << 14
"""Spaces up to this size are enumerated once random draws stop finding unmeasured programs."""


class Measurer(Protocol):
    slots: int
    """Candidates it measures at once (its devices)."""

    def measure(self, tasks: list[MeasureTask]) -> list[MeasureResult]: ...

    # Optional: `submit(tasks)` returning an object whose `get()` gives `measure`'s list; with it,
    # rounds overlap (see `PIPELINE_DEPTH`).

    def extract(self, source: str, configs: list[dict]) -> list[tuple[list[float], str] | str]:
        """`features.extract_from_text`, in the measurer's worker processes."""
        ...


@dataclass
class Trial:
    index: int
    config: Config
    pipeline: str
    result: MeasureResult
    features: list[float]
    fingerprint: str

    @property
    def cost(self) -> float | None:
        return self.result.cost


@dataclass
class TuneResult:
    workload: Workload
    target: str
    space: SearchSpace
    trials: list[Trial] = field(default_factory=list)
    host_seconds: dict[str, float] = field(default_factory=dict)
    """Where the tuning's own process spent its time: 'propose' (the proposals, their feature
    extraction included), 'fit' (the cost model), 'wait' (for rounds' results)."""

    def _count(self, step: str, since: float) -> None:
        self.host_seconds[step] = self.host_seconds.get(step, 0.0) + time.perf_counter() - since

    @property
    def heuristic(self) -> Trial:
        return self.trials[0]

    @property
    def best(self) -> Trial | None:
        """The cheapest successful trial (the heuristic's included, see the module docstring)."""
        succeeded = [t for t in self.trials if t.cost is not None]
        return min(succeeded, key=lambda t: t.cost) if succeeded else None  # type: ignore[arg-type, return-value]


@dataclass
class Candidate:
    config: dict
    features: list[float]
    fingerprint: str
    error: str | None = None
    """Why the configuration does not lower to the loop level (then it is a failed trial, not measured)."""


@dataclass
class Search:
    """The state of one tuning: what was measured, the model, the random source."""

    workload: Workload
    space: SearchSpace
    strategy: str
    rng: random.Random
    model: CostModel
    result: TuneResult
    extract_many: Callable[[list[dict]], list[tuple[list[float], str] | str]]
    """Features and fingerprints of configurations (or why each does not lower), in parallel."""
    measured: set[str] = field(default_factory=set)
    """Configuration keys and program fingerprints measured (or failed) in this tuning."""
    extracted: dict[str, Candidate] = field(default_factory=dict)
    """Candidates by configuration key: features are extracted once per configuration."""

    def candidate(self, config: dict, taken: Sequence[Candidate] = ()) -> Candidate | None:
        """`config`'s features, or None when it is pruned, already measured or `taken` (this
        batch) holds its program; a configuration that does not lower is a failed candidate."""
        key = config_key(config)
        if self.space.invalid(config) is not None or key in self.measured:
            return None
        self.prepare([config])
        candidate = self.extracted[key]
        if candidate.fingerprint in self.measured or any(c.fingerprint == candidate.fingerprint for c in taken):
            return None
        return candidate

    def prepare(self, configs: Sequence[dict]) -> None:
        """Extracts the features of the valid, new ones of `configs` at once (in parallel)."""
        new = {config_key(c): c for c in configs if self.space.invalid(c) is None and config_key(c) not in self.extracted}
        for (key, config), outcome in zip(new.items(), self.extract_many(list(new.values())) if new else []):
            if isinstance(outcome, str):
                self.extracted[key] = Candidate(config, [], f"failed:{key}", outcome)
            else:
                self.extracted[key] = Candidate(config, *outcome)

    def record(self, candidate: Candidate) -> None:
        self.measured.update((config_key(candidate.config), candidate.fingerprint))

    def propose(self, count: int) -> list[Candidate]:
        if self.strategy == "random" or not self.model.trained:
            return self._fill([], count)
        offspring = self._fill(self._sample(self._offspring, count * POPULATION_PER_BATCH), count)
        failed = [c for c in offspring if c.error is not None][:count]
        population = [c for c in offspring if c.error is None]
        if failed or not population:
            return failed or []
        explore = self.rng.choice(population) if len(population) > count else None
        predictions = self.model.predict([c.features for c in population])
        ranked = [c for _, c in sorted(zip(predictions, population), key=lambda pair: pair[0]) if c is not explore]
        chosen = ranked[: count - 1 if explore is not None else count]
        return [*chosen, explore] if explore is not None else chosen

    def _offspring(self) -> dict:
        measured = sorted((t for t in self.result.trials if t.cost is not None), key=lambda t: t.cost)  # type: ignore[arg-type, return-value]
        parents = [t.config for t in measured[:PARENTS]] or [self.space.heuristic()]
        roll = self.rng.random()
        if roll < 0.2:
            return self.space.random(self.rng)
        if roll < 0.5 and len(parents) > 1:
            first, second = self.rng.sample(parents, 2)
            return self.space.mutate(self.space.crossover(first, second, self.rng), self.rng)
        return self.space.mutate(self.rng.choice(parents), self.rng)

    def _fill(self, found: list[Candidate], count: int) -> list[Candidate]:
        """`found` and random candidates up to `count`; when random draws keep hitting what was
        seen, the unseen rest of a small space in order (so the search stops only when the space
        is exhausted)."""
        found = found + self._sample(lambda: self.space.random(self.rng), count - len(found), found)
        if len(found) < count and self.space.size() <= EXHAUSTIVE_SPACE:
            configs = iter(self.space.valid_configs())
            while len(found) < count and (chunk := list(itertools.islice(configs, EXHAUSTIVE_CHUNK))):
                self.prepare(chunk)
                for config in chunk:
                    candidate = self.candidate(config, found) if len(found) < count else None
                    if candidate is not None:
                        found.append(candidate)
        return found

    def _sample(self, make: Callable[[], dict], count: int, taken: Sequence[Candidate] = ()) -> list[Candidate]:
        """Up to `count` unmeasured candidates from at most ATTEMPTS_PER_CANDIDATE * count draws;
        the draws of a round are extracted together (in parallel), then taken in order."""
        found: list[Candidate] = []
        draws = 0
        while len(found) < count and draws < ATTEMPTS_PER_CANDIDATE * count:
            configs = [make() for _ in range(min(count - len(found), ATTEMPTS_PER_CANDIDATE * count - draws))]
            draws += len(configs)
            self.prepare(configs)
            for config in configs:
                candidate = self.candidate(config, [*taken, *found]) if len(found) < count else None
                if candidate is not None:
                    found.append(candidate)
        return found


def tune(
    workload: Workload,
    target: str,
    trials: int,
    measurer: Measurer,
    strategy: str = "evolutionary",
    batch: int | None = None,
    seed: int = 0,
    database: TuningDatabase | None = None,
    on_trial: Callable[[Trial, TuneResult], None] | None = None,
    repeats: int = 5,
    reference: Reference | None = None,
    depth: int = PIPELINE_DEPTH,
    sample_seconds: float = SAMPLE_SECONDS,
) -> TuneResult:
    """Tunes `workload` on `target` with at most `trials` measurements (see the module docstring);
    `batch` candidates per round, by default `BATCH_PER_SLOT` for each of the measurer's devices,
    and up to `depth` rounds in flight (`PIPELINE_DEPTH`). `reference`: the workload's
    `make_reference(workload)` when the caller has it already (a second tuning of the same
    workload need not interpret it again). `sample_seconds`: the least a GPU timing sample lasts."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown search strategy '{strategy}': use one of {', '.join(STRATEGIES)}")
    if depth < 1:
        raise ValueError(f"the pipeline depth must be at least 1; got {depth}")
    space = SearchSpace.of(workload.module, target)
    inputs, expected, bounds = reference or make_reference(workload)
    source = str(workload.module)
    result = TuneResult(workload, target, space)
    search = Search(workload, space, strategy, random.Random(seed), CostModel(seed), result, lambda configs: measurer.extract(source, configs))
    keys = (workload.key, target_key(target), current_version())

    def submit(candidates: list[Candidate]) -> Round:
        for candidate in candidates:  # taken: no later proposal repeats a program in flight
            search.record(candidate)
        tasks = [
            MeasureTask(source, workload.entry, target, space.pipeline(c.config), inputs, expected, bounds, repeats=repeats, min_sample_seconds=sample_seconds)
            for c in candidates
            if c.error is None
        ]
        return Round(candidates, _submit(measurer, tasks))

    def finish(round_: Round) -> None:
        started = time.perf_counter()
        outcomes = iter(round_.results())
        result._count("wait", started)
        for candidate in round_.candidates:
            outcome = MeasureResult(None, candidate.error) if candidate.error is not None else next(outcomes)
            trial = Trial(len(result.trials), candidate.config, space.pipeline(candidate.config), outcome, candidate.features, candidate.fingerprint)
            result.trials.append(trial)
            if candidate.features:
                _learn(search.model, result, trial)
            if database is not None:
                database.add([_record(trial, keys, workload.name)])
            if on_trial is not None:
                on_trial(trial, result)
        started = time.perf_counter()
        search.model.fit()
        result._count("fit", started)

    heuristic = search.candidate(space.heuristic())
    assert heuristic is not None  # the first candidate is never pruned nor seen
    if heuristic.error is not None:
        from mlc.compiler import LoweringError

        raise LoweringError(f"{workload.name}: the heuristic configuration {heuristic.error}")
    if database is not None:  # transfer: rows of the same knobs (the same feature layout) only
        history = _history(database, keys[1], workload.key)
        search.model.add_history([row for row in history if len(row[0]) == len(heuristic.features)])
        search.model.fit()  # with earlier tunings' records, the first batch is already ranked
    batch = batch or BATCH_PER_SLOT * measurer.slots
    depth = depth if hasattr(measurer, "submit") else 1  # nothing would overlap: no stale model
    # The heuristic is round 0: with depth > 1 the first batch (random, or ranked by earlier
    # tunings' records) compiles beside it instead of after its measurement.
    in_flight: deque[Round] = deque([submit([heuristic])])
    proposed, exhausted = 1, False
    while True:
        while not exhausted and len(in_flight) < depth and proposed < trials:
            started = time.perf_counter()
            candidates = search.propose(min(batch, trials - proposed))
            result._count("propose", started)
            exhausted = not candidates
            proposed += len(candidates)
            if candidates:
                in_flight.append(submit(candidates))
        if not in_flight:
            break
        finish(in_flight.popleft())
    return result


@dataclass
class Round:
    """A batch of candidates and its measurements in flight."""

    candidates: list[Candidate]
    pending: Any

    def results(self) -> list[MeasureResult]:
        return self.pending.get() if self.pending is not None else []


class _Measured:
    """`Pending`'s `get` for a measurer without `submit`: it measures when asked."""

    def __init__(self, measurer: Measurer, tasks: list[MeasureTask]):
        self.measurer, self.tasks = measurer, tasks

    def get(self) -> list[MeasureResult]:
        return self.measurer.measure(self.tasks)


def _submit(measurer: Measurer, tasks: list[MeasureTask]) -> Any:
    if not tasks:
        return None
    submit = getattr(measurer, "submit", None)
    return submit(tasks) if submit is not None else _Measured(measurer, tasks)


Reference = tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]
"""A workload's seeded inputs, the interpreter's results on them and their error bounds."""


def make_reference(workload: Workload) -> Reference:
    """What every candidate's results are checked against (`error_bounds.result_bounds`)."""
    from mlc.dialects.graph.error_bounds import result_bounds

    inputs = workload.inputs()
    expected, bounds = result_bounds(workload.function, inputs)
    return inputs, list(expected), list(bounds)


def _learn(model: CostModel, result: TuneResult, trial: Trial) -> None:
    base = result.heuristic.cost
    relative = trial.cost / base if trial.cost is not None and base else None
    model.add(trial.features, relative)


def _record(trial: Trial, keys: tuple[str, str, str], name: str) -> Record:
    return Record(
        *keys,
        config_key(trial.config),
        trial.pipeline,
        trial.cost,
        trial.result.error,
        trial.features,
        trial.fingerprint,
        trial.index,
        name,
        time.time(),
    )


def _history(database: TuningDatabase, target: str, skip: str) -> list[tuple[list[float], float | None]]:
    """(features, cost relative to its workload's trial 0) of earlier tunings on `target`."""
    rows = []
    by_workload: dict[str, list[Record]] = {}
    for record in database.records(target=target, version=current_version()):
        if record.workload != skip:
            by_workload.setdefault(record.workload, []).append(record)
    for records in by_workload.values():
        base = next((r.cost for r in records if r.trial == 0), None)
        if base is None or not math.isfinite(base):
            continue
        rows.extend((r.features, r.cost / base if r.cost is not None else None) for r in records if r.features)
    return rows
