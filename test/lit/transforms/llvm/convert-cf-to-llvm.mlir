// RUN: mlc-opt %s --split-input-file -p convert-cf-to-llvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-cf-to-llvm | mlc-opt --split-input-file | filecheck %s

// A loop after convert-scf-to-cf: the index block argument becomes i64, cast back to index at the
// top of its block for the ops not converted yet; operands passed to it are cast to i64.
// CHECK-LABEL: llvm.func @loop(%n: i64)
// CHECK-NEXT:    %bound = builtin.unrealized_conversion_cast %n : i64 to index
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[C0:.*]] = builtin.unrealized_conversion_cast %c0 : index to i64
// CHECK-NEXT:    llvm.br ^bb1(%[[C0]], %zero : i64, f32)
// CHECK-NEXT:  ^bb1(%i: i64, %acc: f32):
// CHECK-NEXT:    %[[I:.*]] = builtin.unrealized_conversion_cast %i : i64 to index
// CHECK-NEXT:    %more = arith.cmpi slt, %[[I]], %bound : index
// CHECK-NEXT:    llvm.cond_br %more, ^bb2, ^bb3
// CHECK-NEXT:  ^bb2:
// CHECK-NEXT:    %next = arith.addi %[[I]], %c1 : index
// CHECK-NEXT:    %sum = arith.addf %acc, %acc : f32
// CHECK-NEXT:    %[[NEXT:.*]] = builtin.unrealized_conversion_cast %next : index to i64
// CHECK-NEXT:    llvm.br ^bb1(%[[NEXT]], %sum : i64, f32)
// CHECK-NEXT:  ^bb3:
// CHECK-NEXT:    llvm.return
llvm.func @loop(%n: i64) {
  %bound = builtin.unrealized_conversion_cast %n : i64 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  cf.br ^bb1(%c0, %zero : index, f32)
^bb1(%i: index, %acc: f32):
  %more = arith.cmpi slt, %i, %bound : index
  cf.cond_br %more, ^bb2, ^bb3
^bb2:
  %next = arith.addi %i, %c1 : index
  %sum = arith.addf %acc, %acc : f32
  cf.br ^bb1(%next, %sum : index, f32)
^bb3:
  llvm.return
}

// -----

// Conditional branches forward operands on both edges; an llvm branch already in place gets its
// operands cast when the block it targets changes type. The casts that cancel are folded.
// CHECK-LABEL: llvm.func @diamond(%c: i1, %a: i64, %b: i64)
// CHECK-NEXT:    llvm.cond_br %c, ^bb1(%a : i64), ^bb2(%b : i64)
// CHECK-NEXT:  ^bb1(%x: i64):
// CHECK-NEXT:    llvm.br ^bb3(%x : i64)
// CHECK-NEXT:  ^bb2(%y: i64):
// CHECK-NEXT:    llvm.br ^bb3(%y : i64)
// CHECK-NEXT:  ^bb3(%r: i64):
// CHECK-NEXT:    llvm.return
llvm.func @diamond(%c: i1, %a: i64, %b: i64) {
  %ai = builtin.unrealized_conversion_cast %a : i64 to index
  %bi = builtin.unrealized_conversion_cast %b : i64 to index
  cf.cond_br %c, ^bb1(%ai : index), ^bb2(%bi : index)
^bb1(%x: index):
  llvm.br ^bb3(%x : index)
^bb2(%y: index):
  cf.br ^bb3(%y : index)
^bb3(%r: index):
  llvm.return
}

// -----

// cf.switch becomes a chain of comparisons, one block per case after the first, ending in the
// default successor.
// CHECK-LABEL: llvm.func @switch(%flag: i32, %v: f32)
// CHECK-NEXT:    %[[C0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[E0:.*]] = llvm.icmp "eq" %flag, %[[C0]] : i32
// CHECK-NEXT:    llvm.cond_br %[[E0]], ^[[CASE0:.*]](%v : f32), ^[[TEST1:.*]]
// CHECK-NEXT:  ^[[TEST1]]:
// CHECK-NEXT:    %[[C5:.*]] = llvm.mlir.constant(5 : i32) : i32
// CHECK-NEXT:    %[[E5:.*]] = llvm.icmp "eq" %flag, %[[C5]] : i32
// CHECK-NEXT:    llvm.cond_br %[[E5]], ^{{.*}}, ^{{.*}}
// CHECK-NEXT:  ^[[CASE0]](%x: f32):
llvm.func @switch(%flag: i32, %v: f32) {
  cf.switch %flag : i32, [
    default: ^bb3,
    0: ^bb1(%v : f32),
    5: ^bb2
  ]
^bb1(%x: f32):
  llvm.br ^bb3
^bb2:
  llvm.br ^bb3
^bb3:
  llvm.return
}

// -----

// Host functions keep their branches.
// CHECK-LABEL: func.func @host(%c: i1, %a: index) -> index
// CHECK-NEXT:    cf.cond_br %c, ^bb1(%a : index), ^bb1(%a : index)
// CHECK-NEXT:  ^bb1(%r: index):
// CHECK-NEXT:    func.return %r : index
func.func @host(%c: i1, %a: index) -> index {
  cf.cond_br %c, ^bb1(%a : index), ^bb1(%a : index)
^bb1(%r: index):
  func.return %r : index
}
