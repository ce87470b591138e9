"""LLVM IR → a native object file for the host CPU, with llvmlite; optionally a shared library.

`compile_to_cpu_object(module)` returns the bytes of an ELF (or the host's) object file holding
every `llvm.func` of `module`; `translate_for_cpu(module)` stops at the llvmlite module (without
the code generation check below, so that any valid module can be inspected).
`compile_to_cpu_code(module, shared_library=True)` also returns the same optimized code as a
shared library (`CpuCode.shared_library`), which a later process loads with the dynamic loader
(`dlopen`, a millisecond) instead of importing llvmlite and linking the object with MCJIT.

Algorithm: translate for the process's triple and the host's data layout (`llvm_translate`),
parse and verify with LLVM, run O3 (`llvm_codegen.optimize`), and emit an object file for the
host CPU with all of its features (so the code uses AVX-512 where the machine has it).

The object is meant for llvmlite's MCJIT in this same process (the runtime calls
`ExecutionEngine.add_object_file`): it uses the code model MCJIT itself uses (`jitdefault`, the
large model on x86-64), so that references to its constants and to libm functions resolved from
the process (`expf`, ...) need no assumption about where the sections are loaded. Kernels
(`mlc.kernel`) keep external linkage and their names, and take bare pointers with the C calling
convention.

LLVM aborts the whole process on intrinsics it cannot lower, so code generation rejects GPU
intrinsics (`llvm.nvvm.*`, `llvm.amdgcn.*`) during translation, with a message naming the op.

The shared library: the optimized module is emitted as position-independent code (the small
code model: `-fPIC`'s) instead, and the system's C compiler driver (`$CC`, else `cc`, `gcc` or
`clang`) links it with `-shared -lm`, resolving compiler-rt/libgcc helpers statically and refusing
undefined symbols (`-z defs`). The library is then what every process loads, the compiling one
included (a dynamic loader's `dlopen`, faster than MCJIT's linking); the position-independent
object stays beside it for MCJIT, should a loader refuse the library. Where there is no driver, or
it fails, there is no shared library (None) and the object for MCJIT is emitted as without one:
nothing requires a linker.

Limits: the object is for this machine only (host CPU features), not for distribution.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llvmlite import binding, ir
from xdsl.dialects.builtin import ModuleOp

from mlc.backend.errors import BackendError
from mlc.backend.llvm_codegen import OPTIMIZATION_LEVEL, initialize_llvm, optimize, parse_verified, verify
from mlc.backend.llvm_translate import TargetDescription, translate_module


def host_features() -> str:
    try:
        return binding.get_host_cpu_features().flatten()
    except RuntimeError:  # LLVM cannot tell on this host: the baseline of the triple
        return ""


def host_target_machine(position_independent: bool = False) -> binding.TargetMachine:
    """The host's machine: for MCJIT (the default), or for a shared library (PIC, small model)."""
    initialize_llvm()
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    target = binding.Target.from_triple(binding.get_process_triple())
    if position_independent:
        return target.create_target_machine(
            cpu=binding.get_host_cpu_name(), features=host_features(), opt=OPTIMIZATION_LEVEL, reloc="pic"
        )
    return target.create_target_machine(
        cpu=binding.get_host_cpu_name(),
        features=host_features(),
        opt=OPTIMIZATION_LEVEL,
        codemodel="jitdefault",
        jit=True,
    )


GPU_INTRINSIC_PREFIXES = ("llvm.nvvm.", "llvm.amdgcn.")


def unsupported_intrinsic(name: str, result_type: ir.Type, fast_math: Sequence[str]) -> str | None:
    """Why the host cannot run intrinsic `name` (LLVM would abort on it), or None."""
    if name.startswith(GPU_INTRINSIC_PREFIXES):
        return "is a GPU intrinsic; it cannot be compiled for the CPU"
    return None


def cpu_target(machine: binding.TargetMachine, *, for_code_generation: bool) -> TargetDescription:
    """The host target; code generation also rejects the intrinsics that would abort LLVM."""
    return TargetDescription(
        triple=machine.triple,
        data_layout=str(machine.target_data),
        gpu=False,
        unsupported_intrinsic=unsupported_intrinsic if for_code_generation else None,
    )


def translate_for_cpu(module: ModuleOp) -> ir.Module:
    """The LLVM IR of `module` for the host, as it is before O3 (for inspection)."""
    return translate_module(module, cpu_target(host_target_machine(), for_code_generation=False))


@dataclass(frozen=True)
class CpuCode:
    """A module's CPU code: an object file, and the shared library linked from it when one was
    asked for and could be linked (see the module docstring)."""

    object_code: bytes
    shared_library: bytes | None = None


def compile_to_cpu_object(module: ModuleOp) -> bytes:
    """A host object file with every `llvm.func` of `module`, for MCJIT."""
    return compile_to_cpu_code(module).object_code


def compile_to_cpu_code(module: ModuleOp, shared_library: bool = False) -> CpuCode:
    """The object for MCJIT; with `shared_library`, the position-independent object and the
    shared library linked from it when there is a linker (MCJIT loads that object too, should a
    dynamic loader refuse the library), else the object for MCJIT alone."""
    return prepare_cpu_code(module, shared_library)()


def prepare_cpu_code(module: ModuleOp, shared_library: bool = False) -> Callable[[], CpuCode]:
    """`compile_to_cpu_code` in two halves: the Python one now (the translation to LLVM IR text),
    and the returned step, LLVM's (parse, O3, emission) and the linker's, which holds the GIL
    only between its calls into LLVM, so that another thread's Python work overlaps it."""
    machine = host_target_machine()
    text = str(translate_module(module, cpu_target(machine, for_code_generation=True)))

    def generate() -> CpuCode:
        llvm_module = parse_verified(text)
        optimize(llvm_module, machine)
        verify(llvm_module, "optimization")
        try:
            if shared_library and c_compiler_driver() is not None:
                position_independent = host_target_machine(position_independent=True).emit_object(llvm_module)
                library = link_shared_library(position_independent)
                if library is not None:
                    return CpuCode(position_independent, library)
            return CpuCode(machine.emit_object(llvm_module))
        except RuntimeError as error:
            raise BackendError(f"the {machine.triple} back end failed: {error}") from None

    return generate


LINK_TIMEOUT_SECONDS = 60


def c_compiler_driver() -> str | None:
    """`$CC`, else the first of cc, gcc and clang on the PATH; None when there is none."""
    candidates = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    return next((path for path in map(shutil.which, candidates) if path is not None), None)


def link_shared_library(position_independent_object: bytes) -> bytes | None:
    """The object linked as a shared library by the system's C compiler driver, or None when
    there is no driver or it fails (then the object itself is what gets loaded)."""
    driver = c_compiler_driver()
    if driver is None:
        return None
    with tempfile.TemporaryDirectory(prefix="mlc-link-") as directory:
        source, library = os.path.join(directory, "kernels.o"), os.path.join(directory, "kernels.so")
        with open(source, "wb") as file:
            file.write(position_independent_object)
        command = [driver, "-shared", "-o", library, source, "-lm", "-Wl,-z,defs"]
        try:
            done = subprocess.run(command, capture_output=True, timeout=LINK_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        with open(library, "rb") as file:
            return file.read()
