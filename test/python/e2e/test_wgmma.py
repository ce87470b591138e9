"""f16/bf16 matmuls through the Hopper path (wgmma, `mlc-lower-to-gpu{arch=sm_90}`) agree with numpy.

On the GPU machine (an H100, sm_90) every case is compiled with the wgmma lowering, asserted to
be on it (warpgroup `wgmma.mma_async` in the kernel), run, and compared within the bound
`error_bounds.result_bounds` derives (`programs.assert_compiled_matches`): ragged shapes (masked
stores, zero-filled copies), a batch, several wgmma blocks (64x128x64, 128x128x64, 128x256x64)
and fused epilogues (bias + relu, bias + gelu, a residual add) on wgmma's accumulator layout, and operands
whose rows are not 16-byte multiples (padded by graph-pad-matmul-operands). Without a GPU, the
backend's refusal of wgmma kernels for other architectures is checked, and that ragged rows take
wgmma once padded.
"""

from __future__ import annotations

import math
import re
import zlib

import ml_dtypes
import numpy as np
import pytest

import mlc
from mlc.backend import compile_to_ptx
from mlc.backend.errors import BackendError
from programs import assert_compiled_matches, lower, transposed_matmul_program

GPU = pytest.mark.gpu
WGMMA = "mlc-lower-to-gpu{arch=sm_90}"
TO_WGMMA_LOOPS = (
    "graph-decompose,graph-pad-matmul-operands{wgmma=true},graph-fuse{compute-model=gpu},graph-plan-memory,"
    "convert-graph-to-tile{wgmma=true},convert-tile-to-loop{tensor-cores=true wgmma=true}"
)
"""WGMMA's passes down to the loop level (the kernels and their products, without the slow rest)."""
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def tensor(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def program(a_shape: tuple[int, ...], b_shape: tuple[int, ...], element: str, epilogue: str = "") -> str:
    out = (*a_shape[:-2], a_shape[-2], b_shape[-1])
    a, b, c, bias = tensor(a_shape, element), tensor(b_shape, element), tensor(out, element), tensor(out[-1:], element)
    if epilogue.startswith("bias-"):
        return f"""func.func @main(%a: {a}, %b: {b}, %bias: {bias}) -> {c} {{
      %0 = graph.matmul %a, %b : ({a}, {b}) -> {c}
      %1 = graph.add %0, %bias : ({c}, {bias}) -> {c}
      %2 = graph.{epilogue.removeprefix("bias-")} %1 : {c}
      func.return %2 : {c}
    }}"""
    if epilogue == "residual":
        return f"""func.func @main(%a: {a}, %b: {b}, %r: {c}) -> {c} {{
      %0 = graph.matmul %a, %b : ({a}, {b}) -> {c}
      %1 = graph.add %0, %r : ({c}, {c}) -> {c}
      func.return %1 : {c}
    }}"""
    return f"""func.func @main(%a: {a}, %b: {b}) -> {c} {{
      %0 = graph.matmul %a, %b : ({a}, {b}) -> {c}
      func.return %0 : {c}
    }}"""


def inputs(text_id: str, shapes: list[tuple[int, ...]], element: str) -> list[np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(text_id.encode()))
    return [rng.standard_normal(shape).astype(NUMPY[element]) for shape in shapes]


CASES = [
    pytest.param((1000, 1000), (1000, 1000), "", id="1000x1000x1000"),
    pytest.param((4096, 4096), (4096, 4096), "", id="4096x4096x4096"),
    pytest.param((2048, 520), (520, 2048), "", id="2048x2048x520"),
    pytest.param((77, 136), (136, 200), "", id="77x200x136"),
    pytest.param((4, 128, 96), (96, 200), "", id="batch4-128x200x96"),
    pytest.param((1024, 1024), (1024, 1024), "bias-relu", id="1024-bias-relu"),
    pytest.param((300, 512), (512, 264), "residual", id="300x264x512-residual"),
    # The fp16 MLP's first kernel: accumulators rounded two at a time, products left in flight.
    pytest.param((260, 512), (512, 384), "bias-gelu", id="260x384x512-bias-gelu"),
    # Ragged rows (K = 131, N = 203): graph-pad-matmul-operands pads them to 16-byte multiples.
    pytest.param((300, 131), (131, 203), "", id="300x203x131-padded"),
    pytest.param((2, 64, 1023), (1023, 97), "bias-relu", id="batch2-64x97x1023-padded-bias-relu"),
]


@GPU
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("a_shape, b_shape, epilogue", CASES)
def test_wgmma_matmul(a_shape, b_shape, epilogue: str, element: str, request: pytest.FixtureRequest):
    text = program(a_shape, b_shape, element, epilogue)
    out = (*a_shape[:-2], a_shape[-2], b_shape[-1])
    extra = {"": [], "bias-relu": [out[-1:]], "bias-gelu": [out[-1:]], "residual": [out]}[epilogue]
    arrays = inputs(request.node.nodeid, [a_shape, b_shape, *extra], element)
    assert "wgmma.mma_async" in str(lower(text, WGMMA)), "the wgmma path did not apply"
    got = mlc.compile(text, device="cuda", pipeline=WGMMA)(*arrays)
    a, b = (x.astype(np.float64) for x in arrays[:2])
    product = a @ b
    if epilogue == "bias-relu":
        expected = np.maximum(product + arrays[2].astype(np.float64), 0)
    elif epilogue == "bias-gelu":
        biased = product + arrays[2].astype(np.float64)
        expected = 0.5 * biased * (1 + np.vectorize(math.erf)(biased / math.sqrt(2)))
    elif epilogue == "residual":
        expected = product + arrays[2].astype(np.float64)
    else:
        expected = product
    assert_compiled_matches(text, arrays, got, [expected])


@GPU
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize(
    "m, n, k, lhs_transposed", [(1024, 1024, 1024, False), (300, 264, 520, False), (1024, 1024, 1024, True), (304, 264, 520, True)]
)
def test_wgmma_reads_transposed_operands_in_place(m: int, n: int, k: int, lhs_transposed: bool, element: str, request: pytest.FixtureRequest):
    """transpose?(x) @ transpose(w) + bias, relu (the torch linear, w stored N x K; x stored K x M
    where transposed): one kernel, the weight staged K-major and read by wgmma without its B
    transpose, x staged M-major and read with its A transpose."""
    text = transposed_matmul_program((), m, k, n, lhs_transposed, True, element, True)
    arrays = inputs(request.node.nodeid, [(k, m) if lhs_transposed else (m, k), (n, k), (n,)], element)
    lowered = str(lower(text, WGMMA))
    assert "wgmma.mma_async" in lowered and f"p, 1, 1, {int(lhs_transposed)}, 0;" in lowered, "the operands are not read in place by wgmma"
    compiled = mlc.compile(text, device="cuda", pipeline=WGMMA)
    assert len(compiled.program.plan.launches) == 1
    got = compiled(*arrays)
    x = arrays[0].astype(np.float64).T if lhs_transposed else arrays[0].astype(np.float64)
    expected = np.maximum(x @ arrays[1].astype(np.float64).T + arrays[2].astype(np.float64), 0)
    assert_compiled_matches(text, arrays, got, [expected])


@GPU
def test_default_pipeline_takes_wgmma_on_sm90():
    """mlc.compile's default pipeline on an sm_90 device names its arch, so f16 matmuls take wgmma."""
    from mlc.runtime import get_device

    if get_device().arch != "sm_90":
        pytest.skip("not an sm_90 GPU")
    text = program((256, 256), (256, 256), "f16")
    compiled = mlc.compile(text, device="cuda")
    assert "arch=sm_90" in compiled.pipeline


def test_ragged_rows_take_wgmma_once_padded():
    """The odd shape of the benchmarks (here 95 rows): a copy kernel per operand, wgmma, a slice."""
    lowered = str(lower(program((95, 1023), (1023, 4097), "f16"), TO_WGMMA_LOOPS))
    assert "loop.wgmma" in lowered and "loop.mma_sync" not in lowered
    assert {"@main_0_concat", "@main_1_concat_concat", "@main_2_matmul", "@main_3_slice"} <= set(re.findall(r"@main_\w+", lowered))


def test_wgmma_kernels_are_refused_for_other_architectures():
    """A module lowered for sm_90 (wgmma) compiled for sm_80 is a BackendError naming the kernel."""
    module = lower(program((256, 256), (256, 256), "f16"), WGMMA)
    with pytest.raises(BackendError, match=r"kernel 'main_0_matmul' uses wgmma, which needs sm_90a .* the target is sm_80"):
        compile_to_ptx(module, "sm_80")
    assert ".target sm_90a" in compile_to_ptx(module, "sm_90")


TMA = "mlc-lower-to-gpu{arch=sm_90 tma=true}"
"""The opt-in TMA staging of the wgmma operands (bulk tensor copies on mbarriers, `tma_pipeline.py`)."""
TMA_CASES = [
    pytest.param((1024, 1024), (1024, 1024), "bias-relu", id="1024-bias-relu"),
    pytest.param((4096, 4096), (4096, 4096), "bias-relu", id="4096-bias-relu"),
    # Ragged M, N and K against the blocks (300 x 264 x 520): boxes zero-filled past the ends.
    pytest.param((300, 520), (520, 264), "bias-relu", id="300x264x520-bias-relu"),
    # Ragged rows padded by graph-pad-matmul-operands: the padded operand buffers are mapped.
    pytest.param((300, 131), (131, 203), "", id="300x203x131-padded"),
]


@GPU
@pytest.mark.parametrize("cuda_graph", [False, True], ids=["launches", "cuda-graph"])
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("a_shape, b_shape, epilogue", TMA_CASES)
def test_wgmma_matmul_with_bulk_tensor_copies(a_shape, b_shape, epilogue: str, element: str, cuda_graph: bool, request: pytest.FixtureRequest):
    """`mlc-lower-to-gpu{arch=sm_90 tma=true}`: the operands arrive by TMA through the tensor maps
    the runtime encodes (one per operand buffer and address; called twice, the second time on
    operands at new addresses), the results within the derived bound of numpy."""
    text = program(a_shape, b_shape, element, epilogue)
    lowered = str(lower(text, TMA))
    assert "cp.async.bulk.tensor.g2s" in lowered and "mlc.tensor_maps" in lowered, "the TMA path did not apply"
    compiled = mlc.compile(text, device="cuda", pipeline=TMA, cuda_graph=cuda_graph)
    out = (a_shape[-2], b_shape[-1])
    for call in range(2):
        arrays = inputs(f"{request.node.nodeid}-{call}", [a_shape, b_shape, *([out[-1:]] if epilogue else [])], element)
        got = compiled(*arrays)
        product = arrays[0].astype(np.float64) @ arrays[1].astype(np.float64)
        expected = np.maximum(product + arrays[2].astype(np.float64), 0) if epilogue else product
        assert_compiled_matches(text, arrays, got, [expected])


WARP_SPECIALIZED = "mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true}"


@GPU
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("a_shape, b_shape, epilogue", TMA_CASES)
def test_wgmma_matmul_with_warp_specialized_bulk_tensor_copies(a_shape, b_shape, epilogue: str, element: str, request: pytest.FixtureRequest):
    """`mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true}`: a producer warpgroup issues the
    bulk copies on full/empty mbarriers, the consumer warpgroups multiply (setmaxnreg 40 / 232, no
    bar.sync in the K loop); the results within the derived bound of numpy."""
    text = program(a_shape, b_shape, element, epilogue)
    lowered = str(lower(text, WARP_SPECIALIZED))
    assert "setmaxnreg.dec.sync.aligned.u32 40" in lowered, "the warp-specialized path did not apply"
    compiled = mlc.compile(text, device="cuda", pipeline=WARP_SPECIALIZED)
    arrays = inputs(request.node.nodeid, [a_shape, b_shape, *([b_shape[-1:]] if epilogue else [])], element)
    product = arrays[0].astype(np.float64) @ arrays[1].astype(np.float64)
    expected = np.maximum(product + arrays[2].astype(np.float64), 0) if epilogue else product
    assert_compiled_matches(text, arrays, compiled(*arrays), [expected])


STAGED_EPILOGUES = {"tma+ws": "mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true}"}
"""The opt-in staged epilogue (loop-stage-epilogue: each warp's band through shared memory, 16
bytes a lane) of the warp-specialized kernels (the option's only pipeline; beside cp.async and
plain TMA it passed these tests too, on an H100, before it was restricted for speed)."""


@GPU
@pytest.mark.parametrize("staging", list(STAGED_EPILOGUES))
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("a_shape, b_shape, epilogue", CASES)
def test_wgmma_matmul_with_staged_epilogue(a_shape, b_shape, epilogue: str, element: str, staging: str, request: pytest.FixtureRequest):
    """Every case of `test_wgmma_matmul` with `stage-epilogue=true` (batched kernels keep their
    fragment stores; the padded 300x203 product stores a 208-column buffer, whole 16-byte chunks):
    within the derived bound of the graph interpreter."""
    text = program(a_shape, b_shape, element, epilogue)
    staged = "mlc.staged_epilogue" in str(lower(text, TO_WGMMA_LOOPS + ",loop-stage-epilogue"))
    assert staged == (len(a_shape) == 2), "the staged epilogue did not apply where it should"
    out = (*a_shape[:-1], b_shape[-1])
    shapes = [a_shape, b_shape] + ([out[-1:]] if epilogue.startswith("bias-") else [out] if epilogue == "residual" else [])
    arrays = inputs(request.node.nodeid, shapes, element)
    got = mlc.compile(text, device="cuda", pipeline=STAGED_EPILOGUES[staging])(*arrays)
    assert_compiled_matches(text, arrays, got)


def test_bulk_tensor_copies_plan_their_maps():
    """Without a GPU: the TMA lowering's kernel declares one map per operand (64x64 boxes, 128-byte
    swizzle) that the runtime's plan accepts for the launched buffers, raising their alignment to
    16 bytes; the default pipeline keeps cp.async."""
    from mlc.runtime.plan import plan_host_function
    from mlc.runtime.slots import TensorMapParameter

    text = program((300, 520), (520, 264), "f16", "bias-relu")
    (launch,) = plan_host_function(lower(text, TMA)).launches
    assert launch.tensor_maps == (TensorMapParameter(0, (64, 64), 128), TensorMapParameter(1, (64, 64), 128))
    assert "cp.async.bulk.tensor" not in str(lower(text, WGMMA))


@GPU
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("m, n, k, lhs_transposed", [(1024, 1024, 1024, True), (304, 264, 520, False)])
def test_transposed_operands_with_bulk_tensor_copies(m: int, n: int, k: int, lhs_transposed: bool, element: str, request: pytest.FixtureRequest):
    """transpose?(x) @ transpose(w) + bias, relu through the TMA staging: the maps of the stored
    (transposed) layouts, read in place by wgmma."""
    text = transposed_matmul_program((), m, k, n, lhs_transposed, True, element, True)
    arrays = inputs(request.node.nodeid, [(k, m) if lhs_transposed else (m, k), (n, k), (n,)], element)
    assert "cp.async.bulk.tensor.g2s" in str(lower(text, TMA)), "the TMA path did not apply"
    got = mlc.compile(text, device="cuda", pipeline=TMA)(*arrays)
    x = arrays[0].astype(np.float64).T if lhs_transposed else arrays[0].astype(np.float64)
    expected = np.maximum(x @ arrays[1].astype(np.float64).T + arrays[2].astype(np.float64), 0)
    assert_compiled_matches(text, arrays, got, [expected])
