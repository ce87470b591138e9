// Causal attention chains: PyTorch's `is_causal` (graph.where of a key <= query comparison of two
// index vectors) is recognised as a causal mask, absorbed into the chain, computed in the kernel
// from positions (tile.range) and the key loop ends at the diagonal of each row block.
// RUN: mlc-opt %s -p graph-fuse | filecheck %s
// RUN: mlc-opt %s -p graph-fuse{compute-model=gpu},convert-graph-to-tile | filecheck %s --check-prefix=TILE
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile,convert-tile-to-loop{tensor-cores=true},loop-promote-shared' | filecheck %s --check-prefix=STAGED

// The comparison and its index vectors are part of the region (nothing reads the [40, 320] mask).
// CHECK-LABEL: func.func @causal
// CHECK:         graph.fusion chain "causal_chain0_attention" (%{{.*}} = %q : tensor<2x40x64xf16>, %{{.*}} = %kt : tensor<2x64x320xf16>, %{{.*}} = %scale : tensor<f16>, %{{.*}} = %minus_infinity : tensor<f16>, %{{.*}} = %v : tensor<2x320x64xf16>)
// CHECK:           graph.constant dense<{{.*}}> : tensor<40x1xi32>
// CHECK:           graph.constant dense<{{.*}}> : tensor<1x320xi32>
// CHECK:           graph.cmp ge,
// CHECK:           graph.where

// The kernel reads no mask; the key loop ends at min(N, max(0, m + BM + 0)); the mask is
// key <= query, from the positions.
// TILE:          tile.kernel @causal_chain0_attention(%q: memref<2x40x64xf16>, %kt: memref<2x64x320xf16>, %v: memref<2x320x64xf16>, %o: memref<2x40x64xf16>)
// TILE:            %[[END:.*]] = arith.addi %m, %{{.*}} : index
// TILE:            %[[SEEN:.*]] = arith.maxsi %[[END]], %{{.*}} : index
// TILE:            %keys_visited = arith.minsi %[[SEEN]], %{{.*}} : index
// TILE:            scf.for %n = %{{.*}} to %keys_visited step
// TILE:              %query = tile.range %m axis 1 : !tile.tile<1x64x1xindex>
// TILE:              %key = tile.range %n axis 2 : !tile.tile<1x1x64xindex>
// TILE:              tile.map
// TILE:                arith.cmpi sle
// TILE:                arith.select

// The staged K and V blocks are pipelined over the computed trip count (the last counter
// computed before the loop clamps the copies ahead).
// STAGED:        %kt_shared = memref.alloca() {mlc.promoted = "%kt: 1x64x64 {{.*}} in each iteration of %n {{.*}}; 3 stages of async copies"
// STAGED:        %v_shared = memref.alloca() {mlc.promoted = "%v: 1x64x64 {{.*}} in each iteration of %n {{.*}}; 3 stages of async copies"
// STAGED:          %keys_visited = arith.minsi
// STAGED:          %last = arith.addi
// STAGED:          loop.async_copy
// STAGED:          arith.minui %{{.*}}, %last
// STAGED:          scf.for %n = %{{.*}} to %keys_visited step
// STAGED-NEXT:       loop.async_wait 1
func.func @causal(%q: tensor<2x40x64xf16>, %kt: tensor<2x64x320xf16>, %v: tensor<2x320x64xf16>) -> tensor<2x40x64xf16> {
  %s = graph.matmul %q, %kt : (tensor<2x40x64xf16>, tensor<2x64x320xf16>) -> tensor<2x40x320xf16>
  %scale = graph.constant dense<8.0> : tensor<f16>
  %scaled = graph.div %s, %scale : (tensor<2x40x320xf16>, tensor<f16>) -> tensor<2x40x320xf16>
  %queries = graph.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13], [14], [15], [16], [17], [18], [19], [20], [21], [22], [23], [24], [25], [26], [27], [28], [29], [30], [31], [32], [33], [34], [35], [36], [37], [38], [39]]> : tensor<40x1xi32>
  %keys = graph.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319]]> : tensor<1x320xi32>
  %allowed = graph.cmp ge, %queries, %keys : (tensor<40x1xi32>, tensor<1x320xi32>) -> tensor<40x320xi1>
  %minus_infinity = graph.constant dense<0xFC00> : tensor<f16>
  %masked = graph.where %allowed, %scaled, %minus_infinity : (tensor<40x320xi1>, tensor<2x40x320xf16>, tensor<f16>) -> tensor<2x40x320xf16>
  %p = graph.softmax %masked axis -1 : tensor<2x40x320xf16>
  %o = graph.matmul %p, %v : (tensor<2x40x320xf16>, tensor<2x320x64xf16>) -> tensor<2x40x64xf16>
  func.return %o : tensor<2x40x64xf16>
}
