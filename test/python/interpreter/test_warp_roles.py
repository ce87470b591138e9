"""Warp-specialized kernels on the interpreter: `scf.if {mlc.warp_roles}` and mbarrier ordering.

The producer and consumer loops of `WARP_SPECIALIZED_RING` (see `programs.py`) sit in divergent
branches and synchronize only through full/empty mbarriers, so the interpreter runs them as
coroutines (`mlc/interpreter/warp_roles.py`) and the race checker orders their accesses through
the mbarriers (a consumer's read after its wait on *full*, the producer's refill after its wait
on *empty*). The variants break the protocol and check what is reported: a consumer that does
not wait (a read of bytes in flight), a producer that does not wait for the stage's release (a
copy over a stage still in flight or being read), consumers that release the stage before
reading it (WAR: the refill is not ordered after their reads), a missing release (every role
waits: a hang), and an empty barrier that expects more arrivals than come. One arrival per warp
(its lane 0, as the warp-specialized matmul releases) is ordered after the warp's reads only
through `loop.warp_sync`.
"""

import numpy as np
import pytest

from mlc.interpreter import DataRace, InterpreterError, run_kernel
from programs import WARP_SPECIALIZED_RING as RING
from programs import WARP_SPECIALIZED_LOOP_RING as LOOP_RING

PRODUCER_WAIT = "loop.mbarrier_wait %empty[%stage], %parity : memref<2xi64, 3 : i64>"
CONSUMER_WAIT = "loop.mbarrier_wait %full[%stage], %parity : memref<2xi64, 3 : i64>"
RELEASE = "loop.mbarrier_arrive %empty[%stage] : memref<2xi64, 3 : i64>"
WARP_RELEASE = """%c32 = arith.constant 32 : index
      %lane = arith.remui %row, %c32 : index
      %leader = arith.cmpi eq, %lane, %c0 : index
      {sync}
      scf.if %leader {{
        {inner_sync}
        loop.mbarrier_arrive %empty[%stage] : memref<2xi64, 3 : i64>
      }}"""
"""One arrival per consumer warp, by its lane 0 (the *empty* barriers expect 4)."""


def _run(parse, rng, **changes: str) -> tuple[np.ndarray, np.ndarray]:
    pieces = {
        "consumers": "128",
        "producer_wait": PRODUCER_WAIT,
        "consumer_wait": CONSUMER_WAIT,
        "early_release": "",
        "release": RELEASE,
    } | changes
    a = rng.standard_normal((48, 256)).astype(np.float16)
    out = np.full((2, 128, 256), np.nan, np.float16)
    return a, run_kernel(parse(RING.format(**pieces)), "ring", [a, out])[1]


def test_producer_and_consumers_run_as_coroutines_ordered_by_mbarriers(parse, rng):
    a, out = _run(parse, rng)
    for block in range(2):
        np.testing.assert_array_equal(out[block, :48], a)
        np.testing.assert_array_equal(out[block, 48:], np.zeros((80, 256), np.float16))


@pytest.mark.parametrize(
    "changes, error, message",
    [
        pytest.param({"consumer_wait": ""}, DataRace, "still in flight", id="consumer-does-not-wait"),
        pytest.param({"producer_wait": ""}, DataRace, "in flight|WAR", id="producer-does-not-wait-for-the-release"),
        pytest.param({"early_release": RELEASE, "release": ""}, DataRace, "WAR.*no mbarrier orders them", id="release-before-the-reads"),
        pytest.param({"release": ""}, InterpreterError, "never completes.*every warp role waits, another on an mbarrier phase .*128 of 128 arrivals missing", id="no-release"),
        pytest.param({"consumers": "129"}, InterpreterError, "every warp role waits.*1 of 129 arrivals missing", id="release-count-too-high"),
    ],
)
def test_broken_protocol_is_reported(parse, rng, changes, error, message):
    with pytest.raises(error, match=message):
        _run(parse, rng, **changes)


def test_one_lane_per_warp_releases_the_warp_after_a_warp_sync(parse, rng):
    """Lane 0 of each consumer warp arrives for its warp: after `loop.warp_sync` its arrival
    releases every lane's reads, so the refill is ordered after them."""
    a, out = _run(parse, rng, consumers="4", release=WARP_RELEASE.format(sync="loop.warp_sync", inner_sync=""))
    np.testing.assert_array_equal(out[:, :48], np.broadcast_to(a, (2, 48, 256)))


@pytest.mark.parametrize(
    "sync, inner_sync, error, message",
    [
        pytest.param("", "", DataRace, "WAR.*no mbarrier orders them", id="no-warp-sync"),
        pytest.param("", "loop.warp_sync", InterpreterError, "warp_sync reached by 1 of the 32 lanes of warp 4", id="warp-sync-by-one-lane"),
    ],
)
def test_a_warps_arrival_without_its_lanes_meeting_is_reported(parse, rng, sync, inner_sync, error, message):
    with pytest.raises(error, match=message):
        _run(parse, rng, consumers="4", release=WARP_RELEASE.format(sync=sync, inner_sync=inner_sync))


def test_without_roles_the_lockstep_run_reports_the_hang(parse, rng):
    """The same kernel as one lockstep program: the producer's loop runs to its third step first,
    where it waits for a release that the consumers' loop (not run yet) would make."""
    source = RING.replace(" {{mlc.warp_roles = array<i64: 40, 232>}}", "")
    with pytest.raises(InterpreterError, match="waits forever.*128 of 128 arrivals missing"):
        _run_source(parse, rng, source)


def test_roles_run_at_the_loop_level(parse, rng):
    """The ring as a loop kernel (a block loop and a thread loop), where only writes are checked."""
    source = LOOP_RING.format(producer_wait=PRODUCER_WAIT, consumer_wait=CONSUMER_WAIT, release=RELEASE)
    a = rng.standard_normal((48, 256)).astype(np.float16)
    out = run_kernel(parse(source), "ring", [a, np.full((2, 128, 256), np.nan, np.float16)])[1]
    np.testing.assert_array_equal(out[:, :48], np.broadcast_to(a, (2, 48, 256)))


def test_roles_need_both_regions(parse, rng):
    source = RING[: RING.index("  }} else {{")] + RING[RING.index("  }} {{mlc.warp_roles") :]
    with pytest.raises(InterpreterError, match="needs both regions"):
        _run_source(parse, rng, source)


def _run_source(parse, rng, source: str) -> None:
    pieces = {"consumers": "128", "producer_wait": PRODUCER_WAIT, "consumer_wait": CONSUMER_WAIT, "early_release": "", "release": RELEASE}
    run_kernel(parse(source.format(**pieces)), "ring", [rng.standard_normal((48, 256)).astype(np.float16), np.zeros((2, 128, 256), np.float16)])
