"""Where the host time of one small mlc call goes (a diagnostic for launch overhead).

    python bench/launch_overhead.py

Compiles the 4-op chain on 64x1024 f32, then measures host wall time per call (no device
synchronisation inside the loop) of: PyTorch eager, a bare kernel enqueue through mlc's CUDA
layer, and `run_on_device` with torch tensors; then profiles `run_on_device` with cProfile and
prints the functions that take the most time.

CUDA graphs (issue 17): a chain of 12 kernels (64x64 matmul + tanh, twelve times) called through
`run_on_device` with PyTorch tensors, plain launches (`cuda_graph=False`) against `cuda_graph=True`
(one graph replay per call), in the same run: time per call over back-to-back calls (host and
device together), and the results compared. The graphed program runs on a stream of its own;
PyTorch's current stream is set to it around its calls so both sides take the same fast argument
path. Then the automatic choice (`cuda_graph` left out) on the same chain and on PyTorch's default
stream, as a `torch.compile` partition calls it, with the rule's decision printed.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import mlc  # noqa: E402
from elementwise import chain_source  # noqa: E402


def per_call_us(function, calls: int = 2000) -> float:
    for _ in range(200):
        function()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        function()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def ctypes_launcher(kernel):
    """cuLaunchKernel called through ctypes on the kernel's prepared parameter block."""
    import ctypes

    library = ctypes.CDLL("libcuda.so.1")
    launch = library.cuLaunchKernel
    launch.restype = ctypes.c_int
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    enqueue = kernel._enqueue.__self__
    handle, parameters = int(enqueue.handle), kernel.arguments.address
    grid, block = kernel._grid, kernel._block

    def call():
        return launch(handle, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, None, parameters, None)

    return call


def chain_of_kernels(length: int = 12) -> str:
    t = "tensor<64x64xf32>"
    lines, value = [f"func.func @chain(%x: {t}, %w: {t}) -> {t} {{"], "%x"
    for index in range(length):
        lines.append(f"  %m{index} = graph.matmul {value}, %w : ({t}, {t}) -> {t}")
        lines.append(f"  %t{index} = graph.tanh %m{index} : {t}")
        value = f"%t{index}"
    lines += [f"  func.return {value} : {t}", "}"]
    return "\n".join(lines)


def cuda_graph_comparison() -> None:
    source = chain_of_kernels()
    plain = mlc.compile(source, device="cuda", cuda_graph=False)
    graphed = mlc.compile(source, device="cuda", cuda_graph=True)
    automatic = mlc.compile(source, device="cuda")
    x, w = (torch.randn(64, 64, device="cuda") * 0.2 for _ in range(2))
    out_plain, out_graph = torch.empty(64, 64, device="cuda"), torch.empty(64, 64, device="cuda")
    graph_stream = torch.cuda.ExternalStream(int(graphed.program.executor.stream.handle))
    torch.cuda.synchronize()

    def call_graphed():
        with torch.cuda.stream(graph_stream):
            graphed.run_on_device(x, w, outputs=[out_graph])

    rounds = [(per_call_us(lambda: plain.run_on_device(x, w, outputs=[out_plain])), per_call_us(call_graphed)) for _ in range(3)]
    plain_us = sorted(r[0] for r in rounds)[1]
    graph_us = sorted(r[1] for r in rounds)[1]
    torch.cuda.synchronize()
    same = torch.equal(out_plain, out_graph)
    print(f"12-kernel chain, plain launches : {plain_us:8.2f} us/call")
    print(f"12-kernel chain, CUDA graph     : {graph_us:8.2f} us/call  ({plain_us / graph_us:.2f}x; results equal: {same})")
    out_auto = torch.empty(64, 64, device="cuda")
    rounds = [(per_call_us(lambda: plain.run_on_device(x, w, outputs=[out_plain])),
               per_call_us(lambda: automatic.run_on_device(x, w, outputs=[out_auto]))) for _ in range(3)]  # fmt: skip
    plain_us, auto_us = sorted(r[0] for r in rounds)[1], sorted(r[1] for r in rounds)[1]
    torch.cuda.synchronize()
    print(f"12-kernel chain, default (automatic: graphs {automatic.program.uses_cuda_graphs}), PyTorch's default stream: "
          f"{auto_us:8.2f} us/call against {plain_us:8.2f} plain ({plain_us / auto_us:.2f}x; equal: {torch.equal(out_plain, out_auto)})")


def main() -> None:
    cuda_graph_comparison()
    x = torch.randn(64, 1024, device="cuda")
    out = torch.empty_like(x)
    compiled = mlc.compile(chain_source((64, 1024)), device="cuda", cuda_graph=False)
    kernel = compiled.program._kernels[0]
    print(f"pytorch eager 4 ops : {per_call_us(lambda: torch.sigmoid(torch.relu(x * 2 + 1))):8.2f} us/call")
    print(f"run_on_device       : {per_call_us(lambda: compiled.run_on_device(x, outputs=[out])):8.2f} us/call")
    # The kernel's parameters now point at x and out: launching it alone is the floor.
    print(f"bare enqueue        : {per_call_us(kernel.launch):8.2f} us/call")
    print(f"torch accessors     : {per_call_us(lambda: (x.data_ptr(), x.get_device(), x.is_contiguous(), tuple(x.shape), x.dtype, x.requires_grad)):8.2f} us")
    print(f"torch array iface   : {per_call_us(lambda: x.__cuda_array_interface__):8.2f} us")
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw_stream is not None:
        print(f"torch raw stream    : {per_call_us(lambda: raw_stream(0)):8.2f} us (value {raw_stream(0)})")
    print(f"torch current_stream: {per_call_us(lambda: torch.cuda.current_stream()):8.2f} us")
    launch_with_ctypes = ctypes_launcher(kernel)
    print(f"ctypes cuLaunchKernel: {per_call_us(launch_with_ctypes):8.2f} us/call")
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(3000):
        compiled.run_on_device(x, outputs=[out])
    profile.disable()
    torch.cuda.synchronize()
    pstats.Stats(profile).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
