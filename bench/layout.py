"""Layout and window benchmarks: mlc vs PyTorch eager.

    python bench/layout.py [--json bench/results/layout.json]

Cases: the transpose of an 8192x8192 f32 matrix (bandwidth: 2 x 4 x 8192^2 bytes; PyTorch's
`a.t().contiguous()`), judged against the device copy ceiling; a 3x3 max pool with padding over
a 32x64x112x112 f32 activation (PyTorch's `max_pool2d`); 3x3 ResNet convolutions, N=8, 64->64
channels, 56x56, f32, and issue 15's layer N=32, 256->256 channels, 56x56, in f32 and f16 (cuDNN
through PyTorch, TF32 off; NCHW), and in f16 NHWC (PyTorch channels-last): compute-bound, so
their GB/s column means little; their time and speed relative to PyTorch are the figures.
Depthwise 3x3 convolutions (32x256x56x56, f32 and f16; cuDNN through PyTorch with groups=C) are
bandwidth-bound: their GB/s against the copy ceiling is the figure. `--only TEXT` runs the cases
whose name contains TEXT.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import Case  # noqa: E402


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def transpose_source(size: int) -> str:
    t = tensor((size, size))
    return f"""func.func @transpose(%a: {t}) -> {t} {{
  %0 = graph.transpose %a perm [1, 0] : {t} to {t}
  func.return %0 : {t}
}}"""


def pool_source(shape: tuple[int, int, int, int]) -> str:
    n, c, h, w = shape
    x, y = tensor(shape), tensor((n, c, (h - 1) // 2 + 1, (w - 1) // 2 + 1))
    return f"""func.func @pool(%x: {x}) -> {y} {{
  %0 = graph.max_pool2d %x kernel [3, 3] strides [2, 2] pads [1, 1, 1, 1] : {x} to {y}
  func.return %0 : {y}
}}"""


def conv_source(n: int, c: int, size: int, element: str = "f32") -> str:
    x, w = tensor((n, c, size, size), element), tensor((c, c, 3, 3), element)
    return f"""func.func @conv(%x: {x}, %w: {w}) -> {x} {{
  %0 = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : ({x}, {w}) -> {x}
  func.return %0 : {x}
}}"""


def _conv_case(name: str, source: str, reference: object, n: int, c: int, hw: int, element: str, nhwc: bool = False) -> Case:
    """A 3x3 convolution of c -> c channels over n images of hw^2 (NHWC activations if `nhwc`)."""
    import torch

    dtype = torch.float32 if element == "f32" else torch.float16

    def make_inputs(g: object) -> list[object]:
        x = torch.randn(*((n, hw, hw, c) if nhwc else (n, c, hw, hw)), device="cuda", generator=g)
        w = torch.randn(c, c, 3, 3, device="cuda", generator=g) / (3 * c**0.5)
        return [x.to(dtype), w.to(dtype)]

    return Case(
        name,
        make_inputs,
        reference,  # type: ignore[arg-type]
        source,
        bytes_moved=(4 if element == "f32" else 2) * (2 * n * c * hw * hw + c * c * 9),
        tolerance=(1e-3, 1e-3) if element == "f32" else (2e-2, 2e-2),
    )


def conv_case(n: int, c: int, hw: int, element: str) -> Case:
    import torch

    reference = lambda x, w: torch.nn.functional.conv2d(x, w, padding=1)  # noqa: E731
    return _conv_case(f"conv 3x3 {n}x{c}x{hw}^2 {element}", conv_source(n, c, hw, element), reference, n, c, hw, element)


def conv_nhwc_source(n: int, c: int, size: int, element: str) -> str:
    """The convolution of an NHWC activation into an NHWC result (transposes around conv2d)."""
    x, w, t = tensor((n, size, size, c), element), tensor((c, c, 3, 3), element), tensor((n, c, size, size), element)
    return f"""func.func @conv(%x: {x}, %w: {w}) -> {x} {{
  %0 = graph.transpose %x perm [0, 3, 1, 2] : {x} to {t}
  %1 = graph.conv2d %0, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : ({t}, {w}) -> {t}
  %2 = graph.transpose %1 perm [0, 2, 3, 1] : {t} to {x}
  func.return %2 : {x}
}}"""


def conv_nhwc_case(n: int, c: int, hw: int, element: str) -> Case:
    """PyTorch's channels-last convolution (cuDNN's NHWC kernels) against mlc's NHWC graph."""
    import torch

    channels_last: dict[int, object] = {}  # the weights in cuDNN's NHWC layout, made once (not timed)

    def reference(x: object, w: object) -> object:
        nchw = x.permute(0, 3, 1, 2)  # a channels-last view of the NHWC buffer
        weights = channels_last.setdefault(id(w), w.contiguous(memory_format=torch.channels_last))
        return torch.nn.functional.conv2d(nchw, weights, padding=1).permute(0, 2, 3, 1)

    source = conv_nhwc_source(n, c, hw, element)
    return _conv_case(f"conv 3x3 NHWC {n}x{c}x{hw}^2 {element}", source, reference, n, c, hw, element, nhwc=True)


def depthwise_source(n: int, c: int, size: int, element: str) -> str:
    x, w = tensor((n, c, size, size), element), tensor((c, 1, 3, 3), element)
    return f"""func.func @depthwise(%x: {x}, %w: {w}) -> {x} {{
  %0 = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group {c} : ({x}, {w}) -> {x}
  func.return %0 : {x}
}}"""


def depthwise_case(n: int, c: int, hw: int, element: str) -> Case:
    """A 3x3 depthwise convolution (MobileNet's): bandwidth-bound, judged against the copy ceiling."""
    import torch

    dtype = torch.float32 if element == "f32" else torch.float16

    def make_inputs(g: object) -> list[object]:
        x = torch.randn(n, c, hw, hw, device="cuda", generator=g)
        return [x.to(dtype), (torch.randn(c, 1, 3, 3, device="cuda", generator=g) / 3).to(dtype)]

    return Case(
        f"depthwise 3x3 {n}x{c}x{hw}^2 {element}",
        make_inputs,
        lambda x, w: torch.nn.functional.conv2d(x, w, padding=1, groups=c),
        depthwise_source(n, c, hw, element),
        bytes_moved=(4 if element == "f32" else 2) * (2 * n * c * hw * hw + 9 * c),
        tolerance=(1e-4, 1e-4) if element == "f32" else (1e-2, 1e-2),
    )


def cases() -> list[Case]:
    import torch

    torch.backends.cudnn.allow_tf32 = False
    size, pool_shape, (n, c, hw) = 8192, (32, 64, 112, 112), (8, 64, 56)
    pooled = 32 * 64 * 56 * 56
    return [
        Case(
            "transpose 8192^2 f32",
            lambda g: [torch.randn(size, size, device="cuda", generator=g)],
            lambda a: a.t().contiguous(),
            transpose_source(size),
            bytes_moved=2 * 4 * size * size,
            tolerance=(0.0, 0.0),
        ),
        Case(
            "max_pool 3x3/2 32x64x112^2 f32",
            lambda g: [torch.randn(*pool_shape, device="cuda", generator=g)],
            lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
            pool_source(pool_shape),
            bytes_moved=4 * (32 * 64 * 112 * 112 + pooled),
            tolerance=(0.0, 0.0),
        ),
        Case(
            "conv 3x3 8x64x56^2 f32",
            lambda g: [torch.randn(n, c, hw, hw, device="cuda", generator=g), torch.randn(c, c, 3, 3, device="cuda", generator=g) / 24],
            lambda x, w: torch.nn.functional.conv2d(x, w, padding=1),
            conv_source(n, c, hw),
            bytes_moved=4 * (2 * n * c * hw * hw + c * c * 9),
            tolerance=(1e-3, 1e-3),
        ),
        conv_case(32, 256, 56, "f32"),
        conv_case(32, 256, 56, "f16"),
        conv_nhwc_case(32, 256, 56, "f16"),
        depthwise_case(32, 256, 56, "f32"),
        depthwise_case(32, 256, 56, "f16"),
    ]


def main() -> None:
    harness.main(cases, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
