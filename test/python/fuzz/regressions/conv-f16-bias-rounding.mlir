// Found by random programs (issue 15): an f16 convolution decomposed into an f16 matmul rounded
// its product to f16 before the bias was added; with cancellation between them the result was
// off by far more than one rounding. The decomposition now computes in f32 and rounds once.
func.func @main(%x: tensor<2x1x6x6xf16>, %w: tensor<1x1x3x3xf16>, %b: tensor<1xf16>) -> tensor<2x1x3x4xf16> {
  %c = graph.conv2d %x, %w, %b strides [2, 1] pads [1, 0, 1, 0] dilations [1, 1] group 1 : (tensor<2x1x6x6xf16>, tensor<1x1x3x3xf16>, tensor<1xf16>) -> tensor<2x1x3x4xf16>
  func.return %c : tensor<2x1x3x4xf16>
}
