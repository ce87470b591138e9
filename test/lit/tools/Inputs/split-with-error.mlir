func.func @ok() {
  func.return
}

// -----

// The add below is on line 9.
func.func @bad(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  %0 = graph.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @also_ok() {
  func.return
}
