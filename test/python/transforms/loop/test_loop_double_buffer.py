"""loop-double-buffer: two alternating shared copies compute what one did, with half the barriers.

Hypothesis draws loop kernels whose threads copy a row slice into a shared panel marked
`mlc.promoted` at the start of each iteration of a loop (drawn bounds and step: no, one, an even
and an odd number of iterations) and read a neighbour's element of it (drawn shift), folding it into
an order-dependent sum. The loop interpreter runs the kernel before and after the pass: the results
must be bit-identical. Then both are lowered to the GPU level with gpu-insert-barriers and run by
the race-detecting GPU interpreter: no race, the same results, and a double-buffered loop holds
one barrier per iteration where the single copy needed two.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects import scf

from mlc.dialects.gpu import ops as gpu
from mlc.interpreter import run_kernel
from mlc.dialects.attributes import DOUBLE_BUFFERED
from programs import lower

TO_GPU = "convert-loop-to-gpu,gpu-insert-barriers"


def kernel_text(threads: int, blocks: int, lower_bound: int, length: int, step: int, shift: int) -> tuple[str, tuple[int, int]]:
    """y[b, t] = sum over k of 0.5 * (running sum) + x[b, k + (t + shift) mod T], through a panel."""
    width = max(lower_bound + length, lower_bound) + threads
    return (
        f"""
loop.kernel @k(%x: memref<{blocks}x{width}xf32>, %y: memref<{blocks}x{threads}xf32>) {{
  %lb = arith.constant {lower_bound} : index
  %ub = arith.constant {lower_bound + length} : index
  %step = arith.constant {step} : index
  %shift = arith.constant {shift} : index
  %threads = arith.constant {threads} : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  loop.parallel %b < {blocks} mapping block.x {{
    %panel = memref.alloca() {{mlc.promoted = "%x: a row slice"}} : memref<{threads}xf32, 3>
    loop.parallel %t < {threads} mapping thread.x {{
      %moved = arith.addi %t, %shift : index
      %neighbour = arith.remui %moved, %threads : index
      %sum = scf.for %k = %lb to %ub step %step iter_args(%acc = %zero) -> (f32) {{
        %g = arith.addi %k, %t : index
        %v = memref.load %x[%b, %g] : memref<{blocks}x{width}xf32>
        memref.store %v, %panel[%t] : memref<{threads}xf32, 3>
        %r = memref.load %panel[%neighbour] : memref<{threads}xf32, 3>
        %scaled = arith.mulf %acc, %half : f32
        %s = arith.addf %scaled, %r : f32
        scf.yield %s : f32
      }}
      memref.store %sum, %y[%b, %t] : memref<{blocks}x{threads}xf32>
    }}
  }}
  loop.return
}}
""",
        (blocks, width),
    )


def barriers_in_loops(module) -> list[int]:  # noqa: ANN001
    return [sum(isinstance(op, gpu.BarrierOp) for op in loop.body.block.ops) for loop in module.walk() if isinstance(loop, scf.ForOp)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    threads=st.sampled_from([4, 32, 64]),
    blocks=st.integers(1, 2),
    lower_bound=st.integers(0, 3),
    length=st.integers(-1, 9),
    step=st.integers(1, 3),
    shift=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_double_buffering_preserves_results_and_halves_barriers(threads, blocks, lower_bound, length, step, shift, seed):
    text, shape = kernel_text(threads, blocks, lower_bound, length, step, shift)
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    buffers = [x, np.zeros((blocks, threads), np.float32)]
    before, after = lower(text, ""), lower(text, "loop-double-buffer")
    expected = run_kernel(before, "k", [b.copy() for b in buffers])[1]
    np.testing.assert_array_equal(run_kernel(after, "k", [b.copy() for b in buffers])[1], expected)

    iterations = len(range(lower_bound, lower_bound + length, step))
    doubled = [op for op in after.walk() if DOUBLE_BUFFERED.name in op.attributes]
    assert len(doubled) == (1 if iterations >= 2 else 0)

    # On the GPU: gpu-insert-barriers' barriers leave no race (the interpreter raises DataRace).
    single_gpu, double_gpu = lower(text, TO_GPU), lower(text, f"loop-double-buffer,{TO_GPU}")
    np.testing.assert_array_equal(run_kernel(single_gpu, "k", [b.copy() for b in buffers])[1], expected)
    np.testing.assert_array_equal(run_kernel(double_gpu, "k", [b.copy() for b in buffers])[1], expected)
    if iterations >= 2 and shift % threads:
        # A thread reads another's element: two barriers per iteration with one copy, one with two.
        assert barriers_in_loops(single_gpu) == [2]
        assert barriers_in_loops(double_gpu) == [2]
