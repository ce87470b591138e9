"""When a GPU function replays its launches from a CUDA graph by default (`mlc.compile`'s
`cuda_graph=None`, the automatic choice; `True` and `False` force either).

A call of a compiled GPU function launches its kernels one by one from Python, about 4.2-4.5 µs of
host time each through mlc's runtime (more on the legacy default stream), while one graph replay
costs 9-14 µs of host time whatever the number of kernels. That time is lost only where the host
is what bounds the call: when the kernels are so short that the device waits for the next launch.
Measured on an H100 (`bench/launch_overhead.py`, BENCHMARKS.md): 16 launches of one-block kernels
of ~3 µs, plain 69-72 µs a call against 40 µs replayed (1.7-1.8x); 12 kernels of ~5 µs, 63 against
47 µs on a side stream (1.3x: the plain launches hide behind the kernels); 16 GEMV kernels of
~7 µs, 119 against 106 µs (1.1x). Long kernels keep the device busy while the host launches the
next one, and a graph saves only the gaps between them. Capturing a graph costs more than a
call (tens to hundreds of µs), once per set of buffer addresses the function is called with.

The rule, from what the plan knows before any call (`graph_pays`):

1. the call launches at least `MIN_LAUNCHES` (2) kernels: replaying one launch gains nothing;
2. at least half of the launches are small: a grid of at most one block per multiprocessor, a
   single wave, which runs for microseconds, the order of its launch's host cost.

And at run time (`CaptureGuard`, automatic choice only): a caller whose buffers move at every call
(outputs allocated afresh and kept alive) would capture a graph per call, which costs more than it
saves. After `CAPTURES_BEFORE_JUDGING` captures, when the captures are more than a quarter of the
calls, the function goes back to plain launches for good.

Limits: kernel sizes stand in for kernel times (a one-wave kernel with a long loop inside is
rated small: graphing it costs nothing at replay, only the capture); the 4.4 µs is one H100
host's figure, and the rule does not depend on it beyond "launches cost the host microseconds".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlc.runtime.slots import KernelLaunch

MIN_LAUNCHES = 2
"""Fewer launches than this never use a graph by default."""

CAPTURES_BEFORE_JUDGING = 9
"""Captures an automatically graphed function makes before it may give graphs up: one more than
the graphs a program keeps (`executor.MAX_CUDA_GRAPHS`), so that a caller cycling through up to 8
sets of buffers keeps its graphs."""

MAX_CAPTURE_SHARE = 0.25
"""The share of calls that may capture a graph, past `CAPTURES_BEFORE_JUDGING` captures."""


def is_small(launch: KernelLaunch, multiprocessors: int) -> bool:
    """Whether `launch` runs as a single wave: at most one block per multiprocessor."""
    if launch.grid is None:
        return False
    blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
    return blocks <= multiprocessors


def graph_pays(launches: Sequence[KernelLaunch], multiprocessors: int) -> bool:
    """The automatic choice for a function launching `launches` on a GPU of `multiprocessors`."""
    if len(launches) < MIN_LAUNCHES:
        return False
    small = sum(is_small(launch, multiprocessors) for launch in launches)
    return 2 * small >= len(launches)


@dataclass
class CaptureGuard:
    """Counts the calls and captures of an automatically graphed function (see the docstring)."""

    calls: int = 0
    captures: int = 0

    def keep_graphs(self, capturing: bool) -> bool:
        """Records a call (that must capture, or replays); False once graphs do not pay."""
        self.calls += 1
        self.captures += capturing
        return self.captures < CAPTURES_BEFORE_JUDGING or self.captures <= MAX_CAPTURE_SHARE * self.calls
