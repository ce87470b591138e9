"""Hand-written kernels and host modules for the runtime's GPU tests and `gpu_smoke.py`.

The PTX is written by hand in the style nvcc emits (`.version 7.0`, `.target sm_70`, which every
driver since CUDA 11 JIT-compiles for newer GPUs such as sm_90), so these tests need neither the
backend nor ptxas. `BLOCK_REVERSE_LLVM_IR` is the same block-reverse kernel as LLVM IR, turned
into PTX for the device's own architecture by llvmlite's NVPTX backend (`ptx_from_llvm_ir`), which
checks the llvmlite → PTX → driver route on its own.

Kernels:
* `vadd(a, b, c, n)`: `c[i] = a[i] + b[i]` for `i < n`, one thread per element (a scalar parameter).
* `add3(a, b, c)`: the same without a bound (the grid covers the buffers exactly).
* `add3_small(a, b, c)`: `add3` compiled with `.maxntid 128, 1, 1` (at most 128 threads per block).
* `block_reverse(in, out)`: per block of 256 threads, `out` is `in` reversed, through shared memory
  and a barrier.
* `fault(a)`: stores 1 TiB past `a`: an illegal address (run it only in a throwaway process).
"""

from __future__ import annotations

VECTOR_ADD_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry vadd(
	.param .u64 vadd_param_0,
	.param .u64 vadd_param_1,
	.param .u64 vadd_param_2,
	.param .u32 vadd_param_3
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [vadd_param_0];
	ld.param.u64 	%rd2, [vadd_param_1];
	ld.param.u64 	%rd3, [vadd_param_2];
	ld.param.u32 	%r2, [vadd_param_3];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;

	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.s32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd5;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd8];
	add.f32 	%f3, %f1, %f2;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd5;
	st.global.f32 	[%rd10], %f3;

$L__BB0_2:
	ret;
}
"""

POINTER_KERNELS_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

// One float per thread of a 256-thread block.
.shared .align 4 .b8 tile[1024];

.visible .entry add3(
	.param .u64 add3_param_0,
	.param .u64 add3_param_1,
	.param .u64 add3_param_2
)
{
	.reg .f32 	%f<4>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [add3_param_0];
	ld.param.u64 	%rd2, [add3_param_1];
	ld.param.u64 	%rd3, [add3_param_2];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.s32 	%r4, %r1, %r2, %r3;
	mul.wide.u32 	%rd4, %r4, 4;
	cvta.to.global.u64 	%rd5, %rd1;
	add.s64 	%rd6, %rd5, %rd4;
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd4;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd8];
	add.f32 	%f3, %f1, %f2;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd4;
	st.global.f32 	[%rd10], %f3;
	ret;
}

.visible .entry add3_small(
	.param .u64 add3_small_param_0,
	.param .u64 add3_small_param_1,
	.param .u64 add3_small_param_2
)
.maxntid 128, 1, 1
{
	.reg .f32 	%f<4>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [add3_small_param_0];
	ld.param.u64 	%rd2, [add3_small_param_1];
	ld.param.u64 	%rd3, [add3_small_param_2];
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mad.lo.s32 	%r4, %r1, %r2, %r3;
	mul.wide.u32 	%rd4, %r4, 4;
	cvta.to.global.u64 	%rd5, %rd1;
	add.s64 	%rd6, %rd5, %rd4;
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd4;
	ld.global.f32 	%f1, [%rd6];
	ld.global.f32 	%f2, [%rd8];
	add.f32 	%f3, %f1, %f2;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd4;
	st.global.f32 	[%rd10], %f3;
	ret;
}

.visible .entry block_reverse(
	.param .u64 block_reverse_param_0,
	.param .u64 block_reverse_param_1
)
{
	.reg .f32 	%f<3>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<13>;

	ld.param.u64 	%rd1, [block_reverse_param_0];
	ld.param.u64 	%rd2, [block_reverse_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	shl.b32 	%r3, %r2, 8;
	add.s32 	%r4, %r3, %r1;
	mul.wide.u32 	%rd5, %r4, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.f32 	%f1, [%rd6];
	mul.wide.u32 	%rd7, %r1, 4;
	mov.u64 	%rd8, tile;
	add.s64 	%rd9, %rd8, %rd7;
	st.shared.f32 	[%rd9], %f1;
	bar.sync 	0;
	sub.s32 	%r5, 255, %r1;
	mul.wide.u32 	%rd10, %r5, 4;
	add.s64 	%rd11, %rd8, %rd10;
	ld.shared.f32 	%f2, [%rd11];
	add.s64 	%rd12, %rd4, %rd5;
	st.global.f32 	[%rd12], %f2;
	ret;
}

.visible .entry fault(
	.param .u64 fault_param_0
)
{
	.reg .f32 	%f<2>;
	.reg .b64 	%rd<4>;

	ld.param.u64 	%rd1, [fault_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	add.s64 	%rd3, %rd2, 1099511627776;
	mov.f32 	%f1, 0f3F800000;
	st.global.f32 	[%rd3], %f1;
	ret;
}
"""

BLOCK_REVERSE_LLVM_IR = r"""
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()

@tile = internal addrspace(3) global [256 x float] undef, align 4

define ptx_kernel void @block_reverse_llvm(ptr addrspace(1) %in, ptr addrspace(1) %out) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %base = mul i32 %ctaid, 256
  %i = add i32 %base, %tid
  %i64 = zext i32 %i to i64
  %pin = getelementptr inbounds float, ptr addrspace(1) %in, i64 %i64
  %v = load float, ptr addrspace(1) %pin, align 4
  %t64 = zext i32 %tid to i64
  %ps = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %t64
  store float %v, ptr addrspace(3) %ps, align 4
  call void @llvm.nvvm.barrier0()
  %r = sub i32 255, %tid
  %r64 = zext i32 %r to i64
  %pr = getelementptr inbounds [256 x float], ptr addrspace(3) @tile, i64 0, i64 %r64
  %w = load float, ptr addrspace(3) %pr, align 4
  %pout = getelementptr inbounds float, ptr addrspace(1) %out, i64 %i64
  store float %w, ptr addrspace(1) %pout, align 4
  ret void
}

; Older NVPTX backends recognise kernels by this annotation rather than by the calling convention.
!nvvm.annotations = !{!0}
!0 = !{ptr @block_reverse_llvm, !"kernel", i32 1}
"""


def ptx_isa_feature(arch: str) -> str:
    """A PTX ISA version that LLVM accepts for `arch` and a CUDA 12+ driver loads."""
    number = int(arch.removeprefix("sm_").rstrip("af"))
    if number >= 100:
        return "+ptx86"
    if number >= 90:
        return "+ptx80"
    return "+ptx70"


def ptx_from_llvm_ir(llvm_ir: str, arch: str) -> str:
    """PTX for `arch` (e.g. sm_90) from LLVM IR, through llvmlite's NVPTX backend."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    machine = target.create_target_machine(cpu=arch, features=ptx_isa_feature(arch), opt=2)
    module = llvm.parse_assembly(llvm_ir)
    module.data_layout = str(machine.target_data)
    module.verify()
    return machine.emit_assembly(module)


# A host module over POINTER_KERNELS_PTX: ((x + y) + bias), then block-reversed, with a
# reshape of the final buffer (4x256 passed for the kernel's flat parameter).
GPU_HOST_MODULE = """
builtin.module {
  "memref.global"() <{sym_name = "bias", sym_visibility = "private", type = memref<1024xf32>, initial_value = dense<0.5> : tensor<1024xf32>, constant}> : () -> ()
  llvm.func @add3(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr<1>) attributes {nvvm.kernel, mlc.arg_alignment = array<i64: 16, 16, 16>}
  llvm.func @block_reverse(!llvm.ptr<1>, !llvm.ptr<1>) attributes {nvvm.kernel}
  func.func @main(%x: memref<1024xf32>, %y: memref<1024xf32>) -> (memref<1024xf32>, memref<4x256xf32>) {
    %bias = memref.get_global @bias : memref<1024xf32>
    %sum = memref.alloc() : memref<1024xf32>
    mlc_gpu.launch @add3(%x, %y, %sum) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %biased = memref.alloc() : memref<1024xf32>
    mlc_gpu.launch @add3(%sum, %bias, %biased) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %reversed = memref.alloc() : memref<4x256xf32>
    mlc_gpu.launch @block_reverse(%biased, %reversed) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<4x256xf32>
    func.return %biased, %reversed : memref<1024xf32>, memref<4x256xf32>
  }
}
"""


def gpu_host_reference(x, y):  # type: ignore[no-untyped-def]
    """What GPU_HOST_MODULE's @main returns, computed with numpy."""
    biased = x + y + 0.5
    return biased, biased.reshape(4, 256)[:, ::-1]


GPU_ARENA_MODULE = """
builtin.module {
  "memref.global"() <{sym_name = "bias", sym_visibility = "private", type = memref<1024xf32>, initial_value = dense<0.5> : tensor<1024xf32>, constant}> : () -> ()
  llvm.func @add3(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr<1>) attributes {nvvm.kernel, mlc.arg_alignment = array<i64: 16, 16, 16>}
  llvm.func @block_reverse(!llvm.ptr<1>, !llvm.ptr<1>) attributes {nvvm.kernel}
  func.func @main(%x: memref<1024xf32>, %y: memref<1024xf32>) -> (memref<4x256xf32>, memref<1024xf32>) {
    %bias = memref.get_global @bias : memref<1024xf32>
    %arena = memref.alloc() {alignment = 256 : i64} : memref<8192xi8>
    %c0 = arith.constant 0 : index
    %c4096 = arith.constant 4096 : index
    %sum = memref.view %arena[%c0][] : memref<8192xi8> to memref<1024xf32>
    mlc_gpu.launch @add3(%x, %y, %sum) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %biased = memref.view %arena[%c4096][] : memref<8192xi8> to memref<1024xf32>
    mlc_gpu.launch @add3(%sum, %bias, %biased) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %twice = memref.view %arena[%c0][] : memref<8192xi8> to memref<1024xf32>
    mlc_gpu.launch @add3(%biased, %biased, %twice) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %reversed = memref.alloc() : memref<4x256xf32>
    mlc_gpu.launch @block_reverse(%twice, %reversed) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<4x256xf32>
    func.return %reversed, %biased : memref<4x256xf32>, memref<1024xf32>
  }
}
"""
"""GPU_HOST_MODULE's kernels with the intermediates in one arena (as graph-plan-memory plans them):
%sum and %twice take turns at byte 0, %biased sits at 4096 and is also returned (so copied out)."""


def gpu_arena_reference(x, y):  # type: ignore[no-untyped-def]
    """What GPU_ARENA_MODULE's @main returns, computed with numpy."""
    biased = x + y + 0.5
    return (2 * biased).reshape(4, 256)[:, ::-1], biased


# add3_small may take at most 128 threads per block; this launches 256.
GPU_TOO_MANY_THREADS_MODULE = """
builtin.module {
  llvm.func @add3_small(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr<1>) attributes {nvvm.kernel}
  func.func @main(%x: memref<1024xf32>, %y: memref<1024xf32>) -> memref<1024xf32> {
    %o = memref.alloc() : memref<1024xf32>
    mlc_gpu.launch @add3_small(%x, %y, %o) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    func.return %o : memref<1024xf32>
  }
}
"""

GPU_FAULT_MODULE = """
builtin.module {
  llvm.func @fault(!llvm.ptr<1>) attributes {nvvm.kernel}
  func.func @main(%x: memref<256xf32>) -> memref<256xf32> {
    %o = memref.alloc() : memref<256xf32>
    mlc_gpu.launch @fault(%o) grid [1, 1, 1] block [32, 1, 1] : memref<256xf32>
    func.return %o : memref<256xf32>
  }
}
"""


def parse(text: str):  # type: ignore[no-untyped-def]
    """Parses and verifies a module with mlc's dialects."""
    from mlc.diagnostics import parse_module, verify
    from mlc.dialects import make_context

    module, source_map = parse_module(text, make_context())
    verify(module, source_map)
    return module
