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
// CHECK-NEXT:    %15 = graph.sin %a : tensor<4xf32>
// CHECK-NEXT:    %16 = graph.cos %h : tensor<f16>
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
// GENERIC-NEXT:    %15 = "graph.sin"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %16 = "graph.cos"(%h) : (tensor<f16>) -> tensor<f16>
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
  %15 = graph.sin %a : tensor<4xf32>
  %16 = graph.cos %h : tensor<f16>
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

// matmul: plain, batch dims broadcast (size-1 and missing leading dims), K = 0, over f32, f16, i32, bf16.
// CHECK-LABEL: func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<2x1x4x8xf16>, %d: tensor<3x8x5xf16>, %e: tensor<1x3xi32>, %g: tensor<2x0xbf16>, %h: tensor<0x4xbf16>, %i: tensor<3x1xi32>) -> tensor<8x32xf32> {
// CHECK-NEXT:    %0 = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.matmul %c, %d : (tensor<2x1x4x8xf16>, tensor<3x8x5xf16>) -> tensor<2x3x4x5xf16>
// CHECK-NEXT:    %2 = graph.matmul %e, %i : (tensor<1x3xi32>, tensor<3x1xi32>) -> tensor<1x1xi32>
// CHECK-NEXT:    %3 = graph.matmul %g, %h : (tensor<2x0xbf16>, tensor<0x4xbf16>) -> tensor<2x4xbf16>
// CHECK-NEXT:    func.return %0 : tensor<8x32xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "matmul"
// GENERIC-SAME:  , function_type = (tensor<8x16xf32>, tensor<16x32xf32>, tensor<2x1x4x8xf16>, tensor<3x8x5xf16>, tensor<1x3xi32>, tensor<2x0xbf16>, tensor<0x4xbf16>, tensor<3x1xi32>) -> tensor<8x32xf32>}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<2x1x4x8xf16>, %d: tensor<3x8x5xf16>, %e: tensor<1x3xi32>, %g: tensor<2x0xbf16>, %h: tensor<0x4xbf16>, %i: tensor<3x1xi32>):
// GENERIC-NEXT:    %0 = "graph.matmul"(%a, %b) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.matmul"(%c, %d) : (tensor<2x1x4x8xf16>, tensor<3x8x5xf16>) -> tensor<2x3x4x5xf16>
// GENERIC-NEXT:    %2 = "graph.matmul"(%e, %i) : (tensor<1x3xi32>, tensor<3x1xi32>) -> tensor<1x1xi32>
// GENERIC-NEXT:    %3 = "graph.matmul"(%g, %h) : (tensor<2x0xbf16>, tensor<0x4xbf16>) -> tensor<2x4xbf16>
// GENERIC-NEXT:    "func.return"(%0) : (tensor<8x32xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<2x1x4x8xf16>, %d: tensor<3x8x5xf16>, %e: tensor<1x3xi32>, %g: tensor<2x0xbf16>, %h: tensor<0x4xbf16>, %i: tensor<3x1xi32>) -> tensor<8x32xf32> {
  %0 = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.matmul %c, %d : (tensor<2x1x4x8xf16>, tensor<3x8x5xf16>) -> tensor<2x3x4x5xf16>
  %2 = graph.matmul %e, %i : (tensor<1x3xi32>, tensor<3x1xi32>) -> tensor<1x1xi32>
  %3 = graph.matmul %g, %h : (tensor<2x0xbf16>, tensor<0x4xbf16>) -> tensor<2x4xbf16>
  func.return %0 : tensor<8x32xf32>
}

// matmul precision: printed in the attribute dictionary when not the default ("ieee").
// CHECK-LABEL: func.func @matmul_precision(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
// CHECK-NEXT:    %0 = graph.matmul %a, %b {precision = "tf32"} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.matmul %a, %b {precision = "3xtf32"} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %2 = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "matmul_precision"
// GENERIC:         %0 = "graph.matmul"(%a, %b) <{precision = "tf32"}> : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.matmul"(%a, %b) <{precision = "3xtf32"}> : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %2 = "graph.matmul"(%a, %b) <{precision = "ieee"}> : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
func.func @matmul_precision(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %0 = graph.matmul %a, %b {precision = "tf32"} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = "graph.matmul"(%a, %b) <{precision = "3xtf32"}> : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %2 = graph.matmul %a, %b {precision = "ieee"} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  func.return %0, %1, %2 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// transpose: rank 2, rank 3 with negative entries, rank 1 and rank 0 (identities), i1.
// CHECK-LABEL: func.func @transpose(%a: tensor<2x3xf32>, %b: tensor<2x3x4xi64>, %v: tensor<5xf16>, %s: tensor<i1>, %p: tensor<2x1xi1>) {
// CHECK-NEXT:    %0 = graph.transpose %a perm [1, 0] : tensor<2x3xf32> to tensor<3x2xf32>
// CHECK-NEXT:    %1 = graph.transpose %b perm [-1, 0, -2] : tensor<2x3x4xi64> to tensor<4x2x3xi64>
// CHECK-NEXT:    %2 = graph.transpose %v perm [0] : tensor<5xf16> to tensor<5xf16>
// CHECK-NEXT:    %3 = graph.transpose %s perm [] : tensor<i1> to tensor<i1>
// CHECK-NEXT:    %4 = graph.transpose %p perm [1, 0] : tensor<2x1xi1> to tensor<1x2xi1>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "transpose"
// GENERIC-SAME:  , function_type = (tensor<2x3xf32>, tensor<2x3x4xi64>, tensor<5xf16>, tensor<i1>, tensor<2x1xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<2x3xf32>, %b: tensor<2x3x4xi64>, %v: tensor<5xf16>, %s: tensor<i1>, %p: tensor<2x1xi1>):
// GENERIC-NEXT:    %0 = "graph.transpose"(%a) <{perm = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
// GENERIC-NEXT:    %1 = "graph.transpose"(%b) <{perm = array<i64: -1, 0, -2>}> : (tensor<2x3x4xi64>) -> tensor<4x2x3xi64>
// GENERIC-NEXT:    %2 = "graph.transpose"(%v) <{perm = array<i64: 0>}> : (tensor<5xf16>) -> tensor<5xf16>
// GENERIC-NEXT:    %3 = "graph.transpose"(%s) <{perm = array<i64>}> : (tensor<i1>) -> tensor<i1>
// GENERIC-NEXT:    %4 = "graph.transpose"(%p) <{perm = array<i64: 1, 0>}> : (tensor<2x1xi1>) -> tensor<1x2xi1>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @transpose(%a: tensor<2x3xf32>, %b: tensor<2x3x4xi64>, %v: tensor<5xf16>, %s: tensor<i1>, %p: tensor<2x1xi1>) {
  %0 = graph.transpose %a perm [1, 0] : tensor<2x3xf32> to tensor<3x2xf32>
  %1 = graph.transpose %b perm [-1, 0, -2] : tensor<2x3x4xi64> to tensor<4x2x3xi64>
  %2 = graph.transpose %v perm [0] : tensor<5xf16> to tensor<5xf16>
  %3 = graph.transpose %s perm [] : tensor<i1> to tensor<i1>
  %4 = graph.transpose %p perm [1, 0] : tensor<2x1xi1> to tensor<1x2xi1>
  func.return
}

// The four reductions: keepdims both ways, negative axes, every axis, no axis (the identity),
// integers, i1 for max/min, a reduced axis of size 0.
// CHECK-LABEL: func.func @reduce(%a: tensor<4x8xf32>, %b: tensor<2x3x4xf16>, %i: tensor<3x5xi32>, %p: tensor<6xi1>, %z: tensor<0x3xf32>) {
// CHECK-NEXT:    %0 = graph.reduce_sum %a axes [1] keepdims false : tensor<4x8xf32> to tensor<4xf32>
// CHECK-NEXT:    %1 = graph.reduce_sum %a axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
// CHECK-NEXT:    %2 = graph.reduce_max %b axes [0, -1] keepdims true : tensor<2x3x4xf16> to tensor<1x3x1xf16>
// CHECK-NEXT:    %3 = graph.reduce_min %b axes [2, 0, 1] keepdims false : tensor<2x3x4xf16> to tensor<f16>
// CHECK-NEXT:    %4 = graph.reduce_mean %b axes [] keepdims false : tensor<2x3x4xf16> to tensor<2x3x4xf16>
// CHECK-NEXT:    %5 = graph.reduce_sum %i axes [-2] keepdims false : tensor<3x5xi32> to tensor<5xi32>
// CHECK-NEXT:    %6 = graph.reduce_max %p axes [0] keepdims false : tensor<6xi1> to tensor<i1>
// CHECK-NEXT:    %7 = graph.reduce_min %i axes [0, 1] keepdims true : tensor<3x5xi32> to tensor<1x1xi32>
// CHECK-NEXT:    %8 = graph.reduce_mean %z axes [0] keepdims false : tensor<0x3xf32> to tensor<3xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "reduce"
// GENERIC-SAME:  , function_type = (tensor<4x8xf32>, tensor<2x3x4xf16>, tensor<3x5xi32>, tensor<6xi1>, tensor<0x3xf32>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<4x8xf32>, %b: tensor<2x3x4xf16>, %i: tensor<3x5xi32>, %p: tensor<6xi1>, %z: tensor<0x3xf32>):
// GENERIC-NEXT:    %0 = "graph.reduce_sum"(%a) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %1 = "graph.reduce_sum"(%a) <{axes = array<i64: 1>, keepdims = true}> : (tensor<4x8xf32>) -> tensor<4x1xf32>
// GENERIC-NEXT:    %2 = "graph.reduce_max"(%b) <{axes = array<i64: 0, -1>, keepdims = true}> : (tensor<2x3x4xf16>) -> tensor<1x3x1xf16>
// GENERIC-NEXT:    %3 = "graph.reduce_min"(%b) <{axes = array<i64: 2, 0, 1>, keepdims = false}> : (tensor<2x3x4xf16>) -> tensor<f16>
// GENERIC-NEXT:    %4 = "graph.reduce_mean"(%b) <{axes = array<i64>, keepdims = false}> : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
// GENERIC-NEXT:    %5 = "graph.reduce_sum"(%i) <{axes = array<i64: -2>, keepdims = false}> : (tensor<3x5xi32>) -> tensor<5xi32>
// GENERIC-NEXT:    %6 = "graph.reduce_max"(%p) <{axes = array<i64: 0>, keepdims = false}> : (tensor<6xi1>) -> tensor<i1>
// GENERIC-NEXT:    %7 = "graph.reduce_min"(%i) <{axes = array<i64: 0, 1>, keepdims = true}> : (tensor<3x5xi32>) -> tensor<1x1xi32>
// GENERIC-NEXT:    %8 = "graph.reduce_mean"(%z) <{axes = array<i64: 0>, keepdims = false}> : (tensor<0x3xf32>) -> tensor<3xf32>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @reduce(%a: tensor<4x8xf32>, %b: tensor<2x3x4xf16>, %i: tensor<3x5xi32>, %p: tensor<6xi1>, %z: tensor<0x3xf32>) {
  %0 = graph.reduce_sum %a axes [1] keepdims false : tensor<4x8xf32> to tensor<4xf32>
  %1 = graph.reduce_sum %a axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
  %2 = graph.reduce_max %b axes [0, -1] keepdims true : tensor<2x3x4xf16> to tensor<1x3x1xf16>
  %3 = graph.reduce_min %b axes [2, 0, 1] keepdims false : tensor<2x3x4xf16> to tensor<f16>
  %4 = graph.reduce_mean %b axes [] keepdims false : tensor<2x3x4xf16> to tensor<2x3x4xf16>
  %5 = graph.reduce_sum %i axes [-2] keepdims false : tensor<3x5xi32> to tensor<5xi32>
  %6 = graph.reduce_max %p axes [0] keepdims false : tensor<6xi1> to tensor<i1>
  %7 = graph.reduce_min %i axes [0, 1] keepdims true : tensor<3x5xi32> to tensor<1x1xi32>
  %8 = graph.reduce_mean %z axes [0] keepdims false : tensor<0x3xf32> to tensor<3xf32>
  func.return
}

// softmax along the last axis (named both ways), a middle axis, rank 1; f32, f16, bf16.
// CHECK-LABEL: func.func @softmax(%a: tensor<8x32xf32>, %b: tensor<2x3x4xf16>, %v: tensor<7xbf16>) -> tensor<8x32xf32> {
// CHECK-NEXT:    %0 = graph.softmax %a axis 1 : tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.softmax %0 axis -1 : tensor<8x32xf32>
// CHECK-NEXT:    %2 = graph.softmax %b axis 1 : tensor<2x3x4xf16>
// CHECK-NEXT:    %3 = graph.softmax %v axis 0 : tensor<7xbf16>
// CHECK-NEXT:    func.return %1 : tensor<8x32xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "softmax"
// GENERIC-SAME:  , function_type = (tensor<8x32xf32>, tensor<2x3x4xf16>, tensor<7xbf16>) -> tensor<8x32xf32>}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<8x32xf32>, %b: tensor<2x3x4xf16>, %v: tensor<7xbf16>):
// GENERIC-NEXT:    %0 = "graph.softmax"(%a) <{axis = 1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.softmax"(%0) <{axis = -1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %2 = "graph.softmax"(%b) <{axis = 1 : i64}> : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16>
// GENERIC-NEXT:    %3 = "graph.softmax"(%v) <{axis = 0 : i64}> : (tensor<7xbf16>) -> tensor<7xbf16>
// GENERIC-NEXT:    "func.return"(%1) : (tensor<8x32xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @softmax(%a: tensor<8x32xf32>, %b: tensor<2x3x4xf16>, %v: tensor<7xbf16>) -> tensor<8x32xf32> {
  %0 = graph.softmax %a axis 1 : tensor<8x32xf32>
  %1 = graph.softmax %0 axis -1 : tensor<8x32xf32>
  %2 = graph.softmax %b axis 1 : tensor<2x3x4xf16>
  %3 = graph.softmax %v axis 0 : tensor<7xbf16>
  func.return %1 : tensor<8x32xf32>
}

// layer_norm over the last axis, over the last two (negative and positive axis), over all of a
// rank-1 tensor; f32 and f16; epsilon as written and as printed.
// CHECK-LABEL: func.func @layer_norm(%x: tensor<8x32xf32>, %s: tensor<32xf32>, %y: tensor<2x3x4xf16>, %t: tensor<3x4xf16>, %v: tensor<5xf32>, %w: tensor<5xf32>) {
// CHECK-NEXT:    %0 = graph.layer_norm %x, %s, %s axis -1 epsilon 1.000000e-05 : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.layer_norm %y, %t, %t axis -2 epsilon 1.000000e-06 : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x3x4xf16>
// CHECK-NEXT:    %2 = graph.layer_norm %y, %t, %t axis 1 epsilon 0.000000e+00 : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x3x4xf16>
// CHECK-NEXT:    %3 = graph.layer_norm %v, %w, %w axis 0 epsilon 5.000000e-01 : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "layer_norm"
// GENERIC-SAME:  , function_type = (tensor<8x32xf32>, tensor<32xf32>, tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<5xf32>, tensor<5xf32>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<8x32xf32>, %s: tensor<32xf32>, %y: tensor<2x3x4xf16>, %t: tensor<3x4xf16>, %v: tensor<5xf32>, %w: tensor<5xf32>):
// GENERIC-NEXT:    %0 = "graph.layer_norm"(%x, %s, %s) <{axis = -1 : i64, epsilon = 1.000000e-05 : f32}> : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.layer_norm"(%y, %t, %t) <{axis = -2 : i64, epsilon = 1.000000e-06 : f32}> : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x3x4xf16>
// GENERIC-NEXT:    %2 = "graph.layer_norm"(%y, %t, %t) <{axis = 1 : i64, epsilon = 0.000000e+00 : f32}> : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x3x4xf16>
// GENERIC-NEXT:    %3 = "graph.layer_norm"(%v, %w, %w) <{axis = 0 : i64, epsilon = 5.000000e-01 : f32}> : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @layer_norm(%x: tensor<8x32xf32>, %s: tensor<32xf32>, %y: tensor<2x3x4xf16>, %t: tensor<3x4xf16>, %v: tensor<5xf32>, %w: tensor<5xf32>) {
  %0 = graph.layer_norm %x, %s, %s axis -1 epsilon 1.0e-05 : (tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %1 = graph.layer_norm %y, %t, %t axis -2 epsilon 1.000000e-06 : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x3x4xf16>
  %2 = graph.layer_norm %y, %t, %t axis 1 epsilon 0.0 : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x3x4xf16>
  %3 = graph.layer_norm %v, %w, %w axis 0 epsilon 0.5 : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  func.return
}

// conv2d: with and without bias, "same" padding, asymmetric padding, strides, dilations, a
// grouped and a depthwise convolution, f16.
// CHECK-LABEL: func.func @conv2d(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %g: tensor<1x4x5x7xf16>, %gw: tensor<6x2x1x3xf16>, %dw: tensor<4x1x3x3xf16>) {
// CHECK-NEXT:    %0 = graph.conv2d %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT:    %1 = graph.conv2d %x, %w strides [2, 3] pads [0, 2, 1, 0] dilations [1, 1] group 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x3xf32>
// CHECK-NEXT:    %2 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [2, 3] group 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x2xf32>
// CHECK-NEXT:    %3 = graph.conv2d %g, %gw strides [1, 1] pads [0, 1, 0, 1] dilations [1, 1] group 2 : (tensor<1x4x5x7xf16>, tensor<6x2x1x3xf16>) -> tensor<1x6x5x7xf16>
// CHECK-NEXT:    %4 = graph.conv2d %g, %dw strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] group 4 : (tensor<1x4x5x7xf16>, tensor<4x1x3x3xf16>) -> tensor<1x4x3x4xf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "conv2d"
// GENERIC-SAME:  , function_type = (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1x4x5x7xf16>, tensor<6x2x1x3xf16>, tensor<4x1x3x3xf16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %g: tensor<1x4x5x7xf16>, %gw: tensor<6x2x1x3xf16>, %dw: tensor<4x1x3x3xf16>):
// GENERIC-NEXT:    %0 = "graph.conv2d"(%x, %w, %b) <{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
// GENERIC-NEXT:    %1 = "graph.conv2d"(%x, %w) <{strides = array<i64: 2, 3>, pads = array<i64: 0, 2, 1, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x3xf32>
// GENERIC-NEXT:    %2 = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 3>, group = 1 : i64}> : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x2xf32>
// GENERIC-NEXT:    %3 = "graph.conv2d"(%g, %gw) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 1>, dilations = array<i64: 1, 1>, group = 2 : i64}> : (tensor<1x4x5x7xf16>, tensor<6x2x1x3xf16>) -> tensor<1x6x5x7xf16>
// GENERIC-NEXT:    %4 = "graph.conv2d"(%g, %dw) <{strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64}> : (tensor<1x4x5x7xf16>, tensor<4x1x3x3xf16>) -> tensor<1x4x3x4xf16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @conv2d(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>, %g: tensor<1x4x5x7xf16>, %gw: tensor<6x2x1x3xf16>, %dw: tensor<4x1x3x3xf16>) {
  %0 = graph.conv2d %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %1 = graph.conv2d %x, %w strides [2, 3] pads [0, 2, 1, 0] dilations [1, 1] group 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x3xf32>
  %2 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [2, 3] group 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x2xf32>
  %3 = graph.conv2d %g, %gw strides [1, 1] pads [0, 1, 0, 1] dilations [1, 1] group 2 : (tensor<1x4x5x7xf16>, tensor<6x2x1x3xf16>) -> tensor<1x6x5x7xf16>
  %4 = graph.conv2d %g, %dw strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] group 4 : (tensor<1x4x5x7xf16>, tensor<4x1x3x3xf16>) -> tensor<1x4x3x4xf16>
  func.return
}

// max_pool2d and avg_pool2d: non-overlapping, overlapping with "same" padding, asymmetric
// kernels, strides and pads; f32, f16, bf16.
// CHECK-LABEL: func.func @pool2d(%x: tensor<2x3x8x8xf32>, %h: tensor<1x2x5x7xf16>, %b: tensor<1x1x4x4xbf16>) {
// CHECK-NEXT:    %0 = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<2x3x8x8xf32> to tensor<2x3x4x4xf32>
// CHECK-NEXT:    %1 = graph.avg_pool2d %x kernel [3, 3] strides [1, 1] pads [1, 1, 1, 1] : tensor<2x3x8x8xf32> to tensor<2x3x8x8xf32>
// CHECK-NEXT:    %2 = graph.max_pool2d %h kernel [3, 2] strides [2, 1] pads [2, 0, 1, 1] : tensor<1x2x5x7xf16> to tensor<1x2x3x7xf16>
// CHECK-NEXT:    %3 = graph.avg_pool2d %h kernel [1, 4] strides [1, 3] pads [0, 3, 0, 0] : tensor<1x2x5x7xf16> to tensor<1x2x5x3xf16>
// CHECK-NEXT:    %4 = graph.avg_pool2d %b kernel [4, 4] strides [1, 1] pads [0, 0, 0, 0] : tensor<1x1x4x4xbf16> to tensor<1x1x1x1xbf16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "pool2d"
// GENERIC-SAME:  , function_type = (tensor<2x3x8x8xf32>, tensor<1x2x5x7xf16>, tensor<1x1x4x4xbf16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<2x3x8x8xf32>, %h: tensor<1x2x5x7xf16>, %b: tensor<1x1x4x4xbf16>):
// GENERIC-NEXT:    %0 = "graph.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}> : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
// GENERIC-NEXT:    %1 = "graph.avg_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>}> : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
// GENERIC-NEXT:    %2 = "graph.max_pool2d"(%h) <{kernel = array<i64: 3, 2>, strides = array<i64: 2, 1>, pads = array<i64: 2, 0, 1, 1>}> : (tensor<1x2x5x7xf16>) -> tensor<1x2x3x7xf16>
// GENERIC-NEXT:    %3 = "graph.avg_pool2d"(%h) <{kernel = array<i64: 1, 4>, strides = array<i64: 1, 3>, pads = array<i64: 0, 3, 0, 0>}> : (tensor<1x2x5x7xf16>) -> tensor<1x2x5x3xf16>
// GENERIC-NEXT:    %4 = "graph.avg_pool2d"(%b) <{kernel = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}> : (tensor<1x1x4x4xbf16>) -> tensor<1x1x1x1xbf16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @pool2d(%x: tensor<2x3x8x8xf32>, %h: tensor<1x2x5x7xf16>, %b: tensor<1x1x4x4xbf16>) {
  %0 = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<2x3x8x8xf32> to tensor<2x3x4x4xf32>
  %1 = graph.avg_pool2d %x kernel [3, 3] strides [1, 1] pads [1, 1, 1, 1] : tensor<2x3x8x8xf32> to tensor<2x3x8x8xf32>
  %2 = graph.max_pool2d %h kernel [3, 2] strides [2, 1] pads [2, 0, 1, 1] : tensor<1x2x5x7xf16> to tensor<1x2x3x7xf16>
  %3 = graph.avg_pool2d %h kernel [1, 4] strides [1, 3] pads [0, 3, 0, 0] : tensor<1x2x5x7xf16> to tensor<1x2x5x3xf16>
  %4 = graph.avg_pool2d %b kernel [4, 4] strides [1, 1] pads [0, 0, 0, 0] : tensor<1x1x4x4xbf16> to tensor<1x1x1x1xbf16>
  func.return
}

// concat of one, two and three operands, negative axis, empty operands, i1.
// CHECK-LABEL: func.func @concat(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x1xf32>, %e: tensor<0x3xf32>, %p: tensor<2xi1>, %q: tensor<3xi1>) {
// CHECK-NEXT:    %0 = graph.concat %a axis 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT:    %2 = graph.concat %a, %c, %a axis -1 : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
// CHECK-NEXT:    %3 = graph.concat %e, %a, %e axis 0 : (tensor<0x3xf32>, tensor<2x3xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %4 = graph.concat %p, %q axis 0 : (tensor<2xi1>, tensor<3xi1>) -> tensor<5xi1>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "concat"
// GENERIC-SAME:  , function_type = (tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x1xf32>, tensor<0x3xf32>, tensor<2xi1>, tensor<3xi1>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x1xf32>, %e: tensor<0x3xf32>, %p: tensor<2xi1>, %q: tensor<3xi1>):
// GENERIC-NEXT:    %0 = "graph.concat"(%a) <{axis = 0 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    %1 = "graph.concat"(%a, %b) <{axis = 0 : i64}> : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
// GENERIC-NEXT:    %2 = "graph.concat"(%a, %c, %a) <{axis = -1 : i64}> : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
// GENERIC-NEXT:    %3 = "graph.concat"(%e, %a, %e) <{axis = 0 : i64}> : (tensor<0x3xf32>, tensor<2x3xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    %4 = "graph.concat"(%p, %q) <{axis = 0 : i64}> : (tensor<2xi1>, tensor<3xi1>) -> tensor<5xi1>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<2x1xf32>, %e: tensor<0x3xf32>, %p: tensor<2xi1>, %q: tensor<3xi1>) {
  %0 = graph.concat %a axis 0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %2 = graph.concat %a, %c, %a axis -1 : (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x3xf32>) -> tensor<2x7xf32>
  %3 = graph.concat %e, %a, %e axis 0 : (tensor<0x3xf32>, tensor<2x3xf32>, tensor<0x3xf32>) -> tensor<2x3xf32>
  %4 = graph.concat %p, %q axis 0 : (tensor<2xi1>, tensor<3xi1>) -> tensor<5xi1>
  func.return
}

// slice: a window, strides, negative starts/ends (from the end), a reversal through index 0,
// bounds clamped to the dimension (ONNX's INT64_MAX/MIN sentinels), empty results, rank 0.
// CHECK-LABEL: func.func @slice(%x: tensor<4x4xf32>, %v: tensor<10xi32>, %s: tensor<f16>) {
// CHECK-NEXT:    %0 = graph.slice %x starts [1, 0] ends [3, 4] steps [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
// CHECK-NEXT:    %1 = graph.slice %x starts [0, 1] ends [4, 4] steps [2, 2] : tensor<4x4xf32> to tensor<2x2xf32>
// CHECK-NEXT:    %2 = graph.slice %x starts [-3, 0] ends [-1, -1] steps [1, 1] : tensor<4x4xf32> to tensor<2x3xf32>
// CHECK-NEXT:    %3 = graph.slice %v starts [9] ends [-11] steps [-1] : tensor<10xi32> to tensor<10xi32>
// CHECK-NEXT:    %4 = graph.slice %v starts [9223372036854775807] ends [-9223372036854775808] steps [-3] : tensor<10xi32> to tensor<4xi32>
// CHECK-NEXT:    %5 = graph.slice %v starts [-100] ends [100] steps [4] : tensor<10xi32> to tensor<3xi32>
// CHECK-NEXT:    %6 = graph.slice %v starts [5] ends [2] steps [1] : tensor<10xi32> to tensor<0xi32>
// CHECK-NEXT:    %7 = graph.slice %x starts [0, -1] ends [4, -1] steps [1, -1] : tensor<4x4xf32> to tensor<4x0xf32>
// CHECK-NEXT:    %8 = graph.slice %s starts [] ends [] steps [] : tensor<f16> to tensor<f16>
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "slice"
// GENERIC-SAME:  , function_type = (tensor<4x4xf32>, tensor<10xi32>, tensor<f16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<4x4xf32>, %v: tensor<10xi32>, %s: tensor<f16>):
// GENERIC-NEXT:    %0 = "graph.slice"(%x) <{starts = array<i64: 1, 0>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>}> : (tensor<4x4xf32>) -> tensor<2x4xf32>
// GENERIC-NEXT:    %1 = "graph.slice"(%x) <{starts = array<i64: 0, 1>, ends = array<i64: 4, 4>, steps = array<i64: 2, 2>}> : (tensor<4x4xf32>) -> tensor<2x2xf32>
// GENERIC-NEXT:    %2 = "graph.slice"(%x) <{starts = array<i64: -3, 0>, ends = array<i64: -1, -1>, steps = array<i64: 1, 1>}> : (tensor<4x4xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:    %3 = "graph.slice"(%v) <{starts = array<i64: 9>, ends = array<i64: -11>, steps = array<i64: -1>}> : (tensor<10xi32>) -> tensor<10xi32>
// GENERIC-NEXT:    %4 = "graph.slice"(%v) <{starts = array<i64: 9223372036854775807>, ends = array<i64: -9223372036854775808>, steps = array<i64: -3>}> : (tensor<10xi32>) -> tensor<4xi32>
// GENERIC-NEXT:    %5 = "graph.slice"(%v) <{starts = array<i64: -100>, ends = array<i64: 100>, steps = array<i64: 4>}> : (tensor<10xi32>) -> tensor<3xi32>
// GENERIC-NEXT:    %6 = "graph.slice"(%v) <{starts = array<i64: 5>, ends = array<i64: 2>, steps = array<i64: 1>}> : (tensor<10xi32>) -> tensor<0xi32>
// GENERIC-NEXT:    %7 = "graph.slice"(%x) <{starts = array<i64: 0, -1>, ends = array<i64: 4, -1>, steps = array<i64: 1, -1>}> : (tensor<4x4xf32>) -> tensor<4x0xf32>
// GENERIC-NEXT:    %8 = "graph.slice"(%s) <{starts = array<i64>, ends = array<i64>, steps = array<i64>}> : (tensor<f16>) -> tensor<f16>
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @slice(%x: tensor<4x4xf32>, %v: tensor<10xi32>, %s: tensor<f16>) {
  %0 = graph.slice %x starts [1, 0] ends [3, 4] steps [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
  %1 = graph.slice %x starts [0, 1] ends [4, 4] steps [2, 2] : tensor<4x4xf32> to tensor<2x2xf32>
  %2 = graph.slice %x starts [-3, 0] ends [-1, -1] steps [1, 1] : tensor<4x4xf32> to tensor<2x3xf32>
  %3 = graph.slice %v starts [9] ends [-11] steps [-1] : tensor<10xi32> to tensor<10xi32>
  %4 = graph.slice %v starts [9223372036854775807] ends [-9223372036854775808] steps [-3] : tensor<10xi32> to tensor<4xi32>
  %5 = graph.slice %v starts [-100] ends [100] steps [4] : tensor<10xi32> to tensor<3xi32>
  %6 = graph.slice %v starts [5] ends [2] steps [1] : tensor<10xi32> to tensor<0xi32>
  %7 = graph.slice %x starts [0, -1] ends [4, -1] steps [1, -1] : tensor<4x4xf32> to tensor<4x0xf32>
  %8 = graph.slice %s starts [] ends [] steps [] : tensor<f16> to tensor<f16>
  func.return
}

// The new ops written in the generic form of the spec (bare `true`/`false` for keepdims, an
// explicit `: f32` epsilon, `: i64` integers), printed back in the custom syntax.
// CHECK-LABEL: func.func @structured_generic(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %m: tensor<4x4xf32>, %s: tensor<4xf32>) -> tensor<1x3x1x1xf32> {
// CHECK-NEXT:    %0 = graph.matmul %m, %m : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %1 = graph.transpose %0 perm [1, 0] : tensor<4x4xf32> to tensor<4x4xf32>
// CHECK-NEXT:    %2 = graph.reduce_sum %1 axes [0] keepdims true : tensor<4x4xf32> to tensor<1x4xf32>
// CHECK-NEXT:    %3 = graph.reduce_max %1 axes [-1] keepdims false : tensor<4x4xf32> to tensor<4xf32>
// CHECK-NEXT:    %4 = graph.reduce_min %1 axes [] keepdims false : tensor<4x4xf32> to tensor<4x4xf32>
// CHECK-NEXT:    %5 = graph.reduce_mean %1 axes [0, 1] keepdims true : tensor<4x4xf32> to tensor<1x1xf32>
// CHECK-NEXT:    %6 = graph.softmax %1 axis 1 : tensor<4x4xf32>
// CHECK-NEXT:    %7 = graph.layer_norm %6, %s, %s axis -1 epsilon 1.000000e-05 : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %8 = graph.concat %7, %2 axis 0 : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<5x4xf32>
// CHECK-NEXT:    %9 = graph.slice %8 starts [4, 0] ends [-6, 4] steps [-2, 1] : tensor<5x4xf32> to tensor<3x4xf32>
// CHECK-NEXT:    %10 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    %11 = graph.max_pool2d %10 kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<1x3x2x2xf32> to tensor<1x3x1x1xf32>
// CHECK-NEXT:    %12 = graph.avg_pool2d %10 kernel [2, 2] strides [1, 1] pads [1, 1, 0, 0] : tensor<1x3x2x2xf32> to tensor<1x3x2x2xf32>
// CHECK-NEXT:    func.return %11 : tensor<1x3x1x1xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "structured_generic"
// GENERIC-SAME:  , function_type = (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<1x3x1x1xf32>}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %m: tensor<4x4xf32>, %s: tensor<4xf32>):
// GENERIC-NEXT:    %0 = "graph.matmul"(%m, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// GENERIC-NEXT:    %1 = "graph.transpose"(%0) <{perm = array<i64: 1, 0>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
// GENERIC-NEXT:    %2 = "graph.reduce_sum"(%1) <{axes = array<i64: 0>, keepdims = true}> : (tensor<4x4xf32>) -> tensor<1x4xf32>
// GENERIC-NEXT:    %3 = "graph.reduce_max"(%1) <{axes = array<i64: -1>, keepdims = false}> : (tensor<4x4xf32>) -> tensor<4xf32>
// GENERIC-NEXT:    %4 = "graph.reduce_min"(%1) <{axes = array<i64>, keepdims = false}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
// GENERIC-NEXT:    %5 = "graph.reduce_mean"(%1) <{axes = array<i64: 0, 1>, keepdims = true}> : (tensor<4x4xf32>) -> tensor<1x1xf32>
// GENERIC-NEXT:    %6 = "graph.softmax"(%1) <{axis = 1 : i64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
// GENERIC-NEXT:    %7 = "graph.layer_norm"(%6, %s, %s) <{axis = -1 : i64, epsilon = 1.000000e-05 : f32}> : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// GENERIC-NEXT:    %8 = "graph.concat"(%7, %2) <{axis = 0 : i64}> : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<5x4xf32>
// GENERIC-NEXT:    %9 = "graph.slice"(%8) <{starts = array<i64: 4, 0>, ends = array<i64: -6, 4>, steps = array<i64: -2, 1>}> : (tensor<5x4xf32>) -> tensor<3x4xf32>
// GENERIC-NEXT:    %10 = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
// GENERIC-NEXT:    %11 = "graph.max_pool2d"(%10) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}> : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
// GENERIC-NEXT:    %12 = "graph.avg_pool2d"(%10) <{kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>}> : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
// GENERIC-NEXT:    "func.return"(%11) : (tensor<1x3x1x1xf32>) -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @structured_generic(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %m: tensor<4x4xf32>, %s: tensor<4xf32>) -> tensor<1x3x1x1xf32> {
  %0 = "graph.matmul"(%m, %m) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "graph.transpose"(%0) <{perm = array<i64: 1, 0>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "graph.reduce_sum"(%1) <{axes = array<i64: 0>, keepdims = true}> : (tensor<4x4xf32>) -> tensor<1x4xf32>
  %3 = "graph.reduce_max"(%1) <{axes = array<i64: -1>, keepdims = false}> : (tensor<4x4xf32>) -> tensor<4xf32>
  %4 = "graph.reduce_min"(%1) <{axes = array<i64>, keepdims = false}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %5 = "graph.reduce_mean"(%1) <{axes = array<i64: 0, 1>, keepdims = 1 : i1}> : (tensor<4x4xf32>) -> tensor<1x1xf32>
  %6 = "graph.softmax"(%1) <{axis = 1 : i64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %7 = "graph.layer_norm"(%6, %s, %s) <{axis = -1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %8 = "graph.concat"(%7, %2) <{axis = 0 : i64}> : (tensor<4x4xf32>, tensor<1x4xf32>) -> tensor<5x4xf32>
  %9 = "graph.slice"(%8) <{starts = array<i64: 4, 0>, ends = array<i64: -6, 4>, steps = array<i64: -2, 1>}> : (tensor<5x4xf32>) -> tensor<3x4xf32>
  %10 = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64}> : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
  %11 = "graph.max_pool2d"(%10) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}> : (tensor<1x3x2x2xf32>) -> tensor<1x3x1x1xf32>
  %12 = "graph.avg_pool2d"(%10) <{kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>}> : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  func.return %11 : tensor<1x3x1x1xf32>
}

// graph.fusion: kind, optional name, inputs bound to body arguments, one or several results,
// discardable attributes after `attributes`; the generic form carries kind and name as properties.
// CHECK-LABEL: func.func @fusion(%x: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>) {
// CHECK-NEXT:    %c = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %y, %m = graph.fusion reduction "fusion_0" (%a = %x : tensor<8x32xf32>, %bias = %b : tensor<32xf32>, %two = %c : tensor<f32>) -> (tensor<8x32xf32>, tensor<8x1xf32>) {
// CHECK-NEXT:      %0 = graph.add %a, %bias : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:      %1 = graph.mul %0, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
// CHECK-NEXT:      %2 = graph.softmax %1 axis 1 : tensor<8x32xf32>
// CHECK-NEXT:      %3 = graph.reduce_max %1 axes [1] keepdims true : tensor<8x32xf32> to tensor<8x1xf32>
// CHECK-NEXT:      graph.yield %2, %3 : tensor<8x32xf32>, tensor<8x1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %z = graph.fusion opaque (%p = %y : tensor<8x32xf32>) -> tensor<8x32xf32> attributes {note = 1 : i64} {
// CHECK-NEXT:      %0 = graph.transpose %p perm [0, 1] : tensor<8x32xf32> to tensor<8x32xf32>
// CHECK-NEXT:      graph.yield %0 : tensor<8x32xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %z, %m : tensor<8x32xf32>, tensor<8x1xf32>
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "fusion"
// GENERIC:         %y, %m = "graph.fusion"(%x, %b, %c) <{kind = "reduction", name = "fusion_0"}> ({
// GENERIC-NEXT:    ^bb0(%a: tensor<8x32xf32>, %bias: tensor<32xf32>, %two: tensor<f32>):
// GENERIC:           "graph.yield"(%2, %3) : (tensor<8x32xf32>, tensor<8x1xf32>) -> ()
// GENERIC-NEXT:    }) : (tensor<8x32xf32>, tensor<32xf32>, tensor<f32>) -> (tensor<8x32xf32>, tensor<8x1xf32>)
// GENERIC-NEXT:    %z = "graph.fusion"(%y) <{kind = "opaque"}> ({
// GENERIC:         }) {note = 1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
func.func @fusion(%x: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x1xf32>) {
  %c = graph.constant dense<2.0> : tensor<f32>
  %y, %m = graph.fusion reduction "fusion_0" (%a = %x : tensor<8x32xf32>, %bias = %b : tensor<32xf32>, %two = %c : tensor<f32>) -> (tensor<8x32xf32>, tensor<8x1xf32>) {
    %0 = graph.add %a, %bias : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %1 = graph.mul %0, %two : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
    %2 = graph.softmax %1 axis 1 : tensor<8x32xf32>
    %3 = graph.reduce_max %1 axes [1] keepdims true : tensor<8x32xf32> to tensor<8x1xf32>
    graph.yield %2, %3 : tensor<8x32xf32>, tensor<8x1xf32>
  }
  %z = "graph.fusion"(%y) <{kind = "opaque"}> ({
  ^bb0(%p: tensor<8x32xf32>):
    %4 = "graph.transpose"(%p) <{perm = array<i64: 0, 1>}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
    "graph.yield"(%4) : (tensor<8x32xf32>) -> ()
  }) {note = 1 : i64} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %z, %m : tensor<8x32xf32>, tensor<8x1xf32>
}
