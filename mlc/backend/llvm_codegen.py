"""The llvmlite steps that the NVPTX and CPU code generators share.

`initialize_llvm()` registers LLVM's targets and assembly printers (idempotent; llvmlite 0.50's
`llvm.initialize()` raises, so it is never called). `parse_verified()` hands the translated
module to LLVM: it parses the text (LLVM upgrades old intrinsic spellings and NVVM annotations
while parsing), and runs the IR verifier. `optimize()` runs LLVM's default O3 module pipeline
through the new pass manager, with loop and SLP vectorization on as in `clang -O3`.
`drop_unused_definitions()` runs GlobalDCE alone: after linking a library (libdevice's 575
functions, of which a kernel calls a handful) it leaves only what is reachable, so that
verification and O3 do not work through the rest (the output is the same: O3 drops them anyway).
Failures become `BackendError`s whose message carries LLVM's.
"""

from __future__ import annotations

from llvmlite import binding, ir

from mlc.backend.errors import BackendError

OPTIMIZATION_LEVEL = 3


def initialize_llvm() -> None:
    binding.initialize_all_targets()
    binding.initialize_all_asmprinters()


def parse_verified(module: ir.Module | str) -> binding.ModuleRef:
    """LLVM's own module for `module` (llvmlite's IR, or its text), verified."""
    try:
        parsed = binding.parse_assembly(module if isinstance(module, str) else str(module))
    except RuntimeError as error:
        raise BackendError(f"LLVM cannot parse the translated module: {error}") from None
    try:
        parsed.verify()
    except RuntimeError as error:
        raise BackendError(f"the translated module is not valid LLVM IR: {error}") from None
    return parsed


def verify(module: binding.ModuleRef, stage: str) -> None:
    try:
        module.verify()
    except RuntimeError as error:
        raise BackendError(f"the module is not valid LLVM IR after {stage}: {error}") from None


def optimize(module: binding.ModuleRef, target_machine: binding.TargetMachine) -> None:
    """Runs the O3 pipeline for `target_machine` (which adds its own passes, e.g. NVVMReflect)."""
    options = binding.create_pipeline_tuning_options(speed_level=OPTIMIZATION_LEVEL)
    options.loop_vectorization = True
    options.slp_vectorization = True
    builder = binding.create_pass_builder(target_machine, options)
    builder.getModulePassManager().run(module, builder)


def drop_unused_definitions(module: binding.ModuleRef, target_machine: binding.TargetMachine) -> None:
    """Removes the internal functions and globals nothing reachable uses (GlobalDCE)."""
    passes = binding.create_new_module_pass_manager()
    passes.add_global_dead_code_eliminate_pass()
    passes.run(module, binding.create_pass_builder(target_machine, binding.create_pipeline_tuning_options(speed_level=0)))
