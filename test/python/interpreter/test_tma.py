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
