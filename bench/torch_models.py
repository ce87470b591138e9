"""PyTorch modules through `torch.compile(backend="mlc")` against eager PyTorch and Inductor (issue 18).

    python bench/torch_models.py [--models mlp,transformer,cnn16,cnn32] [--backends eager,inductor,mlc]
                                 [--profile [N]] [--rounds N] [--small] [--json FILE]

Models (eval mode, no autograd, CUDA): the fp16 MLP block of a transformer (x + W2 gelu_tanh(W1 x
+ b1) + b2, 4096 tokens, 1024 -> 4096 -> 1024), `torch.nn.TransformerEncoderLayer` in f16 (batch
8, 512 tokens, d_model 1024, 16 heads, feed-forward 4096, batch first), and a small CNN (three
conv3x3-batchnorm-relu-maxpool stages 3 -> 32 -> 64 -> 128 channels on 32x3x128x128, global
average pooling, a linear head) in f16 and f32. All backends run in this one process on the same
inputs: eager, Inductor (`torch.compile` with its default backend) and mlc (`torch.compile` with
mlc's backend callable with its default `attention="auto"`: the GPU machine runs mlc from a
source tree, without its entry point); for the transformer also `mlc-attention` and `mlc-sdpa`,
mlc with the backend option `attention="mlc"` (PyTorch's fused SDPA kernel compiled by mlc as
attention) and `attention="pytorch"` (left to PyTorch).

Per model and backend: the compile time (the first call, synchronized:
tracing, AOT autograd, the backend's compile), the result's distance from eager's (max abs
error, relative L2 error), then the steady time per call (`harness.time_gpu`: warm-up, batches
of back-to-back calls between CUDA events, median) and the speed against eager. For mlc, which
ATen nodes ran in PyTorch (the backend's `Explanation`), grouped by op. `--profile [N]` adds each
backend's N (8) most expensive CUDA kernels (torch.profiler over a few calls; mlc's kernels are
launched through the driver API and show under their PTX names). `--rounds N` times every
backend of a model N times, round after round, after compiling each once. `--small` shrinks every shape
(a smoke run, also on the CPU with `--device cpu`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from harness import time_gpu  # noqa: E402


class MlpBlock(torch.nn.Module):
    """The MLP block of a transformer layer, with its residual."""

    def __init__(self, model: int, hidden: int) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(model, hidden), torch.nn.Linear(hidden, model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(x), approximate="tanh"))


class SmallCnn(torch.nn.Module):
    """Conv-batchnorm-relu-maxpool stages, global average pooling, a linear head."""

    def __init__(self, channels: tuple[int, ...] = (3, 32, 64, 128), classes: int = 10) -> None:
        super().__init__()
        stages = []
        for inner, outer in zip(channels, channels[1:]):
            stages += [
                torch.nn.Conv2d(inner, outer, 3, padding=1),
                torch.nn.BatchNorm2d(outer),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2),
            ]
        self.features = torch.nn.Sequential(*stages)
        self.head = torch.nn.Linear(channels[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


@dataclass
class Model:
    name: str
    make: Callable[[], torch.nn.Module]
    input_shape: tuple[int, ...]
    dtype: torch.dtype
    has_attention: bool = False


def models(small: bool) -> dict[str, Model]:
    """The benchmarked models; `small` divides their sizes for a smoke run."""
    tokens, width, hidden, heads, batch, length = (64, 64, 128, 4, 2, 16) if small else (4096, 1024, 4096, 16, 8, 512)
    images, side = (2, 16) if small else (32, 128)

    def transformer() -> torch.nn.Module:
        return torch.nn.TransformerEncoderLayer(width, heads, hidden, dropout=0.0, batch_first=True)

    return {
        "mlp": Model("fp16 MLP block", lambda: MlpBlock(width, hidden), (tokens, width), torch.float16),
        "transformer": Model("TransformerEncoderLayer f16", transformer, (batch, length, width), torch.float16, True),
        "cnn16": Model("CNN conv-bn-relu-pool x3 f16", SmallCnn, (images, 3, side, side), torch.float16),
        "cnn32": Model("CNN conv-bn-relu-pool x3 f32", SmallCnn, (images, 3, side, side), torch.float32),
    }


@dataclass
class Result:
    model: str
    backend: str
    compile_s: float
    median_us: float
    speedup_vs_eager: float = 0.0
    max_abs_error: float = 0.0
    relative_l2_error: float = 0.0
    in_pytorch: dict[str, int] = field(default_factory=dict)
    nodes_in_mlc: int = 0
    top_kernels: list[tuple[str, float, int]] = field(default_factory=list)
    round: int = 1


def mlc_compiled(model: torch.nn.Module, attention: str = "auto") -> tuple[Callable[..., Any], Any]:
    """The model compiled with mlc's backend, and the Explanation it fills while compiling."""
    from mlc.frontend.torch.backend import Explanation, mlc_backend

    explanation = Explanation()

    def recording_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        return mlc_backend(gm, example_inputs, explanation=explanation, attention=attention)

    return torch.compile(model, backend=recording_backend, dynamic=False), explanation


ATTENTION_OPTIONS = {"mlc": "auto", "mlc-attention": "mlc", "mlc-sdpa": "pytorch"}
"""The mlc backends' `attention` option (`mlc.frontend.torch.backend`)."""


def compiled_by(backend: str, model: torch.nn.Module) -> tuple[Callable[..., Any], Any]:
    if backend == "eager":
        return model, None
    if backend == "inductor":
        return torch.compile(model, dynamic=False), None
    return mlc_compiled(model, ATTENTION_OPTIONS[backend])


def top_kernels(function: Callable[[], Any], count: int = 8) -> list[tuple[str, float, int]]:
    """(kernel name, CUDA µs per call, launches per call) of the `count` costliest kernels."""
    return [(name, device_us, int(launches)) for name, device_us, launches in profiled_kernels(function, 5)[:count]]


def profiled_kernels(function: Callable[[], Any], calls: int) -> list[tuple[str, float, float]]:
    """Every CUDA kernel of `function` as (name, device µs per call, launches per call), costliest
    first, from torch.profiler over `calls` calls."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        for _ in range(calls):
            function()
        torch.cuda.synchronize()
    rows = []
    for event in profiler.key_averages():
        device_us = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0.0)
        if device_us > 0:
            rows.append((event.key[:140], device_us / calls, event.count / calls))
    return sorted(rows, key=lambda row: -row[1])


def errors(got: torch.Tensor, want: torch.Tensor) -> tuple[float, float]:
    got, want = got.float(), want.float()
    return float((got - want).abs().max()), float((got - want).norm() / want.norm().clamp_min(1e-30))


def bench_model(model_spec: Model, backends: list[str], device: str, profile: int, rounds: int = 1) -> list[Result]:
    """Every backend compiled (and checked against eager), then timed `rounds` times, round after
    round (no dynamo reset between backends: dynamo keeps each backend's code apart)."""
    torch.manual_seed(0)
    model = model_spec.make().to(device=device, dtype=model_spec.dtype).eval()
    x = torch.randn(model_spec.input_shape, device=device).to(model_spec.dtype)
    compiled: list[tuple[Result, Callable[..., Any]]] = []
    torch._dynamo.reset()
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        expected = model(x)
        for backend in backends:
            if backend in ("mlc-attention", "mlc-sdpa") and not model_spec.has_attention:
                continue
            function, explanation = compiled_by(backend, model)
            synchronize()
            start = time.perf_counter()
            got = function(x)
            synchronize()
            compile_s = time.perf_counter() - start if backend != "eager" else 0.0
            result = Result(model_spec.name, backend, compile_s, 0.0, *(0.0, *errors(got, expected)))
            if explanation is not None:
                result.nodes_in_mlc = len(explanation.in_mlc)
                result.in_pytorch = dict(Counter(record.op for record in explanation.in_pytorch))
            compiled.append((result, function))
        results: list[Result] = []
        for round_index in range(rounds):
            for first, function in compiled:
                result = replace(first, round=round_index + 1)
                if device == "cuda":
                    result.median_us = statistics.median(time_gpu(lambda: function(x), warmup=10, batches=11, batch_ms=20.0))
                    if profile and round_index == 0:
                        result.top_kernels = top_kernels(lambda: function(x), profile)
                results.append(result)
                print_result(result, flush=True)
    for result in results:
        eager = next((r.median_us for r in results if r.backend == "eager" and r.round == result.round), 0.0)
        result.speedup_vs_eager = eager / result.median_us if result.median_us and eager else 0.0
    return results


def print_result(result: Result, flush: bool = False) -> None:
    print(
        f"{result.model:<30} {result.backend:<9} r{result.round} compile {result.compile_s:7.2f} s  {result.median_us:10.1f} us"
        f"  max|err| {result.max_abs_error:.2e}  rel {result.relative_l2_error:.1e}",
        flush=flush,
    )
    if result.backend.startswith("mlc"):
        where = ", ".join(f"{op} x{count}" for op, count in sorted(result.in_pytorch.items())) or "none"
        print(f"    {result.nodes_in_mlc} ATen node(s) in mlc; in PyTorch: {where}")
    for name, device_us, launches in result.top_kernels:
        print(f"    {device_us:9.1f} us  x{launches:<3} {name}")


def print_table(results: list[Result]) -> None:
    print(f"\n{'model':<30} {'backend':<9} {'round':>5} {'compile s':>9} {'median us':>10} {'vs eager':>9}")
    for r in results:
        print(f"{r.model:<30} {r.backend:<9} {r.round:>5} {r.compile_s:9.2f} {r.median_us:10.1f} {r.speedup_vs_eager:8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,transformer,cnn16,cnn32")
    parser.add_argument("--backends", default="eager,inductor,mlc,mlc-attention")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--profile", type=int, nargs="?", const=8, default=0, help="list the N costliest kernels (8)")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--rounds", type=int, default=1, help="time every backend N times, round after round")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    chosen, backends = models(args.small), args.backends.split(",")
    results: list[Result] = []
    for name in args.models.split(","):
        results += bench_model(chosen[name], backends, args.device, args.profile, args.rounds)
    print_table(results)
    if args.json:
        write_record(args.json, args.device, results)


def write_record(path: Path, device: str, results: list[Any]) -> None:
    """The run's rows (dataclasses) as JSON, with the device, PyTorch's version and the command."""
    record = {
        "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "command": " ".join(sys.argv),
        "results": [asdict(r) for r in results],
    }
    path.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
