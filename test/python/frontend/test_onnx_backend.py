"""ONNX's node tests of the ops of issue 3 (and of Sin, Cos, Resize, Range), run through mlc's ONNX backend (`MlcBackend`).

`onnx.backend.test.BackendTest` turns each of ONNX's node tests into a unittest method per device.
This module keeps the node tests of `CONFORMANCE_OPS` (`mlc.frontend.onnx.conformance`: each op's
own tests and the expansions of its function body) and exposes them to pytest as two classes:

* `OnnxBackendNodeInterpTest`: every one of them on `interp`, the graph interpreter.
* `OnnxBackendNodeCpuTest`: those of the elementwise, reshaping and reduction ops (`CPU_OPS`)
  compiled for the CPU: the lowering of the other ops is in progress, and compiling costs
  0.05-0.5 s a test.

ONNX's runner knows only the devices CPU and CUDA and suffixes every test with one, so the methods
are `test_<name>_cpu` in both classes; `MlcBackend.pinned(device)` serves the runner's CPU with
`interp` or `cpu`. The tests of the features mlc does not support (`UNSUPPORTED`, each with its
reason) are excluded from both classes (reported as skipped), and
`test_unsupported_node_test_is_refused_cleanly` checks that each is refused with an
`UnsupportedModelError` naming the reason, never a crash. No test of these ops is excluded for a
wrong reference output: every supported one passes against ONNX's expected outputs.

`python bench/onnx_conformance.py` prints the table of passes, failures and unsupported tests per
op and device. Runs in about 20 s (5 s of which onnx spends building its test cases).
"""

from __future__ import annotations

import os
import re
import unittest
from collections.abc import Iterator

import pytest

onnx = pytest.importorskip("onnx")
import onnx.backend.test  # noqa: E402
from onnx.backend.test.runner import _normalize_tensor  # noqa: E402

from mlc.frontend.onnx.backend import MlcBackend, UnsupportedModelError  # noqa: E402
from mlc.frontend.onnx.conformance import CONFORMANCE_OPS, node_tests, op_by_test_name  # noqa: E402

_TYPES = r"(u?int8|u?int16|uint32|uint64|float64|string)"

# Each entry: a pattern over the runner's test names (`test_<name>_cpu`; a trailing `_` stands for
# the end of ONNX's name) and why mlc does not support those tests. Every one of them is also
# checked to be refused cleanly (`test_unsupported_node_test_is_refused_cleanly`).
UNSUPPORTED: tuple[tuple[str, str], ...] = (
    # Element types outside the graph spec's f32, f16, bf16, i32, i64 and bool (the float types
    # among them: float64 and the 8-, 4- and 2-bit floats).
    (rf"^test_(add|sub|mul|div|max|min|equal|less|greater)_{_TYPES}_", "element type outside f32/f16/bf16/i32/i64/bool"),
    (r"^test_pow_types_float32_uint(32|64)_", "uint32/uint64 exponents"),
    (r"^test_maxpool_2d_uint8_", "uint8 tensors"),
    (r"^test_cast_\w*(DOUBLE|FLOAT8|FLOAT4|INT4|UINT4|INT2|UINT2)", "float64 and the 8-, 4- and 2-bit types"),
    # Features the importer does not map (mlc.frontend.onnx's docstring lists them).
    (r"^test_batchnorm_\w*_training_mode_", "training mode (mlc imports models for inference)"),
    # Training-mode Dropout drops random elements; with ratio 0 (`_zero_ratio`) it is the identity.
    (r"^test_training_dropout(?!_zero_ratio)", "random training-mode Dropout (ratio 0.5 and 0.75)"),
    (r"^test_identity_(sequence|opt)_", "sequences and optional values"),
)
# ONNX reference errors: none to exclude. With onnx 1.23 every node test of these ops that mlc
# supports passes against ONNX's expected outputs, at the tolerances each test states.

CPU_OPS = tuple(
    (
        "Add Sub Mul Div Pow Max Min Neg Abs Exp Log Sqrt Reciprocal Tanh Sigmoid Relu Gelu Erf Where "
        "Equal Less Greater Cast Reshape Flatten Squeeze Unsqueeze Expand Identity Constant Dropout "
        "BatchNormalization ReduceSum ReduceMean ReduceMax ReduceMin Softmax LayerNormalization GlobalAveragePool "
        "Transpose Concat Slice Conv"
    ).split()
)
"""Ops whose node tests run compiled for the CPU (elementwise compositions, reshapes, reductions,
layout ops, convolutions)."""

# Node tests of `CPU_OPS` whose graph ops the lowering refuses (a PassFailure in mlc.compile):
# none since integer pow is lowered.
CPU_UNSUPPORTED: tuple[tuple[str, str], ...] = ()
"""(pattern, reason): node tests of `CPU_OPS` whose ops are refused by the CPU lowering."""

MODEL_TESTED_OPS = ("Sin", "Cos", "Resize", "Range")
"""Ops of issue 15 (`MODEL_OPS`) whose node tests run here too, on the interpreter and the CPU."""

MODEL_UNSUPPORTED: tuple[tuple[str, str], ...] = (
    (r"^test_range_\w*_expanded_", "Range's function body (a Loop) with run-time bounds"),
)

ALL_TESTS = op_by_test_name()
MODEL_TESTS = op_by_test_name(MODEL_TESTED_OPS)


def _runner_name(test_name: str) -> str:
    """The name ONNX's runner gives a node test on its device CPU."""
    return f"{test_name}_cpu"


def _reason(test_name: str, table: tuple[tuple[str, str], ...]) -> str | None:
    """Why `table` expects the test to be refused, or None."""
    return next((reason for pattern, reason in table if re.search(pattern, _runner_name(test_name))), None)


def _node_test_class(
    class_name: str, device: str, ops: tuple[str, ...], excluded: tuple[tuple[str, str], ...], tests: dict[str, str] = ALL_TESTS
) -> type:
    """A unittest class with ONNX's runner's node tests of `ops` on `device` (the excluded ones
    skipped, the others left out)."""
    names = [name for name, op in tests.items() if op in ops]
    backend_test = onnx.backend.test.BackendTest(MlcBackend.pinned(device), __name__)
    backend_test.include(rf"^({'|'.join(map(re.escape, names))})_cpu$")
    for pattern, _ in excluded:
        backend_test.exclude(pattern)
    generated = backend_test.test_cases["OnnxBackendNodeModelTest"]
    methods = {_runner_name(name): vars(generated)[_runner_name(name)] for name in names}
    return type(class_name, (unittest.TestCase,), {"__module__": __name__, **methods})


@pytest.fixture(scope="module", autouse=True)
def _one_compile_per_program(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The compile cache on, in one directory for this module's tests in every xdist worker:
    ONNX's `_expanded` and `_expanded_ver18` tests (layer norm, softmax) and Resize's `_axes_2_3`
    variants import to the same program, which is compiled once (the cache's own behaviour is
    tested in test_compile_cache.py; the suite's other modules keep it off, see conftest.py)."""
    run_directory = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's directory is one of the run's
        run_directory = run_directory.parent
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MLC_CACHE", "1")
        patch.setenv("MLC_CACHE_DIR", str(run_directory / "onnx-backend-compile-cache"))
        yield


OnnxBackendNodeInterpTest = _node_test_class("OnnxBackendNodeInterpTest", "interp", CONFORMANCE_OPS, UNSUPPORTED)
OnnxBackendNodeCpuTest = _node_test_class("OnnxBackendNodeCpuTest", "cpu", CPU_OPS, UNSUPPORTED + CPU_UNSUPPORTED)
OnnxBackendModelOpsInterpTest = _node_test_class(
    "OnnxBackendModelOpsInterpTest", "interp", MODEL_TESTED_OPS, MODEL_UNSUPPORTED, MODEL_TESTS
)
OnnxBackendModelOpsCpuTest = _node_test_class("OnnxBackendModelOpsCpuTest", "cpu", MODEL_TESTED_OPS, MODEL_UNSUPPORTED, MODEL_TESTS)


def test_every_conformance_op_has_node_tests():
    assert all(node_tests().values()), [op for op, tests in node_tests().items() if not tests]


def test_each_unsupported_pattern_matches_a_test():
    """A pattern that matches no test is stale (onnx renamed or dropped the test)."""
    names = [_runner_name(name) for name in (*ALL_TESTS, *MODEL_TESTS)]
    for pattern, reason in UNSUPPORTED + CPU_UNSUPPORTED + MODEL_UNSUPPORTED:
        assert any(re.search(pattern, name) for name in names), f"{pattern} ({reason}) matches no test"


REFUSED = [
    *((name, "interp", "import") for name in ALL_TESTS if _reason(name, UNSUPPORTED)),
    *((name, "cpu", "compile") for name in ALL_TESTS if ALL_TESTS[name] in CPU_OPS and _reason(name, CPU_UNSUPPORTED)),
    *((name, "interp", "import") for name in MODEL_TESTS if _reason(name, MODEL_UNSUPPORTED)),
]


@pytest.mark.parametrize(("name", "device", "stage"), REFUSED)
def test_unsupported_node_test_is_refused_cleanly(name: str, device: str, stage: str):
    """An `UnsupportedModelError` at the expected stage, never a crash. When mlc comes to support
    the test, this fails: take its pattern out of `UNSUPPORTED` / `CPU_UNSUPPORTED`."""
    op = ALL_TESTS.get(name) or MODEL_TESTS[name]
    case = next(test for test in node_tests((op,))[op] if test.name == name)
    with pytest.raises(UnsupportedModelError) as raised:
        representation = MlcBackend.prepare(case.model, device)
        inputs, _ = case.data_sets[0]
        representation.run([_normalize_tensor(value) for value in inputs])
    assert raised.value.stage == stage
    assert str(raised.value).startswith(f"not supported by mlc ({stage}): ")
