"""f16 dense layers with computing epilogues: mlc's fused kernel against PyTorch eager.

    python bench/dense_epilogue.py [--json bench/results/dense.json]

Cases: y = act(x @ W + b) for the fp16 MLP's two layers alone (8192x4096 -> 11008 with gelu,
8192x11008 -> 4096 with the bias only, as `bench/mlp.py` builds them) and 4096^3 with relu and
gelu: one mlc kernel (the tensor-core product with the bias and the activation as its epilogue)
against PyTorch's cuBLAS product and its separate bias and activation kernels. These are the
kernels whose wgmma products stay in flight across K steps only when the epilogue does not make
ptxas serialize them (`async_pipeline.pack_roundings`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, run, write_json  # noqa: E402


def dense_case(rows: int, depth: int, columns: int, activation: str) -> Case:
    import torch

    x, w, y, bias = (f"tensor<{shape}xf16>" for shape in (f"{rows}x{depth}", f"{depth}x{columns}", f"{rows}x{columns}", f"{columns}"))
    tail = f"%2 = graph.{activation} %1 : {y}\n  func.return %2 : {y}" if activation else f"func.return %1 : {y}"
    source = f"""func.func @dense(%x: {x}, %w: {w}, %bias: {bias}) -> {y} {{
  %0 = graph.matmul %x, %w : ({x}, {w}) -> {y}
  %1 = graph.add %0, %bias : ({y}, {bias}) -> {y}
  {tail}
}}"""

    def make(generator):
        def normal(*shape: int, scale: float = 1.0):
            return (torch.randn(*shape, device="cuda", generator=generator) * scale).half()

        return [normal(rows, depth), normal(depth, columns, scale=depth**-0.5), normal(columns, scale=0.1)]

    act = {"gelu": torch.nn.functional.gelu, "relu": torch.relu, "": lambda value: value}[activation]
    name = f"f16 dense{'+' + activation if activation else ''} {rows}x{depth}->{columns}"
    moved = 2 * (rows * depth + depth * columns + columns + rows * columns)
    return Case(name, make, lambda x_, w_, b_: act(x_ @ w_ + b_), source, moved, tolerance=(2e-2, 5e-2))


CASES = ((8192, 4096, 11008, "gelu"), (8192, 11008, 4096, ""), (4096, 4096, 4096, "relu"), (4096, 4096, 4096, "gelu"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    rows = run([dense_case(*case) for case in CASES])
    print(f"{'case':<36} {'impl':<8} {'median us':>11} {'time vs eager':>14}")
    for row in rows:
        print(f"{row.case:<36} {row.implementation:<8} {row.median_us:>11.1f} {1 / row.speedup_vs_torch:>13.2f}x")
    if args.json:
        write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
