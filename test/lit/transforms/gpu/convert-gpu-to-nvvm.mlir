// RUN: mlc-opt %s --split-input-file -p convert-gpu-to-nvvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-gpu-to-nvvm | mlc-opt --split-input-file | filecheck %s

// The kernel becomes an external llvm.func over bare pointers, marked as an NVVM kernel with its
// block size; memref parameters are cast back for the memref conversion. Thread and block ids
// read the special registers; block and grid dimensions are the static launch shape. Global
// pointers are noalias (mlc never launches a kernel on overlapping buffers that it writes).
// CHECK-LABEL: llvm.func @k(%x: !llvm.ptr {llvm.noalias}, %s: !llvm.ptr<3>)
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

// -----

// Shared memory becomes an addrspace(3) global of the module; shuffles become shfl.sync over the
// full warp (f16 moves as f32, i64 as its low and high words from the same lane).
// CHECK:       llvm.mlir.global internal @shuffles_shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
// CHECK-LABEL: llvm.func @shuffles
// CHECK:         %[[ADDRESS:.*]] = llvm.mlir.addressof @shuffles_shared_0 : !llvm.ptr<3>
// CHECK-NEXT:    %{{.*}} = builtin.unrealized_conversion_cast %[[ADDRESS]] : !llvm.ptr<3> to memref<64xf32, 3 : i64>
// CHECK:         llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, f32, i32, i32) -> f32
// CHECK:         arith.extf %{{.*}} : f16 to f32
// CHECK-NEXT:    arith.constant -1 : i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.shfl.sync.down.f32"
// CHECK:         arith.truncf %{{.*}} : f32 to f16
// CHECK:         llvm.call_intrinsic "llvm.nvvm.shfl.sync.idx.i32"
// CHECK:         %[[LOW:.*]] = arith.trunci %[[WIDE:.*]] : i64 to i32
// CHECK-NEXT:    %[[SHIFTED:.*]] = arith.shrui %[[WIDE]], %{{.*}} : i64
// CHECK-NEXT:    %[[HIGH:.*]] = arith.trunci %[[SHIFTED]] : i64 to i32
// CHECK:         %[[MOVED_LOW:.*]] = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.i32"(%{{.*}}, %[[LOW]], %{{.*}}, %{{.*}})
// CHECK:         %[[MOVED_HIGH:.*]] = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.i32"(%{{.*}}, %[[HIGH]], %{{.*}}, %{{.*}})
// CHECK-NEXT:    %[[WIDE_LOW:.*]] = arith.extui %[[MOVED_LOW]] : i32 to i64
// CHECK-NEXT:    %[[WIDE_HIGH:.*]] = arith.extui %[[MOVED_HIGH]] : i32 to i64
// CHECK-NEXT:    %[[UP:.*]] = arith.shli %[[WIDE_HIGH]], %{{.*}} : i64
// CHECK-NEXT:    arith.ori %[[UP]], %[[WIDE_LOW]] : i64
mlc_gpu.func @shuffles(%x: memref<64xf32>, %h: memref<64xf16>, %i: memref<64xi32>, %l: memref<64xi64>) grid [1, 1, 1] block [64, 1, 1] {
  %s = memref.alloca() : memref<64xf32, 3>
  %t = mlc_gpu.thread_id x
  %v = memref.load %x[%t] : memref<64xf32>
  %a = mlc_gpu.shuffle xor %v, 4 : f32
  memref.store %a, %s[%t] : memref<64xf32, 3>
  %w = memref.load %h[%t] : memref<64xf16>
  %b = mlc_gpu.shuffle down %w, 1 : f16
  memref.store %b, %h[%t] : memref<64xf16>
  %n = memref.load %i[%t] : memref<64xi32>
  %c = mlc_gpu.shuffle idx %n, 0 : i32
  memref.store %c, %i[%t] : memref<64xi32>
  %k = memref.load %l[%t] : memref<64xi64>
  %d = mlc_gpu.shuffle xor %k, 8 : i64
  memref.store %d, %l[%t] : memref<64xi64>
  mlc_gpu.return
}

// -----

// A kernel that asks for two blocks per multiprocessor gets nvvm.minctasm (.minnctapersm in PTX).
// CHECK-LABEL: llvm.func @occupancy
// CHECK-SAME:    attributes {mlc.min_blocks_per_multiprocessor = 2 : i64, nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32}
mlc_gpu.func @occupancy(%x: memref<256xf32>) grid [1, 1, 1] block [256, 1, 1] attributes {mlc.min_blocks_per_multiprocessor = 2 : i64} {
  %t = mlc_gpu.thread_id x
  %v = memref.load %x[%t] : memref<256xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %x[%t] : memref<256xf32>
  mlc_gpu.return
}

// -----

// A tensor-core step becomes mma.sync m16n8k16 (sm_80+): f16 pairs go as <2 x half>, bf16 pairs
// bitcast to i32 as LLVM's bf16 intrinsic takes them; the struct of four f32 is taken apart.
// CHECK-LABEL: llvm.func @mma
// CHECK:         %[[H:.*]] = llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"(%h, %h, %h, %h, %h, %h, %z, %z, %z, %z) : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         %{{.*}} = llvm.extractvalue %[[H]][0] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         %{{.*}} = llvm.extractvalue %[[H]][3] : !llvm.struct<(f32, f32, f32, f32)>
// CHECK:         %[[P:.*]] = llvm.bitcast %g : vector<2xbf16> to i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.bf16"(%[[P]], {{.*}}) : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// The TF32 step: loop.round_tf32 is cvt.rna.tf32.f32 (an i32 result, bitcast back to f32), and
// mma.sync m16n8k8 .tf32 takes each f32 register's bits as an i32.
// CHECK:         %[[BITS:.*]] = llvm.call_intrinsic "llvm.nvvm.f2tf32.rna"(%f) : (f32) -> i32
// CHECK:         %[[R:.*]] = llvm.bitcast %[[BITS]] : i32 to f32
// CHECK:         %[[RI:.*]] = llvm.bitcast %[[R]] : f32 to i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.mma.m16n8k8.row.col.tf32"(%[[RI]], {{.*}}) : (i32, i32, i32, i32, i32, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
mlc_gpu.func @mma(%x: memref<64xf16>, %y: memref<64xbf16>, %w: memref<64xf32>, %out: memref<64xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %h = vector.load %x[%t] : memref<64xf16>, vector<2xf16>
  %g = vector.load %y[%t] : memref<64xbf16>, vector<2xbf16>
  %z = arith.constant 0.0 : f32
  %d:4 = loop.mma_sync m16n8k16 (%h, %h, %h, %h) * (%h, %h) + (%z, %z, %z, %z) : vector<2xf16> -> f32
  %e:4 = loop.mma_sync m16n8k16 (%g, %g, %g, %g) * (%g, %g) + (%d#0, %d#1, %d#2, %d#3) : vector<2xbf16> -> f32
  %f = memref.load %w[%t] : memref<64xf32>
  %r = loop.round_tf32 %f : f32
  %s:4 = loop.mma_sync m16n8k8 (%r, %r, %r, %r) * (%r, %r) + (%e#0, %e#1, %e#2, %e#3) : f32 -> f32
  memref.store %s#0, %out[%t] : memref<64xf32>
  mlc_gpu.return
}

// -----

// ldmatrix reads the shared global the allocation became: a GEP by the row-major index (column
// + row * 24), the intrinsic on that addrspace(3) pointer, and each i32 register bitcast to the pair
// that mma.sync takes; x1 returns a plain i32.
// CHECK-LABEL: llvm.func @ldmatrix
// CHECK:         %[[ROW:.*]] = arith.muli %t, %{{.*}} : index
// CHECK:         %[[LINEAR:.*]] = arith.addi %t, %[[ROW]] : index
// CHECK:         %[[WIDE:.*]] = arith.index_cast %[[LINEAR]] : index to i64
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%[[WIDE]]] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f16
// CHECK:         %[[R:.*]] = llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3"(%[[P]]) : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// CHECK:         %[[R0:.*]] = llvm.extractvalue %[[R]][0] : !llvm.struct<(i32, i32, i32, i32)>
// CHECK:         llvm.bitcast %[[R0]] : i32 to vector<2xf16>
// CHECK:         %[[S:.*]] = llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x1.b16.p3"(%{{.*}}) : (!llvm.ptr<3>) -> i32
// CHECK:         llvm.bitcast %[[S]] : i32 to vector<2xbf16>
mlc_gpu.func @ldmatrix(%out: memref<64xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32x24xf16, 3>
  %u = memref.alloca() : memref<32x8xbf16, 3>
  %a:4 = loop.ldmatrix x4 trans %s[%t, %t] : memref<32x24xf16, 3> -> vector<2xf16>
  %c0 = arith.constant 0 : index
  %b:1 = loop.ldmatrix x1 %u[%t, %c0] : memref<32x8xbf16, 3> -> vector<2xbf16>
  mlc_gpu.return
}

// -----

// Async copies: cp.async.cg (16 bytes) from the parameter's global address (an addrspacecast to
// the global space) into the shared global, `.s` with a source size of 16 or 0 bytes (zero fill)
// where the copy has an `if`; commit and wait become the cp.async group intrinsics.
// CHECK-LABEL: llvm.func @copies
// CHECK:         %[[SOURCE:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr to !llvm.ptr<1>
// CHECK:         llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16"(%{{.*}}, %[[SOURCE]]) : (!llvm.ptr<3>, !llvm.ptr<1>) -> ()
// CHECK:         %[[SIZE:.*]] = arith.select %inside, %{{.*}}, %{{.*}} : i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16.s"(%{{.*}}, %{{.*}}, %[[SIZE]]) : (!llvm.ptr<3>, !llvm.ptr<1>, i32) -> ()
// CHECK:         llvm.call_intrinsic "llvm.nvvm.cp.async.commit.group"() : () -> ()
// CHECK:         %[[PENDING:.*]] = arith.constant 1 : i32
// CHECK:         llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"(%[[PENDING]]) : (i32) -> ()
mlc_gpu.func @copies(%x: memref<64x64xf16>) grid [1, 1, 1] block [64, 1, 1] {
  %t = mlc_gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c60 = arith.constant 60 : index
  %s = memref.alloca() : memref<2x64x8xf16, 3 : i64>
  loop.async_copy %x[%t, %c0] to %s[%c0, %t, %c0], 8 : memref<64x64xf16> to memref<2x64x8xf16, 3 : i64>
  %inside = arith.cmpi ult, %t, %c60 : index
  loop.async_copy %x[%t, %c0] to %s[%c1, %t, %c0], 8 if %inside : memref<64x64xf16> to memref<2x64x8xf16, 3 : i64>
  loop.async_commit
  loop.async_wait 1
  mlc_gpu.return
}

// -----

// Beyond 48 KiB of shared memory a block's allocations live in one dynamic shared global, at
// 16-byte aligned offsets; the kernel and the global record how many bytes a launch must give.
// CHECK:       llvm.mlir.global external @big_dynamic_shared() {addr_space = 3 : i32, alignment = 16 : i64, mlc.dynamic_shared_bytes = 65552 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @big
// CHECK-SAME:    mlc.dynamic_shared_bytes = 65552 : i64
// CHECK:         %[[BASE:.*]] = llvm.mlir.addressof @big_dynamic_shared : !llvm.ptr<3>
// CHECK-NEXT:    %[[FIRST:.*]] = llvm.getelementptr inbounds %[[BASE]][0] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-NEXT:    builtin.unrealized_conversion_cast %[[FIRST]] : !llvm.ptr<3> to memref<8192xf32, 3 : i64>
// CHECK:         %[[SECOND:.*]] = llvm.getelementptr inbounds %{{.*}}[32768] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
// CHECK-NEXT:    builtin.unrealized_conversion_cast %[[SECOND]] : !llvm.ptr<3> to memref<8193xf32, 3 : i64>
mlc_gpu.func @big(%x: memref<64xf32>) grid [1, 1, 1] block [64, 1, 1] {
  %t = mlc_gpu.thread_id x
  %a = memref.alloca() : memref<8192xf32, 3 : i64>
  %b = memref.alloca() : memref<8193xf32, 3 : i64>
  %v = memref.load %x[%t] : memref<64xf32>
  memref.store %v, %a[%t] : memref<8192xf32, 3 : i64>
  memref.store %v, %b[%t] : memref<8193xf32, 3 : i64>
  mlc_gpu.return
}
