// Round trip of every mlc_gpu op in the custom syntax, its generic form, and generic back to
// custom.
// RUN: mlc-opt %s | filecheck %s
// RUN: mlc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: mlc-opt %s --print-op-generic | mlc-opt | filecheck %s

// CHECK:   builtin.module {
// GENERIC: "builtin.module"() ({

// The example of the dialect's docstring, and its launch.
// CHECK-LABEL: mlc_gpu.func @add(%x: memref<1024xf32>, %out: memref<1024xf32>) grid [4, 1, 1] block [256, 1, 1] {
// CHECK-NEXT:    %b = mlc_gpu.block_id x
// CHECK-NEXT:    %t = mlc_gpu.thread_id x
// CHECK-NEXT:    %n = mlc_gpu.block_dim x
// CHECK-NEXT:    %base = arith.muli %b, %n : index
// CHECK-NEXT:    %i = arith.addi %base, %t : index
// CHECK-NEXT:    %v = memref.load %x[%i] : memref<1024xf32>
// CHECK-NEXT:    memref.store %v, %out[%i] : memref<1024xf32>
// CHECK-NEXT:    mlc_gpu.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "mlc_gpu.func"() <{sym_name = "add"
// GENERIC-SAME:  , function_type = (memref<1024xf32>, memref<1024xf32>) -> (), grid = array<i64: 4, 1, 1>, block = array<i64: 256, 1, 1>}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1024xf32>, %out: memref<1024xf32>):
// GENERIC-NEXT:    %b = "mlc_gpu.block_id"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %t = "mlc_gpu.thread_id"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %n = "mlc_gpu.block_dim"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %base = "arith.muli"(%b, %n) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:    %i = "arith.addi"(%base, %t) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:    %v = "memref.load"(%x, %i) : (memref<1024xf32>, index) -> f32
// GENERIC-NEXT:    "memref.store"(%v, %out, %i) : (f32, memref<1024xf32>, index) -> ()
// GENERIC-NEXT:    "mlc_gpu.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
mlc_gpu.func @add(%x: memref<1024xf32>, %out: memref<1024xf32>) grid [4, 1, 1] block [256, 1, 1] {
  %b = mlc_gpu.block_id x
  %t = mlc_gpu.thread_id x
  %n = mlc_gpu.block_dim x
  %base = arith.muli %b, %n : index
  %i = arith.addi %base, %t : index
  %v = memref.load %x[%i] : memref<1024xf32>
  memref.store %v, %out[%i] : memref<1024xf32>
  mlc_gpu.return
}

// Every index query on every dimension, a barrier (also inside nested control flow), shared
// memory, an attribute dictionary; grid and block at their limits (2^31-1, 65535, 65535 and
// 1024 = 16 x 8 x 8 threads), f16, i32 and i1 buffers.
// CHECK-LABEL: mlc_gpu.func @queries(%h: memref<16x8x8xf16>, %i: memref<4xi32>, %m: memref<4xi1>) grid [2147483647, 65535, 65535] block [16, 8, 8] attributes {mlc.note = "limits"} {
// CHECK-NEXT:    %tx = mlc_gpu.thread_id x
// CHECK-NEXT:    %ty = mlc_gpu.thread_id y
// CHECK-NEXT:    %tz = mlc_gpu.thread_id z
// CHECK-NEXT:    %bx = mlc_gpu.block_id x
// CHECK-NEXT:    %by = mlc_gpu.block_id y
// CHECK-NEXT:    %bz = mlc_gpu.block_id z
// CHECK-NEXT:    %nx = mlc_gpu.block_dim x
// CHECK-NEXT:    %ny = mlc_gpu.block_dim y
// CHECK-NEXT:    %nz = mlc_gpu.block_dim z
// CHECK-NEXT:    %gx = mlc_gpu.grid_dim x
// CHECK-NEXT:    %gy = mlc_gpu.grid_dim y
// CHECK-NEXT:    %gz = mlc_gpu.grid_dim z {mlc.note = "z"}
// CHECK-NEXT:    %shared = memref.alloca() : memref<16x8x8xf16, 3 : i64>
// CHECK-NEXT:    %v = memref.load %h[%tx, %ty, %tz] : memref<16x8x8xf16>
// CHECK-NEXT:    memref.store %v, %shared[%tx, %ty, %tz] : memref<16x8x8xf16, 3 : i64>
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    scf.for %k = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %w = memref.load %shared[%k, %ty, %tz] : memref<16x8x8xf16, 3 : i64>
// CHECK-NEXT:      memref.store %w, %h[%tx, %ty, %tz] : memref<16x8x8xf16>
// CHECK-NEXT:      mlc_gpu.barrier {mlc.reason = "WAR"}
// CHECK-NEXT:    }
// CHECK-NEXT:    %iv = memref.load %i[%c0] : memref<4xi32>
// CHECK-NEXT:    %mv = memref.load %m[%c0] : memref<4xi1>
// CHECK-NEXT:    mlc_gpu.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "mlc_gpu.func"() <{sym_name = "queries"
// GENERIC-SAME:  , function_type = (memref<16x8x8xf16>, memref<4xi32>, memref<4xi1>) -> (), grid = array<i64: 2147483647, 65535, 65535>, block = array<i64: 16, 8, 8>}> ({
// GENERIC-NEXT:  ^bb0(%h: memref<16x8x8xf16>, %i: memref<4xi32>, %m: memref<4xi1>):
// GENERIC-NEXT:    %tx = "mlc_gpu.thread_id"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %ty = "mlc_gpu.thread_id"() <{dimension = "y"}> : () -> index
// GENERIC-NEXT:    %tz = "mlc_gpu.thread_id"() <{dimension = "z"}> : () -> index
// GENERIC-NEXT:    %bx = "mlc_gpu.block_id"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %by = "mlc_gpu.block_id"() <{dimension = "y"}> : () -> index
// GENERIC-NEXT:    %bz = "mlc_gpu.block_id"() <{dimension = "z"}> : () -> index
// GENERIC-NEXT:    %nx = "mlc_gpu.block_dim"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %ny = "mlc_gpu.block_dim"() <{dimension = "y"}> : () -> index
// GENERIC-NEXT:    %nz = "mlc_gpu.block_dim"() <{dimension = "z"}> : () -> index
// GENERIC-NEXT:    %gx = "mlc_gpu.grid_dim"() <{dimension = "x"}> : () -> index
// GENERIC-NEXT:    %gy = "mlc_gpu.grid_dim"() <{dimension = "y"}> : () -> index
// GENERIC-NEXT:    %gz = "mlc_gpu.grid_dim"() <{dimension = "z"}> {mlc.note = "z"} : () -> index
// GENERIC-NEXT:    %shared = "memref.alloca"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<16x8x8xf16, 3 : i64>
// GENERIC-NEXT:    %v = "memref.load"(%h, %tx, %ty, %tz) : (memref<16x8x8xf16>, index, index, index) -> f16
// GENERIC-NEXT:    "memref.store"(%v, %shared, %tx, %ty, %tz) : (f16, memref<16x8x8xf16, 3 : i64>, index, index, index) -> ()
// GENERIC-NEXT:    "mlc_gpu.barrier"() : () -> ()
// GENERIC-NEXT:    %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
// GENERIC-NEXT:    %c1 = "arith.constant"() <{value = 1 : index}> : () -> index
// GENERIC-NEXT:    %c4 = "arith.constant"() <{value = 4 : index}> : () -> index
// GENERIC-NEXT:    "scf.for"(%c0, %c4, %c1) ({
// GENERIC-NEXT:    ^bb0(%k: index):
// GENERIC-NEXT:      %w = "memref.load"(%shared, %k, %ty, %tz) : (memref<16x8x8xf16, 3 : i64>, index, index, index) -> f16
// GENERIC-NEXT:      "memref.store"(%w, %h, %tx, %ty, %tz) : (f16, memref<16x8x8xf16>, index, index, index) -> ()
// GENERIC-NEXT:      "mlc_gpu.barrier"() {mlc.reason = "WAR"} : () -> ()
// GENERIC-NEXT:      "scf.yield"() : () -> ()
// GENERIC-NEXT:    }) : (index, index, index) -> ()
// GENERIC-NEXT:    %iv = "memref.load"(%i, %c0) : (memref<4xi32>, index) -> i32
// GENERIC-NEXT:    %mv = "memref.load"(%m, %c0) : (memref<4xi1>, index) -> i1
// GENERIC-NEXT:    "mlc_gpu.return"() : () -> ()
// GENERIC-NEXT:  }) {mlc.note = "limits"} : () -> ()
mlc_gpu.func @queries(%h: memref<16x8x8xf16>, %i: memref<4xi32>, %m: memref<4xi1>) grid [2147483647, 65535, 65535] block [16, 8, 8] attributes {mlc.note = "limits"} {
  %tx = mlc_gpu.thread_id x
  %ty = mlc_gpu.thread_id y
  %tz = mlc_gpu.thread_id z
  %bx = mlc_gpu.block_id x
  %by = mlc_gpu.block_id y
  %bz = mlc_gpu.block_id z
  %nx = mlc_gpu.block_dim x
  %ny = mlc_gpu.block_dim y
  %nz = mlc_gpu.block_dim z
  %gx = mlc_gpu.grid_dim x
  %gy = mlc_gpu.grid_dim y
  %gz = mlc_gpu.grid_dim z {mlc.note = "z"}
  %shared = memref.alloca() : memref<16x8x8xf16, 3>
  %v = memref.load %h[%tx, %ty, %tz] : memref<16x8x8xf16>
  memref.store %v, %shared[%tx, %ty, %tz] : memref<16x8x8xf16, 3>
  mlc_gpu.barrier
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %w = memref.load %shared[%k, %ty, %tz] : memref<16x8x8xf16, 3>
    memref.store %w, %h[%tx, %ty, %tz] : memref<16x8x8xf16>
    mlc_gpu.barrier {mlc.reason = "WAR"}
  }
  %iv = memref.load %i[%c0] : memref<4xi32>
  %mv = memref.load %m[%c0] : memref<4xi1>
  mlc_gpu.return
}

// The smallest kernel: no arguments, one thread.
// CHECK-LABEL: mlc_gpu.func @empty() grid [1, 1, 1] block [1, 1, 1] {
// CHECK-NEXT:    mlc_gpu.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "mlc_gpu.func"() <{sym_name = "empty"
// GENERIC-SAME:  , function_type = () -> (), grid = array<i64: 1, 1, 1>, block = array<i64: 1, 1, 1>}> ({
// GENERIC-NEXT:    "mlc_gpu.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
mlc_gpu.func @empty() grid [1, 1, 1] block [1, 1, 1] {
  mlc_gpu.return
}

// An llvm.func kernel (after convert-gpu-to-nvvm) takes pointers.
// CHECK-LABEL: llvm.func @lowered(%p: !llvm.ptr) {
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "llvm.func"() <{unnamed_addr = 0 : i64, sym_name = "lowered"
// GENERIC-SAME:  , function_type = !llvm.func<void (!llvm.ptr)>, CConv = #llvm.cconv<ccc>, linkage = #llvm.linkage<"external">, visibility_ = 0 : i64}> ({
// GENERIC-NEXT:  ^bb0(%p: !llvm.ptr):
// GENERIC-NEXT:    "llvm.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
llvm.func @lowered(%p: !llvm.ptr) {
  llvm.return
}

// Host side: grid and block repeat the kernel's; shorter lists are padded with 1s; buffers of
// another shape with the same element type and count may be passed.
// CHECK-LABEL: func.func @host(%x: memref<1024xf32>, %y: memref<32x32xf32>, %h: memref<1024xf16>, %i: memref<4xi32>, %m: memref<4xi1>) {
// CHECK-NEXT:    mlc_gpu.launch @add(%x, %x) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>
// CHECK-NEXT:    mlc_gpu.launch @add(%y, %x) grid [4, 1, 1] block [256, 1, 1] : memref<32x32xf32>, memref<1024xf32>
// CHECK-NEXT:    mlc_gpu.launch @queries(%h, %i, %m) grid [2147483647, 65535, 65535] block [16, 8, 8] : memref<1024xf16>, memref<4xi32>, memref<4xi1>
// CHECK-NEXT:    mlc_gpu.launch @empty() grid [1, 1, 1] block [1, 1, 1]
// CHECK-NEXT:    mlc_gpu.launch @lowered(%i) grid [8, 2, 1] block [128, 1, 1] {mlc.stream = 0 : i64} : memref<4xi32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "host"
// GENERIC-SAME:  , function_type = (memref<1024xf32>, memref<32x32xf32>, memref<1024xf16>, memref<4xi32>, memref<4xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1024xf32>, %y: memref<32x32xf32>, %h: memref<1024xf16>, %i: memref<4xi32>, %m: memref<4xi1>):
// GENERIC-NEXT:    "mlc_gpu.launch"(%x, %x) <{kernel = @add, grid = array<i64: 4, 1, 1>, block = array<i64: 256, 1, 1>}> : (memref<1024xf32>, memref<1024xf32>) -> ()
// GENERIC-NEXT:    "mlc_gpu.launch"(%y, %x) <{kernel = @add, grid = array<i64: 4, 1, 1>, block = array<i64: 256, 1, 1>}> : (memref<32x32xf32>, memref<1024xf32>) -> ()
// GENERIC-NEXT:    "mlc_gpu.launch"(%h, %i, %m) <{kernel = @queries, grid = array<i64: 2147483647, 65535, 65535>, block = array<i64: 16, 8, 8>}> : (memref<1024xf16>, memref<4xi32>, memref<4xi1>) -> ()
// GENERIC-NEXT:    "mlc_gpu.launch"() <{kernel = @empty, grid = array<i64: 1, 1, 1>, block = array<i64: 1, 1, 1>}> : () -> ()
// GENERIC-NEXT:    "mlc_gpu.launch"(%i) <{kernel = @lowered, grid = array<i64: 8, 2, 1>, block = array<i64: 128, 1, 1>}> {mlc.stream = 0 : i64} : (memref<4xi32>) -> ()
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @host(%x: memref<1024xf32>, %y: memref<32x32xf32>, %h: memref<1024xf16>, %i: memref<4xi32>, %m: memref<4xi1>) {
  mlc_gpu.launch @add(%x, %x) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>
  mlc_gpu.launch @add(%y, %x) grid [4] block [256, 1] : memref<32x32xf32>, memref<1024xf32>
  mlc_gpu.launch @queries(%h, %i, %m) grid [2147483647, 65535, 65535] block [16, 8, 8] : memref<1024xf16>, memref<4xi32>, memref<4xi1>
  mlc_gpu.launch @empty() grid [1, 1, 1] block [1, 1, 1]
  mlc_gpu.launch @lowered(%i) grid [8, 2, 1] block [128, 1, 1] {mlc.stream = 0 : i64} : memref<4xi32>
  func.return
}
