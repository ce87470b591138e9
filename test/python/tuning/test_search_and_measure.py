"""A short search on the CPU target (mlc/tuning/search.py) measured by a local pool and by a local
two-worker Ray cluster (mlc/tuning/measure.py, ray_measure.py); failures are data, not errors."""

from __future__ import annotations

from contextlib import closing

import random

import pytest

from mlc.dialects.graph.error_bounds import result_bounds
from mlc.tuning.database import TuningDatabase
from mlc.tuning import features
from mlc.tuning.features import extract_from_text
from mlc.tuning.measure import LocalMeasurer, MeasureResult, MeasureTask
from mlc.tuning.search import tune
from mlc.tuning.space import SearchSpace

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

    measurer = RayMeasurer("cpu", address=None, local_cpus=2)
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
    assert len(result.trials) == 4 and seen == list(range(4)) and len(records) == 4
    assert all(t.cost is not None for t in result.trials), [t.result.error for t in result.trials]  # checked correct
    assert len({t.fingerprint for t in result.trials}) == 4  # no program measured twice
    assert all(result.space.invalid(t.config) is None for t in result.trials)
    assert result.best.cost <= result.heuristic.cost
    assert min(r.cost for r in records) == result.best.cost
    assert set(result.host_seconds) == {"propose", "fit", "wait"} and all(s >= 0 for s in result.host_seconds.values())


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
    assert ray_measurer.slots == 1  # one timing actor; the other CPU compiles
    assert [name for name, _ in results[0].phases] == ["load", "check", "time"] and results[0].compile_seconds > 0


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
    result = tune(workload(ADD), "cpu", 1000, SyntheticMeasurer(), batch=8, seed=0)
    programs = {t.fingerprint for t in result.trials}
    assert len(programs) == len(result.trials) < 1000  # each program once, then no more to measure
    space = result.space
    assert len(result.trials) + sum(1 for _ in space.valid_configs()) >= 2 * len(programs)  # some configurations shared a program


def test_the_default_batch_grows_with_the_measurers_devices():
    measurer = SyntheticMeasurer(slots=2)
    tune(workload(ADD), "cpu", 17, measurer, seed=0)
    assert measurer.rounds[0] == 1  # the heuristic alone
    assert measurer.rounds[1:] == [8, 8]


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
    failures included, whichever device timed them; batches submitted one after the other are
    measured together (the first is not waited for); each result says where its time went; a
    workload's arrays go to a timing process once (a task with other arrays is another
    reference)."""
    measurer = LocalMeasurer("cpu", workers=2, devices=["first", "second"])
    try:
        assert measurer.slots == 2
        good, broken = _tasks(ADD, ["mlc-lower-to-cpu", "builtin.module(convert-graph-to-tile)"])
        wrong = MeasureTask(**{**good.__dict__, "expected": [good.expected[0] + 1.0]})
        first = measurer.submit([good, broken, good])
        second = measurer.submit([wrong, good])
        results = [*first.get(), *second.get()]
        held = [list(process._held) for process in measurer._timing if process is not None]
    finally:
        measurer.close()
    assert [r.cost is not None for r in results] == [True, False, True, False, True]
    assert "wrong result" in results[3].error
    assert [name for name, _ in results[0].phases] == ["load", "check", "time"] and results[0].compile_seconds > 0
    assert sorted(key for keys in held for key in keys) in ([0, 1], [0, 0, 1], [0, 1, 1], [0, 0, 1, 1])


class SubmittingMeasurer(SyntheticMeasurer):
    """A synthetic measurer with `submit`: records when rounds are submitted and collected."""

    def __init__(self):
        super().__init__()
        self.events: list[tuple[str, int]] = []

    def submit(self, tasks):
        number = len(self.rounds)
        results = self.measure(tasks)
        self.events.append(("submit", number))
        outer = self

        class Handle:
            def get(self):
                outer.events.append(("get", number))
                return results

        return Handle()


def test_rounds_overlap_up_to_the_depth_and_no_program_is_proposed_twice():
    """With `submit`, round k+1 is proposed and submitted before round k's results are collected
    (depth 2; the heuristic is round 0); depth 1 alternates; either way every trial is a distinct
    program and the heuristic is trial 0."""
    for depth, expected in ((2, ["submit", "submit", "get", "submit", "get", "submit", "get", "get"]), (1, ["submit", "get"] * 4)):
        measurer = SubmittingMeasurer()
        result = tune(workload(ADD), "cpu", 10, measurer, batch=3, seed=0, depth=depth)
        assert [kind for kind, _ in measurer.events] == expected, depth
        assert len(result.trials) == 10 and len({t.fingerprint for t in result.trials}) == 10
        assert [t.index for t in result.trials] == list(range(10)) and result.heuristic.config == result.space.heuristic()


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
    assert measurer.rounds == [1, 4] and ranked_rounds  # the one batch after the heuristic was ranked


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
    good = _tasks(ADD, ["mlc-lower-to-cpu"])[0]
    others = [MeasureTask(**{**good.__dict__, "inputs": [a.copy() for a in good.inputs]}) for _ in range(2)]
    results = [local_measurer.measure([task])[0] for task in (good, others[0], good, others[1], good)]
    assert all(r.cost is not None for r in results), [r.error for r in results]
