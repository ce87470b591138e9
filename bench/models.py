"""Whole models at small batch sizes: mlc against PyTorch eager and Inductor (issues 15 and 18).

    python bench/models.py [--models cnn,transformer] [--batches 1,4,8]
                           [--backends eager,inductor,mlc,mlc-export] [--profile [N]] [--jobs N]
                           [--rounds N] [--small] [--device cuda|cpu] [--json FILE]

Models (f16, eval mode, no autograd; `torch_models.py` defines them): the small CNN (three
conv3x3-batchnorm-relu-maxpool stages 3 -> 32 -> 64 -> 128 channels on Bx3x128x128, global
average pooling, a linear head) and `torch.nn.TransformerEncoderLayer` (d_model 1024, 16 heads,
feed-forward 4096, relu, post-norm, batch first, B x 512 tokens), at each batch size B. At these
sizes a call is a few tens of µs of device work: launch overhead, kernel count and small kernels
decide the speed, not the products' peak rate.

Backends, all in this one process on the same inputs:

* `eager`: the module itself; `inductor`: `torch.compile` with its default backend;
* `mlc`: `torch.compile` with mlc's backend callable (`mlc.frontend.torch.backend.mlc_backend`:
  dynamo, the graph traced to core ATen (`make_fx` under `no_grad`), partitions compiled by mlc;
  PyTorch's fused attention kernel left to PyTorch in device-bound graphs, `attention="auto"`);
  `mlc-attention` and `mlc-sdpa`: the same with `attention="mlc"` (mlc's chain kernel: the
  transformer layer is one mlc partition) and `attention="pytorch"` (PyTorch's SDPA kernel);
* `mlc-export`: the whole model through mlc alone, no dynamo: `torch.export`, imported with the
  parameters as constants (`import_exported`), `mlc.compile`d, called with `run_on_device` on the
  input tensor and a preallocated output (mlc's automatic CUDA graphs replay it).

Compile times. `--jobs N` (N > 1) first compiles every (model, batch, backend) in N worker
processes at once, cold (mlc's disk cache in a fresh directory, Inductor's cache fresh): that is the
compile time reported (`compile_s`, concurrent with the other jobs, so an upper bound of a lone
compile). The measuring process then compiles again from the warm caches (`warm_compile_s`).
Without `--jobs`, `compile_s` is the measuring process's own first call.

Per model, batch and backend: the result's distance from eager's (max abs error, relative L2), the
steady time per call (`harness.time_gpu`: warm-up, batches of back-to-back calls between CUDA
events, median), the speed against eager and, with `--profile`, from torch.profiler over a few
calls: kernels launched per call, the sum of their device times per call (the time per call minus
it is time the device waited for the host), and the N (8) costliest kernels. For `mlc`, which
ATen nodes ran in PyTorch and whether each mlc partition replays CUDA graphs; for `mlc-export`,
whether its program does. To tell a slow round's cause: the host µs per call (50 calls not waiting
for the device), and the CUDA graphs captured and Python garbage collections made while timing. `--rounds N` compiles every backend of a model and batch once, then times
them N times, round after round (each round's speed is against that round's eager). `--small`
shrinks every shape (a smoke run, also with `--device cpu`).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from harness import time_gpu  # noqa: E402
from torch_models import ATTENTION_OPTIONS, SmallCnn, errors, profiled_kernels, write_record  # noqa: E402

BACKENDS = ("eager", "inductor", "mlc", "mlc-attention", "mlc-sdpa", "mlc-export")
PROFILED_CALLS = 5


@dataclass(frozen=True)
class Job:
    model: str
    batch: int
    backend: str
    device: str
    small: bool


@dataclass
class Result:
    model: str
    batch: int
    backend: str
    round: int = 1
    compile_s: float = 0.0
    warm_compile_s: float = 0.0
    median_us: float = 0.0
    speedup_vs_eager: float = 0.0
    max_abs_error: float = 0.0
    relative_l2_error: float = 0.0
    kernels_per_call: float = 0.0
    kernel_us_per_call: float = 0.0
    cuda_graphs: list[bool] = field(default_factory=list)
    in_pytorch: dict[str, int] = field(default_factory=dict)
    top_kernels: list[tuple[str, float, float]] = field(default_factory=list)
    host_us: float = 0.0
    """Host time per call: 50 back-to-back calls, before waiting for the device (round diagnosis)."""
    graph_captures: int = 0
    """CUDA graphs the backend's mlc programs captured during this round's timing."""
    gc_collections: list[int] = field(default_factory=list)
    """Python's collections of generations 0, 1, 2 during this round's timing."""


def make_model(name: str, batch: int, device: str, small: bool) -> tuple[torch.nn.Module, torch.Tensor]:
    """The model `name` in f16 (f32 on the CPU) on `device`, and its seeded input at `batch`."""
    dtype = torch.float16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    if name == "cnn":
        model: torch.nn.Module = SmallCnn((3, 8, 16, 16) if small else (3, 32, 64, 128))
        shape: tuple[int, ...] = (batch, 3, 16, 16) if small else (batch, 3, 128, 128)
    elif name == "transformer":
        width, heads, hidden, tokens = (64, 4, 128, 16) if small else (1024, 16, 4096, 512)
        model = torch.nn.TransformerEncoderLayer(width, heads, hidden, dropout=0.0, batch_first=True)
        shape = (batch, tokens, width)
    else:
        raise SystemExit(f"unknown model {name!r}: cnn or transformer")
    model = model.to(device=device, dtype=dtype).eval()
    return model, torch.randn(shape, device=device).to(dtype)


def compiled_by(backend: str, model: torch.nn.Module, x: torch.Tensor) -> tuple[Callable[[], Any], Callable[[Result], None]]:
    """A call of `model` on `x` through `backend`, and what records the backend's decisions."""
    if backend == "eager":
        return (lambda: model(x)), lambda result: None
    if backend == "inductor":
        function = torch.compile(model, dynamic=False)
        return (lambda: function(x)), lambda result: None
    if backend in ATTENTION_OPTIONS:
        return _through_torch_compile(model, x, ATTENTION_OPTIONS[backend])
    if backend == "mlc-export":
        return _through_export(model, x)
    raise SystemExit(f"unknown backend {backend!r}: one of {', '.join(BACKENDS)}")


def _through_torch_compile(model: torch.nn.Module, x: torch.Tensor, attention: str) -> tuple[Callable[[], Any], Callable[[Result], None]]:
    from mlc.frontend.torch.backend import Explanation, mlc_backend

    explanation = Explanation()
    before = {id(p) for p in _partitions()}

    def recording_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        return mlc_backend(gm, example_inputs, explanation=explanation, attention=attention)

    function = torch.compile(model, backend=recording_backend, dynamic=False)

    mine: list[Any] = []

    def record(result: Result) -> None:
        if not mine:  # the first record, right after the first call: the partitions it made
            mine.extend(p for p in _partitions() if id(p) not in before)
        result.in_pytorch = dict(Counter(r.op for r in explanation.in_pytorch))
        result.cuda_graphs = [_uses_cuda_graphs(p.compiled) for p in mine]
        result.graph_captures = sum(_captures(p.compiled) for p in mine)

    return (lambda: function(x)), record


def _partitions() -> list[Any]:
    """The live `MlcPartition`s (AOT autograd's wrappers hide them from the backend's caller)."""
    from mlc.frontend.torch.backend import MlcPartition

    return [o for o in gc.get_objects() if type(o) is MlcPartition]


def _uses_cuda_graphs(compiled: Any) -> bool:
    return bool(getattr(compiled.program, "uses_cuda_graphs", False))


def _captures(compiled: Any) -> int:
    """CUDA graphs the compiled program captured so far (0 on the CPU)."""
    return int(getattr(compiled.program, "graph_captures", 0))


def host_us_per_call(function: Callable[[], Any], calls: int = 50) -> float:
    """Host µs per call of `calls` back-to-back calls, not waiting for the device in between (a
    host-bound call's cost; a device-bound one's is hidden only until the launch queue fills)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        function()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def _through_export(model: torch.nn.Module, x: torch.Tensor) -> tuple[Callable[[], Any], Callable[[Result], None]]:
    import mlc
    from mlc.frontend.torch import import_exported

    module = import_exported(torch.export.export(model, (x,)))
    compiled = mlc.compile(module, device=x.device.type)
    if x.device.type == "cpu":
        return (lambda: torch.from_numpy(compiled(x.numpy()))), lambda result: None
    shape = tuple(model(x).shape)
    output = torch.empty(shape, dtype=x.dtype, device=x.device)

    def call() -> torch.Tensor:
        compiled.run_on_device(x, outputs=[output])
        return output

    def record(result: Result) -> None:
        result.cuda_graphs = [_uses_cuda_graphs(compiled)]
        result.graph_captures = _captures(compiled)

    return call, record


def profile_kernels(function: Callable[[], Any], count: int) -> tuple[float, float, list[tuple[str, float, float]]]:
    """Kernels launched per call, their device µs per call, and the `count` costliest
    (name, µs per call, launches per call), from torch.profiler over `PROFILED_CALLS` calls."""
    rows = profiled_kernels(function, PROFILED_CALLS)
    return sum(r[2] for r in rows), sum(r[1] for r in rows), rows[:count]


def cold_compile(job: Job) -> float:
    """Seconds to compile `job` in a fresh worker process (the first call, synchronized)."""
    model, x = make_model(job.model, job.batch, job.device, job.small)
    with torch.no_grad():
        start = time.perf_counter()
        function, _ = compiled_by(job.backend, model, x)
        function()
        if job.device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - start


def compile_in_workers(jobs: list[Job], workers: int) -> dict[Job, float]:
    """Every job's cold compile time, `workers` jobs at once (this fills the disk caches)."""
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        return dict(zip(jobs, pool.map(cold_compile, jobs)))


def bench(model_name: str, batch: int, backends: list[str], args: argparse.Namespace, cold: dict[Job, float]) -> list[Result]:
    """Every backend compiled (and checked against eager), then timed in `args.rounds` rounds, each
    round timing the backends one after the other: one Result per backend and round."""
    model, x = make_model(model_name, batch, args.device, args.small)
    compiled: list[tuple[Result, Callable[[], Any], Callable[[Result], None]]] = []
    torch._dynamo.reset()  # no reset between backends: dynamo keeps each backend's code apart
    with torch.no_grad():
        expected = model(x)
        for backend in backends:
            result = Result(model_name, batch, backend)
            start = time.perf_counter()
            function, record = compiled_by(backend, model, x)
            got = function()
            if args.device == "cuda":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - start if backend != "eager" else 0.0
            job = Job(model_name, batch, backend, args.device, args.small)
            result.compile_s, result.warm_compile_s = (cold[job], elapsed) if job in cold else (elapsed, 0.0)
            result.max_abs_error, result.relative_l2_error = errors(got, expected)
            record(result)
            compiled.append((result, function, record))
        results = []
        for round_index in range(args.rounds):
            for first, function, record in compiled:
                result = dataclasses.replace(first, round=round_index + 1)
                if args.device == "cuda":
                    record(result)
                    captures_before, collections = result.graph_captures, _collections()
                    result.median_us = statistics.median(time_gpu(function, warmup=20, batches=11, batch_ms=10.0))
                    result.host_us = host_us_per_call(function)
                    result.gc_collections = [after - before for after, before in zip(_collections(), collections)]
                    record(result)
                    result.graph_captures -= captures_before
                    if args.profile and round_index == 0:
                        result.kernels_per_call, result.kernel_us_per_call, result.top_kernels = profile_kernels(function, args.profile)
                else:
                    record(result)
                results.append(result)
                print_result(result)
    for result in results:
        eager = next((r.median_us for r in results if r.backend == "eager" and r.round == result.round), 0.0)
        result.speedup_vs_eager = eager / result.median_us if result.median_us and eager else 0.0
    return results


def _collections() -> list[int]:
    return [generation["collections"] for generation in gc.get_stats()]


def print_result(r: Result) -> None:
    print(
        f"{r.model:<12} B={r.batch:<3} {r.backend:<10} r{r.round} compile {r.compile_s:6.2f} s (warm {r.warm_compile_s:5.2f})"
        f" {r.median_us:9.1f} us  {r.kernels_per_call:5.1f} kernels {r.kernel_us_per_call:8.1f} us"
        f"  max|err| {r.max_abs_error:.2e} rel {r.relative_l2_error:.1e}",
        flush=True,
    )
    if r.backend.startswith("mlc"):
        where = ", ".join(f"{op} x{n}" for op, n in sorted(r.in_pytorch.items())) or "none"
        print(f"    in PyTorch: {where}; CUDA graphs per program: {r.cuda_graphs}", flush=True)
    if r.host_us:
        print(
            f"    host {r.host_us:.1f} us per call; during the timing: {r.graph_captures} graph captures,"
            f" gc collections {r.gc_collections}",
            flush=True,
        )
    for name, device_us, launches in r.top_kernels:
        print(f"    {device_us:8.1f} us  x{launches:<4g} {name}", flush=True)


def print_table(results: list[Result]) -> None:
    print(f"\n{'model':<12} {'batch':>5} {'backend':<10} {'round':>5} {'compile s':>9} {'median us':>10} {'kernels':>8} {'vs eager':>9}")
    for r in results:
        print(
            f"{r.model:<12} {r.batch:>5} {r.backend:<10} {r.round:>5} {r.compile_s:9.2f} {r.median_us:10.1f}"
            f" {r.kernels_per_call:8.1f} {r.speedup_vs_eager:8.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="cnn,transformer")
    parser.add_argument("--batches", default="1,4,8")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--profile", type=int, nargs="?", const=8, default=0, help="list the N costliest kernels (8)")
    parser.add_argument("--jobs", type=int, default=1, help="compile in N worker processes first (cold caches)")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--rounds", type=int, default=1, help="time every backend N times, round after round")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    models, batches, backends = args.models.split(","), [int(b) for b in args.batches.split(",")], args.backends.split(",")
    cold: dict[Job, float] = {}
    if args.jobs > 1:
        os.environ.setdefault("MLC_CACHE_DIR", tempfile.mkdtemp(prefix="mlc-cache-"))
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-cache-"))
        jobs = [Job(m, b, k, args.device, args.small) for m in models for b in batches for k in backends if k != "eager"]
        cold = compile_in_workers(jobs, args.jobs)
    results: list[Result] = []
    for model_name in models:
        for batch in batches:
            results += bench(model_name, batch, backends, args, cold)
    print_table(results)
    if args.json:
        write_record(args.json, args.device, results)


if __name__ == "__main__":
    main()
