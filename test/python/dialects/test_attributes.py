"""The mlc.* attributes are declared once (`mlc/dialects/attributes.py`), checked where they are
read, and every stage of both pipelines writes them in their declared form."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, UnitAttr, i32, i64

import mlc
from mlc.dialects import attributes
from mlc.compiler import lower as lower_in_place
from mlc.errors import PassFailure
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import lower

PROGRAM = """
func.func @main(%x: tensor<64x48xf32>, %w: tensor<48x40xf32>, %b: tensor<40xf32>) -> tensor<64x40xf32> {
  %0 = graph.matmul %x, %w : (tensor<64x48xf32>, tensor<48x40xf32>) -> tensor<64x40xf32>
  %1 = graph.add %0, %b : (tensor<64x40xf32>, tensor<40xf32>) -> tensor<64x40xf32>
  %2 = graph.softmax %1 axis 1 : tensor<64x40xf32>
  %3 = graph.exp %2 : tensor<64x40xf32>
  func.return %3 : tensor<64x40xf32>
}
"""


def test_every_mlc_attribute_named_in_the_source_is_declared():
    """No pass spells an mlc.* attribute itself: it uses the declaration (one place to look)."""
    root = Path(mlc.__file__).parent
    declared = set(attributes.BY_NAME)
    spelled = {}
    for path in root.rglob("*.py"):
        if path.name == "attributes.py":
            continue
        for name in re.findall(r"[\"'](mlc\.[a-z_]+)[\"']", path.read_text(encoding="utf-8")):
            spelled.setdefault(name, []).append(path.name)
    assert {name: files for name, files in spelled.items() if name in declared} == {}
    assert set(spelled) - declared <= {"mlc.compile"}, spelled


@pytest.mark.parametrize("pipeline", [GPU_PIPELINE, CPU_PIPELINE], ids=["gpu-pipeline", "cpu-pipeline"])
def test_every_stage_writes_declared_attributes_in_their_form(pipeline: str):
    # One module lowered a pass at a time in place (verified after each), not a copy per stage:
    # the copies cost as much as the passes.
    module = lower(PROGRAM, "")
    seen: set[str] = set()
    for name in pipeline.split(","):
        lower_in_place(module, name, verify_each_pass=True)
        assert list(attributes.malformed(module)) == [], name
        seen |= {name for op in module.walk() for name in op.attributes if name.startswith("mlc.")}
    assert seen <= set(attributes.BY_NAME), seen - set(attributes.BY_NAME)
    register_tile = "mlc.micro_tile" if pipeline == GPU_PIPELINE else "mlc.cpu_micro_kernel"
    assert {"mlc.arg_alignment", "mlc.matmul_tile", register_tile, "mlc.memory_plan"} <= seen


@pytest.mark.parametrize(
    ("declared", "bad"),
    [
        (attributes.ARG_ALIGNMENT, DenseArrayBase.from_list(i64, [16, 3])),
        (attributes.ARG_ALIGNMENT, DenseArrayBase.from_list(i32, [16])),
        (attributes.MATMUL_TILE, DenseArrayBase.from_list(i64, [64, 64])),
        (attributes.MICRO_TILE, StringAttr("4x4")),
        (attributes.CPU_MICRO_KERNEL, DenseArrayBase.from_list(i64, [8, 24, 8])),
        (attributes.UNROLL, IntegerAttr(2, i64)),
        (attributes.MIN_BLOCKS_PER_MULTIPROCESSOR, IntegerAttr(0, i64)),
        (attributes.PROMOTED, UnitAttr()),
    ],
    ids=lambda value: getattr(value, "name", None) or str(value)[:20],
)
def test_a_value_of_the_wrong_form_is_reported_where_it_is_read(declared, bad):
    module = lower(PROGRAM, "graph-fuse")
    op = next(op for op in module.walk() if op.name == "graph.fusion")
    op.attributes[declared.name] = bad
    with pytest.raises(PassFailure, match=re.escape(f"'{declared.name}' must be {declared.form}")) as caught:
        declared.read(op)
    assert caught.value.op is op
    assert [message for _, message in attributes.malformed(module)] == [str(caught.value)]


def test_a_hand_edited_micro_tile_is_a_located_error_of_the_pass():
    tile_level = str(lower(PROGRAM, "graph-decompose,graph-fuse,convert-graph-to-tile"))
    edited = tile_level.replace("mlc.matmul_tile = ", 'mlc.micro_tile = "big", mlc.matmul_tile = ', 1)
    assert 'mlc.micro_tile = "big"' in edited
    with pytest.raises(mlc.CompileError, match=r"'mlc.micro_tile' must be array<i64: rows, columns>"):
        from mlc.compiler import lower as lower_module
        from mlc.diagnostics import parse_module
        from mlc.dialects import make_context

        module, source_map = parse_module(edited, make_context(), "<edited>")
        lower_module(module, "convert-tile-to-loop", source_map, "<edited>")
