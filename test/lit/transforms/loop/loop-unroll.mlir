// RUN: mlc-opt %s --split-input-file -p loop-unroll | filecheck %s

// A marked loop carrying a value: one clone of the body per iteration (counters 0, 2, 4), each
// taking the previous clone's yield; the loop's result is the last one.
// CHECK-LABEL: loop.kernel @carried
// CHECK:         %k = arith.constant 0 : index
// CHECK-NEXT:    %[[X0:.*]] = memref.load %x[%k] : memref<8xf32>
// CHECK-NEXT:    %[[S0:.*]] = arith.addf %zero, %[[X0]] : f32
// CHECK-NEXT:    %[[K2:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[X2:.*]] = memref.load %x[%[[K2]]] : memref<8xf32>
// CHECK-NEXT:    %[[S2:.*]] = arith.addf %[[S0]], %[[X2]] : f32
// CHECK-NEXT:    %[[K4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %x[%[[K4]]] : memref<8xf32>
// CHECK-NEXT:    %[[S4:.*]] = arith.addf %[[S2]], %[[X4]] : f32
// CHECK-NEXT:    memref.store %[[S4]], %y[%c0] : memref<1xf32>
// CHECK-NOT:     scf.for
loop.kernel @carried(%x: memref<8xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c6 step %c2 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%k] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  } {mlc.unroll}
  memref.store %sum, %y[%c0] : memref<1xf32>
  loop.return
}

// -----

// Unmarked loops stay; a marked loop inside one is unrolled in place (two clones), and a marked
// loop that runs no iteration gives its initial values.
// CHECK-LABEL: loop.kernel @nested
// CHECK:         scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:      %j = arith.constant 0 : index
// CHECK-NEXT:      %[[I0:.*]] = arith.addi %i, %j : index
// CHECK-NEXT:      %[[V0:.*]] = memref.load %x[%[[I0]]] : memref<8xf32>
// CHECK-NEXT:      %[[S0:.*]] = arith.addf %acc, %[[V0]] : f32
// CHECK-NEXT:      %[[J1:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[I1:.*]] = arith.addi %i, %[[J1]] : index
// CHECK-NEXT:      %[[V1:.*]] = memref.load %x[%[[I1]]] : memref<8xf32>
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[S0]], %[[V1]] : f32
// CHECK-NEXT:      scf.yield %[[S1]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.store %{{.*}}, %y[%c0] : memref<2xf32>
// CHECK-NEXT:    memref.store %zero, %y[%c1] : memref<2xf32>
loop.kernel @nested(%x: memref<8xf32>, %y: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %outer = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %inner = scf.for %j = %c0 to %c2 step %c1 iter_args(%a = %acc) -> (f32) {
      %ij = arith.addi %i, %j : index
      %v = memref.load %x[%ij] : memref<8xf32>
      %s = arith.addf %a, %v : f32
      scf.yield %s : f32
    } {mlc.unroll}
    scf.yield %inner : f32
  }
  %none = scf.for %j = %c4 to %c2 step %c1 iter_args(%a = %zero) -> (f32) {
    %v = memref.load %x[%j] : memref<8xf32>
    scf.yield %v : f32
  } {mlc.unroll}
  memref.store %outer, %y[%c0] : memref<2xf32>
  memref.store %none, %y[%c1] : memref<2xf32>
  loop.return
}

// -----

// Unrolled by 2 (mlc.unroll_by): 5 iterations become a loop of 2 iterations of two copies (the
// second at the counter + 1) and the fifth iteration as a copy after it, taking the loop's result.
// CHECK-LABEL: loop.kernel @by_two
// CHECK:         %zero = arith.constant
// CHECK-NEXT:    %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[LOOP:.*]] = scf.for %k = %[[LB]] to %[[UB]] step %[[STEP]] iter_args(%[[A:.*]] = %zero) -> (f32) {
// CHECK-NEXT:      %[[X0:.*]] = memref.load %x[%k] : memref<8xf32>
// CHECK-NEXT:      %[[S0:.*]] = arith.addf %[[A]], %[[X0]] : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[K1:.*]] = arith.addi %k, %[[ONE]] : index
// CHECK-NEXT:      %[[X1:.*]] = memref.load %x[%[[K1]]] : memref<8xf32>
// CHECK-NEXT:      %[[S1:.*]] = arith.addf %[[S0]], %[[X1]] : f32
// CHECK-NEXT:      scf.yield %[[S1]] : f32
// CHECK-NEXT:    } {mlc.note = "kept"}
// CHECK-NEXT:    %[[K4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[X4:.*]] = memref.load %x[%[[K4]]] : memref<8xf32>
// CHECK-NEXT:    %[[S4:.*]] = arith.addf %[[LOOP]], %[[X4]] : f32
// CHECK-NEXT:    memref.store %[[S4]], %y[%c0] : memref<1xf32>
// CHECK-NOT:     mlc.unroll_by
loop.kernel @by_two(%x: memref<8xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c5 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %x[%k] : memref<8xf32>
    %s = arith.addf %acc, %v : f32
    scf.yield %s : f32
  } {mlc.unroll_by = 2 : i64, mlc.note = "kept"}
  memref.store %sum, %y[%c0] : memref<1xf32>
  loop.return
}
