"""`warp_specialization.specialize_warps` applies only where the producer's extra threads are safe.

The thread loop grows by a producer warpgroup that runs the ops before the pipeline too, so a
memory access there must sit in a branch on `%thread < c` (c at most the consumer count): an
unguarded load indexed by the thread (here of the bias) keeps the non-specialized pipeline, which
is correct as it is. The equivalence of the rewrite itself is checked through the interpreter by
`test_wgmma_equivalence.py::test_warp_specialized_bulk_tensor_copies_are_exact`.
"""

from xdsl.dialects import memref, scf

from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.warp_specialization import specialize_warps
from programs import lower

DENSE = """func.func @dense(%a: tensor<128x192xf16>, %b: tensor<192x256xf16>, %bias: tensor<256xf16>) -> tensor<128x256xf16> {
  %0 = graph.matmul %a, %b : (tensor<128x192xf16>, tensor<192x256xf16>) -> tensor<128x256xf16>
  %1 = graph.add %0, %bias : (tensor<128x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %2 = graph.relu %1 : tensor<128x256xf16>
  func.return %2 : tensor<128x256xf16>
}"""
TO_TMA_LOOPS = "graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-promote-shared{tma=true}"


def _kernel_and_thread_loop(module):  # type: ignore[no-untyped-def]
    kernel = next(op for op in module.walk() if isinstance(op, loop.KernelOp))
    thread_loop = next(op for op in kernel.walk() if isinstance(op, loop.ParallelOp) and op.mapping_name() == "thread.x")
    return kernel, thread_loop


def test_a_guarded_prefix_is_specialized():
    kernel, thread_loop = _kernel_and_thread_loop(lower(DENSE, TO_TMA_LOOPS))
    assert specialize_warps(kernel) == 1
    assert thread_loop.trip_count == 256
    roles = [op for op in thread_loop.walk() if isinstance(op, scf.IfOp) and "mlc.warp_roles" in op.attributes]
    assert len(roles) == 1 and not any(isinstance(op, loop.TmaLoadOp) for op in roles[0].false_region.walk())


def test_an_unguarded_access_before_the_pipeline_keeps_it_unspecialized():
    kernel, thread_loop = _kernel_and_thread_loop(lower(DENSE, TO_TMA_LOOPS))
    bias = kernel.body.block.args[2]
    thread = thread_loop.induction_variable
    thread_loop.body.block.insert_op_before(memref.LoadOp.get(bias, [thread, thread]), thread_loop.body.block.first_op)
    before = str(kernel)
    assert specialize_warps(kernel) == 0
    assert str(kernel) == before and thread_loop.trip_count == 128
