// RUN: mlc-opt %s --split-input-file -p 'convert-graph-to-tile{target=cpu}' | filecheck %s

// The CPU's matmul block (matmul_blocks.cpu_tile): the tallest of 512 and 256 rows that still
// makes 16 programs, else 128x128x16; each dimension then cut to the matrix.

// 1024^3: 512-row blocks make 2 x 8 = 16 programs.
// CHECK-LABEL: tile.kernel @f_0_matmul
// CHECK-SAME: grid [2, 8]
// CHECK-SAME: mlc.matmul_tile = array<i64: 512, 128, 16>
func.func @f(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %0 = graph.matmul %a, %b : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  func.return %0 : tensor<1024x1024xf32>
}

// -----

// 256 rows by 4096 columns: 512 rows would be cut to 256 anyway; 1 x 32 programs.
// CHECK-LABEL: tile.kernel @f_0_matmul
// CHECK-SAME: grid [1, 32]
// CHECK-SAME: mlc.matmul_tile = array<i64: 256, 128, 16>
func.func @f(%a: tensor<256x64xf32>, %b: tensor<64x4096xf32>) -> tensor<256x4096xf32> {
  %0 = graph.matmul %a, %b : (tensor<256x64xf32>, tensor<64x4096xf32>) -> tensor<256x4096xf32>
  func.return %0 : tensor<256x4096xf32>
}

// -----

// 512^3: 512 rows make 4 programs, 256 rows 8: the 128-row block keeps 16.
// CHECK-LABEL: tile.kernel @f_0_matmul
// CHECK-SAME: grid [4, 4]
// CHECK-SAME: mlc.matmul_tile = array<i64: 128, 128, 16>
func.func @f(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %0 = graph.matmul %a, %b : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  func.return %0 : tensor<512x512xf32>
}

// -----

// A batch counts: 4 products of 512 x 512 with 512-row blocks make 4 x 1 x 4 programs.
// CHECK-LABEL: tile.kernel @f_0_matmul
// CHECK-SAME: mlc.matmul_tile = array<i64: 512, 128, 16>
func.func @f(%a: tensor<4x512x64xf32>, %b: tensor<4x64x512xf32>) -> tensor<4x512x512xf32> {
  %0 = graph.matmul %a, %b : (tensor<4x512x64xf32>, tensor<4x64x512xf32>) -> tensor<4x512x512xf32>
  func.return %0 : tensor<4x512x512xf32>
}
