"""Matmul benchmarks: mlc against PyTorch (cuBLAS) in fp32 with TF32 off.

    python bench/matmul.py [--json bench/results/matmul.json] [--only 4096 [--only ...]] [--matmul-tile 128,128,16]
    python bench/matmul.py --only 'f16 matmul 4096' --only 'f16 matmul 8192' --compare-staging 2

Cases: C = A @ B for square 1024, 4096 and 8192, a non-square 8192x1024 by 4096 product, and the
fused dense layer relu(A @ B + bias) at 4096 against PyTorch eager doing the three ops (a matmul,
an add and a relu, each through memory). PyTorch runs with `allow_tf32 = False`, so both sides do
fp32 fused multiply-adds on the CUDA cores. The `f16 ...` and `bf16 ...` cases (square 1024, 4096,
8192, the odd 4095x4097x1023, and `f16 xformer ...`: the transformer block's four products at batch 8)
run on tensor cores, with the Triton kernel of `triton_matmul.py` as a third
column where Triton is installed. The `tf32 ...` cases are f32 products of precision "tf32" (mlc: mma.sync
m16n8k8) against cuBLAS with TF32 allowed (`allow_tf32 = True` around its call) and Triton's
`input_precision="tf32"`; `3xtf32 ...` against cuBLAS in IEEE fp32 and Triton's "tf32x3". On an sm_90
GPU mlc's tf32 products run on wgmma (a plain product on a row-major B computed transposed,
C^T = B^T A^T with B's block in wgmma's A registers, `mlc.swap_operands`; where N is not a multiple
of 4 a row-major B is first transposed by a kernel of its own, which the times include; K not a
multiple of 4 keeps mma.sync), fed by TMA like the f16 ones; `tf32 linear ...` is the torch linear x @ w.T (w stored N x K, read in place:
the product alone), against cuBLAS's `x @ w.T` with TF32 allowed.
Without `--compare-staging` / `--tma` / `--matmul-tile`, mlc's rows are `mlc.compile`'s default
pipeline (on sm_90: `mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true
l2-group-tiles=8 tf32-swap=true}`, which the `tma+ws+se` staging runs without its last two options).
TFLOP/s count 2 * M * N * K per product.
`--matmul-tile` passes a block tile to `convert-graph-to-tile` instead of its heuristic (tuning).
`--tma` compiles with `mlc-lower-to-gpu{arch=sm_90 tma=true}` (sm_90 only): the f16/bf16 cases'
wgmma operands arrive by TMA bulk copies on mbarriers instead of cp.async (run without it in the
same call for the cp.async baseline). `--warp-specialize` (with `--tma`) adds `warp-specialize=true`:
a producer warpgroup issues the copies, the other warpgroups consume (full/empty mbarriers).
`--compare-staging N` runs the selected cases under the three sm_90 stagings (cp.async, `tma=true`,
`tma=true warp-specialize=true`) in one process, N rounds interleaved, each round with its own
cuBLAS and Triton rows; the JSON rows name the staging and round in `implementation`; with
`--group-tiles G` (repeatable) each staging runs again with `group-tiles=G` (loop-group-tiles: the
grid in grouped order; `NAME+gG`), with `--l2-group-tiles G` with `l2-group-tiles=G` (grouped only
where the pass finds an operand larger than L2; `NAME+l2gG`); with `--stage-epilogue` tma+ws runs again with `stage-epilogue=true`
(tma+ws+se: loop-stage-epilogue, tiles stored through shared memory, 16 bytes a lane);
`--staging NAME` keeps only the named ones (cp.async, tma, tma+ws, tma+ws+se, ...); with `--tf32-swap`
each runs again with `tf32-swap=true` (`NAME+swap`: plain TF32 products on a row-major B computed
transposed, B's block in wgmma's A registers, instead of after a transpose kernel).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Case, Row, run, write_json  # noqa: E402


def matmul_source(m: int, n: int, k: int, epilogue: bool, element: str = "f32", precision: str = "ieee") -> str:
    a, b, c, bias = (f"tensor<{shape}x{element}>" for shape in (f"{m}x{k}", f"{k}x{n}", f"{m}x{n}", f"{n}"))
    stated = "" if precision == "ieee" else f' {{precision = "{precision}"}}'
    if not epilogue:
        return f"""func.func @matmul(%a: {a}, %b: {b}) -> {c} {{
  %0 = graph.matmul %a, %b{stated} : ({a}, {b}) -> {c}
  func.return %0 : {c}
}}"""
    return f"""func.func @dense(%a: {a}, %b: {b}, %bias: {bias}) -> {c} {{
  %0 = graph.matmul %a, %b : ({a}, {b}) -> {c}
  %1 = graph.add %0, %bias : ({c}, {bias}) -> {c}
  %2 = graph.relu %1 : {c}
  func.return %2 : {c}
}}"""


SHAPES = {
    "matmul 1024^3": (1024, 1024, 1024),
    "matmul 4096^3": (4096, 4096, 4096),
    "matmul 8192^3": (8192, 8192, 8192),
    "matmul 8192x1024x4096": (8192, 1024, 4096),
}
FUSED = ("relu(matmul 4096^3 + bias)", (4096, 4096, 4096))
HALF_SHAPES = {
    "f16 matmul 1024^3": (1024, 1024, 1024),
    "f16 matmul 4096^3": (4096, 4096, 4096),
    "f16 matmul 8192^3": (8192, 8192, 8192),
    "f16 matmul 4095x4097x1023": (4095, 4097, 1023),
}
HALF_SHAPES.update({name.replace("f16", "bf16", 1): shape for name, shape in HALF_SHAPES.items()})
# The transformer block's four products at batch 8 (8 x 512 tokens, model 1024, FFN 4096; bench/models.py):
# short K (16 K steps of 64 for three of them) and 128-512 tiles of 128x256 for 132 multiprocessors.
HALF_SHAPES.update(
    {
        "f16 xformer ffn1 4096x4096x1024": (4096, 4096, 1024),
        "f16 xformer in-proj 4096x3072x1024": (4096, 3072, 1024),
        "f16 xformer ffn2 4096x1024x4096": (4096, 1024, 4096),
        "f16 xformer out-proj 4096x1024x1024": (4096, 1024, 1024),
    }
)
TF32_SHAPES = {name.replace("f16", "tf32", 1): shape for name, shape in HALF_SHAPES.items() if name.startswith("f16") and "xformer" not in name}
TF32_SHAPES["3xtf32 matmul 4096^3"] = (4096, 4096, 4096)
TF32_LINEAR_SHAPES = {"tf32 linear 4096^3": (4096, 4096, 4096), "tf32 linear 8192^3": (8192, 8192, 8192)}


def linear_source(m: int, n: int, k: int) -> str:
    """x @ transpose(w) at precision tf32, w stored N x K (the torch linear's weight)."""
    x, w, wt, c = (f"tensor<{shape}xf32>" for shape in (f"{m}x{k}", f"{n}x{k}", f"{k}x{n}", f"{m}x{n}"))
    return f"""func.func @linear(%x: {x}, %w: {w}) -> {c} {{
  %wt = graph.transpose %w perm [1, 0] : {w} to {wt}
  %0 = graph.matmul %x, %wt {{precision = "tf32"}} : ({x}, {wt}) -> {c}
  func.return %0 : {c}
}}"""


def tf32_cases() -> list[Case]:
    """f32 products at precision tf32 / 3xtf32 (tensor cores in mlc) against cuBLAS and Triton."""
    import functools

    import torch

    try:
        from triton_matmul import triton_matmul
    except ImportError:
        triton_matmul = None

    def cublas_tf32(a, b):
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(a, b)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False

    def operands(m: int, n: int, k: int):
        return lambda g: [torch.randn(m, k, device="cuda", generator=g), torch.randn(k, n, device="cuda", generator=g)]

    def linear_operands(m: int, n: int, k: int):
        return lambda g: [torch.randn(m, k, device="cuda", generator=g), torch.randn(n, k, device="cuda", generator=g)]

    cases = []
    for name, (m, n, k) in TF32_SHAPES.items():
        precision = name.split()[0]
        triton = functools.partial(triton_matmul, precision="tf32x3" if precision == "3xtf32" else "tf32") if triton_matmul else None
        reference = torch.matmul if precision == "3xtf32" else cublas_tf32
        # Two TF32 implementations (rounding or truncating the operands) differ by up to ~0.3 at K = 4096.
        tolerance = (1e-3, 1e-2) if precision == "3xtf32" else (1e-2, 1.0)
        source = matmul_source(m, n, k, False, "f32", precision)
        cases.append(Case(name, operands(m, n, k), reference, source, 4 * (m * k + k * n + m * n), triton, tolerance=tolerance))
    for name, (m, n, k) in TF32_LINEAR_SHAPES.items():
        cases.append(
            Case(name, linear_operands(m, n, k), lambda x, w: cublas_tf32(x, w.T), linear_source(m, n, k), 4 * (m * k + k * n + m * n), tolerance=(1e-2, 1.0))
        )
    return cases


def half_cases() -> list[Case]:
    """f16 products (tensor cores: mma.sync in mlc) against cuBLAS and the Triton kernel."""
    import torch

    try:
        from triton_matmul import triton_matmul
    except ImportError:
        triton_matmul = None

    def operands(m: int, n: int, k: int, dtype):
        def make(g):
            return [torch.randn(m, k, device="cuda", generator=g).to(dtype), torch.randn(k, n, device="cuda", generator=g).to(dtype)]

        return make

    cases = []
    for name, (m, n, k) in HALF_SHAPES.items():
        element = name.split()[0]
        dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[element]
        source = matmul_source(m, n, k, False, element)
        cases.append(Case(name, operands(m, n, k, dtype), torch.matmul, source, 2 * (m * k + k * n + m * n), triton_matmul, tolerance=(1e-2, 1e-1)))
    return cases


def cases() -> list[Case]:
    import torch

    def operands(m: int, n: int, k: int, bias: bool):
        def make(g):
            tensors = [torch.randn(m, k, device="cuda", generator=g), torch.randn(k, n, device="cuda", generator=g)]
            return tensors + ([torch.randn(n, device="cuda", generator=g)] if bias else [])

        return make

    result = []
    for name, (m, n, k) in SHAPES.items():
        result.append(Case(name, operands(m, n, k, False), torch.matmul, matmul_source(m, n, k, False), 4 * (m * k + k * n + m * n), tolerance=(1e-3, 1e-2)))
    name, (m, n, k) = FUSED
    result.append(
        Case(
            name,
            operands(m, n, k, True),
            lambda a, b, bias: torch.relu(a @ b + bias),
            matmul_source(m, n, k, True),
            4 * (m * k + k * n + m * n + n),
            tolerance=(1e-3, 1e-2),
        )
    )
    return result


def flops(case_name: str) -> int:
    m, n, k = dict([*SHAPES.items(), *HALF_SHAPES.items(), *TF32_SHAPES.items(), *TF32_LINEAR_SHAPES.items(), FUSED])[case_name]
    return 2 * m * n * k


def print_matmul_table(rows: list[Row]) -> None:
    print(f"{'case':<30} {'impl':<22} {'median us':>11} {'TFLOP/s':>8} {'vs torch':>9}")
    for row in rows:
        teraflops = flops(row.case) / (row.median_us * 1e-6) / 1e12
        print(f"{row.case:<30} {row.implementation:<22} {row.median_us:>11.1f} {teraflops:>8.2f} {row.speedup_vs_torch:>8.2f}x")


STAGINGS = {
    "cp.async": "mlc-lower-to-gpu{arch=sm_90}",
    "tma": "mlc-lower-to-gpu{arch=sm_90 tma=true}",
    "tma+ws": "mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true}",
}
STAGED_EPILOGUE_STAGINGS = {"tma+ws+se": "mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true}"}
"""With `--stage-epilogue`: the warp-specialized staging again with loop-stage-epilogue (tiles
stored through shared memory, 16 bytes a lane; the option's only pipeline)."""


def stagings(group_tiles: Sequence[int] = (), stage_epilogue: bool = False, l2_group_tiles: Sequence[int] = (), tf32_swap: bool = False, persistent: int = 0) -> dict[str, str]:
    """`STAGINGS` (and `STAGED_EPILOGUE_STAGINGS` with `stage_epilogue`), and for each G of
    `group_tiles` each of them again with `group-tiles=G` (`NAME+gG`: every 2-D grid grouped), for
    each G of `l2_group_tiles` with `l2-group-tiles=G` (`NAME+l2gG`: loop-group-tiles decides per
    kernel, grouping where an operand exceeds L2); with `tf32_swap` each of those again with
    `tf32-swap=true` (`NAME+swap`: plain TF32 products on a row-major B computed transposed); with
    `persistent` = P > 0 each warp-specialized one again with `persistent-tiles=P` (`NAME+p`)."""
    chosen = {**STAGINGS, **(STAGED_EPILOGUE_STAGINGS if stage_epilogue else {})}
    variants = [(f"g{g}", f"group-tiles={g}") for g in group_tiles] + [(f"l2g{g}", f"l2-group-tiles={g}") for g in l2_group_tiles]
    grouped = {f"{name}+{suffix}": pipeline.replace("}", f" {option}}}") for suffix, option in variants for name, pipeline in chosen.items()}
    every = {**chosen, **grouped}
    swapped = {f"{name}+swap": pipeline.replace("}", " tf32-swap=true}") for name, pipeline in every.items()} if tf32_swap else {}
    every = {**every, **swapped}
    persistent_ones = {f"{name}+p": pipeline.replace("}", f" persistent-tiles={persistent}}}") for name, pipeline in every.items() if "warp-specialize" in pipeline} if persistent else {}
    return {**every, **persistent_ones}


def compare_stagings(
    selected: list[Case],
    rounds: int,
    group_tiles: Sequence[int] = (),
    stage_epilogue: bool = False,
    only: list[str] | None = None,
    l2_group_tiles: Sequence[int] = (),
    tf32_swap: bool = False,
    persistent: int = 0,
) -> list[Row]:
    """Every staging's rows (or those named in `only`), round by round (interleaved, so drift
    touches them alike)."""
    rows: list[Row] = []
    chosen = {name: pipeline for name, pipeline in stagings(group_tiles, stage_epilogue, l2_group_tiles, tf32_swap, persistent).items() if not only or name in only}
    for round_index in range(1, rounds + 1):
        for staging, pipeline in chosen.items():
            staged = run(selected, pipeline=pipeline)
            for row in staged:
                row.implementation = f"{row.implementation}/{staging}/{round_index}"
            print_matmul_table(staged)  # as it goes: a later staging that hangs keeps these
            rows.extend(staged)
    return rows


def _multiprocessors() -> int:
    """The GPU's multiprocessors: the blocks of a persistent grid (one block each)."""
    from mlc.runtime import get_device

    return get_device().properties.multiprocessor_count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--only", action="append", help="run the cases whose name contains this text (repeatable: any of them)")
    parser.add_argument("--matmul-tile", help="BM,BN,BK for convert-graph-to-tile (default: its heuristic)")
    parser.add_argument("--tma", action="store_true", help="compile with mlc-lower-to-gpu{arch=sm_90 tma=true} (wgmma operands by TMA)")
    parser.add_argument("--warp-specialize", action="store_true", help="with --tma: a producer warpgroup and consumer warpgroups")
    parser.add_argument("--compare-staging", type=int, metavar="ROUNDS", help="cp.async, tma and tma+ws interleaved, ROUNDS times")
    parser.add_argument("--group-tiles", type=int, action="append", default=[], metavar="G", help="with --compare-staging: each staging also with group-tiles=G (repeatable)")
    parser.add_argument("--l2-group-tiles", type=int, action="append", default=[], metavar="G", help="with --compare-staging: each staging also with l2-group-tiles=G (repeatable)")
    parser.add_argument("--stage-epilogue", action="store_true", help="with --compare-staging: tma+ws also with stage-epilogue=true")
    parser.add_argument("--staging", action="append", help="with --compare-staging: only the stagings of these names (repeatable)")
    parser.add_argument("--persistent", action="store_true", help="with --compare-staging: each warp-specialized staging also with persistent-tiles=<the GPU's multiprocessors> (NAME+p)")
    parser.add_argument("--tf32-swap", action="store_true", help="with --compare-staging: each staging also with tf32-swap=true (NAME+swap)")
    args = parser.parse_args()
    if args.compare_staging and (args.tma or args.matmul_tile):
        parser.error("--compare-staging picks the pipelines itself: drop --tma / --matmul-tile")
    if args.tma and args.matmul_tile:
        parser.error("--tma takes the wgmma pipeline's own tiles: drop --matmul-tile")
    if args.warp_specialize and not args.tma:
        parser.error("--warp-specialize splits the TMA pipeline: add --tma")
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    selected = [case for case in (cases() + half_cases() + tf32_cases()) if args.only is None or any(text in case.name for text in args.only)]
    pipeline = None
    if args.matmul_tile:
        from mlc.transforms.pipelines import GPU_PIPELINE

        pipeline = GPU_PIPELINE.replace("convert-graph-to-tile", f"convert-graph-to-tile{{matmul-tile={args.matmul_tile}}}", 1)
    if args.tma:
        pipeline = f"mlc-lower-to-gpu{{arch=sm_90 tma=true{' warp-specialize=true' if args.warp_specialize else ''}}}"
    if args.compare_staging:
        rows = compare_stagings(selected, args.compare_staging, args.group_tiles, args.stage_epilogue, args.staging, args.l2_group_tiles, args.tf32_swap, _multiprocessors() if args.persistent else 0)
    else:
        rows = run(selected, pipeline=pipeline)
        print_matmul_table(rows)
    if args.json:
        write_json(args.json, rows, None, " ".join(sys.argv))


if __name__ == "__main__":
    main()
