"""mlc's backend: `llvm`-dialect IR → LLVM IR → PTX for NVIDIA GPUs, or an object file for the CPU.

The backend produces artifacts; the runtime loads and runs them. Its input is a module whose
kernels are `llvm.func`s (bare pointer parameters, `index` lowered to `i64`) beside host code
(`func.func`, launches, `memref.global`), which the backend skips. Kernels are marked with the
unit attribute `nvvm.kernel` (GPU; optionally `nvvm.maxntid = array<i32: x, y, z>`) or
`mlc.kernel` (CPU).

    translate_to_llvm(module, "nvptx" | "cpu")   the llvmlite module (mlc.backend.llvm_translate)
    llvm_ir_text(module, target)                 that module as LLVM prints it after verifying it
    compile_to_ptx(module, arch="sm_90")         PTX text (mlc.backend.nvptx; links libdevice)
    compile_to_cpu_object(module)                host object file bytes for MCJIT (mlc.backend.cpu)
    kernel_names(module)                         the kernels' symbol names, in module order
    emit_target(name, module)                    `mlc-opt -t llvm|ptx` output, options in braces:
                                                 `llvm{target=cpu}`, `ptx{arch=sm_80 ptx-version=80}`

Every failure is a `BackendError` (an `MlcError`); one caused by a specific op is a
`TranslationError`, which names and carries the op.
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from llvmlite import ir
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

from mlc.backend.errors import BackendError, TranslationError
from mlc.backend.llvm_translate import MLC_KERNEL, NVVM_KERNEL

__all__ = [
    "BackendError",
    "TranslationError",
    "compile_to_cpu_object",
    "compile_to_ptx",
    "default_target",
    "emit_target",
    "kernel_names",
    "llvm_ir_text",
    "translate_to_llvm",
]

Target = Literal["nvptx", "cpu"]
TARGETS: tuple[str, ...] = ("nvptx", "cpu")
OUTPUT_TARGETS: dict[str, tuple[str, ...]] = {"llvm": ("target",), "ptx": ("arch", "ptx-version")}
"""The output formats `emit_target` produces, with the options each takes (`mlir` is mlc-opt's)."""


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise BackendError(f"unknown code generation target '{target}'; valid targets: {', '.join(TARGETS)}")


def translate_to_llvm(module: ModuleOp, target: Target) -> ir.Module:
    """The `llvm.func`s and `llvm.mlir.global`s of `module` as an llvmlite module for `target`."""
    _check_target(target)
    if not _functions(module):
        # Everything else is skipped as host code: an empty result would hide a missing lowering.
        raise BackendError(
            "the module has no llvm.func to translate; lower it to the llvm dialect first "
            "(e.g. with the mlc-lower-to-gpu or mlc-lower-to-cpu pipeline)"
        )
    if target == "nvptx":
        from mlc.backend.nvptx import translate_for_nvptx

        return translate_for_nvptx(module)
    from mlc.backend.cpu import translate_for_cpu

    return translate_for_cpu(module)


def llvm_ir_text(module: ModuleOp, target: Target) -> str:
    """The LLVM IR of `module` for `target`, verified and printed by LLVM (before optimization)."""
    from mlc.backend.llvm_codegen import parse_verified

    return str(parse_verified(translate_to_llvm(module, target)))


def compile_to_ptx(module: ModuleOp, arch: str = "sm_90", *, ptx_version: int | None = None) -> str:
    """PTX for every `nvvm.kernel` `llvm.func` of `module` (and the functions they call)."""
    from mlc.backend import nvptx

    return nvptx.compile_to_ptx(module, arch, ptx_version=ptx_version)


def compile_to_cpu_object(module: ModuleOp) -> bytes:
    """A host object file holding every `llvm.func` of `module`, loadable by llvmlite's MCJIT."""
    from mlc.backend import cpu

    return cpu.compile_to_cpu_object(module)


def _functions(module: ModuleOp) -> list[llvm.FuncOp]:
    return [op for op in module.ops if isinstance(op, llvm.FuncOp)]


def kernel_names(module: ModuleOp) -> list[str]:
    """Defined `llvm.func`s marked `nvvm.kernel` (GPU) or `mlc.kernel` (CPU), in module order."""
    return [
        function.sym_name.data
        for function in _functions(module)
        if function.body.blocks and (NVVM_KERNEL in function.attributes or MLC_KERNEL in function.attributes)
    ]


def default_target(module: ModuleOp) -> Target:
    """`nvptx` when `module` has GPU kernels (`nvvm.kernel`), else `cpu`."""
    return "nvptx" if any(NVVM_KERNEL in f.attributes for f in _functions(module)) else "cpu"


_TARGET_SPEC = re.compile(r"^\s*([\w-]+)\s*(?:\{(.*)\})?\s*$", re.DOTALL)


def parse_target_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`ptx{arch=sm_80 ptx-version=80}` → ('ptx', {'arch': 'sm_80', 'ptx-version': '80'})."""
    match = _TARGET_SPEC.match(spec)
    if match is None:
        raise BackendError(f"cannot read the output target '{spec}'; write e.g. ptx or ptx{{arch=sm_80}}")
    name, body = match.group(1), match.group(2) or ""
    if name not in OUTPUT_TARGETS:
        valid = ["mlir", *OUTPUT_TARGETS]
        close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise BackendError(f"unknown output target '{name}'{hint}; valid targets: {', '.join(valid)}")
    options: dict[str, str] = {}
    for item in body.split():
        key, separator, value = item.partition("=")
        key = key.replace("_", "-")
        if not separator or key not in OUTPUT_TARGETS[name]:
            valid_options = ", ".join(f"{o}=..." for o in OUTPUT_TARGETS[name])
            raise BackendError(f"unknown option '{item}' of output target '{name}'; it takes {valid_options}")
        options[key] = value.strip("\"'")
    return name, options


def emit_target(name: str, module: ModuleOp) -> str:
    """The text `mlc-opt -t NAME` prints: LLVM IR (`llvm`) or PTX (`ptx`), with brace options."""
    target_name, options = parse_target_spec(name)
    if target_name == "llvm":
        target = options.get("target", default_target(module))
        _check_target(target)
        return llvm_ir_text(module, target)  # type: ignore[arg-type]
    version = options.get("ptx-version")
    if version is not None and not version.isdigit():
        raise BackendError(f"ptx-version must be an integer such as 80 (for PTX 8.0), got '{version}'")
    return compile_to_ptx(module, options.get("arch", "sm_90"), ptx_version=int(version) if version else None)
