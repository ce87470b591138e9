"""The TF32 tensor-core path (`convert-tile-to-loop{tensor-cores=true}` on f32 dots of precision
tf32 or 3xtf32, and every GPU pass after it) computes what the graph asks for.

Hypothesis draws M, N, K (any: convert-graph-to-tile gives TF32 dots a block of at least one
m16n8k8 step, so loads and stores are masked where the matrix is ragged), an epilogue (none, or
a bias add and a relu) and the precision. The module after each pass from convert-tile-to-loop on
is interpreted on the same random inputs:
- tf32: every step bit-identical to the tile level (the lowering rounds each register to TF32 as
  `tile.dot` rounds its operands, then `loop.mma_sync m16n8k8` accumulates in K order with f32
  fused multiply-adds);
- 3xtf32: convert-tile-to-loop's result within the graph's error bound (its three products per
  8-deep slice are summed in another order than `tile.dot`'s three per k), every later step
  bit-identical to it.
The LLVM-level steps (slower to interpret) run on one fixed ragged shape at tf32.

On Hopper (`wgmma=true`), a tf32 product whose B graph-transpose-tf32-rhs reads K-major runs as
`loop.wgmma` on f32 operands, which the tensor core truncates to TF32 rather than rounding them:
convert-tile-to-loop's result is within the graph's bound (and measurably off the rounded tile
level), every later step up to convert-gpu-to-nvvm bit-identical to it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from programs import assert_perturbation_caught, assert_within_bounds, lower, make_context, random_inputs

from mlc.interpreter import run
from mlc.passes import build_pipeline
from mlc.transforms import all_passes
from mlc.transforms.pipelines import GPU_PIPELINE

PASSES = GPU_PIPELINE.split(",")
FIRST = PASSES.index("convert-tile-to-loop{tensor-cores=true}")
TILE_LEVEL = ",".join(PASSES[:FIRST])
LOOP_STEPS = PASSES[FIRST : PASSES.index("convert-gpu-to-nvvm") + 1]


def program(m: int, n: int, k: int, epilogue: bool, precision: str) -> str:
    a, b, c, bias = (f"tensor<{shape}xf32>" for shape in (f"{m}x{k}", f"{k}x{n}", f"{m}x{n}", f"{n}"))
    body = f'%0 = graph.matmul %a, %b {{precision = "{precision}"}} : ({a}, {b}) -> {c}\n'
    result = "%0"
    if epilogue:
        body += f"  %1 = graph.add %0, %bias : ({c}, {bias}) -> {c}\n  %2 = graph.relu %1 : {c}\n"
        result = "%2"
    parameters = f"%a: {a}, %b: {b}" + (f", %bias: {bias}" if epilogue else "")
    return f"func.func @main({parameters}) -> {c} {{\n  {body}  func.return {result} : {c}\n}}\n"


def _check_chain(text: str, precision: str, steps: list[str], seed: int, tile_level: str = TILE_LEVEL, path: str = "loop.mma_sync m16n8k8") -> str:
    """Interprets the module after each of `steps` (from the tile level), as the docstring says;
    returns the last module's text."""
    module = lower(text, tile_level)
    inputs = random_inputs(text, seed)
    expected = run(module, "main", [x.copy() for x in inputs])
    context = make_context()
    for step in steps:
        for module_pass in build_pipeline(step, all_passes(), mlir_syntax=False):
            module_pass.apply(context, module)
        module.verify()
        actual = run(module, "main", [x.copy() for x in inputs])
        if step == steps[0]:
            assert path in str(module), "the TF32 dot did not take the tensor-core path"
            if precision == "3xtf32" or path == "loop.wgmma":
                for result in actual:
                    assert_within_bounds(text, inputs, [result])
                expected = actual
                continue
        for want, got in zip(expected, actual):
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=step)
    return str(module)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    m=st.integers(1, 40),
    n=st.integers(1, 24),
    k=st.integers(1, 32),
    epilogue=st.booleans(),
    precision=st.sampled_from(["tf32", "3xtf32"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_tf32_tensor_core_passes(m: int, n: int, k: int, epilogue: bool, precision: str, seed: int):
    _check_chain(program(m, n, k, epilogue, precision), precision, LOOP_STEPS, seed)


def test_tf32_path_through_llvm():
    """One ragged block (20x9x12: masked rows, columns and K) down to LLVM, each step checked, to
    the NVVM intrinsics: `mma.sync m16n8k8 .tf32` on `cvt.rna.tf32.f32`-rounded operands (3xtf32
    adds only arith and more steps, checked through convert-gpu-to-nvvm above)."""
    lowered = _check_chain(program(20, 9, 12, True, "tf32"), "tf32", PASSES[FIRST:], 5)
    assert "llvm.nvvm.mma.m16n8k8.row.col.tf32" in lowered and "llvm.nvvm.f2tf32.rna" in lowered
    assert "llvm.nvvm.mma.m16n8k16" not in lowered


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_tf32_results_are_held_to_their_bound(precision: str):
    """The loop-level result is within the graph's bound for its precision, which is tight enough to
    catch a result moved by a few bounds; tf32 is measurably off IEEE f32, 3xtf32 close to it."""
    text = program(33, 17, 300, False, precision)
    module = lower(text, ",".join(PASSES[: FIRST + 1]))
    inputs = random_inputs(text, 3)
    (result,) = run(module, "main", [x.copy() for x in inputs])
    assert_within_bounds(text, inputs, [result])
    assert_perturbation_caught(text, inputs, [result])
    a, b = (x.astype(np.float64) for x in inputs)
    relative = np.max(np.abs(result - a @ b)) / np.max(np.abs(a @ b))
    assert (relative > 1e-5) if precision == "tf32" else (relative < 1e-5)


WGMMA_STEPS = ["convert-tile-to-loop{tensor-cores=true wgmma=true}", *LOOP_STEPS[1:-1]]
"""convert-tile-to-loop on Hopper .. gpu-insert-barriers (the NVVM level's inline wgmma assembly is
not interpreted; the GPU tests run it)."""


def _wgmma_tile_level(rows: int, swap: bool = False, columns: int = 64) -> str:
    """The GPU pipeline's graph and tile passes for sm_90, at a `rows` x `columns` x 32 TF32 wgmma
    block (C's; a product computed transposed, `mlc.swap_operands`, has a `columns` x `rows` dot:
    a warpgroup per 64 columns); `swap`:
    graph-transpose-tf32-rhs{swap-operands=true}, else it transposes every row-major B."""
    option = "graph-transpose-tf32-rhs{wgmma=true" + (" swap-operands=true}" if swap else "}")
    graph = ",".join(PASSES[: PASSES.index("convert-graph-to-tile")]).replace("graph-transpose-tf32-rhs", option)
    return f"{graph},convert-graph-to-tile{{matmul-tile={rows},{columns},32 wgmma=true}}," + ",".join(PASSES[PASSES.index("convert-graph-to-tile") + 1 : FIRST])


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    m=st.integers(1, 140),
    n=st.integers(1, 80),
    k=st.integers(9, 25).map(lambda blocks: 4 * blocks),
    rows=st.sampled_from([64, 128]),
    epilogue=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_tf32_wgmma_passes(m: int, n: int, k: int, rows: int, epilogue: bool, seed: int):
    """Any M and N (masked), K a multiple of 4 over one 32-deep step (16-byte rows, a K loop)."""
    _check_chain(program(m, n, k, epilogue, "tf32"), "tf32", WGMMA_STEPS, seed, _wgmma_tile_level(rows), "loop.wgmma")


def test_tf32_wgmma_truncates_its_operands():
    """The warpgroup product reads B through the materialised transpose K-major (the loop and the
    graph levels say so) and truncates: within the bound, but not the rounded product."""
    text = program(70, 72, 200, True, "tf32")
    module = lower(text, _wgmma_tile_level(64) + ",convert-tile-to-loop{tensor-cores=true wgmma=true}")
    assert 'mlc.operand_major = ["k", "k"]' in str(module) and "m64n64k32" in str(module)
    inputs = random_inputs(text, 7)
    (result,) = run(module, "main", [x.copy() for x in inputs])
    assert_within_bounds(text, inputs, [result])
    (rounded,) = run(lower(text, _wgmma_tile_level(64)), "main", [x.copy() for x in inputs])
    assert not np.array_equal(result, rounded)


HOPPER_DEFAULT_STEPS = [step.replace("loop-promote-shared", "loop-stage-epilogue,loop-promote-shared{tma=true warp-specialize=true}") for step in WGMMA_STEPS]
"""The TF32 wgmma steps as `mlc.compile`'s sm_90 default runs them: the tile staged through shared
memory (loop-stage-epilogue, f32 outputs), the f32 operands by bulk tensor copies (boxes of 32 f32,
one 128-byte swizzle row) from a producer warpgroup to consumer warpgroups."""


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    m=st.integers(1, 140),
    n=st.integers(1, 20).map(lambda chunks: 4 * chunks),
    k=st.integers(9, 25).map(lambda blocks: 4 * blocks),
    seed=st.integers(0, 2**32 - 1),
)
@example(m=70, n=72, k=200, seed=3)  # 7 K steps of 32: every stage released and refilled, ragged M, N and K
@pytest.mark.parametrize("swap", [True, False])
def test_tf32_wgmma_warp_specialized_bulk_copies(swap: bool, m: int, n: int, k: int, seed: int):
    """Any M, N in 16-byte chunks (the staged epilogue's stores; B's rows when it is the lhs of a
    product computed transposed), K a multiple of 4 (16-byte rows, a tensor map's strides): each
    step from convert-tile-to-loop on bit-identical to it, the operands' boxes zero-filled past
    ragged N and K. No bias or relu: an f32 epilogue that computes waits for each K step's
    products (`async_pipeline.overlap_products`), and warp specialization takes only pipelines
    whose products stay in flight. `swap`: C^T = B^T A^T at a 64 x 128 block (two consumer
    warpgroups of m64n64 on C^T's 128 x 64 tile), B's K x N boxes M-major as the lhs (A from
    registers on the GPU), the transposed tile scattered (no staged epilogue); else B through a
    transpose kernel, read K-major, at 128 x 64, the tile stored through shared memory."""
    tile_level = _wgmma_tile_level(64, swap, 128) if swap else _wgmma_tile_level(128)
    lowered = _check_chain(program(m, n, k, False, "tf32"), "tf32", HOPPER_DEFAULT_STEPS, seed, tile_level, "loop.wgmma")
    assert "loop.tma_load" in lowered and "mlc.warp_roles" in lowered
    assert ('mlc.operand_major = ["m", "k"]' in lowered) == swap and ("mlc.staged_epilogue" in lowered) == (not swap)
    if swap:  # the K loop runs two copies an iteration, the odd step left over after it (mlc.a_register_sets)
        steps = -(-k // 32)
        assert lowered.count("mlc.a_register_sets = 2") == (2 + steps % 2 if steps >= 2 else 1)
