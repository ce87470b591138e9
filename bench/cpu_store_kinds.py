"""Would non-temporal stores help mlc's streaming row kernels? -x by store kind, through mlc's pool.

    python bench/cpu_store_kinds.py [--threads 16] [--rows 1024,4096,8192,65536] [--turns 3]

Two C kernels of `<kernel>__programs`' form (`void f(float *x, float *out, int64_t first, int64_t
last)`, a program = 2 rows of 1024 f32, as mlc's -x grid), compiled with `cc -O3 -march=native`:
`store` writes with ordinary 64-byte vector stores, `stream` with non-temporal ones
(`_mm512_stream_ps`, then `sfence`), both run over the grid by mlc's native pool
(`NativeProgramPool`, the threads and shares mlc's kernels get). Beside them, in the same turns:
mlc's compiled -x into its recycled result, `torch.neg(x, out=o)`, and `np.negative(x, out=o)`
(one thread). Best of 20 calls and 50 ms (`bench/cpu.py`'s `best_seconds`) after
`wait_until_quiet`, `--turns` interleaved turns; ms and GB/s of traffic (in + out).

Non-temporal stores skip the read-for-ownership of the result's lines and do not leave the result
in the caches: a gain where the data cannot stay cached between calls (results larger than the
last level, or than the thread's L2 share), a loss where it can (the next call's writes and the
consumer's reads find nothing cached).
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import cpu as bench  # noqa: E402
import cpu_modes  # noqa: E402

COLUMNS = 1024
ROWS_PER_PROGRAM = 2

SOURCE = r"""
#include <immintrin.h>
#include <stdint.h>
#define COLUMNS 1024
#define ROWS 2
void neg_store(float *x, float *out, int64_t first, int64_t last) {
  for (int64_t i = first * ROWS * COLUMNS; i < last * ROWS * COLUMNS; i += 16)
    _mm512_store_ps(out + i, _mm512_sub_ps(_mm512_setzero_ps(), _mm512_load_ps(x + i)));
}
void neg_stream(float *x, float *out, int64_t first, int64_t last) {
  for (int64_t i = first * ROWS * COLUMNS; i < last * ROWS * COLUMNS; i += 16)
    _mm512_stream_ps(out + i, _mm512_sub_ps(_mm512_setzero_ps(), _mm512_load_ps(x + i)));
  _mm_sfence();
}
"""


def kernels(folder: Path) -> ctypes.CDLL:
    source, library = folder / "store_kinds.c", folder / "store_kinds.so"
    source.write_text(SOURCE)
    subprocess.run(["cc", "-O3", "-march=native", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return ctypes.CDLL(str(library))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rows", default="1024,4096,8192,65536")
    parser.add_argument("--turns", type=int, default=3)
    arguments = parser.parse_args()
    import mlc
    from mlc.runtime.native_pool import NativeProgramPool, native_pool_library

    try:
        import torch

        torch.set_num_threads(arguments.threads)
    except ImportError:
        torch = None
    pool_library = native_pool_library()
    assert pool_library is not None, "the native pool could not be built"
    pool = NativeProgramPool(pool_library, arguments.threads)
    keep: list = []
    with tempfile.TemporaryDirectory() as folder:
        library = kernels(Path(folder))
        addresses = {name: ctypes.cast(getattr(library, name), ctypes.c_void_p).value for name in ("neg_store", "neg_stream")}
        print(f"CPU: {bench.cpu_model()}; threads {arguments.threads}; -x of ROWSx{COLUMNS} f32; ms best (GB/s in+out)")
        print("| rows | turn | mlc | C store | C stream | torch out= | numpy out= (1 thread) |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for rows in (int(text) for text in arguments.rows.split(",")):
            nbytes = rows * COLUMNS * 4
            x = cpu_modes.as_matrix(cpu_modes.huge_block(nbytes, keep), rows)
            x[...] = np.random.default_rng(0).standard_normal((rows, COLUMNS), dtype=np.float32)
            out = cpu_modes.as_matrix(cpu_modes.huge_block(nbytes, keep), rows)
            out[...] = 0
            pointers = (ctypes.c_void_p * 2)(x.ctypes.data, out.ctypes.data)
            programs = rows // ROWS_PER_PROGRAM
            compiled = mlc.compile(bench.negate_case(rows, COLUMNS).source, device="cpu", num_threads=arguments.threads)
            runs = {"mlc": lambda: compiled(x)}
            for name, address in addresses.items():
                runs[name] = lambda address=address: pool.run(address, pointers, programs)
            if torch is not None:
                tx, to = torch.from_numpy(x), torch.from_numpy(out)
                runs["torch"] = lambda: torch.neg(tx, out=to)
            runs["numpy"] = lambda: np.negative(x, out=out)
            for name, run in runs.items():
                out[...] = 0
                got = run()
                assert np.array_equal(got if name == "mlc" else out, -x), name
            for turn in range(arguments.turns):
                cells = []
                for name in ("mlc", "neg_store", "neg_stream", "torch", "numpy"):
                    if name not in runs:
                        cells.append("-")
                        continue
                    bench.wait_until_quiet()
                    ms = bench.best_seconds(runs[name], 20) * 1e3
                    cells.append(f"{ms:.3f} ({2 * nbytes / ms / 1e6:.0f})")
                print(f"| {rows} | {turn} | " + " | ".join(cells) + " |", flush=True)
            del compiled
    pool.close()


if __name__ == "__main__":
    main()
