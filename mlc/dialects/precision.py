"""The precision of an f32 matrix product: `ieee`, `tf32` or `3xtf32`, and what each computes.

`graph.matmul` and `tile.dot` carry it as the string property `precision` (absent: `ieee`); it
applies to f32 operands only (f16 and bf16 products are exact in f32 whatever the unit).

* `ieee`: every product and sum in f32 (the default; what CUDA cores and the CPU compute).
* `tf32`: each operand rounded to TF32 (f32's 8 exponent bits and 10 of its 23 mantissa bits, the
  format NVIDIA tensor cores multiply in) before an exact product accumulated in f32: about 3
  decimal digits per product, K times faster on tensor cores.
* `3xtf32`: each operand split into a TF32 high part and the TF32 rounding of the remainder,
  `a = a_hi + a_lo`, and `a @ b` taken as `a_lo @ b_hi + a_hi @ b_lo + a_hi @ b_hi` (the
  `a_lo @ b_lo` term, below 2^-20 of the product, dropped): close to f32 accuracy from three
  tensor-core products (CUTLASS's "3xTF32", PyTorch's "high" precision without the tf32 flag).

What "rounded to TF32" means is any rounding within one TF32 ulp (2^-10 relative) of the operand,
which `error_bounds` allows (`PRODUCT_ERROR`): the graph and tile interpreters (the reference)
round to nearest with ties away from zero (`round_to_tf32`, PTX `cvt.rna.tf32.f32`), and so does
the mma.sync lowering (`loop.round_tf32` on each register); Hopper's wgmma lowering truncates
(`truncate_to_tf32`: the tensor core reads raw f32 operands from shared memory and ignores their
low 13 mantissa bits). Why truncation there: wgmma reads both operands from shared memory, where
the async copies (and TMA) land them unchanged, so rounding them would take another pass over
every stage through registers (reading and writing it again in shared memory, which the products
already keep busy); truncation is free and within the same bound. The loop level states which one
a kernel computes (a `loop.round_tf32` before `loop.mma_sync`, or a `loop.wgmma` on f32 buffers,
which the loop interpreter truncates), so that level models the GPU bit for bit. The price:
truncation shrinks every operand's magnitude (by half a TF32 ulp on average), so the terms' errors
do not cancel as rounding's do; at 4096^3 on standard normal data the mean error (over |A| @ |B|)
was 2.6 times rna's and cuBLAS-TF32's (1.52e-5 against 5.75e-6; BENCHMARKS.md, "TF32 on wgmma").
Infinities and NaN pass unchanged.
"""

from __future__ import annotations

import numpy as np

PRECISIONS = ("ieee", "tf32", "3xtf32")
"""The values of the `precision` property, the default first."""

DEFAULT_PRECISION = "ieee"

TF32_DROPPED_BITS = 13
"""f32 has 23 explicit mantissa bits, TF32 10."""

PRODUCT_ERROR = {"ieee": 0.0, "tf32": 2 * 2.0**-10 + 2.0**-20, "3xtf32": 4 * 2.0**-20}
"""How far one term `a[i,k] * b[k,j]` as a precision computes it may be from the exact product,
relative to `|a[i,k] * b[k,j]|`, for any rounding to TF32 (each operand within one TF32 ulp,
2^-10, of itself). tf32: (1 + 2^-10)^2 - 1. 3xtf32: the low parts' roundings (2^-10 of a
remainder below 2^-10 of the operand: 2^-20 each) and the dropped `a_lo * b_lo` (2^-20), with
room for the second-order terms. Summing the terms in f32 adds the usual gamma(n)."""

PRODUCTS = {"ieee": 1, "tf32": 1, "3xtf32": 3}
"""Products accumulated per term of the sum (3xtf32 adds three)."""


def precision_problem(precision: str, operands_are_f32: bool) -> str | None:
    """Why `precision` is not valid for a product of these operands, or None."""
    if precision not in PRECISIONS:
        return f"precision must be one of {', '.join(repr(p) for p in PRECISIONS)}, got '{precision}'"
    if precision != DEFAULT_PRECISION and not operands_are_f32:
        return f"precision '{precision}' applies to f32 operands only (f16 and bf16 products are exact in f32)"
    return None


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """f32 `x` rounded to TF32, to nearest with ties away from zero (`cvt.rna.tf32.f32`), as f32."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32)
    half = np.uint32(1 << (TF32_DROPPED_BITS - 1))
    keep = np.uint32((0xFFFFFFFF << TF32_DROPPED_BITS) & 0xFFFFFFFF)
    # Sign and magnitude: adding half an ulp to the magnitude's bits and truncating rounds half
    # away from zero; a carry into the exponent is the next binade (or infinity), as it should be.
    rounded = ((bits + half) & keep).view(np.float32)
    return np.where(np.isfinite(x), rounded, x)


def truncate_to_tf32(x: np.ndarray) -> np.ndarray:
    """f32 `x` truncated to TF32 (toward zero: the low 13 mantissa bits cleared), as f32: what a
    tensor core reading raw f32 operands computes with (wgmma). Infinities pass unchanged; a NaN
    stays a NaN (its payload's high bits or the quiet bit are kept)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    keep = np.uint32((0xFFFFFFFF << TF32_DROPPED_BITS) & 0xFFFFFFFF)
    return (bits & keep).view(np.float32)


def operand_pairs(a: np.ndarray, b: np.ndarray, precision: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pairs of f32 operands whose products, summed, are `a @ b` at `precision` (small first)."""
    if precision == "ieee":
        return [(np.asarray(a, np.float32), np.asarray(b, np.float32))]
    a_high, b_high = round_to_tf32(a), round_to_tf32(b)
    if precision == "tf32":
        return [(a_high, b_high)]
    with np.errstate(invalid="ignore"):  # inf - inf: the low part of an infinity is NaN, as on a GPU
        a_low = round_to_tf32(np.asarray(a, np.float32) - a_high)
        b_low = round_to_tf32(np.asarray(b, np.float32) - b_high)
    return [(a_low, b_high), (a_high, b_low), (a_high, b_high)]
