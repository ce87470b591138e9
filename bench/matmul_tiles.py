"""Block tiles of an f16 tensor-core matmul, mlc alone: which (BM, BN, BK) is fastest for a shape.

    python bench/matmul_tiles.py [--shape 4096,4096,4096] [--tiles 128,128,16 128,256,32/3 ...] [--wgmma]
        [--precision tf32|3xtf32]   (f32 operands at that precision instead of f16)

Each tile is compiled through the GPU pipeline with `convert-graph-to-tile{matmul-tile=...}`
(and `loop-promote-shared{stages=S}` for a tile written `BM,BN,BK/S`),
checked against `torch.matmul` and timed with the harness (`time_gpu`); one line per tile is
printed as soon as it is measured (median µs, TFLOP/s), so a run cut short keeps what it measured.
The groundwork of a per-shape table (issue 14): it measures, it does not remember.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, _check, mlc_callable, time_gpu
from matmul import matmul_source

DEFAULT_TILES = ("128,128,32/1", "128,128,32/2", "128,256,16/3", "128,256,32/1", "128,256,32/2", "256,128,32/2")


def tile_pipeline(tile: str, wgmma: bool = False) -> str:
    """The GPU pipeline with the block (and the stages after a `/`) of `tile`; `wgmma`: Hopper's path."""
    from mlc.transforms.pipelines import GPU_PIPELINE

    block, _, stages = tile.partition("/")
    pipeline = GPU_PIPELINE.replace("convert-graph-to-tile", f"convert-graph-to-tile{{matmul-tile={block}}}", 1)
    if wgmma:  # a TF32 product's row-major B is transposed for it (graph-transpose-tf32-rhs)
        pipeline = pipeline.replace("{tensor-cores=true}", "{tensor-cores=true wgmma=true}", 1)
        pipeline = pipeline.replace("graph-transpose-tf32-rhs", "graph-transpose-tf32-rhs{wgmma=true}", 1)
    return pipeline.replace("loop-promote-shared", f"loop-promote-shared{{stages={stages}}}", 1) if stages else pipeline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="4096,4096,4096", help="M,N,K")
    parser.add_argument("--tiles", nargs="+", default=list(DEFAULT_TILES), help="BM,BN,BK each")
    parser.add_argument("--wgmma", action="store_true", help="the sm_90a path (convert-tile-to-loop{wgmma=true})")
    parser.add_argument("--precision", help="f32 operands at this precision (tf32, 3xtf32) instead of f16")
    args = parser.parse_args()
    import torch

    m, n, k = (int(size) for size in args.shape.split(","))
    generator = torch.Generator(device="cuda").manual_seed(0)
    inputs = [torch.randn(m, k, device="cuda", generator=generator), torch.randn(k, n, device="cuda", generator=generator)]
    if args.precision:
        source, name = matmul_source(m, n, k, False, "f32", args.precision), f"{args.precision} {m}x{n}x{k}"
    else:
        inputs = [x.half() for x in inputs]
        source, name = matmul_source(m, n, k, False, "f16"), f"f16 {m}x{n}x{k}"
    expected = torch.matmul(*inputs)
    # TF32 (rounded or truncated operands) is up to ~0.3 off fp32 at K = 4096 (bench/matmul.py)
    tolerance = (1e-2, 1.0) if args.precision == "tf32" else (1e-2, 1e-1)
    case = Case(name, lambda g: inputs, torch.matmul, source, 0, tolerance=tolerance)
    for tile in args.tiles:
        call, output = mlc_callable(case, inputs, tile_pipeline(tile, args.wgmma))
        call()
        torch.cuda.synchronize()
        _check(f"{case.name} / {tile}", output, expected, case.tolerance)
        median = statistics.median(time_gpu(call))
        print(f"{case.name} tile {tile:<12} {median:>10.1f} us {2 * m * n * k / (median * 1e-6) / 1e12:>8.1f} TFLOP/s", flush=True)


if __name__ == "__main__":
    main()
