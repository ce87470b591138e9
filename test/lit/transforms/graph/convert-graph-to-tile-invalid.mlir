// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-graph-to-tile

// A fusion group written by hand (or edited) must be one kernel; each reason is named.
func.func @two_matmuls(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = graph.fusion matmul "both" (%a = %x : tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = graph.matmul %a, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    // expected-error @+1 {{'graph.matmul' op the fusion group 'both' cannot be one kernel: one kernel computes one matmul}}
    %1 = graph.matmul %0, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    graph.yield %1 : tensor<8x8xf32>
  }
  func.return %r : tensor<8x8xf32>
}

// -----

func.func @different_axes(%x: tensor<8x8xf32>) -> (tensor<8x1xf32>, tensor<1x8xf32>) {
  %r, %s = graph.fusion reduction "two_axes" (%a = %x : tensor<8x8xf32>) -> (tensor<8x1xf32>, tensor<1x8xf32>) {
    %0 = graph.reduce_sum %a axes [1] keepdims true : tensor<8x8xf32> to tensor<8x1xf32>
    // expected-error @+1 {{the fusion group 'two_axes' cannot be one kernel: the reductions of one kernel must reduce the same axes of the same shape}}
    %1 = graph.reduce_sum %a axes [0] keepdims true : tensor<8x8xf32> to tensor<1x8xf32>
    graph.yield %0, %1 : tensor<8x1xf32>, tensor<1x8xf32>
  }
  func.return %r, %s : tensor<8x1xf32>, tensor<1x8xf32>
}

// -----

func.func @unrelated_epilogue(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %r, %s = graph.fusion matmul "unrelated" (%a = %x : tensor<8x8xf32>, %b = %y : tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    // expected-error @+1 {{the fusion group 'unrelated' cannot be one kernel: its elementwise epilogue must read the product, have the product's shape and hold no reduction}}
    %0 = graph.matmul %a, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = graph.exp %b : tensor<8x8xf32>
    graph.yield %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
  }
  func.return %r, %s : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

func.func @reshape_inside(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %r = graph.fusion elementwise "reshaped" (%a = %x : tensor<4x8xf32>) -> tensor<32xf32> {
    %0 = graph.exp %a : tensor<4x8xf32>
    // expected-error @+1 {{the fusion group 'reshaped' cannot be one kernel: a reshape can only read a value from outside its group}}
    %1 = graph.reshape %0 : tensor<4x8xf32> to tensor<32xf32>
    %2 = graph.relu %1 : tensor<32xf32>
    graph.yield %2 : tensor<32xf32>
  }
  func.return %r : tensor<32xf32>
}

// -----

func.func @two_domains(%x: tensor<4x8xf32>, %y: tensor<3xf32>) -> (tensor<4x8xf32>, tensor<3xf32>) {
  %r, %s = graph.fusion elementwise "two_domains" (%a = %x : tensor<4x8xf32>, %b = %y : tensor<3xf32>) -> (tensor<4x8xf32>, tensor<3xf32>) {
    %0 = graph.exp %a : tensor<4x8xf32>
    // expected-error @+1 {{the fusion group 'two_domains' cannot be one kernel: its result does not broadcast with the group's shape [4, 8]}}
    %1 = graph.exp %b : tensor<3xf32>
    graph.yield %0, %1 : tensor<4x8xf32>, tensor<3xf32>
  }
  func.return %r, %s : tensor<4x8xf32>, tensor<3xf32>
}

// -----

// A memory plan that does not fit the function is refused, never followed: each way is named.
func.func @stale_size(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 512 : i64, alignment = 256 : i64}} {
  // expected-error @+1 {{the memory plan gives the result 512 bytes, but its type tensor<64xf32> has 256; the plan is stale (run graph-plan-memory again)}}
  %a = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 512 : i64}} : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}

// -----

func.func @misaligned(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 512 : i64, alignment = 256 : i64}} {
  // expected-error @+1 {{the memory plan puts the result at offset 128, not a multiple of the plan's alignment (256)}}
  %a = graph.exp %x {mlc.buffer = {offset = 128 : i64, size = 256 : i64}} : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}

// -----

func.func @between_elements(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 512 : i64, alignment = 2 : i64}} {
  // expected-error @+1 {{the memory plan puts the result at offset 2, not a multiple of its element size (4)}}
  %a = graph.exp %x {mlc.buffer = {offset = 2 : i64, size = 256 : i64}} : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}

// -----

func.func @past_the_arena(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 256 : i64, alignment = 256 : i64}} {
  // expected-error @+1 {{the memory plan puts the result at bytes [256, 512), past the arena's 256 bytes}}
  %a = graph.exp %x {mlc.buffer = {offset = 256 : i64, size = 256 : i64}} : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}

// -----

// %a is still read by the add when %b is written over it.
func.func @overlapping(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 256 : i64, alignment = 256 : i64}} {
  // expected-error @+1 {{the memory plan puts this value (written by kernel 'overlapping_0_exp') at bytes [0, 256) of the arena and the 'graph.neg' %b that kernel 'overlapping_1_neg' writes at bytes [0, 256), but both are live during kernels 'overlapping_1_neg' to 'overlapping_2_add'; the plan does not fit the kernels (run graph-plan-memory again)}}
  %a = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 256 : i64}} : tensor<64xf32>
  %b = graph.neg %a {mlc.buffer = {offset = 0 : i64, size = 256 : i64}} : tensor<64xf32>
  %c = graph.add %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  func.return %c : tensor<64xf32>
}

// -----

func.func @reshape_elsewhere(%x: tensor<64xf32>) -> tensor<8x8xf32> attributes {mlc.memory_plan = {arena_bytes = 512 : i64, alignment = 256 : i64}} {
  %a = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 256 : i64}} : tensor<64xf32>
  // expected-error @+1 {{a reshape shares its operand's bytes, but the memory plan puts it at offset 256 and its operand at offset 0}}
  %r = graph.reshape %a {mlc.buffer = {offset = 256 : i64, size = 256 : i64}} : tensor<64xf32> to tensor<8x8xf32>
  %b = graph.neg %r : tensor<8x8xf32>
  func.return %b : tensor<8x8xf32>
}

// -----

func.func @not_an_entry(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 512 : i64, alignment = 256 : i64}} {
  // expected-error @+1 {{'mlc.buffer' needs a non-negative integer 'size', got {offset = 0 : i64}}}
  %a = graph.exp %x {mlc.buffer = {offset = 0 : i64}} : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}

// -----

// expected-error @+1 {{'mlc.memory_plan': alignment must be a positive power of two, got 48}}
func.func @bad_alignment(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 512 : i64, alignment = 48 : i64}} {
  %a = graph.exp %x : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}

// -----

// expected-error @+1 {{'mlc.memory_plan': the arena memref<1152921504606846976xi8> has 1152921504606846976 elements (1 EiB), more than any target of mlc can address}}
func.func @huge_arena(%x: tensor<64xf32>) -> tensor<64xf32> attributes {mlc.memory_plan = {arena_bytes = 1152921504606846976 : i64, alignment = 256 : i64}} {
  %a = graph.exp %x : tensor<64xf32>
  %b = graph.neg %a : tensor<64xf32>
  func.return %b : tensor<64xf32>
}
