"""Knob declarations (mlc/transforms/knobs.py), pruning and the search space (mlc/tuning/space.py)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from mlc.passes import build_pipeline
from mlc.transforms import all_passes
from mlc.transforms.knobs import KNOBS, MatmulShape, WorkloadFacts
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
    add = {d.name for d in SearchSpace.of(workload(ADD).module, "cuda").dimensions}
    assert "convert-graph-to-tile.num-warps" in add and "loop-promote-shared.stages" not in add


def test_the_space_tunes_the_pipeline_mlc_compile_runs_on_the_device(monkeypatch):
    """On an sm_90 GPU mlc.compile lowers f16 matmuls with wgmma: so does every configuration."""
    from mlc.tuning import space as space_module

    monkeypatch.setattr(space_module, "_device_arch", lambda target: "sm_90" if target == "cuda" else "")
    hopper = SearchSpace.of(workload(MATMUL).module, "cuda")
    assert "wgmma=true" in hopper.pipeline(hopper.heuristic())
    monkeypatch.setattr(space_module, "_device_arch", lambda target: "")
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
