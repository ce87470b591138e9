"""Page faults of fresh results on the CPU: the tanh chain of `bench/cpu.py`, call by call.

    python bench/cpu_faults.py THREADS LABEL [notorch]

tanh(x*y + x) on 4096x1024 f32 (16 MiB a result), 2 rounds of 15 calls of each variant; each row
has the best and median time of the last 12 calls, the first call's time, the minor page faults
per call (median, max) and the process's system CPU time per call (page clears show there):

* `mlc fresh`: `compiled(x, y)`, a new result every call (on the branch cpu12: `ResultBlocks`);
* `mlc fresh (numpy alloc)`: the same, the program's results taken from numpy every call as
  before cpu12 (its CpuExecutor's recycling threshold raised past any result; on trees without
  `ResultBlocks` the row is absent);
* `mlc out=`: `run_on_device(x, y, outputs=[out])` into one array written before (the kernel alone);
* `torch fresh`, `torch out=` (unless `notorch`): PyTorch's `torch.tanh(x * y + x)`, and with
  `out=` (its two temporaries are still fresh).

Which of these land on fresh pages depends on glibc's malloc state in the process; run with
`GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072` to force every block of 128 KiB or more to be a
fresh mapping (the worst case, the same in every process). LABEL names the tree in the output.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

import mlc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import tanh_chain_case  # noqa: E402 - bench/cpu.py, beside this script

THREADS, LABEL = int(sys.argv[1]), sys.argv[2]
WITH_TORCH = sys.argv[3:] != ["notorch"]
CALLS, WARM = 15, 3
ROWS, COLUMNS = 4096, 1024


def usage() -> tuple[int, float]:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_minflt, used.ru_stime


def main() -> None:
    torch.set_num_threads(THREADS)
    source = tanh_chain_case(ROWS, COLUMNS).source
    generator = np.random.default_rng(0)
    x, y = [generator.standard_normal((ROWS, COLUMNS)).astype(np.float32) for _ in range(2)]
    compiled = mlc.compile(source, device="cpu", num_threads=THREADS)
    cases = {"mlc fresh": lambda: compiled(x, y)}
    if hasattr(compiled.program.executor, "_recycled_bytes"):
        from_numpy = mlc.compile(source, device="cpu", num_threads=THREADS)
        from_numpy.program.executor._recycled_bytes = 1 << 62
        cases["mlc fresh (numpy alloc)"] = lambda: from_numpy(x, y)
    out = np.zeros_like(x)
    cases["mlc out="] = lambda: compiled.run_on_device(x, y, outputs=[out])
    if WITH_TORCH:
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        torch_out = torch.zeros_like(tx)
        cases["torch fresh"] = lambda: torch.tanh(tx * ty + tx)
        cases["torch out="] = lambda: torch.tanh(torch.add(torch.mul(tx, ty), tx), out=torch_out)
    for round_index in range(2):
        for name, function in cases.items():
            times, faults, system = [], [], []
            for _ in range(CALLS):
                faults_before, system_before = usage()
                start = time.perf_counter()
                function()
                end = time.perf_counter()
                faults_after, system_after = usage()
                times.append((end - start) * 1e3)
                faults.append(faults_after - faults_before)
                system.append((system_after - system_before) * 1e3)
            timed = slice(WARM, None)
            middle = (CALLS - WARM) // 2
            print(f"{LABEL} T={THREADS} r{round_index} {name:24s} best {min(times[timed]):7.3f} median {sorted(times[timed])[middle]:7.3f} ms | "
                  f"first {times[0]:7.3f} | faults/call median {sorted(faults[timed])[middle]:6d} max {max(faults[timed]):6d} | "
                  f"sys ms/call median {sorted(system[timed])[middle]:.3f}", flush=True)


if __name__ == "__main__":
    main()
