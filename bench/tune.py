"""Autotuning benchmark: tuned configurations against the heuristic, and the learned search against
an exhaustive one (issue 20's targets).

    python bench/tune.py --target cuda --trials 64 [--exhaustive] [--quick] [--db PATH] [--ray-address A]

For each shape (square and skinny matmuls in f32 and f16, a conv2d, row reductions, a softmax) the
evolutionary search (`mlc.tuning.search.tune`) measures up to `--trials` configurations, the
heuristic first; the table gives the heuristic's and the best time and their ratio, and the geometric
mean of the ratios. With `--exhaustive`, every distinct program of the space is measured as well
(the random strategy until the space is exhausted), and the table adds the exhaustive best and the
number of learned-search trials needed to come within 95% of it (as a share of the exhaustive
search's trials). Results go to the tuning database (`--db`, default a temporary file so that the
benchmark leaves `mlc.compile` alone). Times are medians of the measurer's repeats on this machine:
compare only within one run.
"""

from __future__ import annotations

import argparse
import math
import tempfile
from contextlib import closing
from pathlib import Path

from mlc.compiler import _read_source
from mlc.tuning.database import TuningDatabase
from mlc.tuning.measure import LocalMeasurer
from mlc.tuning.search import TuneResult, tune
from mlc.tuning.workload import Workload


def matmul(m: int, n: int, k: int, element: str = "f32") -> str:
    return (
        f"func.func @main(%a: tensor<{m}x{k}x{element}>, %b: tensor<{k}x{n}x{element}>) -> tensor<{m}x{n}x{element}> {{\n"
        f"  %c = graph.matmul %a, %b : (tensor<{m}x{k}x{element}>, tensor<{k}x{n}x{element}>) -> tensor<{m}x{n}x{element}>\n"
        f"  func.return %c : tensor<{m}x{n}x{element}>\n}}\n"
    )


def conv2d(n: int, c: int, hw: int, k: int) -> str:
    x, w, y = f"tensor<{n}x{c}x{hw}x{hw}xf32>", f"tensor<{k}x{c}x3x3xf32>", f"tensor<{n}x{k}x{hw - 2}x{hw - 2}xf32>"
    return (
        f"func.func @main(%x: {x}, %w: {w}) -> {y} {{\n"
        f"  %y = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : ({x}, {w}) -> {y}\n"
        f"  func.return %y : {y}\n}}\n"
    )


def row_sum(rows: int, columns: int) -> str:
    return (
        f"func.func @main(%x: tensor<{rows}x{columns}xf32>) -> tensor<{rows}xf32> {{\n"
        f'  %s = "graph.reduce_sum"(%x) <{{axes = array<i64: 1>, keepdims = false}}> : (tensor<{rows}x{columns}xf32>) -> tensor<{rows}xf32>\n'
        f"  func.return %s : tensor<{rows}xf32>\n}}\n"
    )


def softmax(rows: int, columns: int) -> str:
    t = f"tensor<{rows}x{columns}xf32>"
    return f'func.func @main(%x: {t}) -> {t} {{\n  %s = "graph.softmax"(%x) <{{axis = 1 : i64}}> : ({t}) -> {t}\n  func.return %s : {t}\n}}\n'


def shapes(target: str, quick: bool) -> dict[str, str]:
    if quick or target == "cpu":
        return {"matmul 128^3": matmul(128, 128, 128), "matmul 16x512x256": matmul(16, 512, 256), "row sum 256x1024": row_sum(256, 1024)}
    return {
        "matmul 1024^3 f32": matmul(1024, 1024, 1024),
        "matmul 4096^3 f16": matmul(4096, 4096, 4096, "f16"),
        "matmul 2048^3 f16": matmul(2048, 2048, 2048, "f16"),
        "matmul 32x4096x4096 f16 (skinny)": matmul(32, 4096, 4096, "f16"),
        "matmul 4096x64x4096 f32 (skinny)": matmul(4096, 64, 4096),
        "matmul 8192x8192x128 f16": matmul(8192, 8192, 128, "f16"),
        "conv2d 3x3 32x64x56x56 -> 64": conv2d(32, 64, 56, 64),
        "row sum 8192x4096": row_sum(8192, 4096),
        "row sum 65536x256": row_sum(65536, 256),
        "softmax 4096x4096": softmax(4096, 4096),
        "softmax 16384x512": softmax(16384, 512),
    }


def _within(result: TuneResult, goal: float) -> int | None:
    """The first trial (1-based) whose best so far is within `goal` seconds."""
    best = math.inf
    for trial in result.trials:
        if trial.cost is not None:
            best = min(best, trial.cost)
        if best <= goal:
            return trial.index + 1
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--exhaustive", action="store_true")
    parser.add_argument("--quick", action="store_true", help="three small shapes")
    parser.add_argument("--db", help="tuning database (default: a temporary file)")
    parser.add_argument("--ray-address")
    parser.add_argument("--workers", type=int)
    args = parser.parse_args()
    if args.ray_address:
        from mlc.tuning.ray_measure import RayMeasurer

        measurer = RayMeasurer(args.target, address=args.ray_address)
    else:
        measurer = LocalMeasurer(args.target, workers=args.workers)
    db_path = args.db or str(Path(tempfile.mkdtemp(prefix="mlc-bench-tune-")) / "tuning.sqlite")
    ratios = []
    print(f"| shape | heuristic ms | tuned ms | speedup | trials |{' exhaustive ms | trials to 95% |' if args.exhaustive else ''}")
    print(f"| --- | --- | --- | --- | --- |{' --- | --- |' if args.exhaustive else ''}")
    with closing(TuningDatabase(db_path)) as database:
        for name, text in shapes(args.target, args.quick).items():
            module, _, _ = _read_source(text)
            workload = Workload(module, "main", name)
            learned = tune(workload, args.target, args.trials, measurer, database=database)
            heuristic, best = learned.heuristic.cost, learned.best.cost if learned.best else None
            ratio = heuristic / best if heuristic and best else None
            if ratio:
                ratios.append(ratio)
            row = f"| {name} | {heuristic * 1e3:.4g} | {best * 1e3:.4g} | {ratio:.2f}x | {len(learned.trials)} |" if ratio else f"| {name} | failed | | | |"
            if args.exhaustive:
                every = tune(workload, args.target, 1 << 30, measurer, strategy="random", seed=1)
                goal = every.best.cost / 0.95 if every.best else math.inf
                reached = _within(learned, goal)
                share = f"{reached} ({reached / len(every.trials):.0%} of {len(every.trials)})" if reached else f"not in {len(learned.trials)}"
                row += f" {every.best.cost * 1e3:.4g} | {share} |" if every.best else " failed | |"
            print(row, flush=True)
    measurer.close()
    if ratios:
        print(f"\ngeometric mean speedup over the heuristic: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}x ({len(ratios)} shapes)")


if __name__ == "__main__":
    main()
