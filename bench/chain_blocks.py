"""The attention chain kernel at the transformer block's shape, per block size, against PyTorch's SDPA.

    python bench/chain_blocks.py [--batch-heads 128] [--sequence 512] [--depth 64]
                                 [--blocks 128x64,64x64,128x128] [--json FILE]

Case: `nn.TransformerEncoderLayer`'s attention at batch 8 (8 x 16 heads, 512 tokens, head dim 64,
f16), as the exported block reaches the chain: K stored [BH, S, D] and transposed in the program
(the chain reads it in place, `view_rewrites.split_key_transpose`), the scores scaled by 1/8,
softmax, P V. Variants, each compiled from the graph-fuse output with its `mlc.chain_plan` block
sizes rewritten (the IR's decision: `block_rows` BM x `block_keys` BN, `warp_rows` W query rows
per warp, `chain_mma.py`), then the rest of the
default GPU pipeline: `exact` (the graph's roundings, libdevice exp) and `fast` (`fast_math` in the
plan, as a chain imported from PyTorch's SDPA gets: f32 scores, exp2), `wgmma` (fast, on warpgroup
products: the plan's `products = "wgmma"`, `chain_wgmma.py`; W ignored), `wgmma-exact` (exact, on
warpgroup products), and `kt` (the exact
kernel reading a transposed copy Kt [BH, D, S] with ldmatrix .trans, the layout before K was read
in place). Every variant is checked against SDPA (max abs error) and timed with
`harness.time_gpu` (medians of back-to-back calls; the kernel dominates at these sizes) in one
process, SDPA too; compiles run first in worker processes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import time_gpu  # noqa: E402



def source(heads: int, sequence: int, depth: int, stored_keys: bool) -> str:
    t = lambda *shape: "tensor<" + "".join(f"{n}x" for n in (heads, *shape)) + "f16>"  # noqa: E731
    s, d = sequence, depth
    keys = f"%k: {t(s, d)}" if stored_keys else f"%kt: {t(d, s)}"
    lines = [f"%kt = graph.transpose %k perm [0, 2, 1] : {t(s, d)} to {t(d, s)}"] if stored_keys else []
    lines += [
        f"%s = graph.matmul %q, %kt : ({t(s, d)}, {t(d, s)}) -> {t(s, s)}",
        f"%scale = graph.constant dense<{1 / depth ** 0.5}> : tensor<f16>",
        f"%scaled = graph.mul %s, %scale : ({t(s, s)}, tensor<f16>) -> {t(s, s)}",
        f"%p = graph.softmax %scaled axis -1 : {t(s, s)}",
        f"%o = graph.matmul %p, %v : ({t(s, s)}, {t(s, d)}) -> {t(s, d)}",
    ]
    body = "".join(f"  {line}\n" for line in lines)
    return f"func.func @main(%q: {t(s, d)}, {keys}, %v: {t(s, d)}) -> {t(s, d)} {{\n{body}  func.return %o : {t(s, d)}\n}}\n"


WGMMA_LOWERING = "convert-tile-to-loop{tensor-cores=true wgmma=true}"


def fused_source(text: str, fast: bool, block_rows: int, block_keys: int, warp_rows: int = 16, wgmma: bool = False) -> tuple[str, str]:
    """The graph-fuse output of `text` with the chain's blocks rewritten, and the rest of the
    pipeline; `wgmma`: the plan's `products = "wgmma"` and convert-tile-to-loop's `wgmma` option
    (`chain_wgmma.py`), else mma.sync (`chain_mma.py`)."""
    import mlc
    from mlc.transforms.pipelines import GPU_FUSE, GPU_PIPELINE, gpu_fuse

    fuse = gpu_fuse("fast-math=true") if fast else GPU_FUSE
    head, rest = GPU_PIPELINE.split(GPU_FUSE + ",")
    fused = str(mlc.lower(text, device="cpu", pipeline=head + fuse))  # graph passes only: any device
    fused = re.sub(r"block_rows = \d+", f"block_rows = {block_rows}", fused)
    fused = re.sub(r"block_keys = \d+", f"block_keys = {block_keys}", fused)
    fused = re.sub(r", warp_rows = \d+ : i64", "", fused)
    fused = re.sub(r"(block_keys = \d+ : i64)", f"\\1, warp_rows = {warp_rows} : i64", fused)
    fused = re.sub(r', products = "\w+"', "", fused)
    if wgmma:
        fused = re.sub(r"(block_keys = \d+ : i64)", '\\1, products = "wgmma"', fused)
        rest = rest.replace("convert-tile-to-loop{tensor-cores=true}", WGMMA_LOWERING)
    return fused, rest


def _compile(text: str, pipeline: str) -> None:
    import mlc

    mlc.compile(text, device="cuda", pipeline=pipeline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-heads", type=int, default=128)
    parser.add_argument("--sequence", type=int, default=512)
    parser.add_argument("--depth", type=int, default=64)
    parser.add_argument("--blocks", default="128x64x16,64x64x16,128x128x16,128x64x32,128x128x32", help="BMxBNxW: W query rows per warp")
    parser.add_argument("--variants", default="exact,fast,kt")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ.setdefault("MLC_CACHE_DIR", tempfile.mkdtemp(prefix="mlc-chain-blocks-"))
    import torch

    heads, s, d = args.batch_heads, args.sequence, args.depth
    blocks = [tuple(int(n) for n in b.split("x")) for b in args.blocks.split(",")]
    chosen = args.variants.split(",")
    variants = {}
    for bm, bn, w in blocks:
        for name, fast, stored, wgmma in (("exact", False, True, False), ("fast", True, True, False), ("kt", False, False, False), ("wgmma", True, True, True), ("wgmma-exact", False, True, True)):
            if name not in chosen or (name == "kt" and (bm, bn, w) != blocks[0]):
                continue
            variants[(name, bm, bn, w)] = (*fused_source(source(heads, s, d, stored), fast, bm, bn, w, wgmma), stored)
    with ProcessPoolExecutor(max_workers=min(len(variants), os.cpu_count() or 1), mp_context=get_context("spawn")) as pool:
        for future in [pool.submit(_compile, text, rest) for text, rest, _ in variants.values()]:
            future.result()

    import mlc

    generator = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(heads, s, d, device="cuda", dtype=torch.float16, generator=generator) for _ in range(3))
    kt = k.transpose(1, 2).contiguous()
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])  # noqa: E731
    expected = sdpa()[0]
    rows = [{"variant": "sdpa", "us": statistics.median(time_gpu(sdpa))}]
    flops = 4 * heads * s * s * d
    for (name, bm, bn, w), (text, rest, stored) in variants.items():
        compiled = mlc.compile(text, device="cuda", pipeline=rest)
        out = torch.empty_like(q)
        arguments = (q, k if stored else kt, v)
        call = lambda: compiled.run_on_device(*arguments, outputs=[out])  # noqa: E731
        call()
        torch.cuda.synchronize()
        error = (out.float() - expected.float()).abs().max().item()
        rows.append({"variant": name, "block_rows": bm, "block_keys": bn, "warp_rows": w, "us": statistics.median(time_gpu(call)), "max_abs_error": error})
    for row in rows:
        row["tflops"] = flops / row["us"] / 1e6
        print(json.dumps(row))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
