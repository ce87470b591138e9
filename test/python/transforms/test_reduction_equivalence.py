"""Reduction kernels keep their meaning through every pass below the tile level.

Hypothesis draws tile kernels that load a (possibly ragged) block, mask it with `tile.in_bounds`,
apply an elementwise op, reduce along rows or columns (sum, max or min), and store both the
reduction and a value computed from it (a softmax-like normalisation, so reductions feed later
elementwise work). Each pass from `convert-tile-to-loop` down, in both pipelines, is checked by
interpreting the module just before and just after it. Every pass is exact but
`convert-tile-to-loop`, which reassociates the sum (in registers, then across threads) where the
tile interpreter adds in a tree over the tile. Both are f32 sums of the same n terms z in some
order, each within gamma(n - 1) * sum|z| of the exact sum (Higham, Accuracy and Stability of
Numerical Algorithms, section 3.1; padding adds exact zeros), so the two reductions differ by at
most `_sum_bound` = 2 * gamma(n - 1) * sum|z|, computed from the data, and `x - reduction` by that
plus the rounding of each side, u / (1 - u) * (|y_before| + |y_after|). max and min do not depend on
the order: exact. A result off by a few bounds, or a sum missing one term, fails the check.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.dialects.graph.error_bounds import U32, gamma
from mlc.interpreter import run
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import assert_equivalent, lower, same_draws_for_every_step, stage

COMBINERS = {"add": ("addf", "0.0"), "max": ("maximumf", "0xFF800000"), "min": ("minimumf", "0x7F800000")}


def _power_of_two(value: int) -> int:
    return 1 << (value - 1).bit_length()


@st.composite
def reduction_kernels(draw: st.DrawFn) -> tuple[str, tuple[int, int], int, str]:
    """(the module's text, the data's shape, the reduced axis, the combiner: add, max or min)."""
    rows = draw(st.sampled_from([1, 2, 3, 8]))
    columns = draw(st.sampled_from([1, 4, 31, 33, 100]))
    axis = draw(st.integers(0, 1))
    kind = draw(st.sampled_from(sorted(COMBINERS)))
    return reduction_kernel(rows, columns, axis, kind, draw(st.sampled_from([1, 2, 4]))), (rows, columns), axis, kind


def reduction_kernel(rows: int, columns: int, axis: int, kind: str, warps: int) -> str:
    combiner, identity = COMBINERS[kind]
    tile_rows, tile_columns = _power_of_two(rows), _power_of_two(columns)
    full = f"{tile_rows}x{tile_columns}"
    reduced_shape = [tile_rows, tile_columns]
    reduced_shape[axis] = 1
    reduced = "x".join(map(str, reduced_shape))
    out_shape = [rows, columns]
    out_shape[axis] = 1
    out = "x".join(map(str, out_shape))
    data = f"{rows}x{columns}"
    text = f"""
tile.kernel @k(%x: memref<{data}xf32>, %r: memref<{out}xf32>, %y: memref<{data}xf32>) grid [1] num_warps {warps} {{
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<{data}xf32> -> !tile.tile<{full}xf32>
  %m = tile.in_bounds [%c0, %c0] within [{rows}, {columns}] : !tile.tile<{full}xi1>
  %z = tile.map %m, %t : !tile.tile<{full}xi1>, !tile.tile<{full}xf32> -> !tile.tile<{full}xf32> {{
  ^bb0(%inside: i1, %e: f32):
    %two = arith.constant 2.0 : f32
    %u = arith.mulf %e, %two : f32
    %identity = arith.constant {identity} : f32
    %s = arith.select %inside, %u, %identity : f32
    tile.yield %s : f32
  }}
  %red = tile.reduce %z axis {axis} : !tile.tile<{full}xf32> -> !tile.tile<{reduced}xf32> {{
  ^bb0(%a: f32, %b: f32):
    %c = arith.{combiner} %a, %b : f32
    tile.yield %c : f32
  }}
  tile.store %red, %r[%c0, %c0] : !tile.tile<{reduced}xf32>, memref<{out}xf32>
  %wide = tile.broadcast %red : !tile.tile<{reduced}xf32> -> !tile.tile<{full}xf32>
  %n = tile.map %t, %wide : !tile.tile<{full}xf32>, !tile.tile<{full}xf32> -> !tile.tile<{full}xf32> {{
  ^bb0(%e: f32, %w: f32):
    %d = arith.subf %e, %w : f32
    tile.yield %d : f32
  }}
  tile.store %n, %y[%c0, %c0] : !tile.tile<{full}xf32>, memref<{data}xf32>
  tile.return
}}
func.func @main(%x: memref<{data}xf32>) -> (memref<{out}xf32>, memref<{data}xf32>) {{
  %r = memref.alloc() : memref<{out}xf32>
  %y = memref.alloc() : memref<{data}xf32>
  tile.launch @k(%x, %r, %y) : memref<{data}xf32>, memref<{out}xf32>, memref<{data}xf32>
  func.return %r, %y : memref<{out}xf32>, memref<{data}xf32>
}}"""
    return text


REDUCTION_PASSES = ("convert-tile-to-loop", "convert-loop-to-gpu", "convert-gpu-to-nvvm", "convert-loop-to-cpu")


def _steps(pipeline: str, target: str) -> dict[str, tuple[str, str]]:
    """The passes that handle reductions one by one, then the rest of the pipeline as one step."""
    passes = pipeline.split(",")
    names = [spelled.split("{")[0] for spelled in passes]  # convert-tile-to-loop{tensor-cores=true}
    start = names.index("convert-tile-to-loop")
    steps = {}
    last = start
    for index in range(start, len(passes)):
        if names[index] in REDUCTION_PASSES:
            steps[f"{target}:{names[index]}"] = (",".join(passes[start:index]), passes[index])
            last = index
    steps[f"{target}:to-llvm"] = (",".join(passes[start : last + 1]), ",".join(passes[last + 1 :]))
    return steps


STEPS = _steps(GPU_PIPELINE, "gpu") | {
    key: value for key, value in _steps(CPU_PIPELINE, "cpu").items() if key != "cpu:convert-tile-to-loop"
}


def _sum_bound(x: np.ndarray, axis: int) -> np.ndarray:
    """How far two f32 sums of z = 2x along `axis`, in any two orders, may be apart (keepdims)."""
    z = 2.0 * x.astype(np.float64)
    return 2.0 * gamma(max(x.shape[axis] - 1, 0)) * np.sum(np.abs(z), axis=axis, keepdims=True)


def _assert_reassociation_within_bound(before, after, x: np.ndarray, axis: int, kind: str) -> None:
    """(reduction, x - reduction) of both modules agree within the bound of the module docstring."""
    (r_before, y_before), (r_after, y_after) = (run(module, "main", [x.copy()]) for module in (before, after))
    if kind != "add":
        np.testing.assert_array_equal(r_after, r_before)
        np.testing.assert_array_equal(y_after, y_before)
        return
    sum_bound = _sum_bound(x, axis)
    rounding = U32 / (1 - U32) * (np.abs(y_before.astype(np.float64)) + np.abs(y_after.astype(np.float64)))
    for name, got, want, bound in (("reduction", r_after, r_before, sum_bound), ("x - reduction", y_after, y_before, sum_bound + rounding)):
        error = np.abs(got.astype(np.float64) - want.astype(np.float64))
        assert np.all(error <= bound), f"{name}: error {error.max():.3g} beyond the bound {bound.ravel()[np.argmax(error)]:.3g}"


@pytest.mark.parametrize("step", list(STEPS))  # pipeline order: each step reuses the last one's lowering
@same_draws_for_every_step
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernel=reduction_kernels(), seed=st.integers(0, 2**32 - 1))
def test_pass_preserves_reductions(step: str, kernel: tuple[str, tuple[int, int], int, str], seed: int):
    text, shape, axis, kind = kernel
    before_passes, name = STEPS[step]
    before = stage(text, before_passes)
    after = stage(text, f"{before_passes},{name}" if before_passes else name)
    inputs = [np.random.default_rng(seed).standard_normal(shape).astype(np.float32)]
    if name.split("{")[0] == "convert-tile-to-loop":
        _assert_reassociation_within_bound(before, after, inputs[0], axis, kind)
    else:
        assert_equivalent(before, after, inputs)


def test_the_reassociation_bound_catches_a_missing_term_and_a_perturbation():
    """Row sums of 100 columns: a lowering that leaves the last column out, or a sum 3 bounds off,
    is outside the bound (the bound, about 2e-3 here, is below the size of one term)."""
    text, x = reduction_kernel(8, 100, 1, "add", 4), np.random.default_rng(3).standard_normal((8, 100)).astype(np.float32)
    tile, loop = lower(text, ""), lower(text, "convert-tile-to-loop")
    _assert_reassociation_within_bound(tile, loop, x, 1, "add")
    full = run(tile, "main", [x.copy()])[0].astype(np.float64)
    missing = x.copy()
    missing[:, -1] = 0.0
    short = run(loop, "main", [missing])[0].astype(np.float64)
    bound = _sum_bound(x, 1)
    assert float(bound.max()) < 3e-3
    assert np.all(np.abs(short - full) > bound)
    moved = (full + 3 * bound).astype(np.float32).astype(np.float64)
    assert np.all(np.abs(moved - full) > bound)


@pytest.mark.parametrize("mask", [96, 127, 1023, 33, 544])
@pytest.mark.parametrize("combiner", ["commutative", "ordered"])
def test_all_reduce_across_warps_keeps_the_butterfly_result(mask: int, combiner: str):
    """Both lowerings across warps (gathered tree, exchange per bit) give the butterfly's bits.

    `ordered` (`2l - r`) is neither commutative nor associative, so any other order shows.
    """
    body = "%c = arith.addf %l, %r : f32" if combiner == "commutative" else (
        "%twice = arith.addf %l, %l : f32\n        %c = arith.subf %twice, %r : f32"
    )
    text = f"""
loop.kernel @main(%x: memref<1024xf32>, %out: memref<1024xf32>) {{
  loop.parallel %b < 1 mapping block.x {{
    loop.parallel %t < 1024 mapping thread.x {{
      %v = memref.load %x[%t] : memref<1024xf32>
      %s = loop.all_reduce %v mask {mask} : f32 {{
      ^bb0(%l: f32, %r: f32):
        {body}
        loop.yield %c : f32
      }}
      memref.store %s, %out[%t] : memref<1024xf32>
    }}
  }}
  loop.return
}}"""
    from mlc.interpreter import run_kernel

    x = np.random.default_rng(mask).standard_normal(1024).astype(np.float32)
    expected = run_kernel(lower(text, ""), "main", [x.copy(), np.zeros(1024, np.float32)])[1]
    actual = run_kernel(lower(text, "convert-loop-to-gpu"), "main", [x.copy(), np.zeros(1024, np.float32)], grid=(1,), block=(1024,))[1]
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected))
