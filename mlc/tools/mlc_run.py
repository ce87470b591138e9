"""mlc-run: compile a graph function, feed it seeded random inputs, run it, check it, time it.

    mlc-run model.mlir [--entry NAME] [--device auto|cuda|cpu] [--check] [--bench] [--seed N]

Inputs are drawn from `--seed` (floats from a normal distribution, integers in [-20, 20),
booleans at random; never all zeros). `--check` compares every result with the graph
interpreter within the error bound derived for each element from the computation and the data
(`mlc.dialects.graph.error_bounds`: a sum of 2048 products may differ more than one of 4; elements
whose value is NaN, infinite or not determined closely enough are not compared) and exits 1 when
they disagree. `--bench` prints the median time of a call over many runs after warm-up: on the GPU
measured with CUDA events around calls that keep their data on the device, on the CPU with a
wall clock. The input is read as a file whatever its name (`-` is standard input). Errors are
printed without a traceback (an internal compiler error names the pass that raised it; MLC_DEBUG=1
shows the traceback, see `cli.py`); the exit code is 1 on failure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

from mlc.errors import MlcError
from mlc.runtime.measurement import random_inputs, time_calls
from mlc.tools.cli import STANDARD_STREAM, exit_code, read_input


def describe(array: np.ndarray) -> str:
    shape = "x".join(str(d) for d in array.shape) or "scalar"
    head = np.array2string(array.reshape(-1)[:6], precision=5, separator=", ")
    if array.dtype == np.bool_:
        return f"i1[{shape}] {int(array.sum())} true of {array.size}: {head}"
    finite = array[np.isfinite(array)] if np.issubdtype(array.dtype, np.floating) else array
    summary = f"mean={float(finite.mean()):.6g} min={float(finite.min()):.6g} max={float(finite.max()):.6g}" if finite.size else "no finite values"
    return f"{array.dtype.name}[{shape}] {summary} first: {head}"


def compare(actual: np.ndarray, expected: np.ndarray, bound: np.ndarray) -> tuple[bool, str]:
    """Whether `actual` is within `bound` (the derived error bound, see `error_bounds`) of
    `expected` element by element, and how closely."""
    from mlc.dialects.graph.error_bounds import check_results

    comparison = check_results([actual], [expected], [bound])
    if comparison.failure is not None:
        return False, comparison.failure.removeprefix("result #0 ")
    if not np.issubdtype(expected.dtype, np.floating) and expected.dtype.kind != "V":
        return True, f"{comparison.compared} of {expected.size} elements equal"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    known = np.isfinite(bound)
    worst = float(np.abs(a - e)[known].max()) if known.any() else 0.0
    largest_bound = float(bound[known].max()) if known.any() else 0.0
    detail = f"max abs error {worst:.3g} within the derived bound (largest {largest_bound:.3g})"
    if comparison.skipped:
        detail += f"; {comparison.skipped} of {expected.size} elements not compared (NaN, inf or undetermined)"
    return True, detail


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlc-run", description="compile a graph function and run it on random inputs")
    parser.add_argument("input_file", help="the .mlir file ('-' for standard input)")
    parser.add_argument("--entry", help="the function to run (default: the only or first public one)")
    parser.add_argument("--device", default=os.environ.get("MLC_DEVICE", "auto"), choices=DEVICES)
    parser.add_argument("--check", action="store_true", help="compare with the graph interpreter")
    parser.add_argument("--bench", action="store_true", help="print the median time of a call")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--runs", type=int, default=100, help="timed runs for --bench")
    parser.add_argument("--pass-pipeline", help="lower with this pipeline instead of the device's default")
    return parser


def _source(input_file: str) -> object:
    """What `mlc.compile` should read: the file as a Path (never guessed to be MLIR text, and named
    in messages), or the module parsed and verified here from standard input."""
    text, name = read_input(input_file)  # a missing file, a directory, invalid UTF-8: reported here
    if input_file != STANDARD_STREAM:
        return Path(input_file)
    from xdsl.utils.exceptions import ParseError

    from mlc.diagnostics import format_parse_error, parse_module, verify
    from mlc.dialects import make_context

    try:
        module, source_map = parse_module(text, make_context(), name)
    except ParseError as error:
        raise MlcError(format_parse_error(error)) from None
    verify(module, source_map, name)
    return module


def run(args: argparse.Namespace) -> int:
    import mlc

    source = _source(args.input_file)
    compiled = mlc.compile(
        source, device=args.device, entry=args.entry, pipeline=args.pass_pipeline  # type: ignore[arg-type]
    )
    entry = next(f for f in compiled.graph_module.body.block.ops if getattr(f, "sym_name", None) is not None and f.sym_name.data == compiled.name)
    arrays = random_inputs(entry.function_type, args.seed)
    results = compiled.program.run(*arrays)
    kernel_count = len(compiled.program.plan.launches)
    print(f"@{compiled.name} on {compiled.device}: {kernel_count} kernel launch{'es' if kernel_count != 1 else ''}")
    for index, result in enumerate(results):
        print(f"  result #{index}: {describe(result)}")
    status = 0
    if args.check:
        from mlc.dialects.graph.error_bounds import result_bounds

        expected, bounds = result_bounds(entry, arrays)
        for index, (got, want, bound) in enumerate(zip(results, expected, bounds)):
            ok, detail = compare(got, want, bound)
            print(f"  check #{index}: {'OK' if ok else 'MISMATCH'} ({detail})")
            status |= 0 if ok else 1
    if args.bench:
        times = time_calls(compiled, arrays, compiled.device, max(1, args.runs), warmup=max(3, args.runs // 10))
        median = statistics.median(times)
        print(f"  bench: median {median * 1e6:.2f} us over {len(times)} runs (min {min(times) * 1e6:.2f} us)")
    return status


DEVICES = ("auto", "cuda", "cpu")


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = _arguments()
    args = parser.parse_args(argv)
    if args.device not in DEVICES:  # argparse does not check a default (here MLC_DEVICE) against choices
        parser.error(f"MLC_DEVICE is '{args.device}'; it must be one of {', '.join(DEVICES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: run(parse_arguments(argv)), "mlc-run")


if __name__ == "__main__":
    sys.exit(main())
