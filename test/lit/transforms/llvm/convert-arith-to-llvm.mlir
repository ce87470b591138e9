// RUN: mlc-opt %s --split-input-file -p convert-arith-to-llvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-arith-to-llvm | mlc-opt --split-input-file | filecheck %s

// Integer arithmetic on index becomes i64 arithmetic; the parameter cast to index at entry is
// looked through, overflow flags are kept.
// CHECK-LABEL: llvm.func @integers(%n: i64, %a: i32, %b: i32)
// CHECK-NEXT:    %c3 = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %sum = llvm.add %n, %c3 : i64
// CHECK-NEXT:    %product = llvm.mul %sum, %sum overflow<nsw> : i64
// CHECK-NEXT:    %difference = llvm.sub %a, %b : i32
// CHECK-NEXT:    %quotient = llvm.sdiv %a, %b : i32
// CHECK-NEXT:    %uquotient = llvm.udiv %a, %b : i32
// CHECK-NEXT:    %remainder = llvm.srem %a, %b : i32
// CHECK-NEXT:    %uremainder = llvm.urem %a, %b : i32
// CHECK-NEXT:    %and = llvm.and %a, %b : i32
// CHECK-NEXT:    %or = llvm.or %a, %b : i32
// CHECK-NEXT:    %xor = llvm.xor %a, %b : i32
// CHECK-NEXT:    %shl = llvm.shl %a, %b : i32
// CHECK-NEXT:    %ashr = llvm.ashr %a, %b : i32
// CHECK-NEXT:    %lshr = llvm.lshr %a, %b : i32
// CHECK-NEXT:    llvm.return
llvm.func @integers(%n: i64, %a: i32, %b: i32) {
  %i = builtin.unrealized_conversion_cast %n : i64 to index
  %c3 = arith.constant 3 : index
  %sum = arith.addi %i, %c3 : index
  %product = arith.muli %sum, %sum overflow<nsw> : index
  %difference = arith.subi %a, %b : i32
  %quotient = arith.divsi %a, %b : i32
  %uquotient = arith.divui %a, %b : i32
  %remainder = arith.remsi %a, %b : i32
  %uremainder = arith.remui %a, %b : i32
  %and = arith.andi %a, %b : i32
  %or = arith.ori %a, %b : i32
  %xor = arith.xori %a, %b : i32
  %shl = arith.shli %a, %b : i32
  %ashr = arith.shrsi %a, %b : i32
  %lshr = arith.shrui %a, %b : i32
  llvm.return
}

// -----

// Float arithmetic keeps its fast-math flags. maxnumf / minnumf ignore NaNs like LLVM's maxnum;
// maximumf / minimumf propagate them: LLVM's maximum / minimum, mangled by type.
// CHECK-LABEL: llvm.func @floats(%x: f32, %y: f32, %h: f16, %v: vector<4xf32>)
// CHECK-NEXT:    %sum = llvm.fadd %x, %y {fastmathFlags = #llvm.fastmath<fast>} : f32
// CHECK-NEXT:    %difference = llvm.fsub %x, %y : f32
// CHECK-NEXT:    %product = llvm.fmul %x, %y : f32
// CHECK-NEXT:    %quotient = llvm.fdiv %x, %y : f32
// CHECK-NEXT:    %negated = llvm.fneg %x : f32
// CHECK-NEXT:    %maxnum = llvm.intr.maxnum(%x, %y) : (f32, f32) -> f32
// CHECK-NEXT:    %minnum = llvm.intr.minnum(%x, %y) : (f32, f32) -> f32
// CHECK-NEXT:    %maximum = llvm.call_intrinsic "llvm.maximum.f32"(%x, %y) : (f32, f32) -> f32
// CHECK-NEXT:    %minimum = llvm.call_intrinsic "llvm.minimum.f16"(%h, %h) : (f16, f16) -> f16
// CHECK-NEXT:    %vmaximum = llvm.call_intrinsic "llvm.maximum.v4f32"(%v, %v) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %vsum = llvm.fadd %v, %v : vector<4xf32>
// CHECK-NEXT:    %vnegated = llvm.fneg %v : vector<4xf32>
llvm.func @floats(%x: f32, %y: f32, %h: f16, %v: vector<4xf32>) {
  %sum = arith.addf %x, %y fastmath<fast> : f32
  %difference = arith.subf %x, %y : f32
  %product = arith.mulf %x, %y : f32
  %quotient = arith.divf %x, %y : f32
  %negated = arith.negf %x : f32
  %maxnum = arith.maxnumf %x, %y : f32
  %minnum = arith.minnumf %x, %y : f32
  %maximum = arith.maximumf %x, %y : f32
  %minimum = arith.minimumf %h, %h : f16
  %vmaximum = arith.maximumf %v, %v : vector<4xf32>
  %vsum = arith.addf %v, %v : vector<4xf32>
  %vnegated = arith.negf %v : vector<4xf32>
  llvm.return
}

// -----

// Comparisons keep their predicate; cmpf false / true are constants.
// CHECK-LABEL: llvm.func @comparisons(%a: i32, %b: i32, %x: f64, %y: f64)
// CHECK-NEXT:    %eq = llvm.icmp "eq" %a, %b : i32
// CHECK-NEXT:    %ne = llvm.icmp "ne" %a, %b : i32
// CHECK-NEXT:    %slt = llvm.icmp "slt" %a, %b : i32
// CHECK-NEXT:    %sle = llvm.icmp "sle" %a, %b : i32
// CHECK-NEXT:    %sgt = llvm.icmp "sgt" %a, %b : i32
// CHECK-NEXT:    %sge = llvm.icmp "sge" %a, %b : i32
// CHECK-NEXT:    %ult = llvm.icmp "ult" %a, %b : i32
// CHECK-NEXT:    %ule = llvm.icmp "ule" %a, %b : i32
// CHECK-NEXT:    %ugt = llvm.icmp "ugt" %a, %b : i32
// CHECK-NEXT:    %uge = llvm.icmp "uge" %a, %b : i32
// CHECK-NEXT:    %false = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %oeq = llvm.fcmp "oeq" %x, %y : f64
// CHECK-NEXT:    %ogt = llvm.fcmp "ogt" %x, %y : f64
// CHECK-NEXT:    %oge = llvm.fcmp "oge" %x, %y : f64
// CHECK-NEXT:    %olt = llvm.fcmp "olt" %x, %y : f64
// CHECK-NEXT:    %ole = llvm.fcmp "ole" %x, %y : f64
// CHECK-NEXT:    %one = llvm.fcmp "one" %x, %y : f64
// CHECK-NEXT:    %ord = llvm.fcmp "ord" %x, %y : f64
// CHECK-NEXT:    %ueq = llvm.fcmp "ueq" %x, %y : f64
// CHECK-NEXT:    %ugt_f = llvm.fcmp "ugt" %x, %y : f64
// CHECK-NEXT:    %uge_f = llvm.fcmp "uge" %x, %y : f64
// CHECK-NEXT:    %ult_f = llvm.fcmp "ult" %x, %y : f64
// CHECK-NEXT:    %ule_f = llvm.fcmp "ule" %x, %y : f64
// CHECK-NEXT:    %une = llvm.fcmp "une" %x, %y : f64
// CHECK-NEXT:    %uno = llvm.fcmp "uno" %x, %y : f64
// CHECK-NEXT:    %true = llvm.mlir.constant(true) : i1
// CHECK-NEXT:    %selected = llvm.select %olt, %x, %y : i1, f64
llvm.func @comparisons(%a: i32, %b: i32, %x: f64, %y: f64) {
  %eq = arith.cmpi eq, %a, %b : i32
  %ne = arith.cmpi ne, %a, %b : i32
  %slt = arith.cmpi slt, %a, %b : i32
  %sle = arith.cmpi sle, %a, %b : i32
  %sgt = arith.cmpi sgt, %a, %b : i32
  %sge = arith.cmpi sge, %a, %b : i32
  %ult = arith.cmpi ult, %a, %b : i32
  %ule = arith.cmpi ule, %a, %b : i32
  %ugt = arith.cmpi ugt, %a, %b : i32
  %uge = arith.cmpi uge, %a, %b : i32
  %false = arith.cmpf false, %x, %y : f64
  %oeq = arith.cmpf oeq, %x, %y : f64
  %ogt = arith.cmpf ogt, %x, %y : f64
  %oge = arith.cmpf oge, %x, %y : f64
  %olt = arith.cmpf olt, %x, %y : f64
  %ole = arith.cmpf ole, %x, %y : f64
  %one = arith.cmpf one, %x, %y : f64
  %ord = arith.cmpf ord, %x, %y : f64
  %ueq = arith.cmpf ueq, %x, %y : f64
  %ugt_f = arith.cmpf ugt, %x, %y : f64
  %uge_f = arith.cmpf uge, %x, %y : f64
  %ult_f = arith.cmpf ult, %x, %y : f64
  %ule_f = arith.cmpf ule, %x, %y : f64
  %une = arith.cmpf une, %x, %y : f64
  %uno = arith.cmpf uno, %x, %y : f64
  %true = arith.cmpf true, %x, %y : f64
  %selected = arith.select %olt, %x, %y : f64
  llvm.return
}

// -----

// Casts: one llvm cast each (uitofp, fptosi and fptoui are mlc's additions to the dialect);
// index_cast sign-extends, truncates, or disappears between index and i64.
// CHECK-LABEL: llvm.func @casts(%x: f32, %d: f64, %h: f16, %a: i32, %w: i8, %n: i64)
// CHECK-NEXT:    %extf = llvm.fpext %x : f32 to f64
// CHECK-NEXT:    %truncf = llvm.fptrunc %d : f64 to f16
// CHECK-NEXT:    %extsi = llvm.sext %a : i32 to i64
// CHECK-NEXT:    %extui = llvm.zext %w : i8 to i32
// CHECK-NEXT:    %trunci = llvm.trunc %a : i32 to i8
// CHECK-NEXT:    %sitofp = llvm.sitofp %a : i32 to f32
// CHECK-NEXT:    %uitofp = llvm.uitofp %w : i8 to f16
// CHECK-NEXT:    %fptosi = llvm.fptosi %x : f32 to i32
// CHECK-NEXT:    %fptoui = llvm.fptoui %h : f16 to i8
// CHECK-NEXT:    %to_index = llvm.sext %a : i32 to i64
// CHECK-NEXT:    %to_i32 = llvm.trunc %n : i64 to i32
// CHECK-NEXT:    %bits = llvm.bitcast %x : f32 to i32
// CHECK-NEXT:    %sum = llvm.add %to_index, %n : i64
// CHECK-NEXT:    llvm.return
llvm.func @casts(%x: f32, %d: f64, %h: f16, %a: i32, %w: i8, %n: i64) {
  %i = builtin.unrealized_conversion_cast %n : i64 to index
  %extf = arith.extf %x : f32 to f64
  %truncf = arith.truncf %d : f64 to f16
  %extsi = arith.extsi %a : i32 to i64
  %extui = arith.extui %w : i8 to i32
  %trunci = arith.trunci %a : i32 to i8
  %sitofp = arith.sitofp %a : i32 to f32
  %uitofp = arith.uitofp %w : i8 to f16
  %fptosi = arith.fptosi %x : f32 to i32
  %fptoui = arith.fptoui %h : f16 to i8
  %to_index = arith.index_cast %a : i32 to index
  %to_i32 = arith.index_cast %i : index to i32
  %to_i64 = arith.index_cast %i : index to i64
  %bits = arith.bitcast %x : f32 to i32
  %sum = arith.addi %to_index, %i : index
  llvm.return
}

// -----

// 1-d vectors: splat and dense constants (vectors of index become vectors of i64), elementwise
// ops, select on a scalar condition. Integer min / max on vectors use LLVM's intrinsics.
// CHECK-LABEL: llvm.func @vectors(%v: vector<4xf32>, %w: vector<4xi32>, %c: i1)
// CHECK-NEXT:    %splat = llvm.mlir.constant(dense<1.500000e+00> : vector<4xf32>) : vector<4xf32>
// CHECK-NEXT:    %dense = llvm.mlir.constant(dense<[0, 1, 2, 3]> : vector<4xi32>) : vector<4xi32>
// CHECK-NEXT:    %indices = llvm.mlir.constant(dense<[0, 1, 2, 3]> : vector<4xi64>) : vector<4xi64>
// CHECK-NEXT:    %sum = llvm.fadd %v, %splat : vector<4xf32>
// CHECK-NEXT:    %product = llvm.mul %w, %dense : vector<4xi32>
// CHECK-NEXT:    %max = llvm.call_intrinsic "llvm.smax.v4i32"(%w, %dense) : (vector<4xi32>, vector<4xi32>) -> vector<4xi32>
// CHECK-NEXT:    %min = llvm.call_intrinsic "llvm.umin.v4i32"(%w, %dense) : (vector<4xi32>, vector<4xi32>) -> vector<4xi32>
// CHECK-NEXT:    %selected = llvm.select %c, %v, %sum : i1, vector<4xf32>
// CHECK-NEXT:    %bits = llvm.bitcast %v : vector<4xf32> to vector<4xi32>
// CHECK-NEXT:    %wide = llvm.fpext %v : vector<4xf32> to vector<4xf64>
llvm.func @vectors(%v: vector<4xf32>, %w: vector<4xi32>, %c: i1) {
  %splat = arith.constant dense<1.5> : vector<4xf32>
  %dense = arith.constant dense<[0, 1, 2, 3]> : vector<4xi32>
  %indices = arith.constant dense<[0, 1, 2, 3]> : vector<4xindex>
  %sum = arith.addf %v, %splat : vector<4xf32>
  %product = arith.muli %w, %dense : vector<4xi32>
  %max = arith.maxsi %w, %dense : vector<4xi32>
  %min = arith.minui %w, %dense : vector<4xi32>
  %selected = arith.select %c, %v, %sum : vector<4xf32>
  %bits = arith.bitcast %v : vector<4xf32> to vector<4xi32>
  %wide = arith.extf %v : vector<4xf32> to vector<4xf64>
  llvm.return
}

// -----

// Integer min / max on scalars: icmp + select.
// CHECK-LABEL: llvm.func @integer_min_max(%a: i32, %b: i32)
// CHECK-NEXT:    %[[GT:.*]] = llvm.icmp "sgt" %a, %b : i32
// CHECK-NEXT:    %maxsi = llvm.select %[[GT]], %a, %b : i1, i32
// CHECK-NEXT:    %[[LT:.*]] = llvm.icmp "slt" %a, %b : i32
// CHECK-NEXT:    %minsi = llvm.select %[[LT]], %a, %b : i1, i32
// CHECK-NEXT:    %[[UGT:.*]] = llvm.icmp "ugt" %a, %b : i32
// CHECK-NEXT:    %maxui = llvm.select %[[UGT]], %a, %b : i1, i32
// CHECK-NEXT:    %[[ULT:.*]] = llvm.icmp "ult" %a, %b : i32
// CHECK-NEXT:    %minui = llvm.select %[[ULT]], %a, %b : i1, i32
llvm.func @integer_min_max(%a: i32, %b: i32) {
  %maxsi = arith.maxsi %a, %b : i32
  %minsi = arith.minsi %a, %b : i32
  %maxui = arith.maxui %a, %b : i32
  %minui = arith.minui %a, %b : i32
  llvm.return
}

// -----

// Rounding divisions: the truncating quotient corrected by an extended i1, which works on vectors.
// CHECK-LABEL: llvm.func @rounding_divisions(%a: i32, %b: i32, %v: vector<2xi64>)
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %a, %b : i32
// CHECK-NEXT:    %[[R:.*]] = llvm.srem %a, %b : i32
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[INEXACT:.*]] = llvm.icmp "ne" %[[R]], %[[ZERO]] : i32
// CHECK-NEXT:    %[[SIGNS:.*]] = llvm.xor %a, %b : i32
// CHECK-NEXT:    %[[OPPOSITE:.*]] = llvm.icmp "slt" %[[SIGNS]], %[[ZERO]] : i32
// CHECK-NEXT:    %[[DOWN:.*]] = llvm.and %[[INEXACT]], %[[OPPOSITE]] : i1
// CHECK-NEXT:    %[[ONE:.*]] = llvm.zext %[[DOWN]] : i1 to i32
// CHECK-NEXT:    %floor = llvm.sub %[[Q]], %[[ONE]] : i32
// CHECK:         llvm.icmp "sge"
// CHECK:         %ceil = llvm.add
// CHECK-NEXT:    %[[UQ:.*]] = llvm.udiv %v, %v : vector<2xi64>
// CHECK-NEXT:    %[[UR:.*]] = llvm.urem %v, %v : vector<2xi64>
// CHECK-NEXT:    %[[VZERO:.*]] = llvm.mlir.constant(dense<0> : vector<2xi64>) : vector<2xi64>
// CHECK-NEXT:    %[[UINEXACT:.*]] = llvm.icmp "ne" %[[UR]], %[[VZERO]] : vector<2xi64>
// CHECK-NEXT:    %[[UONE:.*]] = llvm.zext %[[UINEXACT]] : vector<2xi1> to vector<2xi64>
// CHECK-NEXT:    %uceil = llvm.add %[[UQ]], %[[UONE]] : vector<2xi64>
llvm.func @rounding_divisions(%a: i32, %b: i32, %v: vector<2xi64>) {
  %floor = arith.floordivsi %a, %b : i32
  %ceil = arith.ceildivsi %a, %b : i32
  %uceil = arith.ceildivui %v, %v : vector<2xi64>
  llvm.return
}

// -----

// Extended arithmetic: the carry of an add, the high half of a product at twice the width.
// CHECK-LABEL: llvm.func @extended(%a: i32, %b: i32)
// CHECK-NEXT:    %sum = llvm.add %a, %b : i32
// CHECK-NEXT:    %carry = llvm.icmp "ult" %sum, %a : i32
// CHECK-NEXT:    %[[A:.*]] = llvm.zext %a : i32 to i64
// CHECK-NEXT:    %[[B:.*]] = llvm.zext %b : i32 to i64
// CHECK-NEXT:    %[[P:.*]] = llvm.mul %[[A]], %[[B]] : i64
// CHECK-NEXT:    %[[W:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[H:.*]] = llvm.lshr %[[P]], %[[W]] : i64
// CHECK-NEXT:    %low = llvm.trunc %[[P]] : i64 to i32
// CHECK-NEXT:    %high = llvm.trunc %[[H]] : i64 to i32
// CHECK-NEXT:    llvm.sext %a : i32 to i64
// CHECK:         %shigh = llvm.trunc
llvm.func @extended(%a: i32, %b: i32) {
  %sum, %carry = arith.addui_extended %a, %b : i32, i1
  %low, %high = arith.mului_extended %a, %b : i32
  %slow, %shigh = arith.mulsi_extended %a, %b : i32
  llvm.return
}

// -----

// Partial conversion: results used by ops not converted yet (scf.for, memref.store) are cast
// back to index; operands they produce (the induction variable) are cast to i64.
// CHECK-LABEL: llvm.func @partial(%p: !llvm.ptr)
// CHECK:         %c0 = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[C0:.*]] = builtin.unrealized_conversion_cast %c0 : i64 to index
// CHECK:         %c1 = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[C1:.*]] = builtin.unrealized_conversion_cast %c1 : i64 to index
// CHECK-NEXT:    scf.for %i = %[[C0]] to %{{.*}} step %[[C1]] {
// CHECK-NEXT:      %x = memref.load %m[%i] : memref<16xf32>
// CHECK-NEXT:      %twice = llvm.fadd %x, %x : f32
// CHECK-NEXT:      %[[I:.*]] = builtin.unrealized_conversion_cast %i : index to i64
// CHECK-NEXT:      %next = llvm.add %[[I]], %c1 : i64
// CHECK-NEXT:      %[[NEXT:.*]] = builtin.unrealized_conversion_cast %next : i64 to index
// CHECK-NEXT:      memref.store %twice, %m[%[[NEXT]]] : memref<16xf32>
llvm.func @partial(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<16xf32>
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %m[%i] : memref<16xf32>
    %twice = arith.addf %x, %x : f32
    %next = arith.addi %i, %c1 : index
    memref.store %twice, %m[%next] : memref<16xf32>
  }
  llvm.return
}

// -----

// Host functions (func.func) are left alone; kernels in nested modules are converted.
// CHECK-LABEL: func.func @host(%a: index, %b: index) -> index
// CHECK-NEXT:    %c = arith.constant 4 : index
// CHECK-NEXT:    %s = arith.addi %a, %b : index
// CHECK-NEXT:    %t = arith.muli %s, %c : index
// CHECK-NEXT:    func.return %t : index
// CHECK:       llvm.func @kernel(%a: i32)
// CHECK-NEXT:    %s = llvm.add %a, %a : i32
func.func @host(%a: index, %b: index) -> index {
  %c = arith.constant 4 : index
  %s = arith.addi %a, %b : index
  %t = arith.muli %s, %c : index
  func.return %t : index
}

builtin.module {
  llvm.func @kernel(%a: i32) {
    %s = arith.addi %a, %a : i32
    llvm.return
  }
}
