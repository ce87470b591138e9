"""Block order for lockstep execution: loops contiguous, exits after every block of the loop."""

import numpy as np
import pytest

from mlc.interpreter import run_kernel
from mlc.interpreter.control_flow import block_order

NESTED_LOOPS = """
llvm.func @nest(%out: !llvm.ptr) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  llvm.br ^outer(%zero, %zero : i32, i32)
^outer(%i: i32, %total: i32):
  %go = llvm.icmp "slt" %i, %tid : i32
  llvm.cond_br %go, OUTER_ORDER
^outer_body:
  llvm.br ^inner(%zero, %total : i32, i32)
^inner(%j: i32, %acc: i32):
  %more = llvm.icmp "sle" %j, %i : i32
  llvm.cond_br %more, INNER_ORDER
^inner_body:
  %acc2 = llvm.add %acc, %one : i32
  %j2 = llvm.add %j, %one : i32
  llvm.br ^inner(%j2, %acc2 : i32, i32)
^inner_exit:
  %i2 = llvm.add %i, %one : i32
  llvm.br ^outer(%i2, %acc : i32, i32)
^done:
  llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
  %t64 = llvm.zext %tid : i32 to i64
  %p = llvm.getelementptr %out[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %total, %p : i32, !llvm.ptr
  llvm.return
}
"""


@pytest.mark.parametrize("outer_first", [True, False])
@pytest.mark.parametrize("inner_first", [True, False])
def test_loops_are_contiguous_whatever_the_successor_order(parse, outer_first, inner_first):
    outer = "^outer_body, ^done" if outer_first else "^done, ^outer_body"
    inner = "^inner_body, ^inner_exit" if inner_first else "^inner_exit, ^inner_body"
    text = NESTED_LOOPS.replace("OUTER_ORDER", outer).replace("INNER_ORDER", inner)
    if not outer_first:
        text = text.replace('"slt" %i, %tid', '"sge" %i, %tid')
    if not inner_first:
        text = text.replace('"sle" %j, %i', '"sgt" %j, %i')
    module = parse(text)
    function = next(op for op in module.ops if op.sym_name.data == "nest")
    order = block_order(function.body)
    names = {block: index for index, block in enumerate(function.body.blocks)}
    numbered = [names[b] for b in order]
    # entry, outer header, outer body, inner header, inner body, inner exit, done — loops before exits.
    assert numbered[0] == 0
    assert numbered.index(6) == len(numbered) - 1  # ^done last
    assert numbered.index(5) > numbered.index(4)  # the inner exit after the inner body
    # Threads run different trip counts, then all meet at the barrier in ^done.
    (out,) = run_kernel(module, "nest", [np.zeros(32, np.int32)], grid=(1, 1, 1), block=(32, 1, 1))
    np.testing.assert_array_equal(out, [t * (t + 1) // 2 for t in range(32)])
