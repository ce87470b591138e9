"""Elementwise benchmarks: mlc vs PyTorch eager (and Triton kernels written as a user would).

    python bench/elementwise.py [--json bench/results/elementwise.json]

Cases: `graph.add` on 2^26 f32 (bandwidth: 3 x 4 x 2^26 bytes), the same in f16, a fused
bias + gelu over 8192x4096 f32, and a chain of four elementwise ops on 64x1024 f32 (latency: one
fused kernel against PyTorch's four launches).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import Case  # noqa: E402


def tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def add_source(size: int, element: str) -> str:
    t = tensor((size,), element)
    return f"""func.func @add(%a: {t}, %b: {t}) -> {t} {{
  %0 = graph.add %a, %b : ({t}, {t}) -> {t}
  func.return %0 : {t}
}}"""


def chain_source(shape: tuple[int, ...]) -> str:
    t = tensor(shape, "f32")
    return f"""func.func @chain(%x: {t}) -> {t} {{
  %two = graph.constant dense<2.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.mul %x, %two : ({t}, tensor<f32>) -> {t}
  %1 = graph.add %0, %one : ({t}, tensor<f32>) -> {t}
  %2 = graph.relu %1 : {t}
  %3 = graph.sigmoid %2 : {t}
  func.return %3 : {t}
}}"""


def bias_gelu_source(rows: int, columns: int) -> str:
    t, b = tensor((rows, columns), "f32"), tensor((columns,), "f32")
    return f"""func.func @bias_gelu(%x: {t}, %bias: {b}) -> {t} {{
  %0 = graph.add %x, %bias : ({t}, {b}) -> {t}
  %1 = graph.gelu %0 {{approximate = "tanh"}} : {t}
  func.return %1 : {t}
}}"""


def triton_kernels():
    """Triton versions of add and the chain, or None when Triton is missing."""
    try:
        import torch
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def add_kernel(a, b, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out + offsets, tl.load(a + offsets, mask=mask) + tl.load(b + offsets, mask=mask), mask=mask)

    @triton.jit
    def chain_kernel(x, out, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        v = tl.maximum(tl.load(x + offsets, mask=mask) * 2.0 + 1.0, 0.0)
        tl.store(out + offsets, tl.sigmoid(v), mask=mask)

    def add(a, b):
        out = torch.empty_like(a)
        add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
        return out

    def chain(x):
        out = torch.empty_like(x)
        chain_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out

    return add, chain


def cases() -> list[Case]:
    import torch

    kernels = triton_kernels()
    triton_add, triton_chain = kernels if kernels else (None, None)
    n = 2**26
    chain_shape = (64, 1024)
    return [
        Case(
            "add 2^26 f32",
            lambda g: [torch.randn(n, device="cuda", generator=g) for _ in range(2)],
            torch.add,
            add_source(n, "f32"),
            bytes_moved=3 * 4 * n,
            triton_function=triton_add,
        ),
        Case(
            "add 2^26 f16",
            lambda g: [torch.randn(n, device="cuda", generator=g).half() for _ in range(2)],
            torch.add,
            add_source(n, "f16"),
            bytes_moved=3 * 2 * n,
            tolerance=(1e-3, 1e-3),
        ),
        Case(
            "bias+gelu(tanh) 8192x4096 f32",
            lambda g: [
                torch.randn(8192, 4096, device="cuda", generator=g),
                torch.randn(4096, device="cuda", generator=g),
            ],
            lambda x, bias: torch.nn.functional.gelu(x + bias, approximate="tanh"),
            bias_gelu_source(8192, 4096),
            bytes_moved=2 * 4 * 8192 * 4096 + 4 * 4096,
            tolerance=(1e-5, 1e-5),
        ),
        Case(
            "4-op chain 64x1024 f32",
            lambda g: [torch.randn(*chain_shape, device="cuda", generator=g)],
            lambda x: torch.sigmoid(torch.relu(x * 2 + 1)),
            chain_source(chain_shape),
            bytes_moved=2 * 4 * 64 * 1024,
            triton_function=triton_chain,
            tolerance=(1e-6, 1e-6),
        ),
    ]


def main() -> None:
    harness.main(cases, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
