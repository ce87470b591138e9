"""Process CPU time of the GPU compile of one bench program, per pass, without a GPU (issue 17).

    python bench/pass_cpu_times.py ["fp16 MLP"]

Compiles the 512^3 matmul of `bench/compile_time.py` once (imports, caches), then the named
program (default the fp16 MLP block): every pass of `mlc-lower-to-gpu{arch=sm_90}` applied one by
one, the final verification, then `mlc.backend.compile_to_ptx(module, "sm_90")`, each timed with
`time.process_time()` (CPU time, which other processes' load disturbs less than wall time on a
shared machine). Prints one JSON line: the total, the lowering, the PTX and the slowest passes, in
ms. To compare two checkouts, run each in its own process, interleaved, and take medians.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

PIPELINE_ARCH = "sm_90"


def lower_timed(source: str, seconds: dict[str, float]) -> object:
    """`source` lowered pass by pass; adds each pass's CPU seconds (and 'verify') to `seconds`."""
    from mlc.diagnostics import parse_module
    from mlc.dialects import make_context
    from mlc.transforms.pipelines import LowerToGpu

    context = make_context()
    module, _ = parse_module(source, context, "<bench>")
    for module_pass in LowerToGpu(arch=PIPELINE_ARCH).passes():
        start = time.process_time()
        module_pass.apply(context, module)
        seconds[module_pass.name] = seconds.get(module_pass.name, 0.0) + time.process_time() - start
    start = time.process_time()
    module.verify()
    seconds["verify"] = time.process_time() - start
    return module


def main() -> None:
    import compile_time

    from mlc import backend

    name = sys.argv[1] if len(sys.argv) > 1 else "fp16 MLP"
    lower_timed(compile_time.MATMUL, {})
    seconds: dict[str, float] = {}
    start = time.process_time()
    module = lower_timed(compile_time.PROGRAMS[name], seconds)
    lowered = time.process_time()
    backend.compile_to_ptx(module, arch=PIPELINE_ARCH)  # type: ignore[arg-type]
    end = time.process_time()
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:9]
    row = {"total": end - start, "lowering": lowered - start, "ptx": end - lowered, **dict(slowest)}
    print(json.dumps({key: round(value * 1000) for key, value in row.items()}))


if __name__ == "__main__":
    main()
