// RUN: mlc-opt %s -p 'convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts' | filecheck %s
// RUN: mlc-opt %s -p 'convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=libdevice},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts' | filecheck %s --check-prefix=NV
// The conversions may run in any order after convert-scf-to-cf:
// RUN: mlc-opt %s -p 'convert-scf-to-cf,convert-cf-to-llvm,convert-arith-to-llvm,convert-math-to-llvm,convert-memref-to-llvm,convert-vector-to-llvm,reconcile-unrealized-casts' | filecheck %s

// A kernel as the kernel lowerings leave it (pointer parameters cast to memrefs at entry): a
// loop over rows (scf.for with a loop-carried sum), vector loads and stores, math on the
// elements, a private buffer, index and integer-to-float casts. After the standard-to-LLVM
// conversions only llvm ops remain in it; the host function is untouched.

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    llvm.func @expf(f32) -> f32
// CHECK-NEXT:    llvm.func @logf(f32) -> f32
// CHECK-NEXT:    llvm.func @softplus_rows(%x: !llvm.ptr, %out: !llvm.ptr, %n: i32) {
// CHECK-NEXT:      %[[FOUR:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:      %scratch = llvm.alloca %[[FOUR]] x f32 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           %rows = llvm.sext %n : i32 to i64
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:         ^bb1(%row: i64, %total: f32):
// CHECK-NEXT:      %[[MORE:.*]] = llvm.icmp "slt" %row, %rows : i64
// CHECK-NEXT:      llvm.cond_br %[[MORE]], ^bb2, ^bb3
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           %v = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK-COUNT-4:   llvm.call @expf
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           %ones = llvm.mlir.constant(dense<1.000000e+00> : vector<4xf32>) : vector<4xf32>
// CHECK-NEXT:      %p = llvm.fadd %e, %ones : vector<4xf32>
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK-COUNT-4:   llvm.call @logf
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           llvm.store %l, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           %back = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:      %r = llvm.trunc %row : i64 to i32
// CHECK-NEXT:      %rf = llvm.sitofp %r : i32 to f32
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           llvm.br ^bb1(%{{.*}}, %t : i64, f32)
// CHECK-NEXT:    ^bb3:
// CHECK-NEXT:      %s = llvm.intr.sqrt(%total) : (f32) -> f32
// CHECK-NOT:       {{arith\.|math\.|memref\.|vector\.|scf\.|cf\.|unrealized_conversion_cast}}
// CHECK:           llvm.return
// CHECK-NEXT:    }
// CHECK-NEXT:    func.func @host() -> memref<8x4xf32> {
// CHECK-NEXT:      %buffer = memref.alloc() : memref<8x4xf32>
// CHECK-NEXT:      %origin = arith.constant 0 : index
// CHECK-NEXT:      %loaded = memref.load %buffer[%origin, %origin] : memref<8x4xf32>
// CHECK-NEXT:      %raised = math.exp %loaded : f32
// CHECK-NEXT:      memref.store %raised, %buffer[%origin, %origin] : memref<8x4xf32>
// CHECK-NEXT:      func.return %buffer : memref<8x4xf32>

// NV-LABEL:    builtin.module {
// NV-NEXT:       llvm.func @__nv_expf(f32) -> f32
// NV-NEXT:       llvm.func @__nv_logf(f32) -> f32
// NV-COUNT-4:    llvm.call @__nv_expf
// NV-COUNT-4:    llvm.call @__nv_logf
// NV:            math.exp

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

func.func @host() -> memref<8x4xf32> {
  %buffer = memref.alloc() : memref<8x4xf32>
  %origin = arith.constant 0 : index
  %loaded = memref.load %buffer[%origin, %origin] : memref<8x4xf32>
  %raised = math.exp %loaded : f32
  memref.store %raised, %buffer[%origin, %origin] : memref<8x4xf32>
  func.return %buffer : memref<8x4xf32>
}
