// RUN: mlc-opt %s --split-input-file -p graph-plan-memory | filecheck %s
// Idempotent: a second run recomputes the same plan, and the printed plan reads back.
// RUN: mlc-opt %s --split-input-file -p graph-plan-memory,graph-plan-memory | filecheck %s
// RUN: mlc-opt %s --split-input-file -p graph-plan-memory | mlc-opt --split-input-file -p graph-plan-memory | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'graph-plan-memory{alignment=64}' | filecheck %s --check-prefix=ALIGN64
// RUN: mlc-opt %s --split-input-file -p 'graph-plan-memory{report=true}' 2> %t.stderr > /dev/null
// RUN: filecheck %s --check-prefix=REPORT --input-file=%t.stderr
// RUN: not mlc-opt %s -p 'graph-plan-memory{alignment=48}' 2>&1 | filecheck %s --check-prefix=BAD

// BAD: mlc-opt: error: pass 'graph-plan-memory': alignment must be a positive power of two, got 48

// A chain: each value dies at the next op, so two buffers take turns (an op never writes over its
// own operand). The returned value is the caller's buffer and is not planned.
// CHECK-LABEL: func.func @chain(%x: tensor<1024xf32>) -> tensor<1024xf32>
// CHECK-SAME:    attributes {mlc.memory_plan = {arena_bytes = 8192 : i64, unplanned_bytes = 16384 : i64, buffers = 4 : i64, alignment = 256 : i64}}
// CHECK-NEXT:    %0 = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %1 = graph.neg %0 {mlc.buffer = {offset = 4096 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %2 = graph.abs %1 {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %3 = graph.relu %2 {mlc.buffer = {offset = 4096 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %4 = graph.tanh %3 : tensor<1024xf32>
// CHECK-NEXT:    func.return %4
// REPORT: @chain: peak 8.0 KiB in an arena, 16.0 KiB unplanned (2.00x less), 4 intermediates
func.func @chain(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = graph.exp %x : tensor<1024xf32>
  %1 = graph.neg %0 : tensor<1024xf32>
  %2 = graph.abs %1 : tensor<1024xf32>
  %3 = graph.relu %2 : tensor<1024xf32>
  %4 = graph.tanh %3 : tensor<1024xf32>
  func.return %4 : tensor<1024xf32>
}

// -----

// A diamond: %a is live until %c is computed, %b until the add, so %a, %b and %c need three
// buffers; only the add, after %a's last use, reuses %a's bytes.
// CHECK-LABEL: func.func @diamond
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 12288 : i64, unplanned_bytes = 16384 : i64, buffers = 4 : i64, alignment = 256 : i64}
// CHECK-NEXT:    %a = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %b = graph.neg %a {mlc.buffer = {offset = 4096 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %c = graph.abs %a {mlc.buffer = {offset = 8192 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %d = graph.add %b, %c {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %e = graph.relu %d :
// REPORT: @diamond: peak 12.0 KiB in an arena, 16.0 KiB unplanned (1.33x less), 4 intermediates
func.func @diamond(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %a = graph.exp %x : tensor<1024xf32>
  %b = graph.neg %a : tensor<1024xf32>
  %c = graph.abs %a : tensor<1024xf32>
  %d = graph.add %b, %c : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %e = graph.relu %d : tensor<1024xf32>
  func.return %e : tensor<1024xf32>
}

// -----

// Reshapes are views: %r shares %a's bytes and keeps them live until its own last use (the sub),
// so %n cannot take them. Reshapes of an argument or a constant, and a returned reshape, are
// outside the arena; a reshape of a reshape is still %a's buffer.
// CHECK-LABEL: func.func @reshapes
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 8192 : i64, unplanned_bytes = 8192 : i64, buffers = 2 : i64, alignment = 256 : i64}
// CHECK-NEXT:    %c = graph.constant dense<1.000000e+00> : tensor<4x256xf32>
// CHECK-NEXT:    %xr = graph.reshape %x : tensor<1024xf32> to tensor<4x256xf32>
// CHECK-NEXT:    %cr = graph.reshape %c : tensor<4x256xf32> to tensor<1024xf32>
// CHECK-NEXT:    %a = graph.add %xr, %c {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %r = graph.reshape %a {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %rr = graph.reshape %r {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %n = graph.neg %rr {mlc.buffer = {offset = 4096 : i64, size = 4096 : i64}}
// CHECK-NEXT:    %s = graph.sub %n, %r : (tensor<2x512xf32>, tensor<2x512xf32>) -> tensor<2x512xf32>
// CHECK-NEXT:    %out = graph.reshape %n : tensor<2x512xf32> to tensor<1024xf32>
// CHECK-NEXT:    func.return %s, %out, %cr
// REPORT: @reshapes: peak 8.0 KiB in an arena, 8.0 KiB unplanned (1.00x less), 2 intermediates
func.func @reshapes(%x: tensor<1024xf32>) -> (tensor<2x512xf32>, tensor<1024xf32>, tensor<1024xf32>) {
  %c = graph.constant dense<1.0> : tensor<4x256xf32>
  %xr = graph.reshape %x : tensor<1024xf32> to tensor<4x256xf32>
  %cr = graph.reshape %c : tensor<4x256xf32> to tensor<1024xf32>
  %a = graph.add %xr, %c : (tensor<4x256xf32>, tensor<4x256xf32>) -> tensor<4x256xf32>
  %r = graph.reshape %a : tensor<4x256xf32> to tensor<2x512xf32>
  %rr = graph.reshape %r : tensor<2x512xf32> to tensor<2x512xf32>
  %n = graph.neg %rr : tensor<2x512xf32>
  %s = graph.sub %n, %r : (tensor<2x512xf32>, tensor<2x512xf32>) -> tensor<2x512xf32>
  %out = graph.reshape %n : tensor<2x512xf32> to tensor<1024xf32>
  func.return %s, %out, %cr : tensor<2x512xf32>, tensor<1024xf32>, tensor<1024xf32>
}

// -----

// No intermediates: constants live in read-only memory, returned values are the caller's, and an
// argument returned as is needs nothing. The plan is empty but present.
// CHECK-LABEL: func.func @nothing_to_plan
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 0 : i64, unplanned_bytes = 0 : i64, buffers = 0 : i64, alignment = 256 : i64}
// CHECK-NOT:     mlc.buffer
// CHECK:         func.return
// CHECK-LABEL: func.func @identity
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 0 : i64, unplanned_bytes = 0 : i64, buffers = 0 : i64, alignment = 256 : i64}
// REPORT: @nothing_to_plan: peak 0 B in an arena, 0 B unplanned, 0 intermediates
// REPORT: @identity: peak 0 B in an arena, 0 B unplanned, 0 intermediates
func.func @nothing_to_plan(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = graph.constant dense<2.0> : tensor<4xf32>
  %0 = graph.mul %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %c : tensor<4xf32>, tensor<4xf32>
}
func.func @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

// Sizes come from the element type (i1 is one byte) and round up to the alignment (100 bytes take
// 256). The largest buffer is placed first, then each into the tightest gap that fits; an unused
// value still takes bytes at the op that writes it. With alignment=64 the arena is smaller.
// CHECK-LABEL: func.func @sizes
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 768 : i64, unplanned_bytes = 1280 : i64, buffers = 4 : i64, alignment = 256 : i64}
// CHECK-NEXT:    %m = graph.cmp lt, %x, %y {mlc.buffer = {offset = 512 : i64, size = 100 : i64}}
// CHECK-NEXT:    %h = graph.cast %x {mlc.buffer = {offset = 0 : i64, size = 200 : i64}}
// CHECK-NEXT:    %dead = graph.exp %h {mlc.buffer = {offset = 256 : i64, size = 200 : i64}}
// CHECK-NEXT:    %w = graph.where %m, %x, %y {mlc.buffer = {offset = 0 : i64, size = 400 : i64}}
// CHECK-NEXT:    %o = graph.neg %w :
// ALIGN64-LABEL: func.func @sizes
// ALIGN64-SAME:    mlc.memory_plan = {arena_bytes = 640 : i64, unplanned_bytes = 1088 : i64, buffers = 4 : i64, alignment = 64 : i64}
// ALIGN64-NEXT:    %m = graph.cmp lt, %x, %y {mlc.buffer = {offset = 512 : i64, size = 100 : i64}}
// ALIGN64-NEXT:    %h = graph.cast %x {mlc.buffer = {offset = 0 : i64, size = 200 : i64}}
// ALIGN64-NEXT:    %dead = graph.exp %h {mlc.buffer = {offset = 256 : i64, size = 200 : i64}}
// ALIGN64-NEXT:    %w = graph.where %m, %x, %y {mlc.buffer = {offset = 0 : i64, size = 400 : i64}}
// REPORT: @sizes: peak 768 B in an arena, 1.2 KiB unplanned (1.67x less), 4 intermediates
func.func @sizes(%x: tensor<100xf32>, %y: tensor<100xf32>) -> tensor<100xf32> {
  %m = graph.cmp lt, %x, %y : (tensor<100xf32>, tensor<100xf32>) -> tensor<100xi1>
  %h = graph.cast %x : tensor<100xf32> to tensor<100xf16>
  %dead = graph.exp %h : tensor<100xf16>
  %w = graph.where %m, %x, %y : (tensor<100xi1>, tensor<100xf32>, tensor<100xf32>) -> tensor<100xf32>
  %o = graph.neg %w : tensor<100xf32>
  func.return %o : tensor<100xf32>
}

// -----

// A region-holding op (as graph.fusion groups will be) is one step: the ops inside are not
// planned, and a use inside the region keeps %a live until the enclosing op. With several
// results, `mlc.buffer` is an array, `{}` for a result outside the arena (here the returned one).
// CHECK-LABEL: func.func @regions
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 768 : i64, unplanned_bytes = 1024 : i64, buffers = 4 : i64, alignment = 256 : i64}
// CHECK-NEXT:    %a = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 16 : i64}}
// CHECK-NEXT:    %b = graph.neg %x {mlc.buffer = {offset = 256 : i64, size = 16 : i64}}
// CHECK-NEXT:    %r, %s = scf.execute_region -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %0 = graph.abs %b : tensor<4xf32>
// CHECK-NEXT:      %1 = graph.add %0, %a
// CHECK-NEXT:      scf.yield %1, %0
// CHECK-NEXT:    }{{ ?}}{mlc.buffer = [{}, {offset = 512 : i64, size = 16 : i64}]}
// CHECK-NEXT:    %t = graph.relu %s {mlc.buffer = {offset = 0 : i64, size = 16 : i64}}
// CHECK-NEXT:    %u = graph.add %r, %t :
// REPORT: @regions: peak 768 B in an arena, 1.0 KiB unplanned (1.33x less), 4 intermediates
func.func @regions(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = graph.exp %x : tensor<4xf32>
  %b = graph.neg %x : tensor<4xf32>
  %r, %s = scf.execute_region -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = graph.abs %b : tensor<4xf32>
    %1 = graph.add %0, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    scf.yield %1, %0 : tensor<4xf32>, tensor<4xf32>
  }
  %t = graph.relu %s : tensor<4xf32>
  %u = graph.add %r, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %r, %u : tensor<4xf32>, tensor<4xf32>
}

// -----

// A plan that was edited or is stale is recomputed: wrong offsets and summaries are overwritten,
// and a `mlc.buffer` on an op whose result is now returned is removed. Functions of other levels
// (memrefs) are left alone.
// CHECK-LABEL: func.func @stale
// CHECK-SAME:    mlc.memory_plan = {arena_bytes = 256 : i64, unplanned_bytes = 256 : i64, buffers = 1 : i64, alignment = 256 : i64}
// CHECK-NEXT:    %0 = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 16 : i64}}
// CHECK-NEXT:    %1 = graph.neg %0 : tensor<4xf32>
// REPORT: @stale: peak 256 B in an arena, 256 B unplanned (1.00x less), 1 intermediate{{$}}
// REPORT-NOT: @host
// CHECK-LABEL: func.func @host
// CHECK-NOT:     mlc.memory_plan
// CHECK:         func.return
func.func @stale(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.memory_plan = {arena_bytes = 1 : i64}} {
  %0 = graph.exp %x {mlc.buffer = {offset = 4096 : i64, size = 16 : i64}} : tensor<4xf32>
  %1 = graph.neg %0 {mlc.buffer = {offset = 256 : i64, size = 16 : i64}} : tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
func.func @host(%x: memref<4xf32>) {
  func.return
}
