"""convert-tile-to-loop on tile loads whose origin is shifted along the last dimension.

A padding or a slice gives a `tile.load` an origin that is not a multiple of the thread's chunk
(here -5..5 elements): chunks then straddle an end of the memref, and each must read what the
tile interpreter reads (the memref inside, the padding outside) after lowering to loops, to the
GPU's NVVM level and to the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from programs import _interpret, lower

KERNEL = """
tile.kernel @shifted(%x: memref<100x{element}>, %out: memref<100x{element}>) grid [1] num_warps 1 {{
  %c0 = arith.constant 0 : index
  %shift = arith.constant {shift} : index
  %t = tile.load %x[%shift] padding 7.0 : {element} : memref<100x{element}> -> !tile.tile<128x{element}>
  tile.store %t, %out[%c0] : !tile.tile<128x{element}>, memref<100x{element}>
  tile.return
}}
func.func @main(%x: memref<100x{element}>) -> memref<100x{element}> {{
  %o = memref.alloc() : memref<100x{element}>
  tile.launch @shifted(%x, %o) : memref<100x{element}>, memref<100x{element}>
  func.return %o : memref<100x{element}>
}}
"""


def _expected(x: np.ndarray, shift: int) -> np.ndarray:
    expected = np.full_like(x, 7.0)
    positions = np.arange(x.size) + shift
    inside = (positions >= 0) & (positions < x.size)
    expected[inside] = x[positions[inside]]
    return expected


@pytest.mark.parametrize("pipeline", ["convert-tile-to-loop", "mlc-lower-to-gpu", "mlc-lower-to-cpu"])
@pytest.mark.parametrize("element", ["f32", "f16"])
def test_shifted_origins_read_the_memref_inside_and_the_padding_outside(pipeline: str, element: str):
    dtype = np.float32 if element == "f32" else np.float16
    x = (np.arange(100) + 1).astype(dtype)
    for shift in (-5, -4, -1, 1, 3, 4):
        module = lower(KERNEL.format(element=element, shift=shift), pipeline)
        (result,) = _interpret(module, [x])
        np.testing.assert_array_equal(result, _expected(x, shift), err_msg=f"origin {shift}")
