"""The tensor-core path (`convert-tile-to-loop{tensor-cores=true}` and every GPU pass after it)
preserves what f16 and bf16 matmuls compute.

Hypothesis draws M, N, K (multiples of the block or not, so loads and stores are masked; at least
16, 8 and 16, below which convert-graph-to-tile's blocks are too small for the instruction and
the CUDA-core path runs), an epilogue (none, or a bias add and a relu) and the operand type. The program is lowered to the
tile level; for bf16 the tile-level module is the f16 one with every f16 spelled bf16 (the graph
level's bf16 matmuls are another branch's work; the tile level is where this path starts). The
module after each pass from convert-tile-to-loop on is interpreted on the same random inputs and
must give bit-identical results (operands loaded with `loop.ldmatrix`, then staged in shared
memory, the loads becoming NVVM ldmatrix intrinsics; for deep K, copied by cp.async pipelines): `loop.mma_sync` accumulates in K order with f32 fused multiply-adds, as
`tile.dot` does, and the later passes change no arithmetic. The LLVM-level steps (slower to
interpret) run on one fixed ragged shape per type.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import lower, make_context, random_inputs, transposed_matmul_program

from mlc.dialects.element_types import to_numpy_dtype
from mlc.interpreter import run
from mlc.passes import build_pipeline
from mlc.transforms import all_passes
from mlc.transforms.pipelines import GPU_PIPELINE

PASSES = GPU_PIPELINE.split(",")
TILE_LEVEL = ",".join(PASSES[: PASSES.index("convert-tile-to-loop{tensor-cores=true}")])


def program(m: int, n: int, k: int, epilogue: bool) -> str:
    a, b, c, bias = (f"tensor<{shape}xf16>" for shape in (f"{m}x{k}", f"{k}x{n}", f"{m}x{n}", f"{n}"))
    body = f"%0 = graph.matmul %a, %b : ({a}, {b}) -> {c}\n"
    result = "%0"
    if epilogue:
        body += f"  %1 = graph.add %0, %bias : ({c}, {bias}) -> {c}\n  %2 = graph.relu %1 : {c}\n"
        result = "%2"
    parameters = f"%a: {a}, %b: {b}" + (f", %bias: {bias}" if epilogue else "")
    return f"func.func @main({parameters}) -> {c} {{\n  {body}  func.return {result} : {c}\n}}\n"


def _tile_level(text: str, element: str, tile_level: str = TILE_LEVEL) -> str:
    tile_text = str(lower(text, tile_level))
    return tile_text.replace("f16", element) if element != "f16" else tile_text


def _check_chain(
    text: str, element: str, steps: list[str], seed: int, pipelined: bool = False, tile_level: str = TILE_LEVEL, path: str = "loop.mma_sync"
) -> None:
    """Interprets the module after each of `steps` (from the tile level) and compares neighbours;
    `path` is the tensor-core op convert-tile-to-loop must have used."""
    module = lower(_tile_level(text, element, tile_level), "")
    dtype = to_numpy_dtype(_element_attribute(element))
    inputs = [x.astype(dtype) for x in random_inputs(text, seed)]
    expected = run(module, "main", [x.copy() for x in inputs])
    context = make_context()
    for step in steps:
        for module_pass in build_pipeline(step, all_passes(), mlir_syntax=False):
            module_pass.apply(context, module)
        module.verify()
        actual = run(module, "main", [x.copy() for x in inputs])
        for want, got in zip(expected, actual):
            assert got.dtype == want.dtype and got.shape == want.shape, step
            np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=step)
        if step.startswith("convert-tile-to-loop{tensor-cores=true"):
            assert path in str(module), "the tensor-core path did not apply"
            assert path != "loop.mma_sync" or "loop.ldmatrix" in str(module), "the operands are not loaded with ldmatrix"
        if step.startswith("loop-promote-shared"):
            staged = "read by ldmatrix" if path == "loop.mma_sync" else "read by wgmma"
            assert staged in str(module), "tensor-core operands were not staged in shared memory"
            copy = "loop.tma_load" if "tma=true" in step else "loop.async_copy"
            assert path == "loop.mma_sync" or copy in str(module), f"wgmma operands were not copied by {copy}"
            assert not pipelined or "loop.async_copy" in str(module), "the copies were not pipelined"


def _element_attribute(element: str):
    from xdsl.dialects.builtin import bf16, f16

    return {"f16": f16, "bf16": bf16}[element]


FIRST = PASSES.index("convert-tile-to-loop{tensor-cores=true}")
LOOP_STEPS = PASSES[FIRST : PASSES.index("convert-gpu-to-nvvm") + 1]
"""convert-tile-to-loop{tensor-cores=true} .. convert-gpu-to-nvvm, where the interpreter runs lanes at once."""


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    m=st.integers(16, 80),
    n=st.integers(8, 72),
    k=st.integers(16, 40),
    epilogue=st.booleans(),
    element=st.sampled_from(["f16", "bf16"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_tensor_core_passes_are_exact(m: int, n: int, k: int, epilogue: bool, element: str, seed: int):
    _check_chain(program(m, n, k, epilogue), element, LOOP_STEPS, seed)


def test_pipelined_copies_are_exact():
    """K deep enough (808) that A's rows of a 64-row block do not fit in shared memory whole: each K
    step's box is copied by `loop.async_copy` three steps ahead, the last (partial) step's copies
    zero-filling; the chain goes down to the NVVM intrinsics (cp.async in the interpreter)."""
    _check_chain(program(64, 16, 808, False), "bf16", LOOP_STEPS, 11, pipelined=True)


@pytest.mark.parametrize("lhs_transposed, rhs_transposed", [(False, True), (True, False), (True, True)])
def test_ldmatrix_reads_transposed_operands_exactly(lhs_transposed: bool, rhs_transposed: bool):
    """A transposed operand's stored block is loaded by ldmatrix with the other `trans` (x4 and the
    x2 of an odd last B column: 24 columns), staged in its stored layout; ragged M and K."""
    _check_chain(transposed_matmul_program((), 33, 40, 24, lhs_transposed, rhs_transposed, "f16", False), "f16", LOOP_STEPS, 3)


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_tensor_core_path_through_llvm_is_exact(element: str):
    """One ragged block (40x24x20: masked rows, columns and K) down to LLVM, each LLVM step checked."""
    _check_chain(program(40, 24, 20, True), element, PASSES[FIRST:], 5)


def test_mma_against_numpy():
    """The tile-level interpreter (the reference every step above starts from) agrees with numpy."""
    text = program(40, 24, 20, False)
    inputs = random_inputs(text, 7)
    (result,) = run(lower(text, TILE_LEVEL), "main", [x.copy() for x in inputs])
    a, b = (x.astype(np.float64) for x in inputs)
    bound = 2.0**-11 * np.abs(a @ b) + 1e-5 * np.sqrt(20) * (np.abs(a) @ np.abs(b))
    assert np.all(np.abs(result.astype(np.float64) - a @ b) <= bound)
