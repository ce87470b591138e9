"""The tuning database (mlc/tuning/database.py): round trips, concurrent writers, mlc.compile's use."""

from __future__ import annotations

import multiprocessing
from contextlib import closing

import mlc
from mlc.tuning.database import Record, TuningDatabase, current_version
from mlc.tuning.space import SearchSpace, config_key
from mlc.tuning.workload import target_key

from .tuning_programs import MATMUL, workload


def _record(trial: int, cost: float | None, workload: str = "w", config: str = "{}") -> Record:
    return Record(workload, "cpu:test", current_version(), config, "mlc-lower-to-cpu", cost, None if cost else "failed", [1.0, 2.0], "f", trial, "name")


def test_round_trip_best_export_import(tmp_path):
    with closing(TuningDatabase(tmp_path / "a.sqlite")) as first:
        assert first.add([_record(0, 2.0), _record(1, None), _record(2, 1.5, config='{"x": 1}')]) == 3
        assert first.add([_record(0, 2.0)]) == 0  # the same measurement twice is one record
        assert first.best("w", "cpu:test").cost == 1.5
        assert first.best("w", "cpu:other") is None and first.best("w", "cpu:test", version="0.0") is None
        lines = list(first.export())
        originals = first.records()
    with closing(TuningDatabase(tmp_path / "b.sqlite")) as second:
        assert second.import_lines(lines) == 3 and second.import_lines(lines) == 0
        assert second.records() == originals
        assert [r.cost for r in originals] == [2.0, None, 1.5] and originals[1].error == "failed"


def _write(path: str, writer: int, count: int) -> None:
    with closing(TuningDatabase(path)) as database:
        for trial in range(count):
            database.add([_record(trial, float(trial + 1), workload=f"w{writer}")])


def test_concurrent_writers(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write, args=(path, writer, 25)) for writer in range(4)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    with closing(TuningDatabase(path)) as database:
        records = database.records()
        assert len(records) == 100
        assert {r.workload for r in records} == {"w0", "w1", "w2", "w3"}


def test_compile_uses_the_best_tuned_configuration(tmp_path, monkeypatch):
    monkeypatch.setenv("MLC_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    tuned = workload(MATMUL)
    space = SearchSpace.of(tuned.module, "cpu")
    config = {**space.heuristic(), "convert-graph-to-tile.matmul-tile": (16, 16, 8)}
    keys = (tuned.key, target_key("cpu"), current_version())
    with closing(TuningDatabase()) as database:
        database.add([Record(*keys, config_key(config), space.pipeline(config), 1e-6, trial=1)])
        database.add([Record(*keys, config_key(space.heuristic()), space.pipeline({}), 2e-6, trial=0)])
    renamed = MATMUL.replace("%a", "%lhs").replace("%r", "%result")  # the same program
    compiled = mlc.compile(renamed, device="cpu")
    assert compiled.pipeline == space.pipeline(config)
    assert "mlc.tuned" in compiled.ir and "matmul-tile=16,16,8" in compiled.ir
    monkeypatch.setenv("MLC_TUNING", "0")
    assert mlc.compile(renamed, device="cpu").pipeline == "mlc-lower-to-cpu"
    monkeypatch.setenv("MLC_TUNING", "1")
    assert mlc.compile(renamed, device="cpu", precision="ieee").pipeline != space.pipeline(config)  # options given


def test_import_mlc_and_compile_need_no_tuning_extra():
    import subprocess
    import sys

    code = (
        "import sys, mlc\n"
        "assert not [m for m in sys.modules if m.startswith('mlc.tuning')]\n"
        "mlc.compile('func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> { func.return %a : tensor<4xf32> }', device='cpu')\n"
        "extras = [m for m in sys.modules if m.split('.')[0] in ('ray', 'lightgbm', 'xgboost', 'tqdm', 'matplotlib')]\n"
        "assert not extras, extras\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_earlier_tunings_of_the_target_seed_the_cost_model(tmp_path):
    from mlc.tuning.search import _history

    with closing(TuningDatabase(tmp_path / "h.sqlite")) as database:
        database.add([_record(0, 2.0, workload="old"), _record(1, 1.0, "old", '{"x": 1}'), _record(2, None, "old", '{"x": 2}')])
        database.add([_record(0, 5.0, workload="current")])
        rows = _history(database, "cpu:test", skip="current")
    # Costs relative to each workload's heuristic (trial 0), failures as None; the workload being
    # tuned is left out.
    assert rows == [([1.0, 2.0], 1.0), ([1.0, 2.0], 0.5), ([1.0, 2.0], None)]
