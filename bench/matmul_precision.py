"""The error of each f32 matmul precision, mlc against cuBLAS, measured against an fp64 product.

    python bench/matmul_precision.py [--size 4096]

For A, B of standard normal entries (size^3), each implementation's result C is compared with
the fp64 product R (cuBLAS in float64 on the GPU): the relative error max|C - R| / max|R| and the
mean of |C - R| / (|A| @ |B|) (the error relative to the scale of the rounding errors, which is
what the derived bounds of `error_bounds` use). Rows: mlc at "ieee", "tf32" and "3xtf32" (on an
sm_90 GPU "tf32" runs on wgmma, which truncates the operands), "tf32" once more through mma.sync
(`mlc-lower-to-gpu` without an arch: operands rounded with `cvt.rna`); cuBLAS in fp32
(`allow_tf32 = False`) and with TF32 allowed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from matmul import matmul_source  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    args = parser.parse_args()
    import torch

    import mlc

    size = args.size
    generator = torch.Generator(device="cuda").manual_seed(0)
    a, b = (torch.randn(size, size, device="cuda", generator=generator) for _ in range(2))
    reference = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    results = {}
    for precision in ("ieee", "tf32", "3xtf32"):
        compiled = mlc.compile(matmul_source(size, size, size, False, "f32", precision), device="cuda")
        output = torch.empty(size, size, device="cuda")
        compiled.run_on_device(a, b, outputs=[output])
        results[f"mlc {precision}"] = output
    rounded = mlc.compile(matmul_source(size, size, size, False, "f32", "tf32"), device="cuda", pipeline="mlc-lower-to-gpu")
    results["mlc tf32 mma.sync"] = torch.empty(size, size, device="cuda")
    rounded.run_on_device(a, b, outputs=[results["mlc tf32 mma.sync"]])
    for allowed in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = allowed
        results[f"cuBLAS {'tf32' if allowed else 'fp32'}"] = a @ b
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"{'implementation':<20} {'max|err|/max|ref|':>18} {'mean |err|/(|A||B|)':>20}")
    for name, result in results.items():
        error = (result.double() - reference).abs()
        print(f"{name:<20} {float(error.max() / reference.abs().max()):>18.3e} {float((error / scale).mean()):>20.3e}")


if __name__ == "__main__":
    main()
