"""mlc: an MLIR-style multi-dialect compiler for deep learning, on xDSL.

The public Python API:

    f = mlc.compile(source, device="auto", entry=None)   # MLIR text, a .mlir path, or a ModuleOp
    y = f(x)                                              # numpy arrays in and out
    mlc.run(source, *arrays, device="auto")               # compile and call once
    mlc.interpret(source, *arrays)                        # the reference interpreter, no compiling
    mlc.lower(source, device="auto")                      # the lowered module, no code generated
    mlc.available_devices()                               # ("cuda", "cpu") or ("cpu",)
    mlc.passes()                                          # name -> pass class, every registered pass
    mlc.save(f, "f.mlcb"); g = mlc.load("f.mlcb")         # a bundle: runs without compiling again

Compiled programs are cached on disk (MLC_CACHE_DIR, MLC_CACHE=0 to turn it off; see
mlc/runtime/artifact_cache.py): compiling the same program again, in any process, loads it.

Errors: every error meant for people is an `MlcError`; source that cannot be compiled is a
`CompileError`, and a `LoweringError` (a `CompileError`) when a pass cannot lower one of its ops
yet (a limit of mlc rather than an error in the source); a bad argument is an `ArgumentError`
(also a ValueError) or `ArgumentTypeError` (also a TypeError); a program that cannot fit in its
device's memory an `OutOfMemoryError`; compiled functions may be called from several threads
(see the README's "Using it").

Everything heavier than this module loads on first use, so `import mlc` stays cheap for tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlc.errors import ArgumentError, ArgumentTypeError, MlcError, OutOfMemoryError

if TYPE_CHECKING:
    from mlc.compiler import CompiledFunction

__version__ = "0.1.0"
"""mlc's version (pyproject.toml reads it from here)."""

__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "CompileError",
    "CompiledFunction",
    "LoweringError",
    "MlcError",
    "OutOfMemoryError",
    "available_devices",
    "compile",
    "interpret",
    "load",
    "lower",
    "passes",
    "run",
    "save",
]


def compile(  # noqa: A001
    source: Any,
    device: str = "auto",
    entry: str | None = None,
    pipeline: str | None = None,
    precision: str | None = None,
    cuda_graph: bool | None = None,
    num_threads: int | None = None,
) -> CompiledFunction:
    """Compiles the entry function of `source` for `device` ('auto', 'cuda' or 'cpu').

    `source` is a ModuleOp, a path or MLIR text (mlc/compiler.py says how a str is told apart);
    `precision` ('ieee', 'tf32' or '3xtf32') is that of f32 matmuls that state none;
    `cuda_graph=True` replays the launches of a call as one CUDA graph (GPU only), `False` never
    does, and None (the default) does where it pays (mlc/runtime/graph_choice.py);
    `num_threads` is the CPU's thread count (default: `MLC_NUM_THREADS`, else every core).
    """
    from mlc.compiler import compile as compile_source

    return compile_source(
        source,
        device=device,
        entry=entry,
        pipeline=pipeline,
        precision=precision,
        cuda_graph=cuda_graph,
        num_threads=num_threads,
    )


def run(source: Any, *arrays: Any, device: str = "auto", entry: str | None = None) -> Any:
    """Compiles `source` and calls it once on `arrays`."""
    return compile(source, device=device, entry=entry)(*arrays)


def lower(source: Any, device: str = "auto", entry: str | None = None, pipeline: str | None = None) -> Any:
    """`source` lowered for `device` as `compile` would, without generating code: raises the
    `LoweringError` naming an op mlc cannot compile yet, else returns the lowered ModuleOp."""
    from mlc.compiler import lower_source

    return lower_source(source, device=device, entry=entry, pipeline=pipeline)


def interpret(source: Any, *arrays: Any, entry: str | None = None) -> Any:
    """Runs the entry function of `source` in the reference interpreter, without compiling it."""
    from mlc.compiler import interpret as interpret_source

    return interpret_source(source, *arrays, entry=entry)


def save(compiled: CompiledFunction, path: Any) -> None:
    """Writes a compiled function to `path` as a self-contained bundle (see mlc/caching.py)."""
    from mlc.caching import save as save_bundle

    save_bundle(compiled, path)


def load(path: Any) -> CompiledFunction:
    """The compiled function saved at `path`; a `BundleError` says why one cannot run here."""
    from mlc.caching import load as load_bundle

    return load_bundle(path)


def available_devices() -> tuple[str, ...]:
    """The devices `compile` can target on this machine, preferred ('auto') first."""
    from mlc.compiler import available_devices as devices_here

    return devices_here()


def passes() -> dict[str, type]:
    """Every pass mlc-opt knows, by CLI name."""
    from mlc.transforms import all_passes

    return {name: load() for name, load in all_passes().items()}


def __getattr__(name: str) -> Any:
    if name in ("CompiledFunction", "CompileError", "LoweringError"):
        import mlc.compiler

        return getattr(mlc.compiler, name)
    if name == "BundleError":
        from mlc.caching import BundleError

        return BundleError
    if name == "CacheWarning":
        from mlc.runtime.artifact_cache import CacheWarning

        return CacheWarning
    raise AttributeError(f"module 'mlc' has no attribute '{name}'")
