"""Translation of mlc's `llvm`-dialect IR into an llvmlite module (mlc's own `mlir-translate`).

`translate_module(module, target)` returns an `llvmlite.ir.Module` with one function per
`llvm.func` and one global variable per `llvm.mlir.global` of `module`. Every other top-level op is
host code (`func.func`, launches, `memref.global`, ...) that the runtime executes itself, and is
skipped.

Algorithm:

1. Globals first, so that `llvm.mlir.addressof` always finds them; then every function is
   declared, so that calls may precede the callee's definition; then the bodies.
2. A body gets one llvmlite block per xDSL block reachable from the entry (blocks that cannot run
   are dropped) and a phi per argument of each non-entry block. Blocks are translated in reverse
   post-order, so every dominating definition is translated before its uses; the phis' incoming
   values are filled in last, from the edges the branches recorded.
3. Each op goes to this module's own handler when it has one, and otherwise to xDSL's
   `convert_op` for the ops that xDSL translates correctly (integer and float arithmetic,
   `icmp`, `select`, `fneg`, aggregate and vector element ops, `unreachable`, masked stores and
   vector reductions). Our handlers replace xDSL's where xDSL 0.74 is wrong or incomplete: GEP
   and `addressof` on opaque pointers in any address space (xDSL bitcasts to typed pointers),
   alignment of globals, loads and stores, the ops of `mlc.dialects.llvm_extra`, intrinsic
   names mangled with their overload types (`llvm.exp.f32`, not `llvm.exp`), calls and
   intrinsics with fast-math flags, casts and constants of every type including `bf16`.

Non-temporal stores. An `llvm.store` with `nontemporal` gets `!nontemporal !{i32 1}` on x86
targets (LLVM emits `vmovntps` for it: one per vector when the store states the vector's size of
alignment, 16-byte ones when it states 16), and every `ret` of a function holding one is preceded
by `call void @llvm.x86.sse.sfence()`: streaming stores are weakly ordered (they bypass the caches
through write-combining buffers and are not ordered with later stores), so without the fence the
runtime's completion signal (the pool's counter, another thread's read of the result, the
caller's) could be seen before the data is in memory. On other targets the hint is dropped (no
fence is emitted for them), so the store stays ordered.

Pointers are opaque (`ptr addrspace(N)`) everywhere, as LLVM 22 requires. For the GPU
(`TargetDescription.gpu`) an `llvm.func` carrying the unit attribute `nvvm.kernel` becomes a
kernel: calling convention `ptx_kernel` and an `nvvm.annotations` `kernel` entry (LLVM 22
accepts both); `nvvm.maxntid`/`nvvm.reqntid` (`array<i32: x, y, z>`) and `nvvm.minctasm`/
`nvvm.maxnreg` (i32) become the matching annotations, which LLVM turns into `.maxntid`,
`.reqntid`, `.minnctapersm` and `.maxnreg`. The module flag `nvvm-reflect-ftz = 0` tells
libdevice not to flush denormals (Triton does the same). On the CPU these attributes are ignored.
Kernels (`nvvm.kernel`, or `mlc.kernel` for the CPU) are entry points that the runtime looks up
by name, so they always get external linkage. LLVM aborts the process (rather than failing) on
intrinsics a target cannot lower, so when the translation feeds code generation every intrinsic
call is first checked by the target's `unsupported_intrinsic` (defined in `nvptx.py`, `cpu.py`).

Preconditions: the module verifies; `index` has been lowered to `i64`; function bodies hold only
`llvm` dialect ops. Limits: no atomics, volatile accesses, `switch`, indirect calls, operand
bundles, allocas outside address space 0, scalable or multi-dimensional vectors, or region
initializers of globals; argument attributes other than those in `_ARGUMENT_FLAGS` and
`_ARGUMENT_INTEGERS` (hints such as `llvm.readonly`) are dropped; cast flags (`nsw`, `nneg`) are
dropped too, which only forgoes optimizations. Each limit is reported as a `TranslationError`
naming the op.

This module translates the module level (globals, declarations, kernel marks and annotations);
`llvm_types.py` holds the types, constants and `TargetDescription`, `llvm_functions.py` the
translation of function bodies (`FunctionTranslator`).
"""

from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute

from mlc.backend.errors import TranslationError
from mlc.backend.llvm_functions import FunctionTranslator
from mlc.backend.llvm_types import TargetDescription, constant, convert_type, reported_as
from mlc.dialects import attributes

NVVM_KERNEL = "nvvm.kernel"
MLC_KERNEL = attributes.KERNEL.name
NVVM_REFLECT_FTZ = "nvvm-reflect-ftz"

_NVVM_THREAD_BOUNDS = {"nvvm.maxntid": "maxntid", "nvvm.reqntid": "reqntid"}
_NVVM_INTEGER_ANNOTATIONS = {"nvvm.minctasm": "minctasm", "nvvm.maxnreg": "maxnreg"}
_NVVM_ATTRIBUTES = (NVVM_KERNEL, *_NVVM_THREAD_BOUNDS, *_NVVM_INTEGER_ANNOTATIONS)

_MODULE_FLAG_OVERRIDE = 4  # llvm::Module::Override: this module's value wins when linking

_ARGUMENT_FLAGS = {
    "llvm.noalias": "noalias",
    "llvm.nonnull": "nonnull",
    "llvm.noundef": "noundef",
    "llvm.nocapture": "captures(none)",
    "llvm.nofree": "nofree",
    "llvm.signext": "signext",
    "llvm.zeroext": "zeroext",
}
_ARGUMENT_INTEGERS = {"llvm.align": "align", "llvm.dereferenceable": "dereferenceable"}

_DECLARATION_LINKAGES = ("external", "extern_weak")


def is_kernel(function: llvm.FuncOp) -> bool:
    """Whether `function` is an entry point the runtime launches (GPU) or calls (CPU)."""
    return NVVM_KERNEL in function.attributes or MLC_KERNEL in function.attributes


# ---------------------------------------------------------------------------------------------
# Module level: globals, declarations, kernel marks


def _translate_global(op: llvm.GlobalOp, module: ir.Module) -> None:
    if op.body.blocks:
        raise TranslationError(op, "initializer regions are not supported; give the global a value attribute")
    space = op.addr_space.value.data
    value_type = convert_type(op.global_type)
    variable = ir.GlobalVariable(module, value_type, op.sym_name.data, addrspace=space)
    # Every use goes through GEP, load and store with explicit types: the global is an opaque
    # pointer (llvmlite would otherwise make it a typed pointer that LLVM 22 rejects in stores).
    variable.type = ir.PointerType(addrspace=space)
    linkage = op.linkage.linkage.data
    variable.linkage = "" if linkage == "external" else linkage  # llvmlite decides declaration or definition
    variable.global_constant = op.constant is not None
    if op.alignment is not None:
        variable.align = op.alignment.value.data
    if op.unnamed_addr is not None and op.unnamed_addr.value.data != 0:
        variable.unnamed_addr = True
    if op.section is not None:
        variable.section = op.section.data
    if op.value is not None:
        variable.initializer = constant(value_type, op.value)
    elif linkage not in _DECLARATION_LINKAGES:
        variable.initializer = ir.Constant(value_type, ir.Undefined)  # shared memory is never initialized


def _declare_function(op: llvm.FuncOp, module: ir.Module, target: TargetDescription) -> None:
    function = ir.Function(module, convert_type(op.function_type), op.sym_name.data)
    linkage = op.linkage.linkage.data
    has_body = bool(op.body.blocks)
    kernel = is_kernel(op)
    if kernel:
        if not has_body:
            raise TranslationError(op, f"kernel @{op.sym_name.data} has no body")
        if not isinstance(op.function_type.output, llvm.LLVMVoidType):
            raise TranslationError(op, f"kernel @{op.sym_name.data} must return void")
        linkage = "external"
    if not has_body and linkage not in _DECLARATION_LINKAGES:
        raise TranslationError(op, f"declaration @{op.sym_name.data} cannot have {linkage} linkage")
    function.linkage = "" if linkage == "external" else linkage
    convention = op.CConv.convention.data
    function.calling_convention = "" if convention == "ccc" else convention
    if op.no_inline is not None:
        function.attributes.add("noinline")
    if op.no_unwind is not None:
        function.attributes.add("nounwind")
    _add_argument_attributes(op, function)
    if target.gpu:
        _mark_nvvm_function(op, function, module)


def _add_argument_attributes(op: llvm.FuncOp, function: ir.Function) -> None:
    if op.arg_attrs is None:
        return
    for argument, argument_attributes in zip(function.args, op.arg_attrs.data):
        for name, value in argument_attributes.data.items():
            if name in _ARGUMENT_FLAGS:
                argument.add_attribute(_ARGUMENT_FLAGS[name])
            elif name in _ARGUMENT_INTEGERS and isinstance(value, IntegerAttr):
                setattr(argument.attributes, _ARGUMENT_INTEGERS[name], value.value.data)


def _mark_nvvm_function(op: llvm.FuncOp, function: ir.Function, module: ir.Module) -> None:
    """Turns the `nvvm.*` attributes of a function into its calling convention and annotations."""
    nvvm = {name: value for name, value in op.attributes.items() if name.startswith("nvvm.")}
    for name in nvvm:
        if name not in _NVVM_ATTRIBUTES:
            known = ", ".join(_NVVM_ATTRIBUTES)
            raise TranslationError(op, f"@{op.sym_name.data} has unknown attribute '{name}' (known: {known})")
    if NVVM_KERNEL not in nvvm:
        if nvvm:
            raise TranslationError(op, f"'{next(iter(nvvm))}' is only allowed on kernels ('{NVVM_KERNEL}')")
        return
    if not isinstance(nvvm[NVVM_KERNEL], UnitAttr):
        raise TranslationError(op, f"'{NVVM_KERNEL}' must be a unit attribute")
    function.calling_convention = "ptx_kernel"
    _annotate(module, function, "kernel", 1)
    for name, annotation in _NVVM_THREAD_BOUNDS.items():
        if name in nvvm:
            for axis, size in zip("xyz", _thread_bounds(op, name, nvvm[name])):
                _annotate(module, function, annotation + axis, size)
    for name, annotation in _NVVM_INTEGER_ANNOTATIONS.items():
        if name in nvvm:
            value = nvvm[name]
            if not isinstance(value, IntegerAttr) or value.value.data <= 0:
                raise TranslationError(op, f"'{name}' must be a positive integer, got {value}")
            _annotate(module, function, annotation, value.value.data)


def _thread_bounds(op: llvm.FuncOp, name: str, value: Attribute) -> tuple[int, int, int]:
    sizes = tuple(value.get_values()) if isinstance(value, DenseArrayBase) else ()
    if not 1 <= len(sizes) <= 3 or any(not isinstance(s, int) or s <= 0 for s in sizes):
        raise TranslationError(
            op, f"'{name}' must be an array of 1 to 3 positive i32, e.g. array<i32: 128, 1, 1>; got {value}"
        )
    padded = tuple(sizes) + (1,) * (3 - len(sizes))
    return padded  # type: ignore[return-value]


def _annotate(module: ir.Module, function: ir.Function, key: str, value: int) -> None:
    # An opaque `ptr @k` reference: llvmlite would print the function's typed pointer type.
    reference = ir.FormattedConstant(ir.PointerType(), function.get_reference())
    entry = [reference, ir.MetaDataString(module, key), ir.Constant(ir.IntType(32), value)]
    module.add_named_metadata("nvvm.annotations", entry)


def _add_module_flag(module: ir.Module, key: str, value: int) -> None:
    i32 = ir.IntType(32)
    flag = [ir.Constant(i32, _MODULE_FLAG_OVERRIDE), ir.MetaDataString(module, key), ir.Constant(i32, value)]
    module.add_named_metadata("llvm.module.flags", flag)


def _check_triple(module: ModuleOp, target: TargetDescription) -> None:
    triple = module.attributes.get("llvm.target_triple")
    if triple is None:
        return
    # Vendor and OS spellings vary ("x86_64-pc-linux-gnu"); the architecture must agree.
    if not isinstance(triple, StringAttr) or triple.data.split("-")[0] != target.triple.split("-")[0]:
        raise TranslationError(module, f"'llvm.target_triple' is {triple}, but the target is '{target.triple}'")


def translate_module(module: ModuleOp, target: TargetDescription) -> ir.Module:
    """Translates the `llvm.func`s and `llvm.mlir.global`s of `module` for `target`."""
    _check_triple(module, target)
    llvm_module = ir.Module(name=module.sym_name.data if module.sym_name else "mlc")
    llvm_module.triple = target.triple
    llvm_module.data_layout = target.data_layout
    globals_ = [op for op in module.ops if isinstance(op, llvm.GlobalOp)]
    functions = [op for op in module.ops if isinstance(op, llvm.FuncOp)]
    for op in [*globals_, *functions]:
        with reported_as(op):
            if isinstance(op, llvm.GlobalOp):
                _translate_global(op, llvm_module)
            else:
                _declare_function(op, llvm_module, target)
    for function in functions:
        if function.body.blocks:
            FunctionTranslator(function, llvm_module.get_global(function.sym_name.data), target).translate()
    if target.gpu:
        _add_module_flag(llvm_module, NVVM_REFLECT_FTZ, 0)
    return llvm_module
