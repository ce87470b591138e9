"""Why is -x of 4096x1024 f32 at 16 threads fast in some processes and 3-5x slower in others?

    python bench/cpu_modes.py [--processes 10] [--threads 16] [--json out.json] [--latency] [--sized 4]

Fresh processes, one after another (every other one without PyTorch imported), each measuring:

* the case as `bench/cpu.py --threads 16 --rounds 2 --only negate` runs it (the same inputs, mlc's
  native call with its recycled result, `torch.neg(x)` and `torch.neg(x, out=o)`, turns
  interleaved, each after `wait_until_quiet`, best of 20 calls and 50 ms);
* what the machine ran in the 0.3 s before the process started (busy CPUs, the three busiest
  processes: `machine_load`);
* the predictors: where x and mlc's result lie (their distance modulo 16 MiB, 2 MiB and 4 KiB;
  their huge-page share and median physical address, `physical_pages`), the L2 page colours of
  each thread's share (below), the CPU each pool worker last ran on, the run-queue wait of the
  process's threads and the host's stolen time during the mlc turn;
* then the suspects forced within the process (`run_on_device(x, outputs=[out])`, best of 50 calls
  and 50 ms each): the output on a fresh huge-page mapping, on numpy's heap, at chosen distances
  after x modulo 16 MiB; x and the output copied to huge pages and to 4 KiB pages; the pool's
  workers pinned one to a CPU; -x of 4 to 256 MiB at 16 threads and of 16 MiB at 8 threads (what
  a thread's share of 0.25-16 MiB in and out costs: where the caches stop holding it; in the first
  `--sized` processes).

Page colours. A 2 MiB, 16-way L2 (the Intel host's) has 2048 sets: a 4 KiB page covers 64 of them,
chosen by physical address bits 12-16, so there are 32 colours and 16 pages of each fill it. A
thread's share of -x at 16 threads is 1 MiB of x and 1 MiB of the result, 512 pages: exactly the
L2 when its colours are even (huge pages) and more than it when they are not (4 KiB pages lie where
the kernel found them; under a guest, where the host found them too, which the guest cannot see).
`l2_overfull` is the most pages of one colour in one share minus 16 (0: fits exactly).

With `--latency`, the probe also measures the cache-line round trip between each pair of CPUs (a
small C program, `cc -O2 -pthread`): on a virtual machine, CPUs on another die or socket of the
host show as pairs of longer round trips, which the guest's topology does not report.

`--child` is the per-process part (the driver passes it); its JSON goes to `--json`.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import cpu as bench  # noqa: E402 - bench/cpu.py, beside this script
from cpu_physical import huge_block  # noqa: E402

ROWS, COLUMNS = 4096, 1024
HUGE = 2 << 20
SPAN = 16 << 20
L2_COLOURS = 32
SIZES = (1024, 2048, 3072, 5120, 8192, 65536)
OFFSETS = (-16, 0, 32, 64, 4096, 1 << 20, 8 << 20)


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=10)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--latency", action="store_true")
    parser.add_argument("--sized", type=int, default=4, help="the first N processes also time -x of other sizes")
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--torch", type=int, default=1)
    parser.add_argument("--sizes", action="store_true", help="(child) also -x of other sizes and thread counts")
    return parser.parse_args()


def tasks() -> dict[int, dict[str, object]]:
    """The process's threads: name, last CPU, on-CPU and run-queue nanoseconds (schedstat)."""
    found = {}
    for task in os.listdir("/proc/self/task"):
        try:
            base = f"/proc/self/task/{task}"
            name = Path(f"{base}/comm").read_text().strip()
            cpu = int(Path(f"{base}/stat").read_text().rsplit(")", 1)[1].split()[36])
            running, waiting = (int(v) for v in Path(f"{base}/schedstat").read_text().split()[:2])
        except (OSError, ValueError, IndexError):
            continue
        found[int(task)] = {"name": name, "cpu": cpu, "run_ns": running, "wait_ns": waiting}
    return found


def steal_ticks() -> int:
    """The host's stolen time so far over all CPUs, in USER_HZ ticks (/proc/stat)."""
    try:
        return int(Path("/proc/stat").read_text().splitlines()[0].split()[8])
    except (OSError, IndexError, ValueError):
        return -1


def measure(function: Callable[[], object], repeats: int = 20) -> dict[str, float]:
    """Best ms of `function` (`bench.best_seconds` after `bench.wait_until_quiet`), with the
    run-queue wait of all the process's threads and the stolen ticks while it ran."""
    bench.wait_until_quiet()
    before, stolen = tasks(), steal_ticks()
    seconds = bench.best_seconds(function, repeats)
    after = tasks()
    waited = sum(after[t]["wait_ns"] - before[t]["wait_ns"] for t in after if t in before)  # type: ignore[operator]
    return {"ms": round(seconds * 1e3, 4), "runqueue_ms": round(waited / 1e6, 2), "steal_ticks": steal_ticks() - stolen}


def frames(array: np.ndarray) -> list[int]:
    """The physical frame number of each 4 KiB page of `array` (0 where hidden: no CAP_SYS_ADMIN)."""
    first, count = array.ctypes.data // 4096, -(-(array.ctypes.data % 4096 + array.nbytes) // 4096)
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(first * 8)
            entries = struct.unpack(f"<{count}Q", pagemap.read(count * 8))
    except (OSError, struct.error):
        return []
    return [entry & ((1 << 55) - 1) if entry >> 63 else 0 for entry in entries]


def l2_overfull(x: np.ndarray, out: np.ndarray, shares: int) -> int | None:
    """The most 4 KiB pages of one L2 colour in one thread's share of x and of `out`, minus the
    16 that fill the colour (see the module docstring); None where frames are hidden."""
    fx, fo = frames(x), frames(out)
    if not fx or not any(fx) or not fo or not any(fo):
        return None
    worst = 0
    for share in range(shares):
        counts = [0] * L2_COLOURS
        for pages, array in ((fx, x), (fo, out)):
            start = array.ctypes.data % 4096 + share * array.nbytes // shares
            for page in pages[start // 4096 : -(-(start + array.nbytes // shares) // 4096)]:
                counts[page % L2_COLOURS] += 1
        worst = max(worst, max(counts))
    return worst - 16


def as_matrix(raw: np.ndarray, rows: int = ROWS) -> np.ndarray:
    return raw[: rows * COLUMNS * 4].view(np.float32).reshape(rows, COLUMNS)


def after(x: np.ndarray, distance: int, keep: list[mmap.mmap]) -> np.ndarray:
    """A zeroed 4096x1024 f32 array on huge pages starting `distance` bytes after x modulo 16 MiB."""
    raw = huge_block(2 * SPAN, keep)
    start = (x.ctypes.data + distance - raw.ctypes.data) % SPAN
    out = as_matrix(raw[start:])
    out[...] = 0
    return out


def layout(x: np.ndarray, out: np.ndarray, shares: int) -> dict[str, object]:
    d = out.ctypes.data - x.ctypes.data
    fx, fo = bench.physical_pages(x), bench.physical_pages(out)
    return {"x_mod_4k": x.ctypes.data % 4096, "x_mod_2m": x.ctypes.data % HUGE, "out_mod_2m": out.ctypes.data % HUGE,
            "out_after_x_16m": d % SPAN, "out_after_x_2m": d % HUGE, "out_after_x_4k": d % 4096,
            "x_thp": round(fx[0], 3), "x_gib": round(fx[1], 2), "out_thp": round(fo[0], 3), "out_gib": round(fo[1], 2),
            "x_map_thp": round(bench.huge_page_share(x), 3), "out_map_thp": round(bench.huge_page_share(out), 3),
            "l2_overfull": l2_overfull(x, out, shares)}


def pin(threads: list[int]) -> dict[int, int]:
    """Pins each thread id to a CPU of its own (the calling thread's current CPU first); returns
    the placement. `unpin` undoes it."""
    cpus = sorted(os.sched_getaffinity(0))
    first = bench.current_cpu()
    order = [first] + [cpu for cpu in cpus if cpu != first]
    placement = {}
    for tid, cpu in zip(threads, order * (len(threads) // len(order) + 1)):
        os.sched_setaffinity(tid, {cpu})
        placement[tid] = cpu
    return placement


def child(arguments: argparse.Namespace) -> dict[str, object]:
    import mlc

    threads = arguments.threads
    torch = None
    if arguments.torch:
        import torch

        torch.set_num_threads(threads)
    record: dict[str, object] = {"pid": os.getpid(), "torch": bool(arguments.torch), "affinity": sorted(os.sched_getaffinity(0)),
                                 "native_call": os.environ.get("MLC_CPU_CALL", "") != "python"}
    generator = np.random.default_rng(0)
    x = generator.standard_normal((ROWS, COLUMNS)).astype(np.float32)  # as bench/cpu.py's run_case
    compiled = mlc.compile(bench.negate_case(ROWS, COLUMNS).source, device="cpu", num_threads=threads)
    result = compiled(x)
    assert np.array_equal(result, -x)
    for _ in range(bench.SETTLING_CALLS):
        compiled(x)
    record["layout"] = layout(x, result, threads)
    result_address = result.ctypes.data
    del result
    pool = sorted(t for t, info in tasks().items() if info["name"] == "mlc-pool")
    main_tid = threading.get_native_id()
    implementations: list[tuple[str, Callable[[], object]]] = [("mlc", lambda: compiled(x))]
    if torch is not None:
        tensor = torch.from_numpy(x)
        out_tensor = torch.empty_like(tensor)
        implementations += [("torch", lambda: torch.neg(tensor)), ("torch_out", lambda: torch.neg(tensor, out=out_tensor))]
        for _, function in implementations[1:]:
            for _ in range(bench.SETTLING_CALLS):
                function()
        record["torch_out_after_x_16m"] = (out_tensor.data_ptr() - x.ctypes.data) % SPAN
        record["torch_fresh_after_x_16m"] = (torch.neg(tensor).data_ptr() - x.ctypes.data) % SPAN
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name, _ in implementations}
    for _ in range(2):
        for name, function in implementations:
            rounds[name].append(measure(function))
            if name == "mlc":
                now = tasks()
                rounds[name][-1]["worker_cpus"] = [now[t]["cpu"] for t in pool if t in now]  # type: ignore[assignment]
                rounds[name][-1]["main_cpu"] = now.get(main_tid, {}).get("cpu", -1)  # type: ignore[assignment]
    record["rounds"] = rounds
    again = compiled(x)
    record["same_result_memory"] = again.ctypes.data == result_address
    del again

    keep: list[mmap.mmap] = []
    forced: dict[str, object] = {}
    own = compiled(x)

    def into(xv: np.ndarray, out: np.ndarray) -> dict[str, object]:
        compiled.run_on_device(xv, outputs=[out])
        assert np.array_equal(out, -xv)
        return measure(lambda: compiled.run_on_device(xv, outputs=[out]), 50) | {"out_after_x_16m": (out.ctypes.data - xv.ctypes.data) % SPAN}

    forced["own result"] = into(x, own)
    fresh = as_matrix(huge_block(SPAN, keep))
    fresh[...] = 0
    forced["fresh huge out"] = into(x, fresh)
    heap = np.zeros((ROWS, COLUMNS), np.float32)
    forced["heap out"] = into(x, heap) | {"out_thp": round(bench.physical_pages(heap)[0], 3)}
    for distance in OFFSETS:
        forced[f"out at x{distance:+d} mod 16M"] = into(x, after(x, distance, keep))
    x_huge, out_huge = as_matrix(huge_block(SPAN, keep)), as_matrix(huge_block(SPAN, keep))
    x_huge[...], out_huge[...] = x, 0
    forced["x, out on own huge pages"] = into(x_huge, out_huge) | {"l2_overfull": l2_overfull(x_huge, out_huge, threads)}
    x_small, out_small = as_matrix(huge_block(SPAN, keep, huge=False)), as_matrix(huge_block(SPAN, keep, huge=False))
    x_small[...], out_small[...] = x, 0
    forced["x, out on 4 KiB pages"] = into(x_small, out_small) | {"l2_overfull": l2_overfull(x_small, out_small, threads)}
    forced["own result, again"] = into(x, own)
    if pool:
        placement = pin([main_tid, *pool])
        forced["pinned workers"] = into(x, own) | {"placement": list(placement.values())}
        everything = set(record["affinity"])  # type: ignore[arg-type]
        for tid in [main_tid, *pool]:
            os.sched_setaffinity(tid, everything)
        forced["unpinned again"] = into(x, own)
    if torch is not None:
        out_tensor_huge = torch.from_numpy(out_huge)
        forced["torch out= own huge pages"] = measure(lambda: torch.neg(tensor, out=out_tensor_huge), 50)
    record["forced"] = forced

    if arguments.sizes:
        sizes: dict[str, object] = {}
        for rows in SIZES:
            xs = generator.standard_normal((rows, COLUMNS), dtype=np.float32)
            program = mlc.compile(bench.negate_case(rows, COLUMNS).source, device="cpu", num_threads=threads)
            assert np.array_equal(program(xs), -xs)
            row = measure(lambda: program(xs), 20)
            row["GB_per_s"] = round(2 * xs.nbytes / row["ms"] / 1e6, 1)
            sizes[f"{rows} rows, {threads} threads"] = row
            del program
        eight = mlc.compile(bench.negate_case(ROWS, COLUMNS).source, device="cpu", num_threads=8)
        assert np.array_equal(eight(x), -x)
        sizes["4096 rows, 8 threads"] = measure(lambda: eight(x), 20)
        one = mlc.compile(bench.negate_case(ROWS, COLUMNS).source, device="cpu", num_threads=1)
        sizes["4096 rows, 1 thread"] = measure(lambda: one(x), 5)
        record["sizes"] = sizes
    return record


LATENCY_SOURCE = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Alignas(64) _Atomic long word;
static int rounds = 20000;
static void place(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *echo(void *arg) { place((int)(long)arg);
  for (long i = 0; i < rounds; ++i) { while (atomic_load(&word) != 2 * i + 1) ; atomic_store(&word, 2 * i + 2); } return NULL; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  for (int a = 0; a < n; ++a) { for (int b = 0; b < n; ++b) {
    if (a == b) { printf(" %4d", 0); continue; }
    atomic_store(&word, 0); pthread_t t; pthread_create(&t, NULL, echo, (void *)(long)b); place(a);
    struct timespec s, e; clock_gettime(CLOCK_MONOTONIC, &s);
    for (long i = 0; i < rounds; ++i) { atomic_store(&word, 2 * i + 1); while (atomic_load(&word) != 2 * i + 2) ; }
    clock_gettime(CLOCK_MONOTONIC, &e); pthread_join(t, NULL);
    printf(" %4ld", ((e.tv_sec - s.tv_sec) * 1000000000L + e.tv_nsec - s.tv_nsec) / rounds);
  } printf("\n"); fflush(stdout); }
  return 0;
}
"""


def latency_matrix() -> str:
    """The round trip of one cache line between each pair of CPUs in ns (rows: the first CPU)."""
    with tempfile.TemporaryDirectory() as folder:
        source, binary = Path(folder) / "latency.c", Path(folder) / "latency"
        source.write_text(LATENCY_SOURCE)
        subprocess.run(["cc", "-O2", "-pthread", "-o", str(binary), str(source)], check=True)
        return subprocess.run([str(binary), str(os.cpu_count())], capture_output=True, text=True, check=True, timeout=120).stdout


def _process_ticks() -> dict[int, tuple[str, int]]:
    """(name, user + system ticks) of every process on the machine (/proc/PID/stat)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            name, fields = text[text.index("(") + 1 : text.rindex(")")], text.rsplit(")", 1)[1].split()
            found[int(entry)] = (name, int(fields[11]) + int(fields[12]))
    return found


def machine_load(seconds: float = 0.3) -> dict[str, object]:
    """What the machine ran over `seconds` before a child starts: busy CPUs (/proc/stat: all but
    idle and iowait) and the three processes that used the most CPU."""
    def busy_and_total() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return sum(values) - values[3] - values[4], sum(values)

    (busy0, total0), ticks0 = busy_and_total(), _process_ticks()
    time.sleep(seconds)
    (busy1, total1), ticks1 = busy_and_total(), _process_ticks()
    cpus = os.cpu_count() or 1
    used = sorted(((ticks1[p][1] - ticks0[p][1], ticks1[p][0], p) for p in ticks1 if p in ticks0), reverse=True)[:3]
    hz = os.sysconf("SC_CLK_TCK")
    return {"busy_cpus": round(cpus * (busy1 - busy0) / max(1, total1 - total0), 2), "loadavg": Path("/proc/loadavg").read_text().split()[0],
            "top": [f"{name}({pid}) {ticks / hz / seconds:.2f} CPUs" for ticks, name, pid in used if ticks]}


def _cell(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def driver(arguments: argparse.Namespace) -> None:
    environment = dict(os.environ, OPENBLAS_NUM_THREADS=str(arguments.threads), OMP_NUM_THREADS=str(arguments.threads),
                       MKL_NUM_THREADS=str(arguments.threads))
    records = []
    first_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for index in range(arguments.processes):
            output = Path(folder) / f"{index}.json"
            command = [sys.executable, __file__, "--child", "--threads", str(arguments.threads), "--json", str(output),
                       "--torch", str(1 - index % 2 if index < arguments.processes - 1 else 1)]
            command += ["--sizes"] if index < arguments.sized else []
            load = machine_load()
            started = time.perf_counter()
            subprocess.run(command, check=True, env=environment)
            record = json.loads(output.read_text()) | {"index": index, "seconds": round(time.perf_counter() - started, 1),
                                                        "since_start_s": round(started - first_start, 1), "load_before": load}
            records.append(record)
            mlc_ms = [r["ms"] for r in record["rounds"]["mlc"]]
            torch_ms = [r["ms"] for r in record["rounds"].get("torch", [])]
            print(f"process {index} at {record['since_start_s']} s (torch {record['torch']}, {record['seconds']} s; before it: {load}): "
                  f"mlc {mlc_ms} torch {torch_ms} "
                  f"layout {record['layout']}", flush=True)
    print(f"\nCPU: {bench.cpu_model()}, {os.cpu_count()} logical CPUs; -x of {ROWS}x{COLUMNS} f32 at {arguments.threads} threads; ms best")
    print("| process | torch | mlc ms (rounds) | torch ms | torch out= ms | x THP | result THP | result - x mod 16M | x mod 2M | "
          "L2 overfull | worker CPUs distinct | runqueue ms | steal |")
    print("| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for record in records:
        rounds, place = record["rounds"], record["layout"]
        mlc_rounds = rounds["mlc"]
        print(f"| {record['index']} | {record['torch']} | {' / '.join(_cell(r['ms']) for r in mlc_rounds)} | "
              f"{' / '.join(_cell(r['ms']) for r in rounds.get('torch', [])) or '-'} | "
              f"{' / '.join(_cell(r['ms']) for r in rounds.get('torch_out', [])) or '-'} | {place['x_thp']} | {place['out_thp']} | "
              f"{place['out_after_x_16m']} | {place['x_mod_2m']} | {place['l2_overfull']} | "
              f"{' / '.join(str(len(set(r['worker_cpus']))) for r in mlc_rounds)} | "
              f"{' / '.join(_cell(r['runqueue_ms']) for r in mlc_rounds)} | {' / '.join(str(r['steal_ticks']) for r in mlc_rounds)} |")
    names = list(dict.fromkeys(name for record in records for name in record["forced"]))
    print("\nForced within each process (ms; `run_on_device(x, outputs=[out])`, best of 50 calls and 50 ms):")
    print("| variant | " + " | ".join(str(record["index"]) for record in records) + " |")
    print("| --- |" + " ---: |" * len(records))
    for name in names:
        print(f"| {name} | " + " | ".join(_cell(record["forced"].get(name, {}).get("ms", "-")) for record in records) + " |")
    sized = [record for record in records if "sizes" in record]
    if sized:
        print("\n-x by size and threads (ms, GB/s in+out):")
        print("| size | " + " | ".join(str(record["index"]) for record in sized) + " |")
        print("| --- |" + " ---: |" * len(sized))
        for name in sized[0]["sizes"]:
            cells = []
            for record in sized:
                row = record["sizes"][name]
                cells.append(f"{row['ms']:.3f}" + (f" ({row['GB_per_s']})" if "GB_per_s" in row else ""))
            print(f"| {name} | " + " | ".join(cells) + " |")
    if arguments.latency:
        print("\nCache-line round trip between CPUs (ns; row: first CPU, column: second):")
        print(latency_matrix())
    if arguments.json is not None:
        arguments.json.write_text(json.dumps({"cpu": bench.cpu_model(), "records": records}, indent=1))


def main() -> None:
    arguments = _parse()
    if arguments.child:
        record = child(arguments)
        assert arguments.json is not None
        arguments.json.write_text(json.dumps(record))
        return
    driver(arguments)


if __name__ == "__main__":
    main()
