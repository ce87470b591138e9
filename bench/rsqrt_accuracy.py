"""rsqrt accuracy of the CPU path over every positive f32, subnormals included (expand-math-for-cpu).

    python bench/rsqrt_accuracy.py [--first 1] [--last 0x7f7fffff] [--chunk 16777216] [--step 1]

Compiles graph.rsqrt of a CHUNK-element f32 tensor once (mlc's CPU pipeline: with AVX-512,
vrsqrt14ps and one Newton step on 16 lanes; elsewhere 1 / sqrt) and runs it over the f32 bit
patterns FIRST to LAST (every STEP-th; by default every finite positive f32, 2^31 - 2^23 values),
comparing each result with 1 / sqrt of the same value in float64 (two roundings at 2^-53,
far below what is measured): the relative error in units of u = 2^-24 (every result here is a
normal f32: 2^-64 <= rsqrt(x) <= 2^74.5). Then the special values, bit for bit: rsqrt(+0) = +inf,
rsqrt(-0) = -inf, rsqrt(+inf) = +0, NaN for NaN and below 0. Prints the largest error, its
argument, the count of values, a histogram of the errors by tenths of u and the seconds taken.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mlc

U = 2.0**-24
LARGEST_FINITE_BITS = 0x7F7FFFFF
SPECIAL = [(0.0, np.inf), (-0.0, -np.inf), (np.inf, 0.0), (-np.inf, np.nan), (np.nan, np.nan), (-1.0, np.nan), (-1e-45, np.nan), (-3.4e38, np.nan)]
"""(x, the expected rsqrt(x)): signed zeros and infinities compared by their bits."""


def _compiled(size: int):
    source = f"func.func @f(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{\n  %0 = graph.rsqrt %x : tensor<{size}xf32>\n  func.return %0 : tensor<{size}xf32>\n}}"
    return mlc.compile(source, device="cpu")


def sweep(first: int, last: int, chunk: int, step: int) -> tuple[float, float, int, np.ndarray, float]:
    """(the largest error in u, its argument, the values compared, the counts of errors per tenth
    of u, seconds) over every `step`-th f32 bit pattern of [first, last]."""
    kernel = _compiled(chunk)
    worst, worst_x, count = 0.0, 0.0, 0
    histogram = np.zeros(40, np.int64)
    start = time.perf_counter()
    for low in range(first, last + 1, chunk * step):
        bits = np.arange(low, min(low + chunk * step, last + 1), step, dtype=np.uint32)
        size = bits.size
        count += size
        bits = np.pad(bits, (0, chunk - size), mode="edge")  # the last chunk repeats its last value
        x = bits.view(np.float32)
        exact = 1.0 / np.sqrt(x.astype(np.float64))
        error = np.abs(np.asarray(kernel(x), dtype=np.float64) - exact) / exact / U
        histogram += np.bincount(np.minimum(error[:size] * 10, 39).astype(np.int64), minlength=40)
        at = int(np.argmax(error))
        if error[at] > worst:
            worst, worst_x = float(error[at]), float(x[at])
    return worst, worst_x, count, histogram, time.perf_counter() - start


def special_values_hold() -> bool:
    """rsqrt of SPECIAL's x is its expected value (NaN where NaN, else the same bits), each x
    repeated to fill whole 16-lane vectors."""
    x = np.repeat(np.array([x for x, _ in SPECIAL], np.float32), 16)
    got = _compiled(x.size)(x)
    expected = np.repeat(np.array([value for _, value in SPECIAL], np.float32), 16)
    nan = np.isnan(expected)
    return bool(np.array_equal(np.isnan(got), nan) and np.array_equal(got[~nan].view(np.uint32), expected[~nan].view(np.uint32)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--first", type=lambda text: int(text, 0), default=1)
    parser.add_argument("--last", type=lambda text: int(text, 0), default=LARGEST_FINITE_BITS)
    parser.add_argument("--chunk", type=int, default=1 << 24)
    parser.add_argument("--step", type=int, default=1)
    arguments = parser.parse_args()
    worst, worst_x, count, histogram, seconds = sweep(arguments.first, arguments.last, arguments.chunk, arguments.step)
    print(f"rsqrt: max {worst:.4f} u at x = {worst_x!r} ({np.float32(worst_x).view(np.uint32):#010x}), {count} values, {seconds:.1f} s")
    shares = ", ".join(f"<{(tenth + 1) / 10:.1f}: {histogram[tenth] / count:.2e}" for tenth in np.flatnonzero(histogram))
    print(f"share of the values by error (u): {shares}")
    print(f"special values (+-0, +-inf, NaN, negatives): {'as stated' if special_values_hold() else 'WRONG'}")


if __name__ == "__main__":
    main()
