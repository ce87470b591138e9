"""The search space of one workload on one target: the knobs of the device's pipeline.

`SearchSpace.of(module, target)` reads the passes of the target's pipeline (`mlc-lower-to-cpu` /
`mlc-lower-to-gpu`), keeps the knobs of `mlc/transforms/knobs.py` declared for them on that
target, and evaluates their legal values on the workload's facts (the graph after the exact graph
passes and `graph-decompose`, so a conv2d's im2col matmul counts as a matmul). A knob with one
legal value is left out (there is nothing to choose).

A configuration (`Config`) maps `pass-name.option` to a value; the heuristic configuration (every
knob at its pass's default) is `space.heuristic()`. `space.pipeline(config)` spells the device's
pipeline with those options set, in MLIR syntax: what `mlc.compile(pipeline=...)` and
`mlc-opt --pass-pipeline` take, so a tuned configuration is replayable text. `space.invalid(config)` says why a
configuration cannot run (each knob's prune rule, then `knobs.RULES` over several knobs: a wgmma
block's stages), before anything is measured.

`mutate` and `crossover` are the evolutionary search's moves (one knob to another legal value; each
knob from either parent); `random` samples uniformly per knob. All take a `random.Random`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from mlc.transforms.knobs import KNOBS, RULES, Knob, Value, WorkloadFacts

Config = Mapping[str, Value]
GRAPH_PREFIX = "graph-simplify,graph-fold-constants,cse,graph-decompose"
"""The exact graph passes run before reading the workload's facts (the pipeline's own start)."""


def default_pipeline(target: str, precision: str | None = None, arch: str | None = None) -> str:
    """The pipeline `mlc.compile` runs for `target` on a GPU of `arch` (None: this machine's; on
    an sm_90 GPU, the wgmma lowering); without a GPU, the generic GPU pipeline (what such a
    machine can lower)."""
    from mlc.compiler import default_pipeline_for

    return default_pipeline_for(target, device_arch(target) if arch is None else arch, precision)


def device_arch(target: str) -> str:
    """The architecture of this machine's GPU for 'cuda' ('' without one, and for the CPU). Asking
    opens the device (a CUDA context) in this process."""
    if target != "cuda":
        return ""
    from mlc.errors import CudaError
    from mlc.runtime import get_device

    try:
        return get_device().arch
    except CudaError:
        return ""


def config_key(config: Config) -> str:
    """The canonical text of a configuration (sorted JSON): its identity in the database."""
    return json.dumps({name: list(value) if isinstance(value, tuple) else value for name, value in sorted(config.items())})


def config_from_key(text: str) -> dict[str, Value]:
    return {name: tuple(value) if isinstance(value, list) else value for name, value in json.loads(text).items()}


def describe(config: Config) -> str:
    """`pass.option=value` items for people (tuples as `a,b,c`, the heuristic's () as 'heuristic')."""
    def spell(value: Value) -> str:
        if isinstance(value, tuple):
            return ",".join(map(str, value)) or "heuristic"
        return str(value)

    return " ".join(f"{name}={spell(value)}" for name, value in sorted(config.items())) or "(no knobs)"


@dataclass(frozen=True)
class Dimension:
    """One knob of the space with its legal values for this workload (the default first)."""

    pass_name: str
    knob: Knob
    values: tuple[Value, ...]

    @property
    def name(self) -> str:
        return f"{self.pass_name}.{self.knob.option}"


@dataclass(frozen=True)
class SearchSpace:
    target: str
    facts: WorkloadFacts
    dimensions: tuple[Dimension, ...]

    @classmethod
    def of(cls, module: ModuleOp, target: str, arch: str | None = None) -> SearchSpace:
        """The space of `module` on `target`, for a GPU of `arch` (None: this machine's GPU)."""
        arch = device_arch(target) if arch is None else arch
        facts = WorkloadFacts.of(_decomposed(module), arch)
        return cls.from_facts(facts, target)

    @classmethod
    def from_facts(cls, facts: WorkloadFacts, target: str) -> SearchSpace:
        dimensions = []
        for module_pass in _pipeline_passes(target, arch=facts.arch):
            for knob in KNOBS.get(module_pass.name, ()):
                values = knob.values(facts) if target in knob.targets else ()
                if len(values) > 1:
                    dimensions.append(Dimension(module_pass.name, knob, tuple(values)))
        return cls(target, facts, tuple(dimensions))

    def heuristic(self) -> dict[str, Value]:
        return {dimension.name: dimension.values[0] for dimension in self.dimensions}

    def size(self) -> int:
        count = 1
        for dimension in self.dimensions:
            count *= len(dimension.values)
        return count

    def invalid(self, config: Config) -> str | None:
        """Why `config` cannot run on the target (a knob's prune rule), or None."""
        for dimension in self.dimensions:
            value = config[dimension.name]
            if value not in dimension.values:
                return f"{dimension.name}={value} is not a legal value"
            if dimension.knob.prune is not None and (reason := dimension.knob.prune(value, self.facts, self.target)):
                return f"{dimension.name}: {reason}"
        return next((reason for rule in RULES if (reason := rule(config, self.facts, self.target))), None)

    def random(self, rng: random.Random) -> dict[str, Value]:
        return {dimension.name: rng.choice(dimension.values) for dimension in self.dimensions}

    def mutate(self, config: Config, rng: random.Random) -> dict[str, Value]:
        """`config` with one knob moved to another of its legal values."""
        mutated = dict(config)
        if self.dimensions:
            dimension = rng.choice(self.dimensions)
            mutated[dimension.name] = rng.choice([v for v in dimension.values if v != config[dimension.name]])
        return mutated

    def crossover(self, first: Config, second: Config, rng: random.Random) -> dict[str, Value]:
        return {d.name: (first if rng.random() < 0.5 else second)[d.name] for d in self.dimensions}

    def valid_configs(self) -> Iterator[dict[str, Value]]:
        """Every valid configuration (for small spaces: exhaustive search, tests)."""
        import itertools

        for values in itertools.product(*(d.values for d in self.dimensions)):
            config = {d.name: v for d, v in zip(self.dimensions, values)}
            if self.invalid(config) is None:
                yield config

    def pipeline(self, config: Config, precision: str | None = None) -> str:
        """The target's pipeline with `config`'s options set, in MLIR syntax (see the docstring)."""
        from mlc.passes import format_pipeline

        options: dict[str, dict[str, Value]] = {}
        for name, value in config.items():
            pass_name, _, option = name.partition(".")
            options.setdefault(pass_name, {})[option.replace("-", "_")] = value
        passes = [
            dataclasses.replace(p, **options[p.name]) if p.name in options else p
            for p in _pipeline_passes(self.target, precision, self.facts.arch)
        ]
        return format_pipeline(passes)


@functools.lru_cache(maxsize=16)
def _pipeline_passes(target: str, precision: str | None = None, arch: str = "") -> tuple:
    """The target's default passes (frozen pass objects, never changed: `pipeline` replaces them).
    Memoized: building them parses every pass's options (~6 ms), and the search spells a
    candidate's pipeline on the tuning's critical path."""
    from mlc.passes import build_pipeline
    from mlc.transforms import all_passes

    spelled = default_pipeline(target, precision, arch)
    return tuple(build_pipeline(spelled, all_passes(), mlir_syntax=False))


def _decomposed(module: ModuleOp) -> ModuleOp:
    from mlc.compiler import lower

    copy = module.clone()
    lower(copy, GRAPH_PREFIX)
    return copy
