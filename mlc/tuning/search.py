"""The search: which configurations to measure, in batches, until the trials are spent.

`tune(workload, target, trials, measurer, ...)` runs one tuning:

1. The space (`SearchSpace.of`) and the reference (the graph interpreter's results on seeded
   inputs, with their derived error bounds) are made once.
2. Trial 0 is always the heuristic configuration (every knob at its pass's default): the best
   result is the cheapest successful measurement, so it is never worse than the heuristic as
   measured in the same tuning. That is what `TuneResult.best` promises.
3. Each later candidate is proposed by the strategy, from candidates that pass the knobs' pruning
   rules and whose loop-level program (`features.extract`'s fingerprint) has not been measured
   nor proposed yet: configurations that make the same program are measured once. A
   configuration that does not lower to the loop level is a failed trial (recorded, not
   measured).
   * 'random': uniform samples of the space.
   * 'evolutionary' (Ansor-like): a population of mutations (one knob changed) and crossovers
     (each knob from either of two parents) of the best measured configurations, plus random
     samples; the cost model (`CostModel`, seeded with earlier tunings of the target from the
     database) ranks them and the proposal takes the predicted best, each candidate replaced by
     a random member of the population with probability `EXPLORE_SHARE` to keep exploring.
     Until the model has data (the heuristic's measurement and earlier tunings' records count)
     it behaves as 'random'.
4. There are no rounds (`streams.py`): the search keeps `streams.lookahead` candidates in flight
   and proposes the next ones whenever the measurer can start more, from the model refitted on
   every result that has arrived (refitted once per proposal, not per result). Results are
   taken as they finish, in any order; a trial's `index` is its proposal's order (the
   heuristic's is 0), and `TuneResult.trials` is in that order at the end. Until the
   heuristic's result is in, results wait to be taught to the model (costs are taught relative
   to the heuristic's). `batch` caps the candidates proposed from one state of the model.
   Proposals are the search's own critical path, and their cost is feature extraction: draws are
   extracted `draw_width` (the measurer's extraction processes) at a time, one round trip for
   many rejected draws; the draws a proposal did not examine wait for the next ones
   (`Search.drawn`, `Search.bred`); the next proposals' draws are extracted ahead, while the
   search waits for results (`Search.speculate`); and a small space is extracted in the
   background (`prefetch.py`), after the first proposal.
5. Every measurement (failures too) goes to the database (when one is given) as it arrives, and
   to `on_trial` (the progress bar).

The search stops early when no unmeasured program is left (a small space measured exhaustively).
`tune_many` tunes several workloads at once through one measurer (`Tuning` is one workload's
state): one fills the devices while another starts or drains.
Deterministic for a given `seed` and order of results: with `batch=1` the random strategy
proposes the same candidates in the same order whatever the measurer and the order its results
arrive in (the evolutionary one depends on which results had arrived when it proposed).
"""

from __future__ import annotations

import dataclasses
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
from mlc.tuning.prefetch import Prefetch
from mlc.tuning.measure import MeasureResult, MeasureTask, TimingProtocol, protocol_for
from mlc.tuning.space import Config, SearchSpace, config_key
from mlc.tuning.device_worker import REFERENCES_KEPT
from mlc.tuning.streams import Stream, stream_of
from mlc.tuning.workload import Workload, target_key

STRATEGIES = ("evolutionary", "random")
POPULATION_PER_CANDIDATE = 4
POPULATION_LEAST = 8
"""Offspring the model ranks for a proposal: `POPULATION_PER_CANDIDATE` per candidate wanted,
at least `POPULATION_LEAST` (a stream proposes one or two at a time)."""
EXPLORE_SHARE = 0.125
"""Chance that a proposed candidate is a random member of the population instead of the
model's pick (the rounds of 8 before took one such member each)."""
PARENTS = 4
ATTEMPTS_PER_CANDIDATE = 4
"""Draws per wanted candidate before sampling gives up (each new configuration is lowered to the
loop level for its features; knobs with nothing to act on make many draws repeat a program)."""
EXHAUSTIVE_CHUNK = 64
"""Configurations of a small space extracted together while enumerating it."""
EXHAUSTIVE_SPACE = 1 << 14
"""Spaces up to this size are enumerated once random draws stop finding unmeasured programs."""


class Measurer(Protocol):
    slots: int
    """Candidates it measures at once (its devices)."""

    def measure(self, tasks: list[MeasureTask]) -> list[MeasureResult]: ...

    # Optional: `stream()` returning a `streams.Stream` (candidates measured as they come, results
    # as they finish); without it, `streams.SequentialStream` measures `slots` at a time.
    # `extract_workers` (draws extracted at once), `extract_soon(source, configs)` (an on-demand
    # extraction's handle: `Search.speculate`) and `extract_later(source, configs)` (a background
    # extraction's handle: `prefetch.py`) make proposals cheaper.

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
    extraction included), 'fit' (the cost model), 'wait' (for the next result)."""
    extractions: dict[str, int] = field(default_factory=dict)
    """Configurations extracted 'on demand' (each call a round trip the proposal waited for:
    'round trips'), 'ahead' of the proposals (`Search.speculate`) and in the 'background'
    (`prefetch.py`)."""

    def _tally(self, kind: str, count: int) -> None:
        self.extractions[kind] = self.extractions.get(kind, 0) + count

    def _count(self, step: str, since: float) -> None:
        self.host_seconds[step] = self.host_seconds.get(step, 0.0) + time.perf_counter() - since

    @property
    def heuristic(self) -> Trial:
        """Trial 0 (once measured: results arrive in any order during the tuning)."""
        return next(t for t in self.trials if t.index == 0)

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
    drawn: deque[dict] = field(default_factory=deque)
    """Random draws extracted with a proposal's batch but not examined by it (`_sample`): with one
    candidate a proposal (a stream wanting one more), one round trip for `draw_width` draws serves
    many proposals instead of one."""
    bred: deque[dict] = field(default_factory=deque)
    """Offspring extracted with a proposal's population but not examined by it (as `drawn`): the
    next proposals' populations take them first, ranked by the model as it is then (bred from
    the parents of a few results ago: at most `draw_width` of them, and no round trip)."""
    enumerated: int = 0
    """How many of the small space's first configurations (`valid_configs`, in order) are known
    measured or in flight: the enumeration of `_fill` starts after them (late in a tuning, each
    proposal walked the whole space again)."""
    prefetch: Prefetch | None = None
    """The background extraction of a small space (`prefetch.py`)."""
    extract_soon: Callable[[list[dict]], Any] | None = None
    """`extract_many` without waiting (the measurer's `extract_soon`): a handle with `ready()` and
    `get()`. With it the search extracts its next draws ahead (`speculate`)."""
    ahead: list[tuple[list[dict], Any]] = field(default_factory=list)
    """Extractions started ahead (`speculate`) and not taken yet: their configurations and handle."""
    ahead_keys: set[str] = field(default_factory=set)
    """The keys of `ahead`'s configurations."""
    draw_width: int = 1
    """Configurations drawn (and extracted together) at once: the measurer's extraction
    processes, so that one proposal is one round trip to them, not one per rejected draw."""
    proposed: int = 0
    """Candidates proposed so far (the next one's trial index)."""
    heuristic_known: bool = False
    """Whether the heuristic's result has arrived (and every result since was taught)."""
    model_stale: bool = False
    """Whether results were taught since the model was last fitted."""

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
        """Extracts the features of the valid, new ones of `configs` at once (in parallel), after
        taking what the background extraction (`prefetch`) has finished and waiting for those of
        them extracted ahead (`speculate`): they are under way already."""
        self.absorb()
        new = {config_key(c): c for c in configs if self.space.invalid(c) is None and config_key(c) not in self.extracted}
        for entry in [entry for entry in self.ahead if any(config_key(c) in new for c in entry[0])]:
            self._take_ahead(entry)
        new = {key: config for key, config in new.items() if key not in self.extracted}
        if new:
            self.result._tally("round trips", 1)
            self.result._tally("on demand", len(new))
        for config, outcome in zip(new.values(), self.extract_many(list(new.values())) if new else []):
            self._keep(config, outcome)

    def absorb(self) -> None:
        """Takes the background extraction's and the extractions ahead's finished chunks (never waits)."""
        for entry in [entry for entry in self.ahead if entry[1].ready()]:
            self._take_ahead(entry)
        if self.prefetch is not None:
            absorbed = self.prefetch.absorb()
            self.result._tally("background", len(absorbed))
            for config, outcome in absorbed:
                self._keep(config, outcome)

    def known(self, key: str) -> bool:
        """Whether the configuration of `key` is extracted or being extracted ahead."""
        return key in self.extracted or key in self.ahead_keys

    def speculate(self) -> None:
        """Starts extracting the next proposals' draws now, without waiting (with `extract_soon`).

        A proposal that extracts its draws on demand waits a round trip to the extraction
        processes (~40 ms a configuration and the processes' queue), and the search's one thread
        proposes for every workload it tunes: on the shared 2-core machine, with stand-in devices,
        the proposals took 42 of a 48 s tuning. So after each proposal, while the search waits
        for results, the next draws start extracting: `draw_width` random ones, or once the model
        is trained at least a population of offspring of the best measured configurations. They
        join the queue the next proposals examine first (`drawn`, `bred`), and a proposal that
        reaches one still under way waits only for the rest of its extraction. One batch ahead
        at a time; the draws are those the proposals would make (the random ones in the same
        order: the random strategy's trials do not change), offspring are bred from the parents
        of this proposal's time."""
        if self.extract_soon is None or self.ahead:
            return
        evolving = self.strategy != "random" and self.model.trained
        waiting = self.bred if evolving else self.drawn
        width = max(self.draw_width, POPULATION_LEAST if evolving else 1)  # what one proposal examines
        if len(waiting) >= width:
            return
        parents = self._parents() if evolving else []
        configs = [self._offspring(parents) if evolving else self.space.random(self.rng) for _ in range(width)]
        waiting.extend(configs)
        fresh = {config_key(c): c for c in configs if self.space.invalid(c) is None and not self.known(config_key(c))}
        if fresh:
            self.result._tally("ahead", len(fresh))
            self.ahead.append((list(fresh.values()), self.extract_soon(list(fresh.values()))))
            self.ahead_keys.update(fresh)

    def _take_ahead(self, entry: tuple[list[dict], Any]) -> None:
        """Keeps the outcomes of an extraction started ahead (waits for it when it is not done). One
        that failed is dropped: its configurations are extracted on demand when drawn."""
        self.ahead.remove(entry)
        configs, handle = entry
        self.ahead_keys.difference_update(config_key(c) for c in configs)
        try:
            outcomes = handle.get()
        except Exception:  # noqa: BLE001 - the extraction process died: extracted on demand later
            return
        for config, outcome in zip(configs, outcomes):
            self._keep(config, outcome)

    def _keep(self, config: dict, outcome: tuple[list[float], str] | str) -> None:
        key = config_key(config)
        if key not in self.extracted:
            self.extracted[key] = Candidate(config, [], f"failed:{key}", outcome) if isinstance(outcome, str) else Candidate(config, *outcome)

    def record(self, candidate: Candidate) -> None:
        self.measured.update((config_key(candidate.config), candidate.fingerprint))

    def propose(self, count: int) -> list[Candidate]:
        if self.strategy == "random" or not self.model.trained:
            return self._fill([], count)
        parents = self._parents()
        breed = lambda: self.bred.popleft() if self.bred else self._offspring(parents)  # noqa: E731
        offspring = self._fill(self._sample(breed, max(count * POPULATION_PER_CANDIDATE, POPULATION_LEAST), (), self.bred), count)
        failed = [c for c in offspring if c.error is not None][:count]
        population = [c for c in offspring if c.error is None]
        if failed or not population:
            return failed or []
        predictions = self.model.predict([c.features for c in population])
        ranked = [c for _, c in sorted(zip(predictions, population), key=lambda pair: pair[0])]
        chosen, others = ranked[:count], ranked[count:]
        for position in range(len(chosen)):
            if others and self.rng.random() < EXPLORE_SHARE:
                chosen[position] = others.pop(self.rng.randrange(len(others)))
        return chosen

    def _parents(self) -> list[Config]:
        """The best measured configurations (the heuristic before any is measured)."""
        measured = sorted((t for t in self.result.trials if t.cost is not None), key=lambda t: t.cost)  # type: ignore[arg-type, return-value]
        return [t.config for t in measured[:PARENTS]] or [self.space.heuristic()]

    def _offspring(self, parents: list[Config]) -> dict:
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
        found = found + self._sample(self._random_draw, count - len(found), found, self.drawn)
        if len(found) < count and self.space.size() <= EXHAUSTIVE_SPACE:
            configs = itertools.islice(self.space.valid_configs(), self.enumerated, None)
            prefix = True  # of configurations seen (measured or in flight): never to examine again
            while len(found) < count and (chunk := list(itertools.islice(configs, EXHAUSTIVE_CHUNK))):
                self.prepare(chunk)
                for config in chunk:
                    if len(found) == count:
                        break
                    candidate = self.candidate(config, found)
                    if candidate is not None:
                        found.append(candidate)
                    prefix = prefix and candidate is None and self._seen(config)
                    self.enumerated += prefix
        return found

    def _seen(self, config: dict) -> bool:
        """Whether `config` or its program was measured or is in flight (it stays so)."""
        key = config_key(config)
        return key in self.measured or (key in self.extracted and self.extracted[key].fingerprint in self.measured)

    def _random_draw(self) -> dict:
        """The next random configuration: one drawn before and not examined yet, else a new one."""
        return self.drawn.popleft() if self.drawn else self.space.random(self.rng)

    def _sample(self, make: Callable[[], dict], count: int, taken: Sequence[Candidate] = (), unexamined: deque[dict] | None = None) -> list[Candidate]:
        """Up to `count` unmeasured candidates from at most max(ATTEMPTS_PER_CANDIDATE * count,
        `draw_width`) draws, at least `draw_width` of them extracted together (in parallel), then
        taken in order. (A proposal late in a tuning rejects most draws: their programs were
        measured. One draw at a time, each rejection cost a round trip to the extraction
        processes: three a candidate, the search's own process busy 80% of a 2-GPU tuning.) The
        draws after the last one taken go back to `unexamined` (the random draws: the next
        proposal examines them first, already extracted), else they are dropped."""
        found: list[Candidate] = []
        draws, limit = 0, max(ATTEMPTS_PER_CANDIDATE * count, self.draw_width)
        while len(found) < count and draws < limit:
            size = min(max(count - len(found), self.draw_width), limit - draws)
            configs = [make() for _ in range(min(size, len(unexamined)) if unexamined else size)]  # (no new draw beside extracted ones)
            draws += len(configs)
            self.prepare(configs)
            for position, config in enumerate(configs):
                if len(found) == count:
                    if unexamined is not None:
                        unexamined.extendleft(reversed(configs[position:]))
                    break
                candidate = self.candidate(config, [*taken, *found])
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
    repeats: int | None = None,
    reference: Reference | None = None,
    protocol: TimingProtocol | None = None,
) -> TuneResult:
    """Tunes `workload` on `target` with at most `trials` measurements (see the module docstring).
    `batch`: the most candidates proposed from one state of the model (default: as many as the
    measurer wants). `reference`: the workload's `make_reference(workload)` when the caller has it
    already (a second tuning of the same workload need not interpret it again). `protocol`: how
    each candidate is timed (default `measure.protocol_for(target)`); `repeats` overrides its
    sample count."""
    options = dict(strategy=strategy, batch=batch, seed=seed, database=database, on_trial=on_trial, repeats=repeats, protocol=protocol)
    return tune_many([workload], target, trials, measurer, 1, [reference], **options)[0]


def tune_many(
    workloads: Sequence[Workload],
    target: str,
    trials: int,
    measurer: Measurer,
    concurrency: int = REFERENCES_KEPT,
    references: Sequence[Reference | None] | None = None,
    **options: object,
) -> list[TuneResult]:
    """`tune` of each workload (the same `options`), up to `concurrency` of them at once through one
    measurer's stream, in the workloads' order (the next starts when one finishes).

    Why at once: a workload's tuning has a start (the heuristic's compile before any device has
    work; proposals that wait for feature extraction while its space is extracted in the
    background) and an end (the last candidates draining) during which it cannot keep the devices
    busy; a second workload's candidates fill those gaps. The proposals share the measurer's
    lookahead (`Stream.wants`) in turn, the workload with the fewest candidates in flight first.
    `concurrency` defaults to the workloads whose inputs a timing process keeps on its device
    (`device_worker.REFERENCES_KEPT`): more would send a workload's arrays again at every switch.
    A workload's proposals depend on which of its results have arrived, as in `tune`; with
    `strategy='random'` and `batch=1` each workload's trials are those of tuning it alone."""
    if concurrency < 1:
        raise ValueError(f"the concurrency must be at least 1; got {concurrency}")
    references = list(references) if references is not None else [None] * len(workloads)
    waiting = list(zip(workloads, references))
    tunings: list[Tuning] = []
    active: list[Tuning] = []
    owners: dict[int, Tuning] = {}
    stream = stream_of(measurer)
    while waiting or active:
        while waiting and len(active) < concurrency:
            workload, reference = waiting.pop(0)
            tunings.append(Tuning(workload, target, trials, measurer, reference=reference, **options))  # type: ignore[arg-type]
            active.append(tunings[-1])
        _propose(active, stream, owners)
        active = [tuning for tuning in active if not tuning.done]
        if not owners:
            continue  # every active tuning finished, or proposed only configurations that do not lower
        started = time.perf_counter()
        ticket, outcome = stream.next()
        owner = owners.pop(ticket)
        owner.result._count("wait", started)
        owner.finish(ticket, outcome)
        for tuning in active:
            tuning.search.absorb()
    for tuning in tunings:
        tuning.result.trials.sort(key=lambda t: t.index)
    return [tuning.result for tuning in tunings]


def _propose(active: list[Tuning], stream: Stream, owners: dict[int, Tuning]) -> None:
    """Candidates from the active tunings while the stream wants more (at least one when nothing
    is in flight), each tuning a share in turn, the one with the fewest in flight first."""
    while True:
        proposing = sorted((t for t in active if t.proposing), key=lambda t: len(t.in_flight))
        wanted = stream.wants() if owners else max(1, stream.wants())
        if not proposing or wanted <= 0:
            return
        share = -(-wanted // len(proposing))
        for tuning in proposing:
            for ticket in tuning.propose(stream, min(share, wanted)):
                owners[ticket] = tuning
            wanted = stream.wants() if owners else max(1, stream.wants())
            if wanted <= 0:
                return


class Tuning:
    """One workload's tuning in progress: its search, its candidates in flight, its result.
    `tune` drives it: `propose` starts candidates on a stream, `finish` takes their results."""

    def __init__(
        self,
        workload: Workload,
        target: str,
        trials: int,
        measurer: Measurer,
        strategy: str = "evolutionary",
        batch: int | None = None,
        seed: int = 0,
        database: TuningDatabase | None = None,
        on_trial: Callable[[Trial, TuneResult], None] | None = None,
        repeats: int | None = None,
        reference: Reference | None = None,
        protocol: TimingProtocol | None = None,
    ):
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown search strategy '{strategy}': use one of {', '.join(STRATEGIES)}")
        if batch is not None and batch < 1:
            raise ValueError(f"the batch must be at least 1; got {batch}")
        protocol = protocol or protocol_for(target)
        self.protocol = dataclasses.replace(protocol, samples=repeats) if repeats is not None else protocol
        self.workload, self.target, self.trials, self.measurer = workload, target, trials, measurer
        self.batch, self.database, self.on_trial = batch, database, on_trial
        self.space = space = SearchSpace.of(workload.module, target)
        self.reference = reference or make_reference(workload)
        self.source = str(workload.module)
        self.result = TuneResult(workload, target, space)
        extract = lambda configs: measurer.extract(self.source, configs)  # noqa: E731
        self.search = Search(workload, space, strategy, random.Random(seed), CostModel(seed), self.result, extract, draw_width=getattr(measurer, "extract_workers", 1))
        if (extract_soon := getattr(measurer, "extract_soon", None)) is not None:
            self.search.extract_soon = lambda configs: extract_soon(self.source, configs)
        # The database's keys (the target's asks the device for its description): only with one.
        self.keys = (workload.key, target_key(target), current_version()) if database is not None else ('', '', '')
        self.in_flight: dict[int, tuple[int, Candidate]] = {}
        self.unlearned: list[Trial] = []
        """Results that arrived before the heuristic's (costs are taught relative to it)."""
        self.exhausted = False
        self.prefetching = False
        heuristic = self.search.candidate(space.heuristic())
        assert heuristic is not None  # the first candidate is never pruned nor seen
        if heuristic.error is not None:
            from mlc.compiler import LoweringError

            raise LoweringError(f"{workload.name}: the heuristic configuration {heuristic.error}")
        if database is not None:  # transfer: rows of the same knobs (the same feature layout) only
            history = _history(database, self.keys[1], workload.key)
            self.search.model.add_history([row for row in history if len(row[0]) == len(heuristic.features)])
            self.search.model.fit()  # with earlier tunings' records, the first proposals are already ranked
        self.heuristic: Candidate | None = heuristic
        """Until started: the heuristic is the first candidate; the next ones compile beside it."""

    @property
    def proposing(self) -> bool:
        return not self.exhausted and self.search.proposed < self.trials

    @property
    def done(self) -> bool:
        return not self.in_flight and not self.proposing

    def propose(self, stream: Stream, wanted: int) -> list[int]:
        """Starts up to `wanted` new candidates on `stream` (the heuristic first); their tickets."""
        wanted = min(wanted, self.trials - self.search.proposed, self.batch or self.trials)
        if wanted <= 0:
            return []
        if self.heuristic is not None:
            candidates, self.heuristic = [self.heuristic], None
        else:
            search, result = self.search, self.result
            if search.model_stale and search.strategy != "random":  # (random proposals ignore the model)
                started = time.perf_counter()
                search.model.fit()
                search.model_stale = False
                result._count("fit", started)
            started = time.perf_counter()
            candidates = search.propose(wanted)
            result._count("propose", started)
            if not self.prefetching:  # after the first proposal: its draws and the heuristic go first
                search.prefetch = Prefetch.of(self.space, self.measurer, self.source, search.known)
                self.prefetching = True
            self.exhausted = not candidates
            search.speculate()
        return [ticket for candidate in candidates if (ticket := self._start(stream, candidate)) is not None]

    def _start(self, stream: Stream, candidate: Candidate) -> int | None:
        search = self.search
        search.record(candidate)  # taken: no later proposal repeats a program in flight
        index = search.proposed
        search.proposed += 1
        if candidate.error is not None:
            self._finish(index, candidate, MeasureResult(None, candidate.error))
            return None
        pipeline = self.space.pipeline(candidate.config)
        task = self.protocol.task(self.source, self.workload.entry, self.target, pipeline, *self.reference)
        ticket = stream.put(task)
        self.in_flight[ticket] = (index, candidate)
        return ticket

    def finish(self, ticket: int, outcome: MeasureResult) -> None:
        self._finish(*self.in_flight.pop(ticket), outcome)

    def _finish(self, index: int, candidate: Candidate, outcome: MeasureResult) -> None:
        search, result = self.search, self.result
        trial = Trial(index, candidate.config, self.space.pipeline(candidate.config), outcome, candidate.features, candidate.fingerprint)
        result.trials.append(trial)
        if candidate.features:
            self.unlearned.append(trial)
        search.heuristic_known = search.heuristic_known or index == 0
        if search.heuristic_known and self.unlearned:
            for waiting in sorted(self.unlearned, key=lambda t: t.index):
                _learn(search.model, result, waiting)
            self.unlearned.clear()
            search.model_stale = True
        if self.database is not None:
            self.database.add([_record(trial, self.keys, self.workload.name)])
        if self.on_trial is not None:
            self.on_trial(trial, result)


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
