// The whole CPU pipeline on a small model: graph-plan-memory places the three matmuls' outputs in
// one arena, where %h3 takes the bytes of %h1 (dead by then); the compiled program runs out of it
// and matches the graph interpreter (mlc-run exits 1 otherwise).
// RUN: mlc-opt %s -p mlc-lower-to-cpu | filecheck %s
// RUN: mlc-run %s --device cpu --check --seed 5 | filecheck %s --check-prefix=RESULT

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %arena = memref.alloc() {alignment = 256 : i64} : memref<8192xi8>
// CHECK-NEXT:    %[[AT0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[H1:.*]] = memref.view %arena[%[[AT0]]][] : memref<8192xi8> to memref<16x64xf32>
// CHECK-NEXT:    loop.launch @main_0_matmul_relu(%{{.*}}, %{{.*}}, %[[H1]])
// CHECK-NEXT:    %[[AT4096:.*]] = arith.constant 4096 : index
// CHECK-NEXT:    %[[H2:.*]] = memref.view %arena[%[[AT4096]]][] : memref<8192xi8> to memref<16x64xf32>
// CHECK-NEXT:    loop.launch @main_1_matmul(%[[H1]], %{{.*}}, %[[H2]])
// CHECK-NEXT:    %[[H3:.*]] = memref.view %arena[%[[AT0]]][] : memref<8192xi8> to memref<16x32xf32>
// CHECK-NEXT:    loop.launch @main_2_matmul(%[[H2]], %{{.*}}, %[[H3]])
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() {alignment = 256 : i64} : memref<16x32xf32>
// CHECK-NEXT:    loop.launch @main_3_{{.*}}(%[[H3]], %[[OUT]])
// CHECK-NEXT:    func.return %[[OUT]] : memref<16x32xf32>

// RESULT:      @main on cpu: 4 kernel launches
// RESULT:        check #0: OK
func.func @main(%x: tensor<16x32xf32>, %w1: tensor<32x64xf32>, %w2: tensor<64x64xf32>, %w3: tensor<64x32xf32>) -> tensor<16x32xf32> {
  %m1 = graph.matmul %x, %w1 : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %h1 = graph.relu %m1 : tensor<16x64xf32>
  %h2 = graph.matmul %h1, %w2 : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
  %h3 = graph.matmul %h2, %w3 : (tensor<16x64xf32>, tensor<64x32xf32>) -> tensor<16x32xf32>
  %p = graph.softmax %h3 axis 1 : tensor<16x32xf32>
  func.return %p : tensor<16x32xf32>
}
