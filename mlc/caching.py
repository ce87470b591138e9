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
the CPU, the triple, the CPU's name and features (the object uses all of them). Asking LLVM for
the CPU's name and features means loading llvmlite (40 ms), more than the rest of a cache hit, so
the cache key names the CPU by what Linux reports of it instead (`host_cpu_fingerprint`: the
vendor, family, model, stepping and feature flags of /proc/cpuinfo, from which LLVM's answer
follows for a given LLVM, whose version is in the key too), and by its last-level cache's size
(`host_caches`: the CPU lowering's store kind depends on it); without /proc/cpuinfo it asks LLVM.
A CPU hit then loads the kernels' shared library (`artifacts.py`), and never imports llvmlite. mlc's build
(`mlc_build`) is its version plus a fingerprint of its source files' names, sizes and
modification times, so that editing mlc (a pass, the backend) never serves stale code; xDSL's
and llvmlite's versions are part of the key as well.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlc.errors import MlcError
from mlc.host_caches import host_last_level_cache_bytes
from mlc.runtime.artifact_cache import ArtifactCache, cache_key
from mlc.runtime.artifacts import Artifact, ArtifactError, decode, encode
from mlc.runtime.digests import sha256

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
    digest = sha256()
    _fingerprint_sources(str(Path(__file__).parent), "", digest)
    return f"{_versions()['mlc']}+{digest.hexdigest()[:16]}"


def _fingerprint_sources(directory: str, relative: str, digest: Any) -> None:
    """Adds `relative/name:size:mtime;` of every .py file under `directory` to `digest`, in
    sorted order (one scandir per directory: this runs before every cache lookup)."""
    entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    for entry in entries:
        if entry.name.endswith(".py") and entry.is_file():
            stat = entry.stat()
            digest.update(f"{relative}{entry.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    for entry in entries:
        if entry.is_dir() and entry.name != "__pycache__":
            _fingerprint_sources(entry.path, f"{relative}{entry.name}/", digest)


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


CPU_FINGERPRINT_FIELDS = frozenset(
    ("vendor_id", "cpu family", "model", "model name", "stepping", "flags", "features", "cpu implementer",
     "cpu architecture", "cpu variant", "cpu part", "cpu revision", "cpu", "isa", "uarch")
)  # fmt: skip
"""The /proc/cpuinfo fields (lowercase) that say which CPU this is and what it can do: x86's,
Arm's, POWER's and RISC-V's; not the clock, the core's number or the cache size."""


def host_cpu_fingerprint(cpuinfo: str = "/proc/cpuinfo") -> str | None:
    """A digest of the first processor's identifying fields in `cpuinfo`, None where there is no
    such file or it names none of them (see the module docstring)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as file:
            lines = []
            for line in file:  # the first processor's block: all a key needs, and cheap on many cores
                if not line.strip():
                    if lines:
                        break
                    continue
                lines.append(line)
    except OSError:
        return None
    fields = sorted(
        f"{name.strip().lower()}={value.strip()}"
        for name, _, value in (line.partition(":") for line in lines)
        if name.strip().lower() in CPU_FINGERPRINT_FIELDS
    )
    return sha256("\n".join(fields).encode()).hexdigest() if fields else None


def cache_target(device: str) -> dict[str, str]:
    """What a cache key holds of the target: `target_description(device)`, except that a CPU is
    named by `host_cpu_fingerprint` where there is one (no LLVM needed; see the module docstring)."""
    if device == "cpu":
        fingerprint = host_cpu_fingerprint()
        if fingerprint is not None:
            return {
                "device": device,
                "mlc": mlc_build(),
                "mlc_version": _versions()["mlc"],
                "machine": os.uname().machine,
                "cpu_fingerprint": fingerprint,
                "last_level_cache_bytes": str(host_last_level_cache_bytes()),
            }
    return target_description(device)


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
    cuda_graph: bool | None = None,
    num_threads: int | None = None,
) -> tuple[CompiledFunction | None, Lookup | None]:
    """The cached function for this compile, if any, and the lookup (None when the cache is off)."""
    cache = ArtifactCache.from_environment()
    if cache is None:
        return None, None
    target = cache_target(device)
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
        shared_library=compiled.shared_library,
        cubin=getattr(getattr(compiled.program.executor, "module", None), "cubin", None),
    )


def function_from_artifact(
    artifact: Artifact, cuda_graph: bool | None = None, num_threads: int | None = None
) -> CompiledFunction:
    """A callable function from `artifact`, loaded by the runtime (no compiling)."""
    from mlc.compiler import CompiledFunction
    from mlc.runtime import HostProgram

    if artifact.device == "cuda":
        from mlc.runtime import get_device

        assert isinstance(artifact.kernels, str)
        program = HostProgram.for_cuda_plan(
            artifact.plan, artifact.kernels, get_device(), cuda_graph=cuda_graph, cubin=artifact.cubin
        )
    else:
        assert isinstance(artifact.kernels, bytes)
        program = HostProgram.for_cpu_plan(artifact.plan, artifact.kernels, num_threads, artifact.shared_library)
    return CompiledFunction(
        artifact.function_name,
        artifact.device,
        program,
        artifact.kernels,
        artifact.pipeline,
        artifact.graph_source,
        shared_library=artifact.shared_library,
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
