// RUN: mlc-opt %s --split-input-file -p graph-plan-memory,convert-graph-to-tile | filecheck %s
// RUN: mlc-opt %s --split-input-file -p graph-plan-memory,convert-graph-to-tile | mlc-opt --split-input-file | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-graph-to-tile | filecheck %s --check-prefix=GIVEN

// convert-graph-to-tile follows graph-plan-memory's plan: one arena per function, each planned
// intermediate a memref.view of it at its planned offset; returned values are allocations of their
// own. Without a plan (GIVEN, where the input has none), every kernel output is an allocation.

// A chain: each value dies at the next kernel, so two 4 KiB buffers take turns in an 8 KiB arena.
// CHECK-LABEL: func.func @chain
// CHECK-NOT:     mlc.memory_plan
// CHECK-NEXT:    %arena = memref.alloc() {alignment = 256 : i64} : memref<8192xi8>
// CHECK-NEXT:    %[[O0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[E:.*]] = memref.view %arena[%[[O0]]][] : memref<8192xi8> to memref<1024xf32>
// CHECK-NEXT:    tile.launch @chain_0_exp(%x, %[[E]])
// CHECK-NEXT:    %[[O1:.*]] = arith.constant 4096 : index
// CHECK-NEXT:    %[[N:.*]] = memref.view %arena[%[[O1]]][] : memref<8192xi8> to memref<1024xf32>
// CHECK-NEXT:    tile.launch @chain_1_neg(%[[E]], %[[N]])
// CHECK-NEXT:    %[[O2:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[A:.*]] = memref.view %arena[%[[O2]]][] : memref<8192xi8> to memref<1024xf32>
// CHECK-NEXT:    tile.launch @chain_2_abs(%[[N]], %[[A]])
// CHECK-NEXT:    %[[R:.*]] = memref.alloc() {alignment = 256 : i64} : memref<1024xf32>
// CHECK-NEXT:    tile.launch @chain_3_relu(%[[A]], %[[R]])
// CHECK-NEXT:    func.return %[[R]] : memref<1024xf32>

// GIVEN-LABEL: func.func @chain
// GIVEN-NOT:     memref.view
// GIVEN-COUNT-4: memref.alloc() {alignment = 256 : i64} : memref<1024xf32>
// GIVEN-NOT:     memref.view
// GIVEN:         func.return
func.func @chain(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = graph.exp %x : tensor<1024xf32>
  %1 = graph.neg %0 : tensor<1024xf32>
  %2 = graph.abs %1 : tensor<1024xf32>
  %3 = graph.relu %2 : tensor<1024xf32>
  func.return %3 : tensor<1024xf32>
}

// -----

// Fusions: the plan places a fusion's result, the kernel writes what the fusion yields. A reshape
// outside every fusion is a view of its operand's buffer: %flat passes the same view. The second
// result is also returned, so it is the caller's buffer, not the arena's.
// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %arena = memref.alloc() {alignment = 256 : i64} : memref<256xi8>
// CHECK-NEXT:    %[[O:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[H:.*]] = memref.view %arena[%[[O]]][] : memref<256xi8> to memref<4x8xf32>
// CHECK-NEXT:    tile.launch @first(%x, %[[H]])
// CHECK-NEXT:    %[[Y:.*]] = memref.alloc() {alignment = 256 : i64} : memref<32xf32>
// CHECK-NEXT:    tile.launch @second(%[[H]], %[[Y]])
// CHECK-NEXT:    %[[Z:.*]] = memref.alloc() {alignment = 256 : i64} : memref<32xf32>
// CHECK-NEXT:    tile.launch @third(%[[H]], %[[Y]], %[[Z]])
// CHECK-NEXT:    func.return %[[Z]], %[[Y]]
func.func @fused(%x: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
  %h = graph.fusion elementwise "first" (%a = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = graph.exp %a : tensor<4x8xf32>
    %1 = graph.relu %0 : tensor<4x8xf32>
    graph.yield %1 : tensor<4x8xf32>
  }
  %flat = graph.reshape %h : tensor<4x8xf32> to tensor<32xf32>
  %y = graph.fusion elementwise "second" (%b = %flat : tensor<32xf32>) -> tensor<32xf32> {
    %2 = graph.neg %b : tensor<32xf32>
    graph.yield %2 : tensor<32xf32>
  }
  %z = graph.fusion elementwise "third" (%c = %flat : tensor<32xf32>, %d = %y : tensor<32xf32>) -> tensor<32xf32> {
    %3 = graph.add %c, %d : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
    graph.yield %3 : tensor<32xf32>
  }
  func.return %z, %y : tensor<32xf32>, tensor<32xf32>
}

// -----

// A plan written by hand is honoured as written (GIVEN): 1 KiB, %b at 512, %a at 0 and %c over
// %a's bytes once %a is dead (graph-plan-memory, in the CHECK run, puts %a at 0 too).
// GIVEN-LABEL: func.func @edited
// GIVEN-NEXT:    %arena = memref.alloc() {alignment = 256 : i64} : memref<1024xi8>
// GIVEN:         memref.view %arena[%{{.*}}][] : memref<1024xi8> to memref<64xf32>
// GIVEN:         tile.launch @edited_0_exp
// GIVEN:         %[[O:.*]] = arith.constant 512 : index
// GIVEN-NEXT:    memref.view %arena[%[[O]]][] : memref<1024xi8> to memref<64xf32>
// GIVEN-NEXT:    tile.launch @edited_1_neg
// GIVEN:         %[[Z:.*]] = arith.constant 0 : index
// GIVEN-NEXT:    memref.view %arena[%[[Z]]][] : memref<1024xi8> to memref<64xf32>
// GIVEN-NEXT:    tile.launch @edited_2_abs
// CHECK-LABEL: func.func @edited
// CHECK-NEXT:    %arena = memref.alloc() {alignment = 256 : i64} : memref<512xi8>
func.func @edited(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 1024 : i64, alignment = 256 : i64}} {
  %a = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 256 : i64}} : tensor<64xf32>
  %b = graph.neg %a {mlc.buffer = {offset = 512 : i64, size = 256 : i64}} : tensor<64xf32>
  %c = graph.abs %b {mlc.buffer = {offset = 0 : i64, size = 256 : i64}} : tensor<64xf32>
  %d = graph.relu %c : tensor<64xf32>
  func.return %d : tensor<64xf32>
}

// -----

// Nothing to plan (every kernel output is returned): no arena.
// CHECK-LABEL: func.func @returned
// CHECK-NOT:     memref<0xi8>
// CHECK-NOT:     memref.view
// CHECK:         func.return
func.func @returned(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0 = graph.exp %x : tensor<16xf32>
  %1 = graph.neg %0 : tensor<16xf32>
  func.return %0, %1 : tensor<16xf32>, tensor<16xf32>
}
