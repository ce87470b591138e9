// RUN: mlc-opt %s -p convert-gpu-to-nvvm | filecheck %s
// RUN: mlc-opt %s -p convert-gpu-to-nvvm | mlc-opt | filecheck %s

// The kernel becomes an external llvm.func over bare pointers, marked as an NVVM kernel with its
// block size; memref parameters are cast back for the memref conversion. Thread and block ids
// read the special registers; block and grid dimensions are the static launch shape.
// CHECK-LABEL: llvm.func @k(%x: !llvm.ptr, %s: !llvm.ptr<3>)
// CHECK-SAME:    attributes {mlc.arg_alignment = array<i64: 16, 4>, nvvm.kernel, nvvm.maxntid = array<i32: 128, 2, 1>}
// CHECK-NEXT:    %[[X:.*]] = builtin.unrealized_conversion_cast %x : !llvm.ptr to memref<256xf32>
// CHECK-NEXT:    %[[S:.*]] = builtin.unrealized_conversion_cast %s : !llvm.ptr<3> to memref<8xf32, 3 : i64>
// CHECK-NEXT:    %[[TID:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
// CHECK-NEXT:    %[[TID64:.*]] = llvm.zext %[[TID]] : i32 to i64
// CHECK-NEXT:    %t = builtin.unrealized_conversion_cast %[[TID64]] : i64 to index
// CHECK-NEXT:    %[[CTA:.*]] = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.y"() : () -> i32
// CHECK-NEXT:    %[[CTA64:.*]] = llvm.zext %[[CTA]] : i32 to i64
// CHECK-NEXT:    %b = builtin.unrealized_conversion_cast %[[CTA64]] : i64 to index
// CHECK-NEXT:    %n = arith.constant 128 : index
// CHECK-NEXT:    %g = arith.constant 3 : index
// CHECK:         llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
// CHECK:         llvm.return
// CHECK-NOT:   mlc_gpu.func
// CHECK-LABEL: func.func @host
// CHECK:         mlc_gpu.launch @k(%{{.*}}, %{{.*}}) grid [2, 3, 1] block [128, 2, 1]
mlc_gpu.func @k(%x: memref<256xf32>, %s: memref<8xf32, 3>) grid [2, 3, 1] block [128, 2, 1] attributes {mlc.arg_alignment = array<i64: 16, 4>} {
  %t = mlc_gpu.thread_id x
  %b = mlc_gpu.block_id y
  %n = mlc_gpu.block_dim x
  %g = mlc_gpu.grid_dim y
  %i = arith.muli %b, %n : index
  %j = arith.addi %i, %t : index
  %k = arith.addi %j, %g : index
  %v = memref.load %x[%k] : memref<256xf32>
  mlc_gpu.barrier
  memref.store %v, %x[%j] : memref<256xf32>
  mlc_gpu.return
}
func.func @host(%x: memref<256xf32>, %s: memref<8xf32, 3>) {
  mlc_gpu.launch @k(%x, %s) grid [2, 3, 1] block [128, 2, 1] : memref<256xf32>, memref<8xf32, 3>
  func.return
}
