"""f32 matmuls of precision tf32 and 3xtf32 run on tensor cores on the GPU and agree with numpy
within the bound their precision allows (`error_bounds`: each operand within one TF32 ulp, three
products per term for 3xtf32; `test_tf32_equivalence.py` checks the lowering without a GPU). The
`gpu` cases cover ragged shapes (masked loads, stores and copies), the large pipelined block, a
batch and a fused epilogue; a GPU without TF32 tensor cores refuses them. On Hopper
(`mlc-lower-to-gpu{arch=sm_90}`) tf32 products whose K allows it run as TF32 warpgroup products
(`wgmma.mma_async ... .tf32.tf32` on a K-major B: the torch linear's stored weight, a row-major
B through graph-transpose-tf32-rhs's transpose kernel, or, for a plain product on a row-major B,
the product computed transposed, C^T = B^T A^T, `mlc.swap_operands`, with B's block loaded into
wgmma's A registers), asserted to be on that path; the tensor core truncates their operands,
which the same bound allows.
"""

from __future__ import annotations


import numpy as np
import pytest

import mlc
from mlc.compiler import HOPPER_STAGING
from programs import assert_compiled_matches, lower, transposed_matmul_program

GPU = pytest.mark.gpu
PRECISIONS = ["tf32", "3xtf32"]
WGMMA = "mlc-lower-to-gpu{arch=sm_90}"
HOPPER_DEFAULT = HOPPER_DEFAULT_SWAP = "mlc-lower-to-gpu{arch=sm_90 " + " ".join(HOPPER_STAGING) + "}"
"""What `mlc.compile` runs on an sm_90 GPU: TMA, a producer warpgroup, the staged epilogue, plain
TF32 products on a row-major B computed transposed (`tf32-swap=true`)."""
HOPPER_TRANSPOSED = HOPPER_DEFAULT.replace(" tf32-swap=true", "")
"""The same without `tf32-swap`: a row-major B through a transpose kernel, then the K-major product."""
SWAP = WGMMA.replace("}", " tf32-swap=true}")
"""The cp.async pipeline with `tf32-swap=true`."""


def tensor(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def program(a_shape: tuple[int, ...], b_shape: tuple[int, ...], precision: str, epilogue: bool = False) -> str:
    out = (*np.broadcast_shapes(a_shape[:-2], b_shape[:-2]), a_shape[-2], b_shape[-1])
    a, b, c, bias = tensor(a_shape), tensor(b_shape), tensor(out), tensor(out[-1:])
    body = f'%0 = graph.matmul %a, %b {{precision = "{precision}"}} : ({a}, {b}) -> {c}'
    result = "%0"
    if epilogue:
        body += f"\n      %1 = graph.add %0, %bias : ({c}, {bias}) -> {c}\n      %2 = graph.relu %1 : {c}"
        result = "%2"
    parameters = f"%a: {a}, %b: {b}" + (f", %bias: {bias}" if epilogue else "")
    return f"""func.func @main({parameters}) -> {c} {{
      {body}
      func.return {result} : {c}
    }}"""


SHAPES = [
    pytest.param((1, 1), (1, 1), id="1x1x1"),
    pytest.param((17, 65), (65, 33), id="17x33x65"),
    pytest.param((1000, 1000), (1000, 1000), id="1000x1000x1000"),
    pytest.param((2048, 520), (520, 2048), id="2048x2048x520"),
    pytest.param((4, 128, 96), (4, 96, 200), id="batch4-128x200x96"),
]


@GPU
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_tf32_matmul_on_the_gpu(precision: str, a_shape, b_shape, rng: np.random.Generator):
    a, b = (rng.standard_normal(shape).astype(np.float32) for shape in (a_shape, b_shape))
    text = program(a_shape, b_shape, precision)
    got = mlc.compile(text, device="cuda")(a, b)
    assert_compiled_matches(text, [a, b], got, [np.matmul(a.astype(np.float64), b.astype(np.float64))])


@GPU
@pytest.mark.parametrize("precision", PRECISIONS)
def test_tf32_matmul_with_epilogue_and_the_compile_option(precision: str, rng: np.random.Generator):
    """`mlc.compile(precision=...)` reaches a matmul that states none; bias and relu stay fused."""
    a, b, bias = (rng.standard_normal(shape).astype(np.float32) for shape in ((300, 130), (130, 260), (260,)))
    stated = program((300, 130), (130, 260), precision, epilogue=True)
    unstated = stated.replace(f' {{precision = "{precision}"}}', "")
    got = mlc.compile(unstated, device="cuda", precision=precision)(a, b, bias)
    expected = np.maximum(np.matmul(a.astype(np.float64), b.astype(np.float64)) + bias, 0)
    assert_compiled_matches(stated, [a, b, bias], got, [expected])
    if precision == "tf32":  # TF32 is measurably coarser than f32: the bound is not IEEE's
        assert np.max(np.abs(got - expected)) > 1e-4 * np.max(np.abs(expected))


def test_tf32_on_a_gpu_without_tensor_cores_is_refused(monkeypatch: pytest.MonkeyPatch):
    """Before sm_80 there is no TF32 mma: the matmul is a LoweringError naming it and the target."""
    import mlc.runtime
    from mlc.compiler import compile as compile_source

    class Turing:
        name, arch = "Tesla T4", "sm_75"

    monkeypatch.setattr(mlc.runtime, "get_device", lambda: Turing())
    monkeypatch.setattr("mlc.compiler.resolve_device", lambda device: "cuda")
    with pytest.raises(mlc.LoweringError, match=r"'graph.matmul' op precision 'tf32' cannot be honoured on target 'cuda'.*TF32 needs tensor cores"):
        compile_source(program((40, 20), (20, 24), "tf32"), device="cuda")


WGMMA_CASES = [
    pytest.param((1024, 1024), (1024, 1024), False, WGMMA, id="1024^3"),
    pytest.param((1024, 1024), (1024, 1024), False, SWAP, id="1024^3-swapped"),
    pytest.param((1024, 1024), (1024, 1024), False, HOPPER_DEFAULT_SWAP, id="1024^3-swapped-default"),
    pytest.param((2048, 520), (520, 2048), False, HOPPER_TRANSPOSED, id="2048x2048x520-transposed-default"),
    pytest.param((2048, 520), (520, 2048), False, HOPPER_DEFAULT_SWAP, id="2048x2048x520-swapped-default"),
    pytest.param((2048, 520), (520, 2048), False, "mlc-lower-to-gpu{arch=sm_90 tma=true tf32-swap=true}", id="2048x2048x520-swapped-tma"),
    pytest.param((333, 516), (516, 252), False, HOPPER_DEFAULT_SWAP, id="333x252x516-ragged-swapped-default"),
    pytest.param((333, 516), (516, 250), False, SWAP, id="333x250x516-ragged"),
    pytest.param((300, 520), (520, 260), True, SWAP, id="300x260x520-bias-relu"),
]


@GPU
@pytest.mark.parametrize("a_shape, b_shape, epilogue, pipeline", WGMMA_CASES)
def test_tf32_on_wgmma(a_shape, b_shape, epilogue: bool, pipeline: str, rng: np.random.Generator):
    """A row-major B: with `tf32-swap=true` computed transposed (one kernel, B's block in wgmma's A
    registers: 2048 x 2048 x 520 has two consumer warpgroups, a ragged K and, in the lockstep TMA
    pipeline, was wrong before the register loads waited for the previous products) where N is a
    multiple of 4 and no epilogue reads the product, else one transpose kernel, then the TF32
    warpgroup products on its K-major copy."""
    from mlc.runtime import get_device

    if get_device().arch != "sm_90":
        pytest.skip("not an sm_90 GPU")
    text = program(a_shape, b_shape, "tf32", epilogue)
    lowered = str(lower(text, pipeline))
    swapped = "tf32-swap=true" in pipeline and not epilogue and b_shape[-1] % 4 == 0
    assert ".tf32.tf32" in lowered, "the TF32 wgmma path did not apply"
    assert ("mlc.swap_operands" in lowered) == swapped
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in (a_shape, b_shape, *([b_shape[-1:]] if epilogue else []))]
    compiled = mlc.compile(text, device="cuda", pipeline=pipeline)
    assert len(compiled.program.plan.launches) == (1 if swapped else 2)  # (the transpose of B,) the product
    got = compiled(*arrays)
    expected = np.matmul(arrays[0].astype(np.float64), arrays[1].astype(np.float64))
    if epilogue:
        expected = np.maximum(expected + arrays[2], 0)
    assert_compiled_matches(text, arrays, got, [expected])


@GPU
@pytest.mark.parametrize("m, n, k", [(1024, 1024, 1024), (300, 264, 520)])
def test_tf32_linear_on_wgmma(m: int, n: int, k: int, rng: np.random.Generator):
    """x @ transpose(w) + bias, relu (the torch linear, w stored N x K): one kernel, w read K-major."""
    from mlc.runtime import get_device

    if get_device().arch != "sm_90":
        pytest.skip("not an sm_90 GPU")
    text = transposed_matmul_program((), m, k, n, False, True, "f32", True).replace("%wt : (", '%wt {precision = "tf32"} : (')
    assert ".tf32.tf32" in str(lower(text, WGMMA)), "the TF32 wgmma path did not apply"
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((m, k), (n, k), (n,))]
    compiled = mlc.compile(text, device="cuda", pipeline=WGMMA)
    assert len(compiled.program.plan.launches) == 1
    got = compiled(*arrays)
    expected = np.maximum(arrays[0].astype(np.float64) @ arrays[1].astype(np.float64).T + arrays[2], 0)
    assert_compiled_matches(text, arrays, got, [expected])
