"""What makes mlc's f32 matmul 1024^3 take 16 ms in one process and 25 in another? Placement and blocking, bisected in one process.

    python bench/cpu_matmul_state.py [--size 1024] [--threads 1] [--sets 3] [--calls 5] [--passes 2]
        [--memory small,huge,numpy] [--micro-kernels default 4,64,16 default@256,128,16] [--json FILE]

Allocates `--sets` sets of (a, b, out), size x size f32, for each kind of `--memory`, all alive at
once (each set has pages of its own): `small` in mappings of their own advised MADV_NOHUGEPAGE (4
KiB pages: what `bench/cpu.py`'s 4 MiB inputs got at one thread in both host runs of issue 19's
table, `physical_pages` 0.0), `huge` in mappings advised MADV_HUGEPAGE starting on a 2 MiB
boundary, `numpy` numpy's own `np.empty` (glibc). Then, `--passes` times (every other pass in
reverse set order), each set in turn runs every implementation into the set's `out` (no result
allocation, no page fault) `--calls` times after a warm-up, the implementations taking turns call
by call (the order rotated each call) once the process's other threads went quiet (`bench/cpu.py`'s
`wait_until_quiet`): mlc compiled with each micro-kernel of
`--micro-kernels` (MR,NR,W: `convert-tile-dot-to-cpu{micro-kernel=...}`), numpy's `np.matmul(a,
b, out=out)` and PyTorch's `torch.matmul(..., out=)` on the same memory (`torch.from_numpy`),
with `OMP/OPENBLAS/MKL_NUM_THREADS` and `torch.set_num_threads` at `--threads`. A variant
`MICRO@BM,BN,BK` also sets the program's block (`convert-graph-to-tile{matmul-tile=...}`).

A set slow for every implementation in every pass is slow by its memory; an implementation slow
on one kind of memory and not on another is sensitive to placement; one slow everywhere is slow
by its code. Taking turns call by call matters on the host: its core's speed moves by up to 2x
over seconds (BENCHMARKS.md, mm15), so blocks of calls one implementation after another compare
an implementation's fast moment with another's slow one; each row's `paired` column is the median
over the calls of mlc's time (the first micro-kernel) over PyTorch's next to it (the call before
or after it in the same rotation), the ratio a phase of the host's speed moves least. Each row also has the share of the set's pages that are parts of transparent huge
pages (a, b, out; /proc/kpageflags, root only: nan elsewhere) and the addresses modulo 4096.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import sys
import time
from pathlib import Path
from typing import Callable


def _set_thread_variables(threads: int) -> None:
    """Thread counts of the BLAS libraries; before numpy and torch are imported."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)


def _threads_argument() -> int:
    for index, argument in enumerate(sys.argv):
        if argument == "--threads" and index + 1 < len(sys.argv):
            return int(sys.argv[index + 1])
        if argument.startswith("--threads="):
            return int(argument.split("=", 1)[1])
    return 1


if __name__ == "__main__":
    _set_thread_variables(_threads_argument())

import numpy as np  # noqa: E402 - after the thread variables

import mlc  # noqa: E402
from mlc.transforms.pipelines import CPU_PIPELINE  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import cpu_model, matmul_case, physical_pages, wait_until_quiet  # noqa: E402 - bench/cpu.py, beside this script
from cpu_physical import huge_block  # noqa: E402

def new_set(memory: str, size: int, keep: list[mmap.mmap]) -> list[np.ndarray]:
    """a, b and out on `memory` (see the module docstring)."""
    if memory == "numpy":
        return [np.empty((size, size), np.float32) for _ in range(3)]
    if memory in ("small", "huge"):
        return [huge_block(size * size * 4, keep, memory == "huge").view(np.float32).reshape(size, size) for _ in range(3)]
    raise ValueError(f"unknown memory {memory!r}")


def turns_ms(functions: list[Callable[[], object]], calls: int) -> list[list[float]]:
    """Wall times in ms of `calls` calls of each function, the functions taking turns call by call
    (the order rotated by one each call), after one warm-up call each and a wait for quiet threads:
    `[function][call]`."""
    for function in functions:
        function()
    wait_until_quiet()
    times: list[list[float]] = [[] for _ in functions]
    for call in range(calls):
        for position in range(len(functions)):
            index = (position + call) % len(functions)
            start = time.perf_counter()
            functions[index]()
            times[index].append((time.perf_counter() - start) * 1e3)
    return times


def paired_ratio(mlc_ms: list[float], torch_ms: list[float]) -> float:
    """The median over the calls of PyTorch's time over mlc's in the same rotation (>1: mlc faster)."""
    return float(np.median([t / m for m, t in zip(mlc_ms, torch_ms)]))


def variant_pipeline(variant: str) -> str | None:
    """mlc's CPU pipeline for `MICRO[@BM,BN,BK]`: MICRO `default` or MR,NR,W
    (`convert-tile-dot-to-cpu{micro-kernel=...}`), the block `convert-graph-to-tile{target=cpu
    matmul-tile=...}` (default: `matmul_blocks.CPU_TILE`); None for the default pipeline."""
    micro_kernel, _, block = variant.partition("@")
    pipeline = CPU_PIPELINE
    if micro_kernel != "default":
        pipeline = pipeline.replace("convert-tile-dot-to-cpu", "convert-tile-dot-to-cpu{micro-kernel=" + micro_kernel + "}")
    if block:
        pipeline = pipeline.replace("convert-graph-to-tile{target=cpu}", "convert-graph-to-tile{target=cpu matmul-tile=" + block + "}")
    return None if pipeline == CPU_PIPELINE else pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sets", type=int, default=3)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--memory", default="small,huge,numpy", help="comma-separated kinds: small, huge, numpy")
    parser.add_argument("--micro-kernels", nargs="*", default=["default"], help="mlc variants: MR,NR,W or `default`, each optionally @BM,BN,BK (`variant_pipeline`)")
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    size, threads = arguments.size, arguments.threads
    implementations: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], object]] = {}
    for variant in arguments.micro_kernels:
        compiled = mlc.compile(matmul_case(size).source, device="cpu", num_threads=threads, pipeline=variant_pipeline(variant))
        implementations[f"mlc {variant}"] = lambda a, b, out, compiled=compiled: compiled.run_on_device(a, b, outputs=[out])
    implementations["numpy"] = lambda a, b, out: np.matmul(a, b, out=out)
    if not arguments.no_torch:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            torch.set_num_threads(threads)
            implementations["PyTorch"] = lambda a, b, out: torch.matmul(torch.from_numpy(a), torch.from_numpy(b), out=torch.from_numpy(out))
    keep: list[mmap.mmap] = []
    generator = np.random.default_rng(0)
    data = generator.standard_normal((2, size, size)).astype(np.float32)
    want = data[0].astype(np.float64) @ data[1].astype(np.float64)
    # A dot of `size` f32 products, summed in any order: |error| <= size * eps * sum |a||b| (+ the
    # products' own rounding), with a factor 4 of slack for the f64 reference's rounding.
    bound = 4 * size * np.finfo(np.float32).eps * float((np.abs(data[0]) @ np.abs(data[1])).max())

    def check(out: np.ndarray) -> None:
        error = float(np.max(np.abs(out - want)))
        assert error <= bound, f"error {error} above the bound {bound}"
    sets: list[tuple[str, list[np.ndarray]]] = []
    for memory in arguments.memory.split(","):
        for _ in range(arguments.sets):
            a, b, out = new_set(memory, size, keep)
            a[...], b[...], out[...] = data[0], data[1], 0
            sets.append((memory, [a, b, out]))
    names = list(implementations)
    times: dict[tuple[int, str], list[float]] = {(index, name): [] for index in range(len(sets)) for name in names}
    ratios: dict[int, list[float]] = {index: [] for index in range(len(sets))}
    for pass_ in range(arguments.passes):
        order = list(range(len(sets))) if pass_ % 2 == 0 else list(reversed(range(len(sets))))
        for index in order:
            a, b, out = sets[index][1]
            calls = turns_ms([lambda function=function: function(a, b, out) for function in implementations.values()], arguments.calls)
            for function in implementations.values():  # each implementation's result, checked once a turn
                out[...] = 0
                function(a, b, out)
                check(out)
            for name, call_ms in zip(names, calls):
                times[index, name].append(min(call_ms))
            if "PyTorch" in implementations:
                ratios[index].append(paired_ratio(calls[0], calls[names.index("PyTorch")]))
    print(f"{cpu_model()}; matmul {size}^3 f32, {threads} thread(s), best of {arguments.calls} calls a pass (taking turns), "
          f"{arguments.passes} passes; pid {os.getpid()}")
    print(f"| set | memory | {' | '.join(names)} | paired PyTorch / mlc | huge-page share a, b, out | a, b, out mod 4096 |")
    print(f"| ---: | --- | {' | '.join('---:' for _ in names)} | ---: | --- | --- |")
    rows = []
    for index, (memory, arrays) in enumerate(sets):
        shares = [physical_pages(array)[0] for array in arrays]
        cells = [" / ".join(f"{value:.2f}" for value in times[index, name]) for name in names]
        offsets = [array.ctypes.data % 4096 for array in arrays]
        paired = " / ".join(f"{value:.2f}" for value in ratios[index]) or "-"
        print(f"| {index} | {memory} | {' | '.join(cells)} | {paired} | {', '.join(f'{s:.2f}' for s in shares)} | {', '.join(map(str, offsets))} |", flush=True)
        rows.append({"set": index, "memory": memory, "ms": {name: times[index, name] for name in names}, "paired": ratios[index],
                     "huge_page_share": shares, "offsets": offsets})
    if arguments.json is not None:
        arguments.json.write_text(json.dumps({"cpu": cpu_model(), "size": size, "threads": threads, "command": " ".join(sys.argv), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
