"""mlc-tune's command line (mlc/tools/mlc_tune.py): a tuning, the database commands, the report,
and bad inputs as messages with exit codes, never tracebacks."""

from __future__ import annotations

import pytest

from mlc.tools.mlc_tune import main

from .tuning_programs import ADD


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    return path


def test_tune_list_export_import_report(program, tmp_path, capsys):
    db, copy = str(tmp_path / "t.sqlite"), str(tmp_path / "copy.sqlite")
    assert main([str(program), "--trials", "2", "--workers", "1", "--repeats", "2", "--db", db, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "add@main on cpu: 2 trials" in out and "best:" in out and "pipeline:  builtin.module(" in out
    assert main(["db", "list", "--db", db]) == 0
    assert "add@main" in capsys.readouterr().out
    exported = tmp_path / "records.jsonl"
    assert main(["db", "export", str(exported), "--db", db]) == 0
    assert main(["db", "import", str(exported), "--db", copy]) == 0
    assert "imported 2 new records" in capsys.readouterr().out
    plot = tmp_path / "plot.png"
    assert main(["report", "--db", copy, "-o", str(plot)]) == 0
    assert plot.read_bytes().startswith(b"\x89PNG") and "speedup" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.mlir"], "missing.mlir: no such file"),
        (["{program}", "--ray-address", "127.0.0.1:9"], "cannot reach the Ray cluster at 127.0.0.1:9"),
        (["{program}", "--ray-address", "nonsense"], "is not host:port"),
        (["{program}", "--trials", "0"], "--trials must be a positive integer"),
        (["db", "import", "--db", "{db}"], "needs the file to read"),
        (["db", "import", "{program}", "--db", "{db}"], "not a tuning record"),
    ],
)
def test_bad_inputs_are_messages(arguments, message, program, tmp_path, capsys):
    filled = [a.format(program=program, db=tmp_path / "t.sqlite") for a in arguments]
    assert main(filled) == 1
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error


def test_unknown_target_is_a_usage_error(program, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(program), "--target", "tpu"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'tpu'" in capsys.readouterr().err


@pytest.mark.gpu
def test_tune_on_the_gpu(program, tmp_path, capsys):
    db = str(tmp_path / "t.sqlite")
    assert main([str(program), "--target", "cuda", "--trials", "3", "--db", db, "--no-progress"]) == 0
    assert "add@main on cuda: 3 trials" in capsys.readouterr().out
