"""Times reference matmul kernels (PTX built by build.sh) against PyTorch in one process, on a GPU.

    bash bench/reference/build.sh            # here, with nvcc: PTX + flags per variant
    cd bench/reference && python3 time_ptx.py 4096 [names...]    # on the GPU machine

Every variant is checked against torch (max difference) and against an fp64 product of the first
256 rows (max error / max |reference|), printed next to cuBLAS's own error.
"""
import ctypes, glob, statistics, sys
import numpy as np, torch
from cuda.bindings import driver as cu

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.cuda.init(); torch.empty(1, device="cuda")
def ck(r):
    err = r[0] if isinstance(r, tuple) else r
    assert int(err) == 0, r
    return r[1] if isinstance(r, tuple) and len(r) == 2 else r

def timeit(fn, reps=7, iters=20):
    for _ in range(5): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters): fn()
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / iters)
    return statistics.median(ts)

M = N = K = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
names = sys.argv[2:] or sorted(p[:-4] for p in glob.glob("*.ptx"))
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(M, K, device="cuda", generator=g); b = torch.randn(K, N, device="cuda", generator=g)
bias = torch.randn(N, device="cuda", generator=g); c = torch.empty(M, N, device="cuda")
ref = a @ b; ref_epi = torch.relu(ref + bias)
ref64 = a[:256].double() @ b.double()
def rel_err(x):
    return ((x[:256].double() - ref64).abs().max() / ref64.abs().max()).item()
print(f"cuBLAS fp32 error vs fp64 (first 256 rows, max abs / max |ref|): {rel_err(ref):.2e}")
t_mm = timeit(lambda: torch.matmul(a, b))
t_epi = timeit(lambda: torch.relu(a @ b + bias))
print(f"torch matmul {t_mm*1e3:.0f} us {2*M*N*K/t_mm/1e9:.1f} TF/s; eager relu(mm+bias) {t_epi*1e3:.0f} us", flush=True)
stream = torch.cuda.current_stream().cuda_stream
for name in names:
    flags = open(name + ".flags").read()
    def val(key, default):
        for f in flags.split():
            if f.startswith(f"-D{key}="): return int(f.split("=")[1])
        return default
    bm, bn, bk, wm, wn = val("BM", 128), val("BN", 128), val("BK", 8 if "-DSMEM" not in flags else 16), val("WM", 32), val("WN", 64)
    nt = (bm // wm) * (bn // wn) * 32
    epi = "-DEPI" in flags
    mod = ck(cu.cuModuleLoadData(open(name + ".ptx", "rb").read() + b"\0"))
    fn = ck(cu.cuModuleGetFunction(mod, b"sgemm"))
    args = [ctypes.c_void_p(a.data_ptr()), ctypes.c_void_p(b.data_ptr()), ctypes.c_void_p(c.data_ptr()), ctypes.c_void_p(bias.data_ptr()), ctypes.c_int(M), ctypes.c_int(N), ctypes.c_int(K)]
    ptrs = (ctypes.c_void_p * len(args))(*[ctypes.addressof(x) for x in args])
    swz = "SWIZZLE" in flags
    grid = (N // bn * (M // bm), 1, 1) if swz else (N // bn, M // bm, 1)
    smem = 0
    if "-DSMEM" in flags:
        smem = val("STAGES", 3) * (bm * (bk + val("PADA", 4)) + bk * (bn + val("PADB", 4))) * 4
        ck(cu.cuFuncSetAttribute(fn, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem))
    def launch():
        ck(cu.cuLaunchKernel(fn, *grid, nt, 1, 1, smem, stream, ctypes.addressof(ptrs), 0))
    c.zero_(); launch(); torch.cuda.synchronize()
    want = ref_epi if epi else ref
    err = (c - want).abs().max().item()
    acc_err = rel_err(c) if not epi else float("nan")
    t = timeit(launch)
    base = t_epi if epi else t_mm
    print(f"{name:<14} {t*1e3:7.0f} us {2*M*N*K/t/1e9:6.1f} TF/s  {base/t:5.3f}x torch{' eager' if epi else ''}  maxdiff-vs-torch {err:.2e} err-vs-fp64 {acc_err:.2e}  [{flags.strip()}]", flush=True)
