"""The cached compile in a fresh process, for several source trees of mlc, alternating: an A/B in one run.

    python bench/cache_hit_trees.py --trees base=PATH,branch=PATH [--device cuda] [--hits 3]

For each tree (a directory holding `mlc/` and `bench/compile_time.py`), the fp16 MLP block of
`bench/compile_time.py` is compiled once into a cache directory of that tree's own, then compiled
again `--hits` times, each in a new process (`python -c`, that tree first on `sys.path`), the
trees alternating (base, branch, base, ...). Each hit is timed inside its process after
`import mlc, numpy` (and, on the GPU, after opening the device, timed apart), as
`bench/compile_time.py` times it; printed per tree: wall and process CPU milliseconds.

Limits: the program is the fp16 MLP block only; the trees share the interpreter and packages.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HIT = """
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy
import mlc
sys.path.insert(0, sys.argv[1] + "/bench")
from compile_time import MLP
if sys.argv[2] == "cuda":
    from mlc.runtime import get_device
    get_device()
start, cpu = time.perf_counter(), time.process_time()
mlc.compile(MLP, device=sys.argv[2])
print(f"{(time.perf_counter() - start) * 1e3:.1f} {(time.process_time() - cpu) * 1e3:.1f}")
"""


def hit(tree: str, device: str, cache_dir: str) -> tuple[float, float]:
    search_path = os.pathsep.join(part for part in (tree, os.environ.get("PYTHONPATH", "")) if part)
    environment = dict(os.environ, MLC_CACHE_DIR=cache_dir, MLC_CACHE="1", PYTHONPATH=search_path)
    done = subprocess.run([sys.executable, "-c", HIT, tree, device], capture_output=True, text=True, env=environment, check=True)
    wall, cpu = map(float, done.stdout.split())
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trees", required=True, help="NAME=PATH pairs separated by commas")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--hits", type=int, default=3)
    args = parser.parse_args()
    trees = dict(pair.split("=", 1) for pair in args.trees.split(","))
    with tempfile.TemporaryDirectory() as root:
        caches = {name: os.path.join(root, name) for name in trees}
        for name, tree in trees.items():
            hit(os.path.abspath(tree), args.device, caches[name])  # the miss that fills the cache
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        for _ in range(args.hits):
            for name, tree in trees.items():
                results[name].append(hit(os.path.abspath(tree), args.device, caches[name]))
    for name, times in results.items():
        walls = ", ".join(f"{wall:.1f}" for wall, _ in times)
        cpus = ", ".join(f"{cpu:.1f}" for _, cpu in times)
        print(f"{name}: cached hit, wall ms {walls}; CPU ms {cpus}")


if __name__ == "__main__":
    main()
