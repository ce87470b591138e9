"""`mlc.compile`: from graph-level MLIR to a callable on the GPU or the CPU.

    f = mlc.compile(source, device="auto", entry=None)
    y = f(x_numpy, w_numpy)           # numpy in, numpy out (a tuple when there are several results)

Arguments, checked before any work (`ArgumentTypeError` / `ArgumentError`, which are also
`TypeError` / `ValueError`):

* `source`: an xDSL `ModuleOp` (copied, never modified); an `os.PathLike`, always a path; or a
  `str`, which is a path when it is one line that names an existing file (read whatever its
  suffix) or directory (refused), or that ends in `.mlir` (a missing file is then an error),
  and MLIR text otherwise. Anything else (None, bytes, numbers, lists) is refused, never parsed.
* `device`: 'auto' (the GPU when one can be used, else the CPU), 'cuda' (a clear `CudaError`
  saying there is no usable CUDA device rather than a driver traceback) or 'cpu'.
* `entry`: a function name ('main' or '@main'); the default is the only, or first public, one.
* `pipeline`: xDSL (`a,b`) or MLIR (`builtin.module(a,b)`) spelling; None or '' for the
  device's (`mlc-lower-to-gpu` / `mlc-lower-to-cpu`). A pipeline that does not lower the module
  to what the device's runtime runs is a `CompileError` saying so.
* `cuda_graph`: record the launches of a call into a CUDA graph once and replay it on later calls
  (one driver call instead of one per kernel; `HostProgram._replay_graph` says when a graph is
  recorded again). True: always (GPU only); False: never; None (the default): on the GPU when it
  pays, a rule from the launch count and the kernels' sizes (`mlc/runtime/graph_choice.py`).
* `num_threads`: the worker threads a CPU program splits its large kernels' grids over (a
  positive integer); None: `MLC_NUM_THREADS`, else the cores the process may use. It decides
  nothing at compile time (the same code and cache entry serve every thread count).

When the tuning database (`mlc-tune`, `mlc/tuning/database.py`; `MLC_TUNING_DB`, else
`tuning.sqlite` in the cache directory) holds a tuned configuration for this program (its
canonical IR and entry) on this target and mlc version, and neither `pipeline` nor `precision` is
given, the default pipeline is replaced by the tuned one and the module carries `mlc.tuned` (the
configuration) in its printed IR. `MLC_TUNING=0` turns this off.

Compiled programs are cached on disk (`mlc/caching.py`, `mlc/runtime/artifact_cache.py`): when
the cache holds this source, entry, pipeline and target, the function is loaded from it and
none of the steps below runs.
* `precision`: 'ieee' (the default), 'tf32' or '3xtf32', the precision of f32 matmuls that state
  none (`mlc/dialects/precision.py`; the default pipeline's option). A matmul whose precision the
  target's lowering cannot compute is a `LoweringError` naming the op and the target, before
  anything is lowered (the GPU computes all three, TF32 on tensor cores; the CPU 'ieee' only).

bf16 programs compile for the CPU and for GPUs of compute capability 8.0 or newer; on an older GPU
the first op over bf16 is a `LoweringError` naming it and the GPU.

The steps, each an inspectable stage kept on the result:

1. parse and verify (errors are located `CompileError`s, never tracebacks);
2. lower with the device's named pipeline (`mlc-lower-to-gpu` / `mlc-lower-to-cpu`) or a
   pipeline given in xDSL or MLIR spelling; a pass that cannot lower an op of the program (a
   limit of mlc, not an error in the source) raises `LoweringError`, a `CompileError` naming it;
3. the backend turns the kernels into PTX for the device's architecture, or a native object;
   where the process may use `MIN_CPUS_TO_OVERLAP` or more CPUs it does so on a worker thread
   while the lowered module is verified (LLVM releases the GIL: on the H100 host's 16 cores the
   verification of the fp16 MLP block, ~0.2 s, hides behind LLVM's optimization and code
   generation); a module that does not verify reports that, whatever the backend did;
4. the runtime loads them and plans the entry's host function (`HostProgram`).

Python's garbage collector is paused for the whole compile (`collector_paused`).

`CompiledFunction.reference(*arrays)` runs the graph interpreter on the same inputs (what
`mlc-run --check` compares with); `run_on_device` returns device buffers without copying back.
`interpret(source, *arrays)` runs a program in the reference interpreter without compiling it
(every op mlc defines runs there, also those not lowered yet), and `available_devices()` says
which devices `compile` can target here.
Calling a compiled function (argument conventions, thread safety) is described in
`mlc/runtime/host.py`.

An exception that is not an `MlcError` escaping a pass is a bug in mlc, not in the input; it is
reported as an `InternalCompilerError` (an `MlcError`, not a `CompileError`) naming the pass, with
the original exception chained for debugging.

The steps' parts live beside this module: `mlc/sources.py` reads the source and picks the entry
(and defines `CompileError` and `LoweringError`), `mlc/devices.py` resolves the device, spells its
default pipeline, refuses what it cannot compute and holds the backend and loading steps. Their
public names are importable from here too (`__all__`).
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from mlc.devices import (
    DEVICE_ALIASES, DEVICES, HOPPER_STAGING, available_devices, build_kernels,
    check_precision_argument, chosen_pipeline, default_pipeline, default_pipeline_for, device_arch,
    linked_cubin_keeps, load_program, refuse_what_the_target_cannot_compute, require_cuda_device,
    resolve_device,
)
from mlc.errors import ArgumentError, ArgumentTypeError, MlcError
from mlc.sources import (
    SOURCE_KINDS, CompileError, LoweringError, check_source_kind, print_module, read_source,
    select_entry, source_text,
)

if TYPE_CHECKING:
    from concurrent.futures import Future

    from xdsl.dialects.builtin import ModuleOp


class CompiledFunction:
    """A compiled entry function; calling it runs it on `device`.

    Compiled here, it keeps its stages: `graph_module` (the source as verified) and
    `lowered_module` (kernels and host function). Loaded from the cache or a bundle, it holds the
    graph source as text and the runtime program only; `graph_module` is then parsed when first
    asked for, and `lowered_module` (and `ir`) lowered again from it with the same pipeline.
    """

    def __init__(
        self,
        name: str,
        device: str,
        program: Any,
        kernels: str | bytes,
        pipeline: str,
        graph_source: str,
        graph_module: ModuleOp | None = None,
        lowered_module: ModuleOp | None = None,
        shared_library: bytes | None = None,
    ):
        self.name = name
        self.device = device
        self.program = program
        self.kernels = kernels
        """PTX text (cuda) or the native object file (cpu)."""
        self.pipeline = pipeline
        self.graph_source = graph_source
        """The graph-level module as MLIR text (what the cache and bundles keep)."""
        self._graph_module = graph_module
        self._lowered_module = lowered_module
        self.shared_library = shared_library
        """CPU: the kernels linked as a shared library, when they were (what the cache and bundles
        keep, so that loading them needs no LLVM); None otherwise."""

    @property
    def graph_module(self) -> ModuleOp:
        if self._graph_module is None:
            self._graph_module, _, _ = read_source(self.graph_source)
        return self._graph_module

    @property
    def lowered_module(self) -> ModuleOp:
        if self._lowered_module is None:
            module = self.graph_module.clone()
            lower(module, self.pipeline)
            self._lowered_module = module
        return self._lowered_module

    def __call__(self, *arrays: object, stream: object = None) -> np.ndarray | tuple[np.ndarray, ...]:
        """Runs the function; numpy results. On the GPU the call runs on `stream` (default:
        PyTorch's current stream when an argument is a PyTorch CUDA tensor; see the README)."""
        results = self.program.run(*arrays, stream=stream)
        return results[0] if len(results) == 1 else results

    def run_on_device(
        self, *arrays: object, outputs: Sequence[object] | None = None, stream: object = None
    ) -> tuple[Any, ...]:
        """Results as device buffers (GPU: `__cuda_array_interface__`), without a copy back, the
        work enqueued on `stream` (default: PyTorch's current stream when an argument or output is
        a PyTorch CUDA tensor, else the program's own; see the README)."""
        return self.program.run_on_device(*arrays, outputs=outputs, stream=stream)

    def synchronize(self) -> None:
        self.program.synchronize()

    def reference(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        """The graph interpreter's results for the same inputs (the semantic reference)."""
        from mlc.interpreter import run

        return tuple(run(self.graph_module, self.name, [np.asarray(a) for a in arrays]))

    @property
    def ir(self) -> str:
        """The lowered module as MLIR text (kernels and host function)."""
        return print_module(self.lowered_module)

    def __repr__(self) -> str:
        return f"<mlc.CompiledFunction @{self.name} on {self.device}>"


_Result = TypeVar("_Result")


def lower(
    module: ModuleOp,
    pipeline: str,
    source_map: Any = None,
    name: str = "<module>",
    verify_each_pass: bool = False,
    timings: dict[str, float] | None = None,
    then: Callable[[], Callable[[], _Result]] | None = None,
) -> _Result | None:
    """Runs `pipeline` (xDSL or MLIR spelling) on `module` in place; the result verifies.

    Verifying after every pass costs more than the passes themselves (each verification walks
    every op of a module that grows to thousands of ops), so by default the module is verified
    once, after the last pass. When anything goes wrong (the final verification, a pass that
    crashes, possibly because an earlier pass left invalid IR), the pipeline is run again from a
    copy of the input, verifying after each pass, so the error names the pass that first broke
    the IR, exactly as `verify_each_pass=True` reports it. A pass that reports an op it cannot
    lower (`LoweringError`) is believed at once: that is a deliberate diagnostic, and programs
    mlc cannot compile yet should not pay for the pipeline twice.
    `timings`, when given, accumulates seconds per pass name and for 'verify'.

    `then`, when given, is the next step on the lowered module (the backend; it must only read
    the module), in two halves: `then()` runs in this thread after the passes (the Python work:
    translating to LLVM IR) and returns the second half, whose result lower returns. Where the
    process may use `MIN_CPUS_TO_OVERLAP` CPUs or more (`_may_overlap`) the second half (LLVM's
    work, which releases the GIL) runs on a worker thread while this one verifies the module,
    else after the verification. Either half's error is raised only once the module verified: a
    module that does not verify reports that, as without `then`.
    """
    from concurrent.futures import wait

    from mlc.diagnostics import verify
    from mlc.passes import build_pipeline
    from mlc.transforms import all_passes

    passes = build_pipeline(pipeline, all_passes(), mlir_syntax="(" in pipeline)
    if verify_each_pass:
        _run_passes(module, passes, source_map, name, True, timings)
        return then()() if then is not None else None
    pristine = module.clone()
    worker: Future[_Result] | None = None
    second_half: Callable[[], _Result] | None = None
    deferred: Exception | None = None
    try:
        _run_passes(module, passes, source_map, name, False, timings)
        if then is not None:
            try:
                second_half = then()
            except Exception as error:  # noqa: BLE001 - raised below once the module verified
                deferred = error
            else:
                worker = _on_a_thread(second_half) if _may_overlap() else None
        try:
            _timed(timings, "verify", lambda: verify(module, source_map, name))
        finally:
            if worker is not None:
                wait([worker])
    except LoweringError:
        raise
    except MlcError:
        _run_passes(pristine, passes, source_map, name, True, None)
        raise  # the passes verified one by one: the error is not the IR's, report it as it was
    if deferred is not None:
        raise deferred
    if worker is not None:
        return worker.result()
    return second_half() if second_half is not None else None


MIN_CPUS_TO_OVERLAP = 4
"""The fewest CPUs the process may use for `lower` to run its `then` (the backend) beside the
final verification. Both need the GIL for their Python parts (the translation to LLVM IR, the
verifier): with fewer cores, or busy ones, the two threads trading it cost more than the overlap
of LLVM's native work saves (measured on the shared 2-core development machine: slower)."""


def _may_overlap() -> bool:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        usable = os.cpu_count() or 1
    return usable >= MIN_CPUS_TO_OVERLAP


def _on_a_thread(step: Callable[[], _Result]) -> Future[_Result]:
    """`step()` started at once on a thread of its own; its future holds the value or the error."""
    from concurrent.futures import ThreadPoolExecutor

    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mlc-backend")
    try:
        return executor.submit(step)
    finally:
        executor.shutdown(wait=False)  # the submitted step still runs to its end


def _timed(timings: dict[str, float] | None, key: str, step: Any) -> None:
    if timings is None:
        step()
        return
    start = time.perf_counter()
    step()
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start


def _run_passes(
    module: ModuleOp,
    passes: Sequence[Any],
    source_map: Any,
    name: str,
    verify_each_pass: bool,
    timings: dict[str, float] | None,
) -> None:
    from mlc.diagnostics import (
        PassFailure,
        VerificationFailure,
        describe_op,
        run_pass,
        verify,
    )
    from mlc.dialects import make_context

    context = make_context()
    for module_pass in passes:
        try:
            # A bug in a pass raises InternalCompilerError (an MlcError naming the pass, the
            # original exception chained), not a CompileError: the input is not at fault.
            _timed(timings, module_pass.name, lambda: run_pass(module_pass, context, module))  # noqa: B023 - called at once
        except PassFailure as failure:
            raise LoweringError(describe_op(failure.op, failure.message, source_map, name)) from None
        if verify_each_pass:
            try:
                _timed(timings, "verify", lambda: verify(module, source_map, name))
            except VerificationFailure as failure:
                raise VerificationFailure(f"the IR after pass '{module_pass.name}' does not verify:\n{failure}") from None


def compile(
    source: str | os.PathLike[str] | ModuleOp,
    device: str = "auto",
    entry: str | None = None,
    pipeline: str | None = None,
    precision: str | None = None,
    cuda_graph: bool | None = None,
    num_threads: int | None = None,
) -> CompiledFunction:
    """Compiles the entry function of `source` for `device` (see the module docstring)."""
    _check_names(entry, pipeline, precision)
    check_precision_argument(precision, pipeline)
    if cuda_graph is not None and not isinstance(cuda_graph, bool):
        raise ArgumentTypeError(f"cuda_graph must be True, False or None (automatic); got {type(cuda_graph).__name__}")
    if num_threads is not None and (
        isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1
    ):
        raise ArgumentError(f"num_threads must be a positive integer or None; got {num_threads!r}")
    check_source_kind(source)  # before any device is probed
    target = resolve_device(device)
    if cuda_graph and target != "cuda":
        raise ArgumentError("cuda_graph=True records launches into CUDA graphs: it needs device='cuda' (or 'auto' with a GPU)")
    chosen = chosen_pipeline(target, pipeline, precision)
    text = source_text(source)
    tuned = _tuned(source, text, entry, target) if not pipeline and precision is None else None
    chosen = tuned.pipeline if tuned is not None else chosen
    from mlc import caching

    cached, lookup = caching.look_up(text[0], target, entry, chosen, cuda_graph, num_threads)
    if cached is not None:
        return cached
    from mlc.diagnostics import verify

    # From here on, the compile builds IR by the hundred thousand objects: see collector_paused.
    with collector_paused():
        module, name, source_map = read_source(source, text)
        verify(module, source_map, name)
        function_name = select_entry(module, entry).sym_name.data
        graph_module = module.clone()
        if tuned is not None:
            from xdsl.dialects.builtin import StringAttr

            from mlc.dialects.attributes import TUNED
            from mlc.tuning.space import config_from_key, describe

            TUNED.write(module, StringAttr(describe(config_from_key(tuned.config))))
        refuse_what_the_target_cannot_compute(module, target, pipeline, precision, source_map, name)
        from mlc.runtime import HostProgramError

        arch = device_arch(target)
        # A shared library is linked for the cache only: it is what a later process loads.
        built = lower(module, chosen, source_map, name, then=lambda: build_kernels(module, arch, lookup is not None))
        try:
            kernels, program, library = load_program(module, target, built, function_name, cuda_graph, num_threads, lookup is not None)
        except HostProgramError as error:
            if not pipeline:
                raise
            raise HostProgramError(
                f"{error}\nnote: the module was lowered with '{chosen}'; the {target} runtime runs what "
                f"'{default_pipeline(target)}' produces"
            ) from None
    compiled = CompiledFunction(function_name, target, program, kernels, chosen, text[0], graph_module, module, library)
    if lookup is not None:
        caching.store(lookup, compiled)
    return compiled


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a program compiles, back on after (when it was).

    A compile builds and drops hundreds of thousands of IR objects (ops, values, attributes, uses)
    that point at each other: every 700 net allocations the collector scans the young ones, all
    alive but for erased ops, and every tenth time an older generation too, which in a process
    holding a large heap (PyTorch, a model) means all of it. Paused, it scans once, after the
    compile: the fp16 MLP block's GPU compile took about 5% less process CPU time on the
    development machine, the collection after it included (1.50-1.60 -> 1.42-1.49 s); peak memory
    the same. Two threads compiling at once may turn it back on while the other still compiles:
    that costs the other time, never correctness."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _tuned(source: str | os.PathLike[str] | ModuleOp, text: tuple[str, str, bool], entry: str | None, target: str) -> Any:
    """The tuning database's best record for this program on `target` (a `database.Record`), or
    None: no database file, `MLC_TUNING=0`, no record, or a source that does not parse (compiling
    reports that). The database is only opened, and the source only parsed here, when the file exists."""
    if os.environ.get("MLC_TUNING", "1").strip().lower() in ("0", "false", "off", "no"):
        return None
    from mlc.tuning import default_path

    if not default_path().exists():
        return None
    from mlc.tuning.workload import tuned_record

    try:
        module, _, _ = read_source(source, text)
        function_name = select_entry(module, entry).sym_name.data
    except CompileError:
        return None
    return tuned_record(module, function_name, target)


def lower_source(
    source: str | os.PathLike[str] | ModuleOp,
    device: str = "auto",
    entry: str | None = None,
    pipeline: str | None = None,
    precision: str | None = None,
) -> ModuleOp:
    """`source` lowered as `compile` lowers it for `device`, without generating code or loading it.

    A cheap way to ask whether mlc can compile a program: it raises the `LoweringError` (naming
    the op) that `compile` would, and returns the lowered module otherwise.
    """
    from mlc.diagnostics import verify

    _check_names(entry, pipeline, precision)
    check_precision_argument(precision, pipeline)
    check_source_kind(source)
    target = resolve_device(device)
    module, name, source_map = read_source(source)
    verify(module, source_map, name)
    select_entry(module, entry)
    refuse_what_the_target_cannot_compute(module, target, pipeline, precision, source_map, name)
    with collector_paused():
        lower(module, chosen_pipeline(target, pipeline, precision), source_map, name)
    return module


def _check_names(entry: object, pipeline: object, precision: object = None) -> None:
    for value, what in ((entry, "entry"), (pipeline, "pipeline"), (precision, "precision")):
        if value is not None and not isinstance(value, str):
            raise ArgumentTypeError(f"{what} must be a string or None; got {type(value).__name__}")


def interpret(source: str | os.PathLike[str] | ModuleOp, *arrays: object, entry: str | None = None) -> Any:
    """Runs the entry function of `source` in the reference interpreter, without compiling it.

    `source` and `entry` are read and checked as `compile` reads them, with the same errors; the
    module may be at any level. The results are what calling a compiled
    function returns: one numpy array, or a tuple when there are several. The arrays are converted
    to the parameters' element types (the interpreter is the semantic reference, not a checked
    calling convention); a shape that does not fit is an `InterpreterError`.
    """
    if entry is not None and not isinstance(entry, str):
        raise ArgumentTypeError(f"entry must be a string or None; got {type(entry).__name__}")
    from mlc.diagnostics import verify
    from mlc.interpreter import run

    module, name, source_map = read_source(source)
    verify(module, source_map, name)
    function_name = select_entry(module, entry).sym_name.data

    results = run(module, function_name, [np.asarray(array) for array in arrays])
    return results[0] if len(results) == 1 else tuple(results)


__all__ = [
    "CompileError", "CompiledFunction", "DEVICES", "DEVICE_ALIASES", "HOPPER_STAGING",
    "LoweringError", "MIN_CPUS_TO_OVERLAP", "SOURCE_KINDS", "available_devices",
    "check_source_kind", "collector_paused", "compile", "default_pipeline_for", "interpret",
    "linked_cubin_keeps", "lower", "lower_source", "read_source", "require_cuda_device",
    "resolve_device", "select_entry",
]
