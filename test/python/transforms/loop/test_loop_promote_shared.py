"""loop-promote-shared on loop kernels that are not matmuls, and its bank-conflict model.

Hypothesis draws kernels whose threads read a global buffer at affine indices of the block id, the
thread id (split into a row and a column of threads), an outer loop's counter and an inner loop's
counter, accumulate what they read and store one value per thread. The loop interpreter runs the
kernel before and after the pass (lockstep thread loops: the block-synchronous order of shared
memory; races checked) and the results must be bit-identical: the pass only changes where the
same values are read from. Whether it promotes follows from the drawn reuse; the matmul programs
of `test_matmul_equivalence.py` cover the pass inside the GPU pipeline. A second family reads
groups of neighbouring rows per thread, which the pass stores transposed and reads as vectors.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.interpreter import run_kernel
from mlc.transforms.analysis.shared_memory_promotion import MIN_REUSE, wavefronts
from programs import lower


def kernel_text(threads: int, columns: int, row_step: int, column_step: int, outer: int, inner: int, outer_step: int, blocks: int) -> tuple[str, tuple[int, int]]:
    """x[b * R + t div C * row_step + i, k + t mod C * column_step + i] summed over k and i."""
    rows_of_threads = threads // columns
    block_rows = rows_of_threads * row_step + inner
    height = blocks * block_rows
    width = (outer - 1) * outer_step + (columns - 1) * column_step + inner + 1
    text = f"""
loop.kernel @k(%x: memref<{height}x{width}xf32>, %y: memref<{blocks}x{threads}xf32>) {{
  loop.parallel %b < {blocks} mapping block.x {{
    loop.parallel %t < {threads} mapping thread.x {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %columns = arith.constant {columns} : index
      %row_step = arith.constant {row_step} : index
      %column_step = arith.constant {column_step} : index
      %block_rows = arith.constant {block_rows} : index
      %outer = arith.constant {outer * outer_step} : index
      %outer_step = arith.constant {outer_step} : index
      %inner = arith.constant {inner} : index
      %zero = arith.constant 0.0 : f32
      %trow = arith.divui %t, %columns : index
      %tcol = arith.remui %t, %columns : index
      %r0 = arith.muli %trow, %row_step : index
      %base = arith.muli %b, %block_rows : index
      %row = arith.addi %base, %r0 : index
      %column = arith.muli %tcol, %column_step : index
      %sum = scf.for %k = %c0 to %outer step %outer_step iter_args(%acc = %zero) -> (f32) {{
        %part = scf.for %i = %c0 to %inner step %c1 iter_args(%a = %acc) -> (f32) {{
          %r = arith.addi %row, %i : index
          %kc = arith.addi %k, %column : index
          %c = arith.addi %kc, %i : index
          %v = memref.load %x[%r, %c] : memref<{height}x{width}xf32>
          %n = arith.addf %a, %v : f32
          scf.yield %n : f32
        }}
        scf.yield %part : f32
      }}
      memref.store %sum, %y[%b, %t] : memref<{blocks}x{threads}xf32>
    }}
  }}
  loop.return
}}
"""
    return text, (height, width)


def promote_and_compare(text: str, shape: tuple[int, int], output_shape: tuple[int, int], seed: int):  # noqa: ANN201
    """The kernel after loop-promote-shared, once it gave bit-identical results on random inputs."""
    before = lower(text, "")
    after = lower(text, "loop-promote-shared")
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    expected = run_kernel(before, "k", [x.copy(), np.zeros(output_shape, np.float32)])[1]
    actual = run_kernel(after, "k", [x.copy(), np.zeros(output_shape, np.float32)])[1]
    np.testing.assert_array_equal(actual, expected)
    return after


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    threads=st.sampled_from([8, 32, 64]),
    columns=st.sampled_from([1, 2, 4, 8]),
    row_step=st.integers(0, 2),
    column_step=st.integers(0, 5),
    outer=st.integers(1, 4),
    inner=st.integers(1, 3),
    outer_step=st.sampled_from([1, 4, 8]),
    blocks=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_promotion_preserves_results(threads, columns, row_step, column_step, outer, inner, outer_step, blocks, seed):
    text, shape = kernel_text(threads, columns, row_step, column_step, outer, inner, outer_step, blocks)
    after = promote_and_compare(text, shape, (blocks, threads), seed)
    promoted = [op for op in after.walk() if "mlc.promoted" in op.attributes]
    if not row_step and not column_step and threads >= MIN_REUSE * inner:
        # Every thread reads the same `inner` elements per iteration of %k: reuse threads / inner
        # there at least (the whole range may be promoted instead, if it is reused as much).
        assert promoted


def grouped_kernel_text(threads: int, columns: int, group: int, row_stride: int, outer: int, inner: int, blocks: int) -> tuple[str, tuple[int, int]]:
    """Each thread reads `group` neighbouring rows per step, x[b * R + t div C * row_stride + j, k + i]:
    the `columns` threads of a row of threads read the same elements, as a matmul's threads read A."""
    rows_of_threads = threads // columns
    block_rows = (rows_of_threads - 1) * row_stride + group
    height, width = blocks * block_rows, outer * inner
    reads = "\n".join(
        f"""        %r{j} = arith.addi %row, %c{j} : index
          %v{j} = memref.load %x[%r{j}, %kc] : memref<{height}x{width}xf32>"""
        for j in range(group)
    )
    sums = "\n".join(f"        %s{j + 1} = arith.addf %s{j}, %v{j} : f32" for j in range(group))
    constants = "\n".join(f"      %c{j} = arith.constant {j} : index" for j in range(group))
    text = f"""
loop.kernel @k(%x: memref<{height}x{width}xf32>, %y: memref<{blocks}x{threads}xf32>) {{
  loop.parallel %b < {blocks} mapping block.x {{
    loop.parallel %t < {threads} mapping thread.x {{
{constants}
      %columns = arith.constant {columns} : index
      %row_stride = arith.constant {row_stride} : index
      %block_rows = arith.constant {block_rows} : index
      %one = arith.constant 1 : index
      %outer = arith.constant {outer * inner} : index
      %inner = arith.constant {inner} : index
      %zero = arith.constant 0.0 : f32
      %trow = arith.divui %t, %columns : index
      %r_local = arith.muli %trow, %row_stride : index
      %base = arith.muli %b, %block_rows : index
      %row = arith.addi %base, %r_local : index
      %sum = scf.for %k = %c0 to %outer step %inner iter_args(%total = %zero) -> (f32) {{
        %part = scf.for %i = %c0 to %inner step %one iter_args(%s0 = %total) -> (f32) {{
          %kc = arith.addi %k, %i : index
{reads}
{sums}
          scf.yield %s{group} : f32
        }}
        scf.yield %part : f32
      }}
      memref.store %sum, %y[%b, %t] : memref<{blocks}x{threads}xf32>
    }}
  }}
  loop.return
}}
"""
    return text, (height, width)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    threads=st.sampled_from([16, 32, 64]),
    columns=st.sampled_from([1, 2, 4, 8]),
    group=st.sampled_from([2, 4]),
    stride_kind=st.sampled_from(["group", "group+1", "1"]),
    outer=st.integers(1, 3),
    inner=st.sampled_from([1, 4, 8]),
    blocks=st.integers(1, 2),
    seed=st.integers(0, 2**16),
)
def test_transposed_promotion_preserves_results(threads, columns, group, stride_kind, outer, inner, blocks, seed):
    """Reads of neighbouring rows become vector reads of a transposed copy when their groups align."""
    row_stride = {"group": group, "group+1": group + 1, "1": 1}[stride_kind]
    text, shape = grouped_kernel_text(threads, columns, group, row_stride, outer, inner, blocks)
    after = promote_and_compare(text, shape, (blocks, threads), seed)
    reasons = [op.attributes["mlc.promoted"].data for op in after.walk() if "mlc.promoted" in op.attributes]
    if columns >= MIN_REUSE and row_stride <= group:
        # Rows without gaps: each element is read by the `columns` threads of its row of threads
        # at least (a stride beyond the group leaves unread rows in the box, lowering the reuse).
        assert reasons
    if reasons:
        # Groups align only when each thread's first row is a multiple of the group size away from
        # the box's first row; with a stride of one, the groups of neighbouring threads overlap.
        transposed = "stored transposed" in reasons[0]
        assert transposed == (row_stride % group == 0), reasons[0]


def test_promotion_needs_reuse_and_a_read_only_buffer():
    text, _ = kernel_text(32, 32, 1, 1, 2, 1, 8, 1)  # one element per thread per read: reuse 1
    assert not [op for op in lower(text, "loop-promote-shared").walk() if "mlc.promoted" in op.attributes]
    shared_reads, _ = kernel_text(32, 1, 0, 0, 2, 2, 4, 1)  # all threads read the same elements
    written = shared_reads.replace("memref.store %sum, %y[%b, %t] : memref<1x32xf32>", "memref.store %sum, %x[%c0, %c0] : memref<2x7xf32>")
    assert written != shared_reads
    assert [op for op in lower(shared_reads, "loop-promote-shared").walk() if "mlc.promoted" in op.attributes]
    assert "mlc.promoted" not in str(lower(written, "loop-promote-shared"))


def test_wavefront_model():
    consecutive = [[lane] for lane in range(32)]
    assert wavefronts(consecutive, 4) == 1
    assert wavefronts([[0]] * 32, 4) == 1  # one word for all lanes: a broadcast
    assert wavefronts([[lane * 32] for lane in range(32)], 4) == 32  # one bank, 32 words
    assert wavefronts([[lane * 33] for lane in range(32)], 4) == 1  # padded rows: all banks
    vectors = [[4 * lane + w for w in range(4)] for lane in range(32)]
    assert wavefronts(vectors, 16) == 4  # 512 bytes in phases of 8 lanes
    assert wavefronts([None] * 32, 16) == 4


def pipelined_kernel_text(depth: int, step: int, columns: int, element: str) -> str:
    """One warp reads a `step` x `columns` box of %b per iteration of %k with ldmatrix x4 trans
    (rows past `depth` read as zeros) and sums the registers: %b whole is too large to stage."""
    rows = -(-depth // step) * step
    return f"""
loop.kernel @k(%b: memref<{depth}x{columns}x{element}>, %out: memref<32x2x{element}>) {{
  loop.parallel %lane < 32 mapping thread.x {{
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %step = arith.constant {step} : index
    %columns = arith.constant {columns} : index
    %rows = arith.constant {rows} : index
    %low = arith.remui %lane, %c8 : index
    %eighth = arith.divui %lane, %c8 : index
    %odd = arith.remui %eighth, %c2 : index
    %high = arith.muli %odd, %c8 : index
    %row = arith.addi %low, %high : index
    %half = arith.divui %lane, %c16 : index
    %column = arith.muli %half, %c8 : index
    %zero = arith.constant 0.0 : {element}
    %init = vector.broadcast %zero : {element} to vector<2x{element}>
    %sum = scf.for %k = %c0 to %rows step %step iter_args(%acc = %init) -> (vector<2x{element}>) {{
      %part = scf.for %kk = %c0 to %step step %c16 iter_args(%acc1 = %acc) -> (vector<2x{element}>) {{
        %kr = arith.addi %k, %kk : index
        %r = arith.addi %kr, %row : index
        %inner = scf.for %n = %c0 to %columns step %c16 iter_args(%acc2 = %acc1) -> (vector<2x{element}>) {{
          %col = arith.addi %n, %column : index
          %b0, %b1, %b2, %b3 = loop.ldmatrix x4 trans %b[%r, %col] : memref<{depth}x{columns}x{element}> -> vector<2x{element}>
          %s0 = arith.maximumf %acc2, %b0 : vector<2x{element}>
          %s1 = arith.maximumf %s0, %b3 : vector<2x{element}>
          scf.yield %s1 : vector<2x{element}>
        }}
        scf.yield %inner : vector<2x{element}>
      }}
      scf.yield %part : vector<2x{element}>
    }}
    vector.store %sum, %out[%lane, %c0] : memref<32x2x{element}>, vector<2x{element}>
  }}
  loop.return
}}
"""


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.sampled_from([1024, 1032, 1096]),
    step=st.sampled_from([16, 32]),
    columns=st.sampled_from([64, 80]),
    stages=st.integers(2, 4),
    element=st.sampled_from(["f16", "bf16"]),
    seed=st.integers(0, 2**16),
)
def test_pipelined_promotion_preserves_results(depth, step, columns, stages, element, seed):
    """`stages` >= 2: each iteration's box is copied by async copies `stages` iterations ahead
    (a depth that is not a multiple of the step ends in zero-filled copies). The kernel gives the
    same bits at the loop level and, after convert-loop-to-gpu and gpu-insert-barriers, at the GPU
    level, where the interpreter checks that every read of a stage follows the wait that lands its
    copies and a barrier (races and reads of copies in flight are errors)."""
    import ml_dtypes

    text = pipelined_kernel_text(depth, step, columns, element)
    dtype = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[element]
    b = np.random.default_rng(seed).standard_normal((depth, columns)).astype(dtype)
    out = np.zeros((32, 2), dtype)
    expected = run_kernel(lower(text, ""), "k", [b.copy(), out.copy()])[1]
    promoted = lower(text, f"loop-promote-shared{{stages={stages}}}")
    assert "loop.async_copy" in str(promoted)
    np.testing.assert_array_equal(run_kernel(promoted, "k", [b.copy(), out.copy()])[1].view(np.uint16), expected.view(np.uint16))
    on_gpu = lower(str(promoted), "convert-loop-to-gpu,gpu-insert-barriers")
    np.testing.assert_array_equal(run_kernel(on_gpu, "k", [b.copy(), out.copy()])[1].view(np.uint16), expected.view(np.uint16))
