"""`bench/cpu.py`'s cases from several source trees of mlc, in alternating processes: an A/B in one run.

    python bench/cpu_trees.py --trees base=PATH,branch=PATH [--threads 16 | --threads 8,16]
        [--rounds 2] [--skip-numpy] --cases 'softmax 1024x1024;layer norm 4096x1024'

Why. Timings of two mlc versions taken in two runs (minutes apart, on a machine that other work
shares) differ by more than most changes do; within one run, and with the trees alternating
(base, branch, base, branch, ...), a disturbance hits both. Each tree is a directory holding
`mlc/` and `bench/cpu.py` (a checkout, or `git archive <commit> mlc bench | tar -x -C DIR`).

Algorithm. For each thread count and round, each tree runs in a process of its own
(`MLC_CACHE=0`: no tree reads another's cached code), which loads that tree's `bench/cpu.py` (so
`import mlc` finds that tree's package), sets the BLAS thread variables before numpy is imported,
and times the named cases with its `run_case` (numpy's float64 check included): mlc, numpy and
PyTorch (`torch.set_num_threads`), the same protocol for every tree (`best_seconds` below: at least
`REPEATS` calls and `MIN_TIMED_SECONDS` of them, after two warm-up calls). The table has each
tree's best time over the rounds and PyTorch's best over all processes.

Limits: the trees' `bench/cpu.py` must have `CASES` and `run_case(case, threads, repeats, torch,
references)` (as since issue 19's first CPU benchmark); PyTorch is required.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPEATS = 20
MIN_TIMED_SECONDS = 0.1


def best_seconds(function: Callable[[], object], repeats: int) -> float:
    """The best of at least `repeats` calls and `MIN_TIMED_SECONDS` of calls, after two warm-ups."""
    function()
    function()
    best, timed, count = float("inf"), 0.0, 0
    while count < repeats or timed < MIN_TIMED_SECONDS:
        start = time.perf_counter()
        function()
        seconds = time.perf_counter() - start
        best, timed, count = min(best, seconds), timed + seconds, count + 1
    return best


def time_cases(tree: Path, threads: int, cases: list[str], references: Path, numpy: bool = True) -> list[tuple[str, str, float]]:
    """(case, implementation, seconds) of `cases` timed with `tree`'s mlc (in this process);
    numpy's times too unless `numpy` is False (the float64 check still runs)."""
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    sys.argv = [str(tree / "bench" / "cpu.py")]  # the tree's bench parses no arguments when imported
    spec = importlib.util.spec_from_file_location("tree_cpu_bench", tree / "bench" / "cpu.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up
    spec.loader.exec_module(bench)
    if not Path(bench.mlc.__file__).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: imported mlc from {bench.mlc.__file__}, not from the tree")
    bench.best_seconds = best_seconds  # one protocol for every tree
    import torch

    torch.set_num_threads(threads)
    rows: list[tuple[str, str, float]] = []
    for case in bench.CASES:
        if case.name in cases:
            case.time_numpy = case.time_numpy and numpy
            rows += bench.run_case(case, threads, REPEATS, torch, references)
    return rows


def _table(trees: list[str], cases: list[str], thread_counts: list[int], best: dict[tuple[str, int, str], float]) -> str:
    header = ["case", "threads", *(f"mlc {tree} ms" for tree in trees), "PyTorch ms", *(f"{tree} vs PyTorch" for tree in trees)]
    lines = ["| " + " | ".join(header) + " |", "| --- | ---: |" + " ---: |" * (len(header) - 2)]
    for case in cases:
        for threads in thread_counts:
            torch_ms = best[(case, threads, "PyTorch")]
            mlc_ms = [best[(case, threads, tree)] for tree in trees]
            cells = [f"{ms:.3f}" for ms in (*mlc_ms, torch_ms)] + [f"{torch_ms / ms:.2f}x" for ms in mlc_ms]
            lines.append(f"| {case} | {threads} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", required=True, help="NAME=PATH pairs separated by commas")
    parser.add_argument("--threads", default="16", help="a count, or counts separated by commas")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cases", required=True, help="bench/cpu.py case names separated by semicolons")
    parser.add_argument("--skip-numpy", action="store_true", help="time mlc and PyTorch only (numpy's slow cases take most of a run)")
    parser.add_argument("--child", nargs=4, metavar=("TREE", "THREADS", "REFERENCES", "OUTPUT"), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    cases = arguments.cases.split(";")
    if arguments.child:
        tree, threads, references, output = arguments.child
        Path(output).write_text(json.dumps(time_cases(Path(tree), int(threads), cases, Path(references), not arguments.skip_numpy)))
        return
    trees = dict(item.split("=", 1) for item in arguments.trees.split(","))
    thread_counts = [int(count) for count in arguments.threads.split(",")]
    best: dict[tuple[str, int, str], float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for threads in thread_counts:
            for round_index in range(arguments.rounds):
                for name, tree in trees.items():
                    output = Path(folder) / f"{name}-{threads}-{round_index}.json"
                    command = [sys.executable, __file__, "--trees", arguments.trees, "--cases", arguments.cases, "--child", tree, str(threads), folder, str(output)]
                    command += ["--skip-numpy"] if arguments.skip_numpy else []
                    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, MLC_CACHE="0"))
                    for case, implementation, seconds in json.loads(output.read_text()):
                        key = (case, threads, name if implementation == "mlc" else implementation)
                        best[key] = min(best.get(key, float("inf")), seconds * 1e3)
    print(_table(list(trees), cases, thread_counts, best))


if __name__ == "__main__":
    main()
