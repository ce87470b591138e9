"""Property: one computation written at the tile, loop and mlc_gpu levels gives the same results."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.interpreter import run

from interpreter_support import parse_module

TILE = """
tile.kernel @k(%x: memref<{n}xf32>, %y: memref<{n}xf32>, %out: memref<{n}xf32>) grid [{programs}] {{
  %pid = tile.program_id 0
  %size = arith.constant {tile} : index
  %offset = arith.muli %pid, %size : index
  %a = tile.load %x[%offset] : memref<{n}xf32> -> !tile.tile<{tile}xf32>
  %b = tile.load %y[%offset] : memref<{n}xf32> -> !tile.tile<{tile}xf32>
  %r = tile.map %a, %b : !tile.tile<{tile}xf32>, !tile.tile<{tile}xf32> -> !tile.tile<{tile}xf32> {{
  ^bb0(%u: f32, %v: f32):
    BODY
    tile.yield %w : f32
  }}
  tile.store %r, %out[%offset] : !tile.tile<{tile}xf32>, memref<{n}xf32>
  tile.return
}}
func.func @main(%x: memref<{n}xf32>, %y: memref<{n}xf32>) -> memref<{n}xf32> {{
  %out = memref.alloc() : memref<{n}xf32>
  tile.launch @k(%x, %y, %out) : memref<{n}xf32>, memref<{n}xf32>, memref<{n}xf32>
  func.return %out : memref<{n}xf32>
}}
"""

LOOP = """
loop.kernel @k(%x: memref<{n}xf32>, %y: memref<{n}xf32>, %out: memref<{n}xf32>) {{
  loop.parallel %p < {programs} mapping block.x {{
    loop.parallel %t < {tile} mapping thread.x {{
      %size = arith.constant {tile} : index
      %n = arith.constant {n} : index
      %base = arith.muli %p, %size : index
      %i = arith.addi %base, %t : index
      %inside = arith.cmpi slt, %i, %n : index
      scf.if %inside {{
        %u = memref.load %x[%i] : memref<{n}xf32>
        %v = memref.load %y[%i] : memref<{n}xf32>
        BODY
        memref.store %w, %out[%i] : memref<{n}xf32>
      }}
    }}
  }}
  loop.return
}}
func.func @main(%x: memref<{n}xf32>, %y: memref<{n}xf32>) -> memref<{n}xf32> {{
  %out = memref.alloc() : memref<{n}xf32>
  loop.launch @k(%x, %y, %out) : memref<{n}xf32>, memref<{n}xf32>, memref<{n}xf32>
  func.return %out : memref<{n}xf32>
}}
"""

GPU = """
mlc_gpu.func @k(%x: memref<{n}xf32>, %y: memref<{n}xf32>, %out: memref<{n}xf32>) grid [{programs}, 1, 1] block [{tile}, 1, 1] {{
  %p = mlc_gpu.block_id x
  %t = mlc_gpu.thread_id x
  %size = mlc_gpu.block_dim x
  %n = arith.constant {n} : index
  %base = arith.muli %p, %size : index
  %i = arith.addi %base, %t : index
  %inside = arith.cmpi slt, %i, %n : index
  scf.if %inside {{
    %u = memref.load %x[%i] : memref<{n}xf32>
    %v = memref.load %y[%i] : memref<{n}xf32>
    BODY
    memref.store %w, %out[%i] : memref<{n}xf32>
  }}
  mlc_gpu.return
}}
func.func @main(%x: memref<{n}xf32>, %y: memref<{n}xf32>) -> memref<{n}xf32> {{
  %out = memref.alloc() : memref<{n}xf32>
  mlc_gpu.launch @k(%x, %y, %out) grid [{programs}, 1, 1] block [{tile}, 1, 1] : memref<{n}xf32>, memref<{n}xf32>, memref<{n}xf32>
  func.return %out : memref<{n}xf32>
}}
"""

BODY = """%s = arith.mulf %u, %v : f32
    %e = math.exp %s : f32
    %zero = arith.constant 0.0 : f32
    %positive = arith.cmpf ogt, %u, %zero : f32
    %w = arith.select %positive, %e, %u : f32"""


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 300), tile=st.sampled_from([1, 8, 32, 64]), seed=st.integers(0, 2**32 - 1))
def test_tile_loop_and_gpu_levels_agree(n, tile, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    programs = -(-n // tile)
    expected = np.where(x > 0, np.exp((x * y).astype(np.float64)).astype(np.float32), x)
    for template in (TILE, LOOP, GPU):
        text = template.format(n=n, tile=tile, programs=programs).replace("BODY", BODY)
        (out,) = run(parse_module(text), "main", [x, y])
        np.testing.assert_array_equal(out, expected)
