"""Interpretation of tile.reduce, tile.in_bounds and loop.all_reduce against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph.error_bounds import gamma
from mlc.interpreter import run_kernel

COMBINERS = {"addf": np.sum, "maximumf": np.max, "minimumf": np.min}


def _module(text: str):
    module, _ = parse_module(text, make_context())
    module.verify()
    return module


def row_reduction(rows: int, columns: int, tile_rows: int, tile_columns: int, combiner: str, axis: int) -> str:
    reduced = [tile_rows, tile_columns]
    reduced[axis] = 1
    out_shape = [rows, columns]
    out_shape[axis] = 1
    identity = {"addf": "0.0", "maximumf": "0xFF800000", "minimumf": "0x7F800000"}[combiner]
    return f"""
    tile.kernel @k(%x: memref<{rows}x{columns}xf32>, %out: memref<{out_shape[0]}x{out_shape[1]}xf32>) grid [1] {{
      %c0 = arith.constant 0 : index
      %t = tile.load %x[%c0, %c0] : memref<{rows}x{columns}xf32> -> !tile.tile<{tile_rows}x{tile_columns}xf32>
      %m = tile.in_bounds [%c0, %c0] within [{rows}, {columns}] : !tile.tile<{tile_rows}x{tile_columns}xi1>
      %z = tile.map %m, %t : !tile.tile<{tile_rows}x{tile_columns}xi1>, !tile.tile<{tile_rows}x{tile_columns}xf32> -> !tile.tile<{tile_rows}x{tile_columns}xf32> {{
      ^bb0(%v: i1, %e: f32):
        %identity = arith.constant {identity} : f32
        %s = arith.select %v, %e, %identity : f32
        tile.yield %s : f32
      }}
      %r = tile.reduce %z axis {axis} : !tile.tile<{tile_rows}x{tile_columns}xf32> -> !tile.tile<{reduced[0]}x{reduced[1]}xf32> {{
      ^bb0(%a: f32, %b: f32):
        %c = arith.{combiner} %a, %b : f32
        tile.yield %c : f32
      }}
      tile.store %r, %out[%c0, %c0] : !tile.tile<{reduced[0]}x{reduced[1]}xf32>, memref<{out_shape[0]}x{out_shape[1]}xf32>
      tile.return
    }}"""


@settings(max_examples=30, deadline=None)
@given(
    rows=st.integers(1, 9),
    columns=st.sampled_from([1, 3, 31, 33, 100]),
    combiner=st.sampled_from(sorted(COMBINERS)),
    axis=st.integers(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_masked_reduction_of_a_padded_block(rows, columns, combiner, axis, seed):
    tile_rows = 1 << (rows - 1).bit_length()
    tile_columns = 1 << (columns - 1).bit_length()
    module = _module(row_reduction(rows, columns, tile_rows, tile_columns, combiner, axis))
    x = np.random.default_rng(seed).standard_normal((rows, columns)).astype(np.float32)
    out_shape = [rows, columns]
    out_shape[axis] = 1
    result = np.asarray(run_kernel(module, "k", [x, np.zeros(out_shape, np.float32)])[1])
    expected = COMBINERS[combiner](x.astype(np.float64), axis=axis, keepdims=True)
    if combiner != "addf":  # the maximum or minimum of f32 values is one of them
        np.testing.assert_array_equal(result, expected.astype(np.float32))
        return
    # An f32 sum of n terms in any order (padding adds exact zeros) is within gamma(n - 1) * sum|x|
    # of the exact sum (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1).
    bound = gamma(x.shape[axis] - 1) * np.sum(np.abs(x.astype(np.float64)), axis=axis, keepdims=True)
    assert np.all(np.abs(result - expected) <= bound), np.max(np.abs(result - expected) - bound)


def test_in_bounds_marks_the_elements_inside():
    module = _module(
        """
        tile.kernel @k(%x: memref<3x5xf32>, %out: memref<4x8xi1>) grid [1] {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %m = tile.in_bounds [%c1, %c0] within [3, 5] : !tile.tile<4x8xi1>
          tile.store %m, %out[%c0, %c0] : !tile.tile<4x8xi1>, memref<4x8xi1>
          tile.return
        }"""
    )
    result = np.asarray(run_kernel(module, "k", [np.zeros((3, 5), np.float32), np.zeros((4, 8), bool)])[1])
    expected = np.zeros((4, 8), bool)
    expected[:2, :5] = True  # rows 1 and 2 of x, columns 0..4
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("mask", [0, 1, 5, 15, 48, 63])
def test_all_reduce_combines_each_group(mask: int):
    module = _module(
        f"""
        loop.kernel @k(%x: memref<2x64xi32>, %out: memref<2x64xi32>) {{
          loop.parallel %b < 2 mapping block.x {{
            loop.parallel %t < 64 mapping thread.x {{
              %v = memref.load %x[%b, %t] : memref<2x64xi32>
              %s = loop.all_reduce %v mask {mask} : i32 {{
              ^bb0(%l: i32, %r: i32):
                %c = arith.addi %l, %r : i32
                loop.yield %c : i32
              }}
              memref.store %s, %out[%b, %t] : memref<2x64xi32>
            }}
          }}
          loop.return
        }}"""
    )
    x = np.random.default_rng(mask).integers(-100, 100, (2, 64)).astype(np.int32)
    result = np.asarray(run_kernel(module, "k", [x, np.zeros((2, 64), np.int32)])[1])
    index = np.arange(64)
    expected = np.stack([[row[(index & ~mask) == (t & ~mask)].sum() for t in range(64)] for row in x])
    np.testing.assert_array_equal(result, expected)
