"""The CPU call in one native function (mlc/runtime/native_call.py, `NativeHostCall` in
cpu_executor.py): well-formed numpy arrays take it, anything else takes the Python path with the
same results and errors; results handed out again only once nothing refers to them."""

from __future__ import annotations

import os
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mlc
from mlc.errors import ArgumentError
from mlc.runtime.native_call import array_layout

pytestmark = pytest.mark.skipif(array_layout() is None, reason="numpy's array struct is not where the native call reads it")

T = "tensor<64x256xf32>"
SOURCE = (
    f"func.func @f(%x: {T}, %y: {T}) -> ({T}, {T}) {{\n  %0 = graph.neg %x : {T}\n"
    f"  %1 = graph.add %0, %y : ({T}, {T}) -> {T}\n  func.return %0, %1 : {T}, {T}\n}}"
)


class Recorded:
    """The program's native call, recording whether each call took it (None: the Python path)."""

    def __init__(self, program: object):
        self.native = program._native  # type: ignore[attr-defined]
        assert self.native is not None, "no native call for this program"
        self.taken: list[bool] = []

    def __call__(self, arguments: object) -> object:
        results = self.native(arguments)
        self.taken.append(results is not None)
        return results


@pytest.fixture(scope="module", params=[1, 2], ids=["direct", "pool"])
def compiled(request: pytest.FixtureRequest) -> mlc.CompiledFunction:
    return mlc.compile(SOURCE, device="cpu", num_threads=request.param)


def _recording(compiled: mlc.CompiledFunction) -> Recorded:
    native = compiled.program._native
    recorded = native if isinstance(native, Recorded) else Recorded(compiled.program)
    recorded.taken.clear()
    compiled.program._native = recorded
    return recorded


def _inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((64, 256), dtype=np.float32), rng.standard_normal((64, 256), dtype=np.float32)


class Subclass(np.ndarray):
    pass


LAYOUTS = {
    "contiguous": lambda a: a,
    "read-only": lambda a: _read_only(a.copy()),
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],
    "fortran": np.asfortranarray,
    "byteswapped": lambda a: a.astype(a.dtype.newbyteorder()),
    "subclass": lambda a: a.copy().view(Subclass),
    "misaligned": lambda a: _misaligned(a),
}
NATIVE_LAYOUTS = {"contiguous", "read-only"}


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _misaligned(a: np.ndarray) -> np.ndarray:
    raw = np.empty(a.nbytes + 32, np.uint8)
    start = -raw.ctypes.data % 16 + 4  # 4 bytes past a 16-byte boundary: f32-aligned, not 16
    view = raw[start : start + a.nbytes].view(np.float32).reshape(a.shape)
    view[...] = a
    return view


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(sorted(LAYOUTS)), st.sampled_from(sorted(LAYOUTS)))
def test_each_array_layout_takes_the_native_call_exactly_when_well_formed(compiled, x_layout, y_layout):
    recorded = _recording(compiled)
    x, y = _inputs()
    negated, summed = compiled(LAYOUTS[x_layout](x), LAYOUTS[y_layout](y))
    np.testing.assert_array_equal(negated, -x)
    np.testing.assert_array_equal(summed, -x + y)
    assert recorded.taken == [x_layout in NATIVE_LAYOUTS and y_layout in NATIVE_LAYOUTS]


def test_wrong_dtypes_shapes_and_counts_are_refused_as_before(compiled):
    recorded = _recording(compiled)
    x, y = _inputs()
    with pytest.raises(ArgumentError, match=r"argument #1 \(%y\) of @f: expected dtype float32"):
        compiled(x, y.astype(np.float64))
    with pytest.raises(ArgumentError, match=r"expected shape \(64, 256\)"):
        compiled(x[:32], y)
    with pytest.raises(ArgumentError, match="takes 2 argument"):
        compiled(x)
    assert recorded.taken == [False, False, False]


def test_a_dropped_result_is_handed_out_again_and_a_held_one_never(compiled):
    _recording(compiled)
    x, y = _inputs()
    first, _ = compiled(x, y)
    address = first.ctypes.data
    del first
    second, _ = compiled(x + 1, y)
    assert second.ctypes.data == address  # nothing referred to the first: its array again
    view = second[3:]
    del second
    third, _ = compiled(x + 2, y)  # the view holds the second: another array
    assert third.ctypes.data != address
    np.testing.assert_array_equal(view, -(x + 1)[3:])
    watched = weakref.ref(third)
    third_address = third.ctypes.data
    del third  # the weak reference still sees it: not handed out again
    fourth, _ = compiled(x + 3, y)
    assert watched() is not fourth and fourth.ctypes.data != third_address
    np.testing.assert_array_equal(fourth, -(x + 3))
    np.testing.assert_array_equal(view, -(x + 1)[3:])


def test_a_result_changed_in_place_before_it_was_dropped_is_not_handed_out(compiled):
    recorded = _recording(compiled)
    x, y = _inputs()
    results = [compiled(x, y)[0] for _ in range(2)]  # both kept results in use
    results[0].shape = (64 * 256,)
    results[1].setflags(write=False)
    del results
    negated, summed = compiled(x, y)
    assert negated.shape == (64, 256) and negated.flags.writeable
    np.testing.assert_array_equal(negated, -x)
    assert recorded.taken[-1]  # fresh results, still through the native call


def test_python_path_and_switch(compiled, monkeypatch):
    """The Python path gives the same bits; MLC_CPU_CALL=python builds programs without the
    native call."""
    x, y = _inputs(1)
    through_native = [r.copy() for r in compiled(x, y)]
    native, compiled.program._native = compiled.program._native, None
    try:
        through_python = compiled(x, y)
    finally:
        compiled.program._native = native
    for a, b in zip(through_native, through_python):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setenv("MLC_CPU_CALL", "python")
    assert mlc.compile(SOURCE, device="cpu", num_threads=1).program._native is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_calls_through_its_own_pool(compiled):
    x, y = _inputs(2)
    compiled(x, y)  # the parent's pool exists
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        try:
            negated, summed = compiled(x, y)
            status = 0 if np.array_equal(negated, -x) and np.array_equal(summed, -x + y) else 1
        except BaseException:
            status = 2
        os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
