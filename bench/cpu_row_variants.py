"""Variants of convert-tile-rows-to-cpu's options on one row kernel, side by side in one process.

    python bench/cpu_row_variants.py [--case "layer norm" | softmax] [--shape 4096x1024] [--threads 1]
                                     [--turns 4] [--repeats 30] VARIANT [VARIANT ...]

A VARIANT is the row lowering's options as the pipeline spells them ("interleaved-rows=2",
"prefetch-bytes=8192 store-prefetch-bytes=0"; "" for the defaults): mlc.compile's CPU pipeline
with `convert-tile-rows-to-cpu{VARIANT}`. bench/cpu.py's case of that name and shape runs in every
variant and in PyTorch (optional), on the same random inputs, each result checked against numpy's
float64 one first. The implementations take turns (`--turns`), each turn starting once the other
threads are quiet (`cpu.wait_until_quiet`) and timing the best of `--repeats` calls
(`cpu.best_seconds`); printed: each one's best over the turns and every turn's best, which shows how
far one process's figure moves on a shared machine. The whole-benchmark figures stay bench/cpu.py's
(`--interleaved-rows`, `--prefetch`); this is for the sweeps behind a default (BENCHMARKS.md, ln16).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

import mlc
from mlc.transforms.pipelines import CPU_PIPELINE

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import Case, _check, best_seconds, layer_norm_case, softmax_case, wait_until_quiet  # noqa: E402 - bench/cpu.py, beside this script

CASES: dict[str, Callable[[int, int], Case]] = {"layer norm": layer_norm_case, "softmax": softmax_case}


def variant_pipeline(options: str) -> str:
    """The CPU pipeline with the row lowering's `options` (the text between its braces)."""
    name = "convert-tile-rows-to-cpu,"
    assert CPU_PIPELINE.count(name) == 1, "the CPU pipeline's row lowering is not where this expects it"
    return CPU_PIPELINE.replace(name, f"convert-tile-rows-to-cpu{{{options}}},")


def implementations(case: Case, inputs: list[np.ndarray], variants: list[str], threads: int) -> dict[str, Callable[[], object]]:
    """A call of each variant's compiled case, and of PyTorch's where it is installed."""
    calls: dict[str, Callable[[], object]] = {}
    for options in variants:
        compiled = mlc.compile(case.source, device="cpu", num_threads=threads, pipeline=variant_pipeline(options))
        calls[f"mlc {{{options}}}"] = lambda compiled=compiled: compiled(*inputs)
    try:
        import torch
    except ImportError:
        return calls
    torch.set_num_threads(threads)
    tensors = [torch.from_numpy(array) for array in inputs]
    calls["PyTorch"] = lambda: case.torch_function(torch, *tensors)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("variants", nargs="+", metavar="VARIANT")
    parser.add_argument("--case", choices=sorted(CASES), default="layer norm")
    parser.add_argument("--shape", default="4096x1024", help="ROWSxCOLUMNS")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=30)
    arguments = parser.parse_args()
    rows, columns = (int(size) for size in arguments.shape.split("x"))
    case = CASES[arguments.case](rows, columns)
    generator = np.random.default_rng(0)
    inputs = [generator.standard_normal(shape).astype(np.float32) for shape in case.shapes]
    want = case.reference(*[array.astype(np.float64) for array in inputs])
    calls = implementations(case, inputs, arguments.variants, arguments.threads)
    for name, call in calls.items():
        result = call()
        _check(case.name, name, result.numpy() if hasattr(result, "numpy") else result, want, case.tolerance)
    turns: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(arguments.turns):
        for name, call in calls.items():
            wait_until_quiet()
            turns[name].append(best_seconds(call, arguments.repeats))
    print(f"{case.name}, {arguments.threads} thread(s), best of {arguments.repeats} calls in each of {arguments.turns} turns (ms)")
    for name, seconds in turns.items():
        print(f"| {name} | {min(seconds) * 1e3:.3f} | {' '.join(f'{s * 1e3:.3f}' for s in seconds)} |")


if __name__ == "__main__":
    main()
