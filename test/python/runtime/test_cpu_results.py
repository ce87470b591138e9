"""CPU results recycled through `ResultBlocks` (mlc/runtime/cpu.py): a large result's memory is
reused by a later call only once every array and view of it is gone, at most KEPT_BLOCKS are
kept, small results are numpy's own, the largest lie on huge pages of their own mappings, and what
a caller holds never changes under it."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mlc
from mlc.runtime.cpu import (
    HUGE_PAGE_BYTES,
    HUGE_PAGE_RESULT_BYTES,
    KEPT_BLOCKS,
    RECYCLED_RESULT_BYTES,
    ResultBlocks,
    _Lease,
    huge_page_array,
)
from mlc.runtime.cpu_executor import CpuExecutor
from mlc.runtime.slots import BufferSpec

ROWS = RECYCLED_RESULT_BYTES // (4 * 64)  # a [ROWS, 64] f32 result is exactly the threshold


def _negate(rows: int) -> mlc.CompiledProgram:
    t = f"tensor<{rows}x64xf32>"
    return mlc.compile(
        f"func.func @f(%x: {t}) -> {t} {{\n  %0 = graph.neg %x : {t}\n  func.return %0 : {t}\n}}",
        device="cpu", num_threads=1,
    )


def test_a_dropped_result_is_reused_and_a_held_one_is_not():
    negate = _negate(ROWS)
    x = np.arange(ROWS * 64, dtype=np.float32).reshape(ROWS, 64)
    first = negate(x)
    assert isinstance(first.base, _Lease) and first.flags.writeable and first.flags.c_contiguous
    address = first.ctypes.data
    view = first[3:]
    del first
    second = negate(x + 1)  # the view holds the first block: a new one
    assert second.ctypes.data != address
    np.testing.assert_array_equal(view, -x[3:])
    del view
    gc.collect()
    third = negate(x + 2)
    assert third.ctypes.data == address  # the first block, back on its shelf
    np.testing.assert_array_equal(third, -(x + 2))
    np.testing.assert_array_equal(second, -(x + 1))


def test_results_below_the_threshold_are_numpys():
    executor = CpuExecutor(module=None, num_threads=1)  # type: ignore[arg-type]  # allocation only
    small, large = (BufferSpec((rows, 64), np.dtype(np.float32), f"tensor<{rows}x64xf32>") for rows in (ROWS - 1, ROWS))
    assert not isinstance(executor.allocate_result(small, 64).base, _Lease)
    assert isinstance(executor.allocate_result(large, 64).base, _Lease)


def _vm_flags(address: int) -> list[str] | None:
    """The VmFlags of the mapping holding `address` (/proc/self/smaps), None where unreadable."""
    smaps = Path("/proc/self/smaps")
    if not smaps.exists():
        return None
    inside = False
    for line in smaps.read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):
            low, high = (int(part, 16) for part in fields[0].split("-"))
            inside = low <= address < high
        elif inside and fields[0] == "VmFlags:":
            return fields[1:]
    return None


def test_a_huge_page_array_starts_on_a_huge_page_advised_so():
    array = huge_page_array(HUGE_PAGE_BYTES + 4096, 64)
    assert array.nbytes == HUGE_PAGE_BYTES + 4096 and array.flags.writeable
    assert array.ctypes.data % HUGE_PAGE_BYTES == 0
    array[...] = 7  # every page touched
    assert (array == 7).all()
    flags = _vm_flags(array.ctypes.data)
    if flags is not None and hasattr(__import__("mmap"), "MADV_HUGEPAGE"):
        assert "hg" in flags  # MADV_HUGEPAGE, whether or not the kernel found huge pages
    with pytest.raises(ValueError):
        huge_page_array(4096, 2 * HUGE_PAGE_BYTES)


def test_the_largest_results_are_huge_page_blocks_and_recycled():
    executor = CpuExecutor(module=None, num_threads=1)  # type: ignore[arg-type]  # allocation only
    rows = HUGE_PAGE_RESULT_BYTES // (4 * 64)  # exactly the threshold
    large = BufferSpec((rows, 64), np.dtype(np.float32), f"tensor<{rows}x64xf32>")
    result = executor.allocate_result(large, 64)
    assert isinstance(result.base, _Lease) and result.shape == (rows, 64) and result.dtype == np.float32
    address = result.ctypes.data
    assert address % HUGE_PAGE_BYTES == 0
    result[...] = 1.5
    del result
    gc.collect()
    again = executor.allocate_result(large, 64)
    assert again.ctypes.data == address


def test_a_shelf_keeps_at_most_kept_blocks():
    blocks = ResultBlocks()
    arrays = [blocks.take("key", lambda: np.empty(8, np.float32)) for _ in range(KEPT_BLOCKS + 3)]
    assert blocks.kept() == 0
    del arrays
    gc.collect()
    assert blocks.kept() == KEPT_BLOCKS


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7)), min_size=1, max_size=30))
def test_held_arrays_keep_their_values(steps: list[tuple[bool, int]]):
    """Random takes and drops: every array still held has the values written into it when taken,
    and no two held arrays share memory."""
    blocks = ResultBlocks()
    held: list[tuple[np.ndarray, float]] = []
    for number, (take, index) in enumerate(steps):
        if take or not held:
            array = blocks.take(("f32", 16), lambda: np.empty(16, np.float32))
            assert isinstance(array, np.ndarray)
            array[...] = number
            held.append((array, float(number)))
        else:
            held.pop(index % len(held))
        for array, value in held:
            assert (array == value).all()
        assert len({array.ctypes.data for array, _ in held}) == len(held)


def test_a_recycled_result_keeps_an_extension_dtype():
    """bfloat16 (ml_dtypes) has no array-interface spelling of its own: a recycled block must come
    back as bfloat16, not as raw two-byte records."""
    blocks, bfloat16 = ResultBlocks(), pytest.importorskip("ml_dtypes").bfloat16
    first = blocks.take("k", lambda: np.full(8, 1.5, bfloat16))
    assert first.dtype == bfloat16 and float(first[0]) == 1.5
    del first
    gc.collect()
    again = blocks.take("k", lambda: pytest.fail("a kept block was not reused"))
    assert again.dtype == bfloat16 and float(again.astype(np.float32)[0]) == 1.5
