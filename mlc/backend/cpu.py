"""LLVM IR → a native object file for the host CPU, with llvmlite.

`compile_to_cpu_object(module)` returns the bytes of an ELF (or the host's) object file holding
every `llvm.func` of `module`; `translate_for_cpu(module)` stops at the llvmlite module (without
the code generation check below, so that any valid module can be inspected).

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

Limits: the object is for this machine only (host CPU features), not for distribution.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def host_target_machine() -> binding.TargetMachine:
    initialize_llvm()
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    target = binding.Target.from_triple(binding.get_process_triple())
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


def compile_to_cpu_object(module: ModuleOp) -> bytes:
    """A host object file with every `llvm.func` of `module`."""
    machine = host_target_machine()
    llvm_module = parse_verified(translate_module(module, cpu_target(machine, for_code_generation=True)))
    optimize(llvm_module, machine)
    verify(llvm_module, "optimization")
    try:
        return machine.emit_object(llvm_module)
    except RuntimeError as error:
        raise BackendError(f"the {machine.triple} back end failed: {error}") from None
