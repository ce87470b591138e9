// RUN: mlc-opt %s --split-input-file -p convert-memref-to-llvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-memref-to-llvm | mlc-opt --split-input-file | filecheck %s

// Loads and stores address the kernel's pointer directly: the row-major linear index (the
// multiplication by the innermost stride, 1, left out), an inbounds GEP on the element type, and
// the element's natural alignment. Index operands not converted yet are cast to i64.
// CHECK-LABEL: llvm.func @load_store(%arg0: !llvm.ptr, %i: i64, %j: i64)
// CHECK-NEXT:    %[[S:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.mul %i, %[[S]] : i64
// CHECK-NEXT:    %[[O:.*]] = llvm.add %[[R]], %j : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %arg0[%[[O]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %v = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %c3 = arith.constant 3 : index
// CHECK-NEXT:    %[[C3:.*]] = builtin.unrealized_conversion_cast %c3 : index to i64
// CHECK-NEXT:    %[[S2:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[R2:.*]] = llvm.mul %[[C3]], %[[S2]] : i64
// CHECK-NEXT:    %[[O2:.*]] = llvm.add %[[R2]], %j : i64
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr inbounds %arg0[%[[O2]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %v, %[[P2]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT:    llvm.return
llvm.func @load_store(%arg0: !llvm.ptr, %i: i64, %j: i64) {
  %m = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to memref<4x8xf32>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %jj = builtin.unrealized_conversion_cast %j : i64 to index
  %v = memref.load %m[%ii, %jj] : memref<4x8xf32>
  %c3 = arith.constant 3 : index
  memref.store %v, %m[%c3, %jj] : memref<4x8xf32>
  llvm.return
}

// -----

// Address spaces stay on the pointer; element types set the GEP type and the alignment; a
// rank-0 memref is its pointer.
// CHECK-LABEL: llvm.func @spaces_and_types(%shared: !llvm.ptr<3>, %global: !llvm.ptr<1>, %scalar: !llvm.ptr, %i: i64)
// CHECK-NEXT:    %[[A:.*]] = llvm.getelementptr inbounds %shared[%i] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f16
// CHECK-NEXT:    %h = llvm.load %[[A]] {alignment = 2 : i64} : !llvm.ptr<3> -> f16
// CHECK-NEXT:    %[[S1:.*]] = llvm.mlir.constant(12) : i64
// CHECK-NEXT:    %[[T1:.*]] = llvm.mul %i, %[[S1]] : i64
// CHECK-NEXT:    %[[S2:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[T2:.*]] = llvm.mul %i, %[[S2]] : i64
// CHECK-NEXT:    %[[O1:.*]] = llvm.add %[[T1]], %[[T2]] : i64
// CHECK-NEXT:    %[[O2:.*]] = llvm.add %[[O1]], %i : i64
// CHECK-NEXT:    %[[B:.*]] = llvm.getelementptr inbounds %global[%[[O2]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i64
// CHECK-NEXT:    %n = llvm.load %[[B]] {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK-NEXT:    %s = llvm.load %scalar {alignment = 8 : i64} : !llvm.ptr -> f64
// CHECK-NEXT:    llvm.store %n, %scalar {alignment = 8 : i64} : i64, !llvm.ptr
llvm.func @spaces_and_types(%shared: !llvm.ptr<3>, %global: !llvm.ptr<1>, %scalar: !llvm.ptr, %i: i64) {
  %a = builtin.unrealized_conversion_cast %shared : !llvm.ptr<3> to memref<64xf16, 3>
  %b = builtin.unrealized_conversion_cast %global : !llvm.ptr<1> to memref<2x3x4xindex>
  %c = builtin.unrealized_conversion_cast %scalar : !llvm.ptr to memref<f64>
  %d = builtin.unrealized_conversion_cast %scalar : !llvm.ptr to memref<i64>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %h = memref.load %a[%ii] : memref<64xf16, 3>
  %n = memref.load %b[%ii, %ii, %ii] : memref<2x3x4xindex>
  %s = memref.load %c[] : memref<f64>
  %ni = builtin.unrealized_conversion_cast %n : index to i64
  memref.store %ni, %d[] : memref<i64>
  llvm.return
}

// -----

// Private buffers become allocas at the top of the entry block, aligned to 16 bytes from 16
// bytes on (or to the op's alignment, or the element's, whichever is larger).
// CHECK-LABEL: llvm.func @private(%x: f32, %c: i1)
// CHECK-NEXT:    %[[N1:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %buffer = llvm.alloca %[[N1]] x f32 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[N2:.*]] = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %small = llvm.alloca %[[N2]] x f32 {alignment = 4 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[N3:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %aligned = llvm.alloca %[[N3]] x f32 {alignment = 32 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    llvm.cond_br %c, ^bb1, ^bb2
// CHECK-NEXT:  ^bb1:
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %buffer[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %x, %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:         llvm.getelementptr inbounds %small
// CHECK:         llvm.getelementptr inbounds %aligned
llvm.func @private(%x: f32, %c: i1) {
  llvm.cond_br %c, ^bb1, ^bb2
^bb1:
  %buffer = memref.alloca() : memref<8xf32, 5>
  %small = memref.alloca() : memref<3xf32>
  %aligned = memref.alloca() {alignment = 32 : i64} : memref<2xf32, 5>
  %c1 = arith.constant 1 : index
  memref.store %x, %buffer[%c1] : memref<8xf32, 5>
  memref.store %x, %small[%c1] : memref<3xf32>
  memref.store %x, %aligned[%c1] : memref<2xf32, 5>
  llvm.br ^bb2
^bb2:
  llvm.return
}

// -----

// A memref that is not a cast of a pointer (here a block argument) is cast to one.
// CHECK-LABEL: llvm.func @boundary(%p: !llvm.ptr, %i: i64)
// CHECK:       ^bb1(%b: memref<4xf32>):
// CHECK-NEXT:    %[[B:.*]] = builtin.unrealized_conversion_cast %b : memref<4xf32> to !llvm.ptr
// CHECK-NEXT:    %[[A:.*]] = llvm.getelementptr inbounds %[[B]][%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %v = llvm.load %[[A]] {alignment = 4 : i64} : !llvm.ptr -> f32
llvm.func @boundary(%p: !llvm.ptr, %i: i64) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  llvm.br ^bb1(%m : memref<4xf32>)
^bb1(%b: memref<4xf32>):
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %v = memref.load %b[%ii] : memref<4xf32>
  llvm.return
}

// -----

// Host functions keep their memref ops: the runtime executes them.
// CHECK-LABEL: func.func @host() -> memref<4xf32>
// CHECK-NEXT:    %a = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %v = memref.load %a[%c0] : memref<4xf32>
// CHECK-NEXT:    memref.store %v, %a[%c0] : memref<4xf32>
// CHECK-NEXT:    func.return %a : memref<4xf32>
func.func @host() -> memref<4xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  func.return %a : memref<4xf32>
}
