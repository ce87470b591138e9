// Compile and run on the CPU with seeded random inputs; every result must match the graph
// interpreter (mlc-run exits 1 otherwise).
// RUN: mlc-run %s --device cpu --check --entry chain | filecheck %s --check-prefix=CHAIN
// RUN: mlc-run %s --device cpu --check --entry mixed --seed 7 | filecheck %s --check-prefix=MIXED

// CHAIN:      @chain on cpu: 1 kernel launch
// CHAIN-NEXT:   result #0: float32[3x1000x7]
// CHAIN-NEXT:   check #0: OK
func.func @chain(%x: tensor<3x1000x7xf32>, %s: tensor<3x1x1xf32>) -> tensor<3x1000x7xf32> {
  %0 = graph.mul %x, %s : (tensor<3x1000x7xf32>, tensor<3x1x1xf32>) -> tensor<3x1000x7xf32>
  %1 = graph.tanh %0 : tensor<3x1000x7xf32>
  %2 = graph.sigmoid %1 : tensor<3x1000x7xf32>
  %3 = graph.sub %2, %x : (tensor<3x1000x7xf32>, tensor<3x1000x7xf32>) -> tensor<3x1000x7xf32>
  func.return %3 : tensor<3x1000x7xf32>
}

// MIXED:      @mixed on cpu: 2 kernel launches
// MIXED:        check #0: OK
// MIXED-NEXT:   check #1: OK
// MIXED-NEXT:   check #2: OK
func.func @mixed(%a: tensor<257xf16>, %i: tensor<256xi32>, %j: tensor<256xi32>) -> (tensor<257xf16>, tensor<256xi1>, tensor<16x16xi32>) {
  %e = graph.exp %a : tensor<257xf16>
  %r = graph.rsqrt %e : tensor<257xf16>
  %gt = graph.cmp ge, %i, %j : (tensor<256xi32>, tensor<256xi32>) -> tensor<256xi1>
  %q = graph.div %i, %j : (tensor<256xi32>, tensor<256xi32>) -> tensor<256xi32>
  %m = graph.reshape %q : tensor<256xi32> to tensor<16x16xi32>
  func.return %r, %gt, %m : tensor<257xf16>, tensor<256xi1>, tensor<16x16xi32>
}
