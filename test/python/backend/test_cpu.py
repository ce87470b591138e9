"""Tests of host code generation (mlc.backend.cpu), end to end on numpy buffers.

Each test compiles a hand-written llvm-dialect kernel to an object file, loads it the way the
runtime does (llvmlite MCJIT, `add_object_file`, libm resolved from this process), calls it
through ctypes on fresh random inputs and compares with numpy: exactly, except where a kernel calls
libm; there within the error bound `error_bounds.result_bounds` derives for the graph op the kernel
computes (`programs.assert_compiled_matches`; for expf, (1 + 4) f32 ulps of the exact value: the
library's stated accuracy and the rounding).
"""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from llvmlite import binding
from xdsl.dialects.builtin import ModuleOp

from mlc.backend import TranslationError, compile_to_cpu_object, kernel_names
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from programs import assert_compiled_matches

POINTER = ctypes.c_void_p


def parse(text: str) -> ModuleOp:
    module, _ = parse_module(text, make_context())
    module.verify()
    return module


@contextmanager
def loaded(module: ModuleOp) -> Iterator[Callable[[str, tuple[type, ...]], Callable[..., object]]]:
    """Loads `module`'s object file into MCJIT; yields a lookup of its functions by name."""
    object_file = compile_to_cpu_object(module)
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    machine = binding.Target.from_default_triple().create_target_machine()
    engine = binding.create_mcjit_compiler(binding.parse_assembly(""), machine)
    engine.add_object_file(binding.ObjectFileRef.from_data(object_file))
    engine.finalize_object()

    def function(name: str, argument_types: tuple[type, ...]) -> Callable[..., object]:
        address = engine.get_function_address(name)
        assert address, f"{name} is not in the object file"
        return ctypes.CFUNCTYPE(None, *argument_types)(address)

    yield function


def random(shape: int, dtype: type = np.float32) -> np.ndarray:
    return np.random.default_rng().standard_normal(shape).astype(dtype)


SCALE_EXP = """
llvm.func @expf(f32) -> f32
llvm.func @scale_exp(%a: !llvm.ptr, %out: !llvm.ptr, %n: i64) attributes {mlc.kernel} {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %half = llvm.mlir.constant(0.5 : f32) : f32
  %empty = llvm.icmp "sle" %n, %zero : i64
  llvm.cond_br %empty, ^done, ^loop(%zero : i64)
^loop(%i: i64):
  %pa = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %pa {alignment = 4 : i64} : !llvm.ptr -> f32
  %e = llvm.call @expf(%x) : (f32) -> f32
  %y = llvm.fmul %e, %half : f32
  %po = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %y, %po {alignment = 4 : i64} : f32, !llvm.ptr
  %next = llvm.add %i, %one : i64
  %more = llvm.icmp "slt" %next, %n : i64
  llvm.cond_br %more, ^loop(%next : i64), ^done
^done:
  llvm.return
}
"""

VECTOR_RELU_AXPY = """
llvm.func @relu_axpy4(%x: !llvm.ptr, %y: !llvm.ptr, %out: !llvm.ptr, %groups: i64) attributes {mlc.kernel} {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %alpha = llvm.mlir.constant(dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>) : vector<4xf32>
  %zeros = llvm.mlir.constant(dense<0.0> : vector<4xf32>) : vector<4xf32>
  llvm.br ^loop(%zero : i64)
^loop(%g: i64):
  %px = llvm.getelementptr inbounds %x[%g] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  %py = llvm.getelementptr inbounds %y[%g] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  %vx = llvm.load %px {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
  %vy = llvm.load %py {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
  %ax = llvm.fmul %alpha, %vx : vector<4xf32>
  %s = llvm.fadd %ax, %vy : vector<4xf32>
  %r = llvm.intr.maxnum(%s, %zeros) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
  %po = llvm.getelementptr inbounds %out[%g] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  llvm.store %r, %po {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
  %next = llvm.add %g, %one : i64
  %more = llvm.icmp "slt" %next, %groups : i64
  llvm.cond_br %more, ^loop(%next : i64), ^done
^done:
  llvm.return
}
"""

HALF_AND_INTEGERS = """
llvm.func @convert(%h: !llvm.ptr, %f: !llvm.ptr, %i: !llvm.ptr, %u: !llvm.ptr) attributes {mlc.kernel} {
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c3 = llvm.mlir.constant(3 : i32) : i32
  %hv = llvm.load %h {alignment = 8 : i64} : !llvm.ptr -> vector<4xf16>
  %x = llvm.extractelement %hv[%c3 : i32] : vector<4xf16>
  %wide = llvm.fpext %x : f16 to f32
  %twice = llvm.fadd %wide, %wide : f32
  %back = llvm.fptrunc %twice : f32 to f16
  llvm.store %back, %h {alignment = 2 : i64} : f16, !llvm.ptr
  %y = llvm.load %f {alignment = 4 : i64} : !llvm.ptr -> f32
  %truncated = llvm.fptosi %y : f32 to i32
  llvm.store %truncated, %i {alignment = 4 : i64} : i32, !llvm.ptr
  %magnitude = llvm.intr.fabs(%y) : (f32) -> f32
  %unsigned = llvm.fptoui %magnitude : f32 to i32
  %float = llvm.uitofp %unsigned : i32 to f64
  llvm.store %float, %u {alignment = 8 : i64} : f64, !llvm.ptr
  llvm.return
}
"""

SCALE_EXP_AS_GRAPH = """func.func @main(%a: tensor<1000xf32>) -> tensor<1000xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %e = graph.exp %a : tensor<1000xf32>
  %y = graph.mul %e, %half : (tensor<1000xf32>, tensor<f32>) -> tensor<1000xf32>
  func.return %y : tensor<1000xf32>
}"""
"""What @scale_exp computes on 1000 elements, as a graph function (for its error bound)."""


def test_a_loop_calling_libm_matches_numpy() -> None:
    module = parse(SCALE_EXP)
    assert kernel_names(module) == ["scale_exp"]
    a = random(1000)
    out = np.zeros_like(a)
    with loaded(module) as function:
        function("scale_exp", (POINTER, POINTER, ctypes.c_int64))(a.ctypes.data, out.ctypes.data, a.size)
    assert_compiled_matches(SCALE_EXP_AS_GRAPH, [a], out, [np.exp(a.astype(np.float64)) * 0.5])


def test_an_empty_range_writes_nothing() -> None:
    sentinel = random(4)
    out = sentinel.copy()
    with loaded(parse(SCALE_EXP)) as function:
        function("scale_exp", (POINTER, POINTER, ctypes.c_int64))(random(4).ctypes.data, out.ctypes.data, 0)
    np.testing.assert_array_equal(out, sentinel)


def test_aligned_vector_code_with_constants_and_intrinsics() -> None:
    groups = 257
    x, y = random(4 * groups), random(4 * groups)
    out = np.zeros_like(x)
    assert x.ctypes.data % 16 == 0 and y.ctypes.data % 16 == 0 and out.ctypes.data % 16 == 0
    with loaded(parse(VECTOR_RELU_AXPY)) as function:
        function("relu_axpy4", (POINTER, POINTER, POINTER, ctypes.c_int64))(
            x.ctypes.data, y.ctypes.data, out.ctypes.data, groups
        )
    alpha = np.tile(np.array([1.0, 2.0, 3.0, 4.0], np.float32), groups)
    np.testing.assert_array_equal(out, np.maximum(alpha * x + y, 0.0))


def test_half_precision_and_integer_conversions() -> None:
    h = (random(4) * 8).astype(np.float16)
    f = (random(1) * 100).astype(np.float32)
    i = np.zeros(1, np.int32)
    u = np.zeros(1, np.float64)
    expected_h = h.copy()
    expected_h[0] = np.float16(np.float32(h[3]) * 2)
    with loaded(parse(HALF_AND_INTEGERS)) as function:
        function("convert", (POINTER,) * 4)(h.ctypes.data, f.ctypes.data, i.ctypes.data, u.ctypes.data)
    np.testing.assert_array_equal(h, expected_h)
    assert i[0] == int(f[0])  # fptosi rounds toward zero, as int() does
    assert u[0] == float(int(abs(f[0])))


def test_every_kernel_of_a_module_is_in_the_object() -> None:
    module = parse(SCALE_EXP + VECTOR_RELU_AXPY)
    assert kernel_names(module) == ["scale_exp", "relu_axpy4"]
    with loaded(module) as function:
        for name in kernel_names(module):
            function(name, (POINTER,))


def test_gpu_intrinsics_are_errors_not_aborts() -> None:
    # LLVM's x86 back end would abort the process on an NVVM intrinsic.
    module = parse(
        """
        llvm.func @k(%a: !llvm.ptr) attributes {mlc.kernel} {
          %t = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
          llvm.store %t, %a : i32, !llvm.ptr
          llvm.return
        }
        """
    )
    with pytest.raises(TranslationError, match="llvm.nvvm.read.ptx.sreg.tid.x, which is a GPU intrinsic"):
        compile_to_cpu_object(module)


def test_the_object_is_for_this_host() -> None:
    header = compile_to_cpu_object(parse(SCALE_EXP))[:4]
    if binding.get_process_triple().startswith(("x86_64", "aarch64")) and "linux" in binding.get_process_triple():
        assert header == b"\x7fELF"
    else:
        pytest.skip("only checked on Linux")


NEGATE_STREAMED = """
llvm.func @negate_streamed(%a: !llvm.ptr, %out: !llvm.ptr, %n: i64) attributes {mlc.kernel} {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %empty = llvm.icmp "sle" %n, %zero : i64
  llvm.cond_br %empty, ^done, ^loop(%zero : i64)
^loop(%i: i64):
  %pa = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<16xf32>
  %x = llvm.load %pa {alignment = 16 : i64} : !llvm.ptr -> vector<16xf32>
  %y = llvm.fneg %x : vector<16xf32>
  %po = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<16xf32>
  llvm.store %y, %po {alignment = 16 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
  %next = llvm.add %i, %one : i64
  %more = llvm.icmp "slt" %next, %n : i64
  llvm.cond_br %more, ^loop(%next : i64), ^done
^done:
  llvm.return
}
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 streaming stores")
def test_nontemporal_stores_are_streaming_and_fenced() -> None:
    """A non-temporal store of 64 bytes stating 16-byte alignment becomes x86 `vmovntps` (16-byte
    ones: LLVM splits an under-aligned streaming store) followed by the function's `sfence`, and
    writes what an ordinary store writes, into an output 16 bytes past a 64-byte boundary."""
    from mlc.backend.cpu import cpu_target, host_target_machine, optimize, parse_verified
    from mlc.backend.llvm_translate import translate_module

    module = parse(NEGATE_STREAMED)
    machine = host_target_machine()
    llvm_module = parse_verified(str(translate_module(module, cpu_target(machine, for_code_generation=True))))
    optimize(llvm_module, machine)
    assembly = machine.emit_assembly(llvm_module)
    assert "vmovntps" in assembly and "sfence" in assembly
    groups = 33
    x = random(16 * groups)
    block = np.zeros(16 * groups + 16, np.float32)
    start = (-(block.ctypes.data % 64) // 4 + 4) % 16  # the element 16 bytes past a 64-byte boundary
    out = block[start : start + 16 * groups]
    assert out.ctypes.data % 64 == 16
    with loaded(module) as function:
        function("negate_streamed", (POINTER, POINTER, ctypes.c_int64))(x.ctypes.data, out.ctypes.data, groups)
    np.testing.assert_array_equal(out, -x)
