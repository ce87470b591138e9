"""The `xdsl.universe` entry point: plain xDSL sees mlc's dialects and passes.

pyproject.toml declares `mlc = "mlc.universe:MLC_UNIVERSE"`; these tests need the package to be
installed (`pip install -e .`) so that the entry point is registered.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe

from mlc.dialects import mlc_dialects
from mlc.transforms import mlc_passes
from mlc.universe import MLC_UNIVERSE

MLC_DIALECTS = {
    "graph": "graph.add",
    "tile": "tile.kernel",
    "loop": "loop.parallel",
    "mlc_gpu": "mlc_gpu.func",
}
"""Each dialect of mlc's, with one of its ops."""

XDSL_OPT = Path(sys.executable).parent / "xdsl-opt"

GRAPH_PROGRAM = """\
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.relu %0 : tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}
"""


@pytest.fixture(scope="module")
def multiverse() -> Universe:
    # Fails (ValueError) if a dialect or pass name of mlc's clashes with another universe's.
    return Universe.get_multiverse()


def test_entry_point_is_declared() -> None:
    (entry_point,) = [e for e in entry_points(group="xdsl.universe") if e.name == "mlc"]
    assert entry_point.value == "mlc.universe:MLC_UNIVERSE"
    assert entry_point.load() is MLC_UNIVERSE


def test_universe_exports_exactly_mlc_dialects_and_passes() -> None:
    assert set(MLC_UNIVERSE.all_dialects) == set(MLC_DIALECTS) == set(mlc_dialects())
    assert set(MLC_UNIVERSE.all_passes) == set(mlc_passes())
    # The standard dialects come from xDSL's universe; exporting them again would clash.
    assert not {"builtin", "func", "arith", "llvm", "gpu"} & set(MLC_UNIVERSE.all_dialects)


@pytest.mark.parametrize("name", sorted(MLC_DIALECTS))
def test_multiverse_has_dialect(multiverse: Universe, name: str) -> None:
    assert name in multiverse.all_dialects
    dialect = multiverse.all_dialects[name]()
    assert isinstance(dialect, Dialect)
    assert dialect.name == name
    assert MLC_DIALECTS[name] in {op.name for op in dialect.operations}


@pytest.mark.parametrize("name", sorted(mlc_passes()))
def test_multiverse_has_pass(multiverse: Universe, name: str) -> None:
    assert name in multiverse.all_passes
    pass_class = multiverse.all_passes[name]()
    assert issubclass(pass_class, ModulePass)
    assert pass_class.name == name


def test_multiverse_keeps_xdsl_passes(multiverse: Universe) -> None:
    # Registering mlc must not hide xDSL's own passes and dialects.
    assert {"cse", "canonicalize", "dce"} <= set(multiverse.all_passes)
    assert {"builtin", "func", "arith", "memref"} <= set(multiverse.all_dialects)


def _xdsl_opt(*arguments: str, source: str) -> subprocess.CompletedProcess[str]:
    assert XDSL_OPT.exists(), f"{XDSL_OPT} is missing: is xdsl installed in this environment?"
    return subprocess.run(
        [str(XDSL_OPT), *arguments], input=source, capture_output=True, text=True, timeout=120
    )


def test_xdsl_opt_parses_graph_dialect() -> None:
    result = _xdsl_opt(source=GRAPH_PROGRAM)
    assert result.returncode == 0, result.stderr
    assert "%0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>" in result.stdout
    assert "%1 = graph.relu %0 : tensor<4x8xf32>" in result.stdout


def test_xdsl_opt_reports_graph_verifier_errors() -> None:
    bad = GRAPH_PROGRAM.replace("tensor<8xf32>) -> tensor<4x8xf32>\n", "tensor<8xf32>) -> tensor<8xf32>\n", 1)
    bad = bad.replace("%1 = graph.relu %0 : tensor<4x8xf32>", "%1 = graph.relu %a : tensor<4x8xf32>")
    result = _xdsl_opt(source=bad)
    assert result.returncode != 0
    assert "does not match the broadcast of the operands; expected tensor<4x8xf32>" in result.stderr


def test_xdsl_opt_runs_convert_graph_to_tile() -> None:
    result = _xdsl_opt("-p", "convert-graph-to-tile", source=GRAPH_PROGRAM)
    assert result.returncode == 0, result.stderr
    output = result.stdout
    assert "tile.kernel @" in output
    assert "tile.map" in output
    assert "tile.launch @" in output
    assert "func.func @f(%a: memref<4x8xf32>, %b: memref<8xf32>) -> memref<4x8xf32>" in output
    assert "graph." not in output
    # The result parses again with plain xDSL.
    again = _xdsl_opt(source=output)
    assert again.returncode == 0, again.stderr
    assert again.stdout == output
