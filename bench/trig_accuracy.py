"""sin / cos accuracy of the CPU path over every f32 of [0, LIMIT] (expand-math-for-cpu's f32 lanes).

    python bench/trig_accuracy.py [--functions sin,cos] [--limit 131072] [--chunk 16777216] [--step 1]

Compiles graph.sin / graph.cos of a CHUNK-element f32 tensor once each (mlc's CPU pipeline) and
runs it over the f32 bit patterns from +0 up to LIMIT (every STEP-th pattern), comparing each result
with numpy's float64 sin / cos of the same value: the error in units of u = 2^-24 relative to the
exact value (one subnormal step absolute below the smallest normal, as the tests count it). Negative
x need no sweep of their own: the f32 lanes compute on |x| and flip the sign bit (sin) or not (cos),
so their results are the positive ones, negated for sin (the tests check that on samples). Prints,
per function, the largest error, its argument, the count of values and the seconds taken.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import mlc

U = 2.0**-24
SMALLEST_NORMAL = 2.0**-126
SUBNORMAL_STEP = 2.0**-149


def _compiled(function: str, size: int):
    source = f"func.func @f(%x: tensor<{size}xf32>) -> tensor<{size}xf32> {{\n  %0 = graph.{function} %x : tensor<{size}xf32>\n  func.return %0 : tensor<{size}xf32>\n}}"
    return mlc.compile(source, device="cpu")


def sweep(function: str, limit: float, chunk: int, step: int) -> tuple[float, float, int, float]:
    """(the largest error in u, its argument, the values compared, seconds) over every `step`-th
    f32 bit pattern of [0, limit]."""
    kernel = _compiled(function, chunk)
    exact_function = getattr(np, function)
    last = int(np.float32(limit).view(np.uint32))
    worst, worst_x, count = 0.0, 0.0, 0
    start = time.perf_counter()
    for first in range(0, last + 1, chunk * step):
        bits = np.arange(first, min(first + chunk * step, last + 1), step, dtype=np.uint32)
        count += bits.size
        bits = np.pad(bits, (0, chunk - bits.size), mode="edge")  # the last chunk repeats its last value
        x = bits.view(np.float32)
        got = np.asarray(kernel(x), dtype=np.float64)
        exact = exact_function(x.astype(np.float64))
        magnitude = np.abs(exact)
        error = np.abs(got - exact) / np.maximum(magnitude, SMALLEST_NORMAL)
        error = np.where(magnitude >= SMALLEST_NORMAL, error / U, np.abs(got - exact) / SUBNORMAL_STEP)
        at = int(np.argmax(error))
        if error[at] > worst:
            worst, worst_x = float(error[at]), float(x[at])
    return worst, worst_x, count, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--functions", default="sin,cos")
    parser.add_argument("--limit", type=float, default=2.0**17)
    parser.add_argument("--chunk", type=int, default=1 << 24)
    parser.add_argument("--step", type=int, default=1)
    arguments = parser.parse_args()
    for function in arguments.functions.split(","):
        worst, worst_x, count, seconds = sweep(function, arguments.limit, arguments.chunk, arguments.step)
        print(f"{function}: max {worst:.4f} u at x = {worst_x!r} ({np.float32(worst_x).view(np.uint32):#010x}), {count} values, {seconds:.1f} s")


if __name__ == "__main__":
    main()
