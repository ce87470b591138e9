// A warp-specialized ring (`scf.if {mlc.warp_roles}`, the interpreter's `WARP_SPECIALIZED_RING`
// without its barrier): thread 0 initializes full/empty mbarrier pairs; warpgroup 0 produces (waits
// on a stage's empty barrier, announces the bytes on its full barrier, issues the bulk copy),
// warpgroup 1 consumes (wait on full, read their row, arrive on empty). Through
// gpu-insert-barriers, convert-gpu-to-nvvm and down to PTX for sm_90a.
//
// RUN: mlc-opt %s -p gpu-insert-barriers | tee %t.gpu.mlir | filecheck %s --check-prefix=GPU
// RUN: mlc-opt %t.gpu.mlir -p convert-gpu-to-nvvm | tee %t.nvvm.mlir | filecheck %s --check-prefix=NVVM
// RUN: mlc-opt %t.nvvm.mlir -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_90 | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: %if ptxas %{ ptxas -v -arch=sm_90a %t.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS %}
// RUN: sed 's/40, 232>}/40, 300>}/' %s | not mlc-opt -p convert-gpu-to-nvvm 2>&1 | filecheck %s --check-prefix=BAD

// gpu-insert-barriers: one barrier after the initialization (the barriers' init before other
// threads use them); none inside the roles, whose accesses of the stages the mbarriers order.
// GPU:      loop.mbarrier_init %empty[%c1]
// GPU-NEXT: }
// GPU-NEXT: %producer = arith.cmpi ult
// GPU-NEXT: mlc_gpu.barrier {inserted}
// GPU-NEXT: scf.if %producer {
// GPU-NOT:  mlc_gpu.barrier
// GPU:      }{mlc.warp_roles = array<i64: 40, 232>}

// convert-gpu-to-nvvm: the producer gives registers back, the consumers take them, first thing
// in their regions; the attribute stays (the interpreter runs the roles as coroutines).
// NVVM:      scf.if %producer {
// NVVM-NEXT:   llvm.inline_asm has_side_effects "setmaxnreg.dec.sync.aligned.u32 40;", "~{memory}"
// NVVM:      } else {
// NVVM-NEXT:   llvm.inline_asm has_side_effects "setmaxnreg.inc.sync.aligned.u32 232;", "~{memory}"
// NVVM:      }{mlc.warp_roles = array<i64: 40, 232>}

// PTX:       .target sm_90a
// PTX:       setmaxnreg.dec.sync.aligned.u32 40;
// PTX:       setmaxnreg.inc.sync.aligned.u32 232;
// PTXAS-NOT: C7508
// PTXAS:     0 bytes spill stores, 0 bytes spill loads

// BAD: 'mlc.warp_roles' must be array<i64: producer registers, consumer registers> (each 0, or a multiple of 8 in 24..256), got array<i64: 40, 300>

builtin.module {
mlc_gpu.func @ring(%a: memref<48x256xf16>, %out: memref<2x128x256xf16>) grid [2, 1, 1] block [256, 1, 1] attributes {mlc.min_blocks_per_multiprocessor = 1 : i64} {
  %t = mlc_gpu.thread_id x
  %block = mlc_gpu.block_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c64 = arith.constant 64 : index
  %full = memref.alloca() : memref<2xi64, 3 : i64>
  %empty = memref.alloca() : memref<2xi64, 3 : i64>
  %stages = memref.alloca() : memref<2x128x64xf16, 3 : i64>
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {
    loop.mbarrier_init %full[%c0], 1 : memref<2xi64, 3 : i64>
    loop.mbarrier_init %full[%c1], 1 : memref<2xi64, 3 : i64>
    loop.mbarrier_init %empty[%c0], 128 : memref<2xi64, 3 : i64>
    loop.mbarrier_init %empty[%c1], 128 : memref<2xi64, 3 : i64>
  }
  %producer = arith.cmpi ult, %t, %c128 : index
  scf.if %producer {
    scf.if %first {
      scf.for %k = %c0 to %c4 step %c1 {
        %stage = arith.remui %k, %c2 : index
        %use = arith.divui %k, %c2 : index
        %released = arith.addi %use, %c1 : index
        %parity = arith.remui %released, %c2 : index
        loop.mbarrier_wait %empty[%stage], %parity : memref<2xi64, 3 : i64>
        %column = arith.muli %k, %c64 : index
        loop.mbarrier_arrive %full[%stage] expect_tx 16384 : memref<2xi64, 3 : i64>
        loop.tma_load %a[%c0, %column] to %stages[%stage, %c0, %c0], %full[%stage] : memref<48x256xf16> to memref<2x128x64xf16, 3 : i64>, memref<2xi64, 3 : i64>
      }
    }
  } else {
    %row = arith.subi %t, %c128 : index
    scf.for %k = %c0 to %c4 step %c1 {
      %stage = arith.remui %k, %c2 : index
      %use = arith.divui %k, %c2 : index
      %parity = arith.remui %use, %c2 : index
      loop.mbarrier_wait %full[%stage], %parity : memref<2xi64, 3 : i64>
      
      %values = vector.load %stages[%stage, %row, %c0] : memref<2x128x64xf16, 3 : i64>, vector<64xf16>
      %column = arith.muli %k, %c64 : index
      vector.store %values, %out[%block, %row, %column] : memref<2x128x256xf16>, vector<64xf16>
      loop.mbarrier_arrive %empty[%stage] : memref<2xi64, 3 : i64>
    }
  } {mlc.warp_roles = array<i64: 40, 232>}
  mlc_gpu.return
}
}
