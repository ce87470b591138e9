"""Where compile time goes, and what the on-disk cache saves (issue 17).

    python bench/compile_time.py [--device cpu|cuda] [--repeat 3] [--json FILE] [--after-only]
                                 [--programs "fp16 MLP,attention"] [--profile-hit]

Four programs: a small fused softmax chain (64x1024 f32), a 512^3 f32 matmul, an fp16 MLP block
(256x512 -> 2048 -> 512 with bias, tanh-GELU and a residual) and an attention core (8 heads,
128 tokens, d 64: scores, scale, softmax, weighted sum). Each is compiled in this warm process
(after one compile of another program has imported everything) by the steps of `mlc.compile`,
timed one by one: parse and verify the input, every pass of the device's pipeline, verification,
the backend (LLVM to PTX or an object file) and the runtime's load (the host plan, the driver's
PTX load or MCJIT). Two configurations, interleaved and medians of `--repeat`: "before" verifies
after every pass and runs the pipeline without tile-merge-identical-kernels, with Python's garbage
collector on, as mlc.compile did before issue 17; "after" is mlc.compile's default pipeline for the
device as it is, the collector paused (on an sm_90 GPU `mlc-lower-to-gpu{arch=sm_90}`, the wgmma
lowering); `--after-only` skips "before". The
"load" step is the driver's JIT of the PTX: set CUDA_CACHE_DISABLE=1 to measure it, else the
driver's own compute cache answers repeated loads of one PTX. Then `mlc.compile` itself, cold
(cache off), and the cached compile in a fresh process (`python -c`, timed inside it after
`import mlc, numpy`), with the cache in a temporary directory; on the GPU the fresh process first
opens the device (`mlc.runtime.get_device()`: importing cuda-python, cuInit, the primary
context), timed on its own, which any first GPU use in a process pays (PyTorch's too), so the
hit's own cost is the rest. `--profile-hit` runs one more such process under cProfile and
prints where its hit goes. `--overlap-ab` times the cold `mlc.compile` twice per repeat, interleaved:
as it is (the backend on a worker thread beside the final verification where the process may use
4+ CPUs) and with that overlap off (backend after verification), each compile's wall and process
CPU time printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

T = "tensor<64x1024xf32>"
SOFTMAX_CHAIN = f"""func.func @softmax_chain(%x: {T}) -> {T} {{
  %two = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.mul %x, %two : ({T}, tensor<f32>) -> {T}
  %1 = graph.relu %0 : {T}
  %2 = graph.softmax %1 axis 1 : {T}
  func.return %2 : {T}
}}"""

M = "tensor<512x512xf32>"
MATMUL = f"""func.func @matmul(%a: {M}, %b: {M}) -> {M} {{
  %0 = graph.matmul %a, %b : ({M}, {M}) -> {M}
  func.return %0 : {M}
}}"""

X, W1, B1, H, W2, B2 = (
    "tensor<256x512xf16>",
    "tensor<512x2048xf16>",
    "tensor<2048xf16>",
    "tensor<256x2048xf16>",
    "tensor<2048x512xf16>",
    "tensor<512xf16>",
)
MLP = f"""func.func @mlp(%x: {X}, %w1: {W1}, %b1: {B1}, %w2: {W2}, %b2: {B2}) -> {X} {{
  %0 = graph.matmul %x, %w1 : ({X}, {W1}) -> {H}
  %1 = graph.add %0, %b1 : ({H}, {B1}) -> {H}
  %2 = graph.gelu %1 {{approximate = "tanh"}} : {H}
  %3 = graph.matmul %2, %w2 : ({H}, {W2}) -> {X}
  %4 = graph.add %3, %b2 : ({X}, {B2}) -> {X}
  %5 = graph.add %4, %x : ({X}, {X}) -> {X}
  func.return %5 : {X}
}}"""

Q, KT, S = "tensor<8x128x64xf32>", "tensor<8x64x128xf32>", "tensor<8x128x128xf32>"
ATTENTION = f"""func.func @attention(%q: {Q}, %kt: {KT}, %v: {Q}) -> {Q} {{
  %scale = graph.constant dense<0.125> : tensor<f32>
  %0 = graph.matmul %q, %kt : ({Q}, {KT}) -> {S}
  %1 = graph.mul %0, %scale : ({S}, tensor<f32>) -> {S}
  %2 = graph.softmax %1 axis 2 : {S}
  %3 = graph.matmul %2, %v : ({S}, {Q}) -> {Q}
  func.return %3 : {Q}
}}"""

PROGRAMS = {"softmax chain": SOFTMAX_CHAIN, "matmul 512^3": MATMUL, "fp16 MLP": MLP, "attention": ATTENTION}


def compile_in_steps(source: str, device: str, before: bool) -> dict[str, float]:
    """Seconds per step of one compile (see the module docstring)."""
    from mlc import backend
    from mlc.compiler import collector_paused, default_pipeline_for, lower, select_entry
    from mlc.diagnostics import parse_module, verify
    from mlc.dialects import make_context
    from mlc.runtime import HostProgram, get_device
    from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE

    steps: dict[str, float] = {}

    def timed(name: str, step: Callable[[], object]) -> object:
        start = time.perf_counter()
        result = step()
        steps[name] = steps.get(name, 0.0) + time.perf_counter() - start
        return result

    module, source_map = timed("parse", lambda: parse_module(source, make_context(), "<bench>"))
    timed("verify", lambda: verify(module, source_map, "<bench>"))
    entry = select_entry(module, None).sym_name.data
    pipeline = GPU_PIPELINE if device == "cuda" else CPU_PIPELINE
    if before:
        pipeline = pipeline.replace("tile-merge-identical-kernels,", "")
    elif device == "cuda":
        pipeline = default_pipeline_for("cuda", get_device().arch)
    passes: dict[str, float] = {}
    # As mlc.compile runs; "before" with the collector on, as it was.
    with collector_paused() if not before else contextlib.nullcontext():
        lower(module, pipeline, source_map, "<bench>", verify_each_pass=before, timings=passes)
    steps["verify"] += passes.pop("verify")
    steps["passes"] = sum(passes.values())
    for name, seconds in passes.items():
        steps[f"pass {name}"] = seconds
    with collector_paused() if not before else contextlib.nullcontext():
        if device == "cuda":
            gpu = get_device()
            ptx = timed("backend", lambda: backend.compile_to_ptx(module, arch=gpu.arch))
            timed("load", lambda: HostProgram.for_cuda(module, ptx, entry=entry, device=gpu))
        else:
            code = timed("backend", lambda: backend.compile_to_cpu_object(module))
            timed("load", lambda: HostProgram.for_cpu(module, code, entry=entry))
    steps["total"] = sum(seconds for name, seconds in steps.items() if not name.startswith("pass "))
    return steps


FRESH_PROCESS = """
import sys, time
import numpy
import mlc
start, cpu = time.perf_counter(), time.process_time()
if sys.argv[1] == "cuda":
    from mlc.runtime import get_device
    get_device()
opened = time.perf_counter()
profile = None
if sys.argv[2] == "profile":
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
mlc.compile(sys.stdin.read(), device=sys.argv[1])
end = time.perf_counter()
if profile is not None:
    import pstats
    profile.disable()
    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
print(end - start, time.process_time() - cpu, opened - start)
"""


def fresh_process_compile(source: str, device: str, cache_dir: str, profile: bool = False) -> tuple[float, float]:
    """(wall seconds of opening the device and `mlc.compile` in a new process, of which opening
    the device); the CPU seconds go to stderr (on a shared machine they are the figure to compare)."""
    environment = dict(os.environ, MLC_CACHE_DIR=cache_dir, MLC_CACHE="1")
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, device, "profile" if profile else "-"],
        input=source, capture_output=True, text=True, env=environment, check=True,
    )  # fmt: skip
    if profile:
        print(done.stderr, file=sys.stderr)
    wall, cpu, opening = map(float, done.stdout.split())
    print(f"  fresh process: {wall * 1e3:.1f} ms wall ({opening * 1e3:.1f} opening the device), {cpu * 1e3:.1f} ms CPU", file=sys.stderr)
    return wall, opening


def timed_cold_compile(source: str, device: str, overlap: bool) -> float:
    """Wall seconds of one `mlc.compile` (cache off); `overlap=False` keeps the backend after the
    final verification whatever the CPU count (the compiler's choice otherwise)."""
    import mlc
    import mlc.compiler

    chosen = mlc.compiler._may_overlap  # noqa: SLF001 - the A/B of this choice
    if not overlap:
        mlc.compiler._may_overlap = lambda: False  # noqa: SLF001
    try:
        start, cpu = time.perf_counter(), time.process_time()
        mlc.compile(source, device=device)
        wall = time.perf_counter() - start
    finally:
        mlc.compiler._may_overlap = chosen  # noqa: SLF001
    label = "overlap (as compiled)" if overlap else "no overlap"
    print(f"  cold compile, {label}: {wall * 1e3:.0f} ms wall, {(time.process_time() - cpu) * 1e3:.0f} ms CPU", file=sys.stderr)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--after-only", action="store_true", help="skip the 'before' configuration")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated names")
    parser.add_argument("--profile-hit", action="store_true", help="cProfile one fresh-process hit")
    parser.add_argument("--overlap-ab", action="store_true", help="cold compiles with and without the backend overlap")
    args = parser.parse_args()
    os.environ["MLC_CACHE"] = "0"
    import mlc

    mlc.compile(PROGRAMS["matmul 512^3"], device=args.device)  # imports everything once
    rows = []
    for name in args.programs.split(","):
        source = PROGRAMS[name]
        runs: dict[str, list[dict[str, float]]] = {"after": []} if args.after_only else {"before": [], "after": []}
        for _ in range(args.repeat):
            for configuration in runs:
                runs[configuration].append(compile_in_steps(source, args.device, configuration == "before"))
        medians = {c: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for c, rs in runs.items()}
        cold: list[float] = []
        sequential: list[float] = []
        for _ in range(args.repeat):
            for overlap, times in ((True, cold), (False, sequential)) if args.overlap_ab else ((True, cold),):
                times.append(timed_cold_compile(source, args.device, overlap))
        with tempfile.TemporaryDirectory() as cache_dir:
            first, _ = fresh_process_compile(source, args.device, cache_dir)
            hits = [fresh_process_compile(source, args.device, cache_dir) for _ in range(args.repeat)]
            if args.profile_hit:
                fresh_process_compile(source, args.device, cache_dir, profile=True)
        cached, opening = statistics.median(h[0] for h in hits), statistics.median(h[1] for h in hits)
        rows.append({"program": name, "steps": medians, "compile": statistics.median(cold), "fresh_first": first,
                     "fresh_cached": cached, "fresh_opening_device": opening,
                     "compile_each": cold, "compile_sequential_each": sequential})  # fmt: skip
        print_row(rows[-1])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def print_row(row: dict) -> None:
    after = row["steps"]["after"]
    before = row["steps"].get("before", {})
    if row["compile_sequential_each"]:
        print(f"\n{row['program']}: cold compiles, overlap {[round(t * 1e3) for t in row['compile_each']]} ms, "
              f"without {[round(t * 1e3) for t in row['compile_sequential_each']]} ms")
    print(f"\n{row['program']}: mlc.compile {row['compile'] * 1e3:.0f} ms (cache off); fresh process "
          f"{row['fresh_first'] * 1e3:.0f} ms first, {row['fresh_cached'] * 1e3:.1f} ms cached, of which "
          f"{row['fresh_opening_device'] * 1e3:.1f} ms opening the device")
    print(f"  {'step':34} {'before ms':>10} {'after ms':>10}")
    order = ["parse", "verify", "passes", "backend", "load", "total"]
    slowest = sorted((k for k in after if k.startswith("pass ")), key=lambda k: -after[k])[:6]
    for key in order[:3] + slowest + order[3:]:
        print(f"  {key:34} {before.get(key, 0.0) * 1e3:10.1f} {after.get(key, 0.0) * 1e3:10.1f}")


if __name__ == "__main__":
    main()
