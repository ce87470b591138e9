// Found by random programs (issue 12): an i1 condition broadcast along an axis is reused and
// staged in shared memory by loop-promote-shared with 16-element vector stores; LLVM packs a
// <16 x i1> into 16 bits in memory while mlc keeps one byte per boolean, so the kernel read the
// wrong conditions (GPU only: max error 5.6 on an H100). Vectors of i1 are now accessed as i8.
func.func @main(%c: tensor<8x12x1x18xi1>, %v: tensor<8x12x1x18xf32>, %x: tensor<8x12x18x18xf32>) -> tensor<8x12x18x18xf32> {
  %0 = graph.where %c, %v, %x : (tensor<8x12x1x18xi1>, tensor<8x12x1x18xf32>, tensor<8x12x18x18xf32>) -> tensor<8x12x18x18xf32>
  func.return %0 : tensor<8x12x18x18xf32>
}
