"""tile-merge-identical-kernels keeps what programs compute and leaves one kernel per distinct kernel.

Hypothesis draws a chain of unary ops and a shape; the program applies the chain to two arguments
(two fusion groups that lower to the same kernel) and another chain, or the same chain over another
shape, to a third. The module is lowered to the tile level, the pass is applied, and the tile
interpreter must give identical results before and after; the kernels left are the distinct ones.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.transforms.pipelines import CPU_PIPELINE
from programs import assert_equivalent, lower, random_inputs

TO_TILE = CPU_PIPELINE[: CPU_PIPELINE.index(",tile-merge-identical-kernels")]
UNARY = ("exp", "tanh", "sigmoid", "sqrt", "erf")
"""Ops no simplification removes (unlike neg∘neg or relu∘relu), so every chain stays a kernel."""


def _chain(name: str, source: str, ops: list[str], tensor: str) -> list[str]:
    lines, value = [], source
    for index, op in enumerate(ops):
        lines.append(f"  %{name}{index} = graph.{op} {value} : {tensor}")
        value = f"%{name}{index}"
    return lines


@st.composite
def repeated_chains(draw: st.DrawFn) -> tuple[str, int]:
    """A program with a chain applied twice and a third chain; the number of distinct kernels."""
    rows, columns = draw(st.sampled_from([(4, 32), (16, 100), (64, 256)]))
    ops = draw(st.lists(st.sampled_from(UNARY), min_size=1, max_size=4))
    third = draw(st.sampled_from(["same chain, other shape", "other chain", "same chain, same shape"]))
    t, other = f"tensor<{rows}x{columns}xf32>", f"tensor<{rows}x{columns + 1}xf32>"
    third_ops = ops + ["neg"] if third == "other chain" else ops
    third_type = other if third == "same chain, other shape" else t
    lines = [f"func.func @main(%x: {t}, %y: {t}, %z: {third_type}) -> ({t}, {t}, {third_type}) {{"]
    lines += _chain("a", "%x", ops, t) + _chain("b", "%y", ops, t) + _chain("c", "%z", third_ops, third_type)
    last = len(ops) - 1
    lines.append(f"  func.return %a{last}, %b{last}, %c{len(third_ops) - 1} : {t}, {t}, {third_type}")
    lines.append("}")
    return "\n".join(lines), 1 if third == "same chain, same shape" else 2


def _kernels(module) -> list[str]:
    return [op.sym_name.data for op in module.body.block.ops if op.name == "tile.kernel"]


@settings(max_examples=20, deadline=None)
@given(case=repeated_chains(), seed=st.integers(0, 2**32 - 1))
def test_identical_kernels_are_merged_and_results_kept(case: tuple[str, int], seed: int):
    program, distinct = case
    before = lower(program, TO_TILE)
    after = lower(program, f"{TO_TILE},tile-merge-identical-kernels")
    assert len(_kernels(before)) == 3
    assert len(_kernels(after)) == distinct
    launched = {op.kernel.root_reference.data for op in after.walk() if op.name == "tile.launch"}
    assert launched == set(_kernels(after))
    assert_equivalent(before, after, random_inputs(program, seed))


def test_a_module_without_duplicates_is_unchanged():
    program = """func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.exp %x : tensor<8xf32>
  func.return %0 : tensor<8xf32>
}"""
    before = lower(program, TO_TILE)
    after = lower(program, f"{TO_TILE},tile-merge-identical-kernels")
    assert str(before) == str(after)
