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


def test_two_stage_ring_copies_every_row(parse, rng):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    _, out = run_kernel(_ring(parse), "ring", [a, np.zeros_like(a)])
    np.testing.assert_array_equal(out, a)


def test_read_before_the_wait_is_reported(parse, rng):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    with pytest.raises(DataRace, match="still in flight"):
        run_kernel(_ring(parse, wait=""), "ring", [a, np.zeros_like(a)])


def test_read_of_the_stage_being_filled_is_reported(parse, rng):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    early = "%early = vector.load %stages[%next_stage, %t, %c0] : memref<2x64x8xf16, 3 : i64>, vector<8xf16>"
    with pytest.raises(DataRace, match="still in flight"):
        run_kernel(_ring(parse, early_read=early), "ring", [a, np.zeros_like(a)])


def test_missing_barrier_after_the_wait_is_a_raw_race(parse, rng):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    with pytest.raises(DataRace, match="RAW|read"):
        run_kernel(_ring(parse, barrier_after_wait=""), "ring", [a, np.zeros_like(a)])


def test_copy_over_a_stage_still_being_read_is_a_war_race(parse, rng):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    with pytest.raises(DataRace, match="WAR|write"):
        run_kernel(_ring(parse, barrier_after_wait="", early_read=BARRIER, barrier_after_read=""), "ring", [a, np.zeros_like(a)])


def test_barrier_after_the_copy_alone_orders_the_ring(parse, rng):
    """With the barrier after the wait and the copy, but none after the reads, the copy of
    iteration k + 1 overwrites the stage read in iteration k: fine only with the barrier after
    the wait before the copy (the first test), so moving it past the copy is the WAR above."""
    a = rng.standard_normal((64, 64)).astype(np.float16)
    _, out = run_kernel(_ring(parse, barrier_after_read=""), "ring", [a, np.zeros_like(a)])
    np.testing.assert_array_equal(out, a)
