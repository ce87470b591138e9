"""LLVM IR → PTX for NVIDIA GPUs, with llvmlite's NVPTX back end.

`compile_to_ptx(module, arch)` returns the PTX of every `llvm.func` of `module` (kernels, marked
`nvvm.kernel`, become `.entry`s); `translate_for_nvptx(module)` stops at the llvmlite module
(without the code generation checks below, so that any valid module can be inspected).

Algorithm:

1. Translate for the triple `nvptx64-nvidia-cuda` and NVPTX's data layout (`llvm_translate`).
2. Parse and verify with LLVM.
3. If the module declares `__nv_*` functions, link libdevice: the subset of `libdevice.10.bc` those
   functions need (`libdevice_subset`: parsed, given our triple and data layout, as it says
   `nvptx64-nvidia-gpulibs`, and pruned by GlobalDCE once per process and set of functions, as
   parsing all of it cost ~40 ms per compile), link it in, internalize every function that came
   from it, and drop at once what nothing calls (O3 would drop it too, after analysing it). libdevice
   asks `__nvvm_reflect("__CUDA_FTZ")` whether to flush denormals; the NVVMReflect pass, which
   the NVPTX target adds to the pipeline, answers from the module flag `nvvm-reflect-ftz` that
   the translation sets to 0.
4. O3 (`llvm_codegen.optimize`), verify, emit assembly for `arch`.

bf16 needs sm_80 or newer: for an older `arch` a module with bf16 code is a `BackendError` naming
the kernel and the architecture (`mlc.compile` refuses earlier, naming the graph op).

LLVM's NVPTX back end does not return an error for what it cannot lower: it aborts or exits the
whole Python process. So the translation rejects, with a message naming the op, the math
intrinsics NVPTX has no lowering for in LLVM 22 (`llvm.exp`, `llvm.log`, `llvm.pow`,
`llvm.powi`, ..., `llvm.exp2.f64`, and `llvm.sin`/`cos`/`tanh` unless f16/f32 and `afn`;
libdevice's `__nv_*` functions are the way to call them), and the intrinsics of other targets. After O3 a call to a
function that is neither defined, nor libdevice's, nor provided by the CUDA driver (`vprintf`,
`malloc`, `free`, `__assertfail`) is an error too, rather than a PTX that fails to load.

The PTX ISA version is the arch's minimum under LLVM 22, but at least 8.0 (`DEFAULT_PTX_VERSION`)
so that sm_80/sm_90 code may use the newer instructions LLVM gates on it; pass `ptx_version` to
choose another (e.g. 78 for PTX 7.8 when the driver is older than CUDA 12). libdevice is found
through `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda*/nvvm/libdevice/`, Triton's bundled copy
(`triton/backends/nvidia/lib/`, found without importing Triton) and finally `cuda.pathfinder`
(CUDA wheels); when a module needs it and none is found, `LibdeviceNotFoundError` says where we
looked.

Limits: one module in, one PTX text out; no separate compilation or relocatable device code.
"""

from __future__ import annotations

import difflib
import functools
import glob
import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from llvmlite import binding, ir
from xdsl.dialects.builtin import ModuleOp

from mlc.backend.errors import BackendError
from mlc.backend.llvm_codegen import drop_unused_definitions, initialize_llvm, optimize, parse_verified, verify
from mlc.backend.llvm_translate import TargetDescription, translate_module

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"
DEFAULT_PTX_VERSION = 80
LIBDEVICE_PREFIX = "__nv_"
LIBDEVICE_FILE = "libdevice.10.bc"

ARCH_MINIMUM_PTX_VERSION: dict[str, int] = {
    "sm_50": 40, "sm_52": 41, "sm_53": 42,
    "sm_60": 50, "sm_61": 50, "sm_62": 50,
    "sm_70": 60, "sm_72": 61, "sm_75": 63,
    "sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_88": 90, "sm_89": 78,
    "sm_90": 78, "sm_90a": 80,
    "sm_100": 86, "sm_100a": 86, "sm_100f": 88,
    "sm_101": 86, "sm_101a": 86, "sm_101f": 88,
    "sm_103": 88, "sm_103a": 88, "sm_103f": 88,
    "sm_110": 90, "sm_110a": 90, "sm_110f": 90,
    "sm_120": 87, "sm_120a": 87, "sm_120f": 88,
    "sm_121": 88, "sm_121a": 88, "sm_121f": 88,
}  # fmt: skip
"""The GPU architectures LLVM 22 knows, with the lowest PTX ISA version (x10) each needs."""

MAXIMUM_PTX_VERSION = 90
"""The newest PTX ISA LLVM 22 can emit (9.0)."""

DRIVER_PROVIDED_FUNCTIONS = ("vprintf", "malloc", "free", "__assertfail")
"""External functions the CUDA driver resolves when it loads PTX."""

_NEVER_LOWERED = frozenset(
    ("exp", "exp10", "log", "log2", "log10", "pow", "powi", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh")
)
"""Math intrinsics LLVM 22's NVPTX back end cannot lower for any type (probed). `powi` is lowered
only when its exponent is a constant, which this check cannot see: it is refused too."""
_APPROXIMATED = frozenset(("sin", "cos", "tanh"))
"""Lowered only for f16 and f32 with the `afn` flag (to the hardware approximations)."""
_FOREIGN_INTRINSIC_PREFIXES = ("llvm.x86.", "llvm.aarch64.", "llvm.arm.", "llvm.amdgcn.", "llvm.riscv.")


class LibdeviceNotFoundError(BackendError):
    """The module calls libdevice (`__nv_*`) functions, but no libdevice.10.bc was found."""


def check_arch(arch: str) -> None:
    if arch not in ARCH_MINIMUM_PTX_VERSION:
        close = difflib.get_close_matches(arch, ARCH_MINIMUM_PTX_VERSION, n=3, cutoff=0.6)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        raise BackendError(
            f"unknown GPU architecture '{arch}'{hint}; LLVM 22 knows {', '.join(ARCH_MINIMUM_PTX_VERSION)}"
        )


def ptx_version_for(arch: str, requested: int | None = None) -> int:
    """The PTX ISA version (x10, e.g. 80 for 8.0) to emit for `arch`."""
    check_arch(arch)
    minimum = ARCH_MINIMUM_PTX_VERSION[arch]
    if requested is None:
        return max(minimum, DEFAULT_PTX_VERSION)
    if not minimum <= requested <= MAXIMUM_PTX_VERSION:
        raise BackendError(
            f"PTX ISA version {requested / 10:.1f} cannot be used for {arch}: it needs "
            f"{minimum / 10:.1f} to {MAXIMUM_PTX_VERSION / 10:.1f}"
        )
    return requested


def target_machine(arch: str = DEFAULT_ARCH, ptx_version: int | None = None) -> binding.TargetMachine:
    initialize_llvm()
    features = f"+ptx{ptx_version_for(arch, ptx_version)}"
    return binding.Target.from_triple(TRIPLE).create_target_machine(cpu=arch, features=features, opt=3)


def _element_type(type_: ir.Type) -> ir.Type:
    return type_.element if isinstance(type_, ir.VectorType) else type_


def unsupported_intrinsic(name: str, result_type: ir.Type, fast_math: Sequence[str]) -> str | None:
    """Why LLVM 22 cannot lower intrinsic `name` for NVPTX (it would abort), or None."""
    if name.startswith(_FOREIGN_INTRINSIC_PREFIXES):
        return "is an intrinsic of another target"
    base = name.split(".")[1] if name.count(".") >= 2 else ""
    double = isinstance(_element_type(result_type), ir.DoubleType)
    approximate = base in _APPROXIMATED and not double and "afn" in fast_math
    if base in _NEVER_LOWERED or (base == "exp2" and double) or (base in _APPROXIMATED and not approximate):
        suffix = "" if double else "f"
        advice = f"call libdevice's @__nv_{base}{suffix} instead"
        if base in _APPROXIMATED and not double:
            advice += " (or give the call the afn flag for the hardware approximation)"
        return f"has no NVPTX lowering in LLVM 22; {advice}"
    return None


def nvptx_target(*, for_code_generation: bool) -> TargetDescription:
    """The NVPTX target; code generation also rejects the intrinsics that would abort LLVM."""
    # NVPTX's data layout does not depend on the architecture.
    return TargetDescription(
        triple=TRIPLE,
        data_layout=str(target_machine().target_data),
        gpu=True,
        unsupported_intrinsic=unsupported_intrinsic if for_code_generation else None,
    )


def translate_for_nvptx(module: ModuleOp) -> ir.Module:
    """The LLVM IR of `module` for NVPTX, as it is before libdevice and O3 (for inspection)."""
    return translate_module(module, nvptx_target(for_code_generation=False))


# ---------------------------------------------------------------------------------------------
# libdevice


def libdevice_search_paths() -> list[Path]:
    """Where libdevice.10.bc may be, most specific first."""
    roots = [os.environ[name] for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name)]
    roots += ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)]
    paths = [Path(root) / "nvvm" / "libdevice" / LIBDEVICE_FILE for root in roots]
    triton = importlib.util.find_spec("triton")  # locates the package without importing it
    if triton is not None and triton.submodule_search_locations:
        for location in triton.submodule_search_locations:
            paths.append(Path(location) / "backends" / "nvidia" / "lib" / LIBDEVICE_FILE)
    return paths


def _libdevice_from_cuda_pathfinder() -> Path | None:
    try:
        from cuda import pathfinder
    except ImportError:
        return None
    try:
        return Path(pathfinder.find_bitcode_lib("device"))
    except (ValueError, pathfinder.BitcodeLibNotFoundError):
        return None


def find_libdevice() -> Path:
    paths = libdevice_search_paths()
    for path in paths:
        if path.is_file():
            return path
    found = _libdevice_from_cuda_pathfinder()
    if found is not None and found.is_file():
        return found
    searched = "\n  ".join(str(p) for p in paths)
    raise LibdeviceNotFoundError(
        f"the module calls libdevice functions ({LIBDEVICE_PREFIX}*), but {LIBDEVICE_FILE} was not found; "
        f"set CUDA_HOME to a CUDA installation. Searched:\n  {searched}\n  and cuda.pathfinder"
    )


def calls_libdevice(module: binding.ModuleRef) -> bool:
    return any(f.is_declaration and f.name.startswith(LIBDEVICE_PREFIX) for f in module.functions)


def link_libdevice(module: binding.ModuleRef) -> None:
    """Links into `module` the libdevice functions it declares (and what they call), internalized
    for O3 to inline and prune."""
    path = find_libdevice()
    wanted = frozenset(f.name for f in module.functions if f.is_declaration and f.name.startswith(LIBDEVICE_PREFIX))
    try:
        needed = binding.parse_bitcode(libdevice_subset(str(path), wanted, module.triple, module.data_layout))
    except (OSError, RuntimeError) as error:
        raise BackendError(f"cannot read libdevice from {path}: {error}") from None
    own_definitions = {f.name for f in module.functions if not f.is_declaration}
    try:
        module.link_in(needed)
    except RuntimeError as error:
        raise BackendError(f"cannot link libdevice from {path}: {error}") from None
    for function in module.functions:
        if not function.is_declaration and function.name not in own_definitions:
            function.linkage = binding.Linkage.internal


@functools.lru_cache(maxsize=32)
def libdevice_subset(path: str, names: frozenset[str], triple: str, data_layout: str) -> bytes:
    """The bitcode of libdevice's functions `names` and of those they call, for `triple` and
    `data_layout` (libdevice says `nvptx64-nvidia-gpulibs`).

    Parsing all of libdevice (575 functions) cost ~40 ms of every compile that calls one of them;
    a process computes each subset once (a handful of sets: a program calls tanh, exp, erf...) and
    parses only that afterwards. The result is what linking all of it and dropping what nothing
    calls gives (GlobalDCE with every other function internal): the same definitions, so the
    same PTX."""
    libdevice = binding.parse_bitcode(Path(path).read_bytes())
    libdevice.triple = triple
    libdevice.data_layout = data_layout
    for function in libdevice.functions:
        if not function.is_declaration and function.name not in names:
            function.linkage = binding.Linkage.internal
    drop_unused_definitions(libdevice, target_machine())
    return libdevice.as_bitcode()


def check_resolved(module: binding.ModuleRef) -> None:
    """Fails on calls that nothing will resolve: PTX is not linked against anything else."""
    for function in module.functions:
        name = function.name
        if function.is_declaration and not name.startswith("llvm.") and name not in DRIVER_PROVIDED_FUNCTIONS:
            raise BackendError(
                f"@{name} is called but not defined; on the GPU only libdevice's functions are linked "
                f"(libm's expf, for example, is @__nv_expf)"
            )


# ---------------------------------------------------------------------------------------------


BFLOAT16_MINIMUM_ARCH = 80
"""bf16 conversions (`cvt.rn.bf16.f32`) and arithmetic start with sm_80 (Ampere)."""


def arch_number(arch: str) -> int | None:
    """80 for 'sm_80' (and 'sm_90a'), None for a name that is not sm_NN."""
    digits = arch.removeprefix("sm_").rstrip("abf")
    return int(digits) if arch.startswith("sm_") and digits.isdigit() else None


def refuse_bfloat16_before_sm80(llvm_module: binding.ModuleRef, arch: str) -> None:
    """A GPU older than sm_80 has no bf16 instructions (LLVM would emulate or abort): a BackendError
    naming the first function that uses bf16 and the architecture."""
    number = arch_number(arch)
    if number is None or number >= BFLOAT16_MINIMUM_ARCH:
        return
    for function in llvm_module.functions:
        if "bfloat" in str(function):
            raise BackendError(
                f"kernel '{function.name}' computes on bf16, which needs a GPU of compute capability 8.0 "
                f"or newer (sm_80+); the target is {arch}"
            )


ARCH_SPECIFIC = {"sm_90a": "sm_90"}
"""The architecture-specific targets a kernel may require (`mlc.required_arch`), and the GPUs' base
architecture: wgmma and setmaxnreg exist only in sm_90a code, which runs only on sm_90 devices."""


def target_for_module(module: ModuleOp, arch: str) -> str:
    """`arch`, or the architecture-specific target its kernels require (sm_90a for an sm_90 `arch`);
    a BackendError naming the kernel when `arch` is another GPU's."""
    from xdsl.dialects import llvm

    from mlc.dialects import attributes

    for function in (op for op in module.walk() if isinstance(op, llvm.FuncOp)):
        required = attributes.REQUIRED_ARCH.read(function)
        if required is None or required.data == arch:  # type: ignore[attr-defined]
            continue
        if ARCH_SPECIFIC.get(required.data) != arch:  # type: ignore[attr-defined]
            raise BackendError(
                f"kernel '{function.sym_name.data}' uses wgmma, which needs {required.data} (an sm_90 GPU such as the "  # type: ignore[attr-defined]
                f"H100); the target is {arch} (lower it without wgmma: mlc-lower-to-gpu without arch=sm_90)"
            )
        arch = required.data  # type: ignore[attr-defined]
    return arch


TENSOR_MAP_PTX_VERSION = 83
"""The PTX ISA a kernel with tensor maps needs: it acquires them with `fence.proxy.tensormap` (8.3)."""


def ptx_version_for_module(module: ModuleOp, requested: int | None) -> int | None:
    """`requested`, or PTX 8.3 when a kernel reads tensor maps (`mlc.tensor_maps`) and none is."""
    from xdsl.dialects import llvm

    from mlc.dialects import attributes

    if requested is not None:
        return requested
    uses_maps = any(attributes.TENSOR_MAPS.read(op) is not None for op in module.walk() if isinstance(op, llvm.FuncOp))
    return TENSOR_MAP_PTX_VERSION if uses_maps else None


def compile_to_ptx(module: ModuleOp, arch: str = DEFAULT_ARCH, *, ptx_version: int | None = None) -> str:
    """PTX for every `llvm.func` of `module`; `nvvm.kernel` functions become `.entry`s (for sm_90a
    when one requires it and `arch` is sm_90, `target_for_module`; PTX 8.3 at least when a kernel
    reads tensor maps, `ptx_version_for_module`)."""
    return prepare_ptx(module, arch, ptx_version=ptx_version)()


def prepare_ptx(module: ModuleOp, arch: str = DEFAULT_ARCH, *, ptx_version: int | None = None) -> Callable[[], str]:
    """`compile_to_ptx` in two halves: the Python one now (the target, the translation to LLVM IR
    text), and the returned step, LLVM's (parse, libdevice, O3, PTX emission), which holds the
    GIL only between its calls into LLVM, so that another thread's Python work overlaps it."""
    arch = target_for_module(module, arch)
    ptx_version = ptx_version_for_module(module, ptx_version)
    machine = target_machine(arch, ptx_version)
    text = str(translate_module(module, nvptx_target(for_code_generation=True)))

    def generate() -> str:
        llvm_module = parse_verified(text)
        refuse_bfloat16_before_sm80(llvm_module, arch)
        if calls_libdevice(llvm_module):
            link_libdevice(llvm_module)
            drop_unused_definitions(llvm_module, machine)
            verify(llvm_module, "linking libdevice")
        optimize(llvm_module, machine)
        verify(llvm_module, "optimization")
        check_resolved(llvm_module)
        try:
            return machine.emit_assembly(llvm_module)
        except RuntimeError as error:
            raise BackendError(f"the NVPTX back end failed for {arch}: {error}") from None

    return generate
