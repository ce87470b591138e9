"""mlc.compile with the on-disk cache, and saved bundles, end to end on the CPU.

Pass executions and imported modules are counted (never time): a cached compile, in this process
or a fresh one, runs no pass and does not even import the passes; in a fresh process it imports
neither xDSL nor (given /proc/cpuinfo and a C compiler to link the kernels) llvmlite, and loads
the kernels' shared library. The key's CPU fingerprint ignores what changes from one reading of
/proc/cpuinfo to the next and follows what identifies the CPU. Several processes compiling the same program at
once all succeed and leave one valid entry. A corrupted entry is reported and compiled again.
Bundles round-trip, run without the passes, and refuse a machine or mlc they were not made for.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mlc
from mlc.runtime.artifact_cache import ArtifactCache, CacheWarning
from mlc.runtime.artifacts import decode, encode

PROGRAM = """func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = graph.softmax %0 axis 1 : tensor<4x8xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %2 = graph.mul %1, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}"""

INPUTS = [np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32) for _ in range(2)]

CHILD = """
import json, sys
import numpy as np
import mlc, mlc.diagnostics
runs = []
real = mlc.diagnostics.run_pass
mlc.diagnostics.run_pass = lambda *args: (runs.append(args[0].name), real(*args))[1]
compiled = mlc.load(sys.argv[2]) if sys.argv[1] == "load" else mlc.compile(sys.stdin.read(), device="cpu")
x = np.ones((4, 8), np.float32)
print(json.dumps({"passes": len(runs), "transforms_imported": any(m.startswith("mlc.transforms") for m in sys.modules),
                  "result": compiled(x, x).tolist()}))
"""


IMPORTS_CHILD = """
import json, sys
import numpy as np
import mlc
before = set(sys.modules)
compiled = mlc.compile(sys.stdin.read(), device="cpu")
x = np.ones((4, 8), np.float32)
print(json.dumps({"imported": sorted(set(sys.modules) - before), "result": compiled(x, x).tolist(),
                  "loader": type(compiled.program.executor.module).__name__}))
"""

COMPILER_MODULES = ("xdsl", "mlc.transforms", "mlc.passes", "mlc.dialects", "mlc.diagnostics", "mlc.backend", "mlc.interpreter")
"""What a cache hit never needs: xDSL and mlc's modules that parse, lower or generate code."""


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("MLC_CACHE", "1")
    monkeypatch.setenv("MLC_CACHE_DIR", str(directory))
    return directory


def _count_passes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import mlc.diagnostics

    runs: list[str] = []
    real = mlc.diagnostics.run_pass

    def counting(module_pass, context, module):
        runs.append(module_pass.name)
        return real(module_pass, context, module)

    monkeypatch.setattr(mlc.diagnostics, "run_pass", counting)
    return runs


def _child(*args: str, source: str = PROGRAM) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, *args], input=source, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_a_second_compile_runs_no_pass(cache_dir: Path, monkeypatch: pytest.MonkeyPatch):
    runs = _count_passes(monkeypatch)
    first = mlc.compile(PROGRAM, device="cpu")
    compiled_passes = len(runs)
    assert compiled_passes > 10
    second = mlc.compile(PROGRAM, device="cpu")
    assert len(runs) == compiled_passes
    np.testing.assert_array_equal(second(*INPUTS), first(*INPUTS))
    # The cached function keeps its stages on demand: the reference and the lowered IR.
    np.testing.assert_allclose(second.reference(*INPUTS)[0], first.reference(*INPUTS)[0])
    assert "llvm.func" in second.ir


def test_the_key_covers_entry_pipeline_device_and_source(cache_dir: Path, monkeypatch: pytest.MonkeyPatch):
    runs = _count_passes(monkeypatch)
    mlc.compile(PROGRAM, device="cpu")
    count = len(runs)
    mlc.compile(PROGRAM.replace("dense<2.0>", "dense<3.0>"), device="cpu")
    assert len(runs) > count, "another source compiles"
    count = len(runs)
    mlc.compile(PROGRAM, device="cpu", entry="f")
    assert len(runs) > count, "another entry argument compiles"
    count = len(runs)
    mlc.compile(PROGRAM, device="cpu", pipeline="builtin.module(mlc-lower-to-cpu)")
    assert len(runs) > count, "another pipeline spelling compiles"
    assert ArtifactCache(cache_dir).info().entries == 4


def test_the_key_covers_the_hosts_last_level_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """The CPU lowering stores non-temporally where a kernel's streams exceed the last-level
    cache: a host of the same CPU model with another cache size must not get that decision."""
    import mlc.caching

    runs = _count_passes(monkeypatch)
    monkeypatch.setattr(mlc.caching, "host_last_level_cache_bytes", lambda: 32 << 20)
    mlc.compile(PROGRAM, device="cpu")
    count = len(runs)
    mlc.compile(PROGRAM, device="cpu")
    assert len(runs) == count, "the same cache size hits"
    monkeypatch.setattr(mlc.caching, "host_last_level_cache_bytes", lambda: 300 << 20)
    mlc.compile(PROGRAM, device="cpu")
    assert len(runs) > count, "another cache size compiles"


def test_a_module_op_source_is_cached_too(cache_dir: Path, monkeypatch: pytest.MonkeyPatch):
    from mlc.diagnostics import parse_module
    from mlc.dialects import make_context

    module, _ = parse_module(PROGRAM, make_context())
    mlc.compile(module, device="cpu")
    runs = _count_passes(monkeypatch)
    np.testing.assert_allclose(mlc.compile(module, device="cpu")(*INPUTS), mlc.compile(PROGRAM, device="cpu")(*INPUTS))
    assert runs.count("convert-graph-to-tile") == 1  # the ModuleOp hit; the text compiled once


def test_a_fresh_process_loads_the_cached_program_without_the_passes(cache_dir: Path):
    first = _child("compile")
    second = _child("compile")
    assert first["passes"] > 10 and first["transforms_imported"]
    assert second["passes"] == 0 and not second["transforms_imported"]
    assert second["result"] == first["result"]


def test_a_fresh_process_hit_imports_no_compiler_and_loads_the_shared_library(cache_dir: Path):
    from mlc.backend.cpu import c_compiler_driver
    from mlc.caching import host_cpu_fingerprint

    def child() -> dict:
        done = subprocess.run([sys.executable, "-c", IMPORTS_CHILD], input=PROGRAM, capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    def loaded(report: dict, *packages: str) -> list[str]:
        return [name for name in report["imported"] if any(name == p or name.startswith(p + ".") for p in packages)]

    first, second = child(), child()
    assert loaded(first, "xdsl", "mlc.transforms") and second["result"] == first["result"]
    assert not loaded(second, *COMPILER_MODULES, "mlc.tuning.database", "mlc.runtime.cuda", "cuda")
    if host_cpu_fingerprint() is not None and c_compiler_driver() is not None:
        assert second["loader"] == "SharedLibrary" and not loaded(second, "llvmlite")


def test_the_cpu_fingerprint_follows_the_cpu_not_the_clock(tmp_path: Path):
    from mlc.caching import host_cpu_fingerprint

    block = "processor\t: {n}\nvendor_id\t: GenuineIntel\nmodel\t\t: 143\ncpu MHz\t\t: {mhz}\nflags\t\t: {flags}\n"
    cpuinfo = tmp_path / "cpuinfo"

    def fingerprint(mhz: str, flags: str, second_flags: str = "sse2 avx2") -> str | None:
        cpuinfo.write_text(block.format(n=0, mhz=mhz, flags=flags) + "\n" + block.format(n=1, mhz=mhz, flags=second_flags))
        return host_cpu_fingerprint(str(cpuinfo))

    reference = fingerprint("2600.0", "sse2 avx2")
    assert reference is not None
    assert fingerprint("3400.5", "sse2 avx2") == reference  # the clock is not the CPU
    assert fingerprint("2600.0", "sse2 avx2", "sse2") == reference  # only the first block is read
    assert fingerprint("2600.0", "sse2 avx2 avx512f") != reference  # another feature set
    assert host_cpu_fingerprint(str(tmp_path / "missing")) is None
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2600\n")
    assert host_cpu_fingerprint(str(cpuinfo)) is None  # nothing that names the CPU: ask LLVM


def test_processes_compiling_the_same_program_at_once_all_succeed(cache_dir: Path):
    children = [
        subprocess.Popen([sys.executable, "-c", CHILD, "compile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [child.communicate(PROGRAM)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0, 0]
    results = [json.loads(output)["result"] for output in outputs]
    assert results[0] == results[1] == results[2]
    entries = list(cache_dir.rglob("*.mlca"))
    assert len(entries) == 1 and not list(cache_dir.rglob("*.tmp"))
    decode(entries[0].read_bytes())  # whole and valid
    assert _child("compile")["passes"] == 0


def test_a_corrupted_entry_is_reported_and_compiled_again(cache_dir: Path, monkeypatch: pytest.MonkeyPatch):
    expected = mlc.compile(PROGRAM, device="cpu")(*INPUTS)
    (entry,) = cache_dir.rglob("*.mlca")
    entry.write_bytes(entry.read_bytes()[:-100])
    runs = _count_passes(monkeypatch)
    with pytest.warns(CacheWarning, match="checksum mismatch"):
        again = mlc.compile(PROGRAM, device="cpu")
    assert runs and np.array_equal(again(*INPUTS), expected)
    decode(entry.read_bytes())  # stored again, whole


def test_an_unusable_cache_directory_only_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("MLC_CACHE", "1")
    monkeypatch.setenv("MLC_CACHE_DIR", str(blocker / "cache"))
    with pytest.warns(CacheWarning, match="off for this process"):
        compiled = mlc.compile(PROGRAM, device="cpu")
    np.testing.assert_allclose(compiled(*INPUTS), compiled.reference(*INPUTS)[0], rtol=1e-5, atol=1e-6)


def test_a_bundle_round_trips_and_runs_without_the_passes(tmp_path: Path):
    compiled = mlc.compile(PROGRAM, device="cpu")
    bundle = tmp_path / "f.mlcb"
    mlc.save(compiled, bundle)
    loaded = mlc.load(bundle)
    assert (loaded.name, loaded.device) == ("f", "cpu")
    np.testing.assert_array_equal(loaded(*INPUTS), compiled(*INPUTS))
    child = _child("load", str(bundle))
    assert child["passes"] == 0 and not child["transforms_imported"]
    x = np.ones((4, 8), np.float32)
    assert child["result"] == compiled(x, x).tolist()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mlc_version", "0.0.1", "was saved for mlc version '0.0.1'"),
        ("features", "+made-up", r"saved for a CPU with features .*\(\+made-up\)"),
        ("device", "cuda", "device 'cuda'|no usable CUDA device|no CUDA device"),
    ],
)
def test_a_bundle_for_another_target_is_a_clear_error(tmp_path: Path, field: str, value: str, message: str):
    bundle = tmp_path / "f.mlcb"
    mlc.save(mlc.compile(PROGRAM, device="cpu"), bundle)
    artifact = decode(bundle.read_bytes())
    changed = type(artifact)(**{**artifact.__dict__, "target": {**artifact.target, field: value}})
    if field == "device":
        changed = type(artifact)(**{**changed.__dict__, "device": "cuda"})
    bundle.write_bytes(encode(changed))
    with pytest.raises(mlc.MlcError, match=message):
        mlc.load(bundle)


def test_a_damaged_or_missing_bundle_is_a_clear_error(tmp_path: Path):
    from mlc.caching import BundleError

    bundle = tmp_path / "f.mlcb"
    with pytest.raises(BundleError, match="cannot read the bundle"):
        mlc.load(bundle)
    mlc.save(mlc.compile(PROGRAM, device="cpu"), bundle)
    bundle.write_bytes(bundle.read_bytes()[:50])
    with pytest.raises(BundleError, match="not a usable mlc bundle: checksum mismatch"):
        mlc.load(bundle)
    with pytest.raises(mlc.ArgumentTypeError, match="mlc.save takes what mlc.compile returns"):
        mlc.save("not compiled", bundle)


def test_the_command_line_tools(tmp_path: Path, cache_dir: Path):
    source, bundle = tmp_path / "f.mlir", tmp_path / "f.mlcb"
    source.write_text(PROGRAM)
    tools = Path(sys.executable).parent
    subprocess.run([tools / "mlc-compile", source, "-o", bundle, "--device", "cpu"], check=True, capture_output=True)
    np.testing.assert_allclose(mlc.load(bundle)(*INPUTS), mlc.compile(PROGRAM, device="cpu")(*INPUTS))
    # mlc-compile stored the program, under the key the same text has here: one entry.
    info = subprocess.run([tools / "mlc-cache", "info"], check=True, capture_output=True, text=True).stdout
    assert f"directory: {cache_dir}" in info and "entries: 1" in info
    cleared = subprocess.run([tools / "mlc-cache", "clear"], check=True, capture_output=True, text=True).stdout
    assert cleared.startswith("removed 1 entry from")
    assert ArtifactCache(cache_dir).info().entries == 0


def test_spelling_a_hopper_gpus_pipeline_loads_no_passes():
    """The default pipeline is part of the cache key, so a GPU hit spells it (on sm_90 with its
    `arch`) before it knows whether anything must compile: that must not load xDSL or the passes."""
    code = (
        "import sys\nfrom mlc.compiler import default_pipeline_for\n"
        "print(default_pipeline_for('cuda', 'sm_90'), any(m.split('.')[0] == 'xdsl' or m.startswith('mlc.transforms') for m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["mlc-lower-to-gpu{arch=sm_90", "tma=true", "warp-specialize=true", "stage-epilogue=true", "l2-group-tiles=8", "tf32-swap=true}", "False"]


@pytest.mark.gpu
def test_a_gpu_hit_loads_the_compiled_image_without_the_jit(cache_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """On a GPU, the entry keeps the driver's compiled image (cubin) beside the PTX; a hit loads
    that image, computing what the compile's program computed."""
    if "cuda" not in mlc.available_devices():
        pytest.skip("needs a CUDA device")
    runs = _count_passes(monkeypatch)
    first = mlc.compile(PROGRAM, device="cuda")
    compiled_passes = len(runs)
    second = mlc.compile(PROGRAM, device="cuda")
    assert len(runs) == compiled_passes  # a hit
    image = second.program.executor.module.cubin
    assert image is not None and image == first.program.executor.module.cubin
    assert image[:4] == b"\x7fELF"  # a cubin, not PTX
    np.testing.assert_array_equal(second(*INPUTS), first(*INPUTS))
