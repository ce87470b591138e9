"""Builds mlc's 4096^3 matmul and relu(matmul + bias) kernels as PTX in pipeline variants (with and
without loop-double-buffer, without the `.minnctapersm` hint, other BK), to compare them on a GPU
(BENCHMARKS.md, "Double buffering, occupancy hint and read-only loads").

    python bench/reference/mlc_variants.py build    # here (needs mlc; ptxas, if present, reports registers)
    cd bench/reference && python3 mlc_variants.py time    # on the GPU machine, carrying bench/reference
"""
import ctypes, glob, re, shutil, statistics, subprocess, sys

SOURCES = {
    "m": "%0 = graph.matmul %x, %w : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>\n  func.return %0",
    "f": "%0 = graph.matmul %x, %w : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>\n"
    "  %1 = graph.add %0, %b : (tensor<4096x4096xf32>, tensor<4096xf32>) -> tensor<4096x4096xf32>\n"
    "  %2 = graph.relu %1 : tensor<4096x4096xf32>\n  func.return %2",
}


def build() -> None:
    from mlc.transforms.pipelines import GPU_PIPELINE

    single = GPU_PIPELINE
    double = GPU_PIPELINE.replace("loop-promote-shared,", "loop-promote-shared,loop-double-buffer,")
    variants = {"single": (single, None, False), "double": (double, None, False), "double_nohint": (double, None, True),
                "single_bk32": (single, "128,128,32", False), "double_bk8": (double, "128,128,8", False)}
    for kind, body in SOURCES.items():
        text = f"func.func @main(%x: tensor<4096x4096xf32>, %w: tensor<4096x4096xf32>, %b: tensor<4096xf32>) -> tensor<4096x4096xf32> {{\n  {body} : tensor<4096x4096xf32>\n}}\n"
        for name, (pipeline, tile, drop_hint) in variants.items():
            if tile:
                pipeline = pipeline.replace("convert-graph-to-tile", "convert-graph-to-tile{matmul-tile=" + tile + "}")
            ir = subprocess.run(["mlc-opt", "-p", pipeline], input=text, check=True, capture_output=True, text=True).stdout
            ptx = subprocess.run(["mlc-translate", "--mlir-to-ptx"], input=ir, check=True, capture_output=True, text=True).stdout
            if drop_hint:
                ptx = "".join(line + "\n" for line in ptx.splitlines() if ".minnctapersm" not in line)
            path = f"{sys.path[0]}/mlc_{kind}_{name}.ptx"
            open(path, "w").write(ptx)
            if shutil.which("ptxas"):
                info = subprocess.run(["ptxas", "-arch=sm_90", "-v", path, "-o", "/dev/null"], capture_output=True, text=True).stderr
                print(path, *re.findall(r"Used \d+ registers|\d+ bytes spill stores", info))


def time() -> None:
    import torch
    from cuda.bindings import driver as cu

    def check(result):  # noqa: ANN001, ANN202
        error = result[0] if isinstance(result, tuple) else result
        assert int(error) == 0, result
        return result[1] if isinstance(result, tuple) and len(result) == 2 else result

    def median_ms(fn, reps: int = 9, iters: int = 20) -> float:  # noqa: ANN001
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / iters)
        return statistics.median(times)

    torch.backends.cuda.matmul.allow_tf32 = False
    n = 4096
    a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
    bias, c = torch.randn(n, device="cuda"), torch.empty(n, n, device="cuda")
    want = {"m": a @ b, "f": torch.relu(a @ b + bias)}
    base = {"m": median_ms(lambda: torch.matmul(a, b)), "f": median_ms(lambda: torch.relu(a @ b + bias))}
    print(f"cuBLAS {base['m'] * 1e3:.0f} us, eager relu(mm + bias) {base['f'] * 1e3:.0f} us")
    stream = torch.cuda.current_stream().cuda_stream
    for path in sorted(glob.glob("mlc_*.ptx")):
        kind = path.split("_")[1]
        source = open(path, "rb").read()
        module = check(cu.cuModuleLoadData(source + b"\0"))
        function = check(cu.cuModuleGetFunction(module, re.search(rb"\.entry (\w+)\(", source).group(1)))
        tensors = [a, b, bias, c] if kind == "f" else [a, b, c]
        arguments = [ctypes.c_void_p(t.data_ptr()) for t in tensors]
        pointers = (ctypes.c_void_p * len(arguments))(*[ctypes.addressof(x) for x in arguments])
        launch = lambda: check(cu.cuLaunchKernel(function, 32, 32, 1, 256, 1, 1, 0, stream, ctypes.addressof(pointers), 0))  # noqa: E731
        c.zero_()
        launch()
        torch.cuda.synchronize()
        difference = (c - want[kind]).abs().max().item()
        t = median_ms(launch)
        print(f"{path:<28} {t * 1e3:7.0f} us  {base[kind] / t:.3f}x {'eager' if kind == 'f' else 'cuBLAS'}  max diff {difference:.1e}")


if __name__ == "__main__":
    {"build": build, "time": time}[sys.argv[1]]()
