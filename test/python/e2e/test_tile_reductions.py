"""Tile-level reduction kernels compiled for each device agree with numpy.

The graph-level lowering of reductions builds on these kernels; this checks the levels below it
(in-register trees, warp shuffles, shared-memory exchanges, loop fission on the CPU) on real
hardware: sums, maxima and a softmax-like normalisation along rows and along columns, ragged
sizes included. Each kernel computes what one graph op means (`graph.softmax` of the rows,
`graph.reduce_sum` of the columns), so its results are compared with the graph interpreter on
that op within the error bound `error_bounds.result_bounds` derives from it and the data, and the
float64 numpy reference rounded once must be within the same bound (`programs.assert_compiled_matches`).
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import assert_compiled_matches

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def below_tile(pipeline: str) -> str:
    return pipeline[pipeline.index("convert-tile-to-loop") :]


def softmax_rows(rows: int, columns: int, tile_rows: int, tile_columns: int, warps: int) -> str:
    data, full, reduced = f"{rows}x{columns}", f"{tile_rows}x{tile_columns}", f"{tile_rows}x1"
    programs = -(-rows // tile_rows)
    return f"""
tile.kernel @softmax(%x: memref<{data}xf32>, %y: memref<{data}xf32>) grid [{programs}] num_warps {warps} {{
  %pid = tile.program_id 0
  %c0 = arith.constant 0 : index
  %step = arith.constant {tile_rows} : index
  %row = arith.muli %pid, %step : index
  %t = tile.load %x[%row, %c0] : memref<{data}xf32> -> !tile.tile<{full}xf32>
  %m = tile.in_bounds [%row, %c0] within [{rows}, {columns}] : !tile.tile<{full}xi1>
  %z = tile.map %m, %t : !tile.tile<{full}xi1>, !tile.tile<{full}xf32> -> !tile.tile<{full}xf32> {{
  ^bb0(%inside: i1, %e: f32):
    %ninf = arith.constant 0xFF800000 : f32
    %s = arith.select %inside, %e, %ninf : f32
    tile.yield %s : f32
  }}
  %mx = tile.reduce %z axis 1 : !tile.tile<{full}xf32> -> !tile.tile<{reduced}xf32> {{
  ^bb0(%a: f32, %b: f32):
    %c = arith.maximumf %a, %b : f32
    tile.yield %c : f32
  }}
  %mxb = tile.broadcast %mx : !tile.tile<{reduced}xf32> -> !tile.tile<{full}xf32>
  %e = tile.map %z, %mxb : !tile.tile<{full}xf32>, !tile.tile<{full}xf32> -> !tile.tile<{full}xf32> {{
  ^bb0(%v: f32, %w: f32):
    %d = arith.subf %v, %w : f32
    %x1 = math.exp %d : f32
    tile.yield %x1 : f32
  }}
  %s = tile.reduce %e axis 1 : !tile.tile<{full}xf32> -> !tile.tile<{reduced}xf32> {{
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.yield %c : f32
  }}
  %sb = tile.broadcast %s : !tile.tile<{reduced}xf32> -> !tile.tile<{full}xf32>
  %n = tile.map %e, %sb : !tile.tile<{full}xf32>, !tile.tile<{full}xf32> -> !tile.tile<{full}xf32> {{
  ^bb0(%v: f32, %w: f32):
    %q = arith.divf %v, %w : f32
    tile.yield %q : f32
  }}
  tile.store %n, %y[%row, %c0] : !tile.tile<{full}xf32>, memref<{data}xf32>
  tile.return
}}
func.func @main(%x: memref<{data}xf32>) -> memref<{data}xf32> {{
  %y = memref.alloc() : memref<{data}xf32>
  tile.launch @softmax(%x, %y) : memref<{data}xf32>, memref<{data}xf32>
  func.return %y : memref<{data}xf32>
}}"""


def column_sum(rows: int, columns: int, tile_columns: int, warps: int) -> str:
    tile_rows = 1 << (rows - 1).bit_length()
    data, full, reduced = f"{rows}x{columns}", f"{tile_rows}x{tile_columns}", f"1x{tile_columns}"
    programs = -(-columns // tile_columns)
    return f"""
tile.kernel @column_sum(%x: memref<{data}xf32>, %s: memref<1x{columns}xf32>) grid [{programs}] num_warps {warps} {{
  %pid = tile.program_id 0
  %c0 = arith.constant 0 : index
  %step = arith.constant {tile_columns} : index
  %column = arith.muli %pid, %step : index
  %t = tile.load %x[%c0, %column] : memref<{data}xf32> -> !tile.tile<{full}xf32>
  %r = tile.reduce %t axis 0 : !tile.tile<{full}xf32> -> !tile.tile<{reduced}xf32> {{
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.yield %c : f32
  }}
  tile.store %r, %s[%c0, %column] : !tile.tile<{reduced}xf32>, memref<1x{columns}xf32>
  tile.return
}}
func.func @main(%x: memref<{data}xf32>) -> memref<{columns}xf32> {{
  %s = memref.alloc() : memref<{columns}xf32>
  tile.launch @column_sum(%x, %s) : memref<{data}xf32>, memref<{columns}xf32>
  func.return %s : memref<{columns}xf32>
}}"""


def _pipeline(device: str) -> str:
    return below_tile(GPU_PIPELINE if device == "cuda" else CPU_PIPELINE)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "rows, columns, tile_rows, tile_columns, warps",
    [(1, 1, 1, 1, 1), (3, 31, 4, 32, 1), (7, 33, 2, 64, 2), (64, 1000, 2, 1024, 4), (5, 4097, 1, 8192, 32)],
)
def test_row_softmax(device: str, rows: int, columns: int, tile_rows: int, tile_columns: int, warps: int):
    f = mlc.compile(softmax_rows(rows, columns, tile_rows, tile_columns, warps), device=device, pipeline=_pipeline(device))
    x = np.random.default_rng(columns).standard_normal((rows, columns)).astype(np.float32) * 3
    z = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    t = f"tensor<{rows}x{columns}xf32>"
    graph_softmax = f"""func.func @main(%x: {t}) -> {t} {{
  %y = graph.softmax %x axis 1 : {t}
  func.return %y : {t}
}}"""
    assert_compiled_matches(graph_softmax, [x], f(x), [z / z.sum(axis=1, keepdims=True)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rows, columns, tile_columns, warps", [(1, 5, 8, 1), (33, 100, 32, 2), (300, 257, 16, 4)])
def test_column_sum(device: str, rows: int, columns: int, tile_columns: int, warps: int):
    f = mlc.compile(column_sum(rows, columns, tile_columns, warps), device=device, pipeline=_pipeline(device))
    x = np.random.default_rng(rows).standard_normal((rows, columns)).astype(np.float32)
    t, r = f"tensor<{rows}x{columns}xf32>", f"tensor<{columns}xf32>"
    graph_column_sum = f"""func.func @main(%x: {t}) -> {r} {{
  %s = graph.reduce_sum %x axes [0] keepdims false : {t} to {r}
  func.return %s : {r}
}}"""
    assert_compiled_matches(graph_column_sum, [x], f(x), [x.astype(np.float64).sum(axis=0)])
