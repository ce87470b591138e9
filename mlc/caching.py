"""Compiled functions as artifacts: cache keys, cache hits, saved bundles.

`mlc.compile` asks `look_up` first: it computes the cache key of the source (its text, read
without parsing), the entry, the pipeline and the target, and returns the cached function when
the on-disk cache (`mlc/runtime/artifact_cache.py`) holds it. Only on a miss does the compiler
proper load (xDSL, the passes, LLVM); afterwards `artifact_of` turns the new function into an
artifact for `store`. A hit imports nothing of the compiler: the artifact holds the host plan as
data and the kernels as PTX or object code, which the runtime loads directly.

`save(compiled, path)` writes the same artifact to a file of the user's, a *bundle*, and
`load(path)` reads one back: it runs without compiling and without importing the passes, on a
machine whose target matches (the same GPU architecture, or the same CPU triple and features)
with the same mlc version; anything else is a `BundleError` saying what differs.

The target (`target_description`) is what decides the code besides the source and pipeline:
for the GPU, the architecture and the CUDA driver's version (which JIT-compiles the PTX); for
the CPU, the triple, the CPU's name and features (the object uses all of them). mlc's build
(`mlc_build`) is its version plus a fingerprint of its source files' names, sizes and
modification times, so that editing mlc (a pass, the backend) never serves stale code; xDSL's
and llvmlite's versions are part of the key as well.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlc.errors import MlcError
from mlc.runtime.artifact_cache import ArtifactCache, cache_key
from mlc.runtime.artifacts import Artifact, ArtifactError, decode, encode

if TYPE_CHECKING:
    from mlc.compiler import CompiledFunction

KEY_SCHEMA = "mlc-compile-key-1"
BUNDLE_FIELDS = ("device", "arch", "triple", "cpu", "features", "mlc_version")
"""The target fields a bundle must match where it is loaded (the driver may differ: it JITs PTX)."""


class BundleError(MlcError):
    """A saved bundle cannot be loaded here; the message says why (another GPU, another mlc, ...)."""


def _installed_version(package: str) -> str:
    """The version of an installed distribution, from its `NAME-VERSION.dist-info` directory
    beside the package (what importlib.metadata reads too, without its 30 ms of imports)."""
    from importlib.util import find_spec

    spec = find_spec(package)
    if spec is not None and spec.origin is not None:
        site = Path(spec.origin).parent.parent
        prefix = f"{package}-"
        for name in os.listdir(site):
            if name.startswith(prefix) and name.endswith(".dist-info"):
                return name[len(prefix) : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "unknown"


def _versions() -> dict[str, str]:
    """mlc's version and those of the dependencies that shape the compiled code."""
    import mlc

    return {"mlc": mlc.__version__, "xdsl": _installed_version("xdsl"), "llvmlite": _installed_version("llvmlite")}


def mlc_build() -> str:
    """mlc's version and a fingerprint of its source files (see the module docstring)."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(directory, name))
                relative = os.path.relpath(os.path.join(directory, name), root)
                digest.update(f"{relative}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return f"{_versions()['mlc']}+{digest.hexdigest()[:16]}"


def target_description(device: str) -> dict[str, str]:
    """What the compiled code depends on besides source and pipeline, for `device` here."""
    description = {"device": device, "mlc": mlc_build(), "mlc_version": _versions()["mlc"]}
    if device == "cuda":
        from mlc.runtime import get_device

        properties = get_device().properties
        description |= {"arch": properties.arch, "driver": str(properties.driver_version)}
    else:
        import platform

        from llvmlite import binding

        try:
            features = binding.get_host_cpu_features().flatten()
        except RuntimeError:  # LLVM cannot tell on this host (the backend then uses the baseline)
            features = ""
        description |= {
            "triple": binding.get_process_triple(),
            "cpu": binding.get_host_cpu_name(),
            "features": features,
            "machine": platform.machine(),
        }
    return description


def dependency_versions() -> str:
    versions = _versions()
    return ";".join(f"{name}={versions[name]}" for name in ("xdsl", "llvmlite"))


@dataclass(frozen=True)
class Lookup:
    """A cache probe: where a miss's result is to be stored."""

    cache: ArtifactCache
    key: str
    target: dict[str, str]


def look_up(
    text: str,
    device: str,
    entry: str | None,
    pipeline: str,
    cuda_graph: bool = False,
    num_threads: int | None = None,
) -> tuple[CompiledFunction | None, Lookup | None]:
    """The cached function for this compile, if any, and the lookup (None when the cache is off)."""
    cache = ArtifactCache.from_environment()
    if cache is None:
        return None, None
    target = target_description(device)
    fields = [KEY_SCHEMA, text, entry or "", pipeline, dependency_versions()]
    key = cache_key(*fields, *(f"{name}={value}" for name, value in sorted(target.items())))
    lookup = Lookup(cache, key, target)
    artifact = cache.load(key)
    if artifact is None:
        return None, lookup
    return function_from_artifact(artifact, cuda_graph, num_threads), lookup


def store(lookup: Lookup, compiled: CompiledFunction) -> None:
    lookup.cache.store(lookup.key, artifact_of(compiled, lookup.target, lookup.key))


def artifact_of(compiled: CompiledFunction, target: dict[str, str], key: str = "") -> Artifact:
    return Artifact(
        device=compiled.device,
        function_name=compiled.name,
        pipeline=compiled.pipeline,
        kernels=compiled.kernels,
        plan=compiled.program.plan,
        graph_source=compiled.graph_source,
        target=target,
        key=key,
    )


def function_from_artifact(
    artifact: Artifact, cuda_graph: bool = False, num_threads: int | None = None
) -> CompiledFunction:
    """A callable function from `artifact`, loaded by the runtime (no compiling)."""
    from mlc.compiler import CompiledFunction
    from mlc.runtime import HostProgram

    if artifact.device == "cuda":
        from mlc.runtime import get_device

        assert isinstance(artifact.kernels, str)
        program = HostProgram.for_cuda_plan(artifact.plan, artifact.kernels, get_device(), cuda_graph=cuda_graph)
    else:
        assert isinstance(artifact.kernels, bytes)
        program = HostProgram.for_cpu_plan(artifact.plan, artifact.kernels, num_threads)
    return CompiledFunction(
        artifact.function_name, artifact.device, program, artifact.kernels, artifact.pipeline, artifact.graph_source
    )


# -- bundles -----------------------------------------------------------------------------------


def save(compiled: CompiledFunction, path: str | os.PathLike[str]) -> None:
    """Writes `compiled` to `path` as a self-contained bundle (atomically: temp file + rename)."""
    from mlc.compiler import CompiledFunction

    if not isinstance(compiled, CompiledFunction):
        from mlc.errors import ArgumentTypeError

        raise ArgumentTypeError(f"mlc.save takes what mlc.compile returns; got {type(compiled).__name__}")
    data = encode(artifact_of(compiled, target_description(compiled.device)))
    destination = Path(path)
    temporary = destination.with_name(f".{destination.name}.{os.getpid()}.tmp")
    try:
        temporary.write_bytes(data)
        os.replace(temporary, destination)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise BundleError(f"cannot write the bundle {destination}: {error.strerror or error}") from None


def load(path: str | os.PathLike[str]) -> CompiledFunction:
    """The function saved in the bundle at `path`, ready to call (see the module docstring)."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise BundleError(f"cannot read the bundle {path}: {error.strerror or error}") from None
    try:
        artifact = decode(data)
    except ArtifactError as error:
        raise BundleError(f"{path} is not a usable mlc bundle: {error}") from None
    if artifact.device == "cuda":
        from mlc.compiler import require_cuda_device

        require_cuda_device()
    here = target_description(artifact.device)
    for name in BUNDLE_FIELDS:
        if artifact.target.get(name) != here.get(name):
            raise BundleError(_mismatch(path, name, artifact.target.get(name), here.get(name)))
    return function_from_artifact(artifact)


def _mismatch(path: Any, field: str, saved: str | None, here: str | None) -> str:
    what = {
        "device": "device",
        "arch": "GPU architecture",
        "triple": "target triple",
        "cpu": "CPU",
        "features": "CPU features",
        "mlc_version": "mlc version",
    }[field]
    advice = "compile the program again here (mlc.compile), and save that"
    if field == "features" and saved is not None and here is not None:
        differ = sorted(set(saved.split(",")) - set(here.split(",")))
        return f"{path} was saved for a CPU with features this one lacks or lacks features it has ({', '.join(differ)}): {advice}"
    if field == "mlc_version":
        advice = "load it with the mlc that saved it, or compile the program again with this one"
    return f"{path} was saved for {what} {saved!r}, but this machine has {here!r}: {advice}"
