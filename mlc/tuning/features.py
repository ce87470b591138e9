"""Features of a configuration for the cost model, read from the loop-level IR it produces.

The workload is lowered with the configuration's pipeline up to the loop level (everything up to
and including `convert-tile-to-loop` and its clean-up), where the decisions are explicit: a grid
of block-mapped `loop.parallel`s, a thread-mapped one, `scf.for` nests with constant trip counts,
loads and stores with vector widths and memory spaces. For each `loop.kernel` the ops inside the
thread loop are counted once per execution (times the trip counts of the `scf.for`s around them),
then multiplied by threads and programs:

* flops: float arithmetic per lane (`math.fma` 2, other `math` functions 4, arith 1), a warp's
  tensor-core `loop.mma_sync` (2*16*8*16) shared by its 32 threads, a warpgroup's `loop.wgmma`
  (2*64*N*K) shared by its 128;
* bytes loaded and stored per memory level: global, shared (space 3), private (space 5), with
  `loop.ldmatrix`'s 8x8 16-bit matrices and the blocks a `loop.wgmma` reads;
* reuse: flops per global byte; vector width: the widest access's lanes;
* parallelism: programs, threads per program, and an occupancy estimate: the programs' balance
  over the target's workers (CPU cores; for CUDA, 132 multiprocessors of 2048 threads);
* branches (masks) executed, accumulators (the most values an `scf.for` carries: registers).

Kernel totals are summed; the vector is these counts as log2(1 + x), then the configuration's
knob values (numbers as log2(1 + x); a categorical knob's value, such as `nontemporal-stores`, as
its index among the knob's legal values), so the model also sees what the loop level leaves
implicit (the CPU's threading threshold and store kind act after it). `fingerprint` is a hash of the loop-level IR: two
configurations with the same one compile to the same program (a knob with nothing to act on) and
need one measurement.

Limits: dynamic trip counts count once; the counts are of the IR before LLVM's optimisations
(unrolling and vectorisation by LLVM are not seen).
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from dataclasses import dataclass, field

from xdsl.dialects import memref, scf, vector
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, VectorType
from xdsl.ir import Attribute, Operation

from mlc.dialects.buffer_limits import element_bytes
from mlc.dialects.loop import ops as loop
from mlc.tuning.space import Config, SearchSpace

FEATURE_NAMES = (
    "flops",
    "global_load_bytes",
    "global_store_bytes",
    "shared_bytes",
    "private_bytes",
    "reuse",
    "programs",
    "threads_per_program",
    "occupancy",
    "vector_lanes",
    "branches",
    "accumulators",
    "kernels",
)
MULTIPROCESSORS = 132
THREADS_PER_MULTIPROCESSOR = 2048
LOOP_LEVEL_END = "convert-tile-to-loop"


@dataclass
class KernelCounts:
    flops: float = 0.0
    bytes: dict[str, float] = field(default_factory=lambda: {"global_load": 0.0, "global_store": 0.0, "shared": 0.0, "private": 0.0})
    vector_lanes: int = 1
    branches: float = 0.0
    accumulators: int = 0


def _lanes(value_type: Attribute) -> int:
    return math.prod(value_type.get_shape()) if isinstance(value_type, VectorType) else 1


def _is_float(value_type: Attribute) -> bool:
    element = value_type.element_type if isinstance(value_type, VectorType) else value_type
    return type(element).__name__.startswith(("Float", "BFloat"))


def _constant(value: object) -> int | None:
    owner = getattr(value, "owner", None)
    attribute = getattr(owner, "value", None)
    return attribute.value.data if isinstance(attribute, IntegerAttr) else None


def _trip_count(op: scf.ForOp) -> int:
    lower, upper, step = (_constant(v) for v in (op.lb, op.ub, op.step))
    if None in (lower, upper, step) or step <= 0:  # type: ignore[operator]
        return 1
    return max(0, -(-(upper - lower) // step))  # type: ignore[operator]


def _memory_level(memref_type: Attribute) -> str:
    space = getattr(memref_type, "memory_space", None)
    number = space.value.data if isinstance(space, IntegerAttr) else 0
    return {loop.SHARED_MEMORY_SPACE: "shared", loop.PRIVATE_MEMORY_SPACE: "private"}.get(number, "global")


MMA_FLOPS_PER_THREAD = 2 * 16 * 8 * 16 // 32
"""A warp's `loop.mma_sync` (m16n8k16) shared by its 32 threads."""
LDMATRIX_BYTES_PER_THREAD = 8 * 8 * 2 // 32
"""One 8x8 matrix of 16-bit elements of a warp's `loop.ldmatrix`, per thread."""


def _access(op: Operation) -> tuple[Attribute, Attribute, bool] | None:
    """(memref type, accessed value type, is a store) of a load or store."""
    if isinstance(op, memref.LoadOp | vector.LoadOp):
        return op.operands[0].type, op.results[0].type, False
    if isinstance(op, memref.StoreOp | vector.StoreOp):
        return op.operands[1].type, op.operands[0].type, True
    return None


def _count(op: Operation, times: float, counts: KernelCounts) -> None:
    if isinstance(op, scf.ForOp):
        counts.accumulators = max(counts.accumulators, len(op.iter_args))
        for inner in op.body.block.ops:
            _count(inner, times * _trip_count(op), counts)
        return
    if isinstance(op, loop.ParallelOp) and op.mapping_name() is None:  # a plain loop (CPU micro-tiles)
        times *= op.trip_count
    if isinstance(op, scf.IfOp):
        counts.branches += times
    if isinstance(op, loop.MmaSyncOp):
        counts.flops += times * MMA_FLOPS_PER_THREAD
    if isinstance(op, loop.WgmmaOp):  # a warpgroup's 64 x N x K product of blocks read from memory
        n, k = op.n.value.data, op.k.value.data
        counts.flops += times * 2 * loop.WGMMA_ROWS * n * k / loop.WARPGROUP_SIZE
        level = _memory_level(op.rhs.type)
        read = ((0 if op.lhs is None else loop.WGMMA_ROWS * k) + k * n) * element_bytes(op.element_type)
        counts.bytes["global_load" if level == "global" else level] += times * read / loop.WARPGROUP_SIZE
    if isinstance(op, loop.LdMatrixOp):
        level = _memory_level(op.buffer.type)
        counts.bytes["global_load" if level == "global" else level] += times * op.matrices * LDMATRIX_BYTES_PER_THREAD
    access = _access(op)
    if access is not None:
        memref_type, value_type, store = access
        assert isinstance(memref_type, MemRefType)
        level = _memory_level(memref_type)
        key = f"global_{'store' if store else 'load'}" if level == "global" else level
        counts.bytes[key] += times * _lanes(value_type) * element_bytes(memref_type.element_type)
        counts.vector_lanes = max(counts.vector_lanes, _lanes(value_type))
    elif op.results and _is_float(op.results[0].type) and (op.dialect_name() in ("arith", "math") or op.name == "vector.fma"):
        weight = 2 if op.name in ("math.fma", "vector.fma") else 4 if op.dialect_name() == "math" else 1
        if not op.name.startswith(("arith.constant", "arith.select")):
            counts.flops += times * weight * _lanes(op.results[0].type)
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                _count(inner, times, counts)


def kernel_features(kernel: loop.KernelOp, workers: int) -> dict[str, float]:
    programs = threads = 1
    for op in kernel.walk():
        if isinstance(op, loop.ParallelOp):
            mapping = op.mapping_name() or ""
            if mapping.startswith("block"):
                programs *= op.trip_count
            elif mapping.startswith("thread"):
                threads *= op.trip_count
    counts = KernelCounts()
    for op in kernel.body.block.ops:
        _count(op, 1.0, counts)
    # Parallel loops are walked once: the counts are per thread of one program.
    scale = programs * threads
    global_bytes = counts.bytes["global_load"] + counts.bytes["global_store"]
    rounds = -(-programs // workers)
    return {
        "flops": counts.flops * scale,
        "global_load_bytes": counts.bytes["global_load"] * scale,
        "global_store_bytes": counts.bytes["global_store"] * scale,
        "shared_bytes": counts.bytes["shared"] * scale,
        "private_bytes": counts.bytes["private"] * scale,
        "reuse": counts.flops / global_bytes if global_bytes else 0.0,
        "programs": programs,
        "threads_per_program": threads,
        "occupancy": programs / (rounds * workers),
        "vector_lanes": counts.vector_lanes,
        "branches": counts.branches * scale,
        "accumulators": counts.accumulators,
        "kernels": 1,
    }


def module_features(module: ModuleOp, target: str) -> dict[str, float]:
    """The features of a loop-level module (see the module docstring), summed over its kernels
    (reuse, occupancy, vector width, accumulators: weighted by flops or the maximum)."""
    workers = MULTIPROCESSORS * THREADS_PER_MULTIPROCESSOR if target == "cuda" else (os.cpu_count() or 1)
    total = dict.fromkeys(FEATURE_NAMES, 0.0)
    kernels = [k for k in module.walk() if isinstance(k, loop.KernelOp)]
    for kernel in kernels:
        features = kernel_features(kernel, workers if target != "cuda" else MULTIPROCESSORS)
        for name in ("vector_lanes", "accumulators", "threads_per_program"):
            total[name] = max(total[name], features.pop(name))
        for name in ("reuse", "occupancy"):
            total[name] += features.pop(name) / max(1, len(kernels))
        for name, value in features.items():
            total[name] += value
    return total


def loop_level(module: ModuleOp, space: SearchSpace, config: Config) -> tuple[ModuleOp, str]:
    """`module` lowered with `config`'s pipeline up to the loop level (a copy), and the rest of
    the pipeline (its spelling)."""
    from mlc.compiler import lower

    pipeline = space.pipeline(config)
    passes = pipeline.removeprefix("builtin.module(").removesuffix(")").split(", ")
    end = passes.index(next(p for p in passes if p.startswith(LOOP_LEVEL_END)))
    while end + 1 < len(passes) and passes[end + 1] in ("cse", "canonicalize"):
        end += 1
    lowered = module.clone()
    lower(lowered, "builtin.module(" + ", ".join(passes[: end + 1]) + ")")
    return lowered, ", ".join(passes[end + 1 :])


def fingerprint(module: ModuleOp, rest_of_pipeline: str) -> str:
    """A hash of a loop-level module's text and the passes still to run on it: equal for
    configurations that make the same program."""
    return hashlib.sha256(f"{module}\n{rest_of_pipeline}".encode()).hexdigest()[:16]


def feature_vector(features: dict[str, float], config: Config, space: SearchSpace) -> list[float]:
    numbers = [math.log2(1.0 + max(0.0, features[name])) for name in FEATURE_NAMES]
    legal_values = {dimension.name: dimension.values for dimension in space.dimensions}
    for name, value in sorted(config.items()):
        if isinstance(value, str):  # a categorical knob: its place among the legal values
            numbers.append(float(legal_values[name].index(value)))
            continue
        parts = value if isinstance(value, tuple) else (value,)
        # log2(1 + v): a knob's value may be 0 ("the kernel's own choice"); (): the heuristic.
        numbers.extend(math.log2(1.0 + part) for part in (parts or (0.5,) * 3))
    return numbers


def extract(module: ModuleOp, space: SearchSpace, config: Config) -> tuple[list[float], str]:
    """The feature vector of `config` on `module` and the fingerprint of its loop-level program."""
    lowered, rest = loop_level(module, space, config)
    return feature_vector(module_features(lowered, space.target), config, space), fingerprint(lowered, rest)


def extract_from_text(source: str, target: str, configs: list[dict], arch: str | None = None) -> list[tuple[list[float], str] | str]:
    """`extract` of each configuration on the module spelled by `source`, for a worker process
    (text travels, IR does not): the features and fingerprint, or the reason it does not lower.
    `arch`: the GPU architecture the search's space was made for (`SearchSpace.of`); given, the
    worker never opens a device (see `_workload`)."""
    module, space = _workload(source, target, arch)
    results: list[tuple[list[float], str] | str] = []
    for config in configs:
        try:
            results.append(extract(module, space, config))
        except Exception as error:  # noqa: BLE001 - a configuration that does not lower is a failed trial
            results.append(f"does not lower: {type(error).__name__}: {error}")
    return results


@functools.lru_cache(maxsize=4)
def _workload(source: str, target: str, arch: str | None) -> tuple[ModuleOp, SearchSpace]:
    """The parsed module and its space, once per process and workload (`extract` lowers a copy):
    parsing the text and deriving the space cost as much as extracting one configuration (~40 ms
    for the softmax), and a background job holds two. With `arch` None on 'cuda' the space asks
    the device, which opens a CUDA context in this process: on the 2-GPU machine every
    extraction process (48 of them) opened one on GPU 0, in the middle of the tuning."""
    from mlc.compiler import read_source

    module, _, _ = read_source(source)
    return module, SearchSpace.of(module, target, arch)
