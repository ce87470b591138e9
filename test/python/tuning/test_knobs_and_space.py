"""Knob declarations (mlc/transforms/knobs.py), pruning and the search space (mlc/tuning/space.py)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from mlc.passes import build_pipeline
from mlc.transforms import all_passes
from mlc.transforms.knobs import KNOBS, MatmulShape, WorkloadFacts
from mlc.tuning.features import FEATURE_NAMES
from mlc.tuning.space import SearchSpace, config_from_key, config_key

from .tuning_programs import ADD, MATMUL, workload

SQUARE_F32 = WorkloadFacts(4096 * 4096, (MatmulShape(1, 4096, 4096, 4096, 4),))
SQUARE_F16 = WorkloadFacts(4096 * 4096, (MatmulShape(1, 4096, 4096, 4096, 2),))


@pytest.mark.parametrize("pass_name", sorted(KNOBS))
def test_every_knob_is_an_option_of_its_pass_and_its_default_comes_first(pass_name: str):
    pass_class = all_passes()[pass_name]()
    defaults = {f.name: f.default for f in dataclasses.fields(pass_class)}
    for knob in KNOBS[pass_name]:
        assert knob.field in defaults, f"{pass_name} has no option {knob.option}"
        for facts in (SQUARE_F32, WorkloadFacts(100)):
            values = knob.values(facts)
            assert values[0] == defaults[knob.field], knob.option
            assert len(set(values)) == len(values)
            pass_class(**{knob.field: values[-1]})  # every value is accepted by the pass


def test_pruning_names_the_limit_per_target():
    space = SearchSpace.from_facts(SQUARE_F32, "cuda")
    config = {**space.heuristic(), "convert-graph-to-tile.matmul-tile": (128, 256, 32)}
    assert "shared memory" in space.invalid(config)  # 48 KiB of f32 operand tiles and their padding
    f16 = SearchSpace.from_facts(SQUARE_F16, "cuda")
    assert f16.invalid({**f16.heuristic(), "convert-graph-to-tile.matmul-tile": (128, 256, 32)}) is None
    cpu = SearchSpace.from_facts(SQUARE_F32, "cpu")
    # The CPU's matmul blocks hold no registers (convert-tile-dot-to-cpu's micro-kernels do).
    assert cpu.invalid({**cpu.heuristic(), "convert-graph-to-tile.matmul-tile": (128, 256, 16)}) is None
    assert "accumulators" in cpu.invalid({**cpu.heuristic(), "convert-tile-dot-to-cpu.micro-kernel": (16, 32, 16)})
    for each in (space, f16, cpu):
        assert each.invalid(each.heuristic()) is None
        assert "not a legal value" in each.invalid({**each.heuristic(), "convert-graph-to-tile.elements-per-program": 3})


def test_the_space_follows_the_workload_and_the_target():
    add = SearchSpace.of(workload(ADD).module, "cpu")
    names = {d.name for d in add.dimensions}
    assert "convert-graph-to-tile.matmul-tile" not in names  # no matmul: nothing to choose
    assert "convert-graph-to-tile.num-warps" not in names  # GPU only
    elements = next(d.values for d in add.dimensions if "elements-per" in d.name)
    assert max(elements) == 2048 and max(elements[1:]) <= add.facts.largest_elements  # beyond it: the same tile
    matmul = SearchSpace.of(workload(MATMUL).module, "cuda")
    blocks = next(d.values for d in matmul.dimensions if d.name.endswith("matmul-tile"))
    assert blocks[0] == () and all(b[0] <= 16 and b[1] <= 32 and b[2] <= 32 for b in blocks[1:])
    assert "convert-graph-to-tile.num-warps" in {d.name for d in matmul.dimensions}


def test_knobs_without_a_kernel_to_act_on_leave_the_space():
    """A lone matmul has no elementwise kernel (its block size and warps would all make the same
    program); a workload without a matmul promotes no tiles (no stages to choose)."""
    bare = workload(MATMUL.replace("%r = graph.relu %p : tensor<16x24xf32>", "").replace("return %r", "return %p"))
    names = {d.name for d in SearchSpace.of(bare.module, "cuda").dimensions}
    assert "convert-graph-to-tile.matmul-tile" in names and "loop-promote-shared.stages" in names
    assert "convert-graph-to-tile.elements-per-program" not in names and "convert-graph-to-tile.num-warps" not in names
    on_cpu = {d.name for d in SearchSpace.of(bare.module, "cpu").dimensions}
    assert not any(name.startswith("convert-tile-rows-to-cpu") for name in on_cpu)
    add = {d.name for d in SearchSpace.of(workload(ADD).module, "cuda").dimensions}
    assert "convert-graph-to-tile.num-warps" in add and "loop-promote-shared.stages" not in add


def test_the_space_tunes_the_pipeline_mlc_compile_runs_on_the_device(monkeypatch):
    """On an sm_90 GPU mlc.compile lowers f16 matmuls with wgmma: so does every configuration."""
    from mlc.tuning import space as space_module

    monkeypatch.setattr(space_module, "device_arch", lambda target: "sm_90" if target == "cuda" else "")
    hopper = SearchSpace.of(workload(MATMUL).module, "cuda")
    assert "wgmma=true" in hopper.pipeline(hopper.heuristic())
    monkeypatch.setattr(space_module, "device_arch", lambda target: "")
    generic = SearchSpace.of(workload(MATMUL).module, "cuda")
    assert "wgmma" not in generic.pipeline(generic.heuristic())


def test_a_configuration_is_a_replayable_pipeline():
    space = SearchSpace.of(workload(MATMUL).module, "cpu")
    assert space.pipeline(space.heuristic()) == space.pipeline({})  # the heuristic sets nothing
    config = {**space.heuristic(), "convert-graph-to-tile.matmul-tile": (16, 16, 8)}
    pipeline = space.pipeline(config)
    assert "matmul-tile=16,16,8" in pipeline  # with the CPU pipeline's own target=cpu beside it
    passes = build_pipeline(pipeline, all_passes(), mlir_syntax=True)
    assert next(p for p in passes if p.name == "convert-graph-to-tile").matmul_tile == (16, 16, 8)
    assert config_from_key(config_key(config)) == config


def test_moves_stay_in_the_space():
    space = SearchSpace.of(workload(MATMUL).module, "cpu")
    rng = random.Random(1)
    first, second = space.random(rng), space.random(rng)
    for config in (space.mutate(first, rng), space.crossover(first, second, rng)):
        assert set(config) == set(first)
        assert all(config[d.name] in d.values for d in space.dimensions)
    mutated = space.mutate(first, rng)
    assert sum(mutated[name] != first[name] for name in first) == 1


def test_the_store_kind_is_tuned_where_the_streams_approach_the_last_level_cache(monkeypatch):
    """nontemporal-stores (auto / on / off) joins the CPU space on an x86 host once a workload's
    largest tensor, read and written, fills half of the last-level cache; below that, and off x86,
    auto is the only value. A chosen kind is a replayable option, and each kind encodes as its
    own feature."""
    from mlc.transforms import knobs
    from mlc.tuning.features import feature_vector

    name = "convert-tile-rows-to-cpu.nontemporal-stores"
    monkeypatch.setattr(knobs, "host_last_level_cache_bytes", lambda: 32 << 20)
    monkeypatch.setattr(knobs, "is_x86_host", lambda: True)
    large, small = WorkloadFacts(2 << 20), WorkloadFacts((2 << 20) - 1)  # 2 streams of 8 MiB: half the cache
    space = SearchSpace.from_facts(large, "cpu")
    assert next(d.values for d in space.dimensions if d.name == name) == ("auto", "on", "off")
    assert name not in {d.name for d in SearchSpace.from_facts(small, "cpu").dimensions}
    assert name not in {d.name for d in SearchSpace.from_facts(large, "cuda").dimensions}
    config = {**space.heuristic(), name: "on"}
    assert space.invalid(config) is None and config_from_key(config_key(config)) == config
    passes = build_pipeline(space.pipeline(config), all_passes(), mlir_syntax=True)
    assert next(p for p in passes if p.name == "convert-tile-rows-to-cpu").nontemporal_stores == "on"
    features = dict.fromkeys(FEATURE_NAMES, 1.0)
    encoded = {kind: tuple(feature_vector(features, {**config, name: kind}, space)) for kind in ("auto", "on", "off")}
    assert len(set(encoded.values())) == 3
    monkeypatch.setattr(knobs, "is_x86_host", lambda: False)
    assert name not in {d.name for d in SearchSpace.from_facts(large, "cpu").dimensions}


HOPPER_F16 = WorkloadFacts(2048 * 2048, (MatmulShape(1, 2048, 2048, 2048, 2),), other_kernels=False, arch="sm_90")
WGMMA_TILE = "convert-graph-to-tile.matmul-tile"
STAGES = "loop-promote-shared.stages"


def test_on_hopper_f16_matmuls_search_wgmma_blocks_and_their_stages():
    """The wgmma lowering's blocks (K steps of 64 and 128, whole warpgroups) join mma.sync's; the
    prune rules keep the stages it can lower: at least 3, all of them within its shared memory."""
    hopper = SearchSpace.from_facts(HOPPER_F16, "cuda")
    blocks = next(d.values for d in hopper.dimensions if d.name == WGMMA_TILE)
    assert (128, 256, 64) in blocks and (256, 256, 64) in blocks and (64, 64, 128) in blocks and (128, 128, 32) in blocks
    generic = SearchSpace.from_facts(dataclasses.replace(HOPPER_F16, arch=""), "cuda")
    assert all(b[2] <= 32 for b in next(d.values for d in generic.dimensions if d.name == WGMMA_TILE)[1:])
    valid = lambda **knobs: hopper.invalid({**hopper.heuristic(), **knobs})  # noqa: E731
    assert valid(**{WGMMA_TILE: (128, 256, 64), STAGES: 4}) is None  # 192 KiB of stages, 33 KiB of staged epilogue
    assert "264192 bytes of shared memory" in valid(**{WGMMA_TILE: (256, 256, 64), STAGES: 3})  # with 66 KiB of staged epilogue
    assert "279552 bytes of shared memory" in valid(**{WGMMA_TILE: (128, 256, 64), STAGES: 5})
    assert "at least 3" in valid(**{STAGES: 2})  # the heuristic's block is a wgmma block
    assert valid(**{WGMMA_TILE: (128, 128, 32), STAGES: 2}) is None  # mma.sync's: 2 stages lower
    assert "3 stages of the operand tiles" in valid(**{WGMMA_TILE: (256, 256, 128)})
    # A K that one wgmma step covers has no K loop to pipeline: no wgmma block is offered.
    shallow = dataclasses.replace(HOPPER_F16, matmuls=(MatmulShape(1, 2048, 2048, 64, 2),))
    assert all(b[2] < 64 for b in next(d.values for d in SearchSpace.from_facts(shallow, "cuda").dimensions if d.name == WGMMA_TILE)[1:])


def test_a_wgmma_configuration_at_the_shared_memory_limit_lowers():
    block, stages = (128, 256, 64), 4  # 192 KiB of stages and 33 KiB of staged epilogue
    from mlc.compiler import lower

    tuned = workload(MATMUL.replace("16x32", "256x512").replace("32x24", "512x256").replace("16x24", "256x256").replace("f32", "f16"))
    space = SearchSpace.of(tuned.module, "cuda", arch="sm_90")
    config = {**space.heuristic(), WGMMA_TILE: block, STAGES: stages}
    assert space.invalid(config) is None
    lowered = tuned.module.clone()
    lower(lowered, space.pipeline(config))
    assert "wgmma" in str(lowered)


def test_reductions_are_tuned_through_their_own_warps():
    """A reduction kernel's warps are `reduction-warps` (num-warps sizes elementwise kernels only:
    a lone row sum has none), and the option reaches the kernel."""
    from mlc.compiler import lower

    row_sum = workload(
        'func.func @main(%x: tensor<64x256xf32>) -> tensor<64xf32> {\n'
        '  %s = "graph.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<64x256xf32>) -> tensor<64xf32>\n'
        "  func.return %s : tensor<64xf32>\n}\n"
    )
    space = SearchSpace.of(row_sum.module, "cuda")
    names = {d.name for d in space.dimensions}
    assert "convert-graph-to-tile.reduction-warps" in names and "convert-graph-to-tile.num-warps" not in names
    assert "convert-graph-to-tile.reduction-warps" not in {d.name for d in SearchSpace.of(workload(ADD).module, "cuda").dimensions}
    for warps in (1, 2):
        lowered = row_sum.module.clone()
        lower(lowered, "builtin.module(graph-decompose,convert-graph-to-tile{reduction-warps=%d elements-per-program=256})" % warps)
        assert f"num_warps {warps} {{" in str(lowered)
