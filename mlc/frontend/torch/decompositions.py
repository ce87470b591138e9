"""The decompositions the backend traces with: PyTorch's core-ATen table, plus the fused
inference kernel of `nn.TransformerEncoderLayer`.

In eval mode without autograd, `TransformerEncoderLayer.forward` calls one opaque op,
`aten._transformer_encoder_layer_fwd`, which no compiler can look into. `transformer_encoder_layer`
below restates it in ATen ops that mlc maps (linear, layer_norm, scaled dot-product attention,
relu/gelu), following the module's own slow path: post-norm `x = norm1(x + sa(x)); x = norm2(x +
ff(x))`, or pre-norm `x = x + sa(norm1(x)); x = x + ff(norm2(x))`, with batch-first inputs (the
fast path's only layout). Attention masks are not restated: with a mask the op stays as it is,
and the backend runs it in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F


def _attention(x: torch.Tensor, heads: int, qkv_weight: torch.Tensor, qkv_bias: torch.Tensor,
               proj_weight: torch.Tensor, proj_bias: torch.Tensor) -> torch.Tensor:  # fmt: skip
    batch, length, width = x.shape
    q, k, v = F.linear(x, qkv_weight, qkv_bias).chunk(3, dim=-1)

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(batch, length, heads, width // heads).transpose(1, 2)

    attended = F.scaled_dot_product_attention(split(q), split(k), split(v))
    return F.linear(attended.transpose(1, 2).reshape(batch, length, width), proj_weight, proj_bias)


def transformer_encoder_layer(
    src: torch.Tensor, embed_dim: int, num_heads: int, qkv_weight: torch.Tensor, qkv_bias: torch.Tensor,
    proj_weight: torch.Tensor, proj_bias: torch.Tensor, use_gelu: bool, norm_first: bool, eps: float,
    norm_weight_1: torch.Tensor, norm_bias_1: torch.Tensor, norm_weight_2: torch.Tensor, norm_bias_2: torch.Tensor,
    ffn_weight_1: torch.Tensor, ffn_bias_1: torch.Tensor, ffn_weight_2: torch.Tensor, ffn_bias_2: torch.Tensor,
    mask: torch.Tensor | None = None, mask_type: int | None = None,
) -> Any:  # fmt: skip
    """`aten._transformer_encoder_layer_fwd` in ATen ops (NotImplemented with a mask)."""
    if mask is not None:
        return NotImplemented

    def norm1(t: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(t, (embed_dim,), norm_weight_1, norm_bias_1, eps)

    def norm2(t: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(t, (embed_dim,), norm_weight_2, norm_bias_2, eps)

    def attention(t: torch.Tensor) -> torch.Tensor:
        return _attention(t, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias)

    def feed_forward(t: torch.Tensor) -> torch.Tensor:
        hidden = F.linear(t, ffn_weight_1, ffn_bias_1)
        hidden = F.gelu(hidden) if use_gelu else F.relu(hidden)
        return F.linear(hidden, ffn_weight_2, ffn_bias_2)

    if norm_first:
        x = src + attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + attention(src))
    return norm2(x + feed_forward(x))


def _kept_attention(math_fallback: Callable[..., Any]) -> Callable[..., Any]:
    """`scaled_dot_product_attention` left whole (NotImplemented), except with dropout or
    grouped-query heads, which the importer does not map: those take `math_fallback`."""

    def decompose(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("dropout_p") or kwargs.get("enable_gqa"):
            return math_fallback(*args, **kwargs)
        return NotImplemented

    return decompose


def decompositions(keep_attention: bool = False) -> dict[Any, Callable[..., Any]]:
    """PyTorch's core-ATen decompositions and the restatements above. `keep_attention` (for
    `torch.export` programs, `exported.py`) leaves `scaled_dot_product_attention` whole: the table
    would otherwise restate it as its math fallback on the exporting device (the scale split
    between q and k as sqrt(scale) each, f32 upcasts on the CPU), which no fused kernel computes;
    the importer maps the op itself to the attention chain (`neural.py`)."""
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    table[torch.ops.aten._transformer_encoder_layer_fwd.default] = transformer_encoder_layer
    attention = torch.ops.aten.scaled_dot_product_attention.default
    if keep_attention and attention in table:
        table[attention] = _kept_attention(table[attention])
    return table
