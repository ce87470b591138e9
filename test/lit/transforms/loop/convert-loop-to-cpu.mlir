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
