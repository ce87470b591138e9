// RUN: mlc-opt %s --split-input-file -p convert-loop-to-cpu | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-loop-to-cpu | mlc-opt --split-input-file | filecheck %s

// Every parallel loop runs sequentially; the kernel becomes an llvm.func marked mlc.kernel, over
// bare pointers cast back to memrefs; the launch stays for the runtime.
// CHECK-LABEL: llvm.func @k(%x: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}) attributes {mlc.arg_alignment = array<i64: 16, 16>, mlc.kernel}
// CHECK-NEXT:    %x_1 = builtin.unrealized_conversion_cast %x : !llvm.ptr to memref<1024xf32>
// CHECK-NEXT:    %out_1 = builtin.unrealized_conversion_cast %out : !llvm.ptr to memref<1024xf32>
// CHECK-NEXT:    %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[UB:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %b = %[[LB]] to %[[UB]] step %[[STEP]] {
// CHECK:           scf.for %t = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             memref.load %x_1[%i]
// CHECK:             memref.store %v, %out_1[%i]
// CHECK:         llvm.return
// CHECK-NOT:   loop.
// CHECK-LABEL: func.func @host
// CHECK:         loop.launch @k(%{{.*}}, %{{.*}}) : memref<1024xf32>, memref<1024xf32>
loop.kernel @k(%x: memref<1024xf32>, %out: memref<1024xf32>) attributes {mlc.arg_alignment = array<i64: 16, 16>} {
  loop.parallel %b < 4 mapping block.x {
    loop.parallel %t < 256 mapping thread.x {
      %c256 = arith.constant 256 : index
      %base = arith.muli %b, %c256 : index
      %i = arith.addi %base, %t : index
      %v = memref.load %x[%i] : memref<1024xf32>
      memref.store %v, %out[%i] : memref<1024xf32>
    }
  }
  loop.return
}
func.func @host(%x: memref<1024xf32>) -> memref<1024xf32> {
  %o = memref.alloc() : memref<1024xf32>
  loop.launch @k(%x, %o) : memref<1024xf32>, memref<1024xf32>
  func.return %o : memref<1024xf32>
}


// -----

// Collectives are cut out of their loop (loop fission), values crossing a cut kept per iteration
// in buffers. The second all_reduce combines the first's result (one per reduced axis): it reads
// the first's result buffer, and both are erased, the last first.
// CHECK-LABEL: llvm.func @two_collectives
// CHECK-NOT:     loop.all_reduce
// CHECK-COUNT-4: scf.for
// CHECK-NOT:     loop.all_reduce
loop.kernel @two_collectives(%x: memref<4xf32>, %out: memref<4xf32>) {
  loop.parallel %i < 4 mapping thread.x {
    %v = memref.load %x[%i] : memref<4xf32>
    %a = loop.all_reduce %v mask 1 : f32 {
    ^bb0(%p: f32, %q: f32):
      %s = arith.addf %p, %q : f32
      loop.yield %s : f32
    }
    %b = loop.all_reduce %a mask 2 : f32 {
    ^bb0(%p: f32, %q: f32):
      %s = arith.addf %p, %q : f32
      loop.yield %s : f32
    }
    memref.store %b, %out[%i] : memref<4xf32>
  }
  loop.return
}

// -----

// f32 -> bf16 truncations become integer round-to-nearest-even (the same on every host: LLVM's
// x86 lowering flushes subnormals with AVX512-BF16 and calls libgcc 13's __truncsfbf2 without);
// a vector is rounded element by element.
// CHECK-LABEL: llvm.func @round
// CHECK:         %[[V:.*]] = vector.load
// CHECK:         %[[E:.*]] = vector.extract %[[V]][0] : f32 from vector<4xf32>
// CHECK-NEXT:    %[[BITS:.*]] = arith.bitcast %[[E]] : f32 to i32
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : i32
// CHECK-NEXT:    %[[HIGH:.*]] = arith.shrui %[[BITS]], %[[C16]] : i32
// CHECK-NEXT:    %[[C1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    %[[LSB:.*]] = arith.andi %[[HIGH]], %[[C1]] : i32
// CHECK-NEXT:    %[[C7FFF:.*]] = arith.constant 32767 : i32
// CHECK-NEXT:    %[[BIAS:.*]] = arith.addi %[[LSB]], %[[C7FFF]] : i32
// CHECK-NEXT:    %[[ROUNDED:.*]] = arith.addi %[[BITS]], %[[BIAS]] : i32
// CHECK-NEXT:    %[[QUIET:.*]] = arith.constant 4194304 : i32
// CHECK-NEXT:    %[[NAN:.*]] = arith.ori %[[BITS]], %[[QUIET]] : i32
// CHECK-NEXT:    %[[ISNAN:.*]] = arith.cmpf uno, %[[E]], %[[E]] : f32
// CHECK-NEXT:    %[[CHOSEN:.*]] = arith.select %[[ISNAN]], %[[NAN]], %[[ROUNDED]] : i32
// CHECK-NEXT:    %[[TOP:.*]] = arith.shrui %[[CHOSEN]], %[[C16]] : i32
// CHECK-NEXT:    %[[HALF:.*]] = arith.trunci %[[TOP]] : i32 to i16
// CHECK-NEXT:    %[[B:.*]] = arith.bitcast %[[HALF]] : i16 to bf16
// CHECK-NEXT:    vector.insert %[[B]], %{{.*}} [0] : bf16 into vector<4xbf16>
// CHECK-NOT:     arith.truncf
// CHECK:         arith.bitcast %{{.*}} : i16 to bf16
// CHECK-NOT:     arith.truncf
// CHECK:         llvm.return
loop.kernel @round(%x: memref<256xf32>, %out: memref<256xbf16>, %scalars: memref<256xbf16>) {
  loop.parallel %t < 64 mapping thread.x {
    %c4 = arith.constant 4 : index
    %i = arith.muli %t, %c4 : index
    %v = vector.load %x[%i] : memref<256xf32>, vector<4xf32>
    %r = arith.truncf %v : vector<4xf32> to vector<4xbf16>
    vector.store %r, %out[%i] : memref<256xbf16>, vector<4xbf16>
    %s = memref.load %x[%t] : memref<256xf32>
    %h = arith.truncf %s : f32 to bf16
    memref.store %h, %scalars[%t] : memref<256xbf16>
  }
  loop.return
}

// -----

// A grid worth splitting over threads (two programs, 2^17 elements in its buffers): the body runs
// programs [first, last) in @big__programs, and @big, marked mlc.cpu_programs, runs them all.
// CHECK-LABEL: llvm.func @big__programs(%x: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}, %first: i64, %last: i64) attributes {mlc.kernel}
// CHECK:         %[[FIRST:.*]] = arith.index_cast %first : i64 to index
// CHECK-NEXT:    %[[LAST:.*]] = arith.index_cast %last : i64 to index
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 1 : index
// CHECK-NEXT:    scf.for %b = %[[FIRST]] to %[[LAST]] step %[[STEP]] {
// CHECK:           scf.for %t = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @big(
// CHECK-SAME:    %[[X:[a-z0-9_]+]]: !llvm.ptr {llvm.noalias}, %[[OUT:[a-z0-9_]+]]: !llvm.ptr {llvm.noalias}) attributes {mlc.kernel, mlc.cpu_programs = 2 : i64}
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    llvm.call @big__programs(%[[X]], %[[OUT]], %[[ZERO]], %[[TWO]]) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: func.func @host
// CHECK:         loop.launch @big(
loop.kernel @big(%x: memref<65536xf32>, %out: memref<65536xf32>) {
  loop.parallel %b < 2 mapping block.x {
    loop.parallel %t < 1024 mapping thread.x {
      %c = arith.constant 32768 : index
      %c32 = arith.constant 32 : index
      %base = arith.muli %b, %c : index
      %row = arith.muli %t, %c32 : index
      %i = arith.addi %base, %row : index
      %v = memref.load %x[%i] : memref<65536xf32>
      memref.store %v, %out[%i] : memref<65536xf32>
    }
  }
  loop.return
}
func.func @host(%x: memref<65536xf32>) -> memref<65536xf32> {
  %o = memref.alloc() : memref<65536xf32>
  loop.launch @big(%x, %o) : memref<65536xf32>, memref<65536xf32>
  func.return %o : memref<65536xf32>
}

// -----

// A 2-D grid (block.x around block.y, nothing else between): one loop over its 2 x 3 programs,
// row-major, so that threads share out single tiles: program p is (p / 3, p % 3).
// CHECK-LABEL: llvm.func @tiles__programs(
// CHECK:         scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[THREE:.*]] = arith.constant 3 : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.divui %[[P]], %[[THREE]] : index
// CHECK-NEXT:      %[[COLUMN:.*]] = arith.remui %[[P]], %[[THREE]] : index
// CHECK-NEXT:      %{{.*}} = arith.constant 32768 : index
// CHECK-NEXT:      %{{.*}} = arith.constant 8192 : index
// CHECK-NEXT:      %{{.*}} = arith.muli %[[ROW]], %{{.*}} : index
// CHECK-NEXT:      %{{.*}} = arith.muli %[[COLUMN]], %{{.*}} : index
// CHECK-NOT:     scf.for
// CHECK:         llvm.return
// CHECK-LABEL: llvm.func @tiles(
// CHECK-SAME:    attributes {mlc.kernel, mlc.cpu_programs = 6 : i64}
loop.kernel @tiles(%x: memref<65536xf32>, %out: memref<65536xf32>) {
  loop.parallel %r < 2 mapping block.x {
    loop.parallel %c < 3 mapping block.y {
      %rows = arith.constant 32768 : index
      %columns = arith.constant 8192 : index
      %base = arith.muli %r, %rows : index
      %offset = arith.muli %c, %columns : index
      %i = arith.addi %base, %offset : index
      %v = memref.load %x[%i] : memref<65536xf32>
      memref.store %v, %out[%i] : memref<65536xf32>
    }
  }
  loop.return
}

// -----

// A block.y loop beside other ops in the block.x body is not collapsed: the grid is block.x's
// two programs, and each runs its block.y loop whole.
// CHECK-LABEL: llvm.func @beside__programs(
// CHECK:         scf.for %r = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           memref.store
// CHECK:           scf.for %c = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-LABEL: llvm.func @beside(
// CHECK-SAME:    attributes {mlc.kernel, mlc.cpu_programs = 2 : i64}
loop.kernel @beside(%x: memref<65536xf32>, %out: memref<65536xf32>) {
  loop.parallel %r < 2 mapping block.x {
    %zero = arith.constant 0.000000e+00 : f32
    memref.store %zero, %out[%r] : memref<65536xf32>
    loop.parallel %c < 3 mapping block.y {
      %columns = arith.constant 8192 : index
      %offset = arith.muli %c, %columns : index
      %i = arith.addi %r, %offset : index
      %v = memref.load %x[%i] : memref<65536xf32>
      memref.store %v, %out[%i] : memref<65536xf32>
    }
  }
  loop.return
}
