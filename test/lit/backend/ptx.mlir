// RUN: mlc-translate --mlir-to-ptx %s | filecheck %s
// RUN: mlc-opt %s -t ptx | filecheck %s
// RUN: mlc-translate --mlir-to-ptx --arch sm_80 %s | filecheck %s --check-prefix=SM80
// RUN: mlc-opt %s -t 'ptx{arch=sm_80}' | filecheck %s --check-prefix=SM80

// PTX for a kernel with an aligned vector load, shared memory, a barrier and a libdevice call.

// CHECK:       .version 8.0
// CHECK-NEXT:  .target sm_90
// CHECK-LABEL: .visible .entry k(
// CHECK:       .maxntid 128, 1, 1
// CHECK:       .shared .align 16 .b8 tile[512];
// CHECK:       ld.global.v4.{{[bf]}}32
// CHECK:       st.shared.{{[bf]}}32
// CHECK:       bar.sync 0;
// CHECK:       ld.shared.{{[bf]}}32
// CHECK:       ex2.approx
// CHECK-NOT:   __nv_expf

// SM80:        .version 8.0
// SM80-NEXT:   .target sm_80
// SM80:        .visible .entry k(

llvm.mlir.global internal @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<128 x f32>
llvm.func @__nv_expf(f32) -> f32
llvm.func @k(%a: !llvm.ptr, %out: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid = array<i32: 128, 1, 1>} {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %t = llvm.zext %tid : i32 to i64
  %pa = llvm.getelementptr inbounds %a[%t] : (!llvm.ptr, i64) -> !llvm.ptr, vector<4xf32>
  %v = llvm.load %pa {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
  %c0 = llvm.mlir.constant(0 : i32) : i32
  %c3 = llvm.mlir.constant(3 : i32) : i32
  %x0 = llvm.extractelement %v[%c0 : i32] : vector<4xf32>
  %x3 = llvm.extractelement %v[%c3 : i32] : vector<4xf32>
  %x = llvm.fadd %x0, %x3 : f32
  %base = llvm.mlir.addressof @tile : !llvm.ptr<3>
  %slot = llvm.getelementptr inbounds %base[0, %t] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
  llvm.store %x, %slot {alignment = 4 : i64} : f32, !llvm.ptr<3>
  llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.all"(%c0) : (i32) -> ()
  %c127 = llvm.mlir.constant(127 : i64) : i64
  %r = llvm.sub %c127, %t : i64
  %mirror = llvm.getelementptr inbounds %base[0, %r] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<128 x f32>
  %y = llvm.load %mirror {alignment = 4 : i64} : !llvm.ptr<3> -> f32
  %e = llvm.call @__nv_expf(%y) : (f32) -> f32
  %po = llvm.getelementptr inbounds %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %e, %po {alignment = 4 : i64} : f32, !llvm.ptr
  llvm.return
}
