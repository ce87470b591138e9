"""Attention core on the GPU (issue 16): mlc's fused chain against its three kernels and PyTorch.

Case: `softmax(q @ kt / sqrt(d) [+ causal mask]) @ v` in f16, batch x heads 64, head dims 64 and
128, sequence 1024 and 4096, causal or not; and one f32 case (S 1024, D 64: products without
tensor cores on both mlc paths; PyTorch's f32 matmuls may use TF32 only if allowed, which is off
by default). Implementations, in one process on the same random
inputs (`harness.time_gpu`, medians):

* `mlc-fused`: the GPU pipeline with bytes alone deciding (`graph-fuse`): the attention chain
  region becomes one kernel (online softmax; the score matrix never leaves the program);
* `mlc-3k`: the chain fallback forced (`graph-fuse{on-chip-bytes=0}`): two matmul kernels
  (tensor cores for f16) and a softmax kernel, the scores through global memory. The default GPU
  pipeline (`graph-fuse{compute-model=gpu}`) chooses this path for every case here;
* `torch`: PyTorch eager, unfused (`torch.softmax(q @ kt / sqrt(d) + mask) @ v`);
* `sdpa`: `torch.nn.functional.scaled_dot_product_attention` (flash backend; `is_causal`).

mlc takes K already transposed (`kt`, [BH, D, S]), as a model's graph holds it after its
transpose; PyTorch takes the same tensors (SDPA: K = kt transposed, made contiguous once,
untimed). Causal masking reaches mlc and eager PyTorch as an additive [S, S] mask argument
(0 / -inf), as an exported model passes it (mlc has no iota-based causal mask yet): the fused kernel reads it in
blocks and does not skip the masked blocks, while SDPA skips them (`is_causal`).

Memory: `peak MiB` is the device memory an implementation takes beyond its inputs and output
(mlc: the free-memory drop from building the program and its first call, its result written into
a preallocated tensor; PyTorch: `max_memory_allocated` over one call, less inputs and output).
The fused chain keeps no [S, S] buffer, so its figure does not grow with S squared.

Compilation is done first in worker processes (the compile cache, `MLC_CACHE_DIR`), then every
case is checked against eager PyTorch before it is timed.
Usage: python bench/attention.py [--json PATH] [--quick]
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
IMPLEMENTATIONS = ("torch", "sdpa", "mlc-3k", "mlc-fused")
GPU_FUSE = "graph-fuse{compute-model=gpu}"


def pipelines() -> dict[str, str]:
    """mlc's two paths: the chain kernel (bytes alone decide: the GPU's compute model would pick
    separate kernels) and the three kernels (the blocks made not to fit)."""
    from mlc.transforms.pipelines import GPU_PIPELINE

    assert GPU_FUSE in GPU_PIPELINE
    return {
        "mlc-fused": GPU_PIPELINE.replace(GPU_FUSE, "graph-fuse"),
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
        mask = f", %mask: tensor<{s}x{s}x{e}>" if self.causal else ""
        masked = "%scaled"
        lines = [
            f"%s = graph.matmul %q, %kt : ({t(s, d)}, {t(d, s)}) -> {t(s, s)}",
            f"%scale = graph.constant dense<{math.sqrt(d)}> : tensor<{e}>",
            f"%scaled = graph.div %s, %scale : ({t(s, s)}, tensor<{e}>) -> {t(s, s)}",
        ]
        if self.causal:
            lines.append(f"%masked = graph.add %scaled, %mask : ({t(s, s)}, tensor<{s}x{s}x{e}>) -> {t(s, s)}")
            masked = "%masked"
        lines += [
            f"%p = graph.softmax {masked} axis -1 : {t(s, s)}",
            f"%o = graph.matmul %p, %v : ({t(s, s)}, {t(s, d)}) -> {t(s, d)}",
        ]
        body = "".join(f"  {line}\n" for line in lines)
        return f"func.func @main(%q: {t(s, d)}, %kt: {t(d, s)}, %v: {t(s, d)}{mask}) -> {t(s, d)} {{\n{body}  func.return %o : {t(s, d)}\n}}\n"


def shapes(quick: bool) -> list[Shape]:
    sequences = (1024,) if quick else (1024, 4096)
    f16 = [Shape(s, d, causal) for s in sequences for d in (64, 128) for causal in (False, True)]
    return [*f16, Shape(1024, 64, False, "f32")]  # f32: whether the chain pays without tensor cores


def _compile(source: str, pipeline: str) -> None:
    import mlc

    mlc.compile(source, device="cuda", pipeline=pipeline)


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
    q, kt, v = make(HEADS, s, d), make(HEADS, d, s), make(HEADS, s, d)
    if not shape.causal:
        return [q, kt, v]
    above = torch.ones(s, s, device="cuda", dtype=torch.bool).triu(1)
    return [q, kt, v, torch.zeros(s, s, device="cuda", dtype=dtype).masked_fill(above, -math.inf)]


def _torch_eager(shape: Shape) -> Callable[..., Any]:
    import torch

    scale = math.sqrt(shape.depth)

    def attention(q: Any, kt: Any, v: Any, *mask: Any) -> Any:
        scores = q @ kt / scale
        if mask:
            scores = scores + mask[0]
        return torch.softmax(scores, dim=-1) @ v

    return attention


def _sdpa(shape: Shape, kt: Any) -> Callable[..., Any]:
    """SDPA on K as [BH, S, D] (made contiguous once, outside the timed calls: the fused kernels
    need a unit last stride): flash only for f16; f32 (no flash kernel) memory-efficient or math."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    k = kt.transpose(-2, -1).contiguous()[None]
    backends = [SDPBackend.FLASH_ATTENTION] if shape.element == "f16" else [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]

    def attention(q: Any, kt: Any, v: Any, *mask: Any) -> Any:
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
    """Sanity check against eager PyTorch (f16 results of f32-accumulated products; the tests
    compare with derived bounds)."""
    error = (got.float() - want.float()).abs().max().item()
    if not error <= 2e-2:
        raise AssertionError(f"{name}: differs from PyTorch eager by {error:.3g}")


def run(quick: bool) -> list[tuple[harness.Row, float, float]]:
    import torch

    cases = shapes(quick)
    paths = pipelines()
    precompile([(shape.source(), pipeline) for shape in cases for pipeline in paths.values()])
    generator = torch.Generator(device="cuda").manual_seed(0)
    results: list[tuple[harness.Row, float, float]] = []
    for shape in cases:
        inputs = _inputs(shape, generator)
        eager = _torch_eager(shape)
        expected = eager(*inputs)
        resident = torch.cuda.memory_allocated()
        source = shape.source()
        calls: dict[str, tuple[Callable[[], Any], int, Any]] = {}
        for name, function in (("torch", eager), ("sdpa", _sdpa(shape, inputs[1]))):
            calls[name] = ((lambda f=function, x=inputs: f(*x)), _torch_peak(lambda f=function, x=inputs: f(*x), resident), None)
        for name, pipeline in paths.items():
            output = torch.empty_like(expected)
            call, taken = _mlc(source, pipeline, inputs, output)
            calls[name] = (call, taken, output)
        _check(f"{shape.name} sdpa", calls["sdpa"][0](), expected)
        for name in ("mlc-3k", "mlc-fused"):
            _check(f"{shape.name} {name}", calls[name][2], expected)
        flops = 4 * HEADS * shape.sequence * shape.sequence * shape.depth
        moved = sum(x.numel() * x.element_size() for x in (*inputs, expected))
        torch_median = None
        for name in IMPLEMENTATIONS:
            call, taken, _ = calls[name]
            samples = harness.time_gpu(call, warmup=3, batches=11, batch_ms=20.0)
            median = statistics.median(samples)
            torch_median = median if name == "torch" else torch_median
            row = harness.Row(shape.name, name, median, moved / (median * 1e-6) / 1e9, torch_median / median, samples)
            results.append((row, flops / (median * 1e-6) / 1e12, taken / 2**20))
            print_table(results[-1:], header=False)
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
        print("TFLOP/s counts 4*BH*S*S*D (both products, causal ones too)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--quick", action="store_true", help="sequence 1024 only")
    args = parser.parse_args()
    os.environ.setdefault("MLC_CACHE_DIR", tempfile.mkdtemp(prefix="mlc-bench-attention-"))
    results = run(args.quick)
    print_table(results)
    if args.json:
        rows = [row for row, _, _ in results]
        for row, tflops, peak in results:
            row.__dict__.update(tflops=tflops, peak_mib=peak)
        harness.write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
