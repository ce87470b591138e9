// REQUIRES: mlir-translate-22
// RUN: mlc-opt %s -p 'convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts' | mlir-translate-22 --mlir-to-llvmir | filecheck %s
// RUN: mlc-opt %s -p 'convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=libdevice},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts' | mlir-translate-22 --mlir-to-llvmir | filecheck %s --check-prefix=NV

// Upstream MLIR's translator (the oracle of the design) accepts what the standard-to-LLVM
// conversions leave of a kernel (the kernel of std-to-llvm.mlir) and makes the LLVM IR we expect.

// CHECK:       declare float @expf(float)
// CHECK:       declare float @logf(float)
// CHECK-LABEL: define void @softplus_rows(ptr %0, ptr %1, i32 %2)
// CHECK-NEXT:    %[[SCRATCH:.*]] = alloca float, i64 4, align 16
// CHECK-NEXT:    %[[ROWS:.*]] = sext i32 %2 to i64
// CHECK:         phi i64
// CHECK-NEXT:    %[[TOTAL:.*]] = phi float
// CHECK:         %[[ADDRESS:.*]] = getelementptr inbounds float, ptr %0, i64 %{{.*}}
// CHECK-NEXT:    load <4 x float>, ptr %[[ADDRESS]], align 16
// CHECK:         call float @expf(float
// CHECK:         fadd <4 x float> %{{.*}}, splat (float 1.000000e+00)
// CHECK:         call float @logf(float
// CHECK:         store <4 x float> %{{.*}}, ptr %{{.*}}, align 16
// CHECK:         store float %{{.*}}, ptr %{{.*}}, align 4
// CHECK:         sitofp i32 %{{.*}} to float
// CHECK:         call float @llvm.sqrt.f32(float %[[TOTAL]])
// CHECK:         ret void
// NV:          declare float @__nv_expf(float)
// NV:          declare float @__nv_logf(float)

llvm.func @softplus_rows(%x: !llvm.ptr, %out: !llvm.ptr, %n: i32) {
  %xm = builtin.unrealized_conversion_cast %x : !llvm.ptr to memref<8x4xf32>
  %om = builtin.unrealized_conversion_cast %out : !llvm.ptr to memref<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = arith.index_cast %n : i32 to index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %scratch = memref.alloca() : memref<4xf32, 5>
  %sum = scf.for %row = %c0 to %rows step %c1 iter_args(%total = %zero) -> (f32) {
    %v = vector.load %xm[%row, %c0] {alignment = 16 : i64} : memref<8x4xf32>, vector<4xf32>
    %e = math.exp %v : vector<4xf32>
    %ones = vector.broadcast %one : f32 to vector<4xf32>
    %p = arith.addf %e, %ones : vector<4xf32>
    %l = math.log %p : vector<4xf32>
    vector.store %l, %om[%row, %c0] {alignment = 16 : i64} : memref<8x4xf32>, vector<4xf32>
    %first = vector.extract %l[0] : f32 from vector<4xf32>
    memref.store %first, %scratch[%c0] : memref<4xf32, 5>
    %back = memref.load %scratch[%c0] : memref<4xf32, 5>
    %r = arith.index_cast %row : index to i32
    %rf = arith.sitofp %r : i32 to f32
    %w = arith.mulf %back, %rf : f32
    %t = arith.addf %total, %w : f32
    scf.yield %t : f32
  }
  %s = math.sqrt %sum : f32
  memref.store %s, %om[%c0, %c0] : memref<8x4xf32>
  llvm.return
}
