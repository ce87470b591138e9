"""Running mlc's tools on bad input, and what counts as a clean failure.

The malformed-input corpus (`test/corpus/`, driven by the `test_*.py` files beside this one)
checks the contract of DESIGN.md: bad input gets a message for people, never a traceback. A clean
failure is

* a non-zero exit code (a Python exception class for the API),
* a message that names the problem and, where the input has one, its location (each case gives a
  regular expression the message must match),
* no Python traceback anywhere in the output, and no hang (each run has a time limit).

Tools run as the console scripts of the Python running the tests (the virtual environment's), on
the CPU (`MLC_DEVICE=cpu`), so the corpus means the same in CI and on the GPU machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
"""test/corpus: the stored inputs (what cannot be written in a test's own text)."""

TOOLS = ("mlc-opt", "mlc-run", "mlc-translate", "mlc-import-onnx")
TIME_LIMIT_SECONDS = 120


def tool_path(tool: str) -> str:
    """The console script `tool` beside the running Python."""
    assert tool in TOOLS, f"unknown tool {tool}"
    return str(Path(sys.executable).parent / tool)


def run_tool(
    tool: str, *arguments: str | os.PathLike[str], stdin: bytes | None = None, cwd: str | os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `tool arguments...` with `stdin` (empty when None); a hang fails the test."""
    environment = os.environ | {"MLC_DEVICE": "cpu", "PYTHONUNBUFFERED": "1"}
    completed = subprocess.run(
        [tool_path(tool), *map(str, arguments)],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=TIME_LIMIT_SECONDS,
        cwd=cwd,
        env=environment,
    )
    return subprocess.CompletedProcess(
        completed.args,
        completed.returncode,
        completed.stdout.decode("utf-8", errors="replace"),
        completed.stderr.decode("utf-8", errors="replace"),
    )


def assert_no_traceback(text: str) -> None:
    assert "Traceback (most recent call last)" not in text, f"a traceback was shown:\n{text}"


def assert_clean_failure(result: subprocess.CompletedProcess[str], pattern: str) -> None:
    """`result` failed cleanly: non-zero exit, no traceback, and stderr matches `pattern`."""
    output = result.stdout + result.stderr
    assert_no_traceback(output)
    assert result.returncode != 0, f"exit code 0 for bad input; output:\n{output}"
    assert result.returncode < 128 and result.returncode > 0, f"killed by a signal ({result.returncode}):\n{output}"
    assert re.search(pattern, result.stderr, re.MULTILINE), (
        f"the message does not match {pattern!r}:\n{result.stderr}"
    )
