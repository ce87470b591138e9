"""Is a CPU kernel's speed a property of the CPU its thread runs on? The tanh chain pinned to each CPU.

    python bench/cpu_vcpus.py [--passes 2] [--calls 8]

One thread (mlc's `num_threads=1`), tanh(x*y + x) of `bench/cpu.py` on 4096x1024 f32 (48 MiB of
operands: memory-bound) and on 256x1024 (3 MiB: in the core's L2, compute-bound), into arrays
written before (`run_on_device(..., outputs=[out])`: no allocation, no fault). First unpinned, with
the CPU the thread was on; then pinned to each CPU this process may use in turn
(`os.sched_setaffinity`), `--passes` times (every other pass in reverse order), best of `--calls`
calls after 2 warm-ups. A CPU slow in every pass for the large operands only is a CPU far from the
memory (on a virtual machine: a virtual CPU on another host socket than the guest's memory); slow
for both sizes, a CPU that shares its core or runs slower; slow in one pass only, a moment.

Why. `bench/cpu_physical.py` ran the large tanh chain at 9.9-10.3 ms at one thread in every one of
its 12 array sets and in both passes, in a process between two `bench/cpu.py` processes whose same
kernel took 2.2 ms (the 16-CPU host, BENCHMARKS.md, cpu14): a state of the whole process, as the
cpu12/cpu13 whole-benchmark slowdowns were; a thread stays on its CPU for most of a process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import mlc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import current_cpu, tanh_chain_case  # noqa: E402 - bench/cpu.py, beside this script

COLUMNS = 1024
SIZES = {"large": 4096, "small": 256}


def best_ms(run: object, calls: int) -> float:
    for _ in range(2):
        run()  # type: ignore[operator]
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--calls", type=int, default=8)
    arguments = parser.parse_args()
    generator = np.random.default_rng(0)
    runs = {}
    for name, rows in SIZES.items():
        x, y = (generator.standard_normal((rows, COLUMNS)).astype(np.float32) for _ in range(2))
        out = np.zeros_like(x)
        compiled = mlc.compile(tanh_chain_case(rows, COLUMNS).source, device="cpu", num_threads=1)
        compiled.run_on_device(x, y, outputs=[out])
        assert float(np.max(np.abs(out - np.tanh(x * y + x)))) <= 1.1e-5
        runs[name] = lambda compiled=compiled, x=x, y=y, out=out: compiled.run_on_device(x, y, outputs=[out])
    cpus = sorted(os.sched_getaffinity(0))
    unpinned = {name: best_ms(run, arguments.calls) for name, run in runs.items()}
    print(f"unpinned (on CPU {current_cpu()}): " + ", ".join(f"{name} {ms:.3f} ms" for name, ms in unpinned.items()))
    times: dict[int, list[tuple[float, float]]] = {cpu: [] for cpu in cpus}
    for pass_ in range(arguments.passes):
        for cpu in cpus if pass_ % 2 == 0 else reversed(cpus):
            os.sched_setaffinity(0, {cpu})
            times[cpu].append((best_ms(runs["large"], arguments.calls), best_ms(runs["small"], arguments.calls)))
    os.sched_setaffinity(0, set(cpus))
    print("| CPU | large (48 MiB) ms, each pass | small (3 MiB) ms, each pass |\n| ---: | --- | --- |")
    for cpu in cpus:
        large = " ".join(f"{a:.3f}" for a, _ in times[cpu])
        small = " ".join(f"{b:.3f}" for _, b in times[cpu])
        print(f"| {cpu} | {large} | {small} |", flush=True)


if __name__ == "__main__":
    main()
