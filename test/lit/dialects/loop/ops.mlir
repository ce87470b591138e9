// Round trip of every loop op in the custom syntax, its generic form (where loop.yield shows),
// and generic back to custom.
// RUN: mlc-opt %s | filecheck %s
// RUN: mlc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: mlc-opt %s --print-op-generic | mlc-opt | filecheck %s

// CHECK:   builtin.module {
// GENERIC: "builtin.module"() ({

// The example of the dialect's docstring: a block loop around a thread loop.
// CHECK-LABEL: loop.kernel @add(%x: memref<1024xf32>, %out: memref<1024xf32>) {
// CHECK-NEXT:    loop.parallel %block < 4 mapping block.x {
// CHECK-NEXT:      loop.parallel %thread < 256 mapping thread.x {
// CHECK-NEXT:        %c256 = arith.constant 256 : index
// CHECK-NEXT:        %base = arith.muli %block, %c256 : index
// CHECK-NEXT:        %i = arith.addi %base, %thread : index
// CHECK-NEXT:        %v = memref.load %x[%i] : memref<1024xf32>
// CHECK-NEXT:        memref.store %v, %out[%i] : memref<1024xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "loop.kernel"() <{sym_name = "add"
// GENERIC-SAME:  , function_type = (memref<1024xf32>, memref<1024xf32>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1024xf32>, %out: memref<1024xf32>):
// GENERIC-NEXT:    "loop.parallel"() <{upper_bound = 4 : i64, mapping = "block.x"}> ({
// GENERIC-NEXT:    ^bb0(%block: index):
// GENERIC-NEXT:      "loop.parallel"() <{upper_bound = 256 : i64, mapping = "thread.x"}> ({
// GENERIC-NEXT:      ^bb0(%thread: index):
// GENERIC-NEXT:        %c256 = "arith.constant"() <{value = 256 : index}> : () -> index
// GENERIC-NEXT:        %base = "arith.muli"(%block, %c256) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:        %i = "arith.addi"(%base, %thread) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:        %v = "memref.load"(%x, %i) : (memref<1024xf32>, index) -> f32
// GENERIC-NEXT:        "memref.store"(%v, %out, %i) : (f32, memref<1024xf32>, index) -> ()
// GENERIC-NEXT:        "loop.yield"() : () -> ()
// GENERIC-NEXT:      }) : () -> ()
// GENERIC-NEXT:      "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "loop.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
loop.kernel @add(%x: memref<1024xf32>, %out: memref<1024xf32>) {
  loop.parallel %block < 4 mapping block.x {
    loop.parallel %thread < 256 mapping thread.x {
      %c256 = arith.constant 256 : index
      %base = arith.muli %block, %c256 : index
      %i = arith.addi %base, %thread : index
      %v = memref.load %x[%i] : memref<1024xf32>
      memref.store %v, %out[%i] : memref<1024xf32>
    }
  }
  loop.return
}

// All six mappings, an unmapped parallel loop, scf.for inside, shared (3) and private (5) memory,
// an attribute dictionary on a loop and on the kernel; 8 x 8 x 16 = 1024 threads, the maximum.
// CHECK-LABEL: loop.kernel @mappings(%a: memref<2x4x8x8x16xf16>, %out: memref<2x4x8x8x16xf16>) attributes {mlc.note = "all mappings"} {
// CHECK-NEXT:    loop.parallel %bz < 2 mapping block.z {
// CHECK-NEXT:      loop.parallel %by < 4 mapping block.y {
// CHECK-NEXT:        loop.parallel %bx < 1 mapping block.x {
// CHECK-NEXT:          %shared = memref.alloca() : memref<8x8x16xf16, 3 : i64>
// CHECK-NEXT:          loop.parallel %tz < 8 mapping thread.z {
// CHECK-NEXT:            loop.parallel %ty < 8 mapping thread.y {
// CHECK-NEXT:              loop.parallel %tx < 16 mapping thread.x attributes {mlc.unroll = 2 : i64} {
// CHECK-NEXT:                %private = memref.alloca() : memref<4xf16, 5 : i64>
// CHECK-NEXT:                %c0 = arith.constant 0 : index
// CHECK-NEXT:                %c1 = arith.constant 1 : index
// CHECK-NEXT:                %c4 = arith.constant 4 : index
// CHECK-NEXT:                scf.for %k = %c0 to %c4 step %c1 {
// CHECK-NEXT:                  %v = memref.load %a[%bz, %by, %tz, %ty, %tx] : memref<2x4x8x8x16xf16>
// CHECK-NEXT:                  memref.store %v, %private[%k] : memref<4xf16, 5 : i64>
// CHECK-NEXT:                }
// CHECK-NEXT:                %p = memref.load %private[%c0] : memref<4xf16, 5 : i64>
// CHECK-NEXT:                memref.store %p, %shared[%tz, %ty, %tx] : memref<8x8x16xf16, 3 : i64>
// CHECK-NEXT:                loop.parallel %j < 3 {
// CHECK-NEXT:                  %s = memref.load %shared[%tz, %ty, %tx] : memref<8x8x16xf16, 3 : i64>
// CHECK-NEXT:                  memref.store %s, %out[%bz, %by, %tz, %ty, %tx] : memref<2x4x8x8x16xf16>
// CHECK-NEXT:                }
// CHECK-NEXT:              }
// CHECK-NEXT:            }
// CHECK-NEXT:          }
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "loop.kernel"() <{sym_name = "mappings"
// GENERIC-SAME:  , function_type = (memref<2x4x8x8x16xf16>, memref<2x4x8x8x16xf16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: memref<2x4x8x8x16xf16>, %out: memref<2x4x8x8x16xf16>):
// GENERIC-NEXT:    "loop.parallel"() <{upper_bound = 2 : i64, mapping = "block.z"}> ({
// GENERIC-NEXT:    ^bb0(%bz: index):
// GENERIC-NEXT:      "loop.parallel"() <{upper_bound = 4 : i64, mapping = "block.y"}> ({
// GENERIC-NEXT:      ^bb0(%by: index):
// GENERIC-NEXT:        "loop.parallel"() <{upper_bound = 1 : i64, mapping = "block.x"}> ({
// GENERIC-NEXT:        ^bb0(%bx: index):
// GENERIC-NEXT:          %shared = "memref.alloca"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<8x8x16xf16, 3 : i64>
// GENERIC-NEXT:          "loop.parallel"() <{upper_bound = 8 : i64, mapping = "thread.z"}> ({
// GENERIC-NEXT:          ^bb0(%tz: index):
// GENERIC-NEXT:            "loop.parallel"() <{upper_bound = 8 : i64, mapping = "thread.y"}> ({
// GENERIC-NEXT:            ^bb0(%ty: index):
// GENERIC-NEXT:              "loop.parallel"() <{upper_bound = 16 : i64, mapping = "thread.x"}> ({
// GENERIC-NEXT:              ^bb0(%tx: index):
// GENERIC-NEXT:                %private = "memref.alloca"() <{operandSegmentSizes = array<i32: 0, 0>}> : () -> memref<4xf16, 5 : i64>
// GENERIC-NEXT:                %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
// GENERIC-NEXT:                %c1 = "arith.constant"() <{value = 1 : index}> : () -> index
// GENERIC-NEXT:                %c4 = "arith.constant"() <{value = 4 : index}> : () -> index
// GENERIC-NEXT:                "scf.for"(%c0, %c4, %c1) ({
// GENERIC-NEXT:                ^bb0(%k: index):
// GENERIC-NEXT:                  %v = "memref.load"(%a, %bz, %by, %tz, %ty, %tx) : (memref<2x4x8x8x16xf16>, index, index, index, index, index) -> f16
// GENERIC-NEXT:                  "memref.store"(%v, %private, %k) : (f16, memref<4xf16, 5 : i64>, index) -> ()
// GENERIC-NEXT:                  "scf.yield"() : () -> ()
// GENERIC-NEXT:                }) : (index, index, index) -> ()
// GENERIC-NEXT:                %p = "memref.load"(%private, %c0) : (memref<4xf16, 5 : i64>, index) -> f16
// GENERIC-NEXT:                "memref.store"(%p, %shared, %tz, %ty, %tx) : (f16, memref<8x8x16xf16, 3 : i64>, index, index, index) -> ()
// GENERIC-NEXT:                "loop.parallel"() <{upper_bound = 3 : i64}> ({
// GENERIC-NEXT:                ^bb0(%j: index):
// GENERIC-NEXT:                  %s = "memref.load"(%shared, %tz, %ty, %tx) : (memref<8x8x16xf16, 3 : i64>, index, index, index) -> f16
// GENERIC-NEXT:                  "memref.store"(%s, %out, %bz, %by, %tz, %ty, %tx) : (f16, memref<2x4x8x8x16xf16>, index, index, index, index, index) -> ()
// GENERIC-NEXT:                  "loop.yield"() : () -> ()
// GENERIC-NEXT:                }) : () -> ()
// GENERIC-NEXT:                "loop.yield"() : () -> ()
// GENERIC-NEXT:              }) {mlc.unroll = 2 : i64} : () -> ()
// GENERIC-NEXT:              "loop.yield"() : () -> ()
// GENERIC-NEXT:            }) : () -> ()
// GENERIC-NEXT:            "loop.yield"() : () -> ()
// GENERIC-NEXT:          }) : () -> ()
// GENERIC-NEXT:          "loop.yield"() : () -> ()
// GENERIC-NEXT:        }) : () -> ()
// GENERIC-NEXT:        "loop.yield"() : () -> ()
// GENERIC-NEXT:      }) : () -> ()
// GENERIC-NEXT:      "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "loop.return"() : () -> ()
// GENERIC-NEXT:  }) {mlc.note = "all mappings"} : () -> ()
loop.kernel @mappings(%a: memref<2x4x8x8x16xf16>, %out: memref<2x4x8x8x16xf16>) attributes {mlc.note = "all mappings"} {
  loop.parallel %bz < 2 mapping block.z {
    loop.parallel %by < 4 mapping block.y {
      loop.parallel %bx < 1 mapping block.x {
        %shared = memref.alloca() : memref<8x8x16xf16, 3>
        loop.parallel %tz < 8 mapping thread.z {
          loop.parallel %ty < 8 mapping thread.y {
            loop.parallel %tx < 16 mapping thread.x attributes {mlc.unroll = 2 : i64} {
              %private = memref.alloca() : memref<4xf16, 5>
              %c0 = arith.constant 0 : index
              %c1 = arith.constant 1 : index
              %c4 = arith.constant 4 : index
              scf.for %k = %c0 to %c4 step %c1 {
                %v = memref.load %a[%bz, %by, %tz, %ty, %tx] : memref<2x4x8x8x16xf16>
                memref.store %v, %private[%k] : memref<4xf16, 5>
              }
              %p = memref.load %private[%c0] : memref<4xf16, 5>
              memref.store %p, %shared[%tz, %ty, %tx] : memref<8x8x16xf16, 3>
              loop.parallel %j < 3 {
                %s = memref.load %shared[%tz, %ty, %tx] : memref<8x8x16xf16, 3>
                memref.store %s, %out[%bz, %by, %tz, %ty, %tx] : memref<2x4x8x8x16xf16>
              }
            }
          }
        }
      }
    }
  }
  loop.return
}

// Sibling thread loops (each within the limit), integer and i1 buffers.
// CHECK-LABEL: loop.kernel @siblings(%x: memref<1024xi32>, %m: memref<1024xi1>) {
// CHECK-NEXT:    loop.parallel %t < 1024 mapping thread.x {
// CHECK-NEXT:      %v = memref.load %x[%t] : memref<1024xi32>
// CHECK-NEXT:      %z = arith.constant 0 : i32
// CHECK-NEXT:      %b = arith.cmpi sgt, %v, %z : i32
// CHECK-NEXT:      memref.store %b, %m[%t] : memref<1024xi1>
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.parallel %u < 512 mapping thread.x {
// CHECK-NEXT:      %c0 = arith.constant 0 : i32
// CHECK-NEXT:      memref.store %c0, %x[%u] : memref<1024xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "loop.kernel"() <{sym_name = "siblings"
// GENERIC-SAME:  , function_type = (memref<1024xi32>, memref<1024xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1024xi32>, %m: memref<1024xi1>):
// GENERIC-NEXT:    "loop.parallel"() <{upper_bound = 1024 : i64, mapping = "thread.x"}> ({
// GENERIC-NEXT:    ^bb0(%t: index):
// GENERIC-NEXT:      %v = "memref.load"(%x, %t) : (memref<1024xi32>, index) -> i32
// GENERIC-NEXT:      %z = "arith.constant"() <{value = 0 : i32}> : () -> i32
// GENERIC-NEXT:      %b = "arith.cmpi"(%v, %z) <{predicate = 4 : i64}> : (i32, i32) -> i1
// GENERIC-NEXT:      "memref.store"(%b, %m, %t) : (i1, memref<1024xi1>, index) -> ()
// GENERIC-NEXT:      "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "loop.parallel"() <{upper_bound = 512 : i64, mapping = "thread.x"}> ({
// GENERIC-NEXT:    ^bb0(%u: index):
// GENERIC-NEXT:      %c0 = "arith.constant"() <{value = 0 : i32}> : () -> i32
// GENERIC-NEXT:      "memref.store"(%c0, %x, %u) : (i32, memref<1024xi32>, index) -> ()
// GENERIC-NEXT:      "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "loop.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
loop.kernel @siblings(%x: memref<1024xi32>, %m: memref<1024xi1>) {
  loop.parallel %t < 1024 mapping thread.x {
    %v = memref.load %x[%t] : memref<1024xi32>
    %z = arith.constant 0 : i32
    %b = arith.cmpi sgt, %v, %z : i32
    memref.store %b, %m[%t] : memref<1024xi1>
  }
  loop.parallel %u < 512 mapping thread.x {
    %c0 = arith.constant 0 : i32
    memref.store %c0, %x[%u] : memref<1024xi32>
  }
  loop.return
}

// A kernel without arguments; parallel loops with an empty body, one with its (optional)
// terminator written out.
// CHECK-LABEL: loop.kernel @empty() {
// CHECK-NEXT:    loop.parallel %i < 1 {
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.parallel %j < 7 {
// CHECK-NEXT:    }
// CHECK-NEXT:    loop.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "loop.kernel"() <{sym_name = "empty"
// GENERIC-SAME:  , function_type = () -> ()}> ({
// GENERIC-NEXT:    "loop.parallel"() <{upper_bound = 1 : i64}> ({
// GENERIC-NEXT:    ^bb0(%i: index):
// GENERIC-NEXT:      "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "loop.parallel"() <{upper_bound = 7 : i64}> ({
// GENERIC-NEXT:    ^bb0(%j: index):
// GENERIC-NEXT:      "loop.yield"() : () -> ()
// GENERIC-NEXT:    }) : () -> ()
// GENERIC-NEXT:    "loop.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
loop.kernel @empty() {
  loop.parallel %i < 1 {
  }
  loop.parallel %j < 7 {
    loop.yield
  }
  loop.return
}

// Host side: launches of a loop kernel (same and reinterpreted shapes) and of an llvm.func kernel.
// CHECK-LABEL: llvm.func @lowered(%p: !llvm.ptr, %q: !llvm.ptr) {
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "llvm.func"() <{unnamed_addr = 0 : i64, sym_name = "lowered"
// GENERIC-SAME:  , function_type = !llvm.func<void (!llvm.ptr, !llvm.ptr)>, CConv = #llvm.cconv<ccc>, linkage = #llvm.linkage<"external">, visibility_ = 0 : i64}> ({
// GENERIC-NEXT:  ^bb0(%p: !llvm.ptr, %q: !llvm.ptr):
// GENERIC-NEXT:    "llvm.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
llvm.func @lowered(%p: !llvm.ptr, %q: !llvm.ptr) {
  llvm.return
}

// CHECK-LABEL: func.func @host(%x: memref<1024xf32>, %y: memref<32x32xf32>, %i: memref<4xi32>) {
// CHECK-NEXT:    loop.launch @add(%x, %x) : memref<1024xf32>, memref<1024xf32>
// CHECK-NEXT:    loop.launch @add(%y, %x) : memref<32x32xf32>, memref<1024xf32>
// CHECK-NEXT:    loop.launch @lowered(%x, %i) : memref<1024xf32>, memref<4xi32>
// CHECK-NEXT:    loop.launch @empty()
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "host"
// GENERIC-SAME:  , function_type = (memref<1024xf32>, memref<32x32xf32>, memref<4xi32>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1024xf32>, %y: memref<32x32xf32>, %i: memref<4xi32>):
// GENERIC-NEXT:    "loop.launch"(%x, %x) <{kernel = @add}> : (memref<1024xf32>, memref<1024xf32>) -> ()
// GENERIC-NEXT:    "loop.launch"(%y, %x) <{kernel = @add}> : (memref<32x32xf32>, memref<1024xf32>) -> ()
// GENERIC-NEXT:    "loop.launch"(%x, %i) <{kernel = @lowered}> : (memref<1024xf32>, memref<4xi32>) -> ()
// GENERIC-NEXT:    "loop.launch"() <{kernel = @empty}> : () -> ()
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @host(%x: memref<1024xf32>, %y: memref<32x32xf32>, %i: memref<4xi32>) {
  loop.launch @add(%x, %x) : memref<1024xf32>, memref<1024xf32>
  loop.launch @add(%y, %x) : memref<32x32xf32>, memref<1024xf32>
  loop.launch @lowered(%x, %i) : memref<1024xf32>, memref<4xi32>
  loop.launch @empty()
  func.return
}

// A collective across the groups of 16 consecutive threads (mask 15) of a 64-thread loop.
// CHECK-LABEL: loop.kernel @group_sum(%x: memref<64xf32>, %out: memref<64xf32>) {
// CHECK:             %s = loop.all_reduce %v mask 15 : f32 {
// CHECK-NEXT:        ^bb0(%l: f32, %r: f32):
// CHECK-NEXT:          %c = arith.addf %l, %r : f32
// CHECK-NEXT:          loop.yield %c : f32
// CHECK-NEXT:        }
// GENERIC:           %s = "loop.all_reduce"(%v) <{mask = 15 : i64}> ({
loop.kernel @group_sum(%x: memref<64xf32>, %out: memref<64xf32>) {
  loop.parallel %b < 1 mapping block.x {
    loop.parallel %t < 64 mapping thread.x {
      %v = memref.load %x[%t] : memref<64xf32>
      %s = loop.all_reduce %v mask 15 : f32 {
      ^bb0(%l: f32, %r: f32):
        %c = arith.addf %l, %r : f32
        loop.yield %c : f32
      }
      memref.store %s, %out[%t] : memref<64xf32>
    }
  }
  loop.return
}

// A tensor-core step of a warp: 4 A and 2 B registers (pairs of f16 or bf16), 4 f32 accumulators;
// the TF32 step m16n8k8 takes f32 registers, which loop.round_tf32 rounds.
// CHECK-LABEL: loop.kernel @mma
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = loop.mma_sync m16n8k16 (%a, %a, %a, %a) * (%b, %b) + (%z, %z, %z, %z) : vector<2xbf16> -> f32
// CHECK:         %r = loop.round_tf32 %f : f32
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = loop.mma_sync m16n8k8 (%r, %r, %r, %r) * (%r, %r) + (%z, %z, %z, %z) : f32 -> f32
loop.kernel @mma(%x: memref<64xbf16>, %y: memref<64xf32>) {
  loop.parallel %t < 64 mapping thread.x {
    %a = vector.load %x[%t] : memref<64xbf16>, vector<2xbf16>
    %b = vector.load %x[%t] : memref<64xbf16>, vector<2xbf16>
    %z = arith.constant 0.0 : f32
    %d:4 = loop.mma_sync m16n8k16 (%a, %a, %a, %a) * (%b, %b) + (%z, %z, %z, %z) : vector<2xbf16> -> f32
    %f = memref.load %y[%t] : memref<64xf32>
    %r = loop.round_tf32 %f : f32
    %e:4 = loop.mma_sync m16n8k8 (%r, %r, %r, %r) * (%r, %r) + (%z, %z, %z, %z) : f32 -> f32
  }
  loop.return
}

// A warp-collective fragment load: four 8x8 matrices of f16, lane l addressing a row of 8.
// CHECK-LABEL: loop.kernel @ldmatrix
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = loop.ldmatrix x4 %s[%t, %c0] : memref<32x24xf16, 3 : i64> -> vector<2xf16>
// CHECK:         %{{.*}}, %{{.*}} = loop.ldmatrix x2 trans %s[%t, %c0] : memref<32x24xf16, 3 : i64> -> vector<2xf16>
// GENERIC:       "loop.ldmatrix"(%{{.*}}, %{{.*}}, %{{.*}}) <{count = 4 : i64}> : (memref<32x24xf16, 3 : i64>, index, index) -> (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>)
loop.kernel @ldmatrix() {
  %s = memref.alloca() : memref<32x24xf16, 3>
  loop.parallel %t < 32 mapping thread.x {
    %c0 = arith.constant 0 : index
    %a:4 = loop.ldmatrix x4 %s[%t, %c0] : memref<32x24xf16, 3> -> vector<2xf16>
    %b:2 = loop.ldmatrix x2 trans %s[%t, %c0] : memref<32x24xf16, 3> -> vector<2xf16>
  }
  loop.return
}

// A warpgroup product with A from registers (FlashAttention-3's P V): 4 vector<2xf16> per 16 of K,
// B a 16 x 8 block of shared memory; the generic form has no lhs buffer (segment 0 empty).
// CHECK-LABEL: loop.kernel @wgmma_register_a
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = loop.wgmma m64n8k16 (%a, %a, %a, %a), %s[%c0, %c0], (%z, %z, %z, %z) : memref<16x8xf16, 3 : i64>
// GENERIC:       "loop.wgmma"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{n = 8 : i64, k = 16 : i64, operandSegmentSizes = array<i32: 0, 0, 4, 1, 2, 4>}>
loop.kernel @wgmma_register_a(%x: memref<256xf16>) {
  %s = memref.alloca() : memref<16x8xf16, 3>
  loop.parallel %t < 128 mapping thread.x {
    %c0 = arith.constant 0 : index
    %z = arith.constant 0.0 : f32
    %a = vector.load %x[%t] : memref<256xf16>, vector<2xf16>
    %d:4 = loop.wgmma m64n8k16 (%a, %a, %a, %a), %s[%c0, %c0], (%z, %z, %z, %z) : memref<16x8xf16, 3>
  }
  loop.return
}

// mbarriers and a bulk tensor copy: one thread initializes the barrier, announces the box's bytes
// and copies a 64 x 64 box of %a into stage %s; the warps' lanes meet (warp_sync) before an
// arrival; every thread waits on the phase of parity 0.
// CHECK-LABEL: loop.kernel @tma
// CHECK:         loop.mbarrier_init %bars[%c0], 1 : memref<2xi64, 3 : i64>
// CHECK:         loop.mbarrier_arrive %bars[%c0] expect_tx 8192 : memref<2xi64, 3 : i64>
// CHECK:         loop.tma_load %a[%t, %c0] to %stages[%c1, %c0, %c0], %bars[%c0] : memref<128x64xf16> to memref<2x64x64xf16, 3 : i64>, memref<2xi64, 3 : i64>
// CHECK:         loop.warp_sync
// CHECK-NEXT:    loop.mbarrier_arrive %bars[%c1] : memref<2xi64, 3 : i64>
// CHECK:         loop.mbarrier_wait %bars[%c0], %c0 : memref<2xi64, 3 : i64>
// GENERIC:       "loop.mbarrier_arrive"(%{{.*}}, %{{.*}}) <{expect_tx = 8192 : i64}> : (memref<2xi64, 3 : i64>, index) -> ()
// GENERIC:       "loop.tma_load"(%{{.*}}) <{operandSegmentSizes = array<i32: 1, 2, 1, 3, 1, 1>}>
// GENERIC:       "loop.warp_sync"() : () -> ()
loop.kernel @tma(%a: memref<128x64xf16>) {
  %bars = memref.alloca() : memref<2xi64, 3>
  %stages = memref.alloca() : memref<2x64x64xf16, 3>
  loop.parallel %t < 128 mapping thread.x {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    loop.mbarrier_init %bars[%c0], 1 : memref<2xi64, 3>
    loop.mbarrier_arrive %bars[%c0] expect_tx 8192 : memref<2xi64, 3>
    loop.tma_load %a[%t, %c0] to %stages[%c1, %c0, %c0], %bars[%c0] : memref<128x64xf16> to memref<2x64x64xf16, 3>, memref<2xi64, 3>
    loop.warp_sync
    loop.mbarrier_arrive %bars[%c1] : memref<2xi64, 3>
    loop.mbarrier_wait %bars[%c0], %c0 : memref<2xi64, 3>
  }
  loop.return
}
