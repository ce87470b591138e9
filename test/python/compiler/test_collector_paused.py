"""`mlc.compile` pauses Python's cyclic garbage collector while it compiles, and always restores it.

The collector scanning the IR a compile builds cost ~5% of the fp16 MLP block's compile time
(`mlc.compiler.collector_paused`): the lowering must run with it off, and the caller's setting
must come back whatever happens (success, a compile error, a caller that had turned it off).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

import mlc
import mlc.transforms
from mlc.compiler import default_pipeline_for
from mlc.errors import MlcError

PROGRAM = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}"""

INVALID = """func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}"""


@dataclass(frozen=True)
class CollectorProbe(ModulePass):
    """Records in `SEEN` whether the collector is on when the pass runs."""

    name = "test-collector-probe"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        SEEN.append(gc.isenabled())


SEEN: list[bool] = []
PIPELINE = f"{default_pipeline_for('cpu')},{CollectorProbe.name}"


@pytest.fixture
def collector_during_lowering(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Registers the probe pass (`PIPELINE` runs it last); the caller's collector setting is
    restored after the test whatever it did."""
    real = mlc.transforms.all_passes
    monkeypatch.setattr(mlc.transforms, "all_passes", lambda: real() | {CollectorProbe.name: lambda: CollectorProbe})
    SEEN.clear()
    was_enabled = gc.isenabled()
    yield SEEN
    (gc.enable if was_enabled else gc.disable)()


def test_the_lowering_runs_with_the_collector_off_and_it_comes_back_on(collector_during_lowering: list[bool]) -> None:
    gc.enable()
    compiled = mlc.compile(PROGRAM, device="cpu", pipeline=PIPELINE)
    assert collector_during_lowering == [False]
    assert gc.isenabled()
    assert compiled is not None


def test_a_failing_compile_turns_it_back_on() -> None:
    gc.enable()
    try:
        with pytest.raises(MlcError, match="func.return"):
            mlc.compile(INVALID, device="cpu")
        assert gc.isenabled()
    finally:
        gc.enable()


def test_a_caller_that_turned_it_off_keeps_it_off(collector_during_lowering: list[bool]) -> None:
    gc.disable()
    mlc.compile(PROGRAM, device="cpu", pipeline=PIPELINE)
    assert collector_during_lowering == [False]
    assert not gc.isenabled()
