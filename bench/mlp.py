"""The fp16 MLP block of a transformer layer: mlc against PyTorch eager, one `mlc.compile` of the graph.

    python bench/mlp.py [--json bench/results/mlp.json] [--shape 8192,4096,11008] [--pipeline P ...]

y = gelu(x @ W1 + b1) @ W2 + b2 with x: M x D, W1: D x H, W2: H x D (default 8192 x 4096 -> 11008
-> 4096, issue 14's target: at most 1.2x eager's time), f16 operands and results, f32
accumulation on both sides (PyTorch: cuBLAS for the products, then the bias and the exact erf
gelu as separate kernels; mlc: two tensor-core matmul kernels with the bias and gelu fused as
their epilogues). Weights are scaled by 1 / sqrt(fan-in) so that activations stay near 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Row, run, write_json


def mlp_source(rows: int, model: int, hidden: int) -> str:
    x, w1, b1, h, w2, b2, y = (
        f"tensor<{shape}xf16>" for shape in (f"{rows}x{model}", f"{model}x{hidden}", f"{hidden}", f"{rows}x{hidden}", f"{hidden}x{model}", f"{model}", f"{rows}x{model}")
    )
    return f"""func.func @mlp(%x: {x}, %w1: {w1}, %b1: {b1}, %w2: {w2}, %b2: {b2}) -> {y} {{
  %0 = graph.matmul %x, %w1 : ({x}, {w1}) -> {h}
  %1 = graph.add %0, %b1 : ({h}, {b1}) -> {h}
  %2 = graph.gelu %1 : {h}
  %3 = graph.matmul %2, %w2 : ({h}, {w2}) -> {y}
  %4 = graph.add %3, %b2 : ({y}, {b2}) -> {y}
  func.return %4 : {y}
}}"""


def mlp_case(rows: int, model: int, hidden: int) -> Case:
    import torch

    def make(generator):
        def normal(*shape: int, scale: float = 1.0):
            return (torch.randn(*shape, device="cuda", generator=generator) * scale).half()

        return [normal(rows, model), normal(model, hidden, scale=model**-0.5), normal(hidden, scale=0.1), normal(hidden, model, scale=hidden**-0.5), normal(model, scale=0.1)]

    def eager(x, w1, b1, w2, b2):
        return torch.nn.functional.gelu(x @ w1 + b1) @ w2 + b2

    moved = 2 * (rows * model + model * hidden + hidden + hidden * model + model + rows * model)
    return Case(f"fp16 MLP {rows}x{model}->{hidden}->{model}", make, eager, mlp_source(rows, model, hidden), moved, tolerance=(2e-2, 5e-2))


def print_mlp_table(rows: list[Row], flops: int) -> None:
    print(f"{'case':<36} {'impl':<8} {'median us':>11} {'TFLOP/s':>8} {'time vs eager':>14}")
    for row in rows:
        print(f"{row.case:<36} {row.implementation:<8} {row.median_us:>11.1f} {flops / (row.median_us * 1e-6) / 1e12:>8.1f} {1 / row.speedup_vs_torch:>13.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--shape", default="8192,4096,11008", help="M (tokens), D (model), H (hidden)")
    parser.add_argument("--pipeline", action="append", default=[], help="also time mlc compiled with this pipeline (repeatable)")
    args = parser.parse_args()
    rows_count, model, hidden = (int(size) for size in args.shape.split(","))
    case = mlp_case(rows_count, model, hidden)
    rows = run([case])
    for pipeline in args.pipeline:
        extra = run([case], pipeline=pipeline)
        for row in extra:
            row.implementation = f"{row.implementation}/{pipeline}"
        rows.extend(extra)
    print_mlp_table(rows, 2 * 2 * rows_count * model * hidden)
    if args.json:
        write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
