"""Autotuning benchmark: tuned configurations against the heuristic, and the learned search against
an exhaustive one (issue 20's targets).

    python bench/tune.py --target cuda --trials 64 [--exhaustive [--exhaustive-only TEXT]] [--quick] [--only TEXT] [--skip TEXT] [--db PATH] [--ray-address A]
    python bench/tune.py --target cuda --scaling [--scaling-shapes 4] --trials 32 [--batch N] [--strategy random] [--concurrency 2] [--samples N] [--sample-ms MS] [--warmup-samples N]

For each shape (square and skinny matmuls in f32 and f16, a conv2d, row reductions, a softmax) the
evolutionary search (`mlc.tuning.search.tune`) measures up to `--trials` configurations, the
heuristic first. On the GPU the heuristic's and the tuned program are then timed again in this
process by the benchmarks' harness, beside Triton's kernel of the same kind under its usual
autotuning (matmuls: `@triton.autotune` over the tutorial's configurations; softmax and row sums:
the best warp count), so the table's ratios do not rest on the tuner's own measurements; on the
CPU (and with `--tuner-times`) the tuner's medians are shown. With `--exhaustive`, every distinct program of each space of at
most `--exhaustive-limit` configurations is measured as well (the random strategy until the space
is exhausted), and the table adds the exhaustive best and
the number of learned-search trials needed to come within 95% of it (as a share of the exhaustive
search's trials; both count distinct programs, failures included). The learned search tunes the
shapes in order with one database, so from the second shape on its cost model starts from the
earlier shapes' records (the issue's transfer). The reference results (the interpreter's, with
their error bounds) are computed once per shape for both searches. `--scaling` tunes the first
`--scaling-shapes` shapes measuring on one GPU, then on every visible GPU (on the CPU target, two
timing processes stand for two devices: a smoke test of the path, not a measurement), and prints
both wall times (each from a fresh measurer started beforehand, not counted; the same compile
workers, seed and trials; the shapes one after the other, or `--concurrency` of them at once:
`search.tune_many`), with where the time went (`breakdown`: per candidate, compile, load,
check and time; the tuning process's propose, fit and wait; how busy the compile workers and each
device were; the timing's 95% brackets). Every GPU candidate is timed by
`measure.GPU_PROTOCOL` unless `--samples`, `--sample-ms` or `--warmup-samples` say otherwise.
Results go to the tuning database (`--db`, default a temporary file so that the benchmark leaves
`mlc.compile` alone). Compare only within one run.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from mlc.compiler import read_source
from mlc.tuning.database import TuningDatabase
from mlc.tuning.measure import LocalMeasurer, TimingProtocol, protocol_for
from mlc.tuning.search import STRATEGIES, Measurer, TuneResult, make_reference, tune, tune_many
from mlc.tuning.space import describe
from mlc.tuning.workload import Workload

CONFIDENCE = 0.95
"""Of the bracket printed for each candidate's median (order statistics of its samples)."""


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
        "row sum 65536x256": row_sum(65536, 256),
        "softmax 16384x512": softmax(16384, 512),
        "row sum 8192x4096": row_sum(8192, 4096),
        "softmax 4096x4096": softmax(4096, 4096),
        "matmul 1024^3 f32": matmul(1024, 1024, 1024),
        "matmul 4096^3 f16": matmul(4096, 4096, 4096, "f16"),
        "matmul 2048^3 f16": matmul(2048, 2048, 2048, "f16"),
        "matmul 32x4096x4096 f16 (skinny)": matmul(32, 4096, 4096, "f16"),
        "matmul 4096x64x4096 f32 (skinny)": matmul(4096, 64, 4096),
        "matmul 8192x8192x128 f16": matmul(8192, 8192, 128, "f16"),
        "conv2d 3x3 32x64x56x56 -> 64": conv2d(32, 64, 56, 64),
    }


def selected(args: argparse.Namespace) -> dict[str, str]:
    return {
        name: text
        for name, text in shapes(args.target, args.quick).items()
        if (args.only is None or args.only in name) and not any(skip in name for skip in args.skip or ())
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


def _torch_inputs(workload: Workload) -> list:
    import torch

    return [torch.from_numpy(array).cuda() for array in workload.inputs()]


def triton_autotuned(name: str, workload: Workload) -> Callable[[], object] | None:
    """Triton's kernel for this shape under its usual autotuning choices, or None (no Triton, or no
    Triton kernel of this kind: the conv2d). Matmuls: `@triton.autotune` over the tutorial's
    configurations; softmax and row sums (one program per row, the block a row): the best of the
    warp counts autotuning would try, timed the same way."""
    try:
        import triton  # noqa: F401
        from reductions import triton_kernels
        from triton_matmul import autotuned_matmul
    except ImportError:
        return None
    from harness import time_gpu

    inputs = _torch_inputs(workload)
    if name.startswith("matmul"):
        return lambda: autotuned_matmul(*inputs)
    kernel = triton_kernels().get("softmax" if name.startswith("softmax") else "row_sum" if name.startswith("row sum") else "")
    if kernel is None:
        return None
    timed = {warps: min(time_gpu(lambda w=warps: kernel(*inputs, num_warps=w), batches=5)) for warps in (1, 2, 4, 8, 16)}
    best = min(timed, key=timed.__getitem__)
    return lambda: kernel(*inputs, num_warps=best)


def retime(workload: Workload, target: str, pipelines: dict[str, str], triton: Callable[[], object] | None) -> dict[str, float]:
    """Microseconds per call of each pipeline's program (and Triton's), all timed in this process by
    the benchmarks' harness (the GPU: back-to-back calls between CUDA events), so that the
    comparison does not rest on the tuner's own measurements."""
    import mlc
    from harness import time_gpu

    inputs = _torch_inputs(workload)
    times = {}
    for label, pipeline in pipelines.items():
        compiled = mlc.compile(str(workload.module), device=target, entry=workload.entry, pipeline=pipeline)
        outputs = list(compiled.run_on_device(*inputs))  # on the device, as a kernel in a model runs
        times[label] = statistics.median(time_gpu(lambda c=compiled, o=outputs: c.run_on_device(*inputs, outputs=o)))
    if triton is not None:
        times["triton"] = statistics.median(time_gpu(triton))
    return times


def measurer_for(args: argparse.Namespace, devices: list[str] | None = None) -> Measurer:
    if args.ray_address or args.ray_local:
        import os

        from mlc.tuning.ray_measure import RayMeasurer

        return RayMeasurer(args.target, address=args.ray_address, local_cpus=args.workers or os.cpu_count() or 1)
    return LocalMeasurer(args.target, workers=args.workers, devices=devices)


def _geometric_mean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def compare(args: argparse.Namespace) -> None:
    """The table of tuned against heuristic (and Triton), and the learned search against an
    exhaustive one on the spaces small enough to enumerate."""
    measurer = measurer_for(args)
    db_path = args.db or str(Path(tempfile.mkdtemp(prefix="mlc-bench-tune-")) / "tuning.sqlite")
    speedups, against_triton = [], []
    chosen: list[str] = []
    walls: list[str] = []
    gpu = args.target == "cuda" and not args.tuner_times
    header = "| shape | configs | heuristic us | tuned us | speedup | trials |"
    header += " Triton autotuned us | tuned vs Triton |" if gpu else ""
    header += " exhaustive: programs, best us | learned trials to 95% |" if args.exhaustive else ""
    print(header)
    print("|" + " --- |" * (header.count("|") - 1))
    with closing(TuningDatabase(db_path)) as database:
        for name, text in selected(args).items():
            module, _, _ = read_source(text)
            workload = Workload(module, "main", name)
            reference = make_reference(workload)
            started = time.perf_counter()
            learned = tune(workload, args.target, args.trials, measurer, batch=args.batch, database=database, reference=reference, protocol=protocol(args))
            wall = time.perf_counter() - started
            walls.append(f"{name}: {breakdown([learned], wall, measurer.slots, getattr(measurer, 'workers', 0))}, {wall:.1f} s")
            if learned.best is None or learned.heuristic.cost is None:
                error = (learned.heuristic.result.error or "").splitlines()[:1]
                print(f"| {name} | {learned.space.size()} | failed: {error} | | | {len(learned.trials)} |", flush=True)
                continue
            if gpu:
                pipelines = {"heuristic": learned.heuristic.pipeline, "tuned": learned.best.pipeline}
                times = retime(workload, args.target, pipelines, triton_autotuned(name, workload))
            else:
                times = {"heuristic": learned.heuristic.cost * 1e6, "tuned": learned.best.cost * 1e6}
            speedups.append(times["heuristic"] / times["tuned"])
            chosen.append(f"{name}: {describe(learned.best.config)}")
            row = f"| {name} | {learned.space.size()} | {times['heuristic']:.1f} | {times['tuned']:.1f} | {speedups[-1]:.2f}x | {len(learned.trials)} |"
            if gpu:
                if "triton" in times:
                    against_triton.append(times["triton"] / times["tuned"])
                    row += f" {times['triton']:.1f} | {against_triton[-1]:.2f}x |"
                else:
                    row += " — | — |"
            enumerated = args.exhaustive and (args.exhaustive_only is None or any(part in name for part in args.exhaustive_only))
            if enumerated and learned.space.size() <= args.exhaustive_limit:
                started = time.perf_counter()
                every = tune(workload, args.target, 1 << 30, measurer, strategy="random", seed=1, reference=reference, protocol=protocol(args))
                walls.append(f"{name} (exhaustive): {len(every.trials)} trials in {time.perf_counter() - started:.1f} s")
                goal = every.best.cost / 0.95 if every.best else math.inf
                reached = _within(learned, goal)
                share = f"{reached} ({reached / len(every.trials):.0%} of {len(every.trials)})" if reached else f"not in {len(learned.trials)}"
                row += f" {len(every.trials)}, {every.best.cost * 1e6:.1f} | {share} |" if every.best else " failed | |"
            elif enumerated:
                row += " (space too large) | |"
            elif args.exhaustive:
                row += " (not enumerated) | |"
            print(row, flush=True)
    measurer.close()
    print("\ntuned configurations:\n" + "\n".join(chosen))
    print(f"\ntuning wall times ({type(measurer).__name__}):\n" + "\n".join(walls))
    if speedups:
        print(f"\ngeometric mean speedup over the heuristic: {_geometric_mean(speedups):.3f}x ({len(speedups)} shapes)")
    if against_triton:
        print(f"geometric mean of tuned against Triton autotuned: {_geometric_mean(against_triton):.3f}x ({len(against_triton)} shapes)")


def median_bracket(samples: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based ranks (low, high) of sorted samples that bracket the true median with at least
    `confidence` (order statistics: each sample is below the median with probability 1/2), or
    None when there are too few samples."""
    for low in range(samples // 2, -1, -1):
        outside = sum(math.comb(samples, k) for k in range(low + 1)) / 2**samples  # P(Binomial <= low)
        if 1 - 2 * outside >= confidence:
            return (low, samples - 1 - low) if low + 1 <= samples - 1 - low else None
    return None


def breakdown(results: list[TuneResult], wall: float, devices: int, workers: int) -> str:
    """Where a tuning's wall time went: per measured candidate, the mean seconds of each step (the
    compile worker's compile, the device's load, check and time), the tuning process's own steps
    (propose, fit, wait for a result), how busy the compile workers and each device were over the
    wall time, and the median width of the candidates' 95% brackets of their medians."""
    trials = [t for r in results for t in r.trials if t.result.compile_seconds or t.result.phases]
    if not trials:
        return "no candidate measured"
    compile_total = sum(t.result.compile_seconds for t in trials)
    usage: dict[str, float] = {}
    for trial in trials:
        for name, amount in trial.result.compile_usage:
            usage[name] = usage.get(name, 0.0) + amount
    phases: dict[str, float] = {}
    per_device = [0.0] * devices
    for trial in trials:
        for name, seconds in trial.result.phases:
            phases[name] = phases.get(name, 0.0) + seconds
        if trial.result.device is not None and trial.result.device < devices:
            per_device[trial.result.device] += sum(seconds for _, seconds in trial.result.phases)
    means = ", ".join(f"{name} {seconds / len(trials) * 1e3:.0f} ms" for name, seconds in [("compile", compile_total), *phases.items()])
    means += " (a compile's process: " + ", ".join(f"{name} {amount / len(trials):.3g}" for name, amount in usage.items()) + ")"
    host = {step: sum(r.host_seconds.get(step, 0.0) for r in results) for step in ("propose", "fit", "wait")}
    extracted = {kind: sum(r.extractions.get(kind, 0) for r in results) for kind in ("round trips", "on demand", "ahead", "background")}
    main = "tuning process: " + ", ".join(f"{step} {seconds:.1f} s" for step, seconds in host.items())
    main += " (extracted: " + ", ".join(f"{kind} {count}" for kind, count in extracted.items()) + "); "
    compiling = f"compile workers busy {compile_total / (wall * workers):.0%} of {workers} x {wall:.1f} s; " if workers else ""
    busy = ", ".join(f"{seconds / wall:.0%}" for seconds in per_device)
    widths = []
    for trial in trials:
        bracket = median_bracket(len(trial.result.costs)) if trial.cost else None
        if bracket is not None:
            ordered = sorted(trial.result.costs)
            widths.append((ordered[bracket[1]] - ordered[bracket[0]]) / trial.cost)  # type: ignore[operator]
    spread = f"; 95% brackets of the medians: median width {statistics.median(widths):.2%}, widest {max(widths):.2%}" if widths else ""
    return f"{len(trials)} candidates, per candidate: {means}; {main}{compiling}devices busy {busy} of {wall:.1f} s{spread}"


def host_counters() -> dict[str, float]:
    """This host's CPU seconds by kind since boot (/proc/stat's 'cpu' line: user, nice, system,
    idle, iowait, irq, softirq, steal) and its memory in GiB (/proc/meminfo); empty elsewhere."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:9]
        memory = {line.split(":")[0]: int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()}
    except (OSError, ValueError, IndexError):
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    counters = {name: int(value) / ticks for name, value in zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), fields)}
    return counters | {"memory GiB": memory.get("MemTotal", 0) / 2**20, "available GiB": memory.get("MemAvailable", 0) / 2**20}


def host_use(before: dict[str, float], after: dict[str, float], wall: float) -> str:
    """How busy the host's CPUs were between two `host_counters` (cores' worth over `wall`): the
    niced processes (compile and extraction workers) apart, and the hypervisor's steal."""
    if not before or not after:
        return "host CPU use unknown"
    spent = {name: after[name] - before[name] for name in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")}
    cores = lambda *names: sum(spent[name] for name in names) / wall  # noqa: E731
    return (
        f"host CPUs ({os.cpu_count()}): busy {cores('user', 'nice', 'system', 'irq', 'softirq'):.1f} cores "
        f"(niced {cores('nice'):.1f}, system {cores('system'):.1f}), idle {cores('idle', 'iowait'):.1f}, steal {cores('steal'):.1f}; "
        f"memory {before['memory GiB']:.0f} -> {after['memory GiB']:.0f} GiB, available {before['available GiB']:.0f} -> {after['available GiB']:.0f}"
    )


def protocol(args: argparse.Namespace) -> TimingProtocol:
    """The target's timing protocol with the command line's changes."""
    chosen = protocol_for(args.target)
    changes = {"samples": args.samples, "sample_seconds": args.sample_ms / 1e3 if args.sample_ms is not None else None, "warmup_samples": args.warmup_samples}
    return dataclasses.replace(chosen, **{name: value for name, value in changes.items() if value is not None})


def scaling(args: argparse.Namespace) -> None:
    """Wall time of the same tunings measured on one device, then on every visible GPU (two timing
    processes on the CPU), from fresh measurers with the same compile workers (this host's cores,
    or `--workers`), seed, trials and timing protocol."""
    if args.target == "cuda":
        from mlc.runtime.cuda import device_count

        every = [str(index) for index in range(device_count())]
    else:
        every = ["0", "1"]
    chosen = dict(list(selected(args).items())[: args.scaling_shapes])
    workloads = {name: Workload(read_source(text)[0], "main", name) for name, text in chosen.items()}
    references = {name: make_reference(workload) for name, workload in workloads.items()}
    timing = protocol(args)
    print(f"timing protocol: {timing}; strategy {args.strategy}, batch {args.batch}, concurrency {args.concurrency}", flush=True)
    if args.strategy != "random":
        from mlc.tuning.optional import require

        require("lightgbm")  # imported before either run is timed (the first fit would pay for it)
    walls = {}
    for devices in (every[:1], every):
        measurer = measurer_for(args, devices)
        start = time.perf_counter()
        if hasattr(measurer, "warm_up"):
            measurer.warm_up()
            print(f"  measurer started in {time.perf_counter() - start:.1f} s (not counted below)", flush=True)
        start, host, search_cpu = time.perf_counter(), host_counters(), time.process_time()
        options = dict(strategy=args.strategy, batch=args.batch, protocol=timing)
        references_in_order = [references[name] for name in workloads]
        results = tune_many(list(workloads.values()), args.target, args.trials, measurer, args.concurrency, references_in_order, **options)
        walls[len(devices)] = time.perf_counter() - start
        search_cpu, host = time.process_time() - search_cpu, host_use(host, host_counters(), walls[len(devices)])
        bests = []
        for name, result in zip(workloads, results):
            failures = [t.result.error or "" for t in result.trials if t.cost is None]
            bests.append(f"{name} {result.best.cost * 1e6:.1f} us" if result.best else f"{name} failed")
            bests[-1] += f" ({len(failures)} failed: {failures[0].splitlines()[0][:200]})" if failures else ""
        workers = getattr(measurer, "workers", 0)
        measurer.close()
        print(f"{len(devices)} device(s): {len(chosen)} shapes x {args.trials} trials in {walls[len(devices)]:.1f} s (best: {'; '.join(bests)})", flush=True)
        print("  " + breakdown(results, walls[len(devices)], len(devices), workers), flush=True)
        print(f"  the tuning process's CPU: {search_cpu:.1f} s (all its threads); {host}", flush=True)
    if len(every) > 1:
        print(f"scaling from 1 to {len(every)} devices: {walls[1] / walls[len(every)]:.2f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--exhaustive", action="store_true")
    parser.add_argument("--exhaustive-limit", type=int, default=600, help="enumerate spaces of at most this many configurations")
    parser.add_argument("--exhaustive-only", action="append", help="enumerate only shapes whose name contains this text (repeatable)")
    parser.add_argument("--quick", action="store_true", help="three small shapes")
    parser.add_argument("--only", help="shapes whose name contains this text")
    parser.add_argument("--skip", action="append", help="leave out shapes whose name contains this text (repeatable)")
    parser.add_argument("--scaling", action="store_true", help="tuning wall time on one GPU against every GPU")
    parser.add_argument("--scaling-shapes", type=int, default=4)
    parser.add_argument("--db", help="tuning database (default: a temporary file)")
    parser.add_argument("--ray-address")
    parser.add_argument("--tuner-times", action="store_true", help="GPU: show the tuner's medians (no re-timing, no Triton)")
    parser.add_argument("--ray-local", action="store_true", help="measure through a local Ray instance of this host's cores")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--batch", type=int, help="the most candidates proposed from one state of the cost model")
    parser.add_argument("--concurrency", type=int, default=1, help="--scaling: workloads tuned at once through the measurer (search.tune_many)")
    parser.add_argument("--strategy", choices=STRATEGIES, default="evolutionary", help="--scaling: 'random' with --batch 1 proposes the same candidates on one and two GPUs")
    parser.add_argument("--samples", type=int, help="timed samples a candidate (default: the target's protocol)")
    parser.add_argument("--sample-ms", type=float, help="GPU: least milliseconds of a timing sample")
    parser.add_argument("--warmup-samples", type=int, help="GPU: samples timed and thrown away first")
    args = parser.parse_args()
    if args.scaling:
        scaling(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
