"""The hand-built NCHW convolution kernels on TMA boxes (`bench/conv_tma.py`, `bench/conv_tma_shifted.py`).

Without a GPU: the shifted kernel's decomposition (three GEMMs over unshifted image columns, one
per filter column, summed one column apart) is the convolution, in numpy; both kernels assemble
for sm_90a without spills, with the copies, products and stores their docstrings describe (when
ptxas is installed). On an sm_90 GPU (gpu-marked): the shifted kernel against a direct
convolution of the same f16 inputs, within the f16 rounding of the result and the f32
accumulation's error.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import conv_tma  # noqa: E402
import conv_tma_shifted  # noqa: E402


def _direct(x: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 3x3 convolution with padding 1 in f64, and the same of |x| and |W| (for error bounds)."""
    height, width = x.shape[2:]
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out, magnitude = 0.0, 0.0
    for r in range(3):
        for s in range(3):
            window = padded[:, :, r : r + height, s : s + width]
            out = out + np.einsum("oc,nchw->nohw", weights[:, :, r, s].astype(np.float64), window)
            magnitude = magnitude + np.einsum("oc,nchw->nohw", np.abs(weights[:, :, r, s].astype(np.float64)), np.abs(window))
    return out, magnitude


@pytest.mark.parametrize("shape", [(2, 3, 4, 5, 6), (1, 8, 2, 1, 9), (3, 2, 5, 7, 1)])
def test_the_shifted_decomposition_is_the_convolution(rng, shape) -> None:
    batch, channels, outputs, height, width = shape
    x = rng.standard_normal((batch, channels, height, width))
    weights = rng.standard_normal((outputs, channels, 3, 3))
    expected, magnitude = _direct(x, weights)
    # two f64 sums of the same 9 C products in different orders
    bound = magnitude * (9 * channels) * np.finfo(np.float64).eps
    assert np.all(np.abs(conv_tma_shifted.reference(x, weights) - expected) <= bound)


def test_the_input_map_is_one_image_row_of_64_channels() -> None:
    """The 4-D map of the NCHW input: byte strides of a contiguous (32, 256, 56, 56) f16 tensor, a
    box of one row of 64 channels by 64 columns (wider than the image: the copy engine zero-fills;
    the driver encoded it on an H100, BENCHMARKS.md conv11), 128-byte swizzle."""
    geometry = conv_tma.input_geometry(conv_tma.ConvConfig())
    geometry.check()
    assert geometry.strides == (256 * 56 * 56 * 2, 56 * 56 * 2, 56 * 2, 2)
    assert geometry.box == (1, 64, 1, 64) and geometry.box_bytes == conv_tma.B_BOX and geometry.swizzle == 128


def _assemble(tmp_path: Path, name: str, ptx: str) -> str:
    (tmp_path / f"{name}.ptx").write_text(ptx)
    command = ["ptxas", "-v", "-arch=sm_90a", str(tmp_path / f"{name}.ptx"), "-o", str(tmp_path / f"{name}.cubin")]
    return subprocess.run(command, check=True, capture_output=True, text=True).stderr


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_the_kernels_assemble_without_spills(tmp_path) -> None:
    boxed = conv_tma.kernel_ptx(conv_tma.ConvConfig(stages=3, persistent=True))
    # per K step: one A box, one input box per image row of the block; 4 products; 7 of 8 column
    # blocks of each image row stored (56 of 64 columns), two rows of the fragment each
    assert boxed.count("cp.async.bulk.tensor.2d") == 1 and boxed.count("cp.async.bulk.tensor.4d") == conv_tma.ROWS_PER_BLOCK
    assert boxed.count("wgmma.mma_async") == 4 and boxed.count("st.global") == 2 * 4 * 7
    shifted = conv_tma_shifted.kernel_ptx(conv_tma_shifted.ShiftedConfig(stages=4))
    assert shifted.count("cp.async.bulk.tensor.2d") == conv_tma_shifted.TAPS and shifted.count("cp.async.bulk.tensor.4d") == conv_tma_shifted.ROWS
    assert shifted.count("wgmma.mma_async") == 4 and shifted.count("st.global") == 2 * 2 * 7
    for name, ptx in (("boxed", boxed), ("shifted", shifted)):
        report = _assemble(tmp_path, name, ptx)
        assert "0 bytes spill stores" in report and "C75" not in report, report


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2, 64, 64, 8), (1, 128, 64, 56)])
def test_the_shifted_kernel_computes_the_convolution(shape) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("TMA and wgmma need sm_90")
    batch, channels, outputs, size = shape
    rng = np.random.default_rng(3)
    x = rng.standard_normal((batch, channels, size, size)).astype(np.float16)
    weights = (rng.standard_normal((outputs, channels, 3, 3)) / (3 * channels**0.5)).astype(np.float16)
    config = conv_tma_shifted.ShiftedConfig(batch, channels, outputs, size, stages=3)
    device_x, device_weights = torch.from_numpy(x).cuda(), torch.from_numpy(weights).cuda()
    out = torch.full((batch, outputs, size, size), float("nan"), dtype=torch.float16, device="cuda")
    prepared = conv_tma_shifted.weights_by_column(device_weights)  # held: its tensor map points at it
    conv_tma_shifted.conv_callable(config, prepared, device_x, out)()
    torch.cuda.synchronize()
    expected, magnitude = _direct(x, weights)
    # the f16 result's rounding (half an ulp, relative 2^-11) and 9 C f32 additions of the tensor
    # cores and the epilogue, each off by at most an ulp of the running sum (2^-23: truncation)
    bound = np.abs(expected) * 2.0**-11 + magnitude * (9 * channels + 2) * 2.0**-23
    assert np.all(np.abs(out.cpu().numpy().astype(np.float64) - expected) <= bound)
