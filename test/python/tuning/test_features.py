"""The cost model's features on known loop nests (mlc/tuning/features.py) and the model itself."""

from __future__ import annotations

import random

import pytest

from mlc.transforms.lowering.cpu_micro_kernel import host_vector_width
from mlc.tuning.cost_model import CostModel
from mlc.tuning.features import extract, loop_level, module_features
from mlc.tuning.space import SearchSpace

from .tuning_programs import ADD, MATMUL, workload


def test_elementwise_add_counts():
    module = workload(ADD).module
    space = SearchSpace.of(module, "cpu")
    lowered, _ = loop_level(module, space, {**space.heuristic(), "convert-graph-to-tile.elements-per-program": 256})
    features = module_features(lowered, "cpu")
    # 1024 additions in 4 programs of 256 elements; on the CPU (convert-tile-rows-to-cpu) each
    # program is one loop over vectors of the host's width.
    assert features["flops"] == 1024
    assert features["global_load_bytes"] == 2 * 1024 * 4 and features["global_store_bytes"] == 1024 * 4
    assert (features["programs"], features["threads_per_program"], features["vector_lanes"]) == (4, 1, host_vector_width())
    assert features["kernels"] == 1 and features["shared_bytes"] == 0


def test_matmul_counts_follow_the_block():
    module = workload(MATMUL).module
    space = SearchSpace.of(module, "cpu")
    heuristic = module_features(loop_level(module, space, space.heuristic())[0], "cpu")
    small = module_features(loop_level(module, space, {**space.heuristic(), "convert-graph-to-tile.matmul-tile": (16, 16, 8)})[0], "cpu")
    # 16x24 outputs, 32 fma each (2 flops), over padded blocks: 16x32 (heuristic) and 16x16 ones.
    assert heuristic["flops"] >= 16 * 24 * 32 * 2 and small["flops"] >= 16 * 24 * 32 * 2
    assert (heuristic["programs"], small["programs"]) == (1, 2)
    assert small["accumulators"] > 0 and small["reuse"] > 0


def test_same_program_same_fingerprint():
    module = workload(MATMUL).module
    space = SearchSpace.of(module, "cpu")
    base = space.heuristic()
    _, first = extract(module, space, base)
    # The only kernel is the matmul: elements-per-program acts on nothing.
    _, same = extract(module, space, {**base, "convert-graph-to-tile.elements-per-program": 256})
    _, other = extract(module, space, {**base, "convert-graph-to-tile.matmul-tile": (16, 16, 8)})
    assert first == same != other


def test_cost_model_learns_a_ranking():
    rng = random.Random(0)
    model = CostModel(seed=0)
    assert model.predict([[1.0, 2.0]]) == [0.0]  # untrained: no preference
    for _ in range(40):
        x, y = rng.uniform(0, 4), rng.uniform(0, 4)
        model.add([x, y], 2.0 ** (x - 2))  # cost grows with the first feature only
    model.add([9.0, 9.0], None)  # a failure is taught as worse than anything seen
    model.fit()
    fast, slow = model.predict([[0.5, 3.0], [3.5, 0.5]])
    assert fast < slow


def test_a_missing_optional_dependency_names_the_extra():
    import pytest

    from mlc.tuning.optional import MissingExtraError, require

    with pytest.raises(MissingExtraError, match=r"not installed: it comes with mlc's 'tune' extra \(pip install 'mlc\[tune\]'\)"):
        require("mlc_no_such_module")


def test_tensor_core_kernels_count_mma_and_ldmatrix():
    """The cuda target's space and features need no GPU: its loop level is IR like the CPU's."""
    text = MATMUL.replace("f32", "f16").replace("16x32", "32x32").replace("16x24", "32x24")
    module = workload(text).module
    space = SearchSpace.of(module, "cuda")
    features = module_features(loop_level(module, space, space.heuristic())[0], "cuda")
    # 32x24 outputs over K = 32 on m16n8k16 tensor-core steps (padded to whole blocks: at least).
    assert features["flops"] >= 2 * 32 * 24 * 32
    assert features["global_load_bytes"] >= (32 * 32 + 32 * 24) * 2  # ldmatrix fragments


def test_every_value_of_every_knob_has_a_feature_vector():
    # The heuristic lowers on both targets, and each knob value encodes as finite numbers: the
    # async-copy stages knob's 0 ("the kernel's own choice") once broke the encoding on the GPU.
    import math

    from mlc.tuning.features import feature_vector

    for text in (ADD, MATMUL.replace("f32", "f16")):
        module = workload(text).module
        for target in ("cpu", "cuda"):
            space = SearchSpace.of(module, target)
            heuristic = space.heuristic()
            features = module_features(loop_level(module, space, heuristic)[0], target)
            for dimension in space.dimensions:
                for value in dimension.values:
                    numbers = feature_vector(features, {**heuristic, dimension.name: value}, space)
                    assert all(math.isfinite(number) for number in numbers), (target, dimension.name, value)


def test_wgmma_kernels_count_their_warpgroup_products():
    """On sm_90 an f16 matmul's wgmma kernel has the same flops as its mma.sync one, and reads its
    operand blocks from global memory (before loop-promote-shared stages them)."""
    text = MATMUL.replace("f32", "f16").replace("16x32", "128x256").replace("32x24", "256x128").replace("16x24", "128x128")
    module = workload(text).module
    hopper = SearchSpace.of(module, "cuda", arch="sm_90")
    wgmma = module_features(loop_level(module, hopper, {**hopper.heuristic(), "convert-graph-to-tile.matmul-tile": (64, 128, 64)})[0], "cuda")
    mma = module_features(loop_level(module, hopper, {**hopper.heuristic(), "convert-graph-to-tile.matmul-tile": (64, 128, 32)})[0], "cuda")
    assert wgmma["flops"] >= 2 * 128 * 128 * 256 and wgmma["flops"] == mma["flops"]
    assert wgmma["global_load_bytes"] >= (128 * 256 + 256 * 128) * 2


def test_an_extraction_process_lowers_for_the_searchs_arch_without_opening_a_device(monkeypatch):
    """`extract_from_text` with the search's `arch` (what the measurers send) never asks for the
    device, and gives what extracting in the search's own process gives."""
    from mlc.tuning import space as space_module
    from mlc.tuning.features import extract_from_text

    module = workload(MATMUL).module
    space = SearchSpace.of(module, "cuda", "sm_90")
    configs = [space.heuristic(), space.random(random.Random(0))]
    monkeypatch.setattr(space_module, "device_arch", lambda target: pytest.fail("an extraction opened the device"))
    assert extract_from_text(str(module), "cuda", configs, "sm_90") == [extract(module, space, c) for c in configs]
