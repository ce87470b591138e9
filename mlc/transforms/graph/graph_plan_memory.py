"""graph-plan-memory: a liveness-based static memory plan for the intermediates of graph functions.

What is planned. In every graph function (a `func.func` with one block whose arguments, results
and top-level op results are all statically shaped tensors), the *intermediates*: the results of
the body's top-level ops, except function arguments (the caller's), results of constant-like ops
(`graph.constant` lives in read-only memory) and values that `func.return` returns (the caller's
buffers). Each
top-level op is one *step*, whatever it holds: a region-holding op (the `graph.fusion` groups of a
future pass, or any other) is one step, and the values defined inside its regions are not planned.

Reshapes are views. `graph.reshape` of a contiguous buffer is a free reinterpretation, so a
reshape's result joins the buffer of its operand instead of getting one: one *buffer* is a planned
value and its (transitive) reshape views, and lives as long as any of them is used. A reshape of a
value outside the arena (an argument, a constant, a returned value) is a view of that memory and
is not planned either; a reshape whose result is returned is a copy into the caller's buffer, so
its operand's buffer ends there.

Liveness. Steps are numbered in program order. A buffer is live from the step that defines it to
the last step that uses it or one of its views, both included; a use inside a nested region counts
at its enclosing top-level op. An unused value is live at its defining step only (the op still
writes it). Two buffers conflict when their live ranges share a step; in particular an op's
results conflict with its operands, so no op writes over its own inputs.

Assignment: "greedy by size" (Pisarchyk & Lee, "Efficient Memory Management for Deep Neural Net
Inference", 2020, the offset-calculation variant; TFLite's GPU delegate uses it). Buffers are
taken by size, largest first (ties: earlier definition first); each goes into the smallest gap
between the already placed buffers it conflicts with (ordered by offset) that fits it, or, when no
gap fits, right after the highest of them. Sizes are rounded up to `alignment` (default 256 bytes,
what `cudaMalloc` guarantees), so every offset is a multiple of it. Since every offset is 0 or the
end of a placed buffer, the arena is never larger than the buffers laid end to end.

Sizes come from the static shape and `element_types.byte_width` (i1 is one byte); a tensor without
elements takes no bytes (offset 0, size 0).

Decisions live in the IR, so the plan can be printed, edited and read back by a lowering:

* each top-level op with a planned result gets `mlc.buffer = {offset = 0 : i64, size = 4096 : i64}`
  (`size` is the tensor's bytes, before alignment; a reshape view repeats its buffer's offset). An
  op with several results gets an array instead, one entry per result, `{}` for a result outside
  the arena: `mlc.buffer = [{offset = 0 : i64, size = 64 : i64}, {}]`. `buffer_of(value)` reads it.
* the function gets `mlc.memory_plan = {arena_bytes = .., unplanned_bytes = .., buffers = N,
  alignment = ..}`: the arena's size (the peak), the sum of the aligned sizes of the buffers (one
  allocation each, no reuse), the number of buffers and the alignment of offsets (and of the arena).

The plan is what the host code uses: convert-graph-to-tile allocates one arena of `arena_bytes`
per function and places each planned value as a `memref.view` of it at its offset (checking the
plan first, since a person may have edited it), and the runtime allocates that arena once per
compiled program. The pass recomputes the plan and overwrites these attributes (stale
`mlc.buffer`s on top-level ops included), so running it twice gives the same IR. With `report=true` it writes one line per
function to stderr (mlc-opt has no remark machinery): `@f: peak 12.0 KiB in an arena, 40.0 KiB
unplanned (3.33x less), 7 intermediates` (intermediates = buffers; views are not counted apart).
`plan_memory(function)` (`mlc/transforms/analysis/memory_plan.py`) is the same analysis as a
Python API, returning a `MemoryPlan`.

Limits: no in-place reuse (an elementwise op could write over an operand it reads last); program
order is taken as given (no reordering to lower the peak); a function with several blocks, or a
top-level tensor without a static shape or a storable element type, is left alone; the greedy
assignment is a heuristic (optimal packing is NP-hard): the arena may exceed the lower bound, the
largest sum of aligned sizes live at one step. Quadratic in the number of buffers.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlc.transforms.analysis.memory_plan import annotate, check_alignment, format_report, is_plannable, plan_memory


@dataclass(frozen=True)
class GraphPlanMemory(ModulePass):
    """Plan the memory of graph intermediates: buffer reuse in one arena, by liveness.

    `alignment` (a power of two, default 256) aligns every offset; `report=true` writes one
    summary line per function to stderr. See the module docstring.
    """

    name = "graph-plan-memory"

    alignment: int = 256
    report: bool = False

    def __post_init__(self) -> None:
        # A ValueError here becomes mlc-opt's "pass 'graph-plan-memory': ..." pipeline error.
        check_alignment(self.alignment)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if is_plannable(f)]:
            assert isinstance(function, func.FuncOp)
            plan = plan_memory(function, self.alignment)
            annotate(function, plan)
            if self.report:
                sys.stderr.write(format_report(function.sym_name.data, plan) + "\n")
