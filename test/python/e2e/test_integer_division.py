"""Integer `graph.div` is total: x / 0 = 0 and INT_MIN / -1 = INT_MIN, on every level and device.

The graph interpreter defines it (numpy's wrapping arithmetic, truncation toward zero); x86's
`idiv` traps on both special cases (SIGFPE kills the process), so the lowering must keep them
away from the hardware division. Three checks:

* every pass of both pipelines keeps the interpreter's answer on the special cases (the lowered
  levels are interpreted after each pass);
* the CPU-compiled function gives it, run in a subprocess so that a trap fails this test instead
  of killing pytest;
* (gpu-marked) the GPU-compiled function gives it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mlc.dialects import make_context
from mlc.diagnostics import parse_module
from mlc.interpreter import run
from mlc.passes import build_pipeline
from mlc.transforms import all_passes
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE

ELEMENT_TYPES = {"i32": np.int32, "i64": np.int64}


def division_program(element: str, length: int) -> str:
    """a / b, a / -1 (a constant: graph-simplify may rewrite it) and a / b broadcast from a scalar."""
    t = f"tensor<{length}x{element}>"
    return f"""func.func @main(%a: {t}, %b: {t}, %s: tensor<{element}>) -> ({t}, {t}, {t}) {{
  %minus_one = graph.constant dense<-1> : tensor<{element}>
  %q = graph.div %a, %b : ({t}, {t}) -> {t}
  %n = graph.div %a, %minus_one : ({t}, tensor<{element}>) -> {t}
  %r = graph.div %a, %s : ({t}, tensor<{element}>) -> {t}
  func.return %q, %n, %r : {t}, {t}, {t}
}}"""


def special_operands(element: str) -> tuple[np.ndarray, np.ndarray]:
    """Pairs that trap or round differently in C, then a few ordinary ones."""
    dtype = ELEMENT_TYPES[element]
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    pairs = [
        (low, -1), (low, 1), (low, 0), (low, low), (low, high), (low, 2), (low, -2),
        (high, -1), (high, low), (0, 0), (0, -1), (-7, 2), (7, -2), (-7, -2), (1, low), (-1, -1),
    ]  # fmt: skip
    a, b = (np.array(column, dtype=dtype) for column in zip(*pairs))
    return a, b


def inputs(element: str) -> list[np.ndarray]:
    a, b = special_operands(element)
    return [a, b, np.array(-1, dtype=ELEMENT_TYPES[element])]


def expected(element: str) -> list[np.ndarray]:
    """C's truncating division written out in Python integers, wrapped to the element type."""
    a, b = special_operands(element)
    bits = np.iinfo(ELEMENT_TYPES[element]).bits

    def wrap(value: int) -> int:
        return (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)

    def divide(x: int, y: int) -> int:
        if y == 0:
            return 0
        quotient = abs(x) // abs(y)
        return wrap(quotient if (x < 0) == (y < 0) else -quotient)

    dtype = ELEMENT_TYPES[element]
    by_b = np.array([divide(int(x), int(y)) for x, y in zip(a, b)], dtype=dtype)
    by_minus_one = np.array([divide(int(x), -1) for x in a], dtype=dtype)
    return [by_b, by_minus_one, by_minus_one]


@pytest.mark.parametrize("element", sorted(ELEMENT_TYPES))
def test_graph_interpreter_defines_the_special_cases(element: str):
    module, _ = parse_module(division_program(element, len(special_operands(element)[0])), make_context())
    with np.errstate(over="ignore"):
        results = run(module, "main", inputs(element))
    for got, want in zip(results, expected(element)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("pipeline", ["cpu", "gpu"])
@pytest.mark.parametrize("element", sorted(ELEMENT_TYPES))
def test_every_pass_keeps_the_special_cases(element: str, pipeline: str):
    text = division_program(element, len(special_operands(element)[0]))
    module, _ = parse_module(text, make_context())
    context = make_context()
    passes = CPU_PIPELINE if pipeline == "cpu" else GPU_PIPELINE
    checked = 0
    for module_pass in build_pipeline(passes, all_passes(), mlir_syntax=False):
        module_pass.apply(context, module)
        module.verify()
        if module_pass.name.startswith("convert-") or module_pass.name.startswith("graph-"):
            with np.errstate(over="ignore"):
                results = run(module, "main", inputs(element))
            for index, (got, want) in enumerate(zip(results, expected(element))):
                np.testing.assert_array_equal(got, want, err_msg=f"result #{index} after {module_pass.name}")
            checked += 1
    assert checked >= 5, "the pipeline changed: too few conversions were checked"


CPU_RUN = """
import sys
import numpy as np
sys.path.insert(0, {test_directory!r})
import mlc
from test_integer_division import division_program, expected, inputs, special_operands

element = {element!r}
function = mlc.compile(division_program(element, len(special_operands(element)[0])), device="cpu")
for index, (got, want) in enumerate(zip(function(*inputs(element)), expected(element))):
    np.testing.assert_array_equal(got, want, err_msg=f"result #{{index}}")
print("divisions agree")
"""


@pytest.mark.parametrize("element", sorted(ELEMENT_TYPES))
def test_cpu_division_does_not_trap(element: str):
    from pathlib import Path

    script = CPU_RUN.format(test_directory=str(Path(__file__).parent), element=element)
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode >= 0, f"the compiled division was killed by signal {-completed.returncode}"
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "divisions agree" in completed.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("element", sorted(ELEMENT_TYPES))
def test_gpu_division_gives_the_special_cases(element: str):
    import mlc

    function = mlc.compile(division_program(element, len(special_operands(element)[0])), device="cuda")
    for index, (got, want) in enumerate(zip(function(*inputs(element)), expected(element))):
        np.testing.assert_array_equal(got, want, err_msg=f"result #{index}")
