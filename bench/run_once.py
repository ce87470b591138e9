"""Runs every benchmark case's mlc kernels once, checked against PyTorch and not timed.

This is how the benchmarks' kernels are run under NVIDIA compute-sanitizer (README, "Testing"):
one call per case keeps the sanitizer's slowdown bearable, and the check makes sure the kernels
did their work. Select cases with `--only TEXT` (a substring of the case name).

    compute-sanitizer --tool memcheck python3 bench/run_once.py
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import elementwise  # noqa: E402 - the benchmark modules live beside this script
import matmul  # noqa: E402
import reductions  # noqa: E402
from harness import _check, mlc_callable  # noqa: E402


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the cases whose name contains this text")
    parser.add_argument("--exclude", action="append", default=[], help="skip the cases whose name contains this text")
    args = parser.parse_args()
    generator = torch.Generator(device="cuda").manual_seed(0)
    cases = [*elementwise.cases(), *reductions.cases(), *matmul.cases()]
    selected = [
        case
        for case in cases
        if (args.only is None or args.only in case.name) and not any(text in case.name for text in args.exclude)
    ]
    for case in selected:
        inputs = case.make_inputs(generator)
        call, output = mlc_callable(case, inputs)
        call()
        torch.cuda.synchronize()
        _check(case.name, output, case.torch_function(*inputs), case.tolerance)
        print(f"{case.name}: ok", flush=True)
        del inputs, output
    print(f"{len(selected)} cases ran once and matched PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
