// RUN: mlc-opt %s --split-input-file -p convert-loop-to-gpu | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-loop-to-gpu | mlc-opt --split-input-file | filecheck %s

// Block and thread loops become block and thread ids; the launch gets the grid and block.
// CHECK-LABEL: mlc_gpu.func @simple(%x: memref<1024xf32>, %out: memref<1024xf32>) grid [4, 1, 1] block [256, 1, 1] {
// CHECK-NEXT:    %b = mlc_gpu.block_id x
// CHECK-NEXT:    %t = mlc_gpu.thread_id x
// CHECK-NOT:     loop.parallel
// CHECK-NOT:     mlc_gpu.barrier
// CHECK:         memref.store %v, %out[%i]
// CHECK-NEXT:    mlc_gpu.return
// CHECK-LABEL: func.func @host
// CHECK:         mlc_gpu.launch @simple(%x, %{{.*}}) grid [4, 1, 1] block [256, 1, 1] : memref<1024xf32>, memref<1024xf32>
loop.kernel @simple(%x: memref<1024xf32>, %out: memref<1024xf32>) {
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
  loop.launch @simple(%x, %o) : memref<1024xf32>, memref<1024xf32>
  func.return %o : memref<1024xf32>
}

// -----

// Two thread loops in sequence communicate through shared memory: a barrier separates them.
// The second loop is shorter than the block and runs under a guard; its unmapped inner loop runs
// sequentially in each thread. The write outside thread loops happens once, in thread 0, after
// a barrier.
// CHECK-LABEL: mlc_gpu.func @phases
// CHECK-SAME:    grid [2, 1, 1] block [64, 1, 1]
// CHECK:         %s = memref.alloca() : memref<64xf32, 3 : i64>
// CHECK:         memref.store %v, %s[%t] : memref<64xf32, 3 : i64>
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK-NEXT:    %[[T:.*]] = mlc_gpu.thread_id x
// CHECK-NEXT:    %[[BOUND:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[INSIDE:.*]] = arith.cmpi ult, %[[T]], %[[BOUND]] : index
// CHECK-NEXT:    scf.if %[[INSIDE]] {
// CHECK:           memref.load %s[%{{.*}}] : memref<64xf32, 3 : i64>
// CHECK:           scf.for %k =
// CHECK:         mlc_gpu.barrier
// CHECK:         %[[T0:.*]] = mlc_gpu.thread_id x
// CHECK:         %[[FIRST:.*]] = arith.cmpi eq, %[[T0]], %{{.*}} : index
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK-NEXT:      memref.store %one, %flag[%b]
loop.kernel @phases(%x: memref<2x64xf32>, %out: memref<2x128xf32>, %flag: memref<2xf32>) {
  loop.parallel %b < 2 mapping block.x {
    %s = memref.alloca() : memref<64xf32, 3>
    loop.parallel %t < 64 mapping thread.x {
      %v = memref.load %x[%b, %t] : memref<2x64xf32>
      memref.store %v, %s[%t] : memref<64xf32, 3>
    }
    loop.parallel %t < 32 mapping thread.x {
      %c63 = arith.constant 63 : index
      %r = arith.subi %c63, %t : index
      %v = memref.load %s[%r] : memref<64xf32, 3>
      %c2 = arith.constant 2 : index
      %row = arith.muli %t, %c2 : index
      loop.parallel %k < 2 {
        %j = arith.addi %row, %k : index
        memref.store %v, %out[%b, %j] : memref<2x128xf32>
      }
    }
    %one = arith.constant 1.0 : f32
    memref.store %one, %flag[%b] : memref<2xf32>
  }
  loop.return
}

// -----

// A thread loop inside a sequential loop: the next iteration's accesses wait for this one's.
// CHECK-LABEL: mlc_gpu.func @phase_loop
// CHECK:         scf.for %step =
// CHECK:           memref.store %w, %x[%t]
// CHECK-NEXT:      mlc_gpu.barrier
// CHECK-NEXT:    }
loop.kernel @phase_loop(%x: memref<64xf32>) {
  loop.parallel %b < 1 mapping block.x {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    scf.for %step = %c0 to %c4 step %c1 {
      loop.parallel %t < 64 mapping thread.x {
        %v = memref.load %x[%t] : memref<64xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %x[%t] : memref<64xf32>
      }
    }
  }
  loop.return
}

// -----

// loop.all_reduce over 128 threads (mask 127) with a commutative combiner: five warp shuffles
// (bits 1..16), then each thread stores its warp's value, waits, loads the four values of its
// group (warps 0..3: indices t & ~96 | 0, 32, 64, 96) and adds them as a tree, lowest first.
// CHECK-LABEL: mlc_gpu.func @block_sum
// CHECK-SAME:    block [128, 1, 1]
// CHECK:         %exchange = memref.alloca() : memref<128xf32, 3 : i64>
// CHECK:         %[[S1:.*]] = mlc_gpu.shuffle xor %v, 1 : f32
// CHECK-NEXT:    %[[A1:.*]] = arith.addf %v, %[[S1]] : f32
// CHECK-NEXT:    mlc_gpu.shuffle xor %[[A1]], 2 : f32
// CHECK:         mlc_gpu.shuffle xor %{{.*}}, 4 : f32
// CHECK:         mlc_gpu.shuffle xor %{{.*}}, 8 : f32
// CHECK:         %[[S5:.*]] = mlc_gpu.shuffle xor %{{.*}}, 16 : f32
// CHECK-NEXT:    %[[A5:.*]] = arith.addf %{{.*}}, %[[S5]] : f32
// CHECK-NEXT:    memref.store %[[A5]], %exchange[%t] : memref<128xf32, 3 : i64>
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK-NEXT:    %[[CLEAR:.*]] = arith.constant -97 : index
// CHECK-NEXT:    %[[BASE:.*]] = arith.andi %t, %[[CLEAR]] : index
// CHECK-NEXT:    %[[W0:.*]] = memref.load %exchange[%[[BASE]]]
// CHECK-NEXT:    %[[C32:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[I1:.*]] = arith.ori %[[BASE]], %[[C32]] : index
// CHECK-NEXT:    %[[W1:.*]] = memref.load %exchange[%[[I1]]]
// CHECK:         %[[W2:.*]] = memref.load %exchange
// CHECK:         %[[W3:.*]] = memref.load %exchange
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK-NEXT:    %[[L:.*]] = arith.addf %[[W0]], %[[W1]] : f32
// CHECK-NEXT:    %[[R:.*]] = arith.addf %[[W2]], %[[W3]] : f32
// CHECK-NEXT:    %[[TOTAL:.*]] = arith.addf %[[L]], %[[R]] : f32
// CHECK-NEXT:    memref.store %[[TOTAL]], %out[%t]
// CHECK-NOT:     loop.all_reduce
loop.kernel @block_sum(%x: memref<128xf32>, %out: memref<128xf32>) {
  loop.parallel %b < 1 mapping block.x {
    loop.parallel %t < 128 mapping thread.x {
      %v = memref.load %x[%t] : memref<128xf32>
      %s = loop.all_reduce %v mask 127 : f32 {
      ^bb0(%l: f32, %r: f32):
        %c = arith.addf %l, %r : f32
        loop.yield %c : f32
      }
      memref.store %s, %out[%t] : memref<128xf32>
    }
  }
  loop.return
}

// -----

// A combiner that is not one commutative op keeps the exact butterfly across warps: one
// exchange through shared memory per bit (32, then 64), each between two barriers.
// CHECK-LABEL: mlc_gpu.func @block_first
// CHECK:         mlc_gpu.shuffle xor %{{.*}}, 16 : f32
// CHECK:         memref.store %{{.*}}, %exchange[%t]
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK-NEXT:    %[[BIT:.*]] = arith.constant 32 : index
// CHECK-NEXT:    %[[PARTNER:.*]] = arith.xori %t, %[[BIT]] : index
// CHECK-NEXT:    memref.load %exchange[%[[PARTNER]]] : memref<128xf32, 3 : i64>
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK:         arith.constant 64 : index
// CHECK-NEXT:    arith.xori
// CHECK-NEXT:    memref.load %exchange
// CHECK-NEXT:    mlc_gpu.barrier
// CHECK-NOT:     loop.all_reduce
loop.kernel @block_first(%x: memref<128xf32>, %out: memref<128xf32>) {
  loop.parallel %b < 1 mapping block.x {
    loop.parallel %t < 128 mapping thread.x {
      %v = memref.load %x[%t] : memref<128xf32>
      %s = loop.all_reduce %v mask 127 : f32 {
      ^bb0(%l: f32, %r: f32):
        %twice = arith.addf %l, %l : f32
        %c = arith.subf %twice, %r : f32
        loop.yield %c : f32
      }
      memref.store %s, %out[%t] : memref<128xf32>
    }
  }
  loop.return
}
