"""`mlc.compile(..., cuda_graph=True)`: the launches of a call replayed from a CUDA graph.

On the GPU, a chain of 12 matmul kernels (one distinct kernel, launched 12 times) gives the same
results with graphs as with plain launches, call after call with new data; outputs at new
addresses get a graph of their own, and the same addresses replay the graph already captured.
Graphs replay on the caller's stream (PyTorch's current one for PyTorch tensors): an output
zeroed, or an input written, by PyTorch after a long spin on that stream is zeroed or written
before the replay (the replay used to go to the program's own stream, unordered with PyTorch's,
which racecheck's slowdown exposed). Without a GPU, asking for graphs on the CPU is a clear error.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc

T = "tensor<64x64xf32>"
SPIN_CYCLES = 50_000_000
"""`torch.cuda._sleep` cycles (tens of milliseconds) before PyTorch touches a buffer on its stream."""


def chain_source(length: int = 12) -> str:
    lines, value = [f"func.func @chain(%x: {T}, %w: {T}) -> {T} {{"], "%x"
    for index in range(length):
        lines.append(f"  %m{index} = graph.matmul {value}, %w : ({T}, {T}) -> {T}")
        lines.append(f"  %t{index} = graph.tanh %m{index} : {T}")
        value = f"%t{index}"
    lines += [f"  func.return {value} : {T}", "}"]
    return "\n".join(lines)


def test_cuda_graphs_need_the_gpu():
    with pytest.raises(mlc.ArgumentError, match="cuda_graph=True .* needs device='cuda'"):
        mlc.compile(chain_source(2), device="cpu", cuda_graph=True)
    with pytest.raises(mlc.ArgumentTypeError, match="cuda_graph must be True, False or None"):
        mlc.compile(chain_source(2), device="cpu", cuda_graph="yes")


@pytest.mark.gpu
def test_graph_replay_equals_plain_launches():
    source = chain_source()
    plain = mlc.compile(source, device="cuda", cuda_graph=False)
    graphed = mlc.compile(source, device="cuda", cuda_graph=True)
    assert not plain.program.uses_cuda_graphs
    assert len(graphed.program.plan.launches) == 12
    rng = np.random.default_rng(0)
    for _ in range(3):  # new data each call: the staging buffers are fixed, their contents change
        x, w = (rng.standard_normal((64, 64)).astype(np.float32) * 0.2 for _ in range(2))
        np.testing.assert_array_equal(graphed(x, w), plain(x, w))
    assert len(graphed.program._graphs) == 1  # one capture, replayed


def _torch_plain_and_graphed():  # type: ignore[no-untyped-def]
    """PyTorch, and the chain compiled without and with CUDA graphs."""
    torch = pytest.importorskip("torch")
    source = chain_source()
    return torch, mlc.compile(source, device="cuda", cuda_graph=False), mlc.compile(source, device="cuda", cuda_graph=True)


@pytest.mark.gpu
def test_graphs_follow_the_output_buffers():
    torch, plain, graphed = _torch_plain_and_graphed()
    x, w = (torch.randn(64, 64, device="cuda") * 0.2 for _ in range(2))
    outputs = [torch.empty(64, 64, device="cuda") for _ in range(3)]
    expected = torch.empty(64, 64, device="cuda")
    plain.run_on_device(x, w, outputs=[expected])
    for out in outputs + outputs:  # three addresses, each twice
        torch.cuda._sleep(SPIN_CYCLES)  # the zeroing comes late on PyTorch's stream: the replay must wait
        out.zero_()
        graphed.run_on_device(x, w, outputs=[out])
        torch.cuda.synchronize()
        assert torch.equal(out, expected)
    assert len(graphed.program._graphs) == 3


@pytest.mark.gpu
def test_graphs_replay_on_the_callers_stream():
    torch, plain, graphed = _torch_plain_and_graphed()
    w = torch.randn(64, 64, device="cuda") * 0.2
    side = torch.cuda.Stream()
    for explicit in (False, True, False):
        x, values = torch.zeros(64, 64, device="cuda"), torch.randn(64, 64, device="cuda") * 0.2
        expected, out = torch.empty(64, 64, device="cuda"), torch.empty(64, 64, device="cuda")
        plain.run_on_device(values, w, outputs=[expected])
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(SPIN_CYCLES)
            x.copy_(values)  # written late, on the side stream
            if not explicit:
                graphed.run_on_device(x, w, outputs=[out])  # PyTorch's current stream: the side stream
        if explicit:
            graphed.run_on_device(x, w, outputs=[out], stream=side)
        side.synchronize()
        assert torch.equal(out, expected)


@pytest.mark.gpu
def test_the_default_graphs_small_launches_and_follows_pytorchs_stream():
    """`cuda_graph` left out: the 12 small kernels replay from a graph (graph_choice.py), equal to
    plain launches call after call, with the inputs rewritten in place between calls and the
    call made on a side stream that PyTorch writes the input on late; a large matmul does not."""
    torch, plain, _ = _torch_plain_and_graphed()
    automatic = mlc.compile(chain_source(), device="cuda")
    assert automatic.program.uses_cuda_graphs
    x, w = torch.empty(64, 64, device="cuda"), torch.randn(64, 64, device="cuda") * 0.2
    expected, out = torch.empty(64, 64, device="cuda"), torch.empty(64, 64, device="cuda")
    side = torch.cuda.Stream()
    for seed in range(3):
        values = torch.randn(64, 64, device="cuda", generator=torch.Generator("cuda").manual_seed(seed)) * 0.2
        plain.run_on_device(values, w, outputs=[expected])
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(SPIN_CYCLES)
            x.copy_(values)  # the same address, new contents, written late on the side stream
            automatic.run_on_device(x, w, outputs=[out])
        side.synchronize()
        assert torch.equal(out, expected)
    assert len(automatic.program._graphs) == 1
    large = "tensor<2048x2048xf32>"
    matmul = f"func.func @mm(%a: {large}, %b: {large}) -> {large} {{\n  %0 = graph.matmul %a, %b : ({large}, {large}) -> {large}\n  func.return %0 : {large}\n}}"
    assert not mlc.compile(matmul, device="cuda").program.uses_cuda_graphs
