"""Who runs PyTorch's fused attention on CUDA, the backend's `attention="auto"` rule.

On CUDA the dispatcher has already chosen one of PyTorch's fused SDPA kernels (cuDNN, flash,
memory-efficient) when the graph reaches the backend. mlc can compile that node as attention (its
GEMM-chain kernel) or leave it to PyTorch. The kernels differ in speed, but so does the graph
around them: left in PyTorch, the attention splits the graph into two mlc partitions, and its
q, k, v and output become boundary tensors in PyTorch's layouts instead of views that mlc's chain
kernel reads and writes in place inside one program.

The rule (`decide`), per attention node, from its fake values (nothing is timed):

* `chain_extra_s`: the time mlc's chain kernel takes beyond the fused kernel's, estimated as
  the fused kernel's time at `FUSED_ATTENTION_RATE` times (`slowdown` - 1), the chain's measured
  slowdown against it, which depends on the head dimension and on whether the chain runs on
  warpgroup products (sm_90, `chain_wgmma.py`) or on mma.sync;
* `split_s`: what keeping it in PyTorch costs: each boundary tensor (q, k, v, the output) moves
  through HBM `SPLIT_PASSES` more times (the layout copies to and from PyTorch's contiguous
  layout, the reads of the kernels that no longer read the projection in place), plus
  `SPLIT_HOST_S` of host time for the second partition's call and PyTorch's dispatch around it;
* mlc takes the attention when `chain_extra_s <= split_s`: the attention's FLOPs grow with the
  sequence squared and the boundary bytes with the sequence, so short sequences (and small
  batches) go to mlc, long ones to PyTorch.

Measured on an H100 (BENCHMARKS.md, `bench/models.py`, `bench/chain_blocks.py`), the
TransformerEncoderLayer of 512 tokens, d 64: at batch 8 mlc's chain takes 37.2 µs against cuDNN's
25.7 (slowdown 1.45), the graph split around cuDNN's kernel 279.2 µs against 229.2 as one
partition, i.e. ~38 µs of split for 32 MiB of boundary tensors; at batch 1 the split cost 118 µs
of host time (246.3 against 128.6 µs). Head dim 128 (64 x 1024 tokens): the chain 115.6 µs against
65.2 (1.77); 64 x 4096 tokens, d 64: 873 against 603 (1.45). The mma.sync chain (no wgmma): 1.5 at
d 64, 2.2 at d 128.

Limits: the constants are one H100's; on other GPUs the rates were not measured (the ratios
stand in). f16/bf16 rates: an f32 attention (the chain on CUDA cores, PyTorch's memory-efficient
kernel) is estimated with them too. The split's cost is the same for any graph (the boundary tensors' bytes), not the
graph's actual layout copies; the host term is paid in full only by host-bound graphs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mlc.frontend.torch.emitter import fake_value, target_name
from mlc.targets import WGMMA_CHAIN_EXTENT

FUSED_ATTENTION_RATE = 334e12
"""FLOP/s of PyTorch's fused attention (cuDNN's sm_90 kernel: 8.6 GFLOP in 25.7 µs, H100)."""
WGMMA_SLOWDOWN = {64: 1.45, 128: 1.8}
"""mlc's chain on warpgroup products against the fused kernel, by head dim (the next larger key)."""
MMA_SYNC_SLOWDOWN = {64: 1.6, 128: 2.2}
"""mlc's mma.sync chain (no wgmma: before sm_90) against the fused kernel, by head dim."""
HBM_BANDWIDTH = 3.35e12
"""Bytes/s of the device memory (H100 SXM's HBM3)."""
SPLIT_PASSES = 4
"""Extra passes over each boundary tensor a split costs (~38 µs over 32 MiB at batch 8, H100)."""
SPLIT_HOST_S = 30e-6
"""Host time of a second partition and PyTorch's dispatch around the attention (a lower bound:
118 µs were measured at batch 1, host-bound; a device-bound graph hides part of it)."""


@dataclass(frozen=True)
class AttentionChoice:
    """The estimate behind one attention node's placement."""

    in_pytorch: bool
    chain_extra_s: float
    split_s: float

    def why(self) -> str:
        extra, split = self.chain_extra_s * 1e6, self.split_s * 1e6
        if self.in_pytorch:
            return (
                f"PyTorch's fused attention kernel: mlc's chain kernel would take ~{extra:.0f} us more, "
                f"more than the ~{split:.0f} us a split around it costs (attention='auto'; 'mlc' compiles it)"
            )
        return (
            f"mlc's chain kernel: ~{extra:.0f} us slower than PyTorch's fused kernel, "
            f"less than the ~{split:.0f} us a split around it would cost"
        )


def attention_flops(node: torch.fx.Node) -> float:
    """4 * batch * heads * queries * keys * head dim: the attention's two products."""
    query, key = (fake_value(arg) for arg in node.args[:2])
    return 4.0 * query.numel() * key.shape[-2]


def boundary_bytes(node: torch.fx.Node) -> int:
    """Bytes of q, k, v and the output (q's shape with v's head dim)."""
    query, key, value = (fake_value(arg) for arg in node.args[:3])
    inputs = sum(t.numel() * t.element_size() for t in (query, key, value))
    return inputs + query.numel() // query.shape[-1] * value.shape[-1] * value.element_size()


def slowdown(head_dim: int, wgmma: bool) -> float:
    """The chain kernel's time over the fused kernel's at this head dim (see the module docstring):
    on a wgmma device, head dims whose power of two the warpgroup blocks do not take (below 64,
    above 256: `WGMMA_CHAIN_EXTENT`) run the mma.sync chain."""
    step, most = WGMMA_CHAIN_EXTENT
    padded = 1 << max(0, (head_dim - 1).bit_length())
    table = WGMMA_SLOWDOWN if wgmma and padded % step == 0 and padded <= most else MMA_SYNC_SLOWDOWN
    return next((ratio for dim, ratio in sorted(table.items()) if head_dim <= dim), max(table.values()))


def decide(node: torch.fx.Node, wgmma: bool) -> AttentionChoice:
    """The `attention="auto"` placement of one fused attention node (see the module docstring)."""
    fused_s = attention_flops(node) / FUSED_ATTENTION_RATE
    extra = fused_s * (slowdown(fake_value(node.args[0]).shape[-1], wgmma) - 1.0)
    split = SPLIT_PASSES * boundary_bytes(node) / HBM_BANDWIDTH + SPLIT_HOST_S
    return AttentionChoice(extra > split, extra, split)


def device_has_wgmma() -> bool:
    """Whether the current CUDA device runs mlc's chain on warpgroup products (sm_90)."""
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


def is_fused_attention(node: torch.fx.Node) -> bool:
    from mlc.frontend.torch.neural import FUSED_ATTENTION_OPS

    return node.op == "call_function" and any(target_name(node).startswith(f"aten.{name}.") for name in FUSED_ATTENTION_OPS)
