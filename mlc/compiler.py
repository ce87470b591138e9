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
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError, MlcError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp

DEVICES = ("auto", "cuda", "cpu")
DEVICE_ALIASES = {"gpu": "cuda", "nvidia": "cuda", "cuda:0": "cuda", "host": "cpu"}
"""Other libraries' names for mlc's devices: suggested in the error, never accepted silently."""


class CompileError(MlcError):
    """The source could not be compiled; the message says where and why."""


class LoweringError(CompileError):
    """A pass could not lower an op of a valid program: something mlc cannot compile yet (the
    message names the op and the reason), as opposed to an error in the source."""


def _close_matches(word: str, possibilities: Sequence[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """difflib's close matches, imported only for a message (a cache hit never needs it)."""
    import difflib

    return difflib.get_close_matches(word, possibilities, n=n, cutoff=cutoff)


def resolve_device(device: str) -> str:
    """'cuda' or 'cpu' for a requested device ('auto' takes the GPU when one can be used)."""
    if not isinstance(device, str):
        raise ArgumentTypeError(
            f"device must be a string, one of {', '.join(map(repr, DEVICES))}; got {type(device).__name__}"
        )
    if device not in DEVICES:
        close = DEVICE_ALIASES.get(device.lower()) or next(
            iter(_close_matches(device.lower(), DEVICES, n=1, cutoff=0.5)), None
        )
        hint = f" (did you mean '{close}'?)" if close else ""
        raise ArgumentError(f"unknown device '{device}': use one of {', '.join(map(repr, DEVICES))}{hint}")
    if device == "auto":
        return available_devices()[0]
    if device == "cuda":
        require_cuda_device()
    return device


def available_devices() -> tuple[str, ...]:
    """The devices `compile` can target on this machine, the one 'auto' takes first: ('cuda', 'cpu')
    when a CUDA device can be used, else ('cpu',). Never raises."""
    from mlc.runtime import is_available

    return ("cuda", "cpu") if is_available() else ("cpu",)


def require_cuda_device() -> None:
    """Raises a CudaError saying why device='cuda' cannot be used, when it cannot."""
    from mlc.runtime.cuda import CudaError, device_count

    advice = "Compile with device='cpu', or device='auto' to use the GPU only when there is one."
    try:
        count = device_count()
    except CudaError as error:
        reason = str(error).rstrip(". ")
        raise CudaError(f"device='cuda' was requested, but there is no usable CUDA device ({reason}). {advice}") from None
    if count == 0:
        raise CudaError(f"device='cuda' was requested, but no CUDA device is visible. {advice}")


def select_entry(module: ModuleOp, entry: str | None) -> func.FuncOp:
    """The function `entry`, else the only function, else the first public one."""
    from xdsl.dialects import func

    functions = [op for op in module.body.block.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if entry is not None:
        entry = entry.removeprefix("@")
        for function in functions:
            if function.sym_name.data == entry:
                return function
        names = [f.sym_name.data for f in functions]
        close = _close_matches(entry, names, n=1)
        hint = f"; did you mean @{close[0]}?" if close else ""
        listing = ", ".join(f"@{name}" for name in names) or "none"
        raise CompileError(f"no function @{entry} in the module (functions: {listing}){hint}")
    if not functions:
        raise CompileError("the module has no function to run")
    if len(functions) == 1:
        return functions[0]
    public = [f for f in functions if f.sym_visibility is None or f.sym_visibility.data == "public"]
    return (public or functions)[0]


SOURCE_KINDS = "MLIR text (str), a path to a file (str or os.PathLike) or an xDSL ModuleOp"


def _source_path(source: str | os.PathLike[str]) -> Path | None:
    """The path `source` names (see the module docstring), or None when it is MLIR text."""
    if isinstance(source, os.PathLike):
        return Path(source)
    if "\n" in source or not source.strip():
        return None
    # os.path.exists is False (never an error) for names the OS refuses: NUL bytes, overlong text.
    if os.path.exists(source) or source.rstrip().endswith(".mlir"):
        return Path(source)
    return None


def _read_file(path: Path) -> str:
    if path.is_dir():
        raise CompileError(f"{path} is a directory, not an MLIR file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise CompileError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CompileError(
            f"{path} is not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start}); "
            "MLIR files are UTF-8"
        ) from None


def _is_module(source: object) -> bool:
    """Whether `source` is an xDSL ModuleOp (only possible when xDSL is loaded: then import it)."""
    if "xdsl.dialects.builtin" not in sys.modules:
        return False
    from xdsl.dialects.builtin import ModuleOp

    return isinstance(source, ModuleOp)


def check_source_kind(source: object) -> None:
    if not isinstance(source, str | os.PathLike) and not _is_module(source):
        hint = " (decode bytes first, e.g. source.decode())" if isinstance(source, bytes | bytearray) else ""
        raise ArgumentTypeError(f"source must be {SOURCE_KINDS}; got {type(source).__name__}{hint}")


def _source_text(source: str | os.PathLike[str] | ModuleOp) -> tuple[str, str, bool]:
    """The source as MLIR text, a name for messages, and whether it is a file's text."""
    check_source_kind(source)
    if _is_module(source):
        return _print(source), "<module>", False
    assert isinstance(source, str | os.PathLike)
    path = _source_path(source)
    if path is not None:
        return _read_file(path), str(path), True
    return str(source), "<string>", False


def _read_source(source: str | os.PathLike[str] | ModuleOp, text: tuple[str, str, bool] | None = None) -> tuple[ModuleOp, str, Any]:
    """The module (a private copy), a name for messages, and its source map (or None).

    `text` is `_source_text(source)` when the caller has it already."""
    from xdsl.utils.exceptions import ParseError

    from mlc.diagnostics import format_parse_error, parse_module
    from mlc.dialects import make_context

    check_source_kind(source)
    if _is_module(source):
        return source.clone(), "<module>", None  # type: ignore[union-attr]
    text, name, from_file = text or _source_text(source)
    if not text.strip():
        raise CompileError(f"{name} is empty: there is no function to compile")
    try:
        module, source_map = parse_module(text, make_context(), name)
    except ParseError as error:
        message = format_parse_error(error)
        if not from_file and "\n" not in text:
            message += f"\nnote: '{text}' names no file, so it was parsed as MLIR text"
        raise CompileError(message) from None
    return module, name, source_map


def _print(module: ModuleOp) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    text = StringIO()
    Printer(stream=text).print_op(module)
    return text.getvalue()


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
            self._graph_module, _, _ = _read_source(self.graph_source)
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
        return _print(self.lowered_module)

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
    _check_precision_argument(precision, pipeline)
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
    chosen = _chosen_pipeline(target, pipeline, precision)
    text = _source_text(source)
    tuned = _tuned(source, text, entry, target) if not pipeline and precision is None else None
    chosen = tuned.pipeline if tuned is not None else chosen
    from mlc import caching

    cached, lookup = caching.look_up(text[0], target, entry, chosen, cuda_graph, num_threads)
    if cached is not None:
        return cached
    from mlc.diagnostics import verify

    # From here on, the compile builds IR by the hundred thousand objects: see collector_paused.
    with collector_paused():
        module, name, source_map = _read_source(source, text)
        verify(module, source_map, name)
        function_name = select_entry(module, entry).sym_name.data
        graph_module = module.clone()
        if tuned is not None:
            from xdsl.dialects.builtin import StringAttr

            from mlc.dialects.attributes import TUNED
            from mlc.tuning.space import config_from_key, describe

            TUNED.write(module, StringAttr(describe(config_from_key(tuned.config))))
        _refuse_what_the_target_cannot_compute(module, target, pipeline, precision, source_map, name)
        from mlc.runtime import HostProgramError

        arch = _device_arch(target)
        # A shared library is linked for the cache only: it is what a later process loads.
        built = lower(module, chosen, source_map, name, then=lambda: _build(module, arch, lookup is not None))
        try:
            kernels, program, library = _load(module, target, built, function_name, cuda_graph, num_threads, lookup is not None)
        except HostProgramError as error:
            if not pipeline:
                raise
            raise HostProgramError(
                f"{error}\nnote: the module was lowered with '{chosen}'; the {target} runtime runs what "
                f"'{_default_pipeline(target)}' produces"
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
        module, _, _ = _read_source(source, text)
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
    _check_precision_argument(precision, pipeline)
    check_source_kind(source)
    target = resolve_device(device)
    module, name, source_map = _read_source(source)
    verify(module, source_map, name)
    select_entry(module, entry)
    _refuse_what_the_target_cannot_compute(module, target, pipeline, precision, source_map, name)
    with collector_paused():
        lower(module, _chosen_pipeline(target, pipeline, precision), source_map, name)
    return module


def _check_names(entry: object, pipeline: object, precision: object = None) -> None:
    for value, what in ((entry, "entry"), (pipeline, "pipeline"), (precision, "precision")):
        if value is not None and not isinstance(value, str):
            raise ArgumentTypeError(f"{what} must be a string or None; got {type(value).__name__}")


def _default_pipeline(target: str, precision: str | None = None) -> str:
    """`default_pipeline_for` the device that `target` compiles for."""
    arch = ""
    if target == "cuda":
        from mlc.runtime import get_device

        arch = get_device().arch
    return default_pipeline_for(target, arch, precision)


HOPPER_STAGING = ("tma=true", "warp-specialize=true", "stage-epilogue=true", "l2-group-tiles=8", "tf32-swap=true")
"""mlc-lower-to-gpu's options that `mlc.compile` adds on sm_90: warpgroup products fed by TMA from a
producer warpgroup, tiles stored through shared memory (0.84-0.98x cuBLAS at 4096^3 and 8192^3
against 0.72-0.87x for the cp.async pipeline: BENCHMARKS.md, ninth step), the grouped tile
order for tensor-core kernels reading an operand larger than L2 (8192^3: 1-7.5% faster in 4
interleaved pairs, BENCHMARKS.md, wg13; the other kernels it regroups, the conv's implicit GEMM
and the fp16 MLP's products, measured no slower with it: BENCHMARKS.md, session 13 start), and
plain TF32 products on a row-major B computed transposed, B's block in wgmma's A registers (two
register sets, `mlc.a_register_sets`), instead of a transpose kernel and the K-major product
(BENCHMARKS.md, tf16)."""


def default_pipeline_for(target: str, arch: str = "", precision: str | None = None) -> str:
    """`mlc-lower-to-cpu`, or `mlc-lower-to-gpu` with the GPU's `arch` where it changes the
    lowering (sm_90: wgmma, with `HOPPER_STAGING`), and `precision` if given: what `mlc.compile`
    runs by default."""
    options = [] if precision is None else [f"precision={precision}"]
    if target == "cuda" and arch:
        from mlc.targets import WGMMA_ARCHS

        options = options + [f"arch={arch}", *HOPPER_STAGING] if arch in WGMMA_ARCHS else options
    name = "mlc-lower-to-gpu" if target == "cuda" else "mlc-lower-to-cpu"
    return name + ("{" + " ".join(options) + "}" if options else "")


def _chosen_pipeline(target: str, pipeline: str | None, precision: str | None) -> str:
    """The pipeline that lowers for `target`: `pipeline`, or the default one with `precision`."""
    return pipeline or _default_pipeline(target, precision)


def _refuse_what_the_target_cannot_compute(
    module: ModuleOp, target: str, pipeline: str | None, precision: str | None, source_map: Any, name: str
) -> None:
    """What `target` cannot compute is refused before lowering: a precision its matmul lowering
    does not honour, bf16 on a GPU without it."""
    from mlc.dialects.precision import DEFAULT_PRECISION

    if not pipeline:
        _refuse_unhonoured_precisions(module, precision or DEFAULT_PRECISION, target, source_map, name)
    if target == "cuda":
        _refuse_bfloat16_without_support(module, source_map, name)


def _check_precision_argument(precision: str | None, pipeline: str | None) -> None:
    if precision is None:
        return  # before importing the dialects (xDSL): a cache hit never loads them
    from mlc.dialects.precision import PRECISIONS

    if precision not in PRECISIONS:
        close = _close_matches(precision.lower(), PRECISIONS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ArgumentError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}{hint}")
    if pipeline:
        raise ArgumentError(
            "precision= sets the precision option of the default pipeline; with pipeline= give it to "
            "convert-graph-to-tile in the pipeline instead (convert-graph-to-tile{precision=...})"
        )


def _refuse_unhonoured_precisions(module: ModuleOp, precision: str, target: str, source_map: Any, name: str) -> None:
    """A matmul whose precision `target`'s lowering cannot compute is a LoweringError naming the op
    (at its place in the source) and the target, before anything is lowered."""
    from mlc.diagnostics import describe_op
    from mlc.dialects.graph import ops as graph
    from mlc.transforms.lowering.dot_precision import honoured_precisions
    from mlc.transforms.lowering.matmul_plan import matmul_precision

    honoured = honoured_precisions(target, target != "cuda" or _has_tensor_cores())
    for op in module.walk():
        if isinstance(op, graph.MatmulOp) and (wanted := matmul_precision(op, precision)) not in honoured:
            message = (
                f"precision '{wanted}' cannot be honoured on target '{target}': {honoured.reason} "
                f"(precisions computed there: {', '.join(sorted(honoured.precisions))})"
            )
            raise LoweringError(describe_op(op, message, source_map, name))


def _has_tensor_cores() -> bool:
    """Whether the GPU runs TF32 tensor-core products (mma.sync m16n8k8 .tf32: sm_80+)."""
    from mlc.backend.nvptx import BFLOAT16_MINIMUM_ARCH, arch_number
    from mlc.runtime import get_device

    number = arch_number(get_device().arch)
    return number is None or number >= BFLOAT16_MINIMUM_ARCH


def _refuse_bfloat16_without_support(module: ModuleOp, source_map: Any, name: str) -> None:
    """On a GPU older than sm_80 (no bf16 instructions), the first op over bf16 tensors is a
    LoweringError naming it and the GPU, before anything is lowered."""
    from xdsl.dialects.builtin import BFloat16Type, TensorType

    from mlc.backend.nvptx import BFLOAT16_MINIMUM_ARCH, arch_number
    from mlc.diagnostics import describe_op
    from mlc.runtime import get_device

    gpu = get_device()
    number = arch_number(gpu.arch)
    if number is None or number >= BFLOAT16_MINIMUM_ARCH:
        return
    for op in module.walk():
        types = [value.type for value in (*op.operands, *op.results)]
        if any(isinstance(t, TensorType) and isinstance(t.element_type, BFloat16Type) for t in types):
            message = (
                f"computes on bf16, which needs a GPU of compute capability 8.0 or newer (sm_80+); "
                f"the target, {gpu.name}, is {gpu.arch} (compile for device='cpu', or cast to f16/f32)"
            )
            raise LoweringError(describe_op(op, message, source_map, name))


def _device_arch(target: str) -> str | None:
    """The GPU's architecture for a 'cuda' compile (opening the device in this thread), else None."""
    if target != "cuda":
        return None
    from mlc.runtime import get_device

    return get_device().arch


def _build(module: ModuleOp, arch: str | None, shared_library: bool) -> Callable[[], Any]:
    """The backend for the lowered `module` in `lower`'s two halves (`then`): PTX for `arch`, else
    the CPU's code (with a shared library when `shared_library`). Only reads `module`."""
    if arch is not None:
        from mlc.backend.nvptx import prepare_ptx

        return prepare_ptx(module, arch)
    from mlc.backend.cpu import prepare_cpu_code

    return prepare_cpu_code(module, shared_library)


def linked_cubin_keeps(ptx: str) -> bool:
    """Whether the driver's linker (the compile cache's cubin, `CudaModule(keep_cubin=True)`)
    compiles `ptx` as a whole-program load would. It compiles PTX as relocatable code and then
    ignores `setmaxnreg` ("to maintain compatibility across compilation units", ptxas C7504): a
    warp-specialized kernel's consumers keep the launch's register count, and where they need
    more (a TF32 product with A in registers: 128 accumulators and two sets of A) ptxas
    serializes the wgmmas (C7512) and spills: 480 us against 392-405 at 4096^3 on an H100, the
    same PTX. Such PTX is loaded by the JIT (the driver's own compute cache keeps it) instead."""
    return "setmaxnreg" not in ptx


def _load(
    module: ModuleOp,
    target: str,
    built: Any,
    function_name: str,
    cuda_graph: bool | None,
    num_threads: int | None,
    shared_library: bool,
) -> tuple[str | bytes, Any, bytes | None]:
    """The kernels (`built` by `_build`), the runtime's program of `function_name`, and (CPU, when
    `shared_library` is asked for and a linker is there) the kernels as a shared library; on the
    GPU, `shared_library` keeps the driver's compiled image (cubin) with the program."""
    from mlc.runtime import HostProgram

    if target == "cuda":
        from mlc.runtime import get_device

        # For the cache (`shared_library`: a later process loads what this one compiled), the
        # driver's compiled image is kept too: a hit then loads it without the PTX JIT.
        program = HostProgram.for_cuda(
            module, built, entry=function_name, device=get_device(), cuda_graph=cuda_graph, keep_cubin=shared_library and linked_cubin_keeps(built)
        )
        return built, program, None
    program = HostProgram.for_cpu(module, built.object_code, function_name, num_threads, built.shared_library)
    return built.object_code, program, built.shared_library


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

    module, name, source_map = _read_source(source)
    verify(module, source_map, name)
    function_name = select_entry(module, entry).sym_name.data

    results = run(module, function_name, [np.asarray(array) for array in arrays])
    return results[0] if len(results) == 1 else tuple(results)
