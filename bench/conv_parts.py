"""Where an implicit-GEMM convolution's time goes: its layout kernels timed alone, against PyTorch.

    python bench/conv_parts.py [--json PATH] [--only TEXT]

Issue 15's f16 layer (N=32, 256 channels, 56x56, 3x3, padding 1) is two kernels in mlc on the GPU
(`window_decomposition.py`) besides the weights' small transpose: NCHW -> zero-padded NHWC (one
windowed shared-memory transpose, `transpose_kernel.py`) and the implicit GEMM, which stores its
padded grid's product straight into NCHW through the slice and the transpose (`tile.scatter`,
`scattered_store.py`; before, a windowed transpose kernel of its own did). Each layout kernel is
timed here on its own, with the earlier alternatives (a shared-memory transpose of (N, C, H*W) then
a pad; the product's windowed transpose; a shared-memory transpose of the product), PyTorch's copy
of the same layout beside it; the implicit GEMM alone, from the padded NHWC input and the (9*C, C)
weights, once storing NCHW through the chain and once storing its padded grid as it is (the
difference: what the scattered store costs); and the whole convolution in the same run, so that
the weights' transpose is what remains. PyTorch's side of a GEMM row is its im2col and matmul.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import Case  # noqa: E402
from layout import conv_case, tensor  # noqa: E402

N, C, HW = 32, 256, 56
P = HW + 2


def _pad_lines(source: str, shape: tuple[int, ...], axes: tuple[int, ...], element: str) -> tuple[list[str], str, tuple[int, ...]]:
    """MLIR lines padding `source` of `shape` by one zero on both sides of `axes`."""
    lines = [f"%zero = graph.constant dense<0.0> : tensor<{element}>"]
    current, value = tuple(shape), source
    for axis in axes:
        side = tuple(1 if d == axis else n for d, n in enumerate(current))
        padded = tuple(n + 2 if d == axis else n for d, n in enumerate(current))
        lines.append(f"%b{axis} = graph.broadcast %zero : tensor<{element}> to {tensor(side, element)}")
        lines.append(
            f"%p{axis} = graph.concat %b{axis}, {value}, %b{axis} axis {axis} : "
            f"({tensor(side, element)}, {tensor(current, element)}, {tensor(side, element)}) -> {tensor(padded, element)}"
        )
        current, value = padded, f"%p{axis}"
    return lines, value, current


def _function(arguments: list[tuple[str, tuple[int, ...]]], lines: list[str], result: str, shape: tuple[int, ...], element: str) -> str:
    parameters = ", ".join(f"%{name}: {tensor(s, element)}" for name, s in arguments)
    body = "\n  ".join(lines)
    return f"func.func @part({parameters}) -> {tensor(shape, element)} {{\n  {body}\n  func.return {result} : {tensor(shape, element)}\n}}\n"


def cases() -> list[Case]:
    import torch
    import torch.nn.functional as F

    element, dtype = "f16", torch.float16
    nchw, nhwc, padded = (N, C, HW, HW), (N, HW, HW, C), (N, P, P, C)
    transpose = f"%t = graph.transpose %x perm [0, 2, 3, 1] : {tensor(nchw, element)} to {tensor(nhwc, element)}"
    pad_lines, padded_value, _ = _pad_lines("%t", nhwc, (1, 2), element)
    fused_pad = _function([("x", nchw)], [transpose, *pad_lines], padded_value, padded, element)
    flat = (N, C, HW * HW)
    shared = _function(
        [("x", flat)],
        [f"%t = graph.transpose %x perm [0, 2, 1] : {tensor(flat, element)} to {tensor((N, HW * HW, C), element)}"],
        "%t", (N, HW * HW, C), element,
    )
    pad_only_lines, pad_only_value, _ = _pad_lines("%x", nhwc, (1, 2), element)
    pad_only = _function([("x", nhwc)], pad_only_lines, pad_only_value, padded, element)
    sliced = (N, HW, HW, C)
    out_lines = [
        f"%s = graph.slice %y starts [0, 0, 0, 0] ends [{N}, {HW}, {HW}, {C}] steps [1, 1, 1, 1] : {tensor(padded, element)} to {tensor(sliced, element)}",
        f"%o = graph.transpose %s perm [0, 3, 1, 2] : {tensor(sliced, element)} to {tensor(nchw, element)}",
    ]
    output = _function([("y", padded)], out_lines, "%o", nchw, element)
    grid = (N, P * P, C)
    output_shared = _function(
        [("y", grid)],
        [f"%o = graph.transpose %y perm [0, 2, 1] : {tensor(grid, element)} to {tensor((N, C, P * P), element)}"],
        "%o", (N, C, P * P), element,
    )

    gemm_nchw, gemm_grid = _gemm_function(element, True), _gemm_function(element, False)

    def random(shape: tuple[int, ...]):
        return lambda g: [torch.randn(*shape, device="cuda", generator=g).to(dtype)]

    def moved(*shapes: tuple[int, ...]) -> int:
        return 2 * sum(int(torch.tensor(s).prod()) for s in shapes)

    return [
        Case("NCHW -> padded NHWC (windowed transpose)", random(nchw), lambda x: F.pad(x.permute(0, 2, 3, 1), (0, 0, 1, 1, 1, 1)), fused_pad, moved(nchw, padded), tolerance=(0.0, 0.0)),
        Case("NCHW -> NHWC (shared transpose)", random(flat), lambda x: x.transpose(1, 2).contiguous(), shared, moved(flat, flat), tolerance=(0.0, 0.0)),
        Case("NHWC -> padded NHWC", random(nhwc), lambda x: F.pad(x, (0, 0, 1, 1, 1, 1)), pad_only, moved(nhwc, padded), tolerance=(0.0, 0.0)),
        Case("padded grid -> NCHW (windowed transpose)", random(padded), lambda y: y[:, :HW, :HW, :].permute(0, 3, 1, 2).contiguous(), output, moved(padded, nchw), tolerance=(0.0, 0.0)),
        Case("padded grid -> NCHW grid (shared)", random(grid), lambda y: y.transpose(1, 2).contiguous(), output_shared, moved(grid, grid), tolerance=(0.0, 0.0)),
        Case("implicit GEMM -> NCHW (scattered store)", gemm_inputs, lambda p, b: _torch_gemm(p, b, True), gemm_nchw, gemm_bytes, tolerance=(2e-2, 2e-2)),
        Case("implicit GEMM -> padded grid (plain store)", gemm_inputs, lambda p, b: _torch_gemm(p, b, False), gemm_grid, gemm_bytes, tolerance=(2e-2, 2e-2)),
        conv_case(N, C, HW, "f16"),
    ]


SHIFTS = [kh * P + kw for kh in range(3) for kw in range(3)]
"""How far kernel offset (kh, kw) moves along the padded grid's flattened pixels."""
GRID = N * P * P


def _gemm_function(element: str, to_nchw: bool) -> str:
    """The implicit GEMM as graph-decompose writes it (shifted row slices of the padded input side by
    side), multiplied by the (9*C, C) weights; its product sliced and transposed to NCHW or not."""
    rows, depth = (GRID, C), (9 * C, C)
    lines = [
        f"%zero = graph.constant dense<0.0> : tensor<{element}>",
        f"%tail = graph.broadcast %zero : tensor<{element}> to {tensor((SHIFTS[-1], C), element)}",
        f"%rows = graph.concat %p, %tail axis 0 : ({tensor(rows, element)}, {tensor((SHIFTS[-1], C), element)}) -> {tensor((GRID + SHIFTS[-1], C), element)}",
    ]
    for t, shift in enumerate(SHIFTS):
        lines.append(f"%s{t} = graph.slice %rows starts [{shift}, 0] ends [{shift + GRID}, {C}] steps [1, 1] : {tensor((GRID + SHIFTS[-1], C), element)} to {tensor(rows, element)}")
    pieces, types = ", ".join(f"%s{t}" for t in range(9)), ", ".join([tensor(rows, element)] * 9)
    lines.append(f"%a = graph.concat {pieces} axis 1 : ({types}) -> {tensor((GRID, 9 * C), element)}")
    lines.append(f"%y = graph.matmul %a, %b : ({tensor((GRID, 9 * C), element)}, {tensor(depth, element)}) -> {tensor(rows, element)}")
    if not to_nchw:
        return _function([("p", rows), ("b", depth)], lines, "%y", rows, element)
    grid, sliced, nchw = (N, P, P, C), (N, HW, HW, C), (N, C, HW, HW)
    lines += [
        f"%g = graph.reshape %y : {tensor(rows, element)} to {tensor(grid, element)}",
        f"%s = graph.slice %g starts [0, 0, 0, 0] ends [{N}, {HW}, {HW}, {C}] steps [1, 1, 1, 1] : {tensor(grid, element)} to {tensor(sliced, element)}",
        f"%o = graph.transpose %s perm [0, 3, 1, 2] : {tensor(sliced, element)} to {tensor(nchw, element)}",
    ]
    return _function([("p", rows), ("b", depth)], lines, "%o", nchw, element)


def gemm_inputs(g: object) -> list[object]:
    """A padded NHWC activation flattened to (N*Hp*Wp, C), zero on its border, and (9*C, C) weights."""
    import torch
    import torch.nn.functional as F

    x = torch.randn(N, HW, HW, C, device="cuda", generator=g)
    padded = F.pad(x, (0, 0, 1, 1, 1, 1)).reshape(GRID, C)
    weights = torch.randn(9 * C, C, device="cuda", generator=g) / (3 * C**0.5)
    return [padded.half(), weights.half()]


def _torch_gemm(p: object, b: object, to_nchw: bool) -> object:
    import torch

    rows = torch.cat([p, p.new_zeros(SHIFTS[-1], C)])  # type: ignore[attr-defined]
    product = torch.cat([rows[s : s + GRID] for s in SHIFTS], dim=1) @ b
    if not to_nchw:
        return product
    return product.reshape(N, P, P, C)[:, :HW, :HW].permute(0, 3, 1, 2).contiguous()


gemm_bytes = 2 * (GRID * C + 9 * C * C + N * C * HW * HW)


def main() -> None:
    harness.main(cases, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
