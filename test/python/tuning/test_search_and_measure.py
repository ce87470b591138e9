"""A short search on the CPU target (mlc/tuning/search.py) measured by a local pool and by a local
two-worker Ray cluster (mlc/tuning/measure.py, ray_measure.py); failures are data, not errors."""

from __future__ import annotations

import heapq
import itertools
import random
from contextlib import closing

import pytest

from mlc.dialects.graph.error_bounds import result_bounds
from mlc.tuning.database import TuningDatabase
from mlc.tuning import features
from mlc.tuning.features import extract_from_text
from mlc.tuning.measure import LocalMeasurer, MeasureResult, MeasureTask
from mlc.tuning.search import tune, tune_many
from mlc.tuning.space import SearchSpace, config_key
from mlc.tuning.streams import INITIAL_PER_DEVICE, RunningSeconds, lookahead

from .tuning_programs import ADD, MATMUL, workload


@pytest.fixture(scope="module")
def local_measurer():
    measurer = LocalMeasurer("cpu", workers=2)
    yield measurer
    measurer.close()


@pytest.fixture(scope="module")
def ray_measurer():
    ray = pytest.importorskip("ray")
    from mlc.tuning.ray_measure import RayMeasurer

    measurer = RayMeasurer("cpu", address=None, local_cpus=2, cpus_per_task=0.5)  # two timing actors
    yield measurer
    ray.shutdown()


def _tasks(text: str, pipelines: list[str], repeats: int = 2) -> list[MeasureTask]:
    tuned = workload(text)
    inputs = tuned.inputs()
    expected, bounds = result_bounds(tuned.function, inputs)
    return [MeasureTask(str(tuned.module), "main", "cpu", p, inputs, expected, bounds, warmup=1, repeats=repeats) for p in pipelines]


def test_a_short_search_is_never_worse_than_the_heuristic(local_measurer, tmp_path):
    tuned = workload(MATMUL, "matmul")
    seen = []
    with closing(TuningDatabase(tmp_path / "t.sqlite")) as database:
        result = tune(tuned, "cpu", 4, local_measurer, batch=3, seed=1, database=database, on_trial=lambda t, r: seen.append(t.index), repeats=3)
        records = database.records()
    assert result.heuristic.config == result.space.heuristic() and result.heuristic.index == 0
    assert len(result.trials) == 4 and sorted(seen) == list(range(4)) and len(records) == 4
    assert all(t.cost is not None for t in result.trials), [t.result.error for t in result.trials]  # checked correct
    assert len({t.fingerprint for t in result.trials}) == 4  # no program measured twice
    assert all(result.space.invalid(t.config) is None for t in result.trials)
    assert result.best.cost <= result.heuristic.cost
    assert min(r.cost for r in records) == result.best.cost
    assert {"propose", "wait"} <= set(result.host_seconds) <= {"propose", "fit", "wait"}  # no fit when every proposal came before a result
    assert all(s >= 0 for s in result.host_seconds.values())


def test_failures_are_recorded_not_raised(local_measurer):
    good, broken = _tasks(ADD, ["mlc-lower-to-cpu", "builtin.module(convert-graph-to-tile)"])
    wrong = MeasureTask(**{**good.__dict__, "expected": [good.expected[0] + 1.0]})
    results = local_measurer.measure([good, broken, wrong])
    assert results[0].cost is not None and results[0].cost > 0 and len(results[0].costs) == 2
    assert results[1].cost is None and "the cpu runtime runs what 'mlc-lower-to-cpu' produces" in results[1].error
    assert results[2].cost is None and results[2].error.startswith("wrong result")


def test_measurement_through_a_local_ray_cluster(ray_measurer):
    """Compile tasks and a timing actor (mlc/tuning/ray_measure.py); a candidate that does not
    lower to what the runtime runs is a failure."""
    space = SearchSpace.of(workload(ADD).module, "cpu")
    pipelines = [space.pipeline(space.heuristic()), space.pipeline({**space.heuristic(), "convert-tile-to-loop.vector-bytes": 4})]
    results = ray_measurer.measure(_tasks(ADD, [*pipelines, "builtin.module(cse)"]))
    assert [r.cost is not None for r in results] == [True, True, False]
    assert ray_measurer.ray.cluster_resources().get("CPU") == 2
    assert ray_measurer.slots == 2  # two timing actors of half a CPU each; the other CPU compiles
    assert [name for name, _ in results[0].phases] == ["load", "check", "time"] and results[0].compile_seconds > 0
    assert all(r.device in (0, 1) for r in results)


def test_ray_gives_each_compiled_candidate_to_a_free_actor(ray_measurer):
    """Pull, not round-robin: while one actor times a long candidate, the other takes every later
    candidate (in turn, two of the four would have queued behind the long one)."""
    good = _tasks(ADD, ["mlc-lower-to-cpu"])[0]
    long = MeasureTask(**{**good.__dict__, "warmup": 200_000})  # ~2 s of calls (a long kernel's stand-in); a fast one ~0.1 s
    stream = ray_measurer.stream()
    tickets = [stream.put(long)] + [stream.put(good) for _ in range(4)]
    results = dict(stream.next() for _ in tickets)
    assert all(r.cost is not None for r in results.values()), [r.error for r in results.values()]
    busy = results[tickets[0]].device
    assert [results[t].device for t in tickets[1:]] == [1 - busy] * 4


def test_ray_extracts_in_the_background(ray_measurer):
    """`extract_later` (what `prefetch.Prefetch` uses) and `extract_soon` (`Search.speculate`) give
    what `extract` gives, without waiting."""
    tuned = workload(ADD)
    space = SearchSpace.of(tuned.module, "cpu")
    configs = list(itertools.islice(space.valid_configs(), 3))
    handle, soon = ray_measurer.extract_later(str(tuned.module), configs), ray_measurer.extract_soon(str(tuned.module), configs)
    while not (handle.ready() and soon.ready()):
        pass
    assert handle.get() == soon.get() == ray_measurer.extract(str(tuned.module), configs) == extract_from_text(str(tuned.module), "cpu", configs)
    assert ray_measurer.extract_workers == 1  # half the cluster's two CPUs


class SyntheticMeasurer:
    """Costs from a formula of the configuration (no compiling): the search's logic alone."""

    def __init__(self, slots: int = 1):
        self.slots = slots
        self.measured: list[str] = []
        self.rounds: list[int] = []

    def extract(self, source, configs):
        return extract_from_text(source, "cpu", configs)

    def measure(self, tasks):
        self.measured.extend(task.pipeline for task in tasks)
        self.rounds.append(len(tasks))
        return [MeasureResult(1.0 + len(task.pipeline) % 7 / 10, None) for task in tasks]


def test_lowering_failures_are_trials(monkeypatch):
    from mlc.tuning import features

    real_extract = features.extract

    def extract(module, space, config):
        if config.get("convert-tile-to-loop.vector-bytes") == 8:
            raise ValueError("refused on purpose")
        return real_extract(module, space, config)

    monkeypatch.setattr(features, "extract", extract)
    measurer = SyntheticMeasurer()
    result = tune(workload(ADD), "cpu", 10, measurer, batch=3, seed=3)
    failed = [t for t in result.trials if t.cost is None]
    assert len(result.trials) == 10 and len(measurer.measured) == 10 - len(failed)
    assert len({t.fingerprint for t in result.trials}) == 10
    assert failed and all("does not lower: ValueError: refused on purpose" in t.result.error for t in failed)
    assert all(t.config["convert-tile-to-loop.vector-bytes"] == 8 for t in failed)
    assert result.best.cost == min(t.cost for t in result.trials if t.cost is not None) <= result.heuristic.cost


def test_a_small_space_is_searched_exhaustively_then_the_search_stops():
    # 256 elements: one tile size fewer than ADD's 1024 halves the space (768 configurations, 24
    # programs against 1536 and 72), and every configuration is lowered to find its program.
    result = tune(workload(ADD.replace("1024", "256")), "cpu", 1000, SyntheticMeasurer(slots=8), seed=0)
    programs = {t.fingerprint for t in result.trials}
    assert len(programs) == len(result.trials) < 1000  # each program once, then no more to measure
    space = result.space
    assert len(result.trials) + sum(1 for _ in space.valid_configs()) >= 2 * len(programs)  # some configurations shared a program


def test_a_measurer_without_a_stream_measures_one_candidate_per_device_at_a_time():
    measurer = SyntheticMeasurer(slots=2)
    tune(workload(ADD), "cpu", 9, measurer, seed=0)
    assert measurer.rounds == [2] * 4 + [1]


def test_features_are_extracted_in_the_measurers_processes(local_measurer):
    """The same features and fingerprints as extracting in this process, and the reason for a
    configuration that does not lower."""
    tuned = workload(MATMUL, "matmul")
    space = SearchSpace.of(tuned.module, "cpu")
    rng = random.Random(0)
    configs = [space.heuristic(), *(space.random(rng) for _ in range(3)), {**space.heuristic(), "convert-graph-to-tile.matmul-tile": (7, 7, 7)}]
    extracted = local_measurer.extract(str(tuned.module), configs)
    assert extracted[:4] == [features.extract(tuned.module, space, c) for c in configs[:4]]
    assert isinstance(extracted[4], str) and extracted[4].startswith("does not lower")


def test_results_keep_the_order_of_the_tasks_across_devices():
    """Two timing processes (two 'devices' of the CPU target): results come back in task order,
    failures included, whichever device timed them (each timed result says which); a stream's
    results come back with their tickets as they finish, measured beside the batch submitted
    before (which is not waited for); each result says where its time went; a workload's arrays
    go to a timing process once (a task with other arrays is another reference)."""
    measurer = LocalMeasurer("cpu", workers=2, devices=["first", "second"])
    try:
        assert measurer.slots == 2 and measurer.wants() == lookahead(2, 2, None, None) == 4  # capped by the compile pool
        good, broken = _tasks(ADD, ["mlc-lower-to-cpu", "builtin.module(convert-graph-to-tile)"])
        wrong = MeasureTask(**{**good.__dict__, "expected": [good.expected[0] + 1.0]})
        first = measurer.submit([good, broken, good])
        stream = measurer.stream()
        tickets = [stream.put(wrong), stream.put(good)]
        assert measurer.wants() <= 4 - 2  # those compiling count against the lookahead
        streamed = dict(stream.next() for _ in tickets)
        results = [*first.get(), *(streamed[ticket] for ticket in tickets)]
        held = [list(process._held) for process in measurer._timing if process is not None]
    finally:
        measurer.close()
    assert [r.cost is not None for r in results] == [True, False, True, False, True]
    assert "wrong result" in results[3].error
    assert [name for name, _ in results[0].phases] == ["load", "check", "time"] and results[0].compile_seconds > 0
    assert [r.device in (0, 1) for r in results] == [True, False, True, True, True]  # the compile failure never reached one
    assert sorted(key for keys in held for key in keys) in ([0, 1], [0, 0, 1], [0, 1, 1], [0, 0, 1, 1])


class SimulatedMeasurer(SyntheticMeasurer):
    """A streaming measurer in virtual time (deterministic): `workers` compile slots taking
    candidates in order, `devices` devices each taking the earliest compiled candidate as soon as
    it is free; a candidate compiles for `compile_seconds(ticket)` and holds a device for
    `device_seconds`. Keeps `streams.lookahead` of its true means in flight, as LocalMeasurer does."""

    def __init__(self, devices: int, workers: int, compile_seconds, device_seconds: float = 1.0):
        super().__init__(slots=devices)
        self.workers, self.compile_seconds, self.device_seconds = workers, compile_seconds, device_seconds
        self.now, self.busy = 0.0, 0.0
        self.events: list[tuple[float, int, str, int, int]] = []  # (time, order, kind, ticket, device)
        self.to_compile, self.compiled, self.tasks = [], [], {}
        self.compiling, self.free_devices, self.order = 0, list(range(devices)), itertools.count()
        self.finished_at: dict[int, float] = {}

    def stream(self):
        return self

    def put(self, task):
        ticket = len(self.tasks)
        self.tasks[ticket] = task
        self.to_compile.append(ticket)
        self._schedule()
        return ticket

    def wants(self):
        mean_compile = sum(map(self.compile_seconds, self.tasks)) / len(self.tasks) if self.tasks else None
        keep = lookahead(self.slots, self.workers, mean_compile, self.device_seconds)
        return max(0, keep - len(self.to_compile) - self.compiling - len(self.compiled))

    def next(self):
        while True:
            self.now, _, kind, ticket, device = heapq.heappop(self.events)
            if kind == "compiled":
                self.compiling -= 1
                self.compiled.append(ticket)
            else:
                self.free_devices.append(device)
                self.finished_at[ticket] = self.now
            self._schedule()
            if kind == "timed":
                return ticket, self.measure([self.tasks[ticket]])[0]

    def _schedule(self):
        while self.to_compile and self.compiling < self.workers:
            self.compiling += 1
            ticket = self.to_compile.pop(0)
            heapq.heappush(self.events, (self.now + self.compile_seconds(ticket), next(self.order), "compiled", ticket, -1))
        while self.compiled and self.free_devices:
            self.busy += self.device_seconds
            heapq.heappush(self.events, (self.now + self.device_seconds, next(self.order), "timed", self.compiled.pop(0), self.free_devices.pop(0)))


def _compile_seconds(slow: int | None = None):
    return lambda ticket: 16.0 if ticket == slow else 2.0 + ticket % 3


def test_no_round_barrier_a_slow_compile_holds_only_its_own_candidate():
    """Results are taken as they finish and the next candidates proposed at once: while one
    candidate compiles 4-8x longer than the rest, the search goes on proposing and two devices
    stay busy (in virtual time), and the slow candidate keeps its proposal's trial index."""
    measurer = SimulatedMeasurer(devices=2, workers=8, compile_seconds=_compile_seconds(slow=1))
    result = tune(workload(ADD), "cpu", 30, measurer, seed=0)
    slow = measurer.finished_at[1]
    assert sum(1 for ticket, at in measurer.finished_at.items() if ticket > 1 and at < slow) > 15
    assert measurer.busy / (2 * measurer.now) > 0.85  # devices fed: compile latency hidden by the lookahead
    assert [t.index for t in result.trials] == list(range(30)) and result.heuristic.config == result.space.heuristic()
    assert len({t.fingerprint for t in result.trials}) == 30


def test_a_stream_gives_the_sequential_runs_trials_where_the_order_of_results_cannot_matter():
    """The random strategy proposing one candidate at a time proposes the same candidates whatever
    order their results arrive in: a run on three simulated devices with uneven compiles gives a
    sequential run's trials, each with its own candidate's cost. The evolutionary search depends
    on that order, but is deterministic for a given one."""
    def trials(measurer, strategy, batch=None):
        result = tune(workload(ADD), "cpu", 14, measurer, strategy=strategy, batch=batch, seed=2)
        return [(t.index, t.pipeline, t.cost) for t in result.trials]

    sequential = trials(SyntheticMeasurer(), "random", batch=1)
    assert trials(SimulatedMeasurer(3, 4, _compile_seconds(slow=2)), "random", batch=1) == sequential
    evolved = trials(SimulatedMeasurer(3, 4, _compile_seconds()), "evolutionary")
    assert trials(SimulatedMeasurer(3, 4, _compile_seconds()), "evolutionary") == evolved
    assert len({pipeline for _, pipeline, _ in evolved}) == 14


def test_workloads_tuned_together_fill_each_others_start_and_end():
    """`tune_many`: two workloads through one measurer at once (virtual time): the devices stay
    busy through each tuning's start (the heuristic compiling alone) and end (the last, slow,
    compiles), so both finish sooner than one after the other; with the random strategy
    proposing one at a time each workload's trials are those of tuning it alone."""
    def run(concurrency):
        slow_last = lambda ticket: 12.0 if ticket % 8 == 7 else 2.0 + ticket % 3  # noqa: E731
        measurer = SimulatedMeasurer(devices=2, workers=8, compile_seconds=slow_last)
        workloads = [workload(ADD), workload(ADD.replace("1024", "2048"))]
        results = tune_many(workloads, "cpu", 8, measurer, concurrency=concurrency, strategy="random", batch=1, seed=0)
        return [[(t.index, t.pipeline, t.cost) for t in r.trials] for r in results], measurer.now, measurer.busy

    (alone, alone_end, busy), (together, together_end, same_busy) = run(1), run(2)
    assert together == alone and same_busy == busy
    assert together_end < 0.85 * alone_end


class SecondPollJob:
    """A fake extraction job: ready the second time it is polled; taking it records the configurations'
    keys in `record` and extracts them."""

    def __init__(self, record: list[str], source, configs):
        self.record, self.source, self.configs, self.polls = record, source, configs, 0

    def ready(self):
        self.polls += 1
        return self.polls > 1

    def get(self):
        self.record.extend(config_key(c) for c in self.configs)
        return extract_from_text(self.source, "cpu", self.configs)


class PrefetchingMeasurer(SyntheticMeasurer):
    """A synthetic measurer with one extraction process and `extract_later` (prefetch.py): a
    background job is ready the second time it is asked, and extracts when it is taken."""

    extract_workers = 1

    def __init__(self, background: bool):
        super().__init__()
        self.on_demand: list[int] = []
        self.background: list[str] = []
        if not background:
            self.extract_later = None

    def extract(self, source, configs):
        self.on_demand.append(len(configs))
        return super().extract(source, configs)

    def extract_later(self, source, configs):
        return SecondPollJob(self.background, source, configs)


def test_a_background_extraction_changes_where_features_are_extracted_not_the_search():
    """With a small space extracted in the background, proposals extract little on demand, no
    configuration is extracted twice in the background, and the trials are those of the same
    search extracting everything on demand."""
    runs = {}
    for background in (False, True):
        measurer = PrefetchingMeasurer(background)
        result = tune(workload(ADD), "cpu", 8, measurer, seed=4)
        runs[background] = ([(t.index, t.pipeline, t.cost) for t in result.trials], measurer)
    assert runs[True][0] == runs[False][0]
    with_prefetch, without = runs[True][1], runs[False][1]
    assert with_prefetch.background and len(set(with_prefetch.background)) == len(with_prefetch.background)
    assert sum(with_prefetch.on_demand) < sum(without.on_demand)


def test_draws_extracted_together_serve_later_proposals():
    """A stream wants one candidate at a time: a proposal draws `draw_width` (the extraction
    processes) configurations at once and takes one; the rest are examined by the next proposals
    without another round trip (before, each proposal drew and extracted its own and dropped the
    rest). The trials are those of drawing one configuration at a time."""
    def tuned(width):
        measurer = SyntheticMeasurer()
        measurer.extract_workers = width
        result = tune(workload(ADD), "cpu", 10, measurer, strategy="random", batch=1, seed=0)
        return [(t.index, t.pipeline) for t in result.trials], result.extractions["round trips"]

    one_at_a_time, eight_at_once = tuned(1), tuned(8)
    assert eight_at_once[0] == one_at_a_time[0]
    assert one_at_a_time[1] >= 10 and eight_at_once[1] <= 4  # one a proposal; the heuristic's, then one per 8 draws


class SpeculatingMeasurer(SyntheticMeasurer):
    """A synthetic measurer with `extract_soon` (`Search.speculate`): an extraction started ahead
    is ready the second time it is polled, and extracts when it is taken."""

    extract_workers = 4

    def __init__(self, ahead: bool):
        super().__init__()
        self.on_demand: list[str] = []
        self.ahead: list[str] = []
        if not ahead:
            self.extract_soon = None

    def extract(self, source, configs):
        self.on_demand.extend(config_key(c) for c in configs)
        return super().extract(source, configs)

    def extract_soon(self, source, configs):
        return SecondPollJob(self.ahead, source, configs)


@pytest.mark.parametrize("strategy", ["random", "evolutionary"])
def test_draws_extracted_ahead_spare_the_proposals_round_trips(strategy):
    """The next proposals' draws are extracted while the search waits for results: fewer round
    trips on the proposals' path, no configuration extracted twice, and (random, one at a time)
    the trials of extracting every draw on demand."""
    runs = {}
    for ahead in (False, True):
        measurer = SpeculatingMeasurer(ahead)
        result = tune(workload(ADD), "cpu", 8, measurer, strategy=strategy, batch=1, seed=0)
        runs[ahead] = ([(t.index, t.pipeline) for t in result.trials], result.extractions, measurer)
    with_ahead = runs[True][2]
    extracted = with_ahead.on_demand + with_ahead.ahead
    assert with_ahead.ahead and len(set(extracted)) == len(extracted)
    assert runs[True][1]["round trips"] < runs[False][1]["round trips"]
    assert len(runs[True][0]) == 8 and (strategy != "random" or runs[True][0] == runs[False][0])


def test_lookahead_keeps_enough_candidates_for_the_devices_and_no_more_than_the_pool():
    assert lookahead(1, 16, None, None) == INITIAL_PER_DEVICE
    assert lookahead(2, 32, 0.6, 0.15) == 2 * (4 + 1)  # compile 4x a device's share: 4 compiling, 1 waiting
    assert lookahead(2, 32, 0.01, 0.15) == 4  # compiles outrun the devices: one compiling, one waiting each
    assert lookahead(2, 4, 3.0, 0.1) == 6  # the compile pool caps it
    assert lookahead(2, 32, 0.6, 0.15, compile_spread=0.3) == 2 * (8 + 1)  # mean + 2 sd covered
    seconds = RunningSeconds()
    for value in (0.5, 1.5, 0.5, 1.5):
        seconds.add(value)
    assert (seconds.mean, seconds.spread) == (1.0, 0.5)


def test_earlier_tunings_rank_the_first_batch_and_a_given_reference_is_used(monkeypatch, tmp_path):
    """Transfer: with another workload's records of the same knobs in the database, the cost model
    is trained once the heuristic is measured, so the first batch is already ranked by it. A
    reference passed in spares interpreting the workload again."""
    from mlc.tuning import search
    from mlc.tuning.cost_model import CostModel

    with closing(TuningDatabase(tmp_path / "t.sqlite")) as database:
        tune(workload(ADD.replace("1024", "2048")), "cpu", 5, SyntheticMeasurer(), batch=4, seed=0, database=database)
        ranked_rounds = []
        real_predict = CostModel.predict
        monkeypatch.setattr(CostModel, "predict", lambda self, rows: ranked_rounds.append(len(rows)) or real_predict(self, rows))
        reference = search.make_reference(workload(ADD))
        monkeypatch.setattr("mlc.dialects.graph.error_bounds.result_bounds", lambda *_: pytest.fail("interpreted again"))
        measurer = SyntheticMeasurer()
        tune(workload(ADD), "cpu", 5, measurer, batch=4, seed=0, database=database, reference=reference)
    assert measurer.rounds == [1, 1, 1, 1, 1] and ranked_rounds  # proposals after the heuristic were ranked


@pytest.mark.gpu
def test_gpu_samples_time_back_to_back_calls():
    """On the GPU a sample of at least `min_sample_seconds` is many calls (a short kernel's single
    call would time its launch path); each entry is still seconds per call."""
    import mlc
    from mlc.runtime.measurement import time_calls

    tuned = workload(ADD)
    compiled = mlc.compile(str(tuned.module), device="cuda")
    samples = time_calls(compiled, tuned.inputs(), "cuda", runs=3, warmup=1, min_sample_seconds=1e-3)
    assert len(samples) == 3 and all(s > 0 for s in samples)


def test_the_fast_check_accepts_only_what_the_exact_check_accepts(monkeypatch):
    """`Prepared.check`: in the results' own precision, elements at, just under and just over
    their bounds (and NaNs, infinities, unknown bounds) give the exact float64 check's verdict;
    results clearly within never reach the exact check."""
    import numpy as np

    from mlc.dialects.graph import error_bounds
    from mlc.tuning.device_worker import Prepared

    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16):
        want = rng.standard_normal(4096).astype(dtype)
        bound = np.abs(rng.standard_normal(4096)) * 1e-2 + np.where(rng.random(4096) < 0.1, 1e-30, 0.0)
        bound[:8] = np.inf
        for offset in (-2, -1, 0, 1, 2):  # got = want + bound moved by a few ulps of the type
            target = (want.astype(np.float64) + bound).astype(dtype)
            got = target.copy()
            for _ in range(abs(offset)):
                got = np.nextafter(got, np.full_like(got, np.inf if offset > 0 else -np.inf))
            got[8] = np.nan if offset == 2 else got[8]
            for results in ((got,), (want + dtype(0),)):
                exact = error_bounds.check_results(results, [want], [bound]).failure
                assert (Prepared("cpu", (), [want], [bound]).check(results) is None) == (exact is None), (dtype, offset)
    monkeypatch.setattr(error_bounds, "check_results", lambda *_: pytest.fail("the exact check ran"))
    assert Prepared("cpu", (), [want], [bound]).check((want + dtype(0),)) is None


def test_a_timing_process_keeps_the_references_its_parent_thinks_it_keeps(local_measurer):
    """Three workloads' arrays through one timing process, the first used again in between (the
    parent's mirror and the process evict the same reference): every candidate is measured."""
    local_measurer.warm_up()  # every process started and ready (those of earlier tests included)
    assert all(process is not None for process in local_measurer._timing)
    source = str(workload(ADD).module)
    configs = list(itertools.islice(SearchSpace.of(workload(ADD).module, "cpu").valid_configs(), 2))
    background = local_measurer.extract_later(source, configs)  # the background pool: its own
    assert background.get() == local_measurer.extract_soon(source, configs).get() == local_measurer.extract(source, configs)
    assert local_measurer._background_pool not in (None, local_measurer._extract_pool)
    good = _tasks(ADD, ["mlc-lower-to-cpu"])[0]
    others = [MeasureTask(**{**good.__dict__, "inputs": [a.copy() for a in good.inputs]}) for _ in range(2)]
    results = [local_measurer.measure([task])[0] for task in (good, others[0], good, others[1], good)]
    assert all(r.cost is not None for r in results), [r.error for r in results]
