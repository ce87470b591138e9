"""A Triton matmul for the benchmarks: the classic blocked kernel (grouped program order, a K loop
of `tl.dot` on `BLOCK_K` slices, f32 accumulation, masked edges), one fixed configuration per
call (128x256x64 blocks, 3 stages, 8 warps: Triton's tutorial choice for fp16 on H100; 128x128x32 for f32), so that
its time is not an autotuning artefact; `autotuned_matmul` is the same kernel under
`@triton.autotune` over the tutorial's configurations (bench/tune.py compares with it). Imported only
where Triton is installed."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _matmul_kernel(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    programs_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * programs_n
    first_m = pid // group * GROUP_M
    size_m = min(tl.cdiv(M, BLOCK_M) - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    columns = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    depths = tl.arange(0, BLOCK_K)
    a_pointers = a + rows[:, None] * stride_am + depths[None, :] * stride_ak
    b_pointers = b + depths[:, None] * stride_bk + columns[None, :] * stride_bn
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K)):
        remaining = K - k * BLOCK_K
        a_tile = tl.load(a_pointers, mask=(rows[:, None] < M) & (depths[None, :] < remaining), other=0.0)
        b_tile = tl.load(b_pointers, mask=(depths[:, None] < remaining) & (columns[None, :] < N), other=0.0)
        accumulator = tl.dot(a_tile, b_tile, accumulator, input_precision=PRECISION)
        a_pointers += BLOCK_K * stride_ak
        b_pointers += BLOCK_K * stride_bk
    c_pointers = c + rows[:, None] * stride_cm + columns[None, :] * stride_cn
    tl.store(c_pointers, accumulator.to(c.dtype.element_ty), mask=(rows[:, None] < M) & (columns[None, :] < N))


def triton_matmul(a: torch.Tensor, b: torch.Tensor, precision: str | None = None) -> torch.Tensor:
    """`a @ b` by the fixed-configuration kernel; `precision` is `tl.dot`'s input_precision for f32
    ("tf32", "tf32x3"; default IEEE, as mlc's default)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    # f32 operands take twice the shared memory: 128x256x64 in 3 stages would need 288 KiB.
    block_m, block_n, block_k = (128, 128, 32) if a.dtype == torch.float32 else (128, 256, 64)
    grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
    _matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                         BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, PRECISION=precision or _precision(a),
                         num_stages=3, num_warps=8)
    return c


def _precision(a: torch.Tensor) -> str | None:
    # f32 products in IEEE f32, as mlc computes them (Triton's default for f32 is TF32).
    return "ieee" if a.dtype == torch.float32 else None


AUTOTUNE_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_stages=stages, num_warps=warps)
    for bm, bn, bk, stages, warps in (
        (128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
        (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
    )
]
"""The configurations of Triton's matmul tutorial for CUDA (what `@triton.autotune` users start from)."""

_autotuned_kernel = triton.autotune(configs=AUTOTUNE_CONFIGS, key=["M", "N", "K"])(_matmul_kernel)


def autotuned_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The same kernel under `@triton.autotune` over `AUTOTUNE_CONFIGS` (tuned on its first call
    per shape)."""
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)

    def grid(meta: dict) -> tuple[int]:
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    _autotuned_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                            PRECISION=_precision(a))
    return c
