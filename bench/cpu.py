"""CPU benchmarks: mlc's CPU path against numpy and PyTorch CPU, same threads, one process.

    python bench/cpu.py [--threads N | --threads 1,2,8,16] [--repeats 20] [--rounds 3] [--only softmax,gelu] [--json out.json]
                        [--malloc steady|default] [--results runtime|heap] [--prefetch LOADS/STORES] [--interleaved-rows I]
                        [--nontemporal auto|on|off] [--store-kinds on,off]

Cases (f32): softmax of 1024x1024 and of long rows (64x65536), tanh(x*y + x) on 4096x1024, exact
(erf) GELU of 4096x1024, its memory floor (-x of 4096x1024), a leaky ReLU (where(x > 0, x, 0.01 x)) of 4096x1024,
rsqrt (of |x|), sin, cos, pow (|x| ** y), (x > y).astype(f32) * z and x > y (bool) of 4096x1024, layer norm of 4096x1024 with scale and bias, a column sum (axis 0) of
4096x1024, matmul 512^3, 1024^3 and 2048^3, and fused MLP blocks gelu(x @ w + b) of 1024x1024 by
1024x1024 (tanh and erf GELU); and two streams larger than a last-level cache (`--only 65536`):
-x and the tanh chain of 65536x1024 (256 MiB an array; numpy not timed on the chain), where mlc's
row kernels store non-temporally by default (`--nontemporal`, `--store-kinds on,off` times mlc
compiled with `nontemporal-stores=on` and `=off` beside the default, in the same turns). Every implementation runs on the same random inputs
(never zeros), is checked against numpy's float64 result first, then timed with
`time.perf_counter`: warm-up calls, then the best of `--repeats` calls, or of as many as fill
`MIN_TIMED_SECONDS` when that is more (the steady cost on a machine shared with other work, where
the median mostly measures the neighbours). With `--rounds R` the implementations of a case take
turns, R times (mlc, numpy, PyTorch, mlc, ...), each turn timed so, and each starting only once
the process's other threads are quiet (`wait_until_quiet`: numpy's OpenBLAS and PyTorch's OpenMP
workers spin for up to ~0.1 s after a call, mlc's for 200 us; an implementation timed inside
another's spin shared the cores with it); a row has the best over the
rounds and each round's ratio to PyTorch (how far one process's figure moves), and each
implementation's minor page faults per call (the most over the rounds; warm-up calls included,
after SETTLING_CALLS untimed ones):
a result on fresh pages is zero-filled by the kernel at its first write, inside the timed call.
`--malloc steady` fixes glibc's malloc thresholds (see STEADY_MALLOC: no implementation's figure
then depends on whether its process's allocator hands out fresh pages, but the arrays' placement
changes). `--results heap` takes mlc's large results from numpy's memory (recycled), as the runtime
did before they had huge-page mappings of their own (`use_heap_results`: the cpu12/cpu13 runs).
The table's last columns describe mlc's arrays: the huge-page share of the mappings holding the
first input and the result, the exact share and physical address of their own pages
(`physical_pages`), and how far the result lies after its nearest input modulo 16 MiB
(`output_after_inputs`: a few hundred bytes slowed streaming kernels 4-5x on the 16-CPU host).
The JSON also has, per turn, the CPUs other processes kept busy and the ticks the hypervisor stole
while it ran (`others_during`).

Threads: mlc gets `num_threads=N`, PyTorch `torch.set_num_threads(N)`; numpy's BLAS is limited
through `OPENBLAS_NUM_THREADS` / `OMP_NUM_THREADS` / `MKL_NUM_THREADS`, set before numpy is
imported (numpy's elementwise code is single-threaded anyway). PyTorch is optional: without it
the table has mlc and numpy only. mlc's compile time of each case is printed too (compile once,
outside the timing).

Several thread counts (`--threads 1,2,8,16`): each runs in a process of its own (numpy's BLAS
reads its thread count when numpy is imported), one after another; then one table has every
case and thread count, with the CPU model (`lscpu`'s model name) and the logical CPUs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import platform
import re
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default=str(os.cpu_count() or 1), help="a count, or counts separated by commas")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1, help="turns of the implementations, interleaved")
    parser.add_argument("--only", default=None, help="run the cases whose name contains one of these (separated by commas)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--references", type=Path, default=None, help="a folder keeping the float64 references between runs")
    parser.add_argument("--malloc", choices=("default", "steady"), default="default",
                        help="default: glibc's malloc as the process finds it; steady: fixed thresholds (STEADY_MALLOC)")
    parser.add_argument("--results", choices=("runtime", "heap"), default="runtime",
                        help="runtime: mlc's result memory as the runtime gives it; heap: large results from numpy's "
                             "(glibc's) memory, recycled, as before huge-page results (`use_heap_results`)")
    parser.add_argument("--prefetch", default=None, metavar="LOADS/STORES",
                        help="compile mlc's row kernels with these prefetch distances in bytes (0: none; `prefetch_pipeline`)")
    parser.add_argument("--interleaved-rows", type=int, default=None, metavar="I",
                        help="compile mlc's row kernels with I rows in each column loop (`prefetch_pipeline`)")
    parser.add_argument("--nontemporal", choices=("auto", "on", "off"), default=None,
                        help="compile mlc's row kernels with nontemporal-stores=this (`prefetch_pipeline`)")
    parser.add_argument("--store-kinds", default=None, metavar="on,off",
                        help="also time mlc compiled with each of these nontemporal-stores values, in the same turns")
    return parser.parse_args()


def prefetch_pipeline(prefetch: str | None, interleaved_rows: int | None = None, nontemporal: str | None = None) -> str | None:
    """mlc's CPU pipeline with convert-tile-rows-to-cpu's prefetch distances set from "LOADS/STORES"
    (bytes, 0 for none), its interleaved rows from `interleaved_rows` and its store kind from
    `nontemporal` (auto, on, off), or None (mlc.compile's default pipeline) with none of them."""
    options = [f"nontemporal-stores={nontemporal}"] if nontemporal is not None else []
    if prefetch is not None:
        loads, stores = (int(part) for part in prefetch.split("/"))
        options += [f"prefetch-bytes={loads}", f"store-prefetch-bytes={stores}"]
    if interleaved_rows is not None:
        options.append(f"interleaved-rows={interleaved_rows}")
    if not options:
        return None
    from mlc.transforms.pipelines import CPU_PIPELINE

    name = "convert-tile-rows-to-cpu,"
    assert CPU_PIPELINE.count(name) == 1, "the CPU pipeline's row lowering is not where this expects it"
    return CPU_PIPELINE.replace(name, "convert-tile-rows-to-cpu{" + " ".join(options) + "},")


def use_heap_results() -> None:
    """mlc's large results taken from numpy's memory (glibc's heap or its mappings), recycled by
    ResultBlocks as before, instead of huge-page mappings of their own (HUGE_PAGE_RESULT_BYTES made
    unreachable): the runtime as the cpu12 and cpu13 whole-benchmark runs had it."""
    import mlc.runtime.cpu

    mlc.runtime.cpu.HUGE_PAGE_RESULT_BYTES = 1 << 62


STEADY_MALLOC = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296"
"""GLIBC_TUNABLES for `--malloc steady`: blocks below 32 MiB (glibc's largest mmap threshold) come
from the heap, which is not given back below 4 GiB free. With glibc's defaults the threshold moves
with the sizes freed so far and a large free top is returned to the system, so whether a 16 MiB
result (or a PyTorch temporary) lands on fresh pages, zero-filled by page faults inside the timed
call, depends on the process's history: on the 16-CPU host one process took 12256 faults in every
PyTorch call of the tanh chain (3 arrays of 4096 pages; 5.8 ms at 16 threads instead of 0.8).
Not the default: on that host the steady heap also placed the arrays so that mlc's elementwise
and layer-norm kernels ran 2-5x slower than in default processes of the same call (and PyTorch's
layer norm 3.5x slower at one thread). The reason (BENCHMARKS.md, cpu14): consecutive 16 MiB
arrays on glibc's heap lie 16 MiB + 16 bytes apart, so a result taken from the heap right after
its inputs lies a few cache lines after them modulo 16 MiB, and on that Intel CPU the kernel then
runs 4-5x slower (10-13 ms against 2.3-2.4 for the tanh chain at one thread, `bench/cpu_physical.py
--memory slab:...`; by the pattern, loads held behind the store a few lines before them, a
mechanism inferred, not counted); mlc's large results have mappings of their own since
(`--results heap` brings the old placement back), which is also why this is the switch that
reproduced it."""


def _with_steady_malloc(argv: list[str]) -> None:
    """Re-executes this script with STEADY_MALLOC (glibc reads its tunables at start only)."""
    if os.environ.get("GLIBC_TUNABLES") != STEADY_MALLOC:
        os.execve(sys.executable, [sys.executable, *argv], dict(os.environ, GLIBC_TUNABLES=STEADY_MALLOC))


ARGUMENTS = _parse() if __name__ == "__main__" else None
if ARGUMENTS is not None and ARGUMENTS.malloc == "steady" and sys.platform.startswith("linux"):
    _with_steady_malloc(sys.argv)
if ARGUMENTS is not None and "," not in ARGUMENTS.threads:  # before numpy is imported, so that its BLAS reads them
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = ARGUMENTS.threads

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
    time_numpy: bool = True
    """False where numpy has no vector code for the case (erf: the reference is a Python loop)."""
    positive: tuple[int, ...] = ()
    """The inputs (by position) drawn as |x| instead of x (rsqrt's, pow's base)."""


def _softmax(x, xp=np):  # type: ignore[no-untyped-def]
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(x, w, b):  # type: ignore[no-untyped-def]
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + 1e-5) * w + b


def _gelu(x):  # type: ignore[no-untyped-def]
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


_ERF = np.frompyfunc(math.erf, 1, 1)


def _gelu_erf(x):  # type: ignore[no-untyped-def]
    """numpy has no erf: the standard library's, element by element (slow: numpy's time for the
    exact GELU cases measures this loop, not numpy's vector code)."""
    return 0.5 * x * (1 + _ERF(x * 0.7071067811865476).astype(x.dtype))


def _one_operand(name: str, op: str, rows: int, columns: int, result: str = "", **fields: object) -> Case:
    """A case of one [rows, columns] f32 operand and one graph op: `op` is its text up to the
    types, which follow as ` : T` (a result of the operand's type) or ` : T to R` (`result`)."""
    t = tensor(rows, columns)
    signature = f"{t} to {result}" if result else t
    text = f"func.func @f(%x: {t}) -> {result or t} {{\n  %0 = graph.{op} : {signature}\n  func.return %0 : {result or t}\n}}"
    return Case(f"{name} {rows}x{columns}", text, [(rows, columns)], **fields)  # type: ignore[arg-type]


def softmax_case(rows: int, columns: int) -> Case:
    return _one_operand("softmax", "softmax %x axis -1", rows, columns, reference=_softmax, torch_function=lambda torch, x: torch.softmax(x, -1))


def tanh_chain_case(rows: int, columns: int, time_numpy: bool = True) -> Case:
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
        time_numpy=time_numpy,
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


def mlp_case(rows: int, inner: int, outer: int, approximate: str = "tanh") -> Case:
    x, w, b, y = tensor(rows, inner), tensor(inner, outer), tensor(outer), tensor(rows, outer)
    gelu = _gelu if approximate == "tanh" else _gelu_erf
    label = "gelu" if approximate == "tanh" else "gelu-erf"
    return Case(
        f"mlp {label}(x@w+b) {rows}x{inner}x{outer}",
        f"""func.func @f(%x: {x}, %w: {w}, %b: {b}) -> {y} {{
  %0 = graph.matmul %x, %w : ({x}, {w}) -> {y}
  %1 = graph.add %0, %b : ({y}, {b}) -> {y}
  %2 = graph.gelu %1 {{approximate = "{approximate}"}} : {y}
  func.return %2 : {y}
}}""",
        [(rows, inner), (inner, outer), (outer,)],
        lambda x, w, b: gelu(x @ w + b),
        lambda torch, x, w, b: torch.nn.functional.gelu(x @ w + b, approximate=approximate),
        tolerance=1e-4,
        time_numpy=approximate == "tanh",
    )


def gelu_erf_case(rows: int, columns: int) -> Case:
    return _one_operand(
        "gelu-erf", 'gelu %x {approximate = "none"}', rows, columns,
        reference=_gelu_erf, torch_function=lambda torch, x: torch.nn.functional.gelu(x), time_numpy=False,
    )


def negate_case(rows: int, columns: int) -> Case:
    """-x: one read and one write an element and no arithmetic to speak of, the memory traffic's
    floor under the elementwise cases of the same shape (gelu-erf's)."""
    return _one_operand("negate", "neg %x", rows, columns, reference=lambda x: -x, torch_function=lambda torch, x: torch.neg(x))


def leaky_relu_case(rows: int, columns: int) -> Case:
    """where(x > 0, x, 0.01 x): a comparison deciding a select, computed on vectors (llvm.fcmp /
    llvm.select of vectors: vector_maps.py); against torch's leaky_relu."""
    t, b, scalar = tensor(rows, columns), f"tensor<{rows}x{columns}xi1>", "tensor<f32>"
    return Case(
        f"leaky relu {rows}x{columns}",
        f"""func.func @f(%x: {t}) -> {t} {{
  %zero = graph.constant dense<0.0> : {scalar}
  %slope = graph.constant dense<0.01> : {scalar}
  %c = graph.cmp gt, %x, %zero : ({t}, {scalar}) -> {b}
  %s = graph.mul %x, %slope : ({t}, {scalar}) -> {t}
  %0 = graph.where %c, %x, %s : ({b}, {t}, {t}) -> {t}
  func.return %0 : {t}
}}""",
        [(rows, columns)],
        lambda x: np.where(x > 0, x, x * np.float32(0.01)),
        lambda torch, x: torch.nn.functional.leaky_relu(x, 0.01),
    )


def unary_case(function: str, rows: int, columns: int, positive: bool = False) -> Case:
    """graph.FUNCTION of [rows, columns] (rsqrt, sin, cos: expand-math-for-cpu's vector forms)
    against numpy's and PyTorch's function of the same name (numpy: 1 / sqrt for rsqrt)."""
    reference = (lambda x: 1 / np.sqrt(x)) if function == "rsqrt" else getattr(np, function)
    return _one_operand(
        function, f"{function} %x", rows, columns, reference=reference,
        torch_function=lambda torch, x: getattr(torch, function)(x), positive=(0,) if positive else (),
    )


def pow_case(rows: int, columns: int) -> Case:
    """|x| ** y elementwise (graph.pow, libm's powf per element) against numpy and torch.pow."""
    t = tensor(rows, columns)
    return Case(
        f"pow {rows}x{columns}",
        f"func.func @f(%x: {t}, %y: {t}) -> {t} {{\n  %0 = graph.pow %x, %y : ({t}, {t}) -> {t}\n  func.return %0 : {t}\n}}",
        [(rows, columns), (rows, columns)],
        lambda x, y: x**y,
        lambda torch, x, y: torch.pow(x, y),
        tolerance=1e-4,
        positive=(0,),
    )


def comparison_cast_case(rows: int, columns: int) -> Case:
    """(x > y).astype(f32) * z: a comparison cast to f32 in one fused map, its cast a select of 1.0
    and 0.0 on vectors (vector_maps.py); PyTorch runs the three ops."""
    t, b = tensor(rows, columns), f"tensor<{rows}x{columns}xi1>"
    return Case(
        f"(x>y)*z {rows}x{columns}",
        f"""func.func @f(%x: {t}, %y: {t}, %z: {t}) -> {t} {{
  %c = graph.cmp gt, %x, %y : ({t}, {t}) -> {b}
  %f = graph.cast %c : {b} to {t}
  %0 = graph.mul %f, %z : ({t}, {t}) -> {t}
  func.return %0 : {t}
}}""",
        [(rows, columns)] * 3,
        lambda x, y, z: (x > y).astype(z.dtype) * z,
        lambda torch, x, y, z: (x > y).to(z.dtype) * z,
    )


def stored_comparison_case(rows: int, columns: int) -> Case:
    """x > y stored as a bool array (an i1 map result of the row kernels: the vector comparison,
    its lanes stored as bytes)."""
    t, b = tensor(rows, columns), f"tensor<{rows}x{columns}xi1>"
    return Case(
        f"x>y bool {rows}x{columns}",
        f"func.func @f(%x: {t}, %y: {t}) -> {b} {{\n  %c = graph.cmp gt, %x, %y : ({t}, {t}) -> {b}\n  func.return %c : {b}\n}}",
        [(rows, columns)] * 2,
        lambda x, y: x > y,
        lambda torch, x, y: x > y,
    )


def column_sum_case(rows: int, columns: int) -> Case:
    return _one_operand(
        "column sum", "reduce_sum %x axes [0] keepdims false", rows, columns, result=tensor(columns),
        reference=lambda x: x.sum(axis=0), torch_function=lambda torch, x: torch.sum(x, 0), tolerance=1e-4,
    )


CASES = [
    softmax_case(1024, 1024),
    softmax_case(64, 65536),
    tanh_chain_case(4096, 1024),
    gelu_erf_case(4096, 1024),
    negate_case(4096, 1024),
    leaky_relu_case(4096, 1024),
    unary_case("rsqrt", 4096, 1024, positive=True),
    unary_case("sin", 4096, 1024),
    unary_case("cos", 4096, 1024),
    pow_case(4096, 1024),
    comparison_cast_case(4096, 1024),
    stored_comparison_case(4096, 1024),
    layer_norm_case(4096, 1024),
    column_sum_case(4096, 1024),
    matmul_case(512),
    matmul_case(1024),
    matmul_case(2048),
    mlp_case(1024, 1024, 1024),
    mlp_case(1024, 1024, 1024, "none"),
    negate_case(65536, 1024),
    tanh_chain_case(65536, 1024, time_numpy=False),
]


SETTLING_CALLS = 3
"""Untimed calls of each implementation after its check: with the steady malloc its heap grows to
what a call needs within the first few calls (then no call takes page faults)."""

MIN_TIMED_SECONDS = 0.05
"""Calls are repeated at least `--repeats` times and until this long has been timed: a kernel of
0.1 ms (16 threads) gets hundreds of tries, so its best is not one lucky or unlucky call of five."""


QUIET_WINDOW_SECONDS = 0.01
QUIET_CPU_SHARE = 0.1
QUIET_LIMIT_SECONDS = 1.0


def other_threads_cpu_ns() -> int | None:
    """On-CPU nanoseconds so far of this process's threads other than the calling one
    (/proc/self/task/*/schedstat), None where that cannot be read (not Linux)."""
    import threading

    own, total = str(threading.get_native_id()), 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        if task != own:
            try:
                total += int(Path(f"/proc/self/task/{task}/schedstat").read_text().split()[0])
            except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
                pass
    return total


def wait_until_quiet(limit: float = QUIET_LIMIT_SECONDS) -> float:
    """Waits until the process's other threads together run less than QUIET_CPU_SHARE of one CPU
    over QUIET_WINDOW_SECONDS, at most `limit` seconds; returns the seconds waited.

    Why. Idle workers spin before they sleep: numpy's OpenBLAS threads for ~0.1 s after a BLAS
    call, PyTorch's OpenMP team after each parallel region (libgomp's spin count), mlc's pool
    200 us. An implementation timed right after another one shared the cores with the other's
    spinning workers (PyTorch's 512^3 matmul at 16 threads: 7.8 ms against 0.35 at 8, after numpy's
    OpenBLAS; BENCHMARKS.md, cpu12). So every turn starts once the others are asleep; where the
    threads cannot be read, it sleeps 0.2 s."""
    start = time.perf_counter()
    before = other_threads_cpu_ns()
    if before is None:
        time.sleep(0.2)
        return time.perf_counter() - start
    while time.perf_counter() - start < limit:
        time.sleep(QUIET_WINDOW_SECONDS)
        after = other_threads_cpu_ns()
        assert after is not None
        if after - before < QUIET_CPU_SHARE * QUIET_WINDOW_SECONDS * 1e9:
            break
        before = after
    return time.perf_counter() - start


def machine_ticks() -> tuple[int, int, int] | None:
    """(busy ticks of the whole machine: all but idle and iowait, stolen ticks, this process's user
    and system ticks), in USER_HZ ticks from /proc/stat and /proc/self/stat; None elsewhere."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        own = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError, ValueError):
        return None
    return sum(values) - values[3] - values[4] - values[7], values[7], int(own[11]) + int(own[12])


def others_during(before: tuple[int, int, int] | None, seconds: float) -> tuple[float, int]:
    """(CPUs that other processes kept busy, on average, since `before` (`machine_ticks`), ticks
    the hypervisor stole meanwhile); NaN and -1 where /proc cannot be read.

    Why. -x of 16 MiB at 16 threads took 0.31-0.44 ms in some processes of one call and 0.05-0.12
    in 24 processes on three fresh machines (BENCHMARKS.md, host17), with nothing in the process to
    tell them apart; a run that meets it again records what else the machine ran meanwhile (a
    busy process beside a 16-thread pool, or a host that steals the guest's CPUs)."""
    after = machine_ticks()
    if before is None or after is None or seconds <= 0:
        return float("nan"), -1
    hz = os.sysconf("SC_CLK_TCK")
    return max(0.0, ((after[0] - before[0]) - (after[2] - before[2])) / hz / seconds), after[1] - before[1]


def best_seconds(function: Callable[[], object], repeats: int) -> float:
    function()  # warm-up (and first-touch of the outputs)
    function()
    best, timed, count = float("inf"), 0.0, 0
    while count < repeats or timed < MIN_TIMED_SECONDS:
        start = time.perf_counter()
        function()
        seconds = time.perf_counter() - start
        best, timed, count = min(best, seconds), timed + seconds, count + 1
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


def _reference(case: Case, inputs: list[np.ndarray], folder: Path | None) -> np.ndarray:
    """numpy's float64 result (kept in `folder` when given: the thread counts share it)."""
    saved = folder / (re.sub(r"[^A-Za-z0-9]+", "_", case.name) + ".npy") if folder is not None else None
    if saved is not None and saved.exists():
        return np.load(saved)
    want = np.asarray(case.reference(*[x.astype(np.float64) for x in inputs]))
    if saved is not None:
        np.save(saved, want)
    return want


def minor_faults() -> int:
    """The process's minor page faults so far (a fresh page's first touch is one)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def huge_page_share(array: np.ndarray) -> float:
    """The share of the mapping(s) holding `array` that transparent huge pages back (AnonHugePages
    over Rss, /proc/self/smaps; 0 where it cannot be read): arrays on 4 KiB pages cost a TLB walk
    a page, and the hardware prefetchers stop at each page's end."""
    start, stop = array.ctypes.data, array.ctypes.data + array.nbytes
    rss = huge = 0
    inside = False
    try:
        lines = Path("/proc/self/smaps").read_text().splitlines()
    except OSError:
        return 0.0
    for line in lines:
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):
            low, high = (int(part, 16) for part in fields[0].split("-"))
            inside = low < stop and start < high
        elif inside and fields[0] == "Rss:":
            rss += int(fields[1])
        elif inside and fields[0] == "AnonHugePages:":
            huge += int(fields[1])
    return huge / rss if rss else 0.0


def current_cpu() -> int:
    """The CPU the calling thread last ran on (/proc/thread-self/stat's 39th field; -1 elsewhere)."""
    try:
        return int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return -1


PAGE_BYTES = 4096
KPF_THP = 22
"""/proc/kpageflags' bit for a page that is part of a transparent huge page."""


def physical_pages(array: np.ndarray) -> tuple[float, float]:
    """(the share of `array`'s own 4 KiB pages that are parts of transparent huge pages, the median
    physical address of its pages in GiB), from /proc/self/pagemap and /proc/kpageflags: exact for
    the array's range (`huge_page_share` reads whole mappings). NaNs where the frame numbers are
    hidden (they need CAP_SYS_ADMIN) or the files are absent."""
    import struct

    first, count = array.ctypes.data // PAGE_BYTES, -(-array.nbytes // PAGE_BYTES)
    nothing = (float("nan"), float("nan"))
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(first * 8)
            entries = struct.unpack(f"<{count}Q", pagemap.read(count * 8))
        frames = [entry & ((1 << 55) - 1) for entry in entries if entry >> 63]
        if not frames or not any(frames):
            return nothing
        huge = 0
        with open("/proc/kpageflags", "rb") as flags:
            for frame in frames:
                flags.seek(frame * 8)
                huge += (int.from_bytes(flags.read(8), "little") >> KPF_THP) & 1
    except (OSError, struct.error):
        return nothing
    return huge / len(frames), sorted(frames)[len(frames) // 2] * PAGE_BYTES / 2**30


ALIAS_SPAN = 16 << 20
"""The modulus in which an output a few cache lines after an input slowed the host's kernels 4-5x
(BENCHMARKS.md, cpu14: 32-160 bytes after, modulo 16 MiB)."""


def output_after_inputs(output: np.ndarray, inputs: list[np.ndarray]) -> int:
    """The least distance in bytes, modulo ALIAS_SPAN, from the start of an input to the start of
    `output` (a few hundred or less: the layout that slowed streaming kernels 4-5x on the host)."""
    return min((output.ctypes.data - array.ctypes.data) % ALIAS_SPAN for array in inputs)


def run_case(
    case: Case, threads: int, repeats: int, torch: object | None, references: Path | None = None, rounds: int = 1,
    faults: list[float] | None = None, pipeline: str | None = None, pages: list[float] | None = None,
    waits: list[float] | None = None, others: list[tuple[float, int]] | None = None,
    variants: dict[str, str | None] | None = None,
) -> list[tuple[str, str, float]]:
    """(case, implementation, seconds) rows: one per implementation and round, in the order the
    rounds ran (see the module docstring). `faults`, when given, gets each row's minor page
    faults per call (warm-up calls included): an implementation whose results land on fresh pages
    pays their first touch inside the timed call. `pages`, when given, gets the huge-page share
    (`huge_page_share`) of the first input and of mlc's result, then `physical_pages` of both, then
    `output_after_inputs`; `waits` the seconds each turn
    waited for the process's other threads to go quiet (`wait_until_quiet`); `others` what other
    processes and the hypervisor took while each turn ran (`others_during`). `variants`: more mlc
    implementations, by name, each compiled with its own pipeline, timed in the same turns."""
    generator = np.random.default_rng(0)
    inputs = [generator.standard_normal(shape).astype(np.float32) for shape in case.shapes]
    inputs = [np.abs(x) if position in case.positive else x for position, x in enumerate(inputs)]
    want = _reference(case, inputs, references)
    start = time.perf_counter()
    compiled = mlc.compile(case.source, device="cpu", num_threads=threads, pipeline=pipeline)
    compile_seconds = time.perf_counter() - start
    rows = []
    implementations: list[tuple[str, Callable[[], object]]] = [("mlc", lambda: compiled(*inputs))]
    for name, variant_pipeline in (variants or {}).items():
        variant = mlc.compile(case.source, device="cpu", num_threads=threads, pipeline=variant_pipeline)
        implementations.append((name, lambda variant=variant: variant(*inputs)))  # type: ignore[misc]
    if case.time_numpy:
        implementations.append(("numpy", lambda: case.reference(*inputs)))
    if torch is not None:
        tensors = [torch.from_numpy(x) for x in inputs]  # type: ignore[attr-defined]
        implementations.append(("PyTorch", lambda: case.torch_function(torch, *tensors)))
    for implementation, function in implementations:
        result = function()
        result = result[0] if isinstance(result, tuple) else result
        _check(case.name, implementation, result, want, case.tolerance)
        if implementation == "mlc" and pages is not None:
            pages[:] = [huge_page_share(inputs[0]), huge_page_share(result), *physical_pages(inputs[0]), *physical_pages(result),
                        output_after_inputs(result, inputs)]
        for _ in range(SETTLING_CALLS):
            function()
    for _ in range(rounds):  # the implementations take turns
        for implementation, function in implementations:
            calls = [0]

            def counted(function: Callable[[], object] = function) -> object:
                calls[0] += 1
                return function()

            waited = wait_until_quiet()
            before, ticks, started = minor_faults(), machine_ticks(), time.perf_counter()
            rows.append((case.name, implementation, best_seconds(counted, repeats)))
            if others is not None:
                others.append(others_during(ticks, time.perf_counter() - started))
            if faults is not None:
                faults.append((minor_faults() - before) / calls[0])
            if waits is not None:
                waits.append(waited)
    print(f"  ({case.name}: mlc compiled in {compile_seconds:.2f} s)", file=sys.stderr)
    return rows


def main(arguments: argparse.Namespace) -> None:
    if "," in arguments.threads:
        several_thread_counts(arguments)
        return
    threads = int(arguments.threads)
    if arguments.results == "heap":
        use_heap_results()
    try:
        import torch

        torch.set_num_threads(threads)
        torch_version = torch.__version__
    except ImportError:
        torch, torch_version = None, "absent"
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; threads: {threads}; "
          f"numpy {np.__version__}; PyTorch {torch_version}")
    print("| case | impl | best ms | vs PyTorch | faults/call |\n| --- | --- | ---: | ---: | ---: |")
    results = []
    wanted = arguments.only.split(",") if arguments.only else None
    for case in CASES:
        if wanted and not any(part in case.name for part in wanted):
            continue
        faults: list[float] = []
        pages: list[float] = []
        waits: list[float] = []
        others: list[tuple[float, int]] = []
        rows = run_case(case, threads, arguments.repeats, torch, arguments.references, arguments.rounds, faults,
                        prefetch_pipeline(arguments.prefetch, arguments.interleaved_rows, arguments.nontemporal), pages, waits, others,
                        {f"mlc nontemporal-stores={kind}": prefetch_pipeline(arguments.prefetch, arguments.interleaved_rows, kind)
                         for kind in (arguments.store_kinds.split(",") if arguments.store_kinds else [])})
        rounds = _per_round(rows)
        reference = min(rounds["PyTorch"]) if "PyTorch" in rounds else None
        for implementation, seconds in rounds.items():
            ratio = f"{reference / min(seconds):.2f}x" if reference else "-"
            own_faults = [count for (_, name, _), count in zip(rows, faults) if name == implementation]
            own_waits = [seconds for (_, name, _), seconds in zip(rows, waits) if name == implementation]
            own_others = [load for (_, name, _), load in zip(rows, others) if name == implementation]
            print(f"| {case.name} | {implementation} | {min(seconds) * 1e3:.3f} | {ratio} | {max(own_faults):.0f} |", flush=True)
            results.append({"case": case.name, "implementation": implementation, "best_ms": min(seconds) * 1e3,
                            "rounds_ms": [round(value * 1e3, 4) for value in seconds],
                            "faults_per_call": [round(count, 1) for count in own_faults],
                            "quiet_wait_ms": [round(seconds * 1e3, 1) for seconds in own_waits],
                            "other_processes_cpus": [round(cpus, 2) for cpus, _ in own_others],
                            "stolen_ticks": [stolen for _, stolen in own_others]}
                           | ({"huge_page_share": [round(share, 2) for share in pages]} if implementation == "mlc" else {}))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(
            {"cpu": cpu_model(), "threads": threads, "numpy": np.__version__, "torch": torch_version, "command": " ".join(sys.argv), "prefetch": arguments.prefetch,
             "interleaved_rows": arguments.interleaved_rows, "nontemporal": arguments.nontemporal,
             "glibc_tunables": os.environ.get("GLIBC_TUNABLES", ""), "results": arguments.results,
             "rows": results},
            indent=1,
        ))


def _per_round(rows: list[tuple[str, str, float]]) -> dict[str, list[float]]:
    """Each implementation's seconds, in the order of the rounds."""
    rounds: dict[str, list[float]] = {}
    for _, implementation, seconds in rows:
        rounds.setdefault(implementation, []).append(seconds)
    return rounds


def _round_ratios(times: dict[str, list[float]]) -> str:
    """PyTorch's time over mlc's in each round (the lowest and highest), where both ran."""
    mlc_ms, torch_ms = times.get("mlc"), times.get("PyTorch")
    if not mlc_ms or not torch_ms or len(mlc_ms) < 2:
        return "-"
    ratios = [reference / own for own, reference in zip(mlc_ms, torch_ms)]
    return f"{min(ratios):.2f}-{max(ratios):.2f}x"


def several_thread_counts(arguments: argparse.Namespace) -> None:
    """One process per thread count (see the module docstring), then one table of them all."""
    import tempfile

    runs = []
    with tempfile.TemporaryDirectory() as folder:
        for threads in arguments.threads.split(","):
            output = Path(folder) / f"{threads}.json"
            command = [sys.executable, __file__, "--threads", threads, "--repeats", str(arguments.repeats), "--rounds", str(arguments.rounds),
                       "--json", str(output), "--references", folder, "--malloc", arguments.malloc]
            command += ["--only", arguments.only] if arguments.only else []
            command += ["--prefetch", arguments.prefetch] if arguments.prefetch else []
            command += ["--interleaved-rows", str(arguments.interleaved_rows)] if arguments.interleaved_rows else []
            command += ["--nontemporal", arguments.nontemporal] if arguments.nontemporal else []
            command += ["--store-kinds", arguments.store_kinds] if arguments.store_kinds else []
            command += ["--results", arguments.results]
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            runs.append(json.loads(output.read_text()))
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs; numpy {runs[0]['numpy']}; PyTorch {runs[0]['torch']}; "
          f"best of {arguments.repeats}, {arguments.rounds} interleaved round(s), wall clock; malloc {arguments.malloc}"
          + (f"; mlc's prefetch {arguments.prefetch}" if arguments.prefetch else "")
          + (f"; mlc's interleaved rows {arguments.interleaved_rows}" if arguments.interleaved_rows else "")
          + ("; mlc's large results from numpy's memory (--results heap)" if arguments.results == "heap" else ""))
    print("| case | threads | mlc ms | numpy ms | PyTorch ms | mlc vs PyTorch | rounds vs PyTorch | mlc vs numpy | faults/call mlc, PyTorch | huge pages: input, mlc result | exact: input THP, GiB; result THP, GiB | result after inputs mod 16 MiB, bytes |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    cases = list(dict.fromkeys(row["case"] for row in runs[0]["rows"]))
    for case in cases:
        for run in runs:
            times = {row["implementation"]: row["best_ms"] for row in run["rows"] if row["case"] == case}
            mlc_ms, numpy_ms, torch_ms = times.get("mlc"), times.get("numpy"), times.get("PyTorch")
            cells = [f"{v:.3f}" if v else "-" for v in (mlc_ms, numpy_ms, torch_ms)]
            ratios = [f"{other / mlc_ms:.2f}x" if other and mlc_ms else "-" for other in (torch_ms, numpy_ms)]
            rounds = {row["implementation"]: row["rounds_ms"] for row in run["rows"] if row["case"] == case}
            ratios.insert(1, _round_ratios(rounds))
            faults = {row["implementation"]: max(row.get("faults_per_call") or [0]) for row in run["rows"] if row["case"] == case}
            ratios.append(", ".join(f"{faults[name]:.0f}" if name in faults else "-" for name in ("mlc", "PyTorch")))
            shares = next((row.get("huge_page_share") for row in run["rows"] if row["case"] == case and row["implementation"] == "mlc"), None)
            ratios.append(", ".join(f"{share:.2f}" for share in shares[:2]) if shares else "-")
            ratios.append(", ".join(f"{share:.2f}" for share in shares[2:6]) if shares and len(shares) > 2 else "-")
            ratios.append(f"{shares[6]:.0f}" if shares and len(shares) > 6 else "-")
            print(f"| {case} | {run['threads']} | " + " | ".join(cells + ratios) + " |", flush=True)
    variants = list(dict.fromkeys(row["implementation"] for run in runs for row in run["rows"] if row["implementation"].startswith("mlc ")))
    if variants:  # --store-kinds: each mlc variant's best and its rounds, beside the default's
        print("\n| case | threads | mlc ms (rounds) | " + " | ".join(f"{name} ms (rounds)" for name in variants) + " | PyTorch ms (rounds) |")
        print("| --- | ---: |" + " ---: |" * (len(variants) + 2))
        for case in cases:
            for run in runs:
                rounds = {row["implementation"]: row["rounds_ms"] for row in run["rows"] if row["case"] == case}
                cells = [f"{min(rounds[name]):.3f} ({' '.join(f'{v:.3f}' for v in rounds[name])})" if name in rounds else "-"
                         for name in ("mlc", *variants, "PyTorch")]
                print(f"| {case} | {run['threads']} | " + " | ".join(cells) + " |", flush=True)
    if arguments.json is not None:
        arguments.json.write_text(json.dumps({"cpu": cpu_model(), "runs": runs}, indent=1))


if __name__ == "__main__":
    main(ARGUMENTS)
