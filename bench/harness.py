"""Side-by-side GPU benchmarks: mlc against PyTorch (and Triton where a case gives a kernel).

Every implementation of a case runs in this one process on the same random inputs (never
zeros), is checked against PyTorch's result first, then timed: warm-up calls, then batches of
back-to-back calls between CUDA events (see `time_gpu`), median over the batches reported. mlc is called through `run_on_device` with its
inputs and outputs already on the device (torch tensors, passed in place), as PyTorch is, so both
pay their own per-call launch overhead and nothing else.

A case states the bytes it must move (each input read once, each output written once); the table
shows GB/s against the measured device copy ceiling, and each implementation's speed relative to
PyTorch. `run(cases)` prints the table and returns rows; `write_json` keeps them.
"""

from __future__ import annotations

import datetime
import json
import platform
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


@dataclass
class Case:
    name: str
    make_inputs: Callable[[Any], list[Any]]  # torch.Generator -> torch tensors on the GPU
    torch_function: Callable[..., Any]
    mlc_source: str
    bytes_moved: int
    triton_function: Callable[..., Any] | None = None
    tolerance: tuple[float, float] = (1e-5, 1e-6)


@dataclass
class Row:
    case: str
    implementation: str
    median_us: float
    gigabytes_per_second: float
    speedup_vs_torch: float = 0.0
    samples: list[float] = field(default_factory=list)


def time_gpu(function: Callable[[], Any], warmup: int = 50, batches: int = 31, batch_ms: float = 2.0) -> list[float]:
    """Microseconds per call: each sample is a batch of back-to-back calls between two CUDA events.

    A batch lasts about `batch_ms`, so each sample is the steady cost of a call, whichever of the
    host (launch overhead) or the device is the bottleneck, without the noise of timing every call
    on its own with two event records around it.
    """
    import torch

    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        function()
    end.record()
    end.synchronize()
    calls = max(1, min(1000, int(batch_ms / max(start.elapsed_time(end) / 10, 1e-3))))
    samples = []
    for _ in range(batches):
        start.record()
        for _ in range(calls):
            function()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / calls)
    return samples


def copy_ceiling_gbs(megabytes: int = 1024) -> float:
    """Device-to-device copy bandwidth (bytes read plus bytes written per second)."""
    import torch

    source = torch.randn(megabytes * 2**20 // 4, device="cuda")
    destination = torch.empty_like(source)
    samples = time_gpu(lambda: destination.copy_(source), warmup=10, batches=21)
    return 2 * source.numel() * 4 / (statistics.median(samples) * 1e-6) / 1e9


def _check(name: str, got: Any, want: Any, tolerance: tuple[float, float]) -> None:
    got_array = got.detach().float().cpu().numpy() if hasattr(got, "detach") else np.asarray(got, np.float32)
    want_array = want.detach().float().cpu().numpy()
    rtol, atol = tolerance
    if not np.allclose(got_array, want_array, rtol=rtol, atol=atol, equal_nan=True):
        error = float(np.nanmax(np.abs(got_array - want_array)))
        raise AssertionError(f"{name}: result differs from PyTorch's (max abs error {error:.3g})")


def mlc_callable(case: Case, inputs: list[Any], pipeline: str | None = None) -> tuple[Callable[[], Any], Any]:
    """A no-argument call of the compiled case writing into preallocated outputs, and the output."""
    import torch

    import mlc

    compiled = mlc.compile(case.mlc_source, device="cuda", pipeline=pipeline)
    reference = case.torch_function(*inputs)
    output = torch.empty_like(reference)

    def call() -> Any:
        return compiled.run_on_device(*inputs, outputs=[output])

    return call, output


def run(cases: Sequence[Case], seed: int = 0, pipeline: str | None = None) -> list[Row]:
    """Checks and times every implementation of each case; `pipeline` overrides mlc's default."""
    import torch

    generator = torch.Generator(device="cuda").manual_seed(seed)
    rows: list[Row] = []
    for case in cases:
        inputs = case.make_inputs(generator)
        expected = case.torch_function(*inputs)
        implementations: list[tuple[str, Callable[[], Any], Any]] = []
        implementations.append(("pytorch", lambda: case.torch_function(*inputs), None))
        call, output = mlc_callable(case, inputs, pipeline)
        call()
        torch.cuda.synchronize()
        _check(f"{case.name} / mlc", output, expected, case.tolerance)
        implementations.append(("mlc", call, output))
        if case.triton_function is not None:
            _check(f"{case.name} / triton", case.triton_function(*inputs), expected, case.tolerance)
            implementations.append(("triton", lambda: case.triton_function(*inputs), None))
        torch_median = None
        for name, function, _ in implementations:
            samples = time_gpu(function)
            median = statistics.median(samples)
            torch_median = median if name == "pytorch" else torch_median
            rows.append(
                Row(case.name, name, median, case.bytes_moved / (median * 1e-6) / 1e9, torch_median / median, samples)
            )
    return rows


def print_table(rows: Sequence[Row], ceiling_gbs: float) -> None:
    print(f"{'case':<34} {'impl':<8} {'median us':>10} {'GB/s':>8} {'% copy':>7} {'vs torch':>9}")
    for row in rows:
        share = 100 * row.gigabytes_per_second / ceiling_gbs
        print(
            f"{row.case:<34} {row.implementation:<8} {row.median_us:>10.2f} {row.gigabytes_per_second:>8.0f} "
            f"{share:>6.1f}% {row.speedup_vs_torch:>8.2f}x"
        )
    print(f"device copy ceiling: {ceiling_gbs:.0f} GB/s")


def write_json(path: Path, rows: Sequence[Row], ceiling_gbs: float | None, command: str) -> None:
    """The run's rows with date, GPU, versions and command; `ceiling_gbs` where a case measured it."""
    import torch

    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "command": command,
        "copy_ceiling_gbs": ceiling_gbs,
        "rows": [row.__dict__ for row in rows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1))


def main(cases: Callable[[], Sequence[Case]], description: str) -> None:
    """The command line of a bench script of GPU cases: run them, print the table, `--json PATH`."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--only", default="", help="run only the cases whose name contains this")
    parser.add_argument("--pipeline", default=None, help="compile mlc's side with this pipeline, e.g. mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true}")
    args = parser.parse_args()
    ceiling = copy_ceiling_gbs()
    rows = run([case for case in cases() if args.only in case.name], pipeline=args.pipeline)
    print_table(rows, ceiling)
    if args.json:
        write_json(args.json, rows, ceiling, " ".join(sys.argv))
