"""Tests of PTX generation (mlc.backend.nvptx): the PTX text, and ptxas's verdict when available.

The kernels are small hand-written llvm-dialect modules of the kind convert-gpu-to-nvvm
produces: bare generic pointers, special registers and barriers as NVVM intrinsics, shared
memory as an addrspace-3 global. Nothing here needs a GPU; `ptxas` (from CUDA) assembles the PTX
for sm_90 when it is on PATH, and those checks are skipped otherwise.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from mlc.backend import BackendError, TranslationError, compile_to_ptx, emit_target, kernel_names, nvptx
from mlc.diagnostics import parse_module
from mlc.dialects import make_context

PTXAS = shutil.which("ptxas")

VECTOR_ADD = """
llvm.func @vadd4(%a: !llvm.ptr, %b: !llvm.ptr, %c: !llvm.ptr, %n: i64) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %ctaid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
  %ntid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.x"() : () -> i32
  %block = llvm.mul %ctaid, %ntid : i32
  %i32 = llvm.add %block, %tid : i32
  %i = llvm.zext %i32 : i32 to i64
  %inside = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %inside, ^body, ^exit
^body:
  %pa = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  %pb = llvm.getelementptr inbounds %b[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  %pc = llvm.getelementptr inbounds %c[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  %x = llvm.load %pa {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
  %y = llvm.load %pb {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
  %s = llvm.fadd %x, %y : vector<4xf32>
  llvm.store %s, %pc {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
  llvm.br ^exit
^exit:
  llvm.return
}
"""

BLOCK_REVERSE = """
llvm.mlir.global internal @tile() {{addr_space = 3 : i32, alignment = 16 : i64}} : !llvm.array<128 x f32>
llvm.func @reverse(%a: !llvm.ptr, %out: !llvm.ptr) attributes {{nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>}} {{
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %ctaid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
  %t = llvm.zext %tid : i32 to i64
  %b = llvm.zext %ctaid : i32 to i64
  %c128 = llvm.mlir.constant(128 : i64) : i64
  %c127 = llvm.mlir.constant(127 : i64) : i64
  %base = llvm.mul %b, %c128 : i64
  %i = llvm.add %base, %t : i64
  %pa = llvm.getelementptr inbounds %a[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %pa {{alignment = 4 : i64}} : !llvm.ptr -> f32
  %tile = llvm.mlir.addressof @tile : !llvm.ptr<3>
  %slot = llvm.getelementptr inbounds %tile[0, %t] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
  llvm.store %x, %slot {{alignment = 4 : i64}} : f32, !llvm.ptr<3>
  {barrier}
  %r = llvm.sub %c127, %t : i64
  %mirror = llvm.getelementptr inbounds %tile[0, %r] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
  %y = llvm.load %mirror {{alignment = 4 : i64}} : !llvm.ptr<3> -> f32
  %po = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %y, %po {{alignment = 4 : i64}} : f32, !llvm.ptr
  llvm.return
}}
"""

BARRIERS = {
    "barrier0": 'llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()',
    "barrier.cta.sync.aligned.all": (
        '%zero = llvm.mlir.constant(0 : i32) : i32\n'
        '  llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.all"(%zero) : (i32) -> ()'
    ),
}

LIBDEVICE_EXP = """
llvm.func @__nv_expf(f32) -> f32
llvm.func @__nv_powf(f32, f32) -> f32
llvm.func @softplus_like(%a: !llvm.ptr) attributes {nvvm.kernel} {
  %x = llvm.load %a {alignment = 4 : i64} : !llvm.ptr -> f32
  %e = llvm.call @__nv_expf(%x) : (f32) -> f32
  %p = llvm.call @__nv_powf(%e, %x) : (f32, f32) -> f32
  llvm.store %p, %a {alignment = 4 : i64} : f32, !llvm.ptr
  llvm.return
}
"""

HALF_AND_HELPER = """
llvm.func internal @twice(%x: f16) -> f16 {
  %y = llvm.fadd %x, %x : f16
  llvm.return %y : f16
}
llvm.func @scale_half(%a: !llvm.ptr, %out: !llvm.ptr) attributes {nvvm.kernel} {
  %x = llvm.load %a {alignment = 2 : i64} : !llvm.ptr -> f16
  %y = llvm.call @twice(%x) : (f16) -> f16
  %f = llvm.fpext %y : f16 to f32
  %i = llvm.fptosi %f : f32 to i32
  %u = llvm.uitofp %i : i32 to f32
  %m = llvm.call_intrinsic "llvm.maximum.f32"(%f, %u) : (f32, f32) -> f32
  llvm.store %m, %out {alignment = 4 : i64} : f32, !llvm.ptr
  llvm.return
}
"""


def parse(text: str) -> ModuleOp:
    module, _ = parse_module(text, make_context())
    module.verify()
    return module


def assemble(ptx: str, tmp_path: Path, arch: str = "sm_90") -> str:
    """ptxas's report on `ptx`; fails the test when ptxas rejects it."""
    assert PTXAS is not None
    source = tmp_path / "kernel.ptx"
    source.write_text(ptx)
    result = subprocess.run(
        [PTXAS, f"-arch={arch}", "-v", str(source), "-o", str(tmp_path / "kernel.cubin")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_an_aligned_vector_load_becomes_one_ld_global_v4() -> None:
    ptx = compile_to_ptx(parse(VECTOR_ADD))
    assert ".version 8.0" in ptx and ".target sm_90" in ptx
    assert ".visible .entry vadd4(" in ptx
    assert ".maxntid 128, 1, 1" in ptx
    # LLVM 22 types vector memory accesses by their bits: ld.global.v4.b32 (older LLVMs: .f32).
    assert len(re.findall(r"ld\.global(?:\.nc)?\.v4\.[bf]32", ptx)) == 2
    assert len(re.findall(r"st\.global\.v4\.[bf]32", ptx)) == 1
    assert re.search(r"add\.rn\.f32", ptx)


@pytest.mark.parametrize("barrier", sorted(BARRIERS))
def test_shared_memory_and_both_barrier_spellings(barrier: str) -> None:
    ptx = compile_to_ptx(parse(BLOCK_REVERSE.format(barrier=BARRIERS[barrier])))
    assert ".visible .entry reverse(" in ptx
    assert re.search(r"\.shared \.align 16 \.b8 tile\[512\]", ptx)
    assert re.search(r"st\.shared\.[bf]32", ptx)
    assert re.search(r"ld\.shared\.[bf]32", ptx)
    assert "bar.sync \t0;" in ptx or re.search(r"bar\.sync\s+0;", ptx)


def test_libdevice_is_linked_and_pruned() -> None:
    ptx = compile_to_ptx(parse(LIBDEVICE_EXP))
    assert ".visible .entry softplus_like(" in ptx
    assert "__nv_" not in ptx  # inlined, and the rest of libdevice dropped
    assert "__nvvm_reflect" not in ptx  # answered by NVVMReflect (nvvm-reflect-ftz = 0)
    assert ".extern" not in ptx
    assert "ex2.approx" in ptx
    assert ".func" not in ptx  # nothing but the kernel survives


def test_libdevice_subset_holds_what_the_module_calls_and_nothing_else() -> None:
    """The subset defines the asked functions (external) and what they call (internal), for our
    triple; powf calls other libdevice functions, expf does not."""
    from llvmlite import binding

    wanted = frozenset({"__nv_expf", "__nv_powf"})
    layout = str(nvptx.target_machine().target_data)
    subset = binding.parse_bitcode(nvptx.libdevice_subset(str(nvptx.find_libdevice()), wanted, nvptx.TRIPLE, layout))
    defined = [f for f in subset.functions if not f.is_declaration]
    assert {f.name for f in defined if f.linkage == binding.Linkage.external} == wanted
    assert 0 < len(defined) < 40  # not libdevice's 575 functions
    assert subset.triple == nvptx.TRIPLE


def test_linking_the_libdevice_subset_gives_the_ptx_of_linking_all_of_it() -> None:
    """What `compile_to_ptx` made before the subset: all of libdevice linked, then pruned."""
    from llvmlite import binding

    from mlc.backend.llvm_codegen import drop_unused_definitions, optimize, parse_verified
    from mlc.backend.llvm_translate import translate_module

    module = parse(LIBDEVICE_EXP)
    machine = nvptx.target_machine("sm_90")
    whole = parse_verified(translate_module(module, nvptx.nvptx_target(for_code_generation=True)))
    libdevice = binding.parse_bitcode(nvptx.find_libdevice().read_bytes())
    libdevice.triple, libdevice.data_layout = whole.triple, whole.data_layout
    whole.link_in(libdevice)
    for function in whole.functions:
        if not function.is_declaration and function.name != "softplus_like":
            function.linkage = binding.Linkage.internal
    drop_unused_definitions(whole, machine)
    optimize(whole, machine)
    assert compile_to_ptx(module, "sm_90") == machine.emit_assembly(whole)


def test_a_missing_libdevice_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(nvptx, "libdevice_search_paths", lambda: [tmp_path / "libdevice.10.bc"])
    monkeypatch.setattr(nvptx, "_libdevice_from_cuda_pathfinder", lambda: None)
    with pytest.raises(nvptx.LibdeviceNotFoundError) as caught:
        compile_to_ptx(parse(LIBDEVICE_EXP))
    message = str(caught.value)
    assert "calls libdevice functions (__nv_*)" in message
    assert str(tmp_path / "libdevice.10.bc") in message
    assert "CUDA_HOME" in message


def test_modules_without_libdevice_calls_do_not_need_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvptx, "libdevice_search_paths", lambda: [])
    monkeypatch.setattr(nvptx, "_libdevice_from_cuda_pathfinder", lambda: None)
    assert ".entry vadd4" in compile_to_ptx(parse(VECTOR_ADD))


def test_f16_casts_and_an_inlined_helper() -> None:
    module = parse(HALF_AND_HELPER)
    assert kernel_names(module) == ["scale_half"]
    ptx = compile_to_ptx(module)
    assert ".visible .entry scale_half(" in ptx
    assert "twice" not in ptx  # an internal helper is inlined and dropped
    assert re.search(r"cvt\.rzi\.s32\.f(16|32)", ptx) and "cvt.rn.f32.u32" in ptx
    assert "add.rn.f16" in ptx
    assert "max.NaN.f32" in ptx  # llvm.maximum: NaN-propagating max, native on sm_80+


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "llvm.intr.exp(%x) : (f32) -> f32",
            "calls @llvm.exp.f32, which has no NVPTX lowering in LLVM 22; call libdevice's @__nv_expf instead",
        ),
        ('llvm.call_intrinsic "llvm.pow.f32"(%x, %x) : (f32, f32) -> f32', "@__nv_powf"),
        ('llvm.call_intrinsic "llvm.powi.f32.i32"(%x, %n) : (f32, i32) -> f32', "@__nv_powif"),
        ("llvm.intr.sin(%x) : (f32) -> f32", "or give the call the afn flag"),
        ("llvm.intr.exp2(%x) : (f64) -> f64", "@__nv_exp2 instead"),
        ('llvm.call_intrinsic "llvm.x86.sse.sqrt.ss"(%x) : (f32) -> f32', "is an intrinsic of another target"),
    ],
)
def test_intrinsics_nvptx_cannot_lower_are_errors_not_aborts(call: str, message: str) -> None:
    # LLVM would abort the process on these; the translation names the op instead.
    argument_type = "f64" if "f64" in call else "f32"
    module = parse(
        f"""
        llvm.func @k(%x: {argument_type}, %n: i32) attributes {{nvvm.kernel}} {{
          %y = {call}
          llvm.return
        }}
        """
    )
    with pytest.raises(TranslationError) as caught:
        compile_to_ptx(module)
    assert message in str(caught.value)


def test_the_hardware_approximations_are_allowed_with_afn() -> None:
    module = parse(
        """
        llvm.func @k(%a: !llvm.ptr) attributes {nvvm.kernel} {
          %x = llvm.load %a : !llvm.ptr -> f32
          %s = llvm.intr.sin(%x) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
          %e = llvm.intr.exp2(%s) : (f32) -> f32
          llvm.store %e, %a : f32, !llvm.ptr
          llvm.return
        }
        """
    )
    ptx = compile_to_ptx(module)
    assert "sin.approx" in ptx and "ex2.approx" in ptx


def test_calls_nothing_resolves_on_the_gpu_are_errors() -> None:
    module = parse(
        """
        llvm.func @expf(f32) -> f32
        llvm.func @k(%a: !llvm.ptr) attributes {nvvm.kernel} {
          %x = llvm.load %a : !llvm.ptr -> f32
          %e = llvm.call @expf(%x) : (f32) -> f32
          llvm.store %e, %a : f32, !llvm.ptr
          llvm.return
        }
        """
    )
    with pytest.raises(BackendError, match=r"@expf is called but not defined; .* @__nv_expf"):
        compile_to_ptx(module)


def test_the_architecture_and_ptx_version_are_chosen_by_the_caller() -> None:
    module = parse(VECTOR_ADD)
    ptx = compile_to_ptx(module, "sm_80")
    assert ".target sm_80" in ptx and ".version 8.0" in ptx
    assert ".version 7.8" in compile_to_ptx(module, "sm_90", ptx_version=78)
    assert ".version 8.6" in compile_to_ptx(module, "sm_100")
    assert ".target sm_80" in emit_target("ptx{arch=sm_80}", module)


@pytest.mark.parametrize(
    ("arch", "ptx_version", "message"),
    [
        ("sm_9", None, "unknown GPU architecture 'sm_9' (did you mean"),
        ("compute_90", None, "unknown GPU architecture 'compute_90'"),
        ("sm_90", 70, "PTX ISA version 7.0 cannot be used for sm_90: it needs 7.8 to 9.0"),
    ],
)
def test_bad_architectures_and_versions(arch: str, ptx_version: int | None, message: str) -> None:
    with pytest.raises(BackendError) as caught:
        compile_to_ptx(parse(VECTOR_ADD), arch, ptx_version=ptx_version)
    assert message in str(caught.value)


@pytest.mark.skipif(PTXAS is None, reason="ptxas is not on PATH")
@pytest.mark.parametrize(
    "source",
    [VECTOR_ADD, BLOCK_REVERSE.format(barrier=BARRIERS["barrier0"]), LIBDEVICE_EXP, HALF_AND_HELPER],
    ids=["vector-add", "block-reverse", "libdevice", "half"],
)
def test_ptxas_accepts_the_ptx(source: str, tmp_path: Path) -> None:
    report = assemble(compile_to_ptx(parse(source)), tmp_path)
    if "tile" in source:
        assert "512 bytes smem" in report and "1 barriers" in report
