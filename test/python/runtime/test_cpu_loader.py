"""Loading object files with MCJIT and shared libraries with the dynamic loader
(mlc/runtime/cpu.py), and HostProgram on the CPU executor.

The object files are built here from hand-written LLVM IR with llvmlite (host triple,
`TargetMachine.emit_object`), so these tests do not depend on mlc's backend. Results are compared
with numpy exactly, except where a kernel calls libm's expf: there within the error bound
`error_bounds.result_bounds` derives for the graph function the kernels compute
(`programs.assert_compiled_matches`: expf's stated accuracy, and the roundings around it).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from ptx_kernels import parse

from mlc.backend.cpu import c_compiler_driver, link_shared_library
from mlc.runtime.cpu import CpuLoadError, CpuModule, SharedLibrary, elf_symbols, load_cpu_code
from mlc.runtime.cpu_executor import CpuExecutor
from mlc.runtime.host import HostProgram
from programs import assert_compiled_matches

llvm = pytest.importorskip("llvmlite.binding")

KERNELS_IR = r"""
declare float @expf(float)

; out[i] = a[i] + b[i] for 1024 floats: the whole loop nest in one call, as CPU kernels are.
define void @add_1024(ptr noalias %a, ptr noalias %b, ptr noalias %out) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  %po = getelementptr inbounds float, ptr %out, i64 %i
  %x = load float, ptr %pa, align 4
  %y = load float, ptr %pb, align 4
  %s = fadd float %x, %y
  store float %s, ptr %po, align 4
  %next = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %next, 1024
  br i1 %more, label %loop, label %exit
exit:
  ret void
}

; out[i] = expf(a[i]) for 1024 floats: needs libm's expf from the process.
define void @exp_1024(ptr noalias %a, ptr noalias %out) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %po = getelementptr inbounds float, ptr %out, i64 %i
  %x = load float, ptr %pa, align 4
  %e = call float @expf(float %x)
  store float %e, ptr %po, align 4
  %next = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %next, 1024
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""

MISSING_SYMBOL_IR = r"""
declare float @mlc_no_such_function(float)

define void @uses_missing(ptr %a) {
  %x = load float, ptr %a, align 4
  %y = call float @mlc_no_such_function(float %x)
  store float %y, ptr %a, align 4
  ret void
}
"""

HALF_IR = r"""
; out[i] = float(h[i]) + 1 for 8 halves: x86-64 without F16C converts through compiler-rt helpers.
define void @widen_8(ptr noalias %h, ptr noalias %out) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %ph = getelementptr inbounds half, ptr %h, i64 %i
  %po = getelementptr inbounds float, ptr %out, i64 %i
  %x = load half, ptr %ph, align 2
  %w = fpext half %x to float
  %s = fadd float %w, 1.0
  store float %s, ptr %po, align 4
  %next = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %next, 8
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
"""


def object_code(llvm_ir: str) -> bytes:
    """A native object file for this host from LLVM IR."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine(opt=2, reloc="pic")
    module = llvm.parse_assembly(llvm_ir)
    module.triple = llvm.get_process_triple()
    module.data_layout = str(machine.target_data)
    module.verify()
    return machine.emit_object(module)


@pytest.fixture(scope="module")
def kernels() -> CpuModule:
    return CpuModule(object_code(KERNELS_IR), name="kernels.o")


def test_kernels_run_through_ctypes(kernels: CpuModule) -> None:
    generator = np.random.default_rng(0)
    a, b = generator.standard_normal((2, 1024)).astype(np.float32)
    out = np.empty(1024, np.float32)
    kernels.function("add_1024", 3)(a.ctypes.data, b.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out, a + b)


def test_libm_symbols_resolve_from_the_process(kernels: CpuModule) -> None:
    a = np.linspace(-5, 5, 1024, dtype=np.float32)
    out = np.empty(1024, np.float32)
    kernels.function("exp_1024", 2)(a.ctypes.data, out.ctypes.data)
    exp_as_graph = """func.func @main(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = graph.exp %a : tensor<1024xf32>
  func.return %e : tensor<1024xf32>
}"""
    assert_compiled_matches(exp_as_graph, [a], out, [np.exp(a.astype(np.float64))])


def test_elf_symbols_lists_definitions_and_needs() -> None:
    object_file = llvm.ObjectFileRef.from_data(object_code(KERNELS_IR))
    defined, required = elf_symbols(object_file)
    assert {"add_1024", "exp_1024"} <= set(defined)
    assert "expf" in required and "add_1024" not in required


def test_a_missing_function_is_reported_with_what_exists(kernels: CpuModule) -> None:
    with pytest.raises(CpuLoadError, match=r"kernels.o has no function 'mul_1024'; it defines: .*add_1024"):
        kernels.function("mul_1024", 3)


def test_a_symbol_the_process_lacks_is_reported_before_loading() -> None:
    with pytest.raises(
        CpuLoadError, match="needs symbols that this process does not provide: mlc_no_such_function"
    ):
        CpuModule(object_code(MISSING_SYMBOL_IR), name="missing.o")


def test_an_empty_object_is_reported() -> None:
    with pytest.raises(CpuLoadError, match="is empty"):
        CpuModule(b"")


def test_the_pointer_count_is_checked(kernels: CpuModule) -> None:
    with pytest.raises(TypeError, match="kernel 'add_1024' takes 3 pointers, got 2"):
        kernels.function("add_1024", 3)(0, 0)


def test_half_precision_helpers_are_found() -> None:
    try:
        module = CpuModule(object_code(HALF_IR), name="half.o")
    except CpuLoadError as error:  # pragma: no cover - depends on the C runtime of the machine
        pytest.skip(f"this machine's libgcc_s lacks the half-precision helpers: {error}")
    h = np.array([0.5, -1, 2, 3, 4, 5, 6, 65504], np.float16)
    out = np.empty(8, np.float32)
    module.function("widen_8", 2)(h.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out, h.astype(np.float32) + 1)


HOST_MODULE = """
builtin.module {
  "memref.global"() <{sym_name = "ones", sym_visibility = "private", type = memref<32x32xf32>, initial_value = dense<1.0> : tensor<32x32xf32>, constant}> : () -> ()
  llvm.func @add_1024(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  llvm.func @exp_1024(!llvm.ptr, !llvm.ptr)
  func.func @main(%x: memref<32x32xf32>, %y: memref<1024xf32>) -> memref<1024xf32> {
    %ones = memref.get_global @ones : memref<32x32xf32>
    %s = memref.alloc() : memref<32x32xf32>
    loop.launch @add_1024(%x, %ones, %s) : memref<32x32xf32>, memref<32x32xf32>, memref<32x32xf32>
    %e = memref.alloc() : memref<1024xf32>
    loop.launch @exp_1024(%s, %e) : memref<32x32xf32>, memref<1024xf32>
    %o = memref.alloc() : memref<1024xf32>
    loop.launch @add_1024(%e, %y, %o) : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    func.return %o : memref<1024xf32>
  }
}
"""

HOST_MODULE_AS_GRAPH = """func.func @main(%x: tensor<32x32xf32>, %y: tensor<1024xf32>) -> tensor<1024xf32> {
  %one = graph.constant dense<1.0> : tensor<f32>
  %s = graph.add %x, %one : (tensor<32x32xf32>, tensor<f32>) -> tensor<32x32xf32>
  %e = graph.exp %s : tensor<32x32xf32>
  %flat = graph.reshape %e : tensor<32x32xf32> to tensor<1024xf32>
  %o = graph.add %flat, %y : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  func.return %o : tensor<1024xf32>
}"""
"""What HOST_MODULE's launches compute, as a graph function (for its error bound)."""


def test_host_program_on_the_cpu_end_to_end() -> None:
    program = HostProgram.for_cpu(parse(HOST_MODULE), object_code(KERNELS_IR))
    assert isinstance(program.executor, CpuExecutor)
    generator = np.random.default_rng(1)
    for _ in range(3):
        x = generator.standard_normal((32, 32)).astype(np.float32)
        y = generator.standard_normal(1024).astype(np.float32)
        (result,) = program.run(x, y)
        reference = np.exp(x.astype(np.float64) + 1).reshape(1024) + y
        assert_compiled_matches(HOST_MODULE_AS_GRAPH, [x, y], result, [reference])
        assert result.ctypes.data % 256 == 0
    out = np.empty(1024, np.float32)
    (written,) = program.run_on_device(x, y, outputs=(out,))
    assert written is out
    np.testing.assert_array_equal(out, result)
    with pytest.raises(ValueError, match=r"argument #1 \(%y\) of @main: expected shape \(1024,\)"):
        program.run(x, y[:512])


def test_a_kernel_missing_from_the_object_fails_at_build() -> None:
    text = HOST_MODULE.replace("@exp_1024", "@log_1024")
    with pytest.raises(CpuLoadError, match="has no function 'log_1024'"):
        HostProgram.for_cpu(parse(text), object_code(KERNELS_IR))


needs_a_linker = pytest.mark.skipif(c_compiler_driver() is None, reason="no C compiler driver to link a shared library")


@needs_a_linker
def test_a_shared_library_runs_what_the_object_runs(kernels: CpuModule) -> None:
    library_bytes = link_shared_library(object_code(KERNELS_IR))
    assert library_bytes is not None
    library = load_cpu_code(object_code(KERNELS_IR), library_bytes, name="kernels.so")
    assert isinstance(library, SharedLibrary)
    a = np.linspace(-5, 5, 1024, dtype=np.float32)
    for name, arguments in (("add_1024", (a, a[::-1].copy())), ("exp_1024", (a,))):
        expected, out = np.empty(1024, np.float32), np.empty(1024, np.float32)
        kernels.function(name, len(arguments) + 1)(*(x.ctypes.data for x in arguments), expected.ctypes.data)
        library.function(name, len(arguments) + 1)(*(x.ctypes.data for x in arguments), out.ctypes.data)
        np.testing.assert_array_equal(out, expected)  # libm's expf resolved by the loader: the same
    with pytest.raises(CpuLoadError, match="kernels.so has no function 'mul_1024'"):
        library.function("mul_1024", 3)
    library.close()


def test_a_library_the_loader_refuses_falls_back_to_the_object() -> None:
    module = load_cpu_code(object_code(KERNELS_IR), b"\x7fELF not really a library", name="broken.so")
    assert isinstance(module, CpuModule)
    a = np.ones(1024, np.float32)
    out = np.empty(1024, np.float32)
    module.function("add_1024", 3)(a.ctypes.data, a.ctypes.data, out.ctypes.data)
    np.testing.assert_array_equal(out, 2 * a)


def test_an_object_that_does_not_link_gives_no_library() -> None:
    assert link_shared_library(object_code(MISSING_SYMBOL_IR)) is None  # undefined symbol: -z defs
    assert link_shared_library(b"not an object") is None


@needs_a_linker
def test_libraries_loaded_one_after_another_stay_apart() -> None:
    """The loader returns the library already loaded under a path given again: each library's
    in-memory file stays open while it is loaded, so two never share a /proc/self/fd path."""
    first = SharedLibrary(link_shared_library(object_code(KERNELS_IR)), name="first.so")  # type: ignore[arg-type]
    for _ in range(3):
        other = SharedLibrary(link_shared_library(object_code(HALF_IR)), name="half.so")  # type: ignore[arg-type]
        other.function("widen_8", 2)
        with pytest.raises(CpuLoadError, match="has no function 'add_1024'"):
            other.function("add_1024", 3)
        other.close()
    first.function("add_1024", 3)
    del first
    gc.collect()  # unloaded, its file closed: a library loaded now may reuse the descriptor
    again = SharedLibrary(link_shared_library(object_code(HALF_IR)), name="half.so")  # type: ignore[arg-type]
    again.function("widen_8", 2)
