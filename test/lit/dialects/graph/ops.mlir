// Round trip of every graph op in the custom syntax, its generic form, and generic back to custom.
// RUN: mlc-opt %s | filecheck %s
// RUN: mlc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: mlc-opt %s --print-op-generic | mlc-opt | filecheck %s

// CHECK:   builtin.module {
// GENERIC: "builtin.module"() ({

// Binary ops: all seven, same shapes (f32, rank 2).
// CHECK-LABEL: func.func @binary_same_shape(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %1 = graph.sub %0, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %2 = graph.mul %1, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %3 = graph.div %2, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %4 = graph.max %3, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %5 = graph.min %4, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %6 = graph.pow %5, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %6 : tensor<4x8xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "binary_same_shape"
// GENERIC-SAME:  , function_type = (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>):
// GENERIC-NEXT:    %0 = "graph.add"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    %1 = "graph.sub"(%0, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    %2 = "graph.mul"(%1, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    %3 = "graph.div"(%2, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    %4 = "graph.max"(%3, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    %5 = "graph.min"(%4, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    %6 = "graph.pow"(%5, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// GENERIC-NEXT:    "func.return"(%6) : (tensor<4x8xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @binary_same_shape(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = graph.sub %0, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = graph.mul %1, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = graph.div %2, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = graph.max %3, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = graph.min %4, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = graph.pow %5, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %6 : tensor<4x8xf32>
}

// numpy broadcasting: rank 0 with rank 0 and rank 3, missing leading dims, size-1 dims on
// both sides, over f32, f16, i32, i64 and bf16.
// CHECK-LABEL: func.func @binary_broadcast(%s: tensor<f32>, %v: tensor<4xf32>, %m: tensor<3x4xf32>, %t: tensor<2x3x4xf32>, %col: tensor<3x1xf16>, %row: tensor<1x4xf16>, %i: tensor<2x1x4xi32>, %j: tensor<3x1xi32>, %k: tensor<i64>, %l: tensor<5xi64>, %x: tensor<2x2xbf16>) {
// CHECK-NEXT:    %0 = graph.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    %1 = graph.add %s, %t : (tensor<f32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %2 = graph.mul %v, %m : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %3 = graph.sub %t, %m : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %4 = graph.div %col, %row : (tensor<3x1xf16>, tensor<1x4xf16>) -> tensor<3x4xf16>
// CHECK-NEXT:    %5 = graph.max %i, %j : (tensor<2x1x4xi32>, tensor<3x1xi32>) -> tensor<2x3x4xi32>
// CHECK-NEXT:    %6 = graph.min %k, %l : (tensor<i64>, tensor<5xi64>) -> tensor<5xi64>
// CHECK-NEXT:    %7 = graph.pow %x, %x : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xbf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "binary_broadcast"
// GENERIC-SAME:  , function_type = (tensor<f32>, tensor<4xf32>, tensor<3x4xf32>, tensor<2x3x4xf32>, tensor<3x1xf16>, tensor<1x4xf16>, tensor<2x1x4xi32>, tensor<3x1xi32>, tensor<i64>, tensor<5xi64>, tensor<2x2xbf16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%s: tensor<f32>, %v: tensor<4xf32>, %m: tensor<3x4xf32>, %t: tensor<2x3x4xf32>, %col: tensor<3x1xf16>, %row: tensor<1x4xf16>, %i: tensor<2x1x4xi32>, %j: tensor<3x1xi32>, %k: tensor<i64>, %l: tensor<5xi64>, %x: tensor<2x2xbf16>):
// GENERIC-NEXT:    %0 = "graph.add"(%s, %s) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// GENERIC-NEXT:    %1 = "graph.add"(%s, %t) : (tensor<f32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// GENERIC-NEXT:    %2 = "graph.mul"(%v, %m) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// GENERIC-NEXT:    %3 = "graph.sub"(%t, %m) : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
// GENERIC-NEXT:    %4 = "graph.div"(%col, %row) : (tensor<3x1xf16>, tensor<1x4xf16>) -> tensor<3x4xf16>
// GENERIC-NEXT:    %5 = "graph.max"(%i, %j) : (tensor<2x1x4xi32>, tensor<3x1xi32>) -> tensor<2x3x4xi32>
// GENERIC-NEXT:    %6 = "graph.min"(%k, %l) : (tensor<i64>, tensor<5xi64>) -> tensor<5xi64>
// GENERIC-NEXT:    %7 = "graph.pow"(%x, %x) : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xbf16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @binary_broadcast(%s: tensor<f32>, %v: tensor<4xf32>, %m: tensor<3x4xf32>, %t: tensor<2x3x4xf32>, %col: tensor<3x1xf16>, %row: tensor<1x4xf16>, %i: tensor<2x1x4xi32>, %j: tensor<3x1xi32>, %k: tensor<i64>, %l: tensor<5xi64>, %x: tensor<2x2xbf16>) {
  %0 = graph.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %1 = graph.add %s, %t : (tensor<f32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %2 = graph.mul %v, %m : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = graph.sub %t, %m : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %4 = graph.div %col, %row : (tensor<3x1xf16>, tensor<1x4xf16>) -> tensor<3x4xf16>
  %5 = graph.max %i, %j : (tensor<2x1x4xi32>, tensor<3x1xi32>) -> tensor<2x3x4xi32>
  %6 = graph.min %k, %l : (tensor<i64>, tensor<5xi64>) -> tensor<5xi64>
  %7 = graph.pow %x, %x : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xbf16>
  func.return
}

// All six predicates; the result is i1 and broadcasts; i1 operands are comparable.
// CHECK-LABEL: func.func @cmp(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %i: tensor<i32>, %j: tensor<2xi32>, %p: tensor<2x2xi1>, %q: tensor<2x2xi1>) {
// CHECK-NEXT:    %0 = graph.cmp eq, %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
// CHECK-NEXT:    %1 = graph.cmp ne, %b, %a : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
// CHECK-NEXT:    %2 = graph.cmp lt, %i, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:    %3 = graph.cmp le, %i, %j : (tensor<i32>, tensor<2xi32>) -> tensor<2xi1>
// CHECK-NEXT:    %4 = graph.cmp gt, %j, %j : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
// CHECK-NEXT:    %5 = graph.cmp ge, %p, %q : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "cmp"
// GENERIC-SAME:  , function_type = (tensor<3x4xf32>, tensor<4xf32>, tensor<i32>, tensor<2xi32>, tensor<2x2xi1>, tensor<2x2xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %i: tensor<i32>, %j: tensor<2xi32>, %p: tensor<2x2xi1>, %q: tensor<2x2xi1>):
// GENERIC-NEXT:    %0 = "graph.cmp"(%a, %b) <{predicate = "eq"}> : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
// GENERIC-NEXT:    %1 = "graph.cmp"(%b, %a) <{predicate = "ne"}> : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
// GENERIC-NEXT:    %2 = "graph.cmp"(%i, %i) <{predicate = "lt"}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
// GENERIC-NEXT:    %3 = "graph.cmp"(%i, %j) <{predicate = "le"}> : (tensor<i32>, tensor<2xi32>) -> tensor<2xi1>
// GENERIC-NEXT:    %4 = "graph.cmp"(%j, %j) <{predicate = "gt"}> : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
// GENERIC-NEXT:    %5 = "graph.cmp"(%p, %q) <{predicate = "ge"}> : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @cmp(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %i: tensor<i32>, %j: tensor<2xi32>, %p: tensor<2x2xi1>, %q: tensor<2x2xi1>) {
  %0 = graph.cmp eq, %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  %1 = graph.cmp ne, %b, %a : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xi1>
  %2 = graph.cmp lt, %i, %i : (tensor<i32>, tensor<i32>) -> tensor<i1>
  %3 = graph.cmp le, %i, %j : (tensor<i32>, tensor<2xi32>) -> tensor<2xi1>
  %4 = graph.cmp gt, %j, %j : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
  %5 = graph.cmp ge, %p, %q : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  func.return
}

// where broadcasts all three operands; the values may be i1 as well.
// CHECK-LABEL: func.func @where(%c: tensor<3x1xi1>, %a: tensor<4xf32>, %b: tensor<3x4xf32>, %s: tensor<i1>, %x: tensor<2x3x4xi32>, %y: tensor<i32>, %u: tensor<2xi1>, %v: tensor<2xi1>) {
// CHECK-NEXT:    %0 = graph.where %c, %a, %b : (tensor<3x1xi1>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %1 = graph.where %s, %x, %y : (tensor<i1>, tensor<2x3x4xi32>, tensor<i32>) -> tensor<2x3x4xi32>
// CHECK-NEXT:    %2 = graph.where %s, %s, %s : (tensor<i1>, tensor<i1>, tensor<i1>) -> tensor<i1>
// CHECK-NEXT:    %3 = graph.where %u, %u, %v : (tensor<2xi1>, tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "where"
// GENERIC-SAME:  , function_type = (tensor<3x1xi1>, tensor<4xf32>, tensor<3x4xf32>, tensor<i1>, tensor<2x3x4xi32>, tensor<i32>, tensor<2xi1>, tensor<2xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%c: tensor<3x1xi1>, %a: tensor<4xf32>, %b: tensor<3x4xf32>, %s: tensor<i1>, %x: tensor<2x3x4xi32>, %y: tensor<i32>, %u: tensor<2xi1>, %v: tensor<2xi1>):
// GENERIC-NEXT:    %0 = "graph.where"(%c, %a, %b) : (tensor<3x1xi1>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// GENERIC-NEXT:    %1 = "graph.where"(%s, %x, %y) : (tensor<i1>, tensor<2x3x4xi32>, tensor<i32>) -> tensor<2x3x4xi32>
// GENERIC-NEXT:    %2 = "graph.where"(%s, %s, %s) : (tensor<i1>, tensor<i1>, tensor<i1>) -> tensor<i1>
// GENERIC-NEXT:    %3 = "graph.where"(%u, %u, %v) : (tensor<2xi1>, tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @where(%c: tensor<3x1xi1>, %a: tensor<4xf32>, %b: tensor<3x4xf32>, %s: tensor<i1>, %x: tensor<2x3x4xi32>, %y: tensor<i32>, %u: tensor<2xi1>, %v: tensor<2xi1>) {
  %0 = graph.where %c, %a, %b : (tensor<3x1xi1>, tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.where %s, %x, %y : (tensor<i1>, tensor<2x3x4xi32>, tensor<i32>) -> tensor<2x3x4xi32>
  %2 = graph.where %s, %s, %s : (tensor<i1>, tensor<i1>, tensor<i1>) -> tensor<i1>
  %3 = graph.where %u, %u, %v : (tensor<2xi1>, tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  func.return
}

// Float-only unary ops, on f32 (rank 1), f16 (rank 0) and bf16 (rank 3).
// CHECK-LABEL: func.func @unary_float(%a: tensor<4xf32>, %h: tensor<f16>, %b: tensor<2x3x4xbf16>) {
// CHECK-NEXT:    %0 = graph.neg %a : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.abs %a : tensor<4xf32>
// CHECK-NEXT:    %2 = graph.relu %a : tensor<4xf32>
// CHECK-NEXT:    %3 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:    %4 = graph.log %a : tensor<4xf32>
// CHECK-NEXT:    %5 = graph.sqrt %a : tensor<4xf32>
// CHECK-NEXT:    %6 = graph.rsqrt %a : tensor<4xf32>
// CHECK-NEXT:    %7 = graph.tanh %a : tensor<4xf32>
// CHECK-NEXT:    %8 = graph.sigmoid %a : tensor<4xf32>
// CHECK-NEXT:    %9 = graph.erf %a : tensor<4xf32>
// CHECK-NEXT:    %10 = graph.reciprocal %a : tensor<4xf32>
// CHECK-NEXT:    %11 = graph.exp %h : tensor<f16>
// CHECK-NEXT:    %12 = graph.sigmoid %h : tensor<f16>
// CHECK-NEXT:    %13 = graph.tanh %b : tensor<2x3x4xbf16>
// CHECK-NEXT:    %14 = graph.erf %b : tensor<2x3x4xbf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "unary_float"
// GENERIC-SAME:  , function_type = (tensor<4xf32>, tensor<f16>, tensor<2x3x4xbf16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<4xf32>, %h: tensor<f16>, %b: tensor<2x3x4xbf16>):
// GENERIC-NEXT:    %0 = "graph.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %1 = "graph.abs"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %2 = "graph.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %3 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %4 = "graph.log"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %5 = "graph.sqrt"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %6 = "graph.rsqrt"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %7 = "graph.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %8 = "graph.sigmoid"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %9 = "graph.erf"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %10 = "graph.reciprocal"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %11 = "graph.exp"(%h) : (tensor<f16>) -> tensor<f16>
// GENERIC-NEXT:    %12 = "graph.sigmoid"(%h) : (tensor<f16>) -> tensor<f16>
// GENERIC-NEXT:    %13 = "graph.tanh"(%b) : (tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
// GENERIC-NEXT:    %14 = "graph.erf"(%b) : (tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @unary_float(%a: tensor<4xf32>, %h: tensor<f16>, %b: tensor<2x3x4xbf16>) {
  %0 = graph.neg %a : tensor<4xf32>
  %1 = graph.abs %a : tensor<4xf32>
  %2 = graph.relu %a : tensor<4xf32>
  %3 = graph.exp %a : tensor<4xf32>
  %4 = graph.log %a : tensor<4xf32>
  %5 = graph.sqrt %a : tensor<4xf32>
  %6 = graph.rsqrt %a : tensor<4xf32>
  %7 = graph.tanh %a : tensor<4xf32>
  %8 = graph.sigmoid %a : tensor<4xf32>
  %9 = graph.erf %a : tensor<4xf32>
  %10 = graph.reciprocal %a : tensor<4xf32>
  %11 = graph.exp %h : tensor<f16>
  %12 = graph.sigmoid %h : tensor<f16>
  %13 = graph.tanh %b : tensor<2x3x4xbf16>
  %14 = graph.erf %b : tensor<2x3x4xbf16>
  func.return
}

// neg, abs and relu accept integers too.
// CHECK-LABEL: func.func @unary_integer(%i: tensor<2x3xi32>, %l: tensor<i64>) {
// CHECK-NEXT:    %0 = graph.neg %i : tensor<2x3xi32>
// CHECK-NEXT:    %1 = graph.abs %i : tensor<2x3xi32>
// CHECK-NEXT:    %2 = graph.relu %i : tensor<2x3xi32>
// CHECK-NEXT:    %3 = graph.abs %l : tensor<i64>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "unary_integer"
// GENERIC-SAME:  , function_type = (tensor<2x3xi32>, tensor<i64>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%i: tensor<2x3xi32>, %l: tensor<i64>):
// GENERIC-NEXT:    %0 = "graph.neg"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
// GENERIC-NEXT:    %1 = "graph.abs"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
// GENERIC-NEXT:    %2 = "graph.relu"(%i) : (tensor<2x3xi32>) -> tensor<2x3xi32>
// GENERIC-NEXT:    %3 = "graph.abs"(%l) : (tensor<i64>) -> tensor<i64>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @unary_integer(%i: tensor<2x3xi32>, %l: tensor<i64>) {
  %0 = graph.neg %i : tensor<2x3xi32>
  %1 = graph.abs %i : tensor<2x3xi32>
  %2 = graph.relu %i : tensor<2x3xi32>
  %3 = graph.abs %l : tensor<i64>
  func.return
}

// The default approximation ("none") is not printed.
// CHECK-LABEL: func.func @gelu(%a: tensor<8x32xf32>, %h: tensor<f16>) {
// CHECK-NEXT:    %0 = graph.gelu %a : tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.gelu %a {approximate = "tanh"} : tensor<8x32xf32>
// CHECK-NEXT:    %2 = graph.gelu %a : tensor<8x32xf32>
// CHECK-NEXT:    %3 = graph.gelu %h {approximate = "tanh"} : tensor<f16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "gelu"
// GENERIC-SAME:  , function_type = (tensor<8x32xf32>, tensor<f16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<8x32xf32>, %h: tensor<f16>):
// GENERIC-NEXT:    %0 = "graph.gelu"(%a) : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.gelu"(%a) <{approximate = "tanh"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %2 = "graph.gelu"(%a) <{approximate = "none"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %3 = "graph.gelu"(%h) <{approximate = "tanh"}> : (tensor<f16>) -> tensor<f16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @gelu(%a: tensor<8x32xf32>, %h: tensor<f16>) {
  %0 = graph.gelu %a : tensor<8x32xf32>
  %1 = graph.gelu %a {approximate = "tanh"} : tensor<8x32xf32>
  %2 = graph.gelu %a {approximate = "none"} : tensor<8x32xf32>
  %3 = graph.gelu %h {approximate = "tanh"} : tensor<f16>
  func.return
}

// cast changes the element type only (float <-> int <-> i1, f16 -> bf16, identity).
// CHECK-LABEL: func.func @cast(%a: tensor<2x3xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>, %h: tensor<f16>) {
// CHECK-NEXT:    %0 = graph.cast %a : tensor<2x3xf32> to tensor<2x3xf16>
// CHECK-NEXT:    %1 = graph.cast %a : tensor<2x3xf32> to tensor<2x3xi32>
// CHECK-NEXT:    %2 = graph.cast %i : tensor<4xi32> to tensor<4xf32>
// CHECK-NEXT:    %3 = graph.cast %p : tensor<4xi1> to tensor<4xf32>
// CHECK-NEXT:    %4 = graph.cast %i : tensor<4xi32> to tensor<4xi1>
// CHECK-NEXT:    %5 = graph.cast %h : tensor<f16> to tensor<bf16>
// CHECK-NEXT:    %6 = graph.cast %a : tensor<2x3xf32> to tensor<2x3xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "cast"
// GENERIC-SAME:  , function_type = (tensor<2x3xf32>, tensor<4xi32>, tensor<4xi1>, tensor<f16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<2x3xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>, %h: tensor<f16>):
// GENERIC-NEXT:    %0 = "graph.cast"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf16>
// GENERIC-NEXT:    %1 = "graph.cast"(%a) : (tensor<2x3xf32>) -> tensor<2x3xi32>
// GENERIC-NEXT:    %2 = "graph.cast"(%i) : (tensor<4xi32>) -> tensor<4xf32>
// GENERIC-NEXT:    %3 = "graph.cast"(%p) : (tensor<4xi1>) -> tensor<4xf32>
// GENERIC-NEXT:    %4 = "graph.cast"(%i) : (tensor<4xi32>) -> tensor<4xi1>
// GENERIC-NEXT:    %5 = "graph.cast"(%h) : (tensor<f16>) -> tensor<bf16>
// GENERIC-NEXT:    %6 = "graph.cast"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @cast(%a: tensor<2x3xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>, %h: tensor<f16>) {
  %0 = graph.cast %a : tensor<2x3xf32> to tensor<2x3xf16>
  %1 = graph.cast %a : tensor<2x3xf32> to tensor<2x3xi32>
  %2 = graph.cast %i : tensor<4xi32> to tensor<4xf32>
  %3 = graph.cast %p : tensor<4xi1> to tensor<4xf32>
  %4 = graph.cast %i : tensor<4xi32> to tensor<4xi1>
  %5 = graph.cast %h : tensor<f16> to tensor<bf16>
  %6 = graph.cast %a : tensor<2x3xf32> to tensor<2x3xf32>
  func.return
}

// broadcast: rank 0 to rank 2, identity, size-1 and leading dims, i1.
// CHECK-LABEL: func.func @broadcast(%s: tensor<f32>, %c: tensor<3x1xi32>, %v: tensor<4xi1>) {
// CHECK-NEXT:    %0 = graph.broadcast %s : tensor<f32> to tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.broadcast %s : tensor<f32> to tensor<f32>
// CHECK-NEXT:    %2 = graph.broadcast %c : tensor<3x1xi32> to tensor<2x3x4xi32>
// CHECK-NEXT:    %3 = graph.broadcast %v : tensor<4xi1> to tensor<3x4xi1>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "broadcast"
// GENERIC-SAME:  , function_type = (tensor<f32>, tensor<3x1xi32>, tensor<4xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%s: tensor<f32>, %c: tensor<3x1xi32>, %v: tensor<4xi1>):
// GENERIC-NEXT:    %0 = "graph.broadcast"(%s) : (tensor<f32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    %1 = "graph.broadcast"(%s) : (tensor<f32>) -> tensor<f32>
// GENERIC-NEXT:    %2 = "graph.broadcast"(%c) : (tensor<3x1xi32>) -> tensor<2x3x4xi32>
// GENERIC-NEXT:    %3 = "graph.broadcast"(%v) : (tensor<4xi1>) -> tensor<3x4xi1>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @broadcast(%s: tensor<f32>, %c: tensor<3x1xi32>, %v: tensor<4xi1>) {
  %0 = graph.broadcast %s : tensor<f32> to tensor<2x3xf32>
  %1 = graph.broadcast %s : tensor<f32> to tensor<f32>
  %2 = graph.broadcast %c : tensor<3x1xi32> to tensor<2x3x4xi32>
  %3 = graph.broadcast %v : tensor<4xi1> to tensor<3x4xi1>
  func.return
}

// reshape keeps the element count: rank 2 -> 2, 2 -> 1, 0 -> 2, 1 -> 3.
// CHECK-LABEL: func.func @reshape(%a: tensor<2x6xf32>, %s: tensor<f16>, %v: tensor<24xi32>) {
// CHECK-NEXT:    %0 = graph.reshape %a : tensor<2x6xf32> to tensor<3x4xf32>
// CHECK-NEXT:    %1 = graph.reshape %a : tensor<2x6xf32> to tensor<12xf32>
// CHECK-NEXT:    %2 = graph.reshape %s : tensor<f16> to tensor<1x1xf16>
// CHECK-NEXT:    %3 = graph.reshape %v : tensor<24xi32> to tensor<2x3x4xi32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "reshape"
// GENERIC-SAME:  , function_type = (tensor<2x6xf32>, tensor<f16>, tensor<24xi32>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<2x6xf32>, %s: tensor<f16>, %v: tensor<24xi32>):
// GENERIC-NEXT:    %0 = "graph.reshape"(%a) : (tensor<2x6xf32>) -> tensor<3x4xf32>
// GENERIC-NEXT:    %1 = "graph.reshape"(%a) : (tensor<2x6xf32>) -> tensor<12xf32>
// GENERIC-NEXT:    %2 = "graph.reshape"(%s) : (tensor<f16>) -> tensor<1x1xf16>
// GENERIC-NEXT:    %3 = "graph.reshape"(%v) : (tensor<24xi32>) -> tensor<2x3x4xi32>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @reshape(%a: tensor<2x6xf32>, %s: tensor<f16>, %v: tensor<24xi32>) {
  %0 = graph.reshape %a : tensor<2x6xf32> to tensor<3x4xf32>
  %1 = graph.reshape %a : tensor<2x6xf32> to tensor<12xf32>
  %2 = graph.reshape %s : tensor<f16> to tensor<1x1xf16>
  %3 = graph.reshape %v : tensor<24xi32> to tensor<2x3x4xi32>
  func.return
}

// Splat and non-splat constants of every kind of element type, ranks 0 to 3.
// CHECK-LABEL: func.func @constant() {
// CHECK-NEXT:    %0 = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>
// CHECK-NEXT:    %2 = graph.constant dense<[1, 2, 3]> : tensor<3xi32>
// CHECK-NEXT:    %3 = graph.constant dense<0> : tensor<2x3x4xi64>
// CHECK-NEXT:    %4 = graph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:    %5 = graph.constant dense<-2.500000e+00> : tensor<bf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "constant"
// GENERIC-SAME:  , function_type = () -> ()}> ({
// GENERIC-NEXT:    %0 = "graph.constant"() <{value = dense<1.000000e+00> : tensor<4xf32>}> : () -> tensor<4xf32>
// GENERIC-NEXT:    %1 = "graph.constant"() <{value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf16>}> : () -> tensor<2x2xf16>
// GENERIC-NEXT:    %2 = "graph.constant"() <{value = dense<[1, 2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>
// GENERIC-NEXT:    %3 = "graph.constant"() <{value = dense<0> : tensor<2x3x4xi64>}> : () -> tensor<2x3x4xi64>
// GENERIC-NEXT:    %4 = "graph.constant"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
// GENERIC-NEXT:    %5 = "graph.constant"() <{value = dense<-2.500000e+00> : tensor<bf16>}> : () -> tensor<bf16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @constant() {
  %0 = graph.constant dense<1.0> : tensor<4xf32>
  %1 = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf16>
  %2 = graph.constant dense<[1, 2, 3]> : tensor<3xi32>
  %3 = graph.constant dense<0> : tensor<2x3x4xi64>
  %4 = graph.constant dense<[true, false]> : tensor<2xi1>
  %5 = graph.constant dense<-2.5> : tensor<bf16>
  func.return
}

// The elementwise part of the example in spec/graph-dialect.md, in generic form.
// CHECK-LABEL: func.func @spec_generic(%x: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
// CHECK-NEXT:    %0 = graph.add %x, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.gelu %0 {approximate = "tanh"} : tensor<8x32xf32>
// CHECK-NEXT:    %2 = graph.cmp gt, %1, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xi1>
// CHECK-NEXT:    %3 = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %4 = graph.where %2, %1, %3 : (tensor<8x32xi1>, tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
// CHECK-NEXT:    func.return %4 : tensor<8x32xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "spec_generic"
// GENERIC-SAME:  , function_type = (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<8x32xf32>, %b: tensor<32xf32>):
// GENERIC-NEXT:    %0 = "graph.add"(%x, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.gelu"(%0) <{approximate = "tanh"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %2 = "graph.cmp"(%1, %b) <{predicate = "gt"}> : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xi1>
// GENERIC-NEXT:    %3 = "graph.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
// GENERIC-NEXT:    %4 = "graph.where"(%2, %1, %3) : (tensor<8x32xi1>, tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    "func.return"(%4) : (tensor<8x32xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @spec_generic(%x: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %1 = "graph.add"(%x, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %3 = "graph.cmp"(%2, %b) <{predicate = "gt"}> : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xi1>
  %4 = "graph.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %5 = "graph.where"(%3, %2, %4) : (tensor<8x32xi1>, tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  func.return %5 : tensor<8x32xf32>
}
