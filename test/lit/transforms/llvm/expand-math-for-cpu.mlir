// RUN: mlc-opt %s --split-input-file -p expand-math-for-cpu | filecheck %s
// RUN: mlc-opt %s --split-input-file -p expand-math-for-cpu | mlc-opt --split-input-file | filecheck %s

// f32 exp: clamp, n = roundeven(x log2 e), r = x - n ln2 in two fmas, Cephes' polynomial by fmas,
// the two power-of-two scalings built from the exponent bits (NaN propagates through the clamps).
// CHECK-LABEL: llvm.func @exp_f32
// CHECK-NOT:     math.exp
// CHECK:         arith.maximumf %x, %{{.*}} : f32
// CHECK:         arith.minimumf
// CHECK:         math.roundeven
// CHECK-COUNT-2: math.fma
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         arith.shrsi
// CHECK:         arith.shli
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         %e = arith.mulf
// CHECK-NEXT:    memref.store %e
llvm.func @exp_f32(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  %c0 = arith.constant 0 : index
  %x = memref.load %m[%c0] : memref<4xf32>
  %e = math.exp %x : f32
  memref.store %e, %m[%c0] : memref<4xf32>
  llvm.return
}

// -----

// Vectors of f32 too (exp), constants splatted. tanh picks the odd polynomial below 0.625 and
// 1 - 2 / (exp(2|x|) + 1) above, then takes the sign of x.
// CHECK-LABEL: llvm.func @vectors_and_tanh
// CHECK-NOT:     math.exp
// CHECK:         arith.maximumf %x, %{{.*}} : vector<4xf32>
// CHECK:         arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK:         math.absf %s : f32
// CHECK:         arith.constant -0.00570498873 : f32
// CHECK:         arith.divf
// CHECK:         %[[SMALL:.*]] = arith.cmpf olt, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %[[PICKED:.*]] = arith.select %[[SMALL]], %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %t = math.copysign %[[PICKED]], %s : f32
// CHECK-NOT:     math.tanh
llvm.func @vectors_and_tanh(%p: !llvm.ptr, %s: f32) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  %c0 = arith.constant 0 : index
  %x = vector.load %m[%c0] : memref<4xf32>, vector<4xf32>
  %e = math.exp %x : vector<4xf32>
  vector.store %e, %m[%c0] : memref<4xf32>, vector<4xf32>
  %t = math.tanh %s : f32
  memref.store %t, %m[%c0] : memref<4xf32>
  llvm.return
}

// -----

// Other float types, tanh of vectors and other functions are left to convert-math-to-llvm (libm).
// CHECK-LABEL: llvm.func @untouched
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         math.tanh %{{.*}} : f16
// CHECK:         math.tanh %{{.*}} : vector<4xf32>
// CHECK:         math.log %{{.*}} : f32
llvm.func @untouched(%d: f64, %h: f16, %v: vector<4xf32>, %s: f32) {
  %0 = math.exp %d : f64
  %1 = math.tanh %h : f16
  %3 = math.tanh %v : vector<4xf32>
  %2 = math.log %s : f32
  llvm.return
}
