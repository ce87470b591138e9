"""Data-race detection: shadow state per buffer element, updated by every tracked access.

Two checks, both vectorized over the lanes of one access:

* `WriteTracker` (global memory at every level, shared memory at the loop level): two writes of
  one element by different lanes are a race unless something orders them. Lanes are numbered in a
  mixed radix over *race axes* (loop level: one axis per `loop.parallel` depth; GPU level: block,
  then thread; tile level: the program). Each write records its lane and, per axis, an *epoch*.
  Two lanes that first differ along axis k are ordered iff their writes happened in different
  epochs of axis k: at the loop level a new epoch starts whenever a parallel loop of that depth
  starts or ends (sibling loops are ordered, iterations of one loop are not); at the GPU level the
  block axis has a single epoch (blocks are never ordered) and the thread axis counts the block's
  barrier phases.

* `SharedMemoryTracker` (shared memory at the `mlc_gpu` and NVVM levels): per block and element,
  the last writer and its barrier phase, and up to two distinct readers of the current phase. A
  read of an element another thread wrote in this phase is RAW, a write of an element another
  thread wrote (read) in this phase is WAW (WAR), unless an mbarrier orders the two accesses. A
  barrier ends the phase of the blocks whose threads all reached it, and is an error when only
  some threads of a block reach it.

  mbarriers order accesses within a phase by vector clocks, made only once a kernel uses one:
  each thread counts its *releases* (mbarrier arrivals; a bulk copy's completion is a release by
  its issuing thread), every access records the count of its thread, and `known[block, u, t]` is
  the latest release of thread t that thread u has *acquired* (through a wait on an mbarrier phase
  that t's release completed, directly or through other threads). Accesses by t at count c and
  by u are ordered when a barrier lies between them or when `known[block, u, t] >= c`.

Limits: only the last writer of an element is kept, so of three writes only consecutive pairs
are compared; global-memory reads are not tracked (a read racing with another block's write goes
unreported); warp-synchronous code (`bar.warp.sync`) is not modelled and may be reported as racy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation

from mlc.interpreter.errors import BarrierDivergence, DataRace
from mlc.interpreter.memory import Buffer


class RaceAxes:
    """What a `WriteTracker` needs from the running level: lane numbering, epochs, names."""

    def __init__(
        self,
        extents: Sequence[int],
        epochs: Callable[[np.ndarray], list[np.ndarray]],
        describe_lane: Callable[[int], str],
        ordering: str,
    ):
        self.extents = tuple(max(e, 1) for e in extents)
        strides = []
        stride = 1
        for extent in reversed(self.extents):
            strides.append(stride)
            stride *= extent
        self.strides = tuple(reversed(strides))
        self.epochs = epochs
        self.describe_lane = describe_lane
        self.ordering = ordering  # how the level orders writes, for messages

    def first_difference(self, lanes_a: np.ndarray, lanes_b: np.ndarray) -> np.ndarray:
        """The first axis along which each pair of lanes differs (len(extents) where equal)."""
        result = np.full(lanes_a.shape, len(self.extents), dtype=np.int64)
        for axis in reversed(range(len(self.extents))):
            coordinate_a = (lanes_a // self.strides[axis]) % self.extents[axis]
            coordinate_b = (lanes_b // self.strides[axis]) % self.extents[axis]
            result = np.where(coordinate_a != coordinate_b, axis, result)
        return result


@dataclass
class _WriteShadow:
    writers: np.ndarray
    epochs: np.ndarray


class WriteTracker:
    """Reports two unordered writes of one element by different lanes (WAW)."""

    def __init__(self, axes: RaceAxes):
        self.axes = axes
        self._shadows: dict[Buffer, _WriteShadow] = {}

    def record(self, buffer: Buffer, keys: np.ndarray, lanes: np.ndarray, op: Operation) -> None:
        """`lanes[i]` wrote element `keys[i]` of `buffer` (flat arrays over the access)."""
        if keys.size == 0:
            return
        epochs = np.stack([np.broadcast_to(e, lanes.shape) for e in self.axes.epochs(lanes)])
        self._check_within(buffer, keys, lanes, epochs, op)
        shadow = self._shadow(buffer)
        previous = shadow.writers[keys]
        candidates = np.nonzero((previous >= 0) & (previous != lanes))[0]
        if candidates.size:
            self._check_pairs(
                buffer,
                keys[candidates],
                previous[candidates],
                shadow.epochs[:, keys[candidates]],
                lanes[candidates],
                epochs[:, candidates],
                op,
            )
        shadow.writers[keys] = lanes
        shadow.epochs[:, keys] = epochs

    def _shadow(self, buffer: Buffer) -> _WriteShadow:
        shadow = self._shadows.get(buffer)
        if shadow is None:
            count = -(-buffer.size // buffer.granularity)
            shadow = _WriteShadow(
                np.full(count, -1, dtype=np.int64),
                np.zeros((len(self.axes.extents), count), dtype=np.int64),
            )
            self._shadows[buffer] = shadow
        return shadow

    def _check_within(
        self, buffer: Buffer, keys: np.ndarray, lanes: np.ndarray, epochs: np.ndarray, op: Operation
    ) -> None:
        if keys.size < 2:
            return
        order = np.lexsort((lanes, keys))
        sorted_keys, sorted_lanes = keys[order], lanes[order]
        clash = np.nonzero((sorted_keys[1:] == sorted_keys[:-1]) & (sorted_lanes[1:] != sorted_lanes[:-1]))[0]
        if clash.size:
            first, second = order[clash], order[clash + 1]
            self._check_pairs(
                buffer, keys[first], lanes[first], epochs[:, first], lanes[second], epochs[:, second], op
            )

    def _check_pairs(
        self,
        buffer: Buffer,
        keys: np.ndarray,
        lanes_a: np.ndarray,
        epochs_a: np.ndarray,
        lanes_b: np.ndarray,
        epochs_b: np.ndarray,
        op: Operation,
    ) -> None:
        axis = self.axes.first_difference(lanes_a, lanes_b)
        rows = np.arange(keys.size)
        valid = axis < len(self.axes.extents)
        clipped = np.minimum(axis, len(self.axes.extents) - 1)
        unordered = valid & (epochs_a[clipped, rows] == epochs_b[clipped, rows])
        hits = np.nonzero(unordered)[0]
        if hits.size == 0:
            return
        hit = hits[0]
        first = self.axes.describe_lane(int(lanes_a[hit]))
        second = self.axes.describe_lane(int(lanes_b[hit]))
        unit, element = divmod(int(keys[hit]) * buffer.granularity, buffer.unit_bytes)
        index = buffer.element_index(element // buffer.granularity)
        where = f" (copy {unit})" if buffer.units > 1 else ""
        raise DataRace(
            "WAW",
            buffer.describe() + where,
            index,
            (first, second),
            f"{first} and {second} both write it {self.axes.ordering}",
            op,
        )


@dataclass
class _SharedShadow:
    writer: np.ndarray
    write_phase: np.ndarray
    write_count: np.ndarray
    reader_a: np.ndarray
    reader_b: np.ndarray
    read_phase: np.ndarray
    read_count_a: np.ndarray
    read_count_b: np.ndarray


class SharedMemoryTracker:
    """RAW/WAR/WAW checks on per-block shared memory between barriers."""

    def __init__(
        self,
        block_count: int,
        threads_per_block: int,
        describe_block: Callable[[int], str],
        describe_thread: Callable[[int], str],
    ):
        self.threads_per_block = threads_per_block
        self.phase = np.zeros(block_count, dtype=np.int64)
        self.describe_block = describe_block
        self.describe_thread = describe_thread
        self._shadows: dict[Buffer, _SharedShadow] = {}
        self._releases = np.zeros((block_count, threads_per_block), dtype=np.int64)
        """Per block and thread, how many releases (mbarrier arrivals) the thread made."""
        self._known: np.ndarray | None = None
        """Per block, thread u and thread t: the latest release of t that u acquired (-1: none);
        made at the first release (kernels without mbarriers never pay for it)."""

    def _shadow(self, buffer: Buffer) -> _SharedShadow:
        shadow = self._shadows.get(buffer)
        if shadow is None:
            count = -(-buffer.size // buffer.granularity)
            shadow = _SharedShadow(*(np.full(count, -1, dtype=np.int64) for _ in range(8)))
            self._shadows[buffer] = shadow
        return shadow

    def record(
        self,
        buffer: Buffer,
        keys: np.ndarray,
        blocks: np.ndarray,
        threads: np.ndarray,
        is_write: bool,
        op: Operation,
    ) -> None:
        """Threads `threads[i]` of blocks `blocks[i]` accessed element `keys[i]` of `buffer`."""
        if keys.size == 0:
            return
        shadow = self._shadow(buffer)
        phase = self.phase[blocks]
        counts = self._releases[blocks, threads]
        writer = shadow.writer[keys]
        conflict = (writer >= 0) & (writer != threads) & (shadow.write_phase[keys] == phase)
        conflict &= ~self._ordered(blocks, threads, writer, shadow.write_count[keys])
        if is_write:
            self._check_duplicate_writes(buffer, keys, blocks, threads, op)
            if conflict.any():
                hit = int(np.nonzero(conflict)[0][0])
                self._raise("WAW", buffer, keys, blocks, hit, int(writer[hit]), int(threads[hit]), op)
            current = shadow.read_phase[keys] == phase
            for reader, count in ((shadow.reader_a[keys], shadow.read_count_a[keys]), (shadow.reader_b[keys], shadow.read_count_b[keys])):
                racing = current & (reader >= 0) & (reader != threads) & ~self._ordered(blocks, threads, reader, count)
                if racing.any():
                    hit = int(np.nonzero(racing)[0][0])
                    self._raise("WAR", buffer, keys, blocks, hit, int(reader[hit]), int(threads[hit]), op)
            shadow.writer[keys] = threads
            shadow.write_phase[keys] = phase
            shadow.write_count[keys] = counts
            return
        if conflict.any():
            hit = int(np.nonzero(conflict)[0][0])
            self._raise("RAW", buffer, keys, blocks, hit, int(writer[hit]), int(threads[hit]), op)
        self._add_readers(shadow, keys, threads, phase, counts)

    def _ordered(self, blocks: np.ndarray, threads: np.ndarray, others: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Whether each access of `others` at their release `counts` is ordered before `threads`
        by mbarriers (barriers are the phases' business)."""
        if self._known is None:
            return np.zeros(threads.shape, dtype=bool)
        return self._known[blocks, threads, np.maximum(others, 0)] >= counts

    # mbarriers -----------------------------------------------------------------------------------

    def release(self, block: int, threads: np.ndarray) -> np.ndarray:
        """Threads of `block` release (arrive on an mbarrier): the clock they publish (what they
        know, and their own accesses so far), merged over `threads`. Their count moves on."""
        if self._known is None:
            blocks, count = self._releases.shape
            self._known = np.full((blocks, count, count), -1, dtype=np.int64)
        threads = np.asarray(threads, dtype=np.int64)
        published = self._known[block, threads].max(axis=0)
        published[threads] = np.maximum(published[threads], self._releases[block, threads])
        self._releases[block, threads] += 1
        return published

    def sync_warp(self, block: int, threads: np.ndarray) -> None:
        """The `threads` of one warp of `block` meet (`loop.warp_sync`): each acquires what all of
        them did before, so one of them can later release it for the warp."""
        self.acquire(block, threads, self.release(block, threads))

    def acquire(self, block: int, threads: np.ndarray, clock: np.ndarray) -> None:
        """Threads of `block` acquire `clock` (a wait on an mbarrier phase that returned)."""
        if self._known is None:
            return
        threads = np.asarray(threads, dtype=np.int64)
        self._known[block, threads] = np.maximum(self._known[block, threads], clock[None, :])

    def _check_duplicate_writes(
        self, buffer: Buffer, keys: np.ndarray, blocks: np.ndarray, threads: np.ndarray, op: Operation
    ) -> None:
        if keys.size < 2:
            return
        order = np.lexsort((threads, keys))
        sorted_keys, sorted_threads = keys[order], threads[order]
        clash = np.nonzero(
            (sorted_keys[1:] == sorted_keys[:-1]) & (sorted_threads[1:] != sorted_threads[:-1])
        )[0]
        if clash.size:
            first, second = int(order[clash[0]]), int(order[clash[0] + 1])
            self._raise("WAW", buffer, keys, blocks, second, int(threads[first]), int(threads[second]), op)

    @staticmethod
    def _add_readers(shadow: _SharedShadow, keys: np.ndarray, threads: np.ndarray, phase: np.ndarray, counts: np.ndarray) -> None:
        stale = shadow.read_phase[keys] != phase
        if stale.any():
            stale_keys = keys[stale]
            shadow.reader_a[stale_keys] = -1
            shadow.reader_b[stale_keys] = -1
            shadow.read_phase[stale_keys] = phase[stale]
        # The first two distinct readers of each element, each with its latest release count (a
        # later read of one thread is ordered after its earlier ones, so it stands for them).
        pairs, where = np.unique(np.stack([keys, threads], axis=1), axis=0, return_index=True)
        pair_keys, pair_threads, pair_counts = pairs[:, 0], pairs[:, 1], counts[where]
        for reader, count in ((shadow.reader_a, shadow.read_count_a), (shadow.reader_b, shadow.read_count_b)):
            again = reader[pair_keys] == pair_threads
            count[pair_keys[again]] = pair_counts[again]
        first = np.ones(pair_keys.size, dtype=bool)
        first[1:] = pair_keys[1:] != pair_keys[:-1]
        group = np.cumsum(first) - 1
        unique_keys = pair_keys[first]
        new_a, count_a = pair_threads[first], pair_counts[first]
        new_b = np.full(unique_keys.size, -1, dtype=np.int64)
        count_b = np.full(unique_keys.size, -1, dtype=np.int64)
        second = np.zeros(pair_keys.size, dtype=bool)
        second[1:] = (~first[1:]) & first[:-1]
        new_b[group[second]] = pair_threads[second]
        count_b[group[second]] = pair_counts[second]
        old_a, old_b = shadow.reader_a[unique_keys], shadow.reader_b[unique_keys]
        old_count_a, old_count_b = shadow.read_count_a[unique_keys], shadow.read_count_b[unique_keys]
        taken_a = old_a >= 0
        reader_a = np.where(taken_a, old_a, new_a)
        reader_count_a = np.where(taken_a, old_count_a, count_a)
        reader_b, reader_count_b = old_b, old_count_b
        for candidate, candidate_count in ((new_a, count_a), (new_b, count_b)):
            take = (reader_b < 0) & (candidate >= 0) & (candidate != reader_a)
            reader_b = np.where(take, candidate, reader_b)
            reader_count_b = np.where(take, candidate_count, reader_count_b)
        shadow.reader_a[unique_keys] = reader_a
        shadow.reader_b[unique_keys] = reader_b
        shadow.read_count_a[unique_keys] = reader_count_a
        shadow.read_count_b[unique_keys] = reader_count_b

    def _raise(
        self,
        kind: str,
        buffer: Buffer,
        keys: np.ndarray,
        blocks: np.ndarray,
        hit: int,
        earlier: int,
        later: int,
        op: Operation,
    ) -> None:
        block = int(blocks[hit])
        element = (int(keys[hit]) * buffer.granularity - block * buffer.unit_bytes) // buffer.granularity
        index = buffer.element_index(element)
        first, second = self.describe_thread(earlier), self.describe_thread(later)
        verbs = {
            "RAW": f"{second} reads it after {first} wrote it",
            "WAR": f"{second} writes it after {first} read it",
            "WAW": f"{second} writes it after {first} wrote it",
        }
        raise DataRace(
            kind,
            f"{buffer.describe()} of {self.describe_block(block)}",
            index,
            (first, second),
            f"{verbs[kind]} in the same barrier phase (no barrier between them, no mbarrier orders them)",
            op,
        )

    def barrier(self, reached: np.ndarray, op: Operation) -> None:
        """`reached` (blocks x threads, bool): who arrived; ends the phase of complete blocks."""
        counts = reached.sum(axis=1)
        partial = np.nonzero((counts > 0) & (counts < self.threads_per_block))[0]
        if partial.size:
            block = int(partial[0])
            arrived = int(np.nonzero(reached[block])[0][0])
            missing = int(np.nonzero(~reached[block])[0][0])
            raise BarrierDivergence(
                f"barrier reached by only {int(counts[block])} of {self.threads_per_block} threads of "
                f"{self.describe_block(block)}: {self.describe_thread(arrived)} arrived, "
                f"{self.describe_thread(missing)} did not",
                op,
            )
        self.phase[counts == self.threads_per_block] += 1
