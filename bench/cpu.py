"""CPU benchmarks: mlc's CPU path against numpy and PyTorch CPU, same threads, one process.

    python bench/cpu.py [--threads N] [--repeats 20] [--only softmax] [--json out.json]

Cases (f32): softmax of 1024x1024 and of long rows (64x65536), tanh(x*y + x) on 4096x1024, layer
norm of 4096x1024 with scale and bias, matmul 512^3, 1024^3 and 2048^3, and a fused MLP block
gelu(x @ w + b) of 1024x1024 by 1024x1024. Every implementation runs on the same random inputs
(never zeros), is checked against numpy's float64 result first, then timed with
`time.perf_counter`: warm-up calls, then the best of `--repeats` calls (the steady cost on a
machine shared with other work, where the median mostly measures the neighbours).

Threads: mlc gets `num_threads=N`, PyTorch `torch.set_num_threads(N)`; numpy's BLAS is limited
through `OPENBLAS_NUM_THREADS` / `OMP_NUM_THREADS` / `MKL_NUM_THREADS`, set before numpy is
imported (numpy's elementwise code is single-threaded anyway). PyTorch is optional: without it
the table has mlc and numpy only. mlc's compile time of each case is printed too (compile once,
outside the timing).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--only", default=None, help="run the cases whose name contains this")
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


ARGUMENTS = _parse() if __name__ == "__main__" else None
if ARGUMENTS is not None:  # before numpy is imported, so that its BLAS reads them
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(ARGUMENTS.threads)

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import mlc


def tensor(*shape: int) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


@dataclass
class Case:
    name: str
    source: str
    shapes: list[tuple[int, ...]]
    reference: Callable[..., np.ndarray]  # numpy (also the float64 reference)
    torch_function: Callable[..., object]
    tolerance: float = 2e-5


def _softmax(x, xp=np):  # type: ignore[no-untyped-def]
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(x, w, b):  # type: ignore[no-untyped-def]
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-5) * w + b


def _gelu(x):  # type: ignore[no-untyped-def]
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def softmax_case(rows: int, columns: int) -> Case:
    t = tensor(rows, columns)
    return Case(
        f"softmax {rows}x{columns}",
        f"func.func @f(%x: {t}) -> {t} {{\n  %0 = graph.softmax %x axis -1 : {t}\n  func.return %0 : {t}\n}}",
        [(rows, columns)],
        _softmax,
        lambda torch, x: torch.softmax(x, -1),
    )


def tanh_chain_case(rows: int, columns: int) -> Case:
    t = tensor(rows, columns)
    return Case(
        f"tanh(x*y+x) {rows}x{columns}",
        f"""func.func @f(%x: {t}, %y: {t}) -> {t} {{
  %0 = graph.mul %x, %y : ({t}, {t}) -> {t}
  %1 = graph.add %0, %x : ({t}, {t}) -> {t}
  %2 = graph.tanh %1 : {t}
  func.return %2 : {t}
}}""",
        [(rows, columns), (rows, columns)],
        lambda x, y: np.tanh(x * y + x),
        lambda torch, x, y: torch.tanh(x * y + x),
    )


def layer_norm_case(rows: int, columns: int) -> Case:
    t, p = tensor(rows, columns), tensor(columns)
    return Case(
        f"layer norm {rows}x{columns}",
        f"""func.func @f(%x: {t}, %w: {p}, %b: {p}) -> {t} {{
  %0 = graph.layer_norm %x, %w, %b axis -1 epsilon 1.0e-05 : ({t}, {p}, {p}) -> {t}
  func.return %0 : {t}
}}""",
        [(rows, columns), (columns,), (columns,)],
        _layer_norm,
        lambda torch, x, w, b: torch.nn.functional.layer_norm(x, (columns,), w, b, 1e-5),
        tolerance=1e-4,
    )


def matmul_case(n: int) -> Case:
    t = tensor(n, n)
    return Case(
        f"matmul {n}^3",
        f"func.func @f(%a: {t}, %b: {t}) -> {t} {{\n  %0 = graph.matmul %a, %b : ({t}, {t}) -> {t}\n  func.return %0 : {t}\n}}",
        [(n, n), (n, n)],
        lambda a, b: a @ b,
        lambda torch, a, b: a @ b,
        tolerance=1e-4,
    )


def mlp_case(rows: int, inner: int, outer: int) -> Case:
    x, w, b, y = tensor(rows, inner), tensor(inner, outer), tensor(outer), tensor(rows, outer)
    return Case(
        f"mlp gelu(x@w+b) {rows}x{inner}x{outer}",
        f"""func.func @f(%x: {x}, %w: {w}, %b: {b}) -> {y} {{
  %0 = graph.matmul %x, %w : ({x}, {w}) -> {y}
  %1 = graph.add %0, %b : ({y}, {b}) -> {y}
  %2 = graph.gelu %1 {{approximate = "tanh"}} : {y}
  func.return %2 : {y}
}}""",
        [(rows, inner), (inner, outer), (outer,)],
        lambda x, w, b: _gelu(x @ w + b),
        lambda torch, x, w, b: torch.nn.functional.gelu(x @ w + b, approximate="tanh"),
        tolerance=1e-4,
    )


CASES = [
    softmax_case(1024, 1024),
    softmax_case(64, 65536),
    tanh_chain_case(4096, 1024),
    layer_norm_case(4096, 1024),
    matmul_case(512),
    matmul_case(1024),
    matmul_case(2048),
    mlp_case(1024, 1024, 1024),
]


def best_seconds(function: Callable[[], object], repeats: int) -> float:
    function()  # warm-up (and first-touch of the outputs)
    function()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _check(name: str, implementation: str, got: object, want: np.ndarray, tolerance: float) -> None:
    error = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want)))
    scale = float(np.max(np.abs(want))) or 1.0
    if error > tolerance * scale:
        raise SystemExit(f"{name}: {implementation} differs from numpy float64 by {error:.3g} (scale {scale:.3g})")


def run_case(case: Case, threads: int, repeats: int, torch: object | None) -> list[tuple[str, str, float]]:
    generator = np.random.default_rng(0)
    inputs = [generator.standard_normal(shape).astype(np.float32) for shape in case.shapes]
    want = np.asarray(case.reference(*[x.astype(np.float64) for x in inputs]))
    start = time.perf_counter()
    compiled = mlc.compile(case.source, device="cpu", num_threads=threads)
    compile_seconds = time.perf_counter() - start
    rows = []
    implementations: list[tuple[str, Callable[[], object]]] = [
        ("mlc", lambda: compiled(*inputs)),
        ("numpy", lambda: case.reference(*inputs)),
    ]
    if torch is not None:
        tensors = [torch.from_numpy(x) for x in inputs]  # type: ignore[attr-defined]
        implementations.append(("PyTorch", lambda: case.torch_function(torch, *tensors)))
    for implementation, function in implementations:
        result = function()
        result = result[0] if isinstance(result, tuple) else result
        _check(case.name, implementation, result, want, case.tolerance)
        rows.append((case.name, implementation, best_seconds(function, repeats)))
    print(f"  ({case.name}: mlc compiled in {compile_seconds:.2f} s)", file=sys.stderr)
    return rows


def main(arguments: argparse.Namespace) -> None:
    try:
        import torch

        torch.set_num_threads(arguments.threads)
        torch_version = torch.__version__
    except ImportError:
        torch, torch_version = None, "absent"
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; threads: {arguments.threads}; "
          f"numpy {np.__version__}; PyTorch {torch_version}")
    print("| case | impl | best ms | vs PyTorch |\n| --- | --- | ---: | ---: |")
    results = []
    for case in CASES:
        if arguments.only and arguments.only not in case.name:
            continue
        rows = run_case(case, arguments.threads, arguments.repeats, torch)
        reference = next((seconds for _, impl, seconds in rows if impl == "PyTorch"), None)
        for name, implementation, seconds in rows:
            ratio = f"{reference / seconds:.2f}x" if reference else "-"
            print(f"| {name} | {implementation} | {seconds * 1e3:.3f} | {ratio} |", flush=True)
        results.extend(rows)
    if arguments.json is not None:
        import json

        arguments.json.write_text(json.dumps(
            {"cpu": cpu_model(), "threads": arguments.threads, "command": " ".join(sys.argv),
             "rows": [{"case": c, "implementation": i, "best_ms": s * 1e3} for c, i, s in results]},
            indent=1,
        ))


if __name__ == "__main__":
    main(ARGUMENTS)
