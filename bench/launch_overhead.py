"""Launch overhead: where the host time of one small mlc call goes, and what CUDA graphs save.

    python bench/launch_overhead.py [--rounds 3] [--calls 2000]

CUDA graphs (issue 17: a chain of >= 10 small kernels >= 1.5x faster with the graph, in one
run). Chains of small kernels (matmul + tanh, N times; tile-merge-identical-kernels compiles one
kernel, launched N times), each compiled with `cuda_graph=False` (plain launches, one driver call
per kernel from Python) and `cuda_graph=True` (one graph replay per call), called through
`run_on_device` with PyTorch tensors and fixed outputs. Per round, plain and graph interleaved,
on one stream (first a PyTorch side stream, then PyTorch's default stream, which is the legacy
default stream, as a `torch.compile` partition calls it):

* back to back: wall time per call over `--calls` calls without synchronising (host and device
  overlap: the larger of the two bounds it); the ratio plain / graph is the figure of the issue;
* host: the time one call takes to return, the GPU idle before it (synchronised before each);
* device: CUDA events around one call, the GPU idle before it. For the graph, all launches are
  enqueued at once, so this is the device time of the chain itself (kernels and the gaps
  between them); for plain launches it is the larger of that and the host's launch cadence.

A path is host-bound when its host time exceeds the chain's device time: then the ratio moves
with the host CPU (and with the stream: launches on the legacy default stream cost the driver
more), which is why one chain measured 1.25x and 1.79x in two runs. Rounds are all printed, with
their median. Then the automatic choice (`cuda_graph` left out) on a chain, and the host cost of
the parts of one plain call (a bare enqueue, cuda-python against ctypes, PyTorch's accessors),
with a cProfile of `run_on_device`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import mlc  # noqa: E402
from elementwise import chain_source  # noqa: E402


def per_call_us(function, calls: int = 2000) -> float:
    """Wall time per call over `calls` back-to-back calls (after 200 warm-up calls), synchronised
    only at the ends."""
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


def chain_of_kernels(length: int, rows: int, features: int) -> str:
    """`length` layers of tanh(x @ w) on a `rows` x `features` activation, one weight shared."""
    t, w = f"tensor<{rows}x{features}xf32>", f"tensor<{features}x{features}xf32>"
    lines, value = [f"func.func @chain(%x: {t}, %w: {w}) -> {t} {{"], "%x"
    for index in range(length):
        lines.append(f"  %m{index} = graph.matmul {value}, %w : ({t}, {w}) -> {t}")
        lines.append(f"  %t{index} = graph.tanh %m{index} : {t}")
        value = f"%t{index}"
    lines += [f"  func.return {value} : {t}", "}"]
    return "\n".join(lines)


CHAINS = {
    "12 x tanh(64x64 @ 64x64)": (12, 64, 64),
    "16 x tanh(16x64 @ 64x64)": (16, 16, 64),
    "16 x tanh(1x512 @ 512x512)": (16, 1, 512),
}
"""Name: (kernels, rows, features). The first is the chain measured before (1.25x and 1.79x);
the second has smaller kernels (one block of 64 threads each); the third is a batch-1 layer stack
(a GEMV per layer, 8 blocks of 32 threads)."""


def host_us(function, calls: int = 300) -> float:
    """Median time for one call to return, the device idle before each."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6


def device_us(function, calls: int = 300) -> float:
    """Median of CUDA events around one call on PyTorch's current stream, the device idle before."""
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(calls):
        torch.cuda.synchronize()
        start.record()
        function()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def compare_chain(name: str, shape: tuple[int, int, int], rounds: int, calls: int) -> list[dict]:
    """Rounds of plain against graph for one chain (see the module docstring); rows to print."""
    length, rows, features = shape
    source = chain_of_kernels(length, rows, features)
    plain = mlc.compile(source, device="cuda", cuda_graph=False)
    graphed = mlc.compile(source, device="cuda", cuda_graph=True)
    x = torch.randn(rows, features, device="cuda") * 0.2
    w = torch.randn(features, features, device="cuda") * (1.0 / features**0.5)
    out_plain, out_graph = torch.empty(rows, features, device="cuda"), torch.empty(rows, features, device="cuda")
    results = []
    for stream_name, stream in (("side stream", torch.cuda.Stream()), ("default stream", torch.cuda.default_stream())):
        with torch.cuda.stream(stream):
            call_plain = lambda: plain.run_on_device(x, w, outputs=[out_plain])  # noqa: E731
            call_graph = lambda: graphed.run_on_device(x, w, outputs=[out_graph])  # noqa: E731
            for round_index in range(rounds):
                row = {"chain": name, "stream": stream_name, "round": round_index,
                       "plain_us": per_call_us(call_plain, calls), "graph_us": per_call_us(call_graph, calls),
                       "plain_host_us": host_us(call_plain), "graph_host_us": host_us(call_graph),
                       "plain_device_us": device_us(call_plain), "graph_device_us": device_us(call_graph)}  # fmt: skip
                row["speedup"] = row["plain_us"] / row["graph_us"]
                results.append(row)
            torch.cuda.synchronize()
            row["equal"] = torch.equal(out_plain, out_graph)
    return results


def print_rows(rows: list[dict]) -> None:
    print(f"{'chain':28} {'stream':15} {'round':>5} {'plain us':>9} {'graph us':>9} {'ratio':>6} "
          f"{'plain host':>10} {'graph host':>10} {'plain dev':>9} {'graph dev':>9}  bound (plain)")  # fmt: skip
    for row in rows:
        bound = "host" if row["plain_host_us"] > row["graph_device_us"] else "device"
        print(f"{row['chain']:28} {row['stream']:15} {row['round']:5d} {row['plain_us']:9.1f} {row['graph_us']:9.1f} "
              f"{row['speedup']:5.2f}x {row['plain_host_us']:10.1f} {row['graph_host_us']:10.1f} "
              f"{row['plain_device_us']:9.1f} {row['graph_device_us']:9.1f}  {bound}"
              + (f"  (results equal: {row['equal']})" if "equal" in row else ""))  # fmt: skip
    by_case: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        by_case.setdefault((row["chain"], row["stream"]), []).append(row["speedup"])
    for (chain, stream), ratios in by_case.items():
        print(f"  {chain}, {stream}: graph {statistics.median(ratios):.2f}x faster (median of {len(ratios)}; "
              f"min {min(ratios):.2f}x, max {max(ratios):.2f}x)")


def automatic_choice(calls: int) -> None:
    """The default (`cuda_graph` left out) against plain launches, on PyTorch's default stream."""
    source = chain_of_kernels(*CHAINS["16 x tanh(16x64 @ 64x64)"])
    plain = mlc.compile(source, device="cuda", cuda_graph=False)
    automatic = mlc.compile(source, device="cuda")
    x, w = torch.randn(16, 64, device="cuda") * 0.2, torch.randn(64, 64, device="cuda") * 0.125
    out_plain, out_auto = torch.empty(16, 64, device="cuda"), torch.empty(16, 64, device="cuda")
    rounds = [(per_call_us(lambda: plain.run_on_device(x, w, outputs=[out_plain]), calls),
               per_call_us(lambda: automatic.run_on_device(x, w, outputs=[out_auto]), calls)) for _ in range(3)]  # fmt: skip
    plain_us, auto_us = sorted(r[0] for r in rounds)[1], sorted(r[1] for r in rounds)[1]
    torch.cuda.synchronize()
    print(f"16-kernel chain, default (automatic: graphs {automatic.program.uses_cuda_graphs}), PyTorch's default stream: "
          f"{auto_us:8.2f} us/call against {plain_us:8.2f} plain ({plain_us / auto_us:.2f}x; equal: {torch.equal(out_plain, out_auto)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = [row for name, shape in CHAINS.items() for row in compare_chain(name, shape, args.rounds, args.calls)]
    print_rows(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    automatic_choice(args.calls)
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
