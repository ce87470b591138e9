"""mlc-tune: tune a program's pass options on a device, and look at or share the results.

    mlc-tune model.onnx|in.mlir [--trials N] [--target cpu|cuda] [--ray-address HOST:PORT | --ray]
    mlc-tune db list|export [FILE]|import FILE
    mlc-tune report [-o plot.png]

Tuning measures up to N configurations of the target's pipeline (`mlc/tuning/`), the heuristic
first, with a progress bar showing the best so far, and stores every measurement in the tuning
database (`--db PATH`, else `MLC_TUNING_DB`, else `tuning.sqlite` in mlc's cache directory), where
`mlc.compile` finds the best one. Measurement runs in local worker processes, or through Ray with
`--ray-address` (a running cluster) or `--ray` (a local one). `db export` writes JSON lines
(standard output without FILE) that `db import` reads on another machine; `report` prints a table
and writes a plot of best throughput against trials per workload.

Bad input (a missing file, an unknown target, an unreachable Ray address, a database that cannot
be opened) is a message and exit code 1 (argparse's usage errors: 2), never a traceback.
"""

from __future__ import annotations

import os

import argparse
import sys
from contextlib import closing

from mlc.tools.cli import exit_code

COMMANDS = ("db", "report")


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(sys.argv[1:] if argv is None else argv), "mlc-tune")


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "db":
        return _database(_database_arguments().parse_args(argv[1:]))
    if argv and argv[0] == "report":
        return _report(_report_arguments().parse_args(argv[1:]))
    return _tune(_tune_arguments().parse_args(argv))


def _with_db(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--db", metavar="PATH", help="the tuning database (default: MLC_TUNING_DB, else the cache directory's)")
    return parser


def _tune_arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlc-tune", description=__doc__.split("\n")[0], epilog="also: mlc-tune db ..., mlc-tune report ...")
    parser.add_argument("input", help="an ONNX model (.onnx) or graph-level MLIR")
    parser.add_argument("--trials", type=int, default=32, help="measurements at most (default 32)")
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--entry", help="the function to tune (default: the only or first public one)")
    parser.add_argument("--search", choices=("evolutionary", "random"), default="evolutionary")
    parser.add_argument("--batch", type=int, help="the most candidates proposed from one state of the cost model (default: as many as the devices can take)")
    parser.add_argument("--workers", type=int, help="local compile processes (default: the cores, at most 32)")
    parser.add_argument("--repeats", type=int, help="timed samples per candidate (default: the target's timing protocol, mlc/tuning/measure.py)")
    parser.add_argument("--seed", type=int, default=0)
    ray = parser.add_mutually_exclusive_group()
    ray.add_argument("--ray-address", metavar="HOST:PORT", help="measure on this Ray cluster")
    ray.add_argument("--ray", action="store_true", help="measure through a local Ray instance")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return _with_db(parser)


def _database_arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlc-tune db", description="list, export or import tuning records")
    parser.add_argument("action", choices=("list", "export", "import"))
    parser.add_argument("file", nargs="?", help="export: where to write (default standard output); import: what to read")
    return _with_db(parser)


def _report_arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlc-tune report", description="a table and a plot of the tuning database")
    parser.add_argument("-o", "--output", default="mlc-tune-report.png", help="the plot (PNG; default mlc-tune-report.png)")
    return _with_db(parser)


def _positive(value: int, name: str) -> None:
    from mlc.errors import ArgumentError

    if value < 1:
        raise ArgumentError(f"{name} must be a positive integer, got {value}")


def _tune(args: argparse.Namespace) -> int:
    from mlc.compiler import resolve_device
    from mlc.tuning.database import TuningDatabase
    from mlc.tuning.measure import LocalMeasurer
    from mlc.tuning.search import tune
    from mlc.tuning.space import describe
    from mlc.tuning.workload import load_workload

    for value, name in ((args.trials, "--trials"), (args.batch, "--batch"), (args.repeats, "--repeats")):
        if value is not None:
            _positive(value, name)
    workload = load_workload(args.input, args.entry)
    target = resolve_device(args.target)
    if args.ray_address or args.ray:
        from mlc.tuning.ray_measure import RayMeasurer

        measurer = RayMeasurer(target, address=args.ray_address, local_cpus=args.workers or os.cpu_count() or 1)
    else:
        measurer = LocalMeasurer(target, workers=args.workers)
    progress = None if args.no_progress else _Progress(args.trials, workload.name)
    try:
        with closing(TuningDatabase(args.db)) as database:
            result = tune(
                workload, target, args.trials, measurer, args.search, args.batch, args.seed, database,
                on_trial=progress, repeats=args.repeats,
            )
    finally:
        measurer.close()
        if progress is not None:
            progress.close()
    best, heuristic = result.best, result.heuristic
    failed = sum(1 for trial in result.trials if trial.cost is None)
    sys.stdout.write(f"{workload.name} on {target}: {len(result.trials)} trials, {failed} failed\n")
    if heuristic.cost is not None:
        sys.stdout.write(f"  heuristic: {heuristic.cost * 1e3:.4g} ms\n")
    if best is None:
        sys.stdout.write("  no configuration ran successfully\n")
        return 1
    speedup = f" ({heuristic.cost / best.cost:.2f}x the heuristic)" if heuristic.cost else ""
    sys.stdout.write(f"  best:      {best.cost * 1e3:.4g} ms{speedup}: {describe(best.config)}\n")
    sys.stdout.write(f"  pipeline:  {best.pipeline}\n")
    sys.stdout.write("  (mlc.compile uses it from now on; replay: mlc-opt FILE.mlir --pass-pipeline '<pipeline>')\n")
    return 0


class _Progress:
    """A tqdm bar over trials, showing the best cost so far."""

    def __init__(self, total: int, name: str):
        from mlc.tuning.optional import require

        self.bar = require("tqdm").tqdm(total=total, desc=name, unit="trial", file=sys.stderr)

    def __call__(self, trial: object, result: object) -> None:
        best = result.best  # type: ignore[attr-defined]
        self.bar.set_postfix_str(f"best {best.cost * 1e3:.4g} ms" if best is not None else "no success yet")
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def _database(args: argparse.Namespace) -> int:
    from mlc.tools.cli import read_input, write_output
    from mlc.tuning.database import TuningDatabase
    from mlc.tuning.report import summaries, table

    with closing(TuningDatabase(args.db)) as database:
        if args.action == "list":
            sys.stdout.write(f"{database.path}\n" + table(summaries(database.records())))
        elif args.action == "export":
            write_output("".join(line + "\n" for line in database.export()), args.file)
        else:
            if args.file is None:
                from mlc.errors import ArgumentError

                raise ArgumentError("mlc-tune db import needs the file to read (what `mlc-tune db export FILE` wrote)")
            text, name = read_input(args.file)
            added = database.import_lines(text.splitlines(), name)
            sys.stdout.write(f"imported {added} new records into {database.path}\n")
    return 0


def _report(args: argparse.Namespace) -> int:
    from mlc.tuning.database import TuningDatabase
    from mlc.tuning.report import plot, summaries, table

    with closing(TuningDatabase(args.db)) as database:
        items = summaries(database.records())
    sys.stdout.write(table(items))
    plot(items, args.output)
    sys.stdout.write(f"plot: {args.output}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
