"""The driver's JIT against ptxas on the PTX files of a directory: serialized wgmmas, the JIT's log.

    python bench/jit_probe.py DIR        # DIR/*.ptx (e.g. from mlc-translate --mlir-to-ptx)

For each file: cuModuleLoadDataEx's verbose log (the whole-program JIT that a plain load uses), then
(unless ONLY_LOAD=1) the driver's linker (cuLinkCreate / cuLinkAddData / cuLinkComplete: what the
compile cache's cubin comes from) and ptxas -arch=sm_90a, each cubin disassembled (cuobjdump) and
its HGMMA and `WARPGROUP.DEPBAR.LE gsb0, 0x0 / 0x1` counted (a wait for 0 after every HGMMA is
ptxas serializing the products), the logs' C75xx lines printed. Files go to $OUT (or /tmp).
"""
import ctypes, glob, os, subprocess, sys
from cuda.bindings import driver as d

def check(r):
    if isinstance(r, tuple):
        err, *rest = r
    else:
        err, rest = r, []
    assert err == d.CUresult.CUDA_SUCCESS, err
    return rest[0] if len(rest) == 1 else rest

check(d.cuInit(0))
dev = check(d.cuDeviceGet(0))
ctx = check(d.cuDevicePrimaryCtxRetain(dev))
check(d.cuCtxSetCurrent(ctx))
print("driver", check(d.cuDriverGetVersion()))
print(subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1])
out = os.environ.get("OUT", "/tmp")
for path in sorted(glob.glob(sys.argv[1] + "/*.ptx")):
    name = os.path.basename(path)[:-4]
    image = open(path, "rb").read() + b"\0"
    size = 1 << 16
    info, error = bytearray(size), bytearray(size)
    o = d.CUjit_option
    opts = [o.CU_JIT_INFO_LOG_BUFFER, o.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, o.CU_JIT_ERROR_LOG_BUFFER, o.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, o.CU_JIT_LOG_VERBOSE]
    vals = [info, size, error, size, 1]
    info2, error2 = bytearray(size), bytearray(size)
    r = d.cuModuleLoadDataEx(image, len(opts), opts, [info2, size, error2, size, 1])
    print(name, "cuModuleLoadDataEx", r[0], "|", " / ".join(l.strip() for l in bytes(info2).split(b"\0")[0].decode().splitlines() if "C75" in l or "stack" in l or "used" in l))
    if os.environ.get("ONLY_LOAD"):
        continue
    state = check(d.cuLinkCreate(len(opts), opts, vals))
    r = d.cuLinkAddData(state, d.CUjitInputType.CU_JIT_INPUT_PTX, image, len(image), name.encode(), 0, [], [])
    if r[0] != d.CUresult.CUDA_SUCCESS:
        print(name, "add failed", r, bytes(error).split(b"\0")[0].decode()[:2000]); continue
    addr, n = check(d.cuLinkComplete(state))
    cubin = ctypes.string_at(int(addr), n)
    open(f"{out}/{name}.jit.cubin", "wb").write(cubin)
    d.cuLinkDestroy(state)
    log = bytes(info).split(b"\0")[0].decode()
    open(f"{out}/{name}.jit.log", "w").write(log)
    sass = subprocess.run(["cuobjdump", "-sass", f"{out}/{name}.jit.cubin"], capture_output=True, text=True).stdout
    open(f"{out}/{name}.jit.sass", "w").write(sass)
    p = subprocess.run(["ptxas", "-arch=sm_90a", "-v", path, "-o", f"{out}/{name}.ptxas.cubin"], capture_output=True, text=True)
    psass = subprocess.run(["cuobjdump", "-sass", f"{out}/{name}.ptxas.cubin"], capture_output=True, text=True).stdout
    open(f"{out}/{name}.ptxas.sass", "w").write(psass)
    for label, text in (("jit", sass), ("ptxas", psass)):
        print(name, label, "HGMMA", text.count("HGMMA"), "DEPBAR0", text.count("DEPBAR.LE gsb0, 0x0"), "DEPBAR1", text.count("DEPBAR.LE gsb0, 0x1"))
    for line in (log + p.stderr + p.stdout).splitlines():
        if any(w in line for w in ("Performance", "C75", "serializ", "registers", "warning")):
            print("   ", line.strip()[:300])
