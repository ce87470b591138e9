"""`mlc.compile(..., cuda_graph=True)`: the launches of a call replayed from a CUDA graph.

On the GPU, a chain of 12 matmul kernels (one distinct kernel, launched 12 times) gives the same
results with graphs as with plain launches, call after call with new data; outputs at new
addresses get a graph of their own, and the same addresses replay the graph already captured.
Without a GPU, asking for graphs on the CPU is a clear error.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc

T = "tensor<64x64xf32>"


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
    with pytest.raises(mlc.ArgumentTypeError, match="cuda_graph must be True or False"):
        mlc.compile(chain_source(2), device="cpu", cuda_graph="yes")


@pytest.mark.gpu
def test_graph_replay_equals_plain_launches():
    source = chain_source()
    plain = mlc.compile(source, device="cuda")
    graphed = mlc.compile(source, device="cuda", cuda_graph=True)
    assert len(graphed.program.plan.launches) == 12
    rng = np.random.default_rng(0)
    for _ in range(3):  # new data each call: the staging buffers are fixed, their contents change
        x, w = (rng.standard_normal((64, 64)).astype(np.float32) * 0.2 for _ in range(2))
        np.testing.assert_array_equal(graphed(x, w), plain(x, w))
    assert len(graphed.program._graphs) == 1  # one capture, replayed


@pytest.mark.gpu
def test_graphs_follow_the_output_buffers():
    torch = pytest.importorskip("torch")
    source = chain_source()
    plain = mlc.compile(source, device="cuda")
    graphed = mlc.compile(source, device="cuda", cuda_graph=True)
    x, w = (torch.randn(64, 64, device="cuda") * 0.2 for _ in range(2))
    outputs = [torch.empty(64, 64, device="cuda") for _ in range(3)]
    expected = torch.empty(64, 64, device="cuda")
    plain.run_on_device(x, w, outputs=[expected])
    for out in outputs + outputs:  # three addresses, each twice
        out.zero_()
        graphed.run_on_device(x, w, outputs=[out])
        torch.cuda.synchronize()
        assert torch.equal(out, expected)
    assert len(graphed.program._graphs) == 3
