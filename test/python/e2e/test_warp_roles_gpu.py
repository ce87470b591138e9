"""The warp-specialized ring of `programs.WARP_SPECIALIZED_RING` on the GPU (sm_90).

Its producer warpgroup and consumer warpgroup meet only through full/empty mbarriers
(`scf.if {mlc.warp_roles}`); the interpreter runs it as coroutines (`test_warp_roles.py`). Here
mlc's own passes (gpu-insert-barriers, convert-gpu-to-nvvm: setmaxnreg per role, the bulk copies
through a tensor map) lower it to PTX, a `HostProgram` launches it, and the device's result must be
the interpreter's, bit for bit: the source's 48 rows in every block, zeros past its end. Without a
GPU the PTX is still checked to assemble with `setmaxnreg` honoured (no C7508).
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from mlc.backend import compile_to_ptx
from mlc.interpreter import run_kernel
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from programs import WARP_SPECIALIZED_RING, lower

TO_PTX = (
    "gpu-insert-barriers,convert-gpu-to-nvvm,convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,"
    "convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts,cse"
)
EMPTY = "loop.mbarrier_wait %empty[%stage], %parity : memref<2xi64, 3 : i64>"
FULL = "loop.mbarrier_wait %full[%stage], %parity : memref<2xi64, 3 : i64>"
RELEASE = "loop.mbarrier_arrive %empty[%stage] : memref<2xi64, 3 : i64>"
SOURCE = "builtin.module {\n" + WARP_SPECIALIZED_RING.format(
    consumers="128", producer_wait=EMPTY, consumer_wait=FULL, early_release="", release=RELEASE
).replace("  mlc_gpu.barrier\n", "", 1) + "\n}"
HOST = """builtin.module {
  llvm.func @ring(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr) attributes {nvvm.kernel, mlc.tensor_maps = [array<i64: 0, 0, 128, 64>]}
  func.func @main(%a: memref<48x256xf16>) -> memref<2x128x256xf16> {
    %out = memref.alloc() : memref<2x128x256xf16>
    mlc_gpu.launch @ring(%a, %out) grid [2, 1, 1] block [256, 1, 1] : memref<48x256xf16>, memref<2x128x256xf16>
    func.return %out : memref<2x128x256xf16>
  }
}"""


def _parse(text: str):  # type: ignore[no-untyped-def]
    return parse_module(text, make_context())[0]


def _ptx() -> str:
    return compile_to_ptx(lower(SOURCE, TO_PTX), "sm_90")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_ring_assembles_with_setmaxnreg_honoured(tmp_path) -> None:
    ptx = _ptx()
    assert "setmaxnreg.dec.sync.aligned.u32 40;" in ptx and "setmaxnreg.inc.sync.aligned.u32 232;" in ptx
    assert ptx.count("bar.sync") == 1  # after the mbarriers' initialization only
    (tmp_path / "ring.ptx").write_text(ptx)
    report = subprocess.run(
        ["ptxas", "-v", "-arch=sm_90a", str(tmp_path / "ring.ptx"), "-o", str(tmp_path / "ring.cubin")],
        check=True, capture_output=True, text=True,
    ).stderr
    assert "0 bytes spill stores" in report and "C7508" not in report, report


@pytest.mark.gpu
def test_ring_on_the_gpu_matches_the_interpreter() -> None:
    from mlc.runtime.cuda import DeviceBuffer, get_device
    from mlc.runtime.host import HostProgram
    from mlc.runtime.plan import plan_host_function

    if get_device().properties.compute_capability < (9, 0):
        pytest.skip("bulk tensor copies and setmaxnreg need sm_90")
    a = np.random.default_rng(3).standard_normal((48, 256)).astype(np.float16)
    interpreted = run_kernel(_parse(SOURCE), "ring", [a, np.full((2, 128, 256), np.nan, np.float16)])[1]
    program = HostProgram.for_cuda_plan(plan_host_function(_parse(HOST)), _ptx(), cuda_graph=False)
    with DeviceBuffer.from_numpy(a) as device_a:
        for _ in range(3):  # the phases' parities start over with each launch
            (result,) = program.run(device_a)
            np.testing.assert_array_equal(np.asarray(result), interpreted)
    np.testing.assert_array_equal(interpreted[:, :48], np.broadcast_to(a, (2, 48, 256)))
