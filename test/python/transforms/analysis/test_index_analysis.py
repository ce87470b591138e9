"""Range and divisibility facts about index arithmetic (index_analysis.py)."""

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.index_analysis import IndexFacts, facts_of


def _facts(body: str, grid: int = 8):
    module, _ = parse_module(
        f"""tile.kernel @k(%m: memref<4096xf32>) grid [{grid}] {{
          %pid = tile.program_id 0
          {body}
          tile.return
        }}""",
        make_context(),
    )
    kernel = next(iter(module.body.block.ops))
    program_id = next(op for op in kernel.walk() if isinstance(op, tile.ProgramIdOp)).result
    seeds = {program_id: IndexFacts.range(0, grid - 1)}
    values = {op.results[0].name_hint: op.results[0] for op in kernel.walk() if op.results}
    return {name: facts_of(value, seeds, {}) for name, value in values.items()}


def test_tile_origin_is_bounded_and_divisible():
    facts = _facts(
        """%c512 = arith.constant 512 : index
           %origin = arith.muli %pid, %c512 : index"""
    )
    assert facts["origin"] == IndexFacts(0, 3584, 512)


def test_decomposed_program_id():
    facts = _facts(
        """%c4 = arith.constant 4 : index
           %c16 = arith.constant 16 : index
           %column = arith.remui %pid, %c4 : index
           %row = arith.divui %pid, %c4 : index
           %start = arith.muli %column, %c16 : index
           %sum = arith.addi %start, %row : index""",
        grid=12,
    )
    assert facts["column"] == IndexFacts(0, 3, 1)
    assert (facts["row"].low, facts["row"].high) == (0, 2)
    assert facts["start"] == IndexFacts(0, 48, 16)
    assert (facts["sum"].low, facts["sum"].high, facts["sum"].divisor) == (0, 50, 1)


def test_unknown_values_stay_unknown():
    facts = _facts(
        """%c3 = arith.constant 3 : index
           %shifted = arith.shli %pid, %c3 : index"""
    )
    assert facts["shifted"] == IndexFacts.unknown()
