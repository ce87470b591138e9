"""TF32 4096^3 by kernel: each launch's device time (torch.profiler) beside cuBLAS-TF32's, per pipeline.

    python bench/tf32_kernels.py                      # mlc's default and the tf32-swap pipeline, cuBLAS nn/nt
    TF16_ROUNDS=2 TF16_KSWEEP=1 python bench/tf32_kernels.py   # two rounds; K = 1024, 2048 too (the per-tile fixed share)
    TF16_PIPELINES='mlc-lower-to-gpu{...};...'        # more pipelines (extra0, extra1, ...)
    TF16_NCU=1 ncu ... python bench/tf32_kernels.py   # only three calls of each, for a profiler

Prints one JSON line per case (median us of the whole call, the relative error against fp64, each
kernel's mean device time) and writes them to $OUT/split.json when OUT is set. MLC_CACHE=0 loads
every kernel by the driver's whole-program JIT (see `mlc.compiler.linked_cubin_keeps`).
"""
import os, statistics, sys, json
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from torch.profiler import profile, ProfilerActivity
from harness import time_gpu
from matmul import matmul_source, linear_source
import mlc

torch.backends.cuda.matmul.allow_tf32 = True
DEFAULT = None
SWAP = "mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true l2-group-tiles=8 tf32-swap=true}"
EXTRA = os.environ.get("TF16_PIPELINES", "")
pipes = {"default": DEFAULT, "swap": SWAP}
for i, p in enumerate(filter(None, EXTRA.split(";"))):
    pipes[f"extra{i}"] = p
g = torch.Generator(device="cuda").manual_seed(0)
results = []

def kernels(fn, n=20):
    fn(); torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if e.device_time_total > 0 and e.count >= n:
            out[e.key[:90]] = round(e.device_time_total / e.count, 1)
    return out

def case(name, src, inputs, ref, pipe_name, pipe):
    prog = mlc.compile(src, device="cuda", pipeline=pipe)
    out = torch.empty_like(ref)
    call = lambda: prog.run_on_device(*inputs, outputs=[out])
    call(); torch.cuda.synchronize()
    err = ((out.double() - ref.double()).norm() / ref.double().norm()).item()
    med = statistics.median(time_gpu(call))
    ks = kernels(call)
    r = dict(case=name, pipe=pipe_name, median_us=round(med, 1), rel_err=err, kernels=ks)
    print(json.dumps(r), flush=True)
    results.append(r)

a = torch.randn(4096, 4096, device="cuda", generator=g)
b = torch.randn(4096, 4096, device="cuda", generator=g)
if os.environ.get("TF16_NCU"):
    for pn, p in pipes.items():
        prog = mlc.compile(matmul_source(4096, 4096, 4096, False, "f32", "tf32"), device="cuda", pipeline=p)
        out = torch.empty(4096, 4096, device="cuda")
        for _ in range(3):
            prog.run_on_device(a, b, outputs=[out])
        torch.cuda.synchronize()
    for _ in range(2):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    sys.exit(0)
ref64 = (a.double() @ b.double()).float()
cub_nn = lambda: torch.matmul(a, b)
cub_nt = lambda: torch.matmul(a, b.T)
for rnd in range(int(os.environ.get("TF16_ROUNDS", "1"))):
    for nm, fn in (("cublas nn (a@b)", cub_nn), ("cublas nt (a@b.T)", cub_nt)):
        r = dict(case=nm, round=rnd, median_us=round(statistics.median(time_gpu(fn)), 1), kernels=kernels(fn))
        print(json.dumps(r), flush=True); results.append(r)
    for pn, p in pipes.items():
        case("tf32 matmul 4096^3", matmul_source(4096, 4096, 4096, False, "f32", "tf32"), [a, b], ref64, pn, p)
    case("tf32 linear 4096^3", linear_source(4096, 4096, 4096), [a, b], (a.double() @ b.double().T).float(), "default", None)
if os.environ.get("TF16_KSWEEP"):
    for k in (1024, 2048):
        ak = a[:, :k].contiguous(); bk = b[:k, :].contiguous()
        for pn, p in pipes.items():
            case(f"tf32 matmul 4096x4096x{k}", matmul_source(4096, 4096, k, False, "f32", "tf32"), [ak, bk], (ak.double() @ bk.double()).float(), pn, p)
        r = dict(case=f"cublas nn K={k}", median_us=round(statistics.median(time_gpu(lambda: torch.matmul(ak, bk))), 1)); print(json.dumps(r)); results.append(r)
out = os.environ.get("OUT")
if out:
    Path(out, "split.json").write_text(json.dumps(results, indent=1))
