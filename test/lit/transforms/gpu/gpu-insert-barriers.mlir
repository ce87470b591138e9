// RUN: mlc-opt %s --split-input-file -p gpu-insert-barriers | filecheck %s
// RUN: mlc-opt %s --split-input-file -p gpu-insert-barriers,gpu-insert-barriers | filecheck %s

// RAW: every thread stores its element, then reads another thread's: a barrier before the load.
// CHECK-LABEL: mlc_gpu.func @reverse
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %s[%t]
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %w = memref.load %s[%r]
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         mlc_gpu.return
mlc_gpu.func @reverse(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c31 = arith.constant 31 : index
  %r = arith.subi %c31, %t : index
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  %w = memref.load %s[%r] : memref<32xf32, 3>
  memref.store %w, %out[%t] : memref<32xf32>
  mlc_gpu.return
}

// -----

// WAR: the in-place reverse reads another thread's element, then overwrites its own (which another
// thread read): a barrier before the store; the first store and the load are ordered by the
// existing barrier.
// CHECK-LABEL: mlc_gpu.func @flip
// CHECK:         mlc_gpu.barrier
// CHECK-NEXT:    %w = memref.load %s[%r]
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    memref.store %w, %s[%t]
// CHECK-NEXT:    mlc_gpu.return
mlc_gpu.func @flip(%x: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c31 = arith.constant 31 : index
  %r = arith.subi %c31, %t : index
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  mlc_gpu.barrier
  %w = memref.load %s[%r] : memref<32xf32, 3>
  memref.store %w, %s[%t] : memref<32xf32, 3>
  mlc_gpu.return
}

// -----

// WAW: two stores of one element by different threads (t, then t + 1 mod 32).
// CHECK-LABEL: mlc_gpu.func @overwrite
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %s[%t]
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    memref.store %v, %s[%next]
mlc_gpu.func @overwrite(%x: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %plus = arith.addi %t, %c1 : index
  %next = arith.remui %plus, %c32 : index
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  memref.store %v, %s[%next] : memref<32xf32, 3>
  mlc_gpu.return
}

// -----

// A 2-d transpose through a shared tile: thread (x, y) stores [y, x] and loads [x, y].
// CHECK-LABEL: mlc_gpu.func @transpose
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %tile[%ty, %tx]
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %w = memref.load %tile[%tx, %ty]
mlc_gpu.func @transpose(%x: memref<8x8xf32>, %out: memref<8x8xf32>) grid [1, 1, 1] block [8, 8, 1] {
  %tx = mlc_gpu.thread_id x
  %ty = mlc_gpu.thread_id y
  %tile = memref.alloca() : memref<8x8xf32, 3>
  %v = memref.load %x[%ty, %tx] : memref<8x8xf32>
  memref.store %v, %tile[%ty, %tx] : memref<8x8xf32, 3>
  %w = memref.load %tile[%tx, %ty] : memref<8x8xf32, 3>
  memref.store %w, %out[%ty, %tx] : memref<8x8xf32>
  mlc_gpu.return
}

// -----

// A loop whose next iteration overwrites what this one read: the barrier already in the body
// orders the store before the loads; the WAR hazard of the next iteration's store against this
// iteration's load needs a second barrier, at the start of the body.
// CHECK-LABEL: mlc_gpu.func @carried_war
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         scf.for %k =
// CHECK-NEXT:      mlc_gpu.barrier {inserted}
// CHECK-NEXT:      memref.store %{{.*}}, %s[%t]
// CHECK-NEXT:      mlc_gpu.barrier
// CHECK-NEXT:      %w = memref.load %s[%partner]
// CHECK-NOT:       mlc_gpu.barrier
// CHECK:         }
mlc_gpu.func @carried_war(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %partner = arith.xori %t, %c1 : index
  %v = memref.load %x[%t] : memref<32xf32>
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%a = %v) -> (f32) {
    memref.store %a, %s[%t] : memref<32xf32, 3>
    mlc_gpu.barrier
    %w = memref.load %s[%partner] : memref<32xf32, 3>
    %n = arith.addf %a, %w : f32
    scf.yield %n : f32
  }
  memref.store %r, %out[%t] : memref<32xf32>
  mlc_gpu.return
}

// -----

// A cooperative copy in a K loop (as a matmul's): each iteration threads store one element of a
// tile, all read the whole tile. Within the iteration the loads wait for the stores (RAW), with a
// barrier before the inner loop rather than in it (once per tile, not once per element); the next
// iteration's store waits for this one's loads (WAR).
// CHECK-LABEL: mlc_gpu.func @k_loop
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         scf.for %k =
// CHECK-NOT:       mlc_gpu.barrier
// CHECK:           %v = memref.load %x[%i]
// CHECK-NEXT:      mlc_gpu.barrier {inserted}
// CHECK-NEXT:      memref.store %v, %tile[%t]
// CHECK-NEXT:      mlc_gpu.barrier {inserted}
// CHECK-NEXT:      %inner = scf.for %j =
// CHECK-NOT:         mlc_gpu.barrier
// CHECK:           }
// CHECK-NEXT:      scf.yield
mlc_gpu.func @k_loop(%x: memref<64xf32>, %out: memref<16xf32>) grid [1, 1, 1] block [16, 1, 1] {
  %t = mlc_gpu.thread_id x
  %tile = memref.alloca() : memref<16xf32, 3>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %base = arith.muli %k, %c16 : index
    %i = arith.addi %base, %t : index
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %tile[%t] : memref<16xf32, 3>
    %inner = scf.for %j = %c0 to %c16 step %c1 iter_args(%partial = %acc) -> (f32) {
      %w = memref.load %tile[%j] : memref<16xf32, 3>
      %p = arith.addf %partial, %w : f32
      scf.yield %p : f32
    }
    scf.yield %inner : f32
  }
  memref.store %sum, %out[%t] : memref<16xf32>
  mlc_gpu.return
}

// -----

// A store in one arm of a uniform branch, a load after it: the barrier goes after the join. A load
// of another thread's element in one arm: a barrier in that arm only.
// CHECK-LABEL: mlc_gpu.func @branches
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         scf.if %first_block {
// CHECK-NEXT:      memref.store %v, %s[%t]
// CHECK-NEXT:    }
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %w = memref.load %s[%r]
// CHECK:         scf.if %first_block {
// CHECK-NEXT:      memref.store %v, %s2[%t]
// CHECK-NEXT:    }
// CHECK-NEXT:    %u = scf.if %first_block -> (f32) {
// CHECK-NEXT:      mlc_gpu.barrier {inserted}
// CHECK-NEXT:      %{{.*}} = memref.load %s2[%r]
// CHECK:         } else {
// CHECK-NEXT:      %{{.*}} = memref.load %s2[%t]
// CHECK-NEXT:      scf.yield
mlc_gpu.func @branches(%x: memref<64xf32>, %out: memref<64xf32>) grid [2, 1, 1] block [32, 1, 1] {
  %b = mlc_gpu.block_id x
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %s2 = memref.alloca() : memref<32xf32, 3>
  %c0 = arith.constant 0 : index
  %c31 = arith.constant 31 : index
  %r = arith.subi %c31, %t : index
  %first_block = arith.cmpi eq, %b, %c0 : index
  %v = memref.load %x[%t] : memref<64xf32>
  scf.if %first_block {
    memref.store %v, %s[%t] : memref<32xf32, 3>
  }
  %w = memref.load %s[%r] : memref<32xf32, 3>
  scf.if %first_block {
    memref.store %v, %s2[%t] : memref<32xf32, 3>
  }
  %u = scf.if %first_block -> (f32) {
    %y = memref.load %s2[%r] : memref<32xf32, 3>
    scf.yield %y : f32
  } else {
    %z = memref.load %s2[%t] : memref<32xf32, 3>
    scf.yield %z : f32
  }
  %sum = arith.addf %w, %u : f32
  memref.store %sum, %out[%t] : memref<64xf32>
  mlc_gpu.return
}

// -----

// A branch on the thread id: a barrier inside would not be reached by every thread, so the one
// the load needs goes before the branch.
// CHECK-LABEL: mlc_gpu.func @divergent
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %s[%t]
// CHECK-NEXT:    %low = arith.cmpi ult, %t, %c16 : index
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    scf.if %low {
// CHECK-NOT:       mlc_gpu.barrier
// CHECK:         }
// CHECK-NEXT:    mlc_gpu.return
mlc_gpu.func @divergent(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c16 = arith.constant 16 : index
  %c31 = arith.constant 31 : index
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  %low = arith.cmpi ult, %t, %c16 : index
  scf.if %low {
    %r = arith.subi %c31, %t : index
    %w = memref.load %s[%r] : memref<32xf32, 3>
    memref.store %w, %out[%t] : memref<32xf32>
  }
  mlc_gpu.return
}

// -----

// Thread 0 writes a flag all threads then read: a barrier after the write's branch. Within the
// branch only thread 0 runs, so its store, load and store of one element need none.
// CHECK-LABEL: mlc_gpu.func @first_thread
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         scf.if %first {
// CHECK-NOT:       mlc_gpu.barrier
// CHECK:         }
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %f = memref.load %flag[%c0]
mlc_gpu.func @first_thread(%x: memref<1xf32>, %out: memref<64xf32>) grid [1, 1, 1] block [64, 1, 1] {
  %t = mlc_gpu.thread_id x
  %flag = memref.alloca() : memref<1xf32, 3>
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {
    %v = memref.load %x[%c0] : memref<1xf32>
    memref.store %v, %flag[%c0] : memref<1xf32, 3>
    %again = memref.load %flag[%c0] : memref<1xf32, 3>
    %twice = arith.addf %again, %again : f32
    memref.store %twice, %flag[%c0] : memref<1xf32, 3>
  }
  %f = memref.load %flag[%c0] : memref<1xf32, 3>
  memref.store %f, %out[%t] : memref<64xf32>
  mlc_gpu.return
}

// -----

// No hazards: distinct allocations never alias; reads never conflict with reads; a thread that
// reads back its own element (the same index, here in every iteration of a loop) is proven
// alone on it; disjoint halves (t and t + 32 with 32 threads) never meet; the shuffle touches no
// memory.
// CHECK-LABEL: mlc_gpu.func @no_hazards
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         mlc_gpu.return
mlc_gpu.func @no_hazards(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %a = memref.alloca() : memref<32xf32, 3>
  %b = memref.alloca() : memref<32xf32, 3>
  %halves = memref.alloca() : memref<64xf32, 3>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %r = arith.subi %c31, %t : index
  %upper = arith.addi %t, %c32 : index
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %a[%t] : memref<32xf32, 3>
  %from_b = memref.load %b[%r] : memref<32xf32, 3>
  %again = memref.load %b[%t] : memref<32xf32, 3>
  %own = memref.load %a[%t] : memref<32xf32, 3>
  scf.for %k = %c0 to %c4 step %c1 {
    %old = memref.load %a[%t] : memref<32xf32, 3>
    %new = arith.addf %old, %v : f32
    memref.store %new, %a[%t] : memref<32xf32, 3>
  }
  memref.store %own, %halves[%t] : memref<64xf32, 3>
  %top = memref.load %halves[%upper] : memref<64xf32, 3>
  %shuffled = mlc_gpu.shuffle xor %top, 1 : f32
  memref.store %shuffled, %out[%t] : memref<32xf32>
  mlc_gpu.return
}

// -----

// Barriers already present are kept and trusted: nothing to add.
// CHECK-LABEL: mlc_gpu.func @already_synchronised
// CHECK:         memref.store %v, %s[%t]
// CHECK-NEXT:    mlc_gpu.barrier{{$}}
// CHECK-NEXT:    %w = memref.load %s[%r]
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         mlc_gpu.return
mlc_gpu.func @already_synchronised(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c31 = arith.constant 31 : index
  %r = arith.subi %c31, %t : index
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  mlc_gpu.barrier
  %w = memref.load %s[%r] : memref<32xf32, 3>
  memref.store %w, %out[%t] : memref<32xf32>
  mlc_gpu.return
}

// -----

// convert-loop-to-gpu's all_reduce across warps (128 threads, mask 127) brings its own two
// barriers: the pass accepts them and adds none.
// CHECK-LABEL: mlc_gpu.func @block_sum
// CHECK-NOT:     {inserted}
// CHECK:         memref.store %v, %exchange[%t]
// CHECK-NEXT:    mlc_gpu.barrier{{$}}
// CHECK-NOT:     {inserted}
// CHECK:         %w3 = memref.load %exchange
// CHECK-NEXT:    mlc_gpu.barrier{{$}}
// CHECK-NOT:     {inserted}
// CHECK:         mlc_gpu.return
mlc_gpu.func @block_sum(%x: memref<128xf32>, %out: memref<128xf32>) grid [1, 1, 1] block [128, 1, 1] {
  %t = mlc_gpu.thread_id x
  %exchange = memref.alloca() : memref<128xf32, 3>
  %v = memref.load %x[%t] : memref<128xf32>
  memref.store %v, %exchange[%t] : memref<128xf32, 3>
  mlc_gpu.barrier
  %clear = arith.constant -97 : index
  %base = arith.andi %t, %clear : index
  %w0 = memref.load %exchange[%base] : memref<128xf32, 3>
  %c32 = arith.constant 32 : index
  %i1 = arith.ori %base, %c32 : index
  %w1 = memref.load %exchange[%i1] : memref<128xf32, 3>
  %c64 = arith.constant 64 : index
  %i2 = arith.ori %base, %c64 : index
  %w2 = memref.load %exchange[%i2] : memref<128xf32, 3>
  %c96 = arith.constant 96 : index
  %i3 = arith.ori %base, %c96 : index
  %w3 = memref.load %exchange[%i3] : memref<128xf32, 3>
  mlc_gpu.barrier
  %l = arith.addf %w0, %w1 : f32
  %r = arith.addf %w2, %w3 : f32
  %total = arith.addf %l, %r : f32
  memref.store %total, %out[%t] : memref<128xf32>
  mlc_gpu.return
}

// -----

// An op the analysis does not understand (a call) reads and writes all shared memory: it waits
// for the store, and the load waits for it.
// CHECK-LABEL: mlc_gpu.func @opaque_call
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %s[%t]
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    func.call @helper()
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %w = memref.load %s[%t]
func.func private @helper() -> ()
mlc_gpu.func @opaque_call(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  func.call @helper() : () -> ()
  %w = memref.load %s[%t] : memref<32xf32, 3>
  memref.store %w, %out[%t] : memref<32xf32>
  mlc_gpu.return
}

// -----

// Shared memory reached through a view may touch any element of its allocation: the load of the
// thread's own element through a subview waits for the store (conservative).
// CHECK-LABEL: mlc_gpu.func @through_a_view
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %s[%t]
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %w = memref.load %view[%t]
mlc_gpu.func @through_a_view(%x: memref<32xf32>, %out: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %view = memref.subview %s[0] [32] [1] : memref<32xf32, 3> to memref<32xf32, strided<[1]>, 3>
  %v = memref.load %x[%t] : memref<32xf32>
  memref.store %v, %s[%t] : memref<32xf32, 3>
  %w = memref.load %view[%t] : memref<32xf32, strided<[1]>, 3>
  memref.store %w, %out[%t] : memref<32xf32>
  mlc_gpu.return
}

// -----

// A tile origin plus a thread's offset, modulo the tile: the remainder drops the block's origin
// (a multiple of 16), so each thread's two stores are known to hit its own elements (no barrier
// between them); the reverse read of another thread's element needs one. Without the remainder
// rule the origin would hide the offsets and a barrier would separate the two stores.
// CHECK-LABEL: mlc_gpu.func @tile_offsets
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %s[%offset]
// CHECK-NEXT:    memref.store %v, %s[%next]
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         %r = arith.subi
// CHECK-NEXT:    mlc_gpu.barrier {inserted}
// CHECK-NEXT:    %w = memref.load %s[%r]
mlc_gpu.func @tile_offsets(%x: memref<64xf32>, %out: memref<64xf32>) grid [4, 1, 1] block [8, 1, 1] {
  %t = mlc_gpu.thread_id x
  %b = mlc_gpu.block_id x
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %s = memref.alloca() : memref<16xf32, 3>
  %origin = arith.muli %b, %c16 : index
  %pair = arith.muli %t, %c2 : index
  %i = arith.addi %origin, %pair : index
  %offset = arith.remui %i, %c16 : index
  %c1 = arith.constant 1 : index
  %i1 = arith.addi %i, %c1 : index
  %next = arith.remui %i1, %c16 : index
  %v = memref.load %x[%i] : memref<64xf32>
  memref.store %v, %s[%offset] : memref<16xf32, 3>
  memref.store %v, %s[%next] : memref<16xf32, 3>
  %c15 = arith.constant 15 : index
  %r = arith.subi %c15, %offset : index
  %w = memref.load %s[%r] : memref<16xf32, 3>
  memref.store %w, %out[%i] : memref<64xf32>
  mlc_gpu.return
}

// -----

// A tile origin from a remainder of block ids (a grouped tile order's `launch mod per_group`):
// `arith.remui` of uniform values is uniform (xDSL declares no effects for it), so the origin is
// a symbol that `mod 16` drops and each thread reads back only its own elements: no barrier.
// CHECK-LABEL: mlc_gpu.func @remainder_of_block_ids
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         mlc_gpu.return
mlc_gpu.func @remainder_of_block_ids(%x: memref<64xf32>, %out: memref<64xf32>) grid [4, 1, 1] block [8, 1, 1] {
  %t = mlc_gpu.thread_id x
  %b = mlc_gpu.block_id x
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c16 = arith.constant 16 : index
  %s = memref.alloca() : memref<16xf32, 3>
  %group = arith.remui %b, %c3 : index
  %origin = arith.muli %group, %c16 : index
  %pair = arith.muli %t, %c2 : index
  %i = arith.addi %origin, %pair : index
  %offset = arith.remui %i, %c16 : index
  %v = memref.load %x[%i] : memref<64xf32>
  memref.store %v, %s[%offset] : memref<16xf32, 3>
  %w = memref.load %s[%offset] : memref<16xf32, 3>
  memref.store %w, %out[%i] : memref<64xf32>
  mlc_gpu.return
}
