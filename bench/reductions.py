"""Reduction benchmarks: mlc vs PyTorch eager and Triton kernels written as a user would.

    python bench/reductions.py [--json bench/results/reductions.json] [--only softmax]

Cases (f32): softmax along rows of 4096x1024, 4096x4096 and 8192x8192; layer norm of 8192x4096
with scale and bias; the sum of each row of 8192x8192 (against the copy ceiling: it reads as much
as a copy reads and writes almost nothing); the fused softmax(relu(2x + 1)) on 64x1024 (launch
bound: one kernel against PyTorch's four) and on 8192x8192 (bandwidth: x read once). Bytes moved
count each input read once and each output written once.

The Triton kernels follow the Triton tutorials: one program per row, the row in one block of the
next power of two, masked loads with -inf, `num_warps` from the block size.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, copy_ceiling_gbs, print_table, run, write_json  # noqa: E402


def tensor(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def softmax_source(rows: int, columns: int) -> str:
    t = tensor((rows, columns))
    return f"""func.func @softmax(%x: {t}) -> {t} {{
  %0 = graph.softmax %x axis -1 : {t}
  func.return %0 : {t}
}}"""


def fused_softmax_source(rows: int, columns: int) -> str:
    t = tensor((rows, columns))
    return f"""func.func @fused(%x: {t}) -> {t} {{
  %two = graph.constant dense<2.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.mul %x, %two : ({t}, tensor<f32>) -> {t}
  %1 = graph.add %0, %one : ({t}, tensor<f32>) -> {t}
  %2 = graph.relu %1 : {t}
  %3 = graph.softmax %2 axis -1 : {t}
  func.return %3 : {t}
}}"""


def layer_norm_source(rows: int, columns: int) -> str:
    t, p = tensor((rows, columns)), tensor((columns,))
    return f"""func.func @layer_norm(%x: {t}, %w: {p}, %b: {p}) -> {t} {{
  %0 = graph.layer_norm %x, %w, %b axis -1 epsilon 1.0e-05 : ({t}, {p}, {p}) -> {t}
  func.return %0 : {t}
}}"""


def row_sum_source(rows: int, columns: int) -> str:
    t, r = tensor((rows, columns)), tensor((rows,))
    return f"""func.func @row_sum(%x: {t}) -> {r} {{
  %0 = graph.reduce_sum %x axes [1] keepdims false : {t} to {r}
  func.return %0 : {r}
}}"""


def triton_kernels() -> dict[str, object]:
    """Triton softmax, fused softmax, layer norm and row sum, or {} when Triton is missing (softmax
    and row sum take `num_warps=` to override the warps chosen from the block size)."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return {}

    @triton.jit
    def softmax_kernel(x, out, columns, FUSED: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < columns
        v = tl.load(x + row * columns + offsets, mask=mask, other=-float("inf"))
        if FUSED:
            v = tl.where(mask, tl.maximum(v * 2.0 + 1.0, 0.0), -float("inf"))
        v = v - tl.max(v, axis=0)
        e = tl.exp(v)
        tl.store(out + row * columns + offsets, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def layer_norm_kernel(x, w, b, out, columns, epsilon, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < columns
        v = tl.load(x + row * columns + offsets, mask=mask, other=0.0)
        mean = tl.sum(v, axis=0) / columns
        centered = tl.where(mask, v - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / columns + epsilon)
        scale = tl.load(w + offsets, mask=mask)
        shift = tl.load(b + offsets, mask=mask)
        tl.store(out + row * columns + offsets, centered * rstd * scale + shift, mask=mask)

    @triton.jit
    def row_sum_kernel(x, out, columns, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        v = tl.load(x + row * columns + offsets, mask=offsets < columns, other=0.0)
        tl.store(out + row, tl.sum(v, axis=0))

    def warps(block: int) -> int:
        return 4 if block < 2048 else 8 if block < 4096 else 16

    def softmax(x, fused: bool = False, num_warps: int | None = None):
        rows, columns = x.shape
        block = triton.next_power_of_2(columns)
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, columns, FUSED=fused, BLOCK=block, num_warps=num_warps or warps(block))
        return out

    def layer_norm(x, w, b):
        rows, columns = x.shape
        block = triton.next_power_of_2(columns)
        out = torch.empty_like(x)
        layer_norm_kernel[(rows,)](x, w, b, out, columns, 1e-5, BLOCK=block, num_warps=warps(block))
        return out

    def row_sum(x, num_warps: int | None = None):
        rows, columns = x.shape
        block = triton.next_power_of_2(columns)
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        row_sum_kernel[(rows,)](x, out, columns, BLOCK=block, num_warps=num_warps or warps(block))
        return out

    return {
        "softmax": softmax,
        "fused": lambda x: softmax(x, fused=True),
        "layer_norm": layer_norm,
        "row_sum": row_sum,
    }


def cases() -> list[Case]:
    import torch

    triton = triton_kernels()

    def matrix(rows: int, columns: int):
        return lambda g: [torch.randn(rows, columns, device="cuda", generator=g)]

    result: list[Case] = []
    for rows, columns in ((4096, 1024), (4096, 4096), (8192, 8192)):
        result.append(
            Case(
                f"softmax {rows}x{columns}",
                matrix(rows, columns),
                lambda x: torch.softmax(x, dim=-1),
                softmax_source(rows, columns),
                bytes_moved=2 * 4 * rows * columns,
                triton_function=triton.get("softmax"),
                tolerance=(1e-4, 1e-7),
            )
        )
    result.append(
        Case(
            "layer norm 8192x4096",
            lambda g: [
                torch.randn(8192, 4096, device="cuda", generator=g) * 2 + 0.5,
                torch.randn(4096, device="cuda", generator=g),
                torch.randn(4096, device="cuda", generator=g),
            ],
            lambda x, w, b: torch.nn.functional.layer_norm(x, (4096,), w, b, 1e-5),
            layer_norm_source(8192, 4096),
            bytes_moved=2 * 4 * 8192 * 4096 + 2 * 4 * 4096,
            triton_function=triton.get("layer_norm"),
            tolerance=(1e-4, 1e-4),
        )
    )
    result.append(
        Case(
            "row sum 8192x8192",
            matrix(8192, 8192),
            lambda x: x.sum(dim=-1),
            row_sum_source(8192, 8192),
            bytes_moved=4 * 8192 * 8192 + 4 * 8192,
            triton_function=triton.get("row_sum"),
            tolerance=(1e-4, 1e-3),
        )
    )
    for rows, columns in ((64, 1024), (8192, 8192)):
        result.append(
            Case(
                f"softmax(relu(2x+1)) {rows}x{columns}",
                matrix(rows, columns),
                lambda x: torch.softmax(torch.relu(x * 2 + 1), dim=-1),
                fused_softmax_source(rows, columns),
                bytes_moved=2 * 4 * rows * columns,
                triton_function=triton.get("fused"),
                tolerance=(1e-4, 1e-7),
            )
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--only", help="run the cases whose name contains this text")
    args = parser.parse_args()
    ceiling = copy_ceiling_gbs()
    selected = [case for case in cases() if args.only is None or args.only in case.name]
    rows = run(selected)
    print_table(rows, ceiling)
    if args.json:
        write_json(args.json, rows, ceiling, " ".join(sys.argv))


if __name__ == "__main__":
    main()
