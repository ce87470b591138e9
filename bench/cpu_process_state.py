"""What in `bench/cpu.py`'s process slows mlc's streaming kernels? A bisection within one process.

    python bench/cpu_process_state.py [--threads 1,16] [--calls 20] [--env bench|clean] [--json out.json]
    python bench/cpu_process_state.py --child T ENV      (one process: what the driver runs)

Each process compiles its probes first, the tanh chain tanh(x*y+x) and the exact GELU of
`bench/cpu.py` (4096x1024 f32, fresh results as there) and the tanh chain on 256x1024
(`SMALL_ROWS`: its operands stay in the caches), then does what `bench/cpu.py`'s process does
before and while it times those cases, one step at a time, and times the probes after every
step (best and median of `--calls` calls after 3 warm-ups, on the inputs and the programs made at
the start). The steps, cumulative, in bench/cpu.py's order:

  start                numpy and mlc imported (with ENV `bench`: OMP/OPENBLAS/MKL_NUM_THREADS=T
                       set before numpy, as bench/cpu.py sets them; `clean`: not set)
  import torch         (skipped where PyTorch is absent)
  set_num_threads      torch.set_num_threads(T)
  torch ops            PyTorch's tanh chain and GELU, 20 calls each, the probe right after
  torch ops + 1 s      the same probe one second later (spinning OpenMP workers have stopped)
  numpy ops            numpy's tanh chain, 5 calls
  softmax cases        bench/cpu.py's `run_case` of both softmax cases (compile, check, rounds)
  fresh program        a newly compiled tanh chain and GELU on new inputs, timed instead of the
                       first ones (what bench/cpu.py's tanh case itself does next)
  bench's tanh case    bench/cpu.py's `run_case` of the tanh chain: its own figures (the row
                       bench/cpu.py would print) beside the probe

With every probe the process's other threads' CPU time during it (from /proc/self/task/*/schedstat:
workers spinning beside the kernel show here), the calling thread's run-queue wait (it was
runnable but off a core), the machine's busy and stolen CPUs over the probe (/proc/stat), the thread count
and the calling thread's CPU affinity. The driver runs one child per thread count (each a fresh
process, as bench/cpu.py's are) and prints one table.

Why. On the 16-CPU host the tanh chain ran 2.3-2.7 ms at one thread in `bench/cpu_placement.py`
and 9.3-10.1 ms inside `bench/cpu.py --threads 1,2,8,16`, the exact GELU 3.0-7.4 ms against 1.3,
while softmax kept its figures (BENCHMARKS.md, cpu12, cpu13, session 13 start): a state of the
benchmark's process, looked for by walking its steps. Outcome (cpu14): no step slowed the probes
(on that host, 1, 2 and 16 threads, with and without the thread variables); the state is where
the process's allocations put the arrays relative to each other (`bench/cpu_physical.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

SMALL_ROWS = 256
"""The small probe: the tanh chain on 256x1024 (3 MiB of operands, in a core's L2 and the L3
whatever else the machine does): a slowdown of the large probes alone is the memory's."""

ENV_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _child_environment(threads: int, env: str) -> None:
    """Before numpy is imported: bench/cpu.py's thread variables (`bench`) or none (`clean`)."""
    for variable in ENV_VARIABLES:
        if env == "bench":
            os.environ[variable] = str(threads)
        else:
            os.environ.pop(variable, None)


def _schedstat(task: str) -> tuple[int, int]:
    """(ns on a CPU, ns runnable but waiting) of one thread, 0s where it is gone."""
    try:
        fields = Path(f"/proc/self/task/{task}/schedstat").read_text().split()
        return int(fields[0]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _threads() -> dict[str, tuple[int, int]]:
    try:
        return {task: _schedstat(task) for task in os.listdir("/proc/self/task")}
    except OSError:
        return {}


def _jiffies() -> tuple[int, int, int]:
    """(busy, stolen, total) jiffies of all CPUs so far (/proc/stat; stolen: the hypervisor ran
    something else on a virtual CPU that had work)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0, 0, 0
    idle = fields[3] + fields[4]
    steal = fields[7] if len(fields) > 7 else 0
    return sum(fields) - idle - steal, steal, sum(fields)


def probe(functions: dict[str, Callable[[], object]], calls: int) -> dict[str, object]:
    """Each function's best and median ms over `calls` calls after 3 warm-ups, and what the
    process's other threads and the machine did meanwhile."""
    main = str(os.getpid())  # the calling thread's task id is the process id (the main thread)
    before, jiffies_before, start = _threads(), _jiffies(), time.perf_counter()
    row: dict[str, object] = {}
    for name, function in functions.items():
        for _ in range(3):
            function()
        times = []
        for _ in range(calls):
            begin = time.perf_counter()
            function()
            times.append((time.perf_counter() - begin) * 1e3)
        times.sort()
        row[name] = (round(times[0], 3), round(times[len(times) // 2], 3))
    wall = time.perf_counter() - start
    after, jiffies_after = _threads(), _jiffies()
    others = sum(after[t][0] - before.get(t, (0, 0))[0] for t in after if t != main)
    busy, steal, total = (later - earlier for later, earlier in zip(jiffies_after, jiffies_before))
    cpus = (os.cpu_count() or 1) / max(1, total)
    row |= {
        "other_threads_cpu_ms": round(others / 1e6, 1),
        "main_wait_ms": round((after.get(main, (0, 0))[1] - before.get(main, (0, 0))[1]) / 1e6, 1),
        "wall_ms": round(wall * 1e3, 1),
        "busy_cpus": round(busy * cpus, 1),
        "stolen_cpus": round(steal * cpus, 1),
        "tasks": len(after),
        "affinity": len(os.sched_getaffinity(0)),
    }
    return row


def child(threads: int, env: str, calls: int) -> list[dict[str, object]]:
    _child_environment(threads, env)
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import cpu as bench  # noqa: E402 - bench/cpu.py, beside this script
    import mlc  # noqa: E402

    tanh_case, gelu_case = bench.tanh_chain_case(4096, 1024), bench.gelu_erf_case(4096, 1024)
    small_case = bench.tanh_chain_case(SMALL_ROWS, 1024)

    def programs(seed: int) -> dict[str, Callable[[], object]]:
        generator = np.random.default_rng(seed)
        x, y = (generator.standard_normal((4096, 1024)).astype(np.float32) for _ in range(2))
        tanh = mlc.compile(tanh_case.source, device="cpu", num_threads=threads)
        gelu = mlc.compile(gelu_case.source, device="cpu", num_threads=threads)
        small = mlc.compile(small_case.source, device="cpu", num_threads=threads)
        xs, ys = x[:SMALL_ROWS].copy(), y[:SMALL_ROWS].copy()
        return {"tanh": lambda: tanh(x, y), "gelu": lambda: gelu(x), "small tanh": lambda: small(xs, ys)}

    probes = programs(0)
    rows: list[dict[str, object]] = []

    def step(name: str, functions: dict[str, Callable[[], object]] | None = None) -> None:
        rows.append({"threads": threads, "env": env, "step": name} | probe(functions or probes, calls))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)

    step("start")
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        step("import torch")
        torch.set_num_threads(threads)
        step("set_num_threads")
        generator = np.random.default_rng(1)
        tx, ty = (torch.from_numpy(generator.standard_normal((4096, 1024)).astype(np.float32)) for _ in range(2))
        for _ in range(20):
            torch.tanh(tx * ty + tx)
            torch.nn.functional.gelu(tx)
        step("torch ops")
        time.sleep(1.0)
        step("torch ops + 1 s")
    generator = np.random.default_rng(2)
    nx, ny = (generator.standard_normal((4096, 1024)).astype(np.float32) for _ in range(2))
    for _ in range(5):
        np.tanh(nx * ny + nx)
    step("numpy ops")
    for case in bench.CASES:
        if case.name.startswith("softmax"):
            bench.run_case(case, threads, 20, torch)
    step("softmax cases")
    step("fresh program", programs(3))
    bench_rows = bench.run_case(tanh_case, threads, 20, torch)
    step("bench's tanh case")
    rows[-1]["bench_tanh_ms"] = {implementation: round(seconds * 1e3, 3) for _, implementation, seconds in bench_rows}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,16")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--env", default="bench", help="bench or clean (bench/cpu.py's thread variables or none), or both: bench,clean")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=2, metavar=("THREADS", "ENV"), default=None, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child is not None:
        print(json.dumps(child(int(arguments.child[0]), arguments.child[1], arguments.calls)))
        return
    rows = []
    for env in arguments.env.split(","):
        for threads in arguments.threads.split(","):
            done = subprocess.run([sys.executable, __file__, "--child", threads, env, "--calls", str(arguments.calls)],
                                  check=True, stdout=subprocess.PIPE, text=True)
            rows += json.loads(done.stdout.strip().splitlines()[-1])
    print("| threads | env | step | tanh best / median ms | GELU best / median ms | small tanh best / median ms | other threads' CPU ms | main's run-queue wait ms | probe wall ms | busy CPUs | stolen CPUs | threads in process |")
    print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        tanh, gelu, small = row["tanh"], row["gelu"], row["small tanh"]
        extra = f" (bench/cpu.py's run_case: {row['bench_tanh_ms']})" if "bench_tanh_ms" in row else ""
        print(f"| {row['threads']} | {row['env']} | {row['step']}{extra} | {tanh[0]:.3f} / {tanh[1]:.3f} | {gelu[0]:.3f} / {gelu[1]:.3f} | {small[0]:.3f} / {small[1]:.3f} | "
              f"{row['other_threads_cpu_ms']} | {row['main_wait_ms']} | {row['wall_ms']} | {row['busy_cpus']} | {row['stolen_cpus']} | {row['tasks']} |")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
