// A fused elementwise block, as it appears after a matmul in an MLP: bias add, tanh-GELU,
// scaling and a residual add. mlc lowers it to a single kernel (graph -> tile -> loop ->
// mlc_gpu -> PTX, or -> llvm for the CPU).
//
//   mlc-run examples/mlp_activation.mlir --check --bench
func.func @mlp_activation(%h: tensor<512x1024xf32>, %bias: tensor<1024xf32>,
                          %residual: tensor<512x1024xf32>) -> tensor<512x1024xf32> {
  %scale = graph.constant dense<0.5> : tensor<f32>
  %0 = graph.add %h, %bias : (tensor<512x1024xf32>, tensor<1024xf32>) -> tensor<512x1024xf32>
  %1 = graph.gelu %0 {approximate = "tanh"} : tensor<512x1024xf32>
  %2 = graph.mul %1, %scale : (tensor<512x1024xf32>, tensor<f32>) -> tensor<512x1024xf32>
  %3 = graph.add %2, %residual : (tensor<512x1024xf32>, tensor<512x1024xf32>) -> tensor<512x1024xf32>
  func.return %3 : tensor<512x1024xf32>
}
