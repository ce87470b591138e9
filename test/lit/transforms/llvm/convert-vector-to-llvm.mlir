// RUN: mlc-opt %s --split-input-file -p convert-vector-to-llvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-vector-to-llvm | mlc-opt --split-input-file | filecheck %s

// Vector loads and stores: the address of the first element as for memref.load, then one
// access of the whole vector, aligned as the op's `alignment` says, else as one element.
// CHECK-LABEL: llvm.func @load_store(%arg0: !llvm.ptr<1>, %i: i64)
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %[[C1:.*]] = builtin.unrealized_conversion_cast %c1 : index to i64
// CHECK-NEXT:    %[[S:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.mul %[[C1]], %[[S]] : i64
// CHECK-NEXT:    %[[O:.*]] = llvm.add %[[R]], %i : i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %arg0[%[[O]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:    %aligned = llvm.load %[[P]] {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %arg0[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:    %unaligned = llvm.load %[[Q]] {alignment = 4 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK:         %[[T:.*]] = llvm.getelementptr inbounds %arg0[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:    llvm.store %aligned, %[[T]] {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
// CHECK:         %[[U:.*]] = llvm.getelementptr inbounds %arg0[%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK-NEXT:    llvm.store %unaligned, %[[U]] {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr<1>
llvm.func @load_store(%arg0: !llvm.ptr<1>, %i: i64) {
  %m = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr<1> to memref<2x64xf32>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %c1 = arith.constant 1 : index
  %aligned = vector.load %m[%c1, %ii] {alignment = 16 : i64} : memref<2x64xf32>, vector<4xf32>
  %unaligned = vector.load %m[%c1, %ii] : memref<2x64xf32>, vector<4xf32>
  vector.store %aligned, %m[%c1, %ii] {alignment = 16 : i64} : memref<2x64xf32>, vector<4xf32>
  vector.store %unaligned, %m[%c1, %ii] : memref<2x64xf32>, vector<4xf32>
  llvm.return
}

// -----

// Accesses marked with `mlc.cpu_prefetch_bytes` (convert-tile-rows-to-cpu's streams): a prefetch
// of the address that many bytes further on (a read before a load, a write before a store), by a
// getelementptr without inbounds; 0 prefetches nothing.
// CHECK-LABEL: llvm.func @prefetched(%arg0: !llvm.ptr, %i: i64)
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %arg0[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[AHEAD:.*]] = llvm.getelementptr %[[P]][1024] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[READ:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[KEEP:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK-NEXT:    %[[DATA:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.prefetch.p0"(%[[AHEAD]], %[[READ]], %[[KEEP]], %[[DATA]]) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK-NEXT:    %v = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK:         %[[Q:.*]] = llvm.getelementptr inbounds %arg0[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[AHEAD_W:.*]] = llvm.getelementptr %[[Q]][1024] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[WRITE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK:         llvm.call_intrinsic "llvm.prefetch.p0"(%[[AHEAD_W]], %[[WRITE]], %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, i32) -> ()
// CHECK-NEXT:    llvm.store %v, %[[Q]] {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK-NOT:     llvm.call_intrinsic
// CHECK:         llvm.store %v
// CHECK-NEXT:    llvm.return
llvm.func @prefetched(%arg0: !llvm.ptr, %i: i64) {
  %m = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to memref<4096xf32>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %v = vector.load %m[%ii] {mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4096xf32>, vector<16xf32>
  vector.store %v, %m[%ii] {mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4096xf32>, vector<16xf32>
  vector.store %v, %m[%ii] {mlc.cpu_prefetch_bytes = 0 : i64} : memref<4096xf32>, vector<16xf32>
  llvm.return
}

// -----

// Element access at static and dynamic positions.
// CHECK-LABEL: llvm.func @elements(%v: vector<4xf32>, %x: f32, %i: i64)
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %static = llvm.extractelement %v[%[[TWO]] : i64] : vector<4xf32>
// CHECK-NEXT:    %dynamic = llvm.extractelement %v[%i : i64] : vector<4xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %inserted = llvm.insertelement %x, %v[%[[ZERO]] : i64] : vector<4xf32>
// CHECK-NEXT:    %moved = llvm.insertelement %static, %inserted[%i : i64] : vector<4xf32>
llvm.func @elements(%v: vector<4xf32>, %x: f32, %i: i64) {
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %static = vector.extract %v[2] : f32 from vector<4xf32>
  %dynamic = vector.extract %v[%ii] : f32 from vector<4xf32>
  %inserted = vector.insert %x, %v[0] : f32 into vector<4xf32>
  %moved = vector.insert %static, %inserted[%ii] : f32 into vector<4xf32>
  llvm.return
}

// -----

// Broadcasts: a splat constant from a constant scalar, else insertelement + shufflevector.
// CHECK-LABEL: llvm.func @broadcasts(%x: f32, %one: vector<1xi32>)
// CHECK-NEXT:    %c = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %constant = llvm.mlir.constant(dense<2.000000e+00> : vector<4xf32>) : vector<4xf32>
// CHECK-NEXT:    %k = llvm.mlir.constant(7) : i64
// CHECK-NEXT:    %indices = llvm.mlir.constant(dense<7> : vector<2xi64>) : vector<2xi64>
// CHECK-NEXT:    %[[UNDEF:.*]] = llvm.mlir.undef : vector<4xf32>
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[FIRST:.*]] = llvm.insertelement %x, %[[UNDEF]][%[[ZERO]] : i64] : vector<4xf32>
// CHECK-NEXT:    %splat = llvm.shufflevector %[[FIRST]], %[[UNDEF]] [0, 0, 0, 0] : vector<4xf32>
// CHECK-NEXT:    %widened = llvm.shufflevector %one, %one [0, 0, 0, 0, 0, 0, 0, 0] : vector<1xi32>
llvm.func @broadcasts(%x: f32, %one: vector<1xi32>) {
  %c = arith.constant 2.0 : f32
  %constant = vector.broadcast %c : f32 to vector<4xf32>
  %k = llvm.mlir.constant(7) : i64
  %kk = builtin.unrealized_conversion_cast %k : i64 to index
  %indices = vector.broadcast %kk : index to vector<2xindex>
  %splat = vector.broadcast %x : f32 to vector<4xf32>
  %widened = vector.broadcast %one : vector<1xi32> to vector<8xi32>
  llvm.return
}

// -----

// fma and reductions: ordered float sums from the accumulator (or -0.0), LLVM's reduction
// intrinsics for the other kinds, combined with the accumulator.
// CHECK-LABEL: llvm.func @arithmetic(%v: vector<4xf32>, %w: vector<4xi32>, %x: f32, %a: i32)
// CHECK-NEXT:    %fma = llvm.intr.fma(%v, %v, %v) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %[[NZ:.*]] = llvm.mlir.constant(-0.000000e+00 : f32) : f32
// CHECK-NEXT:    %sum = "llvm.intr.vector.reduce.fadd"(%[[NZ]], %v)
// CHECK-NEXT:    %product = "llvm.intr.vector.reduce.fmul"(%x, %v)
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fmaximum.v4f32"(%v) : (vector<4xf32>) -> f32
// CHECK-NEXT:    %maximum = llvm.call_intrinsic "llvm.maximum.f32"(%x, %[[M]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[S:.*]] = llvm.call_intrinsic "llvm.vector.reduce.add.v4i32"(%w) : (vector<4xi32>) -> i32
// CHECK-NEXT:    %isum = llvm.add %a, %[[S]] : i32
// CHECK-NEXT:    %smax = llvm.call_intrinsic "llvm.vector.reduce.smax.v4i32"(%w) : (vector<4xi32>) -> i32
llvm.func @arithmetic(%v: vector<4xf32>, %w: vector<4xi32>, %x: f32, %a: i32) {
  %fma = vector.fma %v, %v, %v : vector<4xf32>
  %sum = vector.reduction <add>, %v : vector<4xf32> into f32
  %product = vector.reduction <mul>, %v, %x : vector<4xf32> into f32
  %maximum = vector.reduction <maximumf>, %v, %x : vector<4xf32> into f32
  %isum = vector.reduction <add>, %w, %a : vector<4xi32> into i32
  %smax = vector.reduction <maxsi>, %w : vector<4xi32> into i32
  llvm.return
}

// -----

// Host functions keep their vector ops.
// CHECK-LABEL: func.func @host(%m: memref<8xf32>) -> vector<4xf32>
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %v = vector.load %m[%c0] : memref<8xf32>, vector<4xf32>
// CHECK-NEXT:    func.return %v : vector<4xf32>
func.func @host(%m: memref<8xf32>) -> vector<4xf32> {
  %c0 = arith.constant 0 : index
  %v = vector.load %m[%c0] : memref<8xf32>, vector<4xf32>
  func.return %v : vector<4xf32>
}

// -----

// Vectors of i1 are accessed as vectors of i8: memory holds one byte per boolean (as numpy
// does), while LLVM would pack a vector<16xi1> in memory into 16 bits.
// CHECK-LABEL: llvm.func @bool_vectors(%arg0: !llvm.ptr<3>)
// CHECK:         %[[B:.*]] = llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<16xi8>
// CHECK-NEXT:    %flags = llvm.trunc %[[B]] : vector<16xi8> to vector<16xi1>
// CHECK:         %[[W:.*]] = llvm.zext %flags : vector<16xi1> to vector<16xi8>
// CHECK-NEXT:    llvm.store %[[W]], %{{.*}} {alignment = 16 : i64} : vector<16xi8>, !llvm.ptr<3>
llvm.func @bool_vectors(%arg0: !llvm.ptr<3>) {
  %m = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr<3> to memref<2x32xi1, 3 : i64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %flags = vector.load %m[%c0, %c0] {alignment = 16 : i64} : memref<2x32xi1, 3 : i64>, vector<16xi1>
  vector.store %flags, %m[%c1, %c0] {alignment = 16 : i64} : memref<2x32xi1, 3 : i64>, vector<16xi1>
  llvm.return
}

// -----

// A non-temporal vector.store (convert-tile-rows-to-cpu's `mlc.cpu_store_kind`) keeps its
// `nontemporal` on the llvm.store, which the translation turns into `!nontemporal`.
// CHECK-LABEL: llvm.func @streamed
// CHECK:         llvm.store %v, %{{.*}} {alignment = 16 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.store %v, %{{.*}} {alignment = 16 : i64} : vector<16xf32>, !llvm.ptr
llvm.func @streamed(%arg0: !llvm.ptr, %i: i64) {
  %m = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to memref<4096xf32>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  %v = vector.load %m[%ii] {alignment = 16 : i64} : memref<4096xf32>, vector<16xf32>
  vector.store %v, %m[%ii] {alignment = 16 : i64, nontemporal = true} : memref<4096xf32>, vector<16xf32>
  vector.store %v, %m[%ii] {alignment = 16 : i64, nontemporal = false} : memref<4096xf32>, vector<16xf32>
  llvm.return
}
