"""Bulk tensor copies and mbarriers (`loop.tma_load`, `loop.mbarrier_*`) on the interpreter.

A two-stage ring at the GPU level: thread 0 initializes one mbarrier per stage, then per K step
announces the box's bytes (`expect_tx`) and issues the copy of the next 64 x 64 box of a 48 x 256
f16 matrix into the other stage; all 64 threads wait on the current stage's barrier with the
parity of its use (k / 2 mod 2), copy their row out and meet at a barrier before the stage is
refilled. Rows 48..63 of every box are past the source's end: they must arrive as zeros.
The variants break the protocol and check what the interpreter reports: a missing wait or a wait
with the wrong parity (a read of bytes still in flight), fewer announced bytes than copied or a
missing arrival (a wait that never returns), more arrivals than the barrier's count, no barrier
between the reads of a stage and the copy that refills it (WAR).
"""

import numpy as np
import pytest

from mlc.interpreter import DataRace, InterpreterError, run_kernel
from programs import TMA_RING as RING

WAIT = "loop.mbarrier_wait %bars[%stage], %parity : memref<2xi64, 3 : i64>"


def _run(parse, rng, **changes: str) -> tuple[np.ndarray, np.ndarray]:
    pieces = {"count": "1", "bytes": str(64 * 64 * 2), "wait": WAIT, "barrier_after_read": "mlc_gpu.barrier"} | changes
    a = rng.standard_normal((48, 256)).astype(np.float16)
    return a, run_kernel(parse(RING.format(**pieces)), "ring", [a, np.full((64, 256), np.nan, np.float16)])[1]


def test_ring_copies_every_box_and_zero_fills_past_the_end(parse, rng):
    a, out = _run(parse, rng)
    np.testing.assert_array_equal(out[:48], a)
    np.testing.assert_array_equal(out[48:], np.zeros((16, 256), np.float16))


@pytest.mark.parametrize(
    "changes, error, message",
    [
        pytest.param({"wait": ""}, DataRace, "still in flight", id="no-wait"),
        pytest.param({"wait": WAIT.replace("%parity", "%next")}, DataRace, "still in flight", id="wrong-parity"),
        pytest.param({"bytes": str(64 * 64 * 2 + 16)}, InterpreterError, "never completes.*balance 16", id="bytes-never-copied"),
        pytest.param({"count": "2"}, InterpreterError, "1 of 2 arrivals missing", id="arrival-missing"),
        # No barrier after the reads: the next copy refills the stage other threads read (WAR).
        pytest.param({"barrier_after_read": ""}, DataRace, "WAR", id="copy-over-a-stage-being-read"),
    ],
)
def test_broken_protocol_is_reported(parse, rng, changes, error, message):
    with pytest.raises(error, match=message):
        _run(parse, rng, **changes)


def test_more_arrivals_than_the_count_are_reported(parse, rng):
    every_thread_arrives = "loop.mbarrier_arrive %bars[%stage] : memref<2xi64, 3 : i64>\n    " + WAIT
    with pytest.raises(InterpreterError, match="64 arrivals on an mbarrier phase that expects 1 more"):
        _run(parse, rng, bytes=str(64 * 64 * 2), wait=every_thread_arrives)


WINDOW_BOX = """
mlc_gpu.func @window(%x: memref<2x64x6x56xf16>, %out: memref<64x64xf16>) grid [1, 1, 1] block [64, 1, 1] {{
  %t = mlc_gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = arith.constant {row} : index
  %shift = arith.constant {column} : index
  %column = arith.addi %shift, %c0 : index
  %bars = memref.alloca() : memref<1xi64, 3 : i64>
  %box = memref.alloca() : memref<1x64x1x64xf16, 3 : i64>
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {{
    loop.mbarrier_init %bars[%c0], 1 : memref<1xi64, 3 : i64>
    loop.mbarrier_arrive %bars[%c0] expect_tx 8192 : memref<1xi64, 3 : i64>
    loop.tma_load %x[%c1, %c0, %row, %column] to %box[%c0, %c0, %c0, %c0], %bars[%c0] : memref<2x64x6x56xf16> to memref<1x64x1x64xf16, 3 : i64>, memref<1xi64, 3 : i64>
  }}
  mlc_gpu.barrier
  loop.mbarrier_wait %bars[%c0], %c0 : memref<1xi64, 3 : i64>
  %channel = vector.load %box[%c0, %t, %c0, %c0] : memref<1x64x1x64xf16, 3 : i64>, vector<64xf16>
  vector.store %channel, %out[%t, %c0] : memref<64x64xf16>, vector<64xf16>
  mlc_gpu.return
}}
"""
"""One image row of 64 channels of an NCHW input (2 x 64 x 6 x 56 f16) as a 4-D box {n 1, c 64,
h 1, w 64}: the box an NCHW-native convolution would copy per filter tap (BENCHMARKS.md, conv11)."""


def _window(parse, rng, row: int, column: int) -> tuple[np.ndarray, np.ndarray]:
    x = rng.standard_normal((2, 64, 6, 56)).astype(np.float16)
    kernel = parse(WINDOW_BOX.format(row=row, column=column))
    return x, run_kernel(kernel, "window", [x, np.full((64, 64), np.nan, np.float16)])[1]


@pytest.mark.parametrize("row, column", [(2, 0), (-1, 0), (6, 0), (3, -8), (5, 8), (0, 48)])
def test_a_window_box_zero_fills_outside_the_image(parse, rng, row, column):
    """Any outer start coordinate, negative or past the end (the convolution's zero padding rows),
    and 16-byte aligned columns, negative too: the box is the image row, zeros outside."""
    x, out = _window(parse, rng, row, column)
    padded = np.zeros((64, 8 + 6 + 8, 8 + 56 + 64), np.float16)
    padded[:, 8 : 8 + 6, 8 : 8 + 56] = x[1]
    np.testing.assert_array_equal(out, padded[:, 8 + row, 8 + column : 8 + column + 64])


@pytest.mark.parametrize("column", [1, -1, 2, 7])
def test_a_box_shifted_by_part_of_16_bytes_is_reported(parse, rng, column):
    """The hardware stops a copy whose innermost start is not 16-byte aligned (an illegal
    instruction on the H100): the interpreter reports it rather than copying (a computed start;
    the verifier refuses a constant one, test/lit/dialects/loop/invalid.mlir)."""
    with pytest.raises(InterpreterError, match=f"innermost coordinate {column}: .* multiple of 8 elements"):
        _window(parse, rng, 2, column)
