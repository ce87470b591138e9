"""Random-graph differential testing: random programs of every graph op, checked at every stage.

For each program of `graph_programs()` (see that module):

* it prints and parses back to the same text, and the verifier accepts it;
* the graph optimiser and the fusion plan (`OPTIMISER`) keep the interpreter's answer, within the
  error bound of `mlc.dialects.graph.error_bounds` (graph-decompose reassociates sums);
* lowered for the GPU (sm_80 down to NVVM, sm_90 down to the GPU dialect) and run on the
  interpreters, it matches the interpreter on the graph within that bound (no GPU needed);
* compiled for the CPU (and, marked `gpu`, for the GPU) it matches the interpreter within that
  bound, or fails with a clean `CompileError` naming an op or element type that is not compiled
  yet (`NOT_YET_COMPILED`: each entry names the issue that lowers it; remove it when it lands).

The bound is derived per program and per element from the ops and the data (never a fixed
tolerance); elements whose bound is infinite (a comparison that may go either way, a NaN) are not
compared. Programs with no element compared are counted in the Hypothesis statistics
(`--hypothesis-show-statistics`), so loose bounds show instead of hiding.

Budget: CI runs the `ci` Hypothesis profile (derandomized: the same programs every run) with the
example counts below; `MLC_FUZZ_EXAMPLES=N` runs N programs per test instead, and
`HYPOTHESIS_PROFILE=dev` draws new ones each run (README, "Testing", says how long runs have gone
clean). A failure prints the program and the input seed: save the shrunk program under
`regressions/` (a comment on its first lines saying what it found) so it is checked forever.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import mlc
from graph_programs import STEP_KINDS, ArgumentSpec, FuzzProgram, graph_programs
from mlc.compiler import select_entry
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph.error_bounds import check_results, result_bounds

REGRESSIONS = Path(__file__).parent / "regressions"

NOT_YET_COMPILED: dict[str, str] = {
}
"""Ops that the lowering reports as not lowered yet, and the issue that lowers them."""

EXPECTED_COMPILE_ERRORS: dict[str, str] = {
}
"""Other messages of not-yet-compiled programs (pattern -> the issue that removes it)."""

COMPILED_STEPS = STEP_KINDS

OPTIMISER = "graph-simplify,graph-fold-constants,cse,dce,graph-decompose,graph-fuse,graph-plan-memory"


def _examples(default: int) -> int:
    return int(os.environ.get("MLC_FUZZ_EXAMPLES", default))


def _fuzz_settings(default_examples: int):
    return settings(
        max_examples=_examples(default_examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def programs() -> st.SearchStrategy[FuzzProgram]:
    """Mostly programs of ops that compile today (to find wrong code), some of every op."""
    kinds = st.sampled_from((COMPILED_STEPS, COMPILED_STEPS, COMPILED_STEPS, STEP_KINDS))
    return kinds.flatmap(lambda step_kinds: graph_programs(step_kinds=step_kinds))


def _parse(text: str):
    module, _ = parse_module(text, make_context(), "<fuzz>")
    module.verify()
    return module


def _describe(program: FuzzProgram, seed: int, message: str) -> str:
    return f"{message}\ninput seed {seed}; the program (save it under {REGRESSIONS}):\n{program.text}"


def _reference(program: FuzzProgram, seed: int):
    module = _parse(program.text)
    inputs = program.inputs(seed)
    expected, bounds = result_bounds(select_entry(module, None), inputs)
    return module, inputs, expected, bounds


def _is_expected_compile_error(program_text: str, message: str) -> bool:
    """A clean report of something not compiled yet, which the program does contain."""
    for op_name in NOT_YET_COMPILED:
        if f"'{op_name}'" in message and op_name in program_text:
            return True
    return any(re.search(pattern, message) for pattern in EXPECTED_COMPILE_ERRORS)


def check_compiled(program: FuzzProgram, seed: int, device: str) -> str:
    """Compiles `program` for `device` and compares it with the interpreter (or expects a clean
    error); returns what happened, for the Hypothesis statistics."""
    _, inputs, expected, bounds = _reference(program, seed)
    try:
        compiled = mlc.compile(program.text, device=device)
    except mlc.CompileError as error:
        assert _is_expected_compile_error(program.text, str(error)), _describe(program, seed, f"compile error: {error}")
        return "not compiled yet"
    results = compiled(*inputs)
    results = results if isinstance(results, tuple) else (results,)
    comparison = check_results(results, expected, bounds)
    assert comparison.failure is None, _describe(program, seed, f"{device} result differs: {comparison.failure}")
    if comparison.compared == 0 and any(np.size(e) for e in expected):
        return "compiled; no element had a finite bound (nothing compared)"
    return "compiled and compared"


@_fuzz_settings(200)
@given(program=graph_programs())
def test_programs_print_parse_and_verify(program: FuzzProgram):
    module = _parse(program.text)
    assert str(module) + "\n" == program.text or _parse(str(module)).is_structurally_equivalent(module)


@_fuzz_settings(150)
@given(program=graph_programs(), seed=st.integers(0, 2**32 - 1))
def test_graph_optimiser_keeps_answers(program: FuzzProgram, seed: int):
    from mlc.compiler import lower
    from mlc.interpreter import run

    module, inputs, expected, bounds = _reference(program, seed)
    lower(module, OPTIMISER)
    optimised = run(module, "main", [x.copy() for x in inputs])
    comparison = check_results(optimised, expected, bounds)
    assert comparison.failure is None, _describe(program, seed, f"after {OPTIMISER}: {comparison.failure}")
    no_elements = not any(np.size(e) for e in expected)
    event("compared" if comparison.compared or no_elements else "no element had a finite bound (nothing compared)")


# 150 programs: every one compiles now (conv2d and pools included, which cost more to compile),
# about as many compiled and compared as the 200 of before, when a third were refused at once.
@_fuzz_settings(150)
@given(program=programs(), seed=st.integers(0, 2**32 - 1))
def test_cpu_matches_interpreter(program: FuzzProgram, seed: int):
    event(check_compiled(program, seed, "cpu"))


@pytest.mark.gpu
@_fuzz_settings(60)
@given(program=programs(), seed=st.integers(0, 2**32 - 1))
def test_gpu_matches_interpreter(program: FuzzProgram, seed: int):
    event(check_compiled(program, seed, "cuda"))


def _gpu_pipeline_for_the_interpreter(arch: str) -> str:
    """The GPU pipeline for `arch`, down to the NVVM level for sm_80 (mma.sync: the interpreter
    runs its intrinsics), and for sm_90 up to convert-gpu-to-nvvm (the interpreter models
    `loop.wgmma` and the GPU dialect, not the inline PTX that wgmma becomes)."""
    from mlc.passes import build_pipeline
    from mlc.transforms import all_passes

    specs = [str(p.pipeline_pass_spec()) for p in build_pipeline(f"mlc-lower-to-gpu{{arch={arch}}}", all_passes(), mlir_syntax=False)]
    if arch == "sm_90":
        specs = specs[: next(i for i, spec in enumerate(specs) if spec.startswith("convert-gpu-to-nvvm"))]
    return ",".join(specs)


# Without a GPU: the GPU lowering's kernels run on the interpreters (thread blocks, warps, shared
# memory), so CI checks the GPU path's code for every op, not only the CPU's.
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@_fuzz_settings(40)
@given(program=programs(), seed=st.integers(0, 2**32 - 1))
def test_gpu_lowering_on_the_interpreter_matches_it(arch: str, program: FuzzProgram, seed: int):
    from mlc.compiler import lower
    from mlc.interpreter import run

    module, inputs, expected, bounds = _reference(program, seed)
    pipeline = _gpu_pipeline_for_the_interpreter(arch)
    try:
        lower(module, pipeline)
    except mlc.CompileError as error:
        assert _is_expected_compile_error(program.text, str(error)), _describe(program, seed, f"compile error: {error}")
        event("not compiled yet")
        return
    results = run(module, "main", [x.copy() for x in inputs])
    comparison = check_results(results, expected, bounds)
    assert comparison.failure is None, _describe(program, seed, f"{arch} lowering on the interpreter differs: {comparison.failure}")
    event("compiled and compared" if comparison.compared or not any(np.size(e) for e in expected) else "nothing compared")


# -- saved counterexamples --------------------------------------------------------------------------


def _saved_program(path: Path) -> FuzzProgram:
    """A regression file as a program; inputs come from the default ranges of each element type."""
    text = path.read_text(encoding="utf-8")
    function = select_entry(_parse(text), None)
    arguments = []
    for argument_type in function.function_type.inputs.data:
        element = str(argument_type.element_type)
        low, high = (-20, 20) if element == "i32" else (0, 1) if element == "i1" else (-2.0, 2.0)
        arguments.append(ArgumentSpec(tuple(argument_type.get_shape()), element, low, high))
    return FuzzProgram(text, arguments)


SAVED = sorted(REGRESSIONS.glob("*.mlir"))
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("path", SAVED, ids=[path.stem for path in SAVED])
def test_saved_counterexamples(path: Path, device: str):
    program = _saved_program(path)
    for seed in range(3):
        check_compiled(program, seed, device)
