// RUN: mlc-opt %s -p graph-fuse,view-op-graph 2>&1 >/dev/null | filecheck %s
// RUN: mlc-opt %s -p graph-fuse --view-op-graph 2>&1 >/dev/null | filecheck %s
// RUN: mlc-opt %s -p graph-fuse --view-op-graph=%t.dot | filecheck %s --check-prefix=IR
// RUN: filecheck %s < %t.dot

// The fusion plan as a picture: one cluster per graph.fusion (a future kernel), titled with its
// name and kind; edges carry the values' types; the IR itself is unchanged. (The reduction takes
// the bias and relu as its producers, so the matmul is a kernel of its own.)
// CHECK-LABEL: digraph "mlp" {
// CHECK:         n0 [label="%x\n8x16xf32", shape=ellipse];
// CHECK:         subgraph cluster_{{[0-9]+}} {
// CHECK-NEXT:      label="mlp_0_matmul (matmul)";
// CHECK-NEXT:      style=rounded;
// CHECK-NEXT:      [[MATMUL:n[0-9]+]] [label="matmul"];
// CHECK-NEXT:    }
// CHECK-NEXT:    subgraph cluster_{{[0-9]+}} {
// CHECK-NEXT:      label="mlp_1_add_relu_reduce_max (reduction)";
// CHECK-NEXT:      style=rounded;
// CHECK-NEXT:      [[ADD:n[0-9]+]] [label="add"];
// CHECK-NEXT:      [[RELU:n[0-9]+]] [label="relu"];
// CHECK-NEXT:      [[MAX:n[0-9]+]] [label="reduce_max"];
// CHECK-NEXT:    }
// CHECK-NEXT:    [[RETURN:n[0-9]+]] [label="return", shape=ellipse];
// CHECK:         n0 -> [[MATMUL]] [label="8x16xf32"];
// CHECK:         [[MATMUL]] -> [[ADD]] [label="8x32xf32"];
// CHECK:         [[MAX]] -> [[RETURN]] [label="8x1xf32"];
// CHECK-NEXT:  }
// IR:            graph.fusion matmul "mlp_0_matmul"
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x1xf32> {
  %0 = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = graph.relu %1 : tensor<8x32xf32>
  %3 = graph.reduce_max %2 axes [1] keepdims true : tensor<8x32xf32> to tensor<8x1xf32>
  func.return %3 : tensor<8x1xf32>
}
