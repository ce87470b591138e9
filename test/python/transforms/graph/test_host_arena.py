"""convert-graph-to-tile follows graph-plan-memory's plan: one arena, views at the planned offsets.

Hypothesis draws elementwise, reduction and mixed programs (`programs.py`; matmuls, softmax, layer
norm, reshapes; not transposes, which are not lowered yet) and lowers each with
`graph-simplify,graph-decompose,cse,[graph-fuse,]graph-plan-memory,convert-graph-to-tile`: without graph-fuse
every op is a kernel of its own, so many intermediates share the arena. Then:

* the host function computes the same bits as the same lowering without a plan (the kernels are
  the same; only where their outputs live differs), so no planned buffer overwrote a live one;
* it allocates one arena of the plan's `arena_bytes` (none when nothing is planned), every other
  allocation is a returned buffer, and every view lies within the arena at an offset that is a
  multiple of the plan's alignment;
* two views whose bytes overlap are never both live (from the first launch that passes one to the
  last), checked here from that contract alone, without the pass's own check.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IntegerAttr, IntegerType, MemRefType
from xdsl.ir import SSAValue

from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.memory_plan import PLAN_ATTR
from programs import assert_equivalent, elementwise_programs, lower, mixed_programs, random_inputs, reduction_programs

LOWERABLE = st.one_of(
    elementwise_programs(max_ops=10),
    reduction_programs(),
    mixed_programs(max_ops=10).filter(lambda text: "graph.transpose" not in text),
)
FUSION = st.sampled_from(("", "", "graph-fuse,"))
"""Unfused two times in three: a kernel per op, so more intermediates to place."""


def _main(module) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main")


def _planned_summary(program: str, fusion: str) -> tuple[int, int]:
    """(arena_bytes, alignment) that graph-plan-memory records for `program`."""
    plan = _main(lower(program, f"graph-simplify,graph-decompose,cse,{fusion}graph-plan-memory")).attributes[PLAN_ATTR]
    return plan.data["arena_bytes"].value.data, plan.data["alignment"].value.data  # type: ignore[attr-defined]


def _constant(value: SSAValue) -> int:
    owner = value.owner
    assert isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr)
    return owner.value.value.data


def _nbytes(value: SSAValue) -> int:
    memref_type = value.type
    assert isinstance(memref_type, MemRefType)
    count = 1
    for size in memref_type.get_shape():
        count *= size
    width = memref_type.element_type.bitwidth  # type: ignore[attr-defined]
    return count * max(1, width // 8)


def _check_host_function(host: func.FuncOp, arena_bytes: int, alignment: int) -> None:
    ops = list(host.body.block.ops)
    allocations = [op for op in ops if isinstance(op, memref.AllocOp)]
    arenas = [a for a in allocations if isinstance(a.memref.type, MemRefType) and a.memref.type.element_type == IntegerType(8)]
    views = [op for op in ops if isinstance(op, memref.ViewOp)]
    returned = set(ops[-1].operands)
    assert all(a.memref in returned for a in allocations if a not in arenas), "an intermediate outside the arena"
    assert len(arenas) == (1 if views else 0)
    if not views:
        return
    assert arenas[0].memref.type.get_shape() == (arena_bytes,)  # type: ignore[attr-defined]
    places: dict[SSAValue, tuple[int, int]] = {}
    for view in views:
        assert view.source is arenas[0].memref
        offset, size = _constant(view.byte_shift), _nbytes(view.result)
        assert offset % alignment == 0 and offset + size <= arena_bytes
        places[view.result] = (offset, size)
    spans: dict[SSAValue, list[int]] = {}
    for index, launch in enumerate(op for op in ops if isinstance(op, tile.LaunchOp)):
        for operand in launch.arguments:
            if operand in places:
                spans.setdefault(operand, []).append(index)
    live = [(places[v], (min(s), max(s))) for v, s in spans.items()]
    for position, ((offset_a, size_a), (first_a, last_a)) in enumerate(live):
        for (offset_b, size_b), (first_b, last_b) in live[position + 1 :]:
            share_bytes = offset_a < offset_b + size_b and offset_b < offset_a + size_a
            assert not (share_bytes and first_a <= last_b and first_b <= last_a), "live views share bytes"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(program=LOWERABLE, fusion=FUSION, seed=st.integers(0, 2**32 - 1))
def test_the_arena_changes_no_result(program: str, fusion: str, seed: int) -> None:
    planned = lower(program, f"graph-simplify,graph-decompose,cse,{fusion}graph-plan-memory,convert-graph-to-tile")
    unplanned = lower(program, f"graph-simplify,graph-decompose,cse,{fusion}convert-graph-to-tile")
    _check_host_function(_main(planned), *_planned_summary(program, fusion))
    assert_equivalent(unplanned, planned, random_inputs(program, seed))


def test_a_plan_made_before_decomposition_still_holds() -> None:
    """graph-plan-memory before graph-decompose: the values of the softmax that convert-graph-to-tile
    decomposes (its result included, now another op's) get allocations of their own; what the plan
    placed and still exists stays placed."""
    program = """
func.func @main(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %0 = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %1 = graph.relu %0 : tensor<8x16xf32>
  %2 = graph.softmax %1 axis 1 : tensor<8x16xf32>
  %3 = graph.exp %2 : tensor<8x16xf32>
  func.return %3 : tensor<8x16xf32>
}"""
    planned = lower(program, "graph-plan-memory,convert-graph-to-tile")
    host = _main(planned)
    views = [op for op in host.body.block.ops if isinstance(op, memref.ViewOp)]
    allocations = [op for op in host.body.block.ops if isinstance(op, memref.AllocOp)]
    assert len(views) == 2  # the matmul and the relu, as planned
    assert len(allocations) > 2  # the arena, the result, and the softmax's own intermediates
    assert_equivalent(lower(program, "convert-graph-to-tile"), planned, random_inputs(program, 0))
