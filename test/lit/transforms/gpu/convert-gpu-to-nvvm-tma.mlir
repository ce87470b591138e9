// RUN: mlc-opt %s --split-input-file -p convert-gpu-to-nvvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-gpu-to-nvvm | mlc-opt --split-input-file | filecheck %s

// mbarriers and bulk tensor copies (tma_nvvm.py). A 128 x 128 f16 stage swizzled as wgmma reads it
// is filled by two 128 x 64 boxes (one per 64-column block, 16 KiB apart, the second at column
// + 64) through one tensor map of %a (parameter 0, 128-byte swizzle, box [128, 64]), a trailing
// pointer parameter the kernel acquires at entry; a plain 64 x 32 destination by one box of its
// shape without swizzle through a second map (of %b, parameter 1), into a 128-byte aligned global.
// Each map's view (`mlc.tensor_map_views`) is the shape in which the kernel reads its buffer.
// `loop.warp_sync` is `bar.warp.sync` with every lane's bit.
// CHECK-LABEL: llvm.func @tma(%a: !llvm.ptr {llvm.noalias}, %b: !llvm.ptr {llvm.noalias}, %map0: !llvm.ptr, %map1: !llvm.ptr)
// CHECK-SAME:    mlc.tensor_map_views = [array<i64: 256, 512>, array<i64: 100, 40>], mlc.tensor_maps = [array<i64: 0, 128, 128, 64>, array<i64: 1, 0, 64, 32>], mlc.required_arch = "sm_90a"
// CHECK-NEXT:    llvm.inline_asm has_side_effects "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l,~{memory}" %map0
// CHECK-NEXT:    llvm.inline_asm has_side_effects "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l,~{memory}" %map1
// CHECK:         llvm.call_intrinsic "llvm.nvvm.mbarrier.init.shared"(%{{.*}}, %{{.*}}) : (!llvm.ptr<3>, i32) -> ()
// CHECK-NEXT:    llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// CHECK:         llvm.call_intrinsic "llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta"(%{{.*}}, %{{.*}}) : (!llvm.ptr<3>, i32) -> i64
// CHECK:         %[[COLUMN:.*]] = arith.index_cast %k : index to i32
// CHECK:         %[[ROW:.*]] = arith.index_cast %row : index to i32
// CHECK:         %[[FIRST:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT:    llvm.call_intrinsic "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d"(%[[FIRST]], %{{.*}}, %map0, %[[COLUMN]], %[[ROW]], %{{.*}}) : (!llvm.ptr<7>, !llvm.ptr<3>, !llvm.ptr, i32, i32, i16, i64, i1, i1, i32) -> ()
// CHECK:         %[[SHIFT:.*]] = arith.constant 64 : i32
// CHECK-NEXT:    %[[NEXT:.*]] = arith.addi %[[COLUMN]], %[[SHIFT]] : i32
// CHECK-NEXT:    %[[SECOND:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
// CHECK-NEXT:    llvm.call_intrinsic "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d"(%[[SECOND]], %{{.*}}, %map0, %[[NEXT]], %[[ROW]], %{{.*}})
// CHECK:         llvm.call_intrinsic "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d"(%{{.*}}, %{{.*}}, %map1, %{{.*}})
// CHECK:         %[[EVERY_LANE:.*]] = arith.constant -1 : i32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.nvvm.bar.warp.sync"(%[[EVERY_LANE]]) : (i32) -> ()
// CHECK:         llvm.inline_asm has_side_effects "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}"
// CHECK:         llvm.inline_asm has_side_effects "{ .reg .pred done; wait: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; @!done bra wait; }", "r,r,~{memory}"
// CHECK-NOT:     llvm.nvvm.barrier0
mlc_gpu.func @tma(%a: memref<256x512xf16>, %b: memref<100x40xf16>) grid [1, 1, 1] block [128, 1, 1] {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %row = arith.constant 128 : index
  %k = arith.constant 64 : index
  %bars = memref.alloca() : memref<2xi64, 3 : i64>
  %stages = memref.alloca() {mlc.swizzle = 128 : i64} : memref<2x128x128xf16, 3 : i64>
  %plain = memref.alloca() : memref<64x32xf16, 3 : i64>
  loop.mbarrier_init %bars[%c0], 1 : memref<2xi64, 3 : i64>
  loop.mbarrier_arrive %bars[%c0] expect_tx 36864 : memref<2xi64, 3 : i64>
  loop.tma_load %a[%row, %k] to %stages[%c1, %c0, %c0], %bars[%c0] : memref<256x512xf16> to memref<2x128x128xf16, 3 : i64>, memref<2xi64, 3 : i64>
  loop.tma_load %b[%c0, %c0] to %plain[%c0, %c0], %bars[%c0] : memref<100x40xf16> to memref<64x32xf16, 3 : i64>, memref<2xi64, 3 : i64>
  loop.warp_sync
  loop.mbarrier_arrive %bars[%c1] : memref<2xi64, 3 : i64>
  loop.mbarrier_wait %bars[%c0], %c0 : memref<2xi64, 3 : i64>
  mlc_gpu.return
}
