func.func @bad(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{operand #1 (rhs) has element type f16}}
  %0 = graph.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return
}
