"""A matmul's transposed operand read in place (`mlc.operand_major`) against the transpose + matmul it replaces.

    python bench/matmul_layouts.py [--json bench/results/matmul_layouts.json] [--only TEXT]

Each case is the torch `linear` product y = x @ transpose(w) with w stored N x K (f16). Rows, in
one process on one GPU:
- `pytorch`: `x @ w.t()` (cuBLAS reads the transposed weight natively, no copy);
- `mlc in place`: one `mlc.compile` of the graph (transpose, matmul): the transpose joins the
  matmul's kernel and the weight is read in its stored layout (on sm_90, staged K-major for wgmma);
- `mlc copy`: what that replaces, an mlc transpose kernel writing transpose(w) then the mlc matmul
  reading it row-major (two compiled programs, back to back);
- `mlc row-major`: the mlc matmul alone on an already transposed weight (the copy's matmul part).
Each row's time is the median of batches of back-to-back calls (`harness.time_gpu`); TFLOP/s
counts 2 M N K.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

SHAPES = {"f16 linear 4096^3": (4096, 4096, 4096), "f16 linear 8192x11008x4096": (8192, 11008, 4096)}
"""(M, N, K): y is M x N, x M x K, w N x K."""


def tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def linear_source(m: int, n: int, k: int, element: str) -> str:
    x, w, wt, y = tensor((m, k), element), tensor((n, k), element), tensor((k, n), element), tensor((m, n), element)
    return f"""func.func @linear(%x: {x}, %w: {w}) -> {y} {{
  %wt = graph.transpose %w perm [1, 0] : {w} to {wt}
  %y = graph.matmul %x, %wt : ({x}, {wt}) -> {y}
  func.return %y : {y}
}}"""


def transpose_source(n: int, k: int, element: str) -> str:
    w, wt = tensor((n, k), element), tensor((k, n), element)
    return f"""func.func @transpose(%w: {w}) -> {wt} {{
  %wt = graph.transpose %w perm [1, 0] : {w} to {wt}
  func.return %wt : {wt}
}}"""


def matmul_source(m: int, n: int, k: int, element: str) -> str:
    x, wt, y = tensor((m, k), element), tensor((k, n), element), tensor((m, n), element)
    return f"""func.func @matmul(%x: {x}, %wt: {wt}) -> {y} {{
  %y = graph.matmul %x, %wt : ({x}, {wt}) -> {y}
  func.return %y : {y}
}}"""


def implementations(m: int, n: int, k: int, x: Any, w: Any) -> dict[str, tuple[Callable[[], Any], Any]]:
    """Each row's no-argument call and the tensor holding its product."""
    import torch

    import mlc

    in_place, transpose, matmul = (
        mlc.compile(source, device="cuda") for source in (linear_source(m, n, k, "f16"), transpose_source(n, k, "f16"), matmul_source(m, n, k, "f16"))
    )
    y_in_place, y_copy, wt = torch.empty(m, n, device="cuda", dtype=x.dtype), torch.empty(m, n, device="cuda", dtype=x.dtype), torch.empty(k, n, device="cuda", dtype=x.dtype)

    def copy_then_matmul() -> None:
        transpose.run_on_device(w, outputs=[wt])
        matmul.run_on_device(x, wt, outputs=[y_copy])

    reference = torch.empty(m, n, device="cuda", dtype=x.dtype)
    return {
        "pytorch": (lambda: torch.matmul(x, w.t(), out=reference), reference),
        "mlc in place": (lambda: in_place.run_on_device(x, w, outputs=[y_in_place]), y_in_place),
        "mlc copy": (copy_then_matmul, y_copy),
        "mlc row-major": (lambda: matmul.run_on_device(x, wt, outputs=[y_copy]), y_copy),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    args = parser.parse_args()
    import torch

    generator = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    print(f"{'case':<28} {'impl':<14} {'median us':>10} {'TFLOP/s':>8} {'vs torch':>9}")
    for name, (m, n, k) in SHAPES.items():
        if args.only not in name:
            continue
        x = torch.randn(m, k, device="cuda", generator=generator).half()
        w = (torch.randn(n, k, device="cuda", generator=generator) / k**0.5).half()
        calls = implementations(m, n, k, x, w)
        calls["pytorch"][0]()
        for label, (call, output) in calls.items():
            call()
            torch.cuda.synchronize()
            harness._check(f"{name} / {label}", output, calls["pytorch"][1], (1e-2, 1e-1))
        torch_median = None
        for label, (call, _) in calls.items():
            samples = harness.time_gpu(call)
            median = statistics.median(samples)
            torch_median = median if torch_median is None else torch_median
            rows.append(harness.Row(name, label, median, 2 * (m * k + n * k + m * n) / (median * 1e-6) / 1e9, torch_median / median, samples))
            print(f"{name:<28} {label:<14} {median:>10.1f} {2 * m * n * k / (median * 1e-6) / 1e12:>8.1f} {torch_median / median:>8.2f}x")
    if args.json:
        harness.write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
