"""Tests of the llvm-dialect → LLVM IR translation (mlc.backend.llvm_translate and the API).

Each test parses a small hand-written module, translates it, and checks the LLVM IR as LLVM
itself prints it after parsing and verifying it (`llvm_ir_text`), so every test also checks that
LLVM 22 accepts what we produce.
"""

from __future__ import annotations

import re

import pytest
from llvmlite import ir
from xdsl.dialects.builtin import ModuleOp

from mlc.backend import (
    BackendError,
    TranslationError,
    default_target,
    emit_target,
    kernel_names,
    llvm_ir_text,
    translate_to_llvm,
)
from mlc.diagnostics import parse_module
from mlc.dialects import make_context


def parse(text: str) -> ModuleOp:
    module, _ = parse_module(text, make_context())
    module.verify()
    return module


def llvm_ir(text: str, target: str = "nvptx") -> str:
    return llvm_ir_text(parse(text), target)  # type: ignore[arg-type]


def function_body(ir_text: str, name: str) -> str:
    match = re.search(rf"define [^\n]*@{name}\(.*?\n}}", ir_text, re.DOTALL)
    assert match is not None, ir_text
    return match.group(0)


def test_scalar_and_vector_loads_and_stores_keep_their_alignment() -> None:
    text = llvm_ir(
        """
        llvm.func @copy(%src: !llvm.ptr, %dst: !llvm.ptr, %i: i64) attributes {mlc.kernel} {
          %p = llvm.getelementptr inbounds %src[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
          %v = llvm.load %p {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
          %q = llvm.getelementptr inbounds %dst[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
          llvm.store %v, %q {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
          %s = llvm.load %src {alignment = 4 : i64} : !llvm.ptr -> f32
          llvm.store %s, %dst {alignment = 8 : i64} : f32, !llvm.ptr
          llvm.return
        }
        """,
        "cpu",
    )
    assert "%p = getelementptr inbounds <4 x float>, ptr %src, i64 %i" in text
    assert "%v = load <4 x float>, ptr %p, align 16" in text
    assert "store <4 x float> %v, ptr %q, align 16" in text
    assert "%s = load float, ptr %src, align 4" in text
    assert "store float %s, ptr %dst, align 8" in text


def test_gep_keeps_address_spaces_without_bitcasts() -> None:
    text = llvm_ir(
        """
        llvm.func @k(%a: !llvm.ptr<1>, %i: i64) attributes {nvvm.kernel} {
          %p = llvm.getelementptr %a[%i] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f16
          %x = llvm.load %p {alignment = 2 : i64} : !llvm.ptr<1> -> f16
          %y = llvm.fadd %x, %x : f16
          llvm.store %y, %p {alignment = 2 : i64} : f16, !llvm.ptr<1>
          llvm.return
        }
        """
    )
    assert "getelementptr half, ptr addrspace(1) %a, i64 %i" in text
    assert "load half, ptr addrspace(1) %p, align 2" in text
    assert "bitcast" not in text


def test_constants_of_every_kind() -> None:
    text = llvm_ir(
        """
        llvm.func @constants(%out: !llvm.ptr) attributes {mlc.kernel} {
          %t = llvm.mlir.constant(true) : i1
          %f = llvm.mlir.constant(false) : i1
          %n = llvm.mlir.constant(-7 : i32) : i32
          %h = llvm.mlir.constant(0.1 : f16) : f16
          %b = llvm.mlir.constant(1.5 : bf16) : bf16
          %splat = llvm.mlir.constant(dense<2.0> : vector<4xf32>) : vector<4xf32>
          %dense = llvm.mlir.constant(dense<[1, 2, 3, 4]> : vector<4xi32>) : vector<4xi32>
          %mask = llvm.mlir.constant(dense<[true, false]> : vector<2xi1>) : vector<2xi1>
          %zero = llvm.mlir.zero : !llvm.ptr
          %u = llvm.mlir.undef : f32
          %s1 = llvm.select %t, %n, %n : i1, i32
          %s2 = llvm.select %f, %h, %h : i1, f16
          llvm.store %s1, %out : i32, !llvm.ptr
          llvm.store %s2, %out : f16, !llvm.ptr
          llvm.store %b, %out : bf16, !llvm.ptr
          llvm.store %splat, %out : vector<4xf32>, !llvm.ptr
          llvm.store %dense, %out : vector<4xi32>, !llvm.ptr
          llvm.store %mask, %out : vector<2xi1>, !llvm.ptr
          llvm.store %zero, %out : !llvm.ptr, !llvm.ptr
          llvm.store %u, %out : f32, !llvm.ptr
          llvm.return
        }
        """,
        "cpu",
    )
    assert "select i1 true, i32 -7, i32 -7" in text
    assert "select i1 false, half 0xH2E66, half 0xH2E66" in text  # 0.1 rounded to the nearest half
    assert "store bfloat 0xR3FC0" in text
    assert "store <4 x float> splat (float 2.000000e+00)" in text
    assert "store <4 x i32> <i32 1, i32 2, i32 3, i32 4>" in text
    assert "store <2 x i1> <i1 true, i1 false>" in text
    assert "store ptr null" in text
    assert "store float undef" in text


def test_casts_including_the_extra_ops() -> None:
    text = llvm_ir(
        """
        llvm.func @casts(%x: f32, %v: vector<4xf32>, %p: !llvm.ptr<3>, %out: !llvm.ptr) attributes {mlc.kernel} {
          %i = llvm.fptosi %x : f32 to i32
          %u = llvm.fptoui %x : f32 to i32
          %back = llvm.uitofp %u : i32 to f32
          %signed = llvm.sitofp %i : i32 to f64
          %wide = llvm.sext %i : i32 to i64
          %narrow = llvm.trunc %wide : i64 to i16
          %ext = llvm.fpext %x : f32 to f64
          %half = llvm.fptrunc %x : f32 to f16
          %bits = llvm.bitcast %x : f32 to i32
          %generic = llvm.addrspacecast %p : !llvm.ptr<3> to !llvm.ptr
          %c2 = llvm.mlir.constant(2 : i32) : i32
          %e = llvm.extractelement %v[%c2 : i32] : vector<4xf32>
          llvm.store %back, %generic : f32, !llvm.ptr
          llvm.store %signed, %out : f64, !llvm.ptr
          llvm.store %narrow, %out : i16, !llvm.ptr
          llvm.store %ext, %out : f64, !llvm.ptr
          llvm.store %half, %out : f16, !llvm.ptr
          llvm.store %bits, %out : i32, !llvm.ptr
          llvm.store %e, %out : f32, !llvm.ptr
          llvm.return
        }
        """,
        "cpu",
    )
    for line in (
        "%i = fptosi float %x to i32",
        "%u = fptoui float %x to i32",
        "%back = uitofp i32 %u to float",
        "%signed = sitofp i32 %i to double",
        "%wide = sext i32 %i to i64",
        "%narrow = trunc i64 %wide to i16",
        "%ext = fpext float %x to double",
        "%half = fptrunc float %x to half",
        "%bits = bitcast float %x to i32",
        "%generic = addrspacecast ptr addrspace(3) %p to ptr",
        "%e = extractelement <4 x float> %v, i32 2",
    ):
        assert line in text


def test_block_arguments_become_phis_in_any_block_order() -> None:
    # ^exit comes before ^loop in the region but uses a value defined in ^loop: the translation
    # must follow dominance, not the textual order. ^dead is unreachable and is dropped.
    text = llvm_ir(
        """
        llvm.func @sum(%a: !llvm.ptr, %n: i64) -> f32 {
          %zero = llvm.mlir.constant(0 : i64) : i64
          %one = llvm.mlir.constant(1 : i64) : i64
          %init = llvm.mlir.constant(0.0 : f32) : f32
          llvm.br ^loop(%zero, %init : i64, f32)
        ^exit:
          llvm.return %total : f32
        ^dead:
          llvm.br ^exit
        ^loop(%i: i64, %acc: f32):
          %p = llvm.getelementptr %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
          %x = llvm.load %p : !llvm.ptr -> f32
          %total = llvm.fadd %acc, %x : f32
          %next = llvm.add %i, %one : i64
          %more = llvm.icmp "slt" %next, %n : i64
          llvm.cond_br %more, ^loop(%next, %total : i64, f32), ^exit
        }
        """,
        "cpu",
    )
    body = function_body(text, "sum")
    assert re.search(r"%i = phi i64 \[ 0, %entry \], \[ %next, %bb\d \]", body)
    assert re.search(r"%acc = phi float \[ 0\.000000e\+00, %entry \], \[ %total, %bb\d \]", body)
    assert "ret float %total" in body
    assert re.findall(r"^(\w+):", body, re.MULTILINE) == ["entry", "bb1", "bb2"]  # ^dead is gone


def test_shared_memory_global_with_addressof_gep_and_barriers() -> None:
    text = llvm_ir(
        """
        llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<128 x f32>
        llvm.func @k(%a: !llvm.ptr) attributes {nvvm.kernel} {
          %t = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
          %t64 = llvm.zext %t : i32 to i64
          %base = llvm.mlir.addressof @tile : !llvm.ptr<3>
          %slot = llvm.getelementptr inbounds %base[0, %t64] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
          %x = llvm.load %a : !llvm.ptr -> f32
          llvm.store %x, %slot {alignment = 4 : i64} : f32, !llvm.ptr<3>
          llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
          %c0 = llvm.mlir.constant(0 : i32) : i32
          llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.all"(%c0) : (i32) -> ()
          llvm.return
        }
        """
    )
    assert "@tile = internal addrspace(3) global [128 x float] undef, align 16" in text
    assert "getelementptr inbounds [128 x float], ptr addrspace(3) @tile, i32 0, i64 %t64" in text
    assert "store float %x, ptr addrspace(3) %slot, align 4" in text
    # LLVM 22 upgrades barrier0 to the new spelling while parsing.
    assert text.count("call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)") == 2


def test_kernels_get_the_ptx_calling_convention_and_annotations() -> None:
    module = parse(
        """
        llvm.func internal @k(%a: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 2, 1>} {
          llvm.return
        }
        llvm.func @helper(%a: !llvm.ptr) {
          llvm.return
        }
        """
    )
    translated = str(translate_to_llvm(module, "nvptx"))
    assert isinstance(translate_to_llvm(module, "nvptx"), ir.Module)
    assert 'define ptx_kernel void @"k"' in translated  # internal linkage dropped: kernels are entry points
    assert '!{ ptr @"k", !"kernel", i32 1 }' in translated
    for axis, size in (("x", 128), ("y", 2), ("z", 1)):
        assert f'!{{ ptr @"k", !"maxntid{axis}", i32 {size} }}' in translated
    assert '!"nvvm-reflect-ftz", i32 0' in translated
    assert 'define void @"helper"' in translated
    # LLVM 22 turns the annotation into a function attribute while parsing.
    assert '"nvvm.maxntid"="128,2,1"' in llvm_ir_text(module, "nvptx")
    # On the CPU the nvvm attributes mean nothing.
    cpu = str(translate_to_llvm(module, "cpu"))
    assert "ptx_kernel" not in cpu and "nvvm.annotations" not in cpu


def test_host_code_beside_the_kernels_is_skipped() -> None:
    module = parse(
        """
        "memref.global"() <{sym_name = "weights", sym_visibility = "private", type = memref<4xf32>, initial_value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>, constant}> : () -> ()
        llvm.func @k(%a: !llvm.ptr) attributes {nvvm.kernel} {
          llvm.return
        }
        func.func @main(%a: memref<128xf32>) {
          mlc_gpu.launch @k(%a) grid [1, 1, 1] block [128, 1, 1] : memref<128xf32>
          func.return
        }
        """
    )
    text = llvm_ir_text(module, "nvptx")
    assert "define ptx_kernel void @k(ptr %a)" in text
    assert "main" not in text and "weights" not in text
    assert kernel_names(module) == ["k"]
    assert default_target(module) == "nvptx"


def test_intrinsics_and_external_calls() -> None:
    text = llvm_ir(
        """
        llvm.func @expf(f32) -> f32
        llvm.func @k(%x: f32, %v: vector<4xf32>, %out: !llvm.ptr) attributes {mlc.kernel} {
          %m = llvm.call_intrinsic "llvm.maximum.f32"(%x, %x) : (f32, f32) -> f32
          %e = llvm.call @expf(%m) : (f32) -> f32
          %s = llvm.intr.exp(%e) : (f32) -> f32
          %ve = llvm.intr.exp(%v) : (vector<4xf32>) -> vector<4xf32>
          %f = llvm.intr.fma(%s, %s, %s) : (f32, f32, f32) -> f32
          %q = llvm.intr.sqrt(%f) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
          %fast = llvm.fmul %q, %q {fastmathFlags = #llvm.fastmath<fast>} : f32
          llvm.store %fast, %out : f32, !llvm.ptr
          llvm.store %ve, %out : vector<4xf32>, !llvm.ptr
          llvm.return
        }
        """,
        "cpu",
    )
    assert "%m = call float @llvm.maximum.f32(float %x, float %x)" in text
    assert "%e = call float @expf(float %m)" in text
    assert "%s = call float @llvm.exp.f32(float %e)" in text
    assert "%ve = call <4 x float> @llvm.exp.v4f32(<4 x float> %v)" in text
    assert "%f = call float @llvm.fma.f32(float %s, float %s, float %s)" in text
    assert "%q = call afn float @llvm.sqrt.f32(float %f)" in text
    assert "%fast = fmul fast float %q, %q" in text
    assert "declare float @expf(float)" in text


@pytest.mark.parametrize(
    "predicate",
    ["_false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "_true"],
)
def test_every_fcmp_predicate(predicate: str) -> None:
    text = llvm_ir(
        f"""
        llvm.func @cmp(%x: f32, %y: f32) -> i1 {{
          %c = llvm.fcmp "{predicate}" %x, %y : f32
          llvm.return %c : i1
        }}
        """,
        "cpu",
    )
    assert f"%c = fcmp {predicate.lstrip('_')} float %x, %y" in text


def test_global_constants_alignment_and_nested_arrays() -> None:
    text = llvm_ir(
        """
        llvm.mlir.global internal constant @table(dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>) {addr_space = 1 : i32, alignment = 64 : i64} : !llvm.array<2 x array<2 x f32>>
        llvm.mlir.global external @dynamic() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
        llvm.func @k(%out: !llvm.ptr) attributes {nvvm.kernel} {
          %t = llvm.mlir.addressof @table : !llvm.ptr<1>
          %x = llvm.load %t : !llvm.ptr<1> -> f32
          llvm.store %x, %out : f32, !llvm.ptr
          llvm.return
        }
        """
    )
    assert (
        "@table = internal addrspace(1) constant [2 x [2 x float]] [[2 x float] [float 1.000000e+00, "
        "float 2.000000e+00], [2 x float] [float 3.000000e+00, float 4.000000e+00]], align 64" in text
    )
    assert "@dynamic = external addrspace(3) global [0 x i8], align 16" in text


def test_kernel_names_for_both_targets() -> None:
    module = parse(
        """
        llvm.func @gpu(%a: !llvm.ptr) attributes {nvvm.kernel} {
          llvm.return
        }
        llvm.func @cpu(%a: !llvm.ptr) attributes {mlc.kernel} {
          llvm.return
        }
        llvm.func @helper() {
          llvm.return
        }
        llvm.func @declared(f32) -> f32
        """
    )
    assert kernel_names(module) == ["gpu", "cpu"]


def test_default_target_is_cpu_without_gpu_kernels() -> None:
    module = parse("llvm.func @f() attributes {mlc.kernel} {\n llvm.return\n}")
    assert default_target(module) == "cpu"
    assert "nvptx" not in emit_target("llvm", module)
    assert "nvptx64-nvidia-cuda" in emit_target("llvm{target=nvptx}", module)


# Errors ----------------------------------------------------------------------------------------


def translation_error(text: str, target: str = "nvptx") -> TranslationError:
    with pytest.raises(TranslationError) as caught:
        translate_to_llvm(parse(text), target)  # type: ignore[arg-type]
    return caught.value


def test_an_op_of_another_dialect_is_named() -> None:
    error = translation_error(
        """
        llvm.func @f() {
          %x = arith.constant 1 : i32
          llvm.return
        }
        """
    )
    assert error.op.name == "arith.constant"
    assert str(error) == "'arith.constant' op is not an llvm dialect op; lower it before translating to LLVM IR"


def test_index_must_be_lowered_first() -> None:
    error = translation_error(
        """
        llvm.func @f(%p: !llvm.ptr) {
          %x = llvm.load %p : !llvm.ptr -> index
          llvm.return
        }
        """
    )
    assert "lower index to i64 first" in str(error)
    assert error.op.name == "llvm.load"


def test_a_module_without_llvm_functions_is_not_silently_empty() -> None:
    module = parse("func.func @f() {\n func.return\n}")
    with pytest.raises(BackendError, match="the module has no llvm.func to translate; lower it"):
        llvm_ir_text(module, "cpu")


def test_an_intrinsic_called_with_two_signatures() -> None:
    error = translation_error(
        """
        llvm.func @f(%x: f32, %y: f64) {
          %a = llvm.call_intrinsic "llvm.maximum.f32"(%x, %x) : (f32, f32) -> f32
          %b = llvm.call_intrinsic "llvm.maximum.f32"(%y, %y) : (f64, f64) -> f64
          llvm.return
        }
        """
    )
    assert "calls @llvm.maximum.f32 as 'double (double, double)'" in str(error)


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ("{nvvm.kernel, nvvm.maxntids = array<i32: 4>}", "unknown attribute 'nvvm.maxntids'"),
        ("{nvvm.maxntid = array<i32: 4>}", "'nvvm.maxntid' is only allowed on kernels"),
        ("{nvvm.kernel, nvvm.maxntid = array<i32: 0, 1>}", "'nvvm.maxntid' must be an array of 1 to 3 positive i32"),
    ],
)
def test_bad_nvvm_attributes(attributes: str, message: str) -> None:
    error = translation_error(f"llvm.func @f() attributes {attributes} {{\n llvm.return\n}}")
    assert message in str(error)


def test_a_kernel_returns_nothing() -> None:
    error = translation_error(
        """
        llvm.func @f() -> i32 attributes {nvvm.kernel} {
          %c = llvm.mlir.constant(1 : i32) : i32
          llvm.return %c : i32
        }
        """
    )
    assert "kernel @f must return void" in str(error)


def test_atomic_loads_are_reported() -> None:
    error = translation_error(
        """
        llvm.func @f(%p: !llvm.ptr) {
          %x = llvm.load %p atomic monotonic {alignment = 4 : i64} : !llvm.ptr -> i32
          llvm.return
        }
        """
    )
    assert "atomic loads are not supported" in str(error)


def test_a_triple_for_another_architecture_is_reported() -> None:
    error = translation_error(
        """
        builtin.module attributes {llvm.target_triple = "x86_64-unknown-linux-gnu"} {
          llvm.func @f() {
            llvm.return
          }
        }
        """
    )
    assert "the target is 'nvptx64-nvidia-cuda'" in str(error)


def test_invalid_intrinsic_signatures_are_llvm_errors() -> None:
    module = parse(
        """
        llvm.func @f(%x: f32) {
          %t = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"(%x) : (f32) -> i32
          llvm.return
        }
        """
    )
    with pytest.raises(BackendError, match="not valid LLVM IR"):
        llvm_ir_text(module, "nvptx")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ptxx", "unknown output target 'ptxx' (did you mean 'ptx'?); valid targets: mlir, llvm, ptx"),
        ("llvm{arch=sm_90}", "unknown option 'arch=sm_90' of output target 'llvm'; it takes target=..."),
        ("llvm{target=gpu}", "unknown code generation target 'gpu'; valid targets: nvptx, cpu"),
        ("ptx{ptx-version=eight}", "ptx-version must be an integer"),
    ],
)
def test_emit_target_errors(name: str, message: str) -> None:
    module = parse("llvm.func @f() attributes {nvvm.kernel} {\n llvm.return\n}")
    with pytest.raises(BackendError) as caught:
        emit_target(name, module)
    assert message in str(caught.value)
