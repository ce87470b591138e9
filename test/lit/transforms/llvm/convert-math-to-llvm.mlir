// RUN: mlc-opt %s --split-input-file -p convert-math-to-llvm | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'convert-math-to-llvm{library=libdevice}' | filecheck %s --check-prefix=NV
// RUN: mlc-opt %s --split-input-file -p convert-math-to-llvm | mlc-opt --split-input-file | filecheck %s

// Library functions by float type: expf / exp with libm, __nv_expf / __nv_exp with libdevice,
// each declared once per module, at its top, in the order of first use.
// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    llvm.func @expf(f32) -> f32
// CHECK-NEXT:    llvm.func @exp(f64) -> f64
// CHECK-NEXT:    llvm.func @powf(f32, f32) -> f32
// CHECK-NEXT:    llvm.func @atan2(f64, f64) -> f64
// CHECK-NEXT:    llvm.func @log1pf(f32) -> f32
// CHECK-NEXT:    llvm.func @library(%x: f32, %d: f64)
// CHECK-NEXT:      %e = llvm.call @expf(%x) : (f32) -> f32
// CHECK-NEXT:      %e64 = llvm.call @exp(%d) : (f64) -> f64
// CHECK-NEXT:      %again = llvm.call @expf(%e) : (f32) -> f32
// CHECK-NEXT:      %p = llvm.call @powf(%x, %x) : (f32, f32) -> f32
// CHECK-NEXT:      %a = llvm.call @atan2(%d, %d) : (f64, f64) -> f64
// CHECK-NEXT:      %l = llvm.call @log1pf(%x) : (f32) -> f32
// NV-LABEL:    builtin.module {
// NV-NEXT:       llvm.func @__nv_expf(f32) -> f32
// NV-NEXT:       llvm.func @__nv_exp(f64) -> f64
// NV-NEXT:       llvm.func @__nv_powf(f32, f32) -> f32
// NV-NEXT:       llvm.func @__nv_atan2(f64, f64) -> f64
// NV-NEXT:       llvm.func @__nv_log1pf(f32) -> f32
// NV-NEXT:       llvm.func @library(%x: f32, %d: f64)
// NV-NEXT:         %e = llvm.call @__nv_expf(%x) : (f32) -> f32
llvm.func @library(%x: f32, %d: f64) {
  %e = math.exp %x : f32
  %e64 = math.exp %d : f64
  %again = math.exp %e : f32
  %p = math.powf %x, %x : f32
  %a = math.atan2 %d, %d : f64
  %l = math.log1p %x : f32
  llvm.return
}

// -----

// f16 is computed in f32; vectors are unrolled per element for library calls.
// CHECK-LABEL: llvm.func @tanhf(f32) -> f32
// CHECK-LABEL: llvm.func @half_and_vector(%h: f16, %v: vector<2xf32>)
// CHECK-NEXT:    %[[X:.*]] = llvm.fpext %h : f16 to f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.call @tanhf(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %t = llvm.fptrunc %[[Y]] : f32 to f16
// CHECK-NEXT:    %[[UNDEF:.*]] = llvm.mlir.undef : vector<2xf32>
// CHECK-NEXT:    %[[P0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[E0:.*]] = llvm.extractelement %v[%[[P0]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[R0:.*]] = llvm.call @tanhf(%[[E0]]) : (f32) -> f32
// CHECK-NEXT:    %[[V0:.*]] = llvm.insertelement %[[R0]], %[[UNDEF]][%[[P0]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[P1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[E1:.*]] = llvm.extractelement %v[%[[P1]] : i64] : vector<2xf32>
// CHECK-NEXT:    %[[R1:.*]] = llvm.call @tanhf(%[[E1]]) : (f32) -> f32
// CHECK-NEXT:    %tv = llvm.insertelement %[[R1]], %[[V0]][%[[P1]] : i64] : vector<2xf32>
// NV-LABEL:    llvm.func @half_and_vector
// NV:            llvm.call @__nv_tanhf
llvm.func @half_and_vector(%h: f16, %v: vector<2xf32>) {
  %t = math.tanh %h : f16
  %tv = math.tanh %v : vector<2xf32>
  llvm.return
}

// -----

// Intrinsics, on scalars and vectors alike.
// CHECK-LABEL: llvm.func @intrinsics(%x: f32, %v: vector<4xf32>, %h: f16, %i: i32)
// CHECK-NEXT:    %sqrt = llvm.intr.sqrt(%v) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %abs = llvm.intr.fabs(%x) : (f32) -> f32
// CHECK-NEXT:    %floor = llvm.intr.floor(%h) : (f16) -> f16
// CHECK-NEXT:    %ceil = llvm.intr.ceil(%x) : (f32) -> f32
// CHECK-NEXT:    %sign = llvm.intr.copysign(%x, %x) : (f32, f32) -> f32
// CHECK-NEXT:    %fma = llvm.intr.fma(%v, %v, %v) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %trunc = llvm.call_intrinsic "llvm.trunc.v4f32"(%v) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %even = llvm.call_intrinsic "llvm.roundeven.f16"(%h) : (f16) -> f16
// CHECK-NEXT:    %[[FALSE:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %ctlz = llvm.call_intrinsic "llvm.ctlz.i32"(%i, %[[FALSE]]) : (i32, i1) -> i32
// CHECK-NEXT:    %[[FALSE2:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %cttz = llvm.call_intrinsic "llvm.cttz.i32"(%i, %[[FALSE2]]) : (i32, i1) -> i32
// CHECK-NEXT:    %ctpop = llvm.call_intrinsic "llvm.ctpop.i32"(%i) : (i32) -> i32
// CHECK-NEXT:    %powi = llvm.call_intrinsic "llvm.powi.f32.i32"(%x, %i) : (f32, i32) -> f32
// CHECK-NEXT:    %[[SHIFT:.*]] = llvm.mlir.constant(31 : i32) : i32
// CHECK-NEXT:    %[[SIGN:.*]] = llvm.ashr %i, %[[SHIFT]] : i32
// CHECK-NEXT:    %[[FLIPPED:.*]] = llvm.xor %i, %[[SIGN]] : i32
// CHECK-NEXT:    %absi = llvm.sub %[[FLIPPED]], %[[SIGN]] : i32
// CHECK-NOT:   llvm.func @
// NV-LABEL:    llvm.func @intrinsics
// NV-NEXT:       llvm.intr.sqrt
llvm.func @intrinsics(%x: f32, %v: vector<4xf32>, %h: f16, %i: i32) {
  %sqrt = math.sqrt %v : vector<4xf32>
  %abs = math.absf %x : f32
  %floor = math.floor %h : f16
  %ceil = math.ceil %x : f32
  %sign = math.copysign %x, %x : f32
  %fma = math.fma %v, %v, %v : vector<4xf32>
  %trunc = math.trunc %v : vector<4xf32>
  %even = math.roundeven %h : f16
  %ctlz = math.ctlz %i : i32
  %cttz = math.cttz %i : i32
  %ctpop = math.ctpop %i : i32
  %powi = math.fpowi %x, %i : f32, i32
  %absi = math.absi %i : i32
  llvm.return
}

// -----

// rsqrt: with libm, which has none, 1 / sqrt(x) in f64, truncated (one rounding of an accurate
// value rather than two in f32); __nv_rsqrtf with libdevice.
// CHECK-LABEL: llvm.func @rsqrt(%x: f32, %v: vector<2xf64>)
// CHECK-NEXT:    %[[WIDE:.*]] = llvm.fpext %x : f32 to f64
// CHECK-NEXT:    %[[ROOT:.*]] = llvm.intr.sqrt(%[[WIDE]]) : (f64) -> f64
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f64) : f64
// CHECK-NEXT:    %[[QUOTIENT:.*]] = llvm.fdiv %[[ONE]], %[[ROOT]] : f64
// CHECK-NEXT:    %r = llvm.fptrunc %[[QUOTIENT]] : f64 to f32
// CHECK-NEXT:    %[[VROOT:.*]] = llvm.intr.sqrt(%v) : (vector<2xf64>) -> vector<2xf64>
// CHECK-NEXT:    %[[VONE:.*]] = llvm.mlir.constant(dense<1.000000e+00> : vector<2xf64>) : vector<2xf64>
// CHECK-NEXT:    %rv = llvm.fdiv %[[VONE]], %[[VROOT]] : vector<2xf64>
// NV:          llvm.func @__nv_rsqrtf(f32) -> f32
// NV-NEXT:     llvm.func @__nv_rsqrt(f64) -> f64
// NV-NEXT:     llvm.func @rsqrt(%x: f32, %v: vector<2xf64>)
// NV-NEXT:       %r = llvm.call @__nv_rsqrtf(%x) : (f32) -> f32
llvm.func @rsqrt(%x: f32, %v: vector<2xf64>) {
  %r = math.rsqrt %x : f32
  %rv = math.rsqrt %v : vector<2xf64>
  llvm.return
}

// -----

// Host functions keep their math ops and get no declarations.
// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    func.func @host(%x: f32) -> f32 {
// CHECK-NEXT:      %e = math.exp %x : f32
// CHECK-NEXT:      %s = math.sqrt %e : f32
// CHECK-NEXT:      func.return %s : f32
// CHECK-NEXT:    }
// CHECK-NEXT:  }
func.func @host(%x: f32) -> f32 {
  %e = math.exp %x : f32
  %s = math.sqrt %e : f32
  func.return %s : f32
}
