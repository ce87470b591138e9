"""`mlc.compiler.lower` verifies once, after the last pass, yet still names the pass that broke the IR.

A deliberately broken pass (it leaves a use before its definition) is slipped into the registry:
the error must name it, as it did when the IR was verified after every pass. With a next step
(`then`, the backend in `mlc.compile`, in two halves: translation, then LLVM's work beside the
verification on a worker thread or after it): its result comes back once the module verified; a
module that does not verify reports that (the step's own outcome dropped), and the step's error
is raised as it was, without re-running the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

import mlc.compiler
import mlc.transforms
from mlc.compiler import lower
from mlc.diagnostics import VerificationFailure, parse_module
from mlc.dialects import make_context

PROGRAM = """func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  %1 = graph.neg %0 : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}"""


@dataclass(frozen=True)
class SwapFirstTwoOps(ModulePass):
    """Moves the second op of each function before the first: a use before its definition."""

    name = "test-swap-first-two-ops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp):
                first, second = list(function.body.block.ops)[:2]
                second.detach()
                function.body.block.insert_op_before(second, first)


@dataclass(frozen=True)
class CountingPass(ModulePass):
    """Does nothing but count its runs in `RUNS`."""

    name = "test-count"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        RUNS.append(1)


RUNS: list[int] = []


@pytest.fixture
def registry_with_test_passes(monkeypatch):
    real = mlc.transforms.all_passes

    def patched():
        return real() | {SwapFirstTwoOps.name: lambda: SwapFirstTwoOps, CountingPass.name: lambda: CountingPass}

    monkeypatch.setattr(mlc.transforms, "all_passes", patched)
    RUNS.clear()


@pytest.mark.parametrize("verify_each_pass", [False, True])
def test_the_pass_that_broke_the_ir_is_named(registry_with_test_passes, verify_each_pass):
    module, source_map = parse_module(PROGRAM, make_context(), "in.mlir")
    with pytest.raises(VerificationFailure) as caught:
        lower(module, "cse,test-swap-first-two-ops,test-count", source_map, "in.mlir", verify_each_pass=verify_each_pass)
    message = str(caught.value)
    assert message.startswith("the IR after pass 'test-swap-first-two-ops' does not verify:")
    assert "operand #0 does not dominate this use" in message
    # The re-run from the input stops at the broken pass: the pass after it runs once at most.
    assert len(RUNS) == (0 if verify_each_pass else 1)


def test_a_clean_pipeline_reports_timings_per_pass_and_for_verification(registry_with_test_passes):
    module, source_map = parse_module(PROGRAM, make_context(), "in.mlir")
    timings: dict[str, float] = {}
    lower(module, "cse,test-count,cse", source_map, "in.mlir", timings=timings)
    assert set(timings) == {"cse", "test-count", "verify"}
    assert len(RUNS) == 1


@pytest.fixture(params=[False, True], ids=["after", "beside"])
def overlap(request, monkeypatch):
    """The next step after the verification, or on a worker thread beside it."""
    monkeypatch.setattr(mlc.compiler, "_may_overlap", lambda: request.param)
    return request.param


def test_the_next_step_runs_once_the_module_verifies(registry_with_test_passes, overlap):
    module, source_map = parse_module(PROGRAM, make_context(), "in.mlir")
    timings: dict[str, float] = {}
    seen: list[str] = []
    result = lower(module, "cse,test-count", source_map, "in.mlir", timings=timings, then=lambda: lambda: seen.append(str(module)) or "built")
    assert result == "built" and len(seen) == 1 and "graph.neg" in seen[0]
    assert "verify" in timings


def test_a_module_that_does_not_verify_reports_that_not_the_next_step(registry_with_test_passes, overlap):
    module, source_map = parse_module(PROGRAM, make_context(), "in.mlir")

    def failing_translation() -> Callable[[], str]:
        raise RuntimeError("the translation met invalid IR")

    def failing_generation() -> str:
        raise RuntimeError("LLVM met invalid IR")

    for then in (failing_translation, lambda: failing_generation):
        with pytest.raises(VerificationFailure, match="the IR after pass 'test-swap-first-two-ops' does not verify"):
            lower(module.clone(), "test-swap-first-two-ops", source_map, "in.mlir", then=then)


def test_the_next_steps_error_is_raised_as_it_was(registry_with_test_passes, overlap):
    module, source_map = parse_module(PROGRAM, make_context(), "in.mlir")

    def failing_translation() -> Callable[[], str]:
        raise ValueError("no translation for this")

    def failing_generation() -> str:
        raise ValueError("no code for this")

    for then, message in ((failing_translation, "no translation"), (lambda: failing_generation, "no code")):
        RUNS.clear()
        with pytest.raises(ValueError, match=message):
            lower(module.clone(), "cse,test-count", source_map, "in.mlir", then=then)
        assert len(RUNS) == 1  # not re-run: the IR was fine


def test_compile_with_the_backend_beside_the_verification(monkeypatch):
    import numpy as np

    monkeypatch.setattr(mlc.compiler, "_may_overlap", lambda: True)
    monkeypatch.setenv("MLC_CACHE", "0")
    x = np.linspace(-3, 3, 4, dtype=np.float32)
    np.testing.assert_allclose(mlc.compiler.compile(PROGRAM, device="cpu")(x), -np.exp(x), rtol=1e-6)
