"""mbarriers and bulk tensor copies through convert-gpu-to-nvvm and the NVPTX back end (no GPU).

The two-stage TMA ring of `programs.TMA_RING` (its protocol is checked on the interpreter by
test_tma.py) and the swizzled copies of the lit test `convert-gpu-to-nvvm-tma.mlir` are lowered to
PTX, which must hold one bulk tensor copy per box, the mbarrier operations, the tensor maps'
acquire fences, PTX ISA 8.3 and, where ptxas is installed, assemble for sm_90a without spills.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mlc.backend import compile_to_ptx
from programs import TMA_RING, lower

TO_PTX = (
    "convert-gpu-to-nvvm,convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,"
    "convert-math-to-llvm{library=libdevice},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts,cse"
)
LIT_KERNEL = Path(__file__).parents[3] / "lit" / "transforms" / "gpu" / "convert-gpu-to-nvvm-tma.mlir"
WAIT = "loop.mbarrier_wait %bars[%stage], %parity : memref<2xi64, 3 : i64>"


def _ptx(source: str) -> str:
    return compile_to_ptx(lower(source, TO_PTX), "sm_90")


def _lit_kernel() -> str:
    return "\n".join(line for line in LIT_KERNEL.read_text().splitlines() if not line.startswith("//"))


@pytest.mark.parametrize(
    "source, copies, arrivals",
    [
        pytest.param(TMA_RING.format(count=1, bytes=8192, wait=WAIT, barrier_after_read="mlc_gpu.barrier"), 4, 4, id="ring"),  # the K loop unrolled by LLVM
        pytest.param(_lit_kernel(), 3, 2, id="swizzled-stage"),
    ],
)
def test_ptx_has_the_copies_barriers_and_fences(source, copies, arrivals, tmp_path):
    ptx = _ptx(source)
    assert ".version 8.3" in ptx and ".target sm_90a" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes") == copies
    assert len(re.findall(r"mbarrier\.arrive(\.expect_tx)?\.shared", ptx)) == arrivals
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx and "mbarrier.init.shared.b64" in ptx
    assert "fence.proxy.tensormap::generic.acquire.gpu" in ptx
    if shutil.which("ptxas") is None:
        return
    (tmp_path / "kernel.ptx").write_text(ptx)
    report = subprocess.run(
        ["ptxas", "-v", "-arch=sm_90a", str(tmp_path / "kernel.ptx"), "-o", str(tmp_path / "kernel.cubin")],
        check=True, capture_output=True, text=True,
    ).stderr
    assert "0 bytes spill stores" in report, report
