// RUN: mlc-translate --mlir-to-llvmir %s | filecheck %s
// RUN: mlc-opt %s -t llvm | filecheck %s
// RUN: mlc-translate --mlir-to-llvmir --target=cpu %s | filecheck %s --check-prefix=CPU

// A GPU kernel beside its host code: only the llvm ops are translated, with address spaces,
// alignment, phis for block arguments, and the kernel's calling convention and launch bound.

// CHECK:       target triple = "nvptx64-nvidia-cuda"
// CHECK:       @tile = internal addrspace(3) global [128 x float] undef, align 16
// CHECK-NOT:   main
// CHECK-LABEL: define ptx_kernel void @scale(ptr %a, ptr %out) #0 {
// CHECK:         %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
// CHECK:         %pa = getelementptr inbounds <4 x float>, ptr %a, i64 %t
// CHECK-NEXT:    %v = load <4 x float>, ptr %pa, align 16
// CHECK:         %x = extractelement <4 x float> %v, i32 0
// CHECK:         %slot = getelementptr inbounds [128 x float], ptr addrspace(3) @tile, i32 0, i64 %t
// CHECK-NEXT:    store float %x, ptr addrspace(3) %slot, align 4
// CHECK-NEXT:    call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
// CHECK:       [[LOOP:bb[0-9]+]]:
// CHECK-NEXT:    %i = phi i64 [ 0, %entry ], [ %next, %[[LOOP]] ]
// CHECK:       attributes #0 = { "nvvm.maxntid"="128,1,1" }
// CHECK:       !{i32 4, !"nvvm-reflect-ftz", i32 0}

// CPU:         target triple = "x86_64
// CPU:         define void @scale(ptr %a, ptr %out) {
// CPU-NOT:     nvvm.annotations

builtin.module {
  llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<128 x f32>
  llvm.func @scale(%a: !llvm.ptr, %out: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
    %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
    %t = llvm.zext %tid : i32 to i64
    %pa = llvm.getelementptr inbounds %a[%t] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
    %v = llvm.load %pa {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %x = llvm.extractelement %v[%c0 : i32] : vector<4xf32>
    %base = llvm.mlir.addressof @tile : !llvm.ptr<3>
    %slot = llvm.getelementptr inbounds %base[0, %t] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
    llvm.store %x, %slot {alignment = 4 : i64} : f32, !llvm.ptr<3>
    llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %four = llvm.mlir.constant(4 : i64) : i64
    llvm.br ^loop(%zero : i64)
  ^loop(%i: i64):
    %p = llvm.getelementptr inbounds %base[0, %i] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
    %y = llvm.load %p {alignment = 4 : i64} : !llvm.ptr<3> -> f32
    %po = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %y, %po {alignment = 4 : i64} : f32, !llvm.ptr
    %next = llvm.add %i, %one : i64
    %more = llvm.icmp "slt" %next, %four : i64
    llvm.cond_br %more, ^loop(%next : i64), ^exit
  ^exit:
    llvm.return
  }
  func.func @main(%a: memref<512xf32>, %out: memref<4xf32>) {
    mlc_gpu.launch @scale(%a, %out) grid [1, 1, 1] block [128, 1, 1] : memref<512xf32>, memref<4xf32>
    func.return
  }
}
