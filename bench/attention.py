"""Attention core on the GPU (issue 16): mlc's tensor-core chain kernel against its three kernels and PyTorch.

Case: `softmax(q @ kt / sqrt(d) [causal]) @ v` in f16, batch x heads 64, head dims 64 and 128,
sequence 1024, 4096 and 16384, causal or not; and one f32 case (S 1024, D 64: no tensor cores on
the chain; the GPU's compute model keeps three kernels there). Implementations, in one process on
the same random inputs (`harness.time_gpu`, medians):

* `mlc`: the default GPU pipeline (`graph-fuse{compute-model=gpu}`): for f16 the attention chain
  becomes one kernel on tensor cores (`chain_mma.py`: FlashAttention-2's warps of mma.sync, the
  online softmax on the accumulator fragments, K and V staged by cp.async), causal ones visiting
  only the key blocks at or below the diagonal;
* `mlc-fast`: the default GPU pipeline with graph-fuse's opt-in `fast-math` (the scores in f32
  without the graph's per-op f16 roundings, `exp2` with log2(e) folded into an fma, one
  reciprocal of the sum per row; `attention_kernel.py`);
* `mlc-3k`: the chain fallback forced (`graph-fuse{on-chip-bytes=0}`): two matmul kernels
  (tensor cores for f16) and a softmax kernel, the scores through global memory;
* `torch`: PyTorch eager, unfused (`torch.softmax(q @ kt / sqrt(d) + mask) @ v`);
* `sdpa`: `torch.nn.functional.scaled_dot_product_attention` (flash backend; `is_causal`).

mlc takes K already transposed (`kt`, [BH, D, S]), as a model's graph holds it after its
transpose; PyTorch takes the same tensors (SDPA: K = kt transposed, made contiguous once,
untimed). Causal masking reaches mlc as the graph PyTorch's importer writes for `is_causal`, a
`graph.where` of a key <= query comparison, built here from two index vectors
(`graph.cmp ge` of [S, 1] and [1, S] constants, which graph-fold-constants folds into one [S, S]
constant up to S = 1024): the chain recognises it as causal; eager PyTorch adds an [S, S] 0/-inf
mask; SDPA takes `is_causal`. At S = 16384 the [S, S] intermediates of eager PyTorch (32 GiB each
in f16) and of mlc's three kernels (64 GiB of f32 scores) do not fit the GPU: those rows say so.

Memory: `peak MiB` is the device memory an implementation takes beyond its inputs and output
(mlc: the free-memory drop from building the program and its first call, its result written into
a preallocated tensor; PyTorch: `max_memory_allocated` over one call, less inputs and output).
The fused chain keeps no [S, S] buffer, so its figure does not grow with S squared.

Compilation is done first in worker processes (the compile cache, `MLC_CACHE_DIR`), then every
case is checked against SDPA (eager PyTorch where SDPA has no kernel) before it is timed.
Usage: python bench/attention.py [--json PATH] [--quick] [--sequences 1024,4096] [--depths 64,128]
       [--implementations torch,sdpa,mlc-3k,mlc,mlc-fast] [--no-f32]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

HEADS = 64
IMPLEMENTATIONS = ("torch", "sdpa", "mlc-3k", "mlc", "mlc-fast")


def pipelines() -> dict[str, str]:
    """mlc's two paths: the default GPU pipeline (the tensor-core chain kernel for f16) and the
    three kernels (the blocks made not to fit)."""
    from mlc.transforms.pipelines import GPU_FUSE, GPU_PIPELINE, gpu_fuse

    return {
        "mlc": GPU_PIPELINE,
        "mlc-fast": GPU_PIPELINE.replace(GPU_FUSE, gpu_fuse("fast-math=true")),
        "mlc-3k": GPU_PIPELINE.replace(GPU_FUSE, "graph-fuse{on-chip-bytes=0}"),
    }


@dataclass(frozen=True)
class Shape:
    sequence: int
    depth: int
    causal: bool
    element: str = "f16"

    @property
    def name(self) -> str:
        return f"{self.element} bh{HEADS} s{self.sequence} d{self.depth}{' causal' if self.causal else ''}"

    def source(self) -> str:
        s, d, e = self.sequence, self.depth, self.element
        t = lambda *shape: "tensor<" + "".join(f"{n}x" for n in (HEADS, *shape)) + f"{e}>"
        masked = "%scaled"
        lines = [
            f"%s = graph.matmul %q, %kt : ({t(s, d)}, {t(d, s)}) -> {t(s, s)}",
            f"%scale = graph.constant dense<{math.sqrt(d)}> : tensor<{e}>",
            f"%scaled = graph.div %s, %scale : ({t(s, s)}, tensor<{e}>) -> {t(s, s)}",
        ]
        if self.causal:
            positions = ", ".join(map(str, range(s)))
            lines += [
                f"%queries = graph.constant dense<[{', '.join(f'[{p}]' for p in range(s))}]> : tensor<{s}x1xi32>",
                f"%keys = graph.constant dense<[[{positions}]]> : tensor<1x{s}xi32>",
                f"%allowed = graph.cmp ge, %queries, %keys : (tensor<{s}x1xi32>, tensor<1x{s}xi32>) -> tensor<{s}x{s}xi1>",
                f"%minus_infinity = graph.constant dense<{'0xFC00' if e == 'f16' else '0xFF800000'}> : tensor<{e}>",
                f"%masked = graph.where %allowed, %scaled, %minus_infinity : (tensor<{s}x{s}xi1>, {t(s, s)}, tensor<{e}>) -> {t(s, s)}",
            ]
            masked = "%masked"
        lines += [
            f"%p = graph.softmax {masked} axis -1 : {t(s, s)}",
            f"%o = graph.matmul %p, %v : ({t(s, s)}, {t(s, d)}) -> {t(s, d)}",
        ]
        body = "".join(f"  {line}\n" for line in lines)
        return f"func.func @main(%q: {t(s, d)}, %kt: {t(d, s)}, %v: {t(s, d)}) -> {t(s, d)} {{\n{body}  func.return %o : {t(s, d)}\n}}\n"


def shapes(sequences: tuple[int, ...], depths: tuple[int, ...] = (64, 128), f32: bool = True) -> list[Shape]:
    f16 = [Shape(s, d, causal) for s in sequences for d in depths for causal in (False, True)]
    return [*f16, *([Shape(1024, 64, False, "f32")] if f32 else [])]  # f32: the chain has no tensor cores


def _compile(source: str, pipeline: str) -> None:
    import mlc

    try:
        mlc.compile(source, device="cuda", pipeline=pipeline)
    except mlc.OutOfMemoryError:
        pass  # reported when the case runs


def precompile(work: list[tuple[str, str]]) -> None:
    """Fills the compile cache from worker processes (the compiler is single-threaded Python)."""
    with ProcessPoolExecutor(max_workers=min(len(work), os.cpu_count() or 1), mp_context=get_context("spawn")) as pool:
        for future in [pool.submit(_compile, source, pipeline) for source, pipeline in work]:
            future.result()


def _inputs(shape: Shape, generator: Any) -> list[Any]:
    import torch

    s, d = shape.sequence, shape.depth
    dtype = torch.float16 if shape.element == "f16" else torch.float32
    make = lambda *size: torch.randn(*size, device="cuda", dtype=dtype, generator=generator)
    return [make(HEADS, s, d), make(HEADS, d, s), make(HEADS, s, d)]


def _torch_eager(shape: Shape) -> Callable[..., Any]:
    import torch

    scale = math.sqrt(shape.depth)
    mask = None
    if shape.causal:
        above = torch.ones(shape.sequence, shape.sequence, device="cuda", dtype=torch.bool).triu(1)
        mask = torch.zeros(shape.sequence, shape.sequence, device="cuda", dtype=torch.float16 if shape.element == "f16" else torch.float32)
        mask = mask.masked_fill(above, -math.inf)

    def attention(q: Any, kt: Any, v: Any) -> Any:
        scores = q @ kt / scale
        if mask is not None:
            scores = scores + mask
        return torch.softmax(scores, dim=-1) @ v

    return attention


def _sdpa(shape: Shape, kt: Any) -> Callable[..., Any]:
    """SDPA on K as [BH, S, D] (made contiguous once, outside the timed calls: the fused kernels
    need a unit last stride): flash only for f16; f32 (no flash kernel) memory-efficient or math."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    k = kt.transpose(-2, -1).contiguous()[None]
    backends = [SDPBackend.FLASH_ATTENTION] if shape.element == "f16" else [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]

    def attention(q: Any, kt: Any, v: Any) -> Any:
        with sdpa_kernel(backends):
            return torch.nn.functional.scaled_dot_product_attention(q[None], k, v[None], is_causal=shape.causal)[0]

    return attention


def _mlc(source: str, pipeline: str, inputs: list[Any], output: Any) -> tuple[Callable[[], Any], int]:
    """The compiled program's call and the device memory it took beyond its arguments."""
    import torch

    import mlc

    torch.cuda.synchronize()
    free_before, _ = torch.cuda.mem_get_info()
    compiled = mlc.compile(source, device="cuda", pipeline=pipeline)
    call = lambda: compiled.run_on_device(*inputs, outputs=[output])
    call()
    torch.cuda.synchronize()
    free_after, _ = torch.cuda.mem_get_info()
    return call, max(0, free_before - free_after)


def _torch_peak(function: Callable[[], Any], resident: int) -> int:
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    function()
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - resident)


def _check(name: str, got: Any, want: Any) -> None:
    """Sanity check against PyTorch (f16 results of f32-accumulated products; the tests compare
    with derived bounds)."""
    error = (got.float() - want.float()).abs().max().item()
    if not error <= 2e-2:
        raise AssertionError(f"{name}: differs from PyTorch by {error:.3g}")


def _prepare(shape: Shape, inputs: list[Any], expected: Any, resident: int, paths: dict[str, str], chosen: tuple[str, ...]) -> dict[str, Any]:
    """Each implementation's call, memory and output; a string where it cannot run (out of memory)."""
    import torch

    import mlc

    calls: dict[str, Any] = {}
    functions = {"torch": _torch_eager(shape), "sdpa": _sdpa(shape, inputs[1])}
    for name, function in functions.items():
        if name not in chosen:
            continue
        try:
            calls[name] = ((lambda f=function, x=inputs: f(*x)), _torch_peak(lambda f=function, x=inputs: f(*x), resident), None)
        except torch.OutOfMemoryError:
            calls[name] = "out of memory"
            torch.cuda.empty_cache()
    for name, pipeline in paths.items():
        output = torch.empty_like(expected)
        try:
            call, taken = _mlc(shape.source(), pipeline, inputs, output)
        except mlc.OutOfMemoryError as error:
            calls[name] = f"refused: {str(error).splitlines()[0][:80]}"
            continue
        calls[name] = (call, taken, output)
    return calls


def run(
    sequences: tuple[int, ...], depths: tuple[int, ...] = (64, 128), chosen: tuple[str, ...] = IMPLEMENTATIONS, f32: bool = True
) -> list[tuple[harness.Row, float, float]]:
    import torch

    cases = shapes(sequences, depths, f32)
    paths = {name: pipeline for name, pipeline in pipelines().items() if name in chosen}
    precompile([(shape.source(), pipeline) for shape in cases for pipeline in paths.values()])
    generator = torch.Generator(device="cuda").manual_seed(0)
    results: list[tuple[harness.Row, float, float]] = []
    for shape in cases:
        inputs = _inputs(shape, generator)
        with torch.no_grad():
            reference = _sdpa(shape, inputs[1]) if shape.element == "f16" else _torch_eager(shape)
            expected = reference(*inputs)
        resident = torch.cuda.memory_allocated()
        calls = _prepare(shape, inputs, expected, resident, paths, chosen)
        for name in ("torch", "mlc-3k", "mlc", "mlc-fast"):
            if name in calls and not isinstance(calls[name], str):
                got = calls[name][0]() if name == "torch" else calls[name][2]
                _check(f"{shape.name} {name}", got, expected)
        flops = 4 * HEADS * shape.sequence * shape.sequence * shape.depth
        moved = sum(x.numel() * x.element_size() for x in (*inputs, expected))
        torch_median = math.nan
        for name in (n for n in IMPLEMENTATIONS if n in calls):
            if isinstance(calls[name], str):
                print(f"{shape.name:<26} {name:<10} {calls[name]}")
                continue
            call, taken, _ = calls[name]
            samples = harness.time_gpu(call, warmup=3, batches=11, batch_ms=20.0)
            median = statistics.median(samples)
            torch_median = median if name == "torch" else torch_median
            row = harness.Row(shape.name, name, median, moved / (median * 1e-6) / 1e9, torch_median / median, samples)
            results.append((row, flops / (median * 1e-6) / 1e12, taken / 2**20))
            print_table(results[-1:], header=False)
        medians = {row.implementation: row.median_us for row, _, _ in results if row.case == shape.name}
        if "sdpa" in medians:
            print(f"{shape.name:<26} vs SDPA: " + ", ".join(f"{name} {medians['sdpa'] / us:.2f}x" for name, us in medians.items() if name.startswith("mlc")))
        del calls
        torch.cuda.empty_cache()
    return results


def print_table(results: list[tuple[harness.Row, float, float]], header: bool = True) -> None:
    if header:
        print(f"{'case':<26} {'impl':<10} {'median us':>11} {'TFLOP/s':>8} {'vs torch':>9} {'peak MiB':>9}")
    for row, tflops, peak in results:
        print(
            f"{row.case:<26} {row.implementation:<10} {row.median_us:>11.1f} {tflops:>8.2f} "
            f"{row.speedup_vs_torch:>8.2f}x {peak:>9.1f}"
        )
    if header:
        print("TFLOP/s counts 4*BH*S*S*D (both products, causal ones too; a causal kernel that skips blocks does about half)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--quick", action="store_true", help="sequence 1024 only")
    parser.add_argument("--sequences", default="1024,4096,16384", help="comma-separated sequence lengths")
    parser.add_argument("--depths", default="64,128", help="comma-separated head dims")
    parser.add_argument("--implementations", default=",".join(IMPLEMENTATIONS), help="comma-separated, of " + ", ".join(IMPLEMENTATIONS))
    parser.add_argument("--no-f32", action="store_true", help="leave out the f32 case")
    args = parser.parse_args()
    os.environ.setdefault("MLC_CACHE_DIR", tempfile.mkdtemp(prefix="mlc-bench-attention-"))
    sequences = (1024,) if args.quick else tuple(int(s) for s in args.sequences.split(","))
    chosen = tuple(args.implementations.split(","))
    results = run(sequences, tuple(int(d) for d in args.depths.split(",")), chosen, not args.no_f32)
    print_table(results)
    if args.json:
        rows = [row for row, _, _ in results]
        for row, tflops, peak in results:
            row.__dict__.update(tflops=tflops, peak_mib=peak)
        harness.write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
