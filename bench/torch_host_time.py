"""Where the host time of a torch.compile'd call goes at batch 1 (issue 18): each layer of the call
timed on its own, on the GPU, against the same model exported.

    python bench/torch_host_time.py [--batch 1] [--small] [--calls 200] [--device cuda|cpu]

The transformer layer of `models.py` (f16, eval, `no_grad`). Host µs per call (`calls`
back-to-back calls before waiting for the device, best of 5) of, from the outside in:

* `eager`: the module; `dynamo, identity backend`: `torch.compile(backend=lambda gm, _: gm.forward)`,
  dynamo's own cost around PyTorch's kernels;
* `mlc, torch.compile`: the whole call; `backend callable`: what mlc's backend returned (the
  parameter-change check and the fused graph), called on the arguments dynamo passed it;
  `program.run_on_device`: the mlc program alone on the partition's prepared tensors;
* `mlc-export`: the exported program's `run_on_device` on the input and a preallocated output.

The differences between consecutive lines are each layer's cost. Timings are host times: a line
whose kernels take longer than its host time shows the device's time instead. `--device cpu`
(f32, kernels run on the calling thread: every line includes them) checks the script without a GPU
and times the layers that are not the GPU runtime's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

from models import make_model  # noqa: E402


def host_us(function: Callable[[], Any], calls: int) -> float:
    """Best of 5 of the host µs per call of `calls` back-to-back calls."""
    synchronize = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(20):
        function()
    best = float("inf")
    for _ in range(5):
        synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - start) / calls * 1e6)
    synchronize()
    return best


def main() -> None:
    import mlc
    from mlc.frontend.torch import import_exported
    from mlc.frontend.torch.backend import MlcPartition, mlc_backend

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    model, x = make_model("transformer", args.batch, args.device, args.small)
    seen: dict[str, Any] = {}

    def recording(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = mlc_backend(gm, example_inputs)
        seen["callable"] = compiled

        def call(*arguments: Any) -> Any:
            seen.setdefault("arguments", arguments)
            return compiled(*arguments)

        return call

    rows: list[tuple[str, float]] = []
    with torch.no_grad():
        identity = torch.compile(model, backend=lambda gm, _: gm.forward, dynamic=False)
        through_mlc = torch.compile(model, backend=recording, dynamic=False)
        through_mlc(x)
        backend_callable, arguments = seen["callable"], seen["arguments"]
        partitions = [m for m in gc_objects() if type(m) is MlcPartition]
        exported = mlc.compile(import_exported(torch.export.export(model, (x,))), device=args.device)
        output = torch.empty_like(model(x))
        cpu = args.device == "cpu"
        rows.append(("eager", host_us(lambda: model(x), args.calls)))
        rows.append(("dynamo, identity backend", host_us(lambda: identity(x), args.calls)))
        rows.append(("mlc, torch.compile", host_us(lambda: through_mlc(x), args.calls)))
        rows.append(("backend callable", host_us(lambda: backend_callable(*arguments), args.calls)))
        if len(partitions) == 1:
            partition = partitions[0]
            tensors = partition_inputs(backend_callable, arguments)
            outputs = [torch.empty(shape, dtype=dtype, device=args.device) for shape, dtype in partition.result_specs]
            if tensors is not None and cpu:
                arrays = [t.numpy() for t in tensors]
                rows.append(("program call (numpy)", host_us(lambda: partition.compiled(*arrays), args.calls)))
            elif tensors is not None:
                rows.append(("program.run_on_device", host_us(lambda: partition.compiled.run_on_device(*tensors, outputs=outputs), args.calls)))
        if cpu:
            rows.append(("mlc-export call (numpy)", host_us(lambda: exported(x.numpy()), args.calls)))
        else:
            rows.append(("mlc-export run_on_device", host_us(lambda: exported.run_on_device(x, outputs=[output]), args.calls)))
    where = torch.cuda.get_device_name() if not cpu else "CPU"
    print(f"transformer, batch {args.batch}, {where}, mlc from {mlc.__file__}")
    for name, microseconds in rows:
        print(f"  {name:<28} {microseconds:8.1f} us")


def gc_objects() -> list[Any]:
    import gc

    return gc.get_objects()


def partition_inputs(backend_callable: Any, arguments: tuple[Any, ...]) -> list[torch.Tensor] | None:
    """The tensors the one partition receives, captured from a call of the fused graph."""
    from mlc.frontend.torch.backend import MlcPartition

    captured: list[torch.Tensor] = []
    original = MlcPartition.forward

    def capture(self: Any, *tensors: torch.Tensor) -> Any:
        captured.extend((t.detach() if t.requires_grad else t).contiguous() for t in tensors)
        return original(self, *tensors)

    MlcPartition.forward = capture  # type: ignore[method-assign]
    try:
        backend_callable(*arguments)
    finally:
        MlcPartition.forward = original  # type: ignore[method-assign]
    return captured or None


if __name__ == "__main__":
    main()
