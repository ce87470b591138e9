"""Extracting a small space's configurations in the background, so that proposals do not wait.

Proposing a candidate needs the features and program fingerprint of every configuration it
considers (`features.extract`: lowering to the loop level, ~50-100 ms of a process), and late in
a tuning most configurations drawn make a program measured already, so a proposal considers
many. Extracted on demand, that is a round trip to the measurer's extraction processes per
proposal, on the search's critical path: in the first 2-GPU measurement of the streaming search
the tuning process spent 34 of 45 s proposing while the GPUs were busy 27% of the time.

`Prefetch` walks a space of at most `PREFETCH_SPACE` configurations (`SearchSpace.valid_configs`,
in order) and keeps `width` chunks of `CHUNK` configurations extracting in the background
(`measurer.extract_later`, which returns a handle with `ready()` and `get()`, as a
`multiprocessing` AsyncResult does); `absorb` hands the chunks that have finished to the search
without waiting. `width` is the measurer's `background_workers`: `LocalMeasurer` runs these jobs
in a pool of their own at the lowest priority, so that on-demand extractions never queue behind
them and compiles are not slowed (on the 2-GPU machine, sharing one pool made an on-demand round
trip wait for a whole round of background chunks, ~0.8 s; and extracting whole spaces at normal
priority beside the compiles was a suspect for compiles taking 2.3x longer there than before;
at the lowest priority and without a CUDA context per extraction process they took 0.4-0.6 s
again). A space of 735 configurations at ~20-60 ms each is a few seconds of 16 processes: the
later proposals of the tuning find their configurations extracted. `known` is the search's
(`Search.known`): configurations extracted, or being extracted ahead, are not queued here.

Limits: larger spaces are not prefetched (their draws rarely repeat a program); a measurer without
`extract_later` gets none.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from mlc.tuning.space import SearchSpace, config_key

PREFETCH_SPACE = 2048
"""Spaces up to this many configurations are extracted in the background."""
CHUNK = 2
"""Configurations a background extraction job holds (what an on-demand one may wait behind)."""

Outcome = tuple[list[float], str] | str
"""`features.extract_from_text`'s answer for one configuration."""


class Prefetch:
    def __init__(self, space: SearchSpace, extract_later: Callable[[list[dict]], Any], width: int, known: Callable[[str], bool]):
        self._configs: Iterator[dict] = iter(space.valid_configs())
        self._extract_later = extract_later
        self._width = width
        self._known = known
        self._in_flight: list[tuple[list[dict], Any]] = []
        self._top_up()

    @staticmethod
    def of(space: SearchSpace, measurer: Any, source: str, known: Callable[[str], bool]) -> Prefetch | None:
        """A prefetch of `space` through `measurer`, or None (a large space, or no `extract_later`)."""
        extract_later = getattr(measurer, "extract_later", None)
        if extract_later is None or space.size() > PREFETCH_SPACE:
            return None
        width = max(1, getattr(measurer, "background_workers", getattr(measurer, "extract_workers", 1)))
        return Prefetch(space, lambda configs: extract_later(source, configs), width, known)

    def absorb(self) -> list[tuple[dict, Outcome]]:
        """The configurations of the chunks that have finished, with their outcomes; starts more.
        A chunk whose job failed is dropped (its configurations are extracted on demand)."""
        finished, waiting = [], []
        for entry in self._in_flight:
            (finished if entry[1].ready() else waiting).append(entry)
        self._in_flight = waiting
        self._top_up()
        absorbed = []
        for chunk, handle in finished:
            try:
                absorbed.extend(zip(chunk, handle.get()))
            except Exception:  # noqa: BLE001 - the extraction process died: extracted on demand later
                continue
        return absorbed

    def _top_up(self) -> None:
        while len(self._in_flight) < self._width:
            chunk = list(itertools.islice((c for c in self._configs if not self._known(config_key(c))), CHUNK))
            if not chunk:
                return
            self._in_flight.append((chunk, self._extract_later(chunk)))
