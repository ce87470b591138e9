"""The tile dialect: SPMD block programs over tiles, in the manner of Triton.

A `tile.kernel` is a program run once per point of its `grid`; `tile.program_id` tells an instance
which point it is. The program moves whole tiles (`!tile.tile<4x256xf32>`, values held by the
program, never in memory) between memrefs and computes on them:

    tile.kernel @add(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) grid [4] {
      %pid = tile.program_id 0
      %c256 = arith.constant 256 : index
      %offset = arith.muli %pid, %c256 : index
      %a = tile.load %x[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
      %b = tile.load %y[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
      %s = tile.map %a, %b : !tile.tile<256xf32>, !tile.tile<256xf32> -> !tile.tile<256xf32> {
      ^bb0(%u: f32, %v: f32):
        %w = arith.addf %u, %v : f32
        tile.yield %w : f32
      }
      tile.store %s, %out[%offset] : !tile.tile<256xf32>, memref<1000xf32>
      tile.return
    }

`tile.load` and `tile.store` address a block of the memref whose origin is the index list and
whose shape is the tile's: elements outside the memref are read as `padding` (zero unless given)
and are never written. This implicit masking at the memref's bounds is what lets one kernel cover
sizes that are not multiples of the tile. Elementwise computation is one region, `tile.map`, whose
body is scalar `arith`/`math` code applied to every element; a fused chain of graph ops becomes one
map. `tile.broadcast` stretches size-1 dimensions (numpy rules). Host functions launch kernels
with `tile.launch` (see `mlc.dialects.kernels` for the host/kernel contract).

`tile.reduce` combines along an axis; `tile.dot` multiplies two tiles into an f32 accumulator.
A K loop is an `scf.for` inside the kernel whose iteration arguments carry accumulator tiles:

    %acc = scf.for %k = %c0 to %cK step %c16 iter_args(%partial = %zero) -> (!tile.tile<64x64xf32>) {
      %a = tile.load %x[%m, %k] : memref<100x200xf16> -> !tile.tile<64x16xf16>
      %b = tile.load %y[%k, %n] : memref<200x300xf16> -> !tile.tile<16x64xf16>
      %next = tile.dot %a, %b, %partial : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
      scf.yield %next : !tile.tile<64x64xf32>
    }

The upstream loop is used rather than a `tile.for` of our own: its syntax, verifier, interpreter,
canonicalisation (a single-trip loop is inlined) and region-aware passes (cse, licm) all apply
unchanged, as they do for Triton's K loops.

The ops live in three modules; this one gathers them into the `Tile` dialect. Import them from here
(`from mlc.dialects.tile import ops as tile`):

| module | ops |
| --- | --- |
| `kernel.py` | the tile type; kernel, return, program_id, launch |
| `memory.py` | load, store, gather, scatter, in_bounds, range |
| `compute.py` | broadcast, transpose, splat, map, yield, reduce, dot |
"""

from __future__ import annotations

from xdsl.ir import Dialect

from mlc.dialects.tile.kernel import KernelOp, LaunchOp, ProgramIdOp, ReturnOp, TileType
from mlc.dialects.tile.memory import GatherOp, InBoundsOp, LoadOp, RangeOp, ScatterOp, StoreOp
from mlc.dialects.tile.compute import (
    DOT_INPUT_TYPES,
    BroadcastOp,
    DotOp,
    MapOp,
    ReduceOp,
    SplatOp,
    TransposeOp,
    YieldOp,
)

Tile = Dialect(
    "tile",
    [
        KernelOp,
        ReturnOp,
        ProgramIdOp,
        LoadOp,
        StoreOp,
        BroadcastOp,
        TransposeOp,
        SplatOp,
        MapOp,
        ReduceOp,
        InBoundsOp,
        RangeOp,
        GatherOp,
        ScatterOp,
        DotOp,
        YieldOp,
        LaunchOp,
    ],
    [TileType],
)

__all__ = [
    "BroadcastOp",
    "DOT_INPUT_TYPES",
    "DotOp",
    "GatherOp",
    "InBoundsOp",
    "KernelOp",
    "LaunchOp",
    "LoadOp",
    "MapOp",
    "ProgramIdOp",
    "RangeOp",
    "ReduceOp",
    "ReturnOp",
    "ScatterOp",
    "SplatOp",
    "StoreOp",
    "Tile",
    "TileType",
    "TransposeOp",
    "YieldOp",
]
