"""What the two lowerings of tile kernels to loop kernels share (`convert-tile-to-loop`).

The elementwise/reduction layout (`elementwise_loop.KernelLowering`) and the matmul layout
(`matmul_loop.DotKernelLowering`) both build a `loop.kernel` with the tile kernel's parameters,
one block-mapped `loop.parallel` per grid dimension (program ids become their induction
variables, seeded for the index analysis with their ranges), clone scalar region bodies
(`tile.map`, combiners) on per-element values, and record in `mlc.arg_alignment` the byte
alignment each parameter's vector accesses need, and seed the index analysis with the range of
a loop's induction variable. `TileKernelLowering` holds that state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import gcd

from xdsl.dialects import scf
from xdsl.dialects.builtin import DenseArrayBase, IndexType, i64
from xdsl.ir import Block, Region, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.index_analysis import IndexFacts, facts_of
from mlc.transforms.lowering.chunk_access import Emitter

BLOCK_MAPPINGS = ("block.x", "block.y", "block.z")


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


@dataclass
class TileKernelLowering:
    """The state shared by the lowerings of one tile kernel: value map, index facts, alignment."""

    kernel: tile.KernelOp
    vector_bytes: int
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """Tile-level scalar values (parameters, program ids, uniform code) to their loop-level copies."""
    facts_cache: dict[SSAValue, IndexFacts] = field(default_factory=dict)
    seeds: dict[SSAValue, IndexFacts] = field(default_factory=dict)
    alignment: dict[int, int] = field(default_factory=dict)
    """The byte alignment each parameter needs (its element size unless vector accesses need more)."""

    def __post_init__(self) -> None:
        for index, argument in enumerate(self.kernel.body.block.args):
            self.alignment[index] = byte_width(argument.type.element_type)  # type: ignore[attr-defined]

    def new_kernel(self) -> loop.KernelOp:
        """An empty `loop.kernel` with the tile kernel's name and parameters (mapped in `values`)."""
        result = loop.KernelOp(self.kernel.sym_name.data, list(self.kernel.function_type.inputs.data))
        for old, new in zip(self.kernel.body.block.args, result.body.block.args):
            new.name_hint = old.name_hint
            self.values[old] = new
        return result

    def finish_kernel(self, result: loop.KernelOp, bodies: Sequence[Block]) -> None:
        """Terminates the loop bodies and the kernel; records the parameters' alignment."""
        for body in bodies:
            body.add_op(loop.YieldOp())
        result.body.block.add_op(loop.ReturnOp())
        alignments = DenseArrayBase.from_list(i64, [self.alignment[i] for i in range(len(self.alignment))])
        attributes.ARG_ALIGNMENT.write(result, alignments)

    def grid_loops(self, block: Block) -> list[Block]:
        """One block-mapped loop per grid dimension; returns their bodies, outermost first."""
        grid = self.kernel.grid_shape()
        program_ids = [op for op in self.kernel.walk() if isinstance(op, tile.ProgramIdOp)]
        bodies = []
        for axis, size in enumerate(grid):
            parallel = loop.ParallelOp(size, BLOCK_MAPPINGS[axis], Region(Block(arg_types=[IndexType()])))
            induction = parallel.body.block.args[0]
            induction.name_hint = "program" if len(grid) == 1 else f"program{axis}"
            Emitter(block).builder.insert(parallel)
            for program_id in program_ids:
                if program_id.axis.value.data == axis:
                    self.values[program_id.result] = induction
                    self.seeds[program_id.result] = IndexFacts.range(0, size - 1)
            block = parallel.body.block
            bodies.append(block)
        return bodies

    def seed_induction_variable(self, op: scf.ForOp) -> None:
        """Tells the index analysis the range and divisor of a loop's induction variable, when the
        start and step are constants and the end is bounded (a causal chain's key loop ends at a
        computed bound): the last value reached at most, and the gcd of start and step."""
        bounds = [self.facts(v) for v in (op.lb, op.ub, op.step)]
        if bounds[0].low == bounds[0].high and bounds[2].low == bounds[2].high and bounds[2].low > 0 and bounds[1].high < IndexFacts.unknown().high:
            low, high, step = bounds[0].low, bounds[1].high - 1, bounds[2].low
            last = low + (high - low) // step * step if high >= low else low
            self.seeds[op.body.block.args[0]] = IndexFacts(low, last, gcd(low, step) or step)

    def facts(self, value: SSAValue) -> IndexFacts:
        """What the index analysis knows about a tile-level index value."""
        return facts_of(value, self.seeds, self.facts_cache)

    def require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        for index, argument in enumerate(self.kernel.body.block.args):
            if self.values.get(argument) is memref_value:
                self.alignment[index] = max(self.alignment[index], alignment)

    def origin(self, indices: Sequence[SSAValue]) -> list[tuple[SSAValue, SSAValue]]:
        """An access's origin: each index as a loop-level value paired with its tile-level one."""
        return [(self.values[index], index) for index in indices]

    def clone_scalar_body(self, emitter: Emitter, body: Block, arguments: Sequence[SSAValue]) -> list[SSAValue]:
        """Clones a map or combiner body on scalar arguments; returns what it yields."""
        mapping: dict[SSAValue, SSAValue] = dict(self.values)
        mapping.update(zip(body.args, arguments))
        for body_op in body.ops:
            if isinstance(body_op, tile.YieldOp):
                return [mapping.get(v, v) for v in body_op.values]
            clone = body_op.clone(value_mapper=mapping)
            emitter.builder.insert(clone)
            mapping.update(zip(body_op.results, clone.results))
        raise PassFailure(self.kernel, "a region without tile.yield")  # pragma: no cover - verified
