// RUN: mlc-opt %s --split-input-file -p loop-promote-shared | filecheck %s
// RUN: mlc-opt %s --split-input-file -p loop-promote-shared,convert-loop-to-gpu,gpu-insert-barriers | filecheck %s --check-prefix=GPU

// A matrix-vector product: every thread reads all of %x (64 elements, 4096 reads: 64x reuse), so
// the block copies it once into shared memory at the start of the thread loop, 16 threads moving
// one 16-byte vector each (the other 48 are guarded off), and the loop reads the copy. Each
// element of %w is read once by one thread (reuse 1): it stays in global memory. The copy reads
// %x with 16-byte vectors, so the kernel now asks for that alignment of %x.
// CHECK-LABEL: loop.kernel @matvec
// CHECK-SAME:    attributes {mlc.arg_alignment = array<i64: 4, 16, 4>}
// CHECK:         loop.parallel %block < 1 mapping block.x {
// CHECK-NEXT:      %x_shared = memref.alloca() {mlc.promoted = "%x: 64 elements read 4096 times by 64 threads in the thread loop (64x reuse); rows padded by 0: 66 shared-memory wavefronts per warp, 66 unpadded", alignment = 16 : i64} : memref<64xf32, 3 : i64>
// CHECK-NEXT:      loop.parallel %t < 64 mapping thread.x {
// CHECK:             %[[GUARD:.*]] = arith.cmpi ult, %t, %{{.*}} : index
// CHECK:             scf.if %[[GUARD]] -> (f32, f32, f32, f32) {
// CHECK:               vector.load %x[%{{.*}}] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
// CHECK:             vector.store %{{.*}}, %x_shared[%{{.*}}] {alignment = 16 : i64} : memref<64xf32, 3 : i64>, vector<4xf32>
// CHECK:             scf.for %j
// CHECK-NEXT:          %a = memref.load %w[%t, %j] : memref<64x64xf32>
// CHECK-NEXT:          %[[LOCAL:.*]] = arith.subi %j, %origin : index
// CHECK-NEXT:          %b = memref.load %x_shared[%[[LOCAL]]] : memref<64xf32, 3 : i64>
// On the GPU one barrier orders the copy before the reads (read after write); it is not needed
// again, as nothing writes the copy afterwards.
// GPU-LABEL: mlc_gpu.func @matvec
// GPU-NOT:     mlc.block_synchronous
// GPU:         vector.store %{{.*}}, %x_shared
// GPU:         mlc_gpu.barrier {inserted}
// GPU-NOT:     mlc_gpu.barrier
// GPU:         scf.for %j
loop.kernel @matvec(%w: memref<64x64xf32>, %x: memref<64xf32>, %y: memref<64xf32>) {
  loop.parallel %block < 1 mapping block.x {
    loop.parallel %t < 64 mapping thread.x {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sum = scf.for %j = %c0 to %c64 step %c1 iter_args(%acc = %zero) -> (f32) {
        %a = memref.load %w[%t, %j] : memref<64x64xf32>
        %b = memref.load %x[%j] : memref<64xf32>
        %p = arith.mulf %a, %b : f32
        %s = arith.addf %acc, %p : f32
        scf.yield %s : f32
      }
      memref.store %sum, %y[%t] : memref<64xf32>
    }
  }
  loop.return
}

// -----

// A blocked product in the shape convert-tile-to-loop gives a matmul (2x2 blocks of 16 threads,
// 4x16 outputs each, a K loop in steps of 8): thread t computes row t div 4 and the 4 columns from
// 4 * (t mod 4). The whole K range of either operand is more than a block's 48 KiB of shared memory,
// so the scope is one iteration of %k: the threads read a 4x8 box of %a (each element by the 4
// threads of its row: 128 reads, 4x reuse) and an 8x16 box of %b (each 4-wide piece by the 4
// threads of a column group: 4x). The copy is software-pipelined: the first boxes are loaded
// before the loop, each iteration stores the boxes it carries, then loads the next ones (at
// min(%k + 8, 4088): in bounds without checks) while it computes, and yields them.
// CHECK-LABEL: loop.kernel @blocked
// CHECK:         %a_shared = memref.alloca() {mlc.promoted = "%a: 4x8 elements read 128 times by 16 threads in each iteration of %k (4x reuse); rows padded by 0
// CHECK:         %b_shared = memref.alloca() {mlc.promoted = "%b: 8x16 elements read 512 times by 16 threads in each iteration of %k (4x reuse); rows padded by 0
// CHECK:         loop.parallel %t < 16 mapping thread.x {
// CHECK:           vector.load %a[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x4096xf32>, vector<4xf32>
// CHECK:           vector.load %b[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4096x32xf32>, vector<4xf32>
// CHECK:           scf.for %k = %c0 to %c4096 step %c8 iter_args(%partial = %zeros, %{{.*}}) -> (vector<4xf32>, {{(f32, )+}}f32) {
// CHECK:             vector.store %{{.*}}, %b_shared
// CHECK:             %[[NEXT:.*]] = arith.addi %k, %c8 : index
// CHECK-NEXT:        %[[LAST:.*]] = arith.constant 4088 : index
// CHECK-NEXT:        arith.minui %[[NEXT]], %[[LAST]] : index
// CHECK:             vector.load %b[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4096x32xf32>, vector<4xf32>
// CHECK:             vector.store %{{.*}}, %a_shared
// CHECK:             vector.load %a[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x4096xf32>, vector<4xf32>
// CHECK:             scf.for %kk
// CHECK:               memref.load %a_shared
// CHECK:               vector.load %b_shared[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<8x16xf32, 3 : i64>, vector<4xf32>
// CHECK:             scf.yield %next, %{{.*}} : vector<4xf32>, {{(f32, )+}}f32
// On the GPU there is one barrier before the stores of the carried boxes (the previous iteration's reads
// must be done: write after read) and one after them (read after write), each once per
// iteration of %k; the global loads of the next boxes sit between the second barrier and the
// compute, so they overlap with it.
// GPU-LABEL: mlc_gpu.func @blocked
// GPU:         scf.for %k
// GPU:           mlc_gpu.barrier {inserted}
// GPU-NEXT:      vector.store %{{.*}}, %b_shared
// GPU:           mlc_gpu.barrier {inserted}
// GPU-NOT:       mlc_gpu.barrier
// GPU:           scf.yield
loop.kernel @blocked(%a: memref<8x4096xf32>, %b: memref<4096x32xf32>, %c: memref<8x32xf32>) attributes {mlc.arg_alignment = array<i64: 4, 16, 16>} {
  loop.parallel %pm < 2 mapping block.x {
    loop.parallel %pn < 2 mapping block.y {
      loop.parallel %t < 16 mapping thread.x {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c4 = arith.constant 4 : index
        %c8 = arith.constant 8 : index
        %c16 = arith.constant 16 : index
        %c4096 = arith.constant 4096 : index
        %m = arith.muli %pm, %c4 : index
        %n = arith.muli %pn, %c16 : index
        %rt = arith.divui %t, %c4 : index
        %ct = arith.remui %t, %c4 : index
        %col = arith.muli %ct, %c4 : index
        %row = arith.addi %m, %rt : index
        %column = arith.addi %n, %col : index
        %zero = arith.constant 0.0 : f32
        %zeros = vector.broadcast %zero : f32 to vector<4xf32>
        %acc = scf.for %k = %c0 to %c4096 step %c8 iter_args(%partial = %zeros) -> (vector<4xf32>) {
          %next = scf.for %kk = %c0 to %c8 step %c1 iter_args(%inner = %partial) -> (vector<4xf32>) {
            %kk_global = arith.addi %k, %kk : index
            %x = memref.load %a[%row, %kk_global] : memref<8x4096xf32>
            %y = vector.load %b[%kk_global, %column] {alignment = 16 : i64} : memref<4096x32xf32>, vector<4xf32>
            %xs = vector.broadcast %x : f32 to vector<4xf32>
            %sum = vector.fma %xs, %y, %inner : vector<4xf32>
            scf.yield %sum : vector<4xf32>
          }
          scf.yield %next : vector<4xf32>
        }
        vector.store %acc, %c[%row, %column] {alignment = 16 : i64} : memref<8x32xf32>, vector<4xf32>
      }
    }
  }
  loop.return
}

// -----

// Each thread reads four neighbouring rows of %a per step (rows 4 * (t div 4) + 0..3, one column),
// as a matmul micro-tile of 4-tall row chunks does. Stored as is, those are four scalar reads a
// row apart; the copy is stored transposed instead (the box's 16 rows become the 16 columns of an
// 8x16 buffer, padded to 20 against the bank conflicts of the transposing stores), so the four
// reads are one aligned 16-byte vector read. The copy still reads %a with 16-byte vectors along
// a row and stores their elements one by one down a column. %b is not transposed.
// CHECK-LABEL: loop.kernel @transposed
// CHECK:         %a_shared = memref.alloca() {mlc.promoted = "%a: 16x8 elements read 512 times by 16 threads in each iteration of %k (4x reuse); stored transposed, read 4 neighbours at a time; rows padded by 4: 24 shared-memory wavefronts per warp, 32 unpadded", alignment = 16 : i64} : memref<8x20xf32, 3 : i64>
// CHECK:         %b_shared = memref.alloca() {mlc.promoted = "%b: 8x16 elements read 512 times by 16 threads in each iteration of %k (4x reuse); rows padded by 0
// CHECK:           scf.for %k
// CHECK:             memref.store %{{.*}}, %a_shared[%[[COLUMN:.*]], %[[ROW:.*]]] : memref<8x20xf32, 3 : i64>
// CHECK-NEXT:        %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:        %[[NEXT:.*]] = arith.addi %[[COLUMN]], %[[ONE]] : index
// CHECK-NEXT:        memref.store %{{.*}}, %a_shared[%[[NEXT]], %[[ROW]]] : memref<8x20xf32, 3 : i64>
// CHECK:             scf.for %kk
// CHECK-NEXT:          %kk_global = arith.addi %k, %kk : index
// CHECK-NEXT:          %[[M:.*]] = arith.subi %row0, %origin{{.*}} : index
// CHECK-NEXT:          %[[K:.*]] = arith.subi %kk_global, %origin{{.*}} : index
// CHECK-NEXT:          %[[X:.*]] = vector.load %a_shared[%[[K]], %[[M]]] {alignment = 16 : i64} : memref<8x20xf32, 3 : i64>, vector<4xf32>
// CHECK-NEXT:          %x0 = vector.extract %[[X]][0] : f32 from vector<4xf32>
// CHECK-NEXT:          %x1 = vector.extract %[[X]][1] : f32 from vector<4xf32>
// CHECK-NEXT:          %x2 = vector.extract %[[X]][2] : f32 from vector<4xf32>
// CHECK-NEXT:          %x3 = vector.extract %[[X]][3] : f32 from vector<4xf32>
// CHECK-NOT:           memref.load %a
// CHECK:               vector.load %b_shared
// GPU-LABEL: mlc_gpu.func @transposed
// GPU:         scf.for %k
// GPU:           mlc_gpu.barrier {inserted}
// GPU:           mlc_gpu.barrier {inserted}
// GPU-NOT:       mlc_gpu.barrier
// GPU:           scf.yield
loop.kernel @transposed(%a: memref<32x4096xf32>, %b: memref<4096x32xf32>, %c: memref<32x32xf32>) attributes {mlc.arg_alignment = array<i64: 4, 16, 16>} {
  loop.parallel %pm < 2 mapping block.x {
    loop.parallel %pn < 2 mapping block.y {
      loop.parallel %t < 16 mapping thread.x {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c3 = arith.constant 3 : index
        %c4 = arith.constant 4 : index
        %c8 = arith.constant 8 : index
        %c16 = arith.constant 16 : index
        %c4096 = arith.constant 4096 : index
        %m = arith.muli %pm, %c16 : index
        %n = arith.muli %pn, %c16 : index
        %rt = arith.divui %t, %c4 : index
        %ct = arith.remui %t, %c4 : index
        %rows = arith.muli %rt, %c4 : index
        %col = arith.muli %ct, %c4 : index
        %row0 = arith.addi %m, %rows : index
        %row1 = arith.addi %row0, %c1 : index
        %row2 = arith.addi %row0, %c2 : index
        %row3 = arith.addi %row0, %c3 : index
        %column = arith.addi %n, %col : index
        %zero = arith.constant 0.0 : f32
        %zeros = vector.broadcast %zero : f32 to vector<4xf32>
        %acc:4 = scf.for %k = %c0 to %c4096 step %c8 iter_args(%p0 = %zeros, %p1 = %zeros, %p2 = %zeros, %p3 = %zeros) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
          %next:4 = scf.for %kk = %c0 to %c8 step %c1 iter_args(%i0 = %p0, %i1 = %p1, %i2 = %p2, %i3 = %p3) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
            %kk_global = arith.addi %k, %kk : index
            %x0 = memref.load %a[%row0, %kk_global] : memref<32x4096xf32>
            %x1 = memref.load %a[%row1, %kk_global] : memref<32x4096xf32>
            %x2 = memref.load %a[%row2, %kk_global] : memref<32x4096xf32>
            %x3 = memref.load %a[%row3, %kk_global] : memref<32x4096xf32>
            %y = vector.load %b[%kk_global, %column] {alignment = 16 : i64} : memref<4096x32xf32>, vector<4xf32>
            %xs0 = vector.broadcast %x0 : f32 to vector<4xf32>
            %xs1 = vector.broadcast %x1 : f32 to vector<4xf32>
            %xs2 = vector.broadcast %x2 : f32 to vector<4xf32>
            %xs3 = vector.broadcast %x3 : f32 to vector<4xf32>
            %s0 = vector.fma %xs0, %y, %i0 : vector<4xf32>
            %s1 = vector.fma %xs1, %y, %i1 : vector<4xf32>
            %s2 = vector.fma %xs2, %y, %i2 : vector<4xf32>
            %s3 = vector.fma %xs3, %y, %i3 : vector<4xf32>
            scf.yield %s0, %s1, %s2, %s3 : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
          }
          scf.yield %next#0, %next#1, %next#2, %next#3 : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
        }
        vector.store %acc#0, %c[%row0, %column] {alignment = 16 : i64} : memref<32x32xf32>, vector<4xf32>
        vector.store %acc#1, %c[%row1, %column] {alignment = 16 : i64} : memref<32x32xf32>, vector<4xf32>
        vector.store %acc#2, %c[%row2, %column] {alignment = 16 : i64} : memref<32x32xf32>, vector<4xf32>
        vector.store %acc#3, %c[%row3, %column] {alignment = 16 : i64} : memref<32x32xf32>, vector<4xf32>
      }
    }
  }
  loop.return
}

// -----

// One warp reads a 16x64 tile of %b per iteration of %k with ldmatrix x4 trans (four 16x16 steps
// of %n), each element once (1x reuse, below the threshold): it is staged all the same, since
// ldmatrix reads only shared memory, as one 64x64 row-major copy made with 16-byte vectors. Rows
// are padded by 8 elements: unpadded, the 8 rows of 128 bytes that an 8-lane phase of ldmatrix
// reads all fall in the same 4 banks (8 wavefronts instead of 1): 576 wavefronts in all, 128 padded.
// CHECK-LABEL: loop.kernel @ldmatrix_operand
// CHECK:         %b_shared = memref.alloca() {mlc.promoted = "%b: 64x64 elements read 4096 times by 32 threads in the thread loop (1x reuse); read by ldmatrix; rows padded by 8: 128 shared-memory wavefronts per warp, 576 unpadded", alignment = 16 : i64} : memref<64x72xf16, 3 : i64>
// CHECK:         vector.store %{{.*}}, %b_shared[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x72xf16, 3 : i64>, vector<8xf16>
// CHECK:         scf.for %k
// CHECK:           scf.for %n
// CHECK:             loop.ldmatrix x4 trans %b_shared[%{{.*}}, %{{.*}}] : memref<64x72xf16, 3 : i64> -> vector<2xf16>
// GPU-LABEL:   mlc_gpu.func @ldmatrix_operand
// GPU:           vector.store %{{.*}}, %b_shared
// GPU:           mlc_gpu.barrier
// GPU-NOT:       mlc_gpu.barrier
// GPU:           loop.ldmatrix x4 trans %b_shared
loop.kernel @ldmatrix_operand(%b: memref<64x64xf16>, %out: memref<32x8xf16>) {
  loop.parallel %lane < 32 mapping thread.x {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %low = arith.remui %lane, %c8 : index
    %eighth = arith.divui %lane, %c8 : index
    %odd = arith.remui %eighth, %c2 : index
    %high = arith.muli %odd, %c8 : index
    %row = arith.addi %low, %high : index
    %half = arith.divui %lane, %c16 : index
    %column = arith.muli %half, %c8 : index
    %zero = arith.constant 0.0 : f16
    %init = vector.broadcast %zero : f16 to vector<2xf16>
    %sum = scf.for %k = %c0 to %c64 step %c16 iter_args(%acc = %init) -> (vector<2xf16>) {
      %r = arith.addi %k, %row : index
      %inner = scf.for %n = %c0 to %c64 step %c16 iter_args(%acc2 = %acc) -> (vector<2xf16>) {
        %col = arith.addi %n, %column : index
        %b0, %b1, %b2, %b3 = loop.ldmatrix x4 trans %b[%r, %col] : memref<64x64xf16> -> vector<2xf16>
        %s0 = arith.addf %acc2, %b0 : vector<2xf16>
        %s1 = arith.addf %s0, %b3 : vector<2xf16>
        scf.yield %s1 : vector<2xf16>
      }
      scf.yield %inner : vector<2xf16>
    }
    vector.store %sum, %out[%lane, %c0] : memref<32x8xf16>, vector<2xf16>
  }
  loop.return
}

// -----

// A pipeline of async copies (`stages=3`): a warp reads a 16x64 tile of %b per iteration of %k
// with ldmatrix; the whole of %b (128 KiB) is too large to stage at once, so each iteration's
// box is copied, three iterations deep. The buffer gets a leading stage dimension; the first two
// iterations' copies are issued before the loop (one commit group each), each iteration waits
// until only one group is in flight, issues the copies of iteration k + 2 (clamped to the last
// one: no check needed) into stage (i + 2) mod 3, commits, and reads stage i mod 3. A wait for
// everything follows the loop. The copies are 16-byte cp.async copies (`loop.async_copy`, 8 f16).
// CHECK-LABEL: loop.kernel @pipelined
// CHECK:         %b_shared = memref.alloca() {mlc.promoted = "%b: 16x64 elements {{.*}}; 3 stages of async copies"{{.*}} : memref<3x16x72xf16, 3 : i64>
// CHECK:           loop.async_copy %b[{{.*}}] to %b_shared[{{.*}}], 8 : memref<1024x64xf16> to memref<3x16x72xf16, 3 : i64>
// CHECK:           loop.async_commit
// CHECK:           loop.async_copy %b[{{.*}}] to %b_shared[{{.*}}], 8 : memref<1024x64xf16> to memref<3x16x72xf16, 3 : i64>
// CHECK:           loop.async_commit
// CHECK:           scf.for %k
// CHECK-NEXT:        loop.async_wait 1
// CHECK:             %stage = arith.remui
// CHECK:             %next = arith.minui %{{.*}}, %{{.*}} : index
// CHECK:             loop.async_copy %b[{{.*}}] to %b_shared[%next_stage, {{.*}}], 8
// CHECK:             loop.async_commit
// CHECK:             loop.ldmatrix x4 trans %b_shared[%stage, {{.*}}]
// CHECK:           loop.async_wait 0
// On the GPU one barrier per iteration, after the wait and before the new copies: it orders the
// landed copies before this iteration's reads and the last iteration's reads before the copies
// that overwrite their stage. None goes between the copies and the reads (copies in flight are
// ordered by the wait, not by barriers).
// GPU-LABEL:   mlc_gpu.func @pipelined
// GPU-NOT:       mlc_gpu.barrier
// GPU:           scf.for %k
// GPU-NEXT:        loop.async_wait 1
// GPU:             mlc_gpu.barrier {inserted}
// GPU-NOT:         mlc_gpu.barrier
// GPU:             loop.async_copy
// GPU-NOT:         mlc_gpu.barrier
// GPU:             loop.ldmatrix
// GPU-NOT:       mlc_gpu.barrier
// GPU:           loop.async_wait 0
loop.kernel @pipelined(%b: memref<1024x64xf16>, %out: memref<32x8xf16>) attributes {mlc.pipeline_stages = 3 : i64} {
  loop.parallel %lane < 32 mapping thread.x {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c1024 = arith.constant 1024 : index
    %low = arith.remui %lane, %c8 : index
    %eighth = arith.divui %lane, %c8 : index
    %odd = arith.remui %eighth, %c2 : index
    %high = arith.muli %odd, %c8 : index
    %row = arith.addi %low, %high : index
    %half = arith.divui %lane, %c16 : index
    %column = arith.muli %half, %c8 : index
    %zero = arith.constant 0.0 : f16
    %init = vector.broadcast %zero : f16 to vector<2xf16>
    %sum = scf.for %k = %c0 to %c1024 step %c16 iter_args(%acc = %init) -> (vector<2xf16>) {
      %r = arith.addi %k, %row : index
      %inner = scf.for %n = %c0 to %c64 step %c16 iter_args(%acc2 = %acc) -> (vector<2xf16>) {
        %col = arith.addi %n, %column : index
        %b0, %b1, %b2, %b3 = loop.ldmatrix x4 trans %b[%r, %col] : memref<1024x64xf16> -> vector<2xf16>
        %s0 = arith.addf %acc2, %b0 : vector<2xf16>
        %s1 = arith.addf %s0, %b3 : vector<2xf16>
        scf.yield %s1 : vector<2xf16>
      }
      scf.yield %inner : vector<2xf16>
    }
    vector.store %sum, %out[%lane, %c0] : memref<32x8xf16>, vector<2xf16>
  }
  loop.return
}
