// RUN: mlc-opt %s --split-input-file -p loop-double-buffer | filecheck %s
// RUN: mlc-opt %s --split-input-file -p loop-double-buffer | mlc-opt --split-input-file | filecheck %s

// A panel copied into shared memory at the start of each of 4 iterations: it gets a twin, and the
// loop runs over pairs, the odd iteration (%k + 2) on the twin, fed by the even one's yield. The
// kernel asks for two blocks per multiprocessor (the doubled body needs more registers).
// CHECK-LABEL: loop.kernel @even
// CHECK-SAME:    attributes {mlc.min_blocks_per_multiprocessor = 2 : i64}
// CHECK:         %panel = memref.alloca() {mlc.promoted = "%x: 64 elements"}
// CHECK-NEXT:    %panel_odd = memref.alloca() {mlc.promoted = "second copy of %panel, for odd iterations: %x: 64 elements"} : memref<64xf32, 3 : i64>
// CHECK:         %[[END:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[ODD:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %{{.*}} = scf.for %k = %c0 to %[[END]] step %[[STEP]] iter_args(%acc = %zero) -> (f32) {
// CHECK-NEXT:      %[[G:.*]] = arith.addi %k, %t : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %x[%[[G]]] : memref<128xf32>
// CHECK-NEXT:      memref.store %[[V]], %panel[%t] : memref<64xf32, 3 : i64>
// CHECK-NEXT:      %[[R:.*]] = memref.load %panel[%mirror] : memref<64xf32, 3 : i64>
// CHECK-NEXT:      %[[S:.*]] = arith.addf %acc, %[[R]] : f32
// CHECK-NEXT:      %k_odd = arith.addi %k, %[[ODD]] : index
// CHECK-NEXT:      %[[G2:.*]] = arith.addi %k_odd, %t : index
// CHECK-NEXT:      %[[V2:.*]] = memref.load %x[%[[G2]]] : memref<128xf32>
// CHECK-NEXT:      memref.store %[[V2]], %panel_odd[%t] : memref<64xf32, 3 : i64>
// CHECK-NEXT:      %[[R2:.*]] = memref.load %panel_odd[%mirror] : memref<64xf32, 3 : i64>
// CHECK-NEXT:      %[[S2:.*]] = arith.addf %[[S]], %[[R2]] : f32
// CHECK-NEXT:      scf.yield %[[S2]] : f32
// CHECK-NEXT:    } {mlc.double_buffered = ["panel"]}
loop.kernel @even(%x: memref<128xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c63 = arith.constant 63 : index
  %zero = arith.constant 0.0 : f32
  %panel = memref.alloca() {mlc.promoted = "%x: 64 elements"} : memref<64xf32, 3>
  loop.parallel %t < 64 mapping thread.x {
    %mirror = arith.subi %c63, %t : index
    %sum = scf.for %k = %c0 to %c8 step %c2 iter_args(%acc = %zero) -> (f32) {
      %g = arith.addi %k, %t : index
      %v = memref.load %x[%g] : memref<128xf32>
      memref.store %v, %panel[%t] : memref<64xf32, 3>
      %r = memref.load %panel[%mirror] : memref<64xf32, 3>
      %s = arith.addf %acc, %r : f32
      scf.yield %s : f32
    }
    memref.store %sum, %y[%t] : memref<64xf32>
  }
  loop.return
}

// -----

// Three iterations: one pair, then the last iteration (%k = 4) after the loop, on the first copy.
// A kernel that says how many blocks it wants keeps its choice.
// CHECK-LABEL: loop.kernel @odd
// CHECK-SAME:    attributes {mlc.min_blocks_per_multiprocessor = 1 : i64}
// CHECK:         %[[END:.*]] = arith.constant 4 : index
// CHECK:         %[[PAIRS:.*]] = scf.for %k = %c0 to %[[END]] step %{{.*}} iter_args(%acc = %zero) -> (f32) {
// CHECK:           memref.store %{{.*}}, %panel[%t]
// CHECK:           memref.store %{{.*}}, %panel_odd[%t]
// CHECK:         } {mlc.double_buffered = ["panel"]}
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[G:.*]] = arith.addi %[[LAST]], %t : index
// CHECK-NEXT:    %[[V:.*]] = memref.load %x[%[[G]]] : memref<128xf32>
// CHECK-NEXT:    memref.store %[[V]], %panel[%t] : memref<64xf32, 3 : i64>
// CHECK-NEXT:    %[[R:.*]] = memref.load %panel[%mirror] : memref<64xf32, 3 : i64>
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[PAIRS]], %[[R]] : f32
// CHECK-NEXT:    memref.store %[[S]], %y[%t] : memref<64xf32>
loop.kernel @odd(%x: memref<128xf32>, %y: memref<64xf32>) attributes {mlc.min_blocks_per_multiprocessor = 1 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c6 = arith.constant 6 : index
  %c63 = arith.constant 63 : index
  %zero = arith.constant 0.0 : f32
  %panel = memref.alloca() {mlc.promoted = "%x: 64 elements"} : memref<64xf32, 3>
  loop.parallel %t < 64 mapping thread.x {
    %mirror = arith.subi %c63, %t : index
    %sum = scf.for %k = %c0 to %c6 step %c2 iter_args(%acc = %zero) -> (f32) {
      %g = arith.addi %k, %t : index
      %v = memref.load %x[%g] : memref<128xf32>
      memref.store %v, %panel[%t] : memref<64xf32, 3>
      %r = memref.load %panel[%mirror] : memref<64xf32, 3>
      %s = arith.addf %acc, %r : f32
      scf.yield %s : f32
    }
    memref.store %sum, %y[%t] : memref<64xf32>
  }
  loop.return
}

// -----

// Left alone: an allocation not marked mlc.promoted (%plain); one read before it is written in an
// iteration (%carried: a value flows between iterations); one also read after the loop
// (%outside); a loop whose bounds are not constants (%dynamic); a loop of one iteration (%once).
// CHECK-LABEL: loop.kernel @untouched
// CHECK-NOT:     mlc.min_blocks_per_multiprocessor
// CHECK-NOT:     _odd
// CHECK-NOT:     mlc.double_buffered
loop.kernel @untouched(%x: memref<128xf32>, %y: memref<64xf32>, %n: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %plain = memref.alloca() : memref<64xf32, 3>
  %carried = memref.alloca() {mlc.promoted = "%x"} : memref<64xf32, 3>
  %outside = memref.alloca() {mlc.promoted = "%x"} : memref<64xf32, 3>
  %dynamic = memref.alloca() {mlc.promoted = "%x"} : memref<64xf32, 3>
  %once = memref.alloca() {mlc.promoted = "%x"} : memref<64xf32, 3>
  loop.parallel %t < 64 mapping thread.x {
    %g = memref.load %n[%c0] : memref<1xindex>
    %v = memref.load %x[%t] : memref<128xf32>
    %a = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      memref.store %v, %plain[%t] : memref<64xf32, 3>
      %r = memref.load %plain[%t] : memref<64xf32, 3>
      %old = memref.load %carried[%t] : memref<64xf32, 3>
      memref.store %r, %carried[%t] : memref<64xf32, 3>
      memref.store %v, %outside[%t] : memref<64xf32, 3>
      %s = arith.addf %acc, %old : f32
      scf.yield %s : f32
    }
    %late = memref.load %outside[%t] : memref<64xf32, 3>
    %b = scf.for %k = %c0 to %g step %c1 iter_args(%acc = %a) -> (f32) {
      memref.store %v, %dynamic[%t] : memref<64xf32, 3>
      %r = memref.load %dynamic[%t] : memref<64xf32, 3>
      %s = arith.addf %acc, %r : f32
      scf.yield %s : f32
    }
    %c = scf.for %k = %c0 to %c1 step %c1 iter_args(%acc = %b) -> (f32) {
      memref.store %v, %once[%t] : memref<64xf32, 3>
      %r = memref.load %once[%t] : memref<64xf32, 3>
      %s = arith.addf %acc, %r : f32
      scf.yield %s : f32
    }
    %d = arith.addf %c, %late : f32
    memref.store %d, %y[%t] : memref<64xf32>
  }
  loop.return
}

// -----

// Two copies of %big would take 64 KiB of shared memory, more than a block may use (48 KiB).
// CHECK-LABEL: loop.kernel @too_big
// CHECK-NOT:     mlc.double_buffered
loop.kernel @too_big(%x: memref<8192xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %big = memref.alloca() {mlc.promoted = "%x"} : memref<8192xf32, 3>
  loop.parallel %t < 64 mapping thread.x {
    %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %x[%t] : memref<8192xf32>
      memref.store %v, %big[%t] : memref<8192xf32, 3>
      %r = memref.load %big[%t] : memref<8192xf32, 3>
      %s = arith.addf %acc, %r : f32
      scf.yield %s : f32
    }
    memref.store %sum, %y[%t] : memref<64xf32>
  }
  loop.return
}
