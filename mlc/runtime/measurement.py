"""Seeded random inputs for a graph function, and timing a compiled function's calls.

What `mlc-run --time` and the autotuner's measurements share. `random_inputs` makes one array
per argument of a function type (standard normal floats, integers in [-20, 20), booleans at
even odds), never all zeros. `time_calls` times calls of a compiled function (anything with
`__call__`, `run_on_device` and `synchronize`): on the GPU with CUDA events around launches on
device buffers made once (no copies timed), on the CPU with `time.perf_counter` around whole
calls; `warmup` untimed calls first. With `min_sample_seconds`, a GPU sample is a run of
back-to-back calls lasting about that long, divided by their number: events around one call time
the host's launch path too, which for a kernel of tens of microseconds is most of what they see
(the GPU waits for the launch), while calls in a model's stream overlap their launches with the
kernels before them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mlc.errors import MlcError


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return np.asarray(rng.random(size=shape) < 0.5)
    if np.issubdtype(dtype, np.integer):
        return np.asarray(rng.integers(-20, 20, size=shape).astype(dtype))
    return np.asarray(rng.standard_normal(size=shape).astype(dtype))


def random_inputs(function_type: object, seed: int) -> list[np.ndarray]:
    """Seeded random arrays for each argument of a graph function's type; MlcError naming the
    argument when the machine cannot hold one."""
    from mlc.dialects.element_types import to_numpy_dtype

    rng = np.random.default_rng(seed)
    arrays = []
    for index, argument_type in enumerate(function_type.inputs.data):
        shape = tuple(argument_type.get_shape())
        dtype = to_numpy_dtype(argument_type.element_type)
        try:
            arrays.append(random_array(rng, shape, dtype))
        except (MemoryError, ValueError) as error:  # numpy: "Unable to allocate ...", "array is too big"
            raise MlcError(f"cannot make a random input for argument #{index} ({argument_type}): {error}") from None
    return arrays


MAX_CALLS_PER_SAMPLE = 20000
"""Enough for 10 ms samples of a 0.5 us kernel."""


def time_device_calls(
    compiled: Any, inputs: Sequence[Any], outputs: Sequence[Any], runs: int, warmup: int, min_sample_seconds: float = 0.0
) -> list[float]:
    """`time_calls` on the GPU with the inputs and outputs on the device already (the tuner keeps
    a workload's inputs there for all its candidates): seconds per call, one entry per sample."""
    from mlc.runtime.cuda import Event

    for _ in range(warmup):
        compiled.run_on_device(*inputs, outputs=outputs)
    compiled.synchronize()

    def sample(calls: int) -> float:
        start, end = Event(), Event()
        start.record()
        for _ in range(calls):
            compiled.run_on_device(*inputs, outputs=outputs)
        end.record()
        end.synchronize()
        return end.elapsed_milliseconds_since(start) / 1e3 / calls

    def size(seconds_per_call: float) -> int:
        return max(1, min(MAX_CALLS_PER_SAMPLE, math.ceil(min_sample_seconds / max(seconds_per_call, 1e-7))))

    calls = 1
    if min_sample_seconds > 0:  # one call's time (its launch path included) sizes a first run,
        calls = size(sample(1))  # whose time per call (launches overlapped) sizes the samples
        calls = max(calls, size(sample(calls)))
    return [sample(calls) for _ in range(runs)]


def time_calls(
    compiled: Any, arrays: Sequence[np.ndarray], device: str, runs: int, warmup: int, min_sample_seconds: float = 0.0
) -> list[float]:
    """Seconds per call of a CompiledFunction, one entry per timed run (a sample of back-to-back
    calls on the GPU with `min_sample_seconds`, see the module docstring)."""
    if device == "cuda":
        from mlc.runtime.cuda import DeviceBuffer

        inputs = [DeviceBuffer.from_numpy(np.ascontiguousarray(a)) for a in arrays]
        outputs = list(compiled.run_on_device(*inputs))
        return time_device_calls(compiled, inputs, outputs, runs, warmup, min_sample_seconds)
    for _ in range(warmup):
        compiled(*arrays)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        compiled(*arrays)
        times.append(time.perf_counter() - start)
    return times
