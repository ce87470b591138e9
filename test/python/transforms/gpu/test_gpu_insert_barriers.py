"""gpu-insert-barriers, checked by the race-detecting GPU interpreter.

For kernels whose barriers were written by hand or by convert-loop-to-gpu (a block-wide sum across
warps, a softmax with four such sums sharing one buffer, a shared-memory transpose, a matmul's K
loop over cooperatively copied tiles, branches on the block and the thread), every barrier is
stripped and the pass puts its own back; so for the GPU pipeline's own matmul, whose operands
loop-promote-shared staged in shared memory, and for the same matmul after loop-double-buffer.
Then (a) the interpreter reports no race and the results equal the original's (the originals'
results match numpy's float64 matmul within the error bound `error_bounds.result_bounds` derives
for the graph function they compute: gamma(K) * (|A| @ |B|) plus roundings), and (b) removing
any one barrier the pass inserted makes the interpreter report a race: each is needed.
Hypothesis draws small kernels of shared-memory stores and loads at thread-dependent indices, in
loops and branches (some on the thread id), and checks the pass's barriers against the same
program with a barrier after every shared access.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

from mlc.dialects import make_context
from mlc.dialects.gpu import ops as gpu
from mlc.interpreter import DataRace, run, run_kernel
from mlc.transforms.gpu.gpu_insert_barriers import INSERTED, GpuInsertBarriers
from programs import ASYNC_RING, assert_compiled_matches, lower

LOWER_TO_GPU_LEVEL = "graph-decompose,graph-fuse,convert-graph-to-tile,cse,canonicalize,convert-tile-to-loop,cse,canonicalize,convert-loop-to-gpu"


def barriers(module: ModuleOp) -> list[gpu.BarrierOp]:
    return [op for op in module.walk() if isinstance(op, gpu.BarrierOp)]


def without_barriers(module: ModuleOp, which: list[int] | None = None) -> ModuleOp:
    """A copy of `module` without its barriers (those at the given positions in program order)."""
    copy = module.clone()
    for index, barrier in enumerate(barriers(copy)):
        if which is None or index in which:
            barrier.detach()
            barrier.erase()
    return copy


def insert_barriers(module: ModuleOp) -> ModuleOp:
    copy = module.clone()
    GpuInsertBarriers().apply(make_context(), copy)
    copy.verify()
    return copy


def check_barrier_insertion(original: ModuleOp, execute) -> int:
    """Strips `original`'s barriers, inserts the pass's, checks (a) and (b); returns how many."""
    expected = execute(original)
    inserted = insert_barriers(without_barriers(original))
    for got, want in zip(execute(inserted), expected):
        np.testing.assert_array_equal(got, want)
    placed = barriers(inserted)
    assert all(INSERTED in barrier.attributes for barrier in placed)
    for index in range(len(placed)):
        with pytest.raises(DataRace):
            execute(without_barriers(inserted, [index]))
    return len(placed)


def kernel_runner(kernel: str, buffers: list[np.ndarray]):
    return lambda module: run_kernel(module, kernel, [b.copy() for b in buffers])


def main_runner(inputs: list[np.ndarray]):
    return lambda module: run(module, "main", [x.copy() for x in inputs])


RNG = np.random.default_rng(20261122)

BLOCK_SUM = """
loop.kernel @block_sum(%x: memref<128xf32>, %out: memref<128xf32>) {
  loop.parallel %b < 1 mapping block.x {
    loop.parallel %t < 128 mapping thread.x {
      %v = memref.load %x[%t] : memref<128xf32>
      %s = loop.all_reduce %v mask 127 : f32 {
      ^bb0(%l: f32, %r: f32):
        %c = arith.addf %l, %r : f32
        loop.yield %c : f32
      }
      memref.store %s, %out[%t] : memref<128xf32>
    }
  }
  loop.return
}
"""


def test_block_sum_across_warps_needs_one_barrier():
    original = lower(BLOCK_SUM, "convert-loop-to-gpu")
    assert len(barriers(original)) == 2
    # The lowering's own barriers are enough: the pass adds nothing.
    assert [INSERTED in b.attributes for b in barriers(insert_barriers(original))] == [False, False]
    x = RNG.standard_normal(128).astype(np.float32)
    # Stripped, only the barrier between the stores and the loads is needed: nothing follows them.
    assert check_barrier_insertion(original, kernel_runner("block_sum", [x, np.zeros(128, np.float32)])) == 1


def test_softmax_reductions_sharing_one_exchange_buffer():
    program = """
    func.func @main(%x: tensor<4x1000xf32>) -> tensor<4x1000xf32> {
      %0 = graph.softmax %x axis 1 : tensor<4x1000xf32>
      func.return %0 : tensor<4x1000xf32>
    }"""
    original = lower(program, LOWER_TO_GPU_LEVEL)
    x = RNG.standard_normal((4, 1000)).astype(np.float32)
    # Four all_reduces through one buffer: RAW before each one's loads, WAR before the next one's stores.
    assert check_barrier_insertion(original, main_runner([x])) == 7


TRANSPOSE = """
mlc_gpu.func @transpose(%x: memref<16x16xf32>, %out: memref<16x16xf32>) grid [2, 2, 1] block [8, 8, 1] {
  %tx = mlc_gpu.thread_id x
  %ty = mlc_gpu.thread_id y
  %bx = mlc_gpu.block_id x
  %by = mlc_gpu.block_id y
  %c8 = arith.constant 8 : index
  %tile = memref.alloca() : memref<8x8xf32, 3>
  %row0 = arith.muli %by, %c8 : index
  %col0 = arith.muli %bx, %c8 : index
  %row = arith.addi %row0, %ty : index
  %col = arith.addi %col0, %tx : index
  %v = memref.load %x[%row, %col] : memref<16x16xf32>
  memref.store %v, %tile[%ty, %tx] : memref<8x8xf32, 3>
  mlc_gpu.barrier
  %w = memref.load %tile[%tx, %ty] : memref<8x8xf32, 3>
  %out_row = arith.addi %col0, %ty : index
  %out_col = arith.addi %row0, %tx : index
  memref.store %w, %out[%out_row, %out_col] : memref<16x16xf32>
  mlc_gpu.return
}
"""


def test_shared_memory_transpose():
    original = lower(TRANSPOSE, "")
    x = RNG.standard_normal((16, 16)).astype(np.float32)
    execute = kernel_runner("transpose", [x, np.zeros((16, 16), np.float32)])
    np.testing.assert_array_equal(execute(original)[1], x.T)
    assert check_barrier_insertion(original, execute) == 1


MATMUL = """
mlc_gpu.func @matmul(%a: memref<16x32xf32>, %b: memref<32x16xf32>, %c: memref<16x16xf32>) grid [2, 2, 1] block [8, 8, 1] {
  %tx = mlc_gpu.thread_id x
  %ty = mlc_gpu.thread_id y
  %bx = mlc_gpu.block_id x
  %by = mlc_gpu.block_id y
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %a_tile = memref.alloca() : memref<8x8xf32, 3>
  %b_tile = memref.alloca() : memref<8x8xf32, 3>
  %row0 = arith.muli %by, %c8 : index
  %row = arith.addi %row0, %ty : index
  %col0 = arith.muli %bx, %c8 : index
  %col = arith.addi %col0, %tx : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k0 = %c0 to %c32 step %c8 iter_args(%acc = %zero) -> (f32) {
    %ka = arith.addi %k0, %tx : index
    %va = memref.load %a[%row, %ka] : memref<16x32xf32>
    memref.store %va, %a_tile[%ty, %tx] : memref<8x8xf32, 3>
    %kb = arith.addi %k0, %ty : index
    %vb = memref.load %b[%kb, %col] : memref<32x16xf32>
    memref.store %vb, %b_tile[%ty, %tx] : memref<8x8xf32, 3>
    mlc_gpu.barrier
    %next = scf.for %k = %c0 to %c8 step %c1 iter_args(%partial = %acc) -> (f32) {
      %x = memref.load %a_tile[%ty, %k] : memref<8x8xf32, 3>
      %y = memref.load %b_tile[%k, %tx] : memref<8x8xf32, 3>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %partial, %p : f32
      scf.yield %s : f32
    }
    mlc_gpu.barrier
    scf.yield %next : f32
  }
  memref.store %sum, %c[%row, %col] : memref<16x16xf32>
  mlc_gpu.return
}
"""


def test_matmul_k_loop_over_cooperatively_copied_tiles():
    original = lower(MATMUL, "")
    a = RNG.standard_normal((16, 32)).astype(np.float32)
    b = RNG.standard_normal((32, 16)).astype(np.float32)
    execute = kernel_runner("matmul", [a, b, np.zeros((16, 16), np.float32)])
    matmul_as_graph = """func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %c = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x16xf32>) -> tensor<16x16xf32>
  func.return %c : tensor<16x16xf32>
}"""
    assert_compiled_matches(matmul_as_graph, [a, b], execute(original)[2], [a.astype(np.float64) @ b])
    # One barrier before the inner loop (RAW), one before the next tile's copy (WAR).
    assert check_barrier_insertion(original, execute) == 2
    # Both in the K loop's body, none in the inner loop: a barrier per tile, not per element.
    for barrier in barriers(insert_barriers(without_barriers(original))):
        assert isinstance(barrier.parent_op(), scf.ForOp)
        assert isinstance(barrier.parent_op().parent_op(), gpu.FuncOp)


PROMOTED_DENSE = """
func.func @main(%x: tensor<40x300xf32>, %w: tensor<300x56xf32>, %bias: tensor<56xf32>) -> tensor<40x56xf32> {
  %0 = graph.matmul %x, %w : (tensor<40x300xf32>, tensor<300x56xf32>) -> tensor<40x56xf32>
  %1 = graph.add %0, %bias : (tensor<40x56xf32>, tensor<56xf32>) -> tensor<40x56xf32>
  %2 = graph.relu %1 : tensor<40x56xf32>
  func.return %2 : tensor<40x56xf32>
}
"""


def dense_at_gpu_level(loop_passes: str):  # noqa: ANN201
    """PROMOTED_DENSE lowered to the GPU level with `loop_passes` before convert-loop-to-gpu, once
    it computed relu(x @ w + bias); with the runner that interprets it on fresh random inputs."""
    original = lower(PROMOTED_DENSE, LOWER_TO_GPU_LEVEL.replace("convert-loop-to-gpu", f"{loop_passes},convert-loop-to-gpu"))
    inputs = [RNG.standard_normal(shape).astype(np.float32) for shape in ((40, 300), (300, 56), (56,))]
    execute = main_runner(inputs)
    expected = np.maximum(inputs[0].astype(np.float64) @ inputs[1] + inputs[2], 0)
    assert_compiled_matches(PROMOTED_DENSE, inputs, execute(original)[0], [expected])
    return original, execute


def test_matmul_promoted_by_the_pipeline():
    """The GPU pipeline's own matmul: operands staged by loop-promote-shared (ragged K loop,
    software-pipelined copies, the bias row too), barriers from the pass alone."""
    original, execute = dense_at_gpu_level("loop-promote-shared")
    assert len([op for op in original.walk() if "mlc.promoted" in op.attributes]) == 3
    # Two, both in the K loop: before the carried tiles are stored (write after read) and after
    # (read after write); the latter also orders the bias row's copy, made before the loop, which
    # runs at least once.
    assert check_barrier_insertion(original, execute) == 2


def test_matmul_double_buffered():
    """The same matmul with loop-double-buffer: the A and B panels alternate between two copies
    over the K loop's 19 iterations (9 pairs, then one), so each iteration needs one barrier."""
    original, execute = dense_at_gpu_level("loop-promote-shared,loop-double-buffer")
    assert len([op for op in original.walk() if "mlc.double_buffered" in op.attributes]) == 1
    # One per iteration of a pair, after its copies (read after write; it also orders the other
    # copies' reads before they are rewritten, and the bias row's copy made before the loop), and
    # one for the last, unpaired iteration.
    assert check_barrier_insertion(original, execute) == 3


BRANCHES = """
mlc_gpu.func @branches(%x: memref<2x64xf32>, %out: memref<2x64xf32>) grid [2, 1, 1] block [64, 1, 1] {
  %b = mlc_gpu.block_id x
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<64xf32, 3>
  %half = memref.alloca() : memref<32xf32, 3>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c32 = arith.constant 32 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %v = memref.load %x[%b, %t] : memref<2x64xf32>
  memref.store %v, %s[%t] : memref<64xf32, 3>
  %first_block = arith.cmpi eq, %b, %c0 : index
  %w = scf.if %first_block -> (f32) {
    mlc_gpu.barrier
    %mirror = arith.subi %c63, %t : index
    %m = memref.load %s[%mirror] : memref<64xf32, 3>
    scf.yield %m : f32
  } else {
    mlc_gpu.barrier
    %partner = arith.xori %t, %c1 : index
    %p = memref.load %s[%partner] : memref<64xf32, 3>
    scf.yield %p : f32
  }
  %low = arith.cmpi ult, %t, %c32 : index
  scf.if %low {
    memref.store %w, %half[%t] : memref<32xf32, 3>
  }
  mlc_gpu.barrier
  %h_index = arith.remui %t, %c32 : index
  %h = memref.load %half[%h_index] : memref<32xf32, 3>
  %next = arith.addi %t, %c1 : index
  %neighbour = arith.remui %next, %c64 : index
  %r = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %h) -> (f32) {
    mlc_gpu.barrier
    %u = memref.load %s[%neighbour] : memref<64xf32, 3>
    %n = arith.addf %acc, %u : f32
    mlc_gpu.barrier
    memref.store %n, %s[%t] : memref<64xf32, 3>
    scf.yield %n : f32
  }
  memref.store %r, %out[%b, %t] : memref<2x64xf32>
  mlc_gpu.return
}
"""


def test_branches_on_the_block_and_on_the_thread():
    original = lower(BRANCHES, "")
    x = RNG.standard_normal((2, 64)).astype(np.float32)
    execute = kernel_runner("branches", [x, np.zeros((2, 64), np.float32)])
    # A barrier in each arm of the uniform branch, one after the divergent one, two in the loop.
    assert check_barrier_insertion(original, execute) == 5
    placed = insert_barriers(without_barriers(original))
    divergent_branch = [op for op in placed.walk() if isinstance(op, gpu.BarrierOp)][2]
    assert isinstance(divergent_branch.parent_op(), gpu.FuncOp)


# Hypothesis: random kernels of shared-memory accesses ---------------------------------------------


@dataclass
class KernelWriter:
    """Text of an `mlc_gpu.func` over buffers %x and %acc (one row per block), two shared buffers
    of one element per thread, with a barrier after every shared access when `reference`."""

    threads: int
    reference: bool
    lines: list[str] = field(default_factory=list)
    names: int = 0

    def fresh(self) -> str:
        self.names += 1
        return f"%v{self.names}"

    def emit(self, line: str, depth: int) -> None:
        self.lines.append("  " * (depth + 1) + line)

    def constant(self, value: int, depth: int) -> str:
        name = self.fresh()
        self.emit(f"{name} = arith.constant {value} : index", depth)
        return name

    def index(self, spec: tuple[str, int], loop: str | None, depth: int) -> str:
        """(kind, constant): `shift` (t + c [+ k]) mod N, `mirror` (N - 1 - t + c [+ k]) mod N,
        `half` t / 2, `fixed` c mod N; k is the innermost loop's induction variable."""
        kind, number = spec
        if kind == "fixed":
            return self.constant(number % self.threads, depth)
        if kind == "half":
            two = self.constant(2, depth)
            name = self.fresh()
            self.emit(f"{name} = arith.divui %t, {two} : index", depth)
            return name
        base = "%t"
        if kind == "mirror":
            top = self.constant(self.threads - 1, depth)
            base = self.fresh()
            self.emit(f"{base} = arith.subi {top}, %t : index", depth)
        offset = self.constant(number, depth)
        total = self.fresh()
        self.emit(f"{total} = arith.addi {base}, {offset} : index", depth)
        if loop is not None:
            with_loop = self.fresh()
            self.emit(f"{with_loop} = arith.addi {total}, {loop} : index", depth)
            total = with_loop
        size = self.constant(self.threads, depth)
        wrapped = self.fresh()
        self.emit(f"{wrapped} = arith.remui {total}, {size} : index", depth)
        return wrapped

    def barrier(self, depth: int) -> None:
        if self.reference:
            self.emit("mlc_gpu.barrier", depth)

    def access(self, statement: tuple, loop: str | None, depth: int) -> None:
        kind, buffer, spec = statement
        shared = f"%s{buffer}"
        index = self.index(spec, loop, depth)
        accumulated = self.fresh()
        self.emit(f"{accumulated} = memref.load %acc[%b, %t] : memref<2x{self.threads}xf32>", depth)
        if kind == "store":
            self.emit(f"memref.store {accumulated}, {shared}[{index}] : memref<{self.threads}xf32, 3>", depth)
            return
        value, half, scaled, total = self.fresh(), self.fresh(), self.fresh(), self.fresh()
        self.emit(f"{value} = memref.load {shared}[{index}] : memref<{self.threads}xf32, 3>", depth)
        self.emit(f"{half} = arith.constant 0.5 : f32", depth)
        self.emit(f"{scaled} = arith.mulf {accumulated}, {half} : f32", depth)
        self.emit(f"{total} = arith.addf {scaled}, {value} : f32", depth)
        self.emit(f"memref.store {total}, %acc[%b, %t] : memref<2x{self.threads}xf32>", depth)

    def statements(self, statements: list[tuple], loop: str | None, depth: int) -> None:
        for statement in statements:
            kind = statement[0]
            if kind in ("store", "load"):
                self.access(statement, loop, depth)
                self.barrier(depth)
            elif kind == "loop":
                _, trip, body = statement
                zero, one, count = self.constant(0, depth), self.constant(1, depth), self.constant(trip, depth)
                induction = f"%k{depth}"
                self.emit(f"scf.for {induction} = {zero} to {count} step {one} {{", depth)
                self.statements(body, induction, depth + 1)
                self.emit("}", depth)
            elif kind == "block_branch":
                _, then_body, else_body = statement
                zero = self.constant(0, depth)
                condition = self.fresh()
                self.emit(f"{condition} = arith.cmpi eq, %b, {zero} : index", depth)
                self.emit(f"scf.if {condition} {{", depth)
                self.statements(then_body, loop, depth + 1)
                self.emit("} else {", depth)
                self.statements(else_body, loop, depth + 1)
                self.emit("}", depth)
            else:  # a single access in a branch on the thread id: its barrier goes after the branch
                _, limit, access = statement
                bound = self.constant(limit, depth)
                condition = self.fresh()
                self.emit(f"{condition} = arith.cmpi ult, %t, {bound} : index", depth)
                self.emit(f"scf.if {condition} {{", depth)
                self.access(access, loop, depth + 1)
                self.emit("}", depth)
                self.barrier(depth)

    def kernel(self, grid: int, statements: list[tuple]) -> str:
        n = self.threads
        self.emit("%b = mlc_gpu.block_id x", 0)
        self.emit("%t = mlc_gpu.thread_id x", 0)
        for buffer in (0, 1):
            self.emit(f"%s{buffer} = memref.alloca() : memref<{n}xf32, 3>", 0)
        self.emit(f"%first = memref.load %x[%b, %t] : memref<2x{n}xf32>", 0)
        for buffer in (0, 1):
            self.emit(f"memref.store %first, %s{buffer}[%t] : memref<{n}xf32, 3>", 0)
        self.barrier(0)
        self.statements(statements, None, 0)
        body = "\n".join(self.lines)
        return (
            f"mlc_gpu.func @kernel(%x: memref<2x{n}xf32>, %acc: memref<2x{n}xf32>) grid [{grid}, 1, 1] "
            f"block [{n}, 1, 1] {{\n{body}\n  mlc_gpu.return\n}}\n"
        )


STORE_INDICES = st.tuples(st.sampled_from(("shift", "mirror")), st.integers(0, 70))
LOAD_INDICES = st.tuples(st.sampled_from(("shift", "mirror", "half", "fixed")), st.integers(0, 70))


def accesses() -> st.SearchStrategy[tuple]:
    # Stores use one-to-one indices: two threads writing one element in one access is a race no
    # barrier can fix.
    return st.one_of(
        st.tuples(st.just("store"), st.integers(0, 1), STORE_INDICES),
        st.tuples(st.just("load"), st.integers(0, 1), LOAD_INDICES),
    )


def statement_lists(depth: int) -> st.SearchStrategy[list[tuple]]:
    simple = st.one_of(accesses(), st.tuples(st.just("thread_branch"), st.integers(1, 64), accesses()))
    if depth == 0:
        return st.lists(simple, min_size=1, max_size=4)
    nested = statement_lists(depth - 1)
    compound = st.one_of(
        st.tuples(st.just("loop"), st.integers(1, 3), nested),
        st.tuples(st.just("block_branch"), nested, nested),
    )
    return st.lists(st.one_of(simple, simple, compound), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    threads=st.sampled_from((1, 2, 5, 8, 32, 33, 64)),
    grid=st.integers(1, 2),
    statements=statement_lists(2),
    seed=st.integers(0, 2**32 - 1),
)
def test_inserted_barriers_remove_every_race(threads: int, grid: int, statements: list[tuple], seed: int):
    reference = lower(KernelWriter(threads, reference=True).kernel(grid, statements), "")
    stripped = lower(KernelWriter(threads, reference=False).kernel(grid, statements), "")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, threads)).astype(np.float32)
    accumulated = rng.standard_normal((2, threads)).astype(np.float32)
    execute = kernel_runner("kernel", [x, accumulated])
    expected = execute(reference)
    got = execute(insert_barriers(stripped))  # raises DataRace if a hazard was left
    np.testing.assert_array_equal(got[1], expected[1])
    # A barrier after every access leaves nothing for the pass to do.
    assert not any(INSERTED in b.attributes for b in barriers(insert_barriers(reference)))


def test_async_copy_ring_gets_one_barrier_per_iteration():
    """The two-stage ring of `test_async_copy.py` with no barriers: the pass places one per
    iteration, after the wait (the landed copies before the reads of other threads' rows) and
    before the next copy (the previous iteration's reads before the copy over their stage), none
    before the first copy (copies in flight are ordered by the wait, not by barriers), and the
    interpreter's race checks then pass. Without the wait no barrier can help: the interpreter
    reports the read of a stage whose copy is still in flight."""
    text = ASYNC_RING.format(wait="loop.async_wait 0", barrier_after_wait="", early_read="", barrier_after_read="")
    module = lower(text, "gpu-insert-barriers")
    placed = barriers(module)
    assert len(placed) == 1 and isinstance(placed[0].parent_op(), scf.ForOp)
    following = placed[0].next_op
    while following is not None and following.name != "loop.async_copy":
        assert following.name not in ("vector.load", "loop.async_wait"), following.name
        following = following.next_op
    assert following is not None, "the barrier does not precede the copy"
    a = RNG.standard_normal((64, 64)).astype(np.float16)
    np.testing.assert_array_equal(run_kernel(module, "ring", [a, np.zeros_like(a)])[1], a)
    missing_wait = lower(ASYNC_RING.format(wait="", barrier_after_wait="", early_read="", barrier_after_read=""), "gpu-insert-barriers")
    with pytest.raises(DataRace, match="still in flight"):
        run_kernel(missing_wait, "ring", [a, np.zeros_like(a)])
