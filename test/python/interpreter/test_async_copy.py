"""Async copies (`loop.async_copy/commit/wait`, NVVM `cp.async`): data lands at the wait.

A two-stage ring at the GPU level: 64 threads copy one 8-element row each of a 64 x 64 f16 matrix
into stage `k % 2` of a shared buffer, the next row block is in flight while the current one is
read back (by another thread: thread t reads row 63 - t), and every row ends up in the output.
The variants drop one piece of the protocol and check that the interpreter reports it: a read
before the wait that completes the copy, a missing barrier between the wait and a read of another
thread's row (RAW), and a copy overwriting a stage another thread still reads (WAR).
"""

import numpy as np
import pytest

from mlc.interpreter import DataRace, run_kernel
from programs import ASYNC_RING as RING

WAIT = "loop.async_wait 0"
BARRIER = "mlc_gpu.barrier"


def _ring(parse, **changes: str):
    pieces = {"wait": WAIT, "barrier_after_wait": BARRIER, "early_read": "", "barrier_after_read": BARRIER}
    pieces.update(changes)
    return parse(RING.format(**pieces))


def _run(parse, rng, **changes: str) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((64, 64)).astype(np.float16)
    return a, run_kernel(_ring(parse, **changes), "ring", [a, np.zeros_like(a)])[1]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({}, id="barriers-after-wait-and-reads"),
        # One barrier per iteration, after the wait and before the copy (gpu-insert-barriers' choice):
        # it orders the landed copies before the reads and the last reads before the new copy.
        pytest.param({"barrier_after_read": ""}, id="one-barrier-after-wait"),
    ],
)
def test_two_stage_ring_copies_every_row(parse, rng, changes):
    a, out = _run(parse, rng, **changes)
    np.testing.assert_array_equal(out, a)


EARLY_READ = "%early = vector.load %stages[%next_stage, %t, %c0] : memref<2x64x8xf16, 3 : i64>, vector<8xf16>"


@pytest.mark.parametrize(
    "changes, message",
    [
        pytest.param({"wait": ""}, "still in flight", id="read-before-the-wait"),
        pytest.param({"early_read": EARLY_READ}, "still in flight", id="read-of-the-stage-being-filled"),
        pytest.param({"barrier_after_wait": ""}, "RAW", id="no-barrier-after-the-wait"),
        # The barrier after the copy instead: the copy overwrites the stage read in the last iteration.
        pytest.param({"barrier_after_wait": "", "early_read": BARRIER, "barrier_after_read": ""}, "WAR", id="copy-over-a-stage-being-read"),
    ],
)
def test_broken_protocol_is_reported(parse, rng, changes, message):
    with pytest.raises(DataRace, match=message):
        _run(parse, rng, **changes)
