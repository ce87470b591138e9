// mlc-import-onnx translates an ONNX model (written by a generator at test time) into graph IR.
//
// RUN: %python %S/Inputs/make_onnx_model.py %t.onnx
// RUN: mlc-import-onnx %t.onnx | filecheck %s
// RUN: mlc-import-onnx %t.onnx --entry classify -o %t.mlir && mlc-opt %t.mlir | filecheck %s --check-prefix=ROUND-TRIP
// RUN: mlc-import-onnx %t.onnx --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: %python %S/Inputs/make_onnx_model.py %t.dynamic.onnx dynamic
// RUN: not mlc-import-onnx %t.dynamic.onnx 2>&1 | filecheck %s --check-prefix=DYNAMIC
// RUN: mlc-import-onnx %t.dynamic.onnx --input-shape x=3x2x3 | filecheck %s --check-prefix=FIXED
// RUN: %python %S/Inputs/make_onnx_model.py %t.unsupported.onnx unsupported
// RUN: not mlc-import-onnx %t.unsupported.onnx 2>&1 | filecheck %s --check-prefix=UNMAPPED
// RUN: not mlc-import-onnx %t.missing.onnx 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: %python %S/Inputs/make_onnx_model.py %t.pooling.onnx pooling
// RUN: mlc-import-onnx %t.pooling.onnx | filecheck %s --check-prefix=POOLING

// Values keep their ONNX names; initializers become constants where they are first used.
// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @main(%x: tensor<2x2x3xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:     %flat = graph.reshape %x : tensor<2x2x3xf32> to tensor<2x6xf32>
// CHECK-NEXT:     %w = graph.constant dense<{{\[\[}}-1.000000e+00, {{.*}}]]> : tensor<6x4xf32>
// CHECK-NEXT:     %product = graph.matmul %flat, %w : (tensor<2x6xf32>, tensor<6x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:     %b = graph.constant dense<[5.000000e-01, -5.000000e-01, 2.500000e-01, 0.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:     %biased = graph.add %product, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:     %activated = graph.relu %biased : tensor<2x4xf32>
// CHECK-NEXT:     %y = graph.softmax %activated axis 1 : tensor<2x4xf32>
// CHECK-NEXT:     func.return %y : tensor<2x4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

// The output parses and verifies.
// ROUND-TRIP: func.func @classify(%x: tensor<2x2x3xf32>) -> tensor<2x4xf32> {
// ROUND-TRIP: graph.softmax %activated axis 1 : tensor<2x4xf32>

// GENERIC: "graph.softmax"(%activated) <{axis = 1 : i64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>

// DYNAMIC-NOT: Traceback
// DYNAMIC:     mlc-import-onnx: error: {{.*}}.dynamic.onnx: graph input 'x' has a dynamic dimension 'batch' (dimension 0); mlc needs static shapes
// DYNAMIC-NOT: Traceback

// FIXED: func.func @main(%x: tensor<3x2x3xf32>) -> tensor<3x4xf32> {

// UNMAPPED-NOT: Traceback
// UNMAPPED:     mlc-import-onnx: error: {{.*}}.unsupported.onnx: node #0 'tangent' (Tan): op Tan is not supported by mlc's ONNX importer (opset {{[0-9]+}})
// UNMAPPED-NOT: Traceback

// MISSING: mlc-import-onnx: error: cannot read {{.*}}.missing.onnx: no such file

// A dilated pool is the sum of strided slices of the zero-padded input, divided by the number of
// input elements each window holds (a constant).
// POOLING:      func.func @main(%x: tensor<1x2x5xf32>) -> tensor<1x2x4xf32> {
// POOLING:        %[[ZERO:.*]] = graph.constant dense<0.000000e+00> : tensor<1x1x1xf32>
// POOLING-NEXT:   %[[FILL:.*]] = graph.broadcast %[[ZERO]] : tensor<1x1x1xf32> to tensor<1x2x1xf32>
// POOLING-NEXT:   %[[PADDED:.*]] = graph.concat %[[FILL]], %x axis 2 : (tensor<1x2x1xf32>, tensor<1x2x5xf32>) -> tensor<1x2x6xf32>
// POOLING-NEXT:   %[[FIRST:.*]] = graph.slice %[[PADDED]] starts [0, 0, 0] ends [1, 2, 4] steps [1, 1, 1]
// POOLING-NEXT:   %[[SECOND:.*]] = graph.slice %[[PADDED]] starts [0, 0, 2] ends [1, 2, 6] steps [1, 1, 1]
// POOLING-NEXT:   %[[SUM:.*]] = graph.add %[[FIRST]], %[[SECOND]]
// POOLING-NEXT:   %[[COUNTS:.*]] = graph.constant dense<[1.000000e+00, 2.000000e+00, 2.000000e+00, 2.000000e+00]> : tensor<4xf32>
// POOLING-NEXT:   %y = graph.div %[[SUM]], %[[COUNTS]]
// POOLING-NEXT:   func.return %y : tensor<1x2x4xf32>
