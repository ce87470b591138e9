"""Two-matmul chains on the GPU (issue 16): `matmul(relu(matmul(A, B) + bias), C)` fused into one
tensor-core kernel against mlc's two separate kernels and PyTorch eager.

Cases, f16: a two-layer MLP (x [16384, 128] @ W1 [128, N] + b, relu, @ W2 [N, 128], N 512 and
2048) and a batched chain shaped like attention without the softmax (64 x [1024, 64] @ [64, 1024]
+ b, relu, @ [1024, 64]). Implementations, in one process on the same random inputs
(`harness.time_gpu`, medians):

* `mlc-chain`: the default GPU pipeline with `graph-fuse{compute-model=gpu matmul-chains=true}`:
  one kernel (`mlc.chain = "matmul"`, the attention chain kernel without the softmax:
  `chain_mma.py`), the intermediate kept per block in registers, never in memory;
* `mlc-2k`: `mlc.compile`'s default for the device (on an H100 `mlc-lower-to-gpu{arch=sm_90}`:
  wgmma): two matmul kernels, bias and relu the first one's epilogue, the f16 intermediate
  through global memory;
* `mlc-2k-mma`: the same two kernels from the GPU pipeline without the arch (mma.sync, as the
  chain kernel uses);
* `torch`: PyTorch eager (`torch.relu(a @ b + bias) @ c`).

Each mlc result is checked against PyTorch before it is timed.
Usage: python bench/matmul_chain.py [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness

CASES = {
    # name: (batch dims, M, K, N, P)
    "mlp 16384x128 -> 512 -> 128": ((), 16384, 128, 512, 128),
    "mlp 16384x128 -> 2048 -> 128": ((), 16384, 128, 2048, 128),
    "batched 64x1024x64 -> 1024 -> 64": ((64,), 1024, 64, 1024, 64),
}


def source(batch: tuple[int, ...], m: int, k: int, n: int, p: int) -> str:
    t = lambda *shape: "tensor<" + "".join(f"{size}x" for size in (*batch, *shape)) + "f16>"
    lines = [
        f"%h = graph.matmul %a, %b : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}",
        f"%biased = graph.add %h, %bias : ({t(m, n)}, tensor<{n}xf16>) -> {t(m, n)}",
        f"%r = graph.relu %biased : {t(m, n)}",
        f"%o = graph.matmul %r, %c : ({t(m, n)}, {t(n, p)}) -> {t(m, p)}",
    ]
    body = "".join(f"  {line}\n" for line in lines)
    return f"func.func @main(%a: {t(m, k)}, %b: {t(k, n)}, %bias: tensor<{n}xf16>, %c: {t(n, p)}) -> {t(m, p)} {{\n{body}  func.return %o : {t(m, p)}\n}}\n"


def pipelines() -> dict[str, str]:
    from mlc.transforms.pipelines import GPU_FUSE, GPU_PIPELINE, gpu_fuse

    return {"mlc-chain": GPU_PIPELINE.replace(GPU_FUSE, gpu_fuse("matmul-chains=true")), "mlc-2k": "", "mlc-2k-mma": GPU_PIPELINE}


def run() -> list[harness.Row]:
    import torch

    import mlc

    generator = torch.Generator(device="cuda").manual_seed(0)
    rows: list[harness.Row] = []
    for name, (batch, m, k, n, p) in CASES.items():
        make = lambda *shape, scale=1.0: (torch.randn(*shape, device="cuda", generator=generator) * scale).half()
        inputs = [make(*batch, m, k), make(*batch, k, n, scale=k**-0.5), make(n, scale=0.1), make(*batch, n, p, scale=n**-0.5)]
        a, b, bias, c = inputs
        expected = torch.relu(a @ b + bias) @ c
        calls: dict[str, Any] = {"torch": lambda: torch.relu(a @ b + bias) @ c}
        for implementation, pipeline in pipelines().items():
            compiled = mlc.compile(source(batch, m, k, n, p), device="cuda", pipeline=pipeline or None)
            kernels = str(compiled.lowered_module).count("_chain0_matmul(")
            output = torch.empty_like(expected)
            compiled.run_on_device(*inputs, outputs=[output])
            error = (output.float() - expected.float()).abs().max().item()
            if not error <= 2e-2 * max(1.0, expected.float().abs().max().item()):
                raise AssertionError(f"{name} {implementation}: differs from PyTorch by {error:.3g}")
            print(f"{name:<34} {implementation:<10} chain kernel: {'yes' if kernels else 'no'}, max error {error:.3g}")
            calls[implementation] = lambda compiled=compiled, output=output: compiled.run_on_device(*inputs, outputs=[output])
        flops = 2 * m * n * (k + p) * (batch[0] if batch else 1)
        medians = {}
        for implementation, call in calls.items():
            samples = harness.time_gpu(call, warmup=5, batches=11, batch_ms=20.0)
            medians[implementation] = statistics.median(samples)
            rows.append(harness.Row(name, implementation, medians[implementation], 0.0, medians.get("torch", float("nan")) / medians[implementation], samples))
            print(f"{name:<34} {implementation:<10} {medians[implementation]:>9.1f} us {flops / medians[implementation] / 1e6:>7.1f} TFLOP/s")
        print(
            f"{name:<34} chain vs two mlc kernels: {medians['mlc-2k'] / medians['mlc-chain']:.2f}x (wgmma), "
            f"{medians['mlc-2k-mma'] / medians['mlc-chain']:.2f}x (mma.sync); vs torch {medians['torch'] / medians['mlc-chain']:.2f}x"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    os.environ.setdefault("MLC_CACHE_DIR", tempfile.mkdtemp(prefix="mlc-bench-matmul-chain-"))
    rows = run()
    if args.json:
        harness.write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
