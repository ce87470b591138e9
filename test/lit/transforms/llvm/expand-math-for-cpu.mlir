// RUN: mlc-opt %s --split-input-file -p 'expand-math-for-cpu{scaling=multiply}' | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'expand-math-for-cpu{scaling=multiply}' | mlc-opt --split-input-file | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'expand-math-for-cpu{scaling=ldexp}' | filecheck %s --check-prefix=LDEXP
// RUN: mlc-opt %s --split-input-file -p 'expand-math-for-cpu{scaling=scalef}' | filecheck %s --check-prefix=SCALEF
// RUN: not mlc-opt %s -p 'expand-math-for-cpu{scaling=twice}' 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: scaling must be one of scalef, ldexp, multiply, got twice

// With scaling=scalef (the default on AVX-512 hosts) the exp of a 16-lane vector is scaled by
// vscalefps of the f32 n itself (no integer exponent: no add, integer subtract and conversion
// back); other types take llvm.ldexp, the same value.
// SCALEF-LABEL: llvm.func internal @mlc.exp.f32(%{{.*}}: f32) -> f32
// SCALEF:         llvm.call_intrinsic "llvm.ldexp.f32.i32"
// SCALEF-LABEL: llvm.func internal @mlc.exp.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// SCALEF:         llvm.call_intrinsic "llvm.ldexp.v4f32.v4i32"
// SCALEF-LABEL: llvm.func internal @mlc.exp.v16f32(%{{.*}}: vector<16xf32>) -> vector<16xf32>
// SCALEF:         %[[N:.*]] = math.roundeven
// SCALEF-NOT:     arith.bitcast
// SCALEF:         %[[ALL:.*]] = arith.constant -1 : i16
// SCALEF-NEXT:    %[[NEAREST:.*]] = arith.constant 4 : i32
// SCALEF-NEXT:    %[[E:.*]] = llvm.call_intrinsic "llvm.x86.avx512.mask.scalef.ps.512"(%[[P:.*]], %[[N]], %[[P]], %[[ALL]], %[[NEAREST]]) : (vector<16xf32>, vector<16xf32>, vector<16xf32>, i16, i32) -> vector<16xf32>
// SCALEF-NEXT:    llvm.return %[[E]] : vector<16xf32>

// With scaling=ldexp (the default on AVX-512 hosts) e^r is scaled by 2^n in one llvm.ldexp
// (vscalefps), rounded once as the two multiplications round: the same value.
// LDEXP-LABEL: llvm.func internal @mlc.exp.f32(%{{.*}}: f32) -> f32
// LDEXP-NOT:     arith.shli
// LDEXP:         %[[E:.*]] = llvm.call_intrinsic "llvm.ldexp.f32.i32"(%{{.*}}, %{{.*}}) : (f32, i32) -> f32
// LDEXP-NEXT:    llvm.return %[[E]] : f32
// LDEXP-LABEL: llvm.func internal @mlc.exp.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// LDEXP:         llvm.call_intrinsic "llvm.ldexp.v4f32.v4i32"(%{{.*}}, %{{.*}}) : (vector<4xf32>, vector<4xi32>) -> vector<4xf32>

// f32 exp: one internal function per module (LLVM inlines it at each call): clamp,
// n = roundeven(x log2 e), r = x - n ln2 in two fmas, Cephes' polynomial by fmas, the two
// power-of-two scalings built from the exponent bits (NaN propagates through the clamps).
// CHECK-LABEL: llvm.func internal @mlc.exp.f32(%{{.*}}: f32) -> f32
// CHECK-NOT:     math.exp
// CHECK:         arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK:         arith.minimumf
// CHECK:         math.roundeven
// CHECK-COUNT-2: math.fma
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         arith.shrsi
// CHECK:         arith.shli
// CHECK-COUNT-2: arith.bitcast %{{.*}} : i32 to f32
// CHECK:         %[[E:.*]] = arith.mulf
// CHECK-NEXT:    llvm.return %[[E]] : f32
// CHECK-LABEL: llvm.func @exp_f32
// CHECK:         %e = llvm.call @mlc.exp.f32(%x) : (f32) -> f32
// CHECK-NEXT:    memref.store %e
// CHECK:         %e2 = llvm.call @mlc.exp.f32(%e) : (f32) -> f32
// CHECK-NOT:     llvm.func internal
llvm.func @exp_f32(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  %c0 = arith.constant 0 : index
  %x = memref.load %m[%c0] : memref<4xf32>
  %e = math.exp %x : f32
  memref.store %e, %m[%c0] : memref<4xf32>
  %e2 = math.exp %e : f32
  memref.store %e2, %m[%c0] : memref<4xf32>
  llvm.return
}

// -----

// Vectors of f32 too (exp), constants splatted: a function per type. tanh computes the odd
// polynomial below 0.625 and 1 - 2 / (exp(2|x|) + 1) above, picks one by an integer lane mask of
// |x|'s bits (no arith.cmpf, so vectors too), then takes the sign of x.
// CHECK-LABEL: llvm.func internal @mlc.exp.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// CHECK:         arith.maximumf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK-LABEL: llvm.func internal @mlc.tanh.f32(
// CHECK-SAME:    %[[S:[^:]*]]: f32) -> f32
// CHECK-NOT:     arith.cmpf
// CHECK:         math.absf %[[S]] : f32
// CHECK:         arith.constant -0.00570498873 : f32
// CHECK:         arith.divf
// CHECK:         arith.constant 1059061760 : i32
// CHECK:         %[[MASK:.*]] = arith.shrsi
// CHECK:         %[[PICKED:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:    %[[T:.*]] = math.copysign %[[PICKED]], %[[S]] : f32
// CHECK-NEXT:    llvm.return %[[T]] : f32
// CHECK-LABEL: llvm.func internal @mlc.tanh.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// CHECK:         math.copysign %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-LABEL: llvm.func @vectors_and_tanh
// CHECK:         %e = llvm.call @mlc.exp.v4f32(%x) : (vector<4xf32>) -> vector<4xf32>
// CHECK:         %t = llvm.call @mlc.tanh.f32(%s) : (f32) -> f32
// CHECK:         %tv = llvm.call @mlc.tanh.v4f32(%x) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NOT:     math.tanh
llvm.func @vectors_and_tanh(%p: !llvm.ptr, %s: f32) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  %c0 = arith.constant 0 : index
  %x = vector.load %m[%c0] : memref<4xf32>, vector<4xf32>
  %e = math.exp %x : vector<4xf32>
  vector.store %e, %m[%c0] : memref<4xf32>, vector<4xf32>
  %t = math.tanh %s : f32
  memref.store %t, %m[%c0] : memref<4xf32>
  %tv = math.tanh %x : vector<4xf32>
  llvm.return
}

// -----

// erf: x + x Q(x^2) below 1 (the fma), 1 - e^(-a^2) R(1/a) from 1 (a = min(|x|, 4), the exp of
// this pass inline without its clamps: -a^2 is in [-16, 0] or NaN), the subtraction rounded once by an fma), the sign of x copied onto the
// second, one picked by a lane mask of |x|'s bits (1.0 is 1065353216).
// CHECK-LABEL: llvm.func internal @mlc.erf.v4f32(
// CHECK-SAME:    %[[X:[^:]*]]: vector<4xf32>) -> vector<4xf32>
// CHECK-NOT:     arith.cmpf
// CHECK:         %[[A:.*]] = math.absf %[[X]] : vector<4xf32>
// CHECK:         %[[Z:.*]] = arith.mulf %[[X]], %[[X]] : vector<4xf32>
// CHECK-COUNT-6: math.fma %{{.*}}, %[[Z]], %{{.*}} : vector<4xf32>
// CHECK:         %[[SMALL:.*]] = math.fma %[[X]], %{{.*}}, %[[X]] : vector<4xf32>
// CHECK:         arith.minimumf %[[A]], %{{.*}} : vector<4xf32>
// CHECK:         arith.divf
// CHECK-NOT:     arith.maximumf
// CHECK:         math.roundeven
// CHECK:         arith.constant dense<-0.0113746412> : vector<4xf32>
// CHECK:         arith.constant dense<1.000000e+00> : vector<4xf32>
// CHECK-NEXT:    math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         arith.constant dense<1065353216> : vector<4xi32>
// CHECK:         arith.shrsi
// CHECK:         math.copysign %{{.*}}, %[[X]] : vector<4xf32>
// CHECK:         %[[E:.*]] = arith.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK-NEXT:    llvm.return %[[E]] : vector<4xf32>
// CHECK-LABEL: llvm.func internal @mlc.erf.f32(%{{.*}}: f32) -> f32
// CHECK-LABEL: llvm.func @erfs
// CHECK:         llvm.call @mlc.erf.v4f32(%v) : (vector<4xf32>) -> vector<4xf32>
// CHECK:         llvm.call @mlc.erf.f32(%s) : (f32) -> f32
llvm.func @erfs(%s: f32, %v: vector<4xf32>) {
  %0 = math.erf %v : vector<4xf32>
  %1 = math.erf %s : f32
  llvm.return
}

// -----

// Other float types and other functions are left to convert-math-to-llvm (libm).
// CHECK-NOT:   llvm.func internal
// CHECK-LABEL: llvm.func @untouched
// CHECK:         math.exp %{{.*}} : f64
// CHECK:         math.tanh %{{.*}} : f16
// CHECK:         math.erf %{{.*}} : f64
// CHECK:         math.sin %{{.*}} : f64
// CHECK:         math.log %{{.*}} : f64
// CHECK:         math.tan %{{.*}} : f32
llvm.func @untouched(%d: f64, %h: f16, %v: vector<4xf32>, %s: f32) {
  %0 = math.exp %d : f64
  %1 = math.tanh %h : f16
  %3 = math.erf %d : f64
  %2 = math.sin %d : f64
  %4 = math.log %d : f64
  %5 = math.tan %s : f32
  llvm.return
}

// -----

// f32 log, scalars and vectors: the exponent and mantissa from the bits, Cephes' polynomial by
// fmas, the special values chosen with integer lane masks (and/or of the bits), no arith.cmpf.
// CHECK-LABEL: llvm.func internal @mlc.log.f32(%{{.*}}: f32) -> f32
// CHECK-NOT:     arith.cmpf
// CHECK:         arith.constant 8388607 : i32
// CHECK:         arith.constant 1056964608 : i32
// CHECK-COUNT-8: math.fma
// CHECK:         arith.shrsi
// CHECK:         arith.ori
// CHECK-LABEL: llvm.func internal @mlc.log.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// CHECK:         arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK-LABEL: llvm.func @logs
// CHECK:         llvm.call @mlc.log.f32(%s) : (f32) -> f32
// CHECK:         llvm.call @mlc.log.v4f32(%v) : (vector<4xf32>) -> vector<4xf32>
llvm.func @logs(%s: f32, %v: vector<4xf32>) {
  %0 = math.log %s : f32
  %1 = math.log %v : vector<4xf32>
  llvm.return
}

// -----

// A 16-lane exp (a zmm register): vscalefps under scaling=scalef (see the SCALEF lines above).
// CHECK-LABEL: llvm.func internal @mlc.exp.v16f32(%{{.*}}: vector<16xf32>) -> vector<16xf32>
// CHECK:         arith.shli
// CHECK-LABEL: llvm.func @exp_v16
llvm.func @exp_v16(%v: vector<16xf32>) {
  %0 = math.exp %v : vector<16xf32>
  llvm.return
}

// -----

// The exact GELU's chain, 0.5 x (1 + erf(x sqrt(1/2))) as the elementwise expansion writes it
// (constants broadcast, operands in either order), becomes one call of the fused x Phi(x) =
// max(x, -0) - |x| Q(|x|): the tail Q = 2^L from one polynomial, a 2^f polynomial and the
// scaling, then one fma; no erf, no division, no select.
// CHECK-LABEL: llvm.func internal @mlc.gelu_erf.v4f32(
// CHECK-SAME:    %[[X:[^:]*]]: vector<4xf32>) -> vector<4xf32>
// CHECK-NOT:     arith.divf
// CHECK:         %[[LOW:.*]] = arith.minimumf %[[X]], %{{.*}} : vector<4xf32>
// CHECK:         %[[A:.*]] = math.absf %[[LOW]]
// CHECK-COUNT-8: math.fma %{{.*}}, %[[A]], %{{.*}}
// CHECK:         arith.maximumf
// CHECK:         math.floor
// CHECK-COUNT-6: math.fma
// CHECK:         %[[ZERO:.*]] = arith.constant dense<-0.000000e+00> : vector<4xf32>
// CHECK:         %[[POSITIVE:.*]] = arith.maximumf %[[X]], %[[ZERO]] : vector<4xf32>
// CHECK:         %[[MINUS_A:.*]] = arith.negf %[[A]] : vector<4xf32>
// CHECK:         %[[Y:.*]] = math.fma %[[MINUS_A]], %{{.*}}, %[[POSITIVE]] : vector<4xf32>
// CHECK-NEXT:    llvm.return %[[Y]] : vector<4xf32>
// CHECK-LABEL: llvm.func @gelu
// CHECK:         %[[IN:.*]] = vector.load
// CHECK-NOT:     math.erf
// CHECK:         %{{.*}} = llvm.call @mlc.gelu_erf.v4f32(%[[IN]]) : (vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    vector.store
// CHECK-NOT:     arith.addf
// CHECK:         llvm.return
llvm.func @gelu(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %root = arith.constant 0.707106769 : f32
  %x = vector.load %m[%c0] : memref<4xf32>, vector<4xf32>
  %halfs = vector.broadcast %half : f32 to vector<4xf32>
  %h = arith.mulf %halfs, %x : vector<4xf32>
  %roots = vector.broadcast %root : f32 to vector<4xf32>
  %s = arith.mulf %x, %roots : vector<4xf32>
  %e = math.erf %s : vector<4xf32>
  %ones = vector.broadcast %one : f32 to vector<4xf32>
  %sum = arith.addf %ones, %e : vector<4xf32>
  %y = arith.mulf %h, %sum : vector<4xf32>
  vector.store %y, %m[%c0] : memref<4xf32>, vector<4xf32>
  llvm.return
}

// -----

// A 16-lane GELU under scaling=scalef (AVX-512): |x| by vrangeps (+inf -> the largest f32),
// f = L - floor(L) by vreduceps, 2^floor(L) by vscalefps of L itself: 19 vector ops in all.
// SCALEF-LABEL: llvm.func internal @mlc.gelu_erf.v16f32(
// SCALEF-SAME:    %[[X:[^:]*]]: vector<16xf32>) -> vector<16xf32>
// SCALEF:         %[[A:.*]] = llvm.call_intrinsic "llvm.x86.avx512.mask.range.ps.512"(%[[X]],
// SCALEF-COUNT-8: math.fma %{{.*}}, %[[A]], %{{.*}}
// SCALEF-NEXT:    arith.constant 9 : i32
// SCALEF:         %[[F:.*]] = llvm.call_intrinsic "llvm.x86.avx512.mask.reduce.ps.512"
// SCALEF-COUNT-6: math.fma %{{.*}}, %[[F]], %{{.*}}
// SCALEF:         llvm.call_intrinsic "llvm.x86.avx512.mask.scalef.ps.512"
// SCALEF-NOT:     math.floor
// SCALEF:         arith.maximumf %[[X]]
// SCALEF:         math.fma
// SCALEF-NEXT:    llvm.return
// SCALEF-LABEL: llvm.func @gelu16
// SCALEF:         llvm.call @mlc.gelu_erf.v16f32
// CHECK-LABEL: llvm.func internal @mlc.gelu_erf.v16f32(
// CHECK-NOT:     llvm.call_intrinsic
// CHECK:         math.floor
// CHECK-LABEL: llvm.func @gelu16
llvm.func @gelu16(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<16xf32>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %root = arith.constant 0.707106769 : f32
  %x = vector.load %m[%c0] : memref<16xf32>, vector<16xf32>
  %halfs = vector.broadcast %half : f32 to vector<16xf32>
  %h = arith.mulf %x, %halfs : vector<16xf32>
  %roots = vector.broadcast %root : f32 to vector<16xf32>
  %s = arith.mulf %roots, %x : vector<16xf32>
  %e = math.erf %s : vector<16xf32>
  %ones = vector.broadcast %one : f32 to vector<16xf32>
  %sum = arith.addf %e, %ones : vector<16xf32>
  %y = arith.mulf %sum, %h : vector<16xf32>
  vector.store %y, %m[%c0] : memref<16xf32>, vector<16xf32>
  llvm.return
}

// -----

// f32 sin and cos on a = |x|, one polynomial per lane: sin reduces by pi (n = a/pi + 1.5 2^23
// rounded once by an fma, then the shift taken off), cos by odd multiples of pi/2 (with the first
// step's rounding recovered by Fast2Sum); an exact fma of -n and the first part, the second
// part's product split exactly and subtracted by Fast2Sum, a third fma; one sine polynomial of
// high + low, its sign from n's bit 0 (and, for sin, x's sign) xor-ed onto it; a lane of |x|
// beyond 2^17 (inf and NaN too) sends the chunk to a second block: x reduced by pi/2 in f64
// lanes (three fmas of -j and pi/2's parts), both series in f64, each rounded once to f32; a lane
// of finite |x| beyond 2^40 sends it on to a third block that computes the libm op (math.sin /
// math.cos, called per lane later) and takes it for those lanes.
// CHECK-LABEL: llvm.func internal @mlc.sin.v4f32(
// CHECK-SAME:    %[[X:[0-9a-z_]+]]: vector<4xf32>) -> vector<4xf32>
// CHECK-NEXT:    %[[A:.*]] = math.absf %[[X]] : vector<4xf32>
// CHECK:         %[[SHIFTED:.*]] = math.fma %[[A]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:         %[[N:.*]] = arith.subf %[[SHIFTED]], %{{.*}} : vector<4xf32>
// CHECK-NEXT:    %[[NEGATED:.*]] = arith.negf %[[N]] : vector<4xf32>
// CHECK:         %[[EXACT:.*]] = math.fma %[[NEGATED]], %{{.*}}, %[[A]] : vector<4xf32>
// CHECK-NEXT:    %[[PRODUCT:.*]] = arith.mulf %[[N]], %{{.*}} : vector<4xf32>
// CHECK:         %[[HIGH:.*]] = arith.subf %[[EXACT]], %[[PRODUCT]] : vector<4xf32>
// CHECK-NEXT:    %[[LOST:.*]] = arith.subf %[[EXACT]], %[[HIGH]] : vector<4xf32>
// CHECK:         %[[LOW:.*]] = math.fma %[[NEGATED]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:    %[[Z:.*]] = arith.mulf %[[HIGH]], %[[HIGH]] : vector<4xf32>
// CHECK-NOT:     arith.mulf %[[HIGH]], %[[Z]]
// CHECK:         %[[CORRECTION:.*]] = math.fma %[[Z]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NEXT:    %[[SINE:.*]] = arith.addf %[[HIGH]], %[[CORRECTION]] : vector<4xf32>
// CHECK-NEXT:    %[[PARITY:.*]] = arith.bitcast %[[SHIFTED]] : vector<4xf32> to vector<4xi32>
// CHECK:         arith.shli %[[PARITY]]
// CHECK-NOT:     math.roundeven
// CHECK:         %[[NARROW_ANY:.*]] = llvm.call_intrinsic "llvm.vector.reduce.or.v4i32"
// CHECK:         %[[NARROW_FLAG:.*]] = llvm.icmp "ne" %[[NARROW_ANY]]
// CHECK-NEXT:    llvm.cond_br %[[NARROW_FLAG]], ^[[WIDE:.*]], ^[[DONE:.*]](%{{.*}} : vector<4xf32>)
// CHECK:       ^[[WIDE]]:
// CHECK-NEXT:    %{{.*}} = arith.extf %[[X]] : vector<4xf32> to vector<4xf64>
// CHECK:         math.roundeven %{{.*}} : vector<4xf64>
// CHECK-COUNT-3: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf64>
// CHECK:         math.floor
// CHECK:         arith.truncf %{{.*}} : vector<4xf64> to vector<4xf32>
// CHECK:         %[[ANY:.*]] = llvm.call_intrinsic "llvm.vector.reduce.or.v4i32"
// CHECK:         %[[FLAG:.*]] = llvm.icmp "ne" %[[ANY]]
// CHECK-NEXT:    llvm.cond_br %[[FLAG]], ^[[LIBM:.*]], ^[[DONE]](%{{.*}} : vector<4xf32>)
// CHECK:       ^[[LIBM]]:
// CHECK-NEXT:    %{{.*}} = math.sin %[[X]] : vector<4xf32>
// CHECK:         llvm.br ^[[DONE]](%{{.*}} : vector<4xf32>)
// CHECK:       ^[[DONE]](%[[RESULT:.*]]: vector<4xf32>):
// CHECK-NEXT:    llvm.return %[[RESULT]] : vector<4xf32>
// CHECK-LABEL: llvm.func internal @mlc.cos.f32(%{{.*}}: f32) -> f32
// CHECK:         %[[M:.*]] = math.roundeven %{{.*}} : f32
// CHECK:         %[[ODD:.*]] = math.fma %[[M]], %{{.*}}, %{{.*}} : f32
// CHECK:         %[[FIRST:.*]] = math.fma %{{.*}}, %[[PI_HALF:[0-9a-z_]+]], %{{.*}} : f32
// CHECK:         %[[BACK:.*]] = math.fma %[[ODD]], %[[PI_HALF]], %[[FIRST]] : f32
// CHECK-NEXT:    %[[RECOVERED:.*]] = arith.subf %{{.*}}, %[[BACK]] : f32
// CHECK-NOT:     llvm.vector.reduce
// CHECK:         llvm.icmp "ne"
// CHECK:         arith.extf %{{.*}} : f32 to f64
// CHECK:         llvm.icmp "ne"
// CHECK:         math.cos %{{.*}} : f32
// CHECK-LABEL: llvm.func internal @mlc.rsqrt.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// CHECK:         %[[ROOT:.*]] = math.sqrt %{{.*}} : vector<4xf32>
// CHECK-NEXT:    %[[Y:.*]] = arith.divf %{{.*}}, %[[ROOT]] : vector<4xf32>
// CHECK-NEXT:    llvm.return %[[Y]] : vector<4xf32>
// CHECK-LABEL: llvm.func @trig
// CHECK:         llvm.call @mlc.sin.v4f32(%v) : (vector<4xf32>) -> vector<4xf32>
// CHECK:         llvm.call @mlc.cos.f32(%s) : (f32) -> f32
// CHECK:         llvm.call @mlc.rsqrt.v4f32(%v) : (vector<4xf32>) -> vector<4xf32>
llvm.func @trig(%s: f32, %v: vector<4xf32>) {
  %0 = math.sin %v : vector<4xf32>
  %1 = math.cos %s : f32
  %2 = math.rsqrt %v : vector<4xf32>
  llvm.return
}

// -----

// f32 pow: exp2(y log2 x) in f64 lanes (x = m 2^k from the bits, m's log by atanh's series, the
// power's scaling from the bits of n + 1023), rounded once; lanes with x <= 0, an infinity or a
// NaN take libm's powf through the second block.
// CHECK-LABEL: llvm.func internal @mlc.powf.v4f32(
// CHECK-SAME:    %[[X:[0-9a-z_]+]]: vector<4xf32>, %[[Y:[0-9a-z_]+]]: vector<4xf32>) -> vector<4xf32>
// CHECK:         arith.extf %[[X]] : vector<4xf32> to vector<4xf64>
// CHECK:         arith.extf %[[Y]] : vector<4xf32> to vector<4xf64>
// CHECK:         arith.bitcast %{{.*}} : vector<4xf64> to vector<4xi64>
// CHECK:         arith.divf %{{.*}}, %{{.*}} : vector<4xf64>
// CHECK:         math.roundeven %{{.*}} : vector<4xf64>
// CHECK:         arith.truncf %{{.*}} : vector<4xf64> to vector<4xf32>
// CHECK:         llvm.cond_br %{{.*}}, ^[[LIBM:.*]], ^[[DONE:.*]](%{{.*}} : vector<4xf32>)
// CHECK:       ^[[LIBM]]:
// CHECK-NEXT:    math.powf %[[X]], %[[Y]] : vector<4xf32>
// CHECK-LABEL: llvm.func @powers
// CHECK:         llvm.call @mlc.powf.v4f32(%v, %w) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
llvm.func @powers(%v: vector<4xf32>, %w: vector<4xf32>) {
  %0 = math.powf %v, %w : vector<4xf32>
  llvm.return
}

// -----

// f32 rsqrt of 16 lanes under scaling=scalef (AVX-512): vrsqrt14ps (within 2^-14) and one Newton
// step, h = x y0, r = fma(-h, y0, 1), y1 = fma(y0 / 2, r, y0); lanes of x outside (+0, +inf) (bits
// - 1 not below 0x7F7FFFFF unsigned: +-0, +inf, negatives, NaN) keep vrsqrt14ps's value. Other
// vector widths, scalars and the other scalings keep 1 / sqrt.
// SCALEF-LABEL: llvm.func internal @mlc.rsqrt.v16f32(%[[X:.*]]: vector<16xf32>) -> vector<16xf32>
// SCALEF-NOT:     math.sqrt
// SCALEF:         %[[ALL:.*]] = arith.constant -1 : i16
// SCALEF-NEXT:    %[[Y0:.*]] = llvm.call_intrinsic "llvm.x86.avx512.rsqrt14.ps.512"(%[[X]], %[[X]], %[[ALL]]) : (vector<16xf32>, vector<16xf32>, i16) -> vector<16xf32>
// SCALEF-NEXT:    %[[H:.*]] = arith.mulf %[[X]], %[[Y0]] : vector<16xf32>
// SCALEF-NEXT:    %[[MINUS_H:.*]] = arith.negf %[[H]] : vector<16xf32>
// SCALEF-NEXT:    %[[ONE:.*]] = arith.constant dense<1.000000e+00> : vector<16xf32>
// SCALEF-NEXT:    %[[R:.*]] = math.fma %[[MINUS_H]], %[[Y0]], %[[ONE]] : vector<16xf32>
// SCALEF-NEXT:    %[[HALF:.*]] = arith.constant dense<5.000000e-01> : vector<16xf32>
// SCALEF-NEXT:    %[[HALF_Y0:.*]] = arith.mulf %[[Y0]], %[[HALF]] : vector<16xf32>
// SCALEF-NEXT:    %[[Y1:.*]] = math.fma %[[HALF_Y0]], %[[R]], %[[Y0]] : vector<16xf32>
// SCALEF-NEXT:    %[[BITS:.*]] = arith.bitcast %[[X]] : vector<16xf32> to vector<16xi32>
// SCALEF-NEXT:    %[[ONE_BIT:.*]] = arith.constant dense<1> : vector<16xi32>
// SCALEF-NEXT:    %[[DECREMENT:.*]] = arith.subi %[[BITS]], %[[ONE_BIT]] : vector<16xi32>
// SCALEF-NEXT:    %[[LARGEST:.*]] = arith.constant dense<2139095039> : vector<16xi32>
// SCALEF-NEXT:    %[[REGULAR:.*]] = llvm.icmp "ult" %[[DECREMENT]], %[[LARGEST]] : vector<16xi32>
// SCALEF-NEXT:    %[[Y:.*]] = llvm.select %[[REGULAR]], %[[Y1]], %[[Y0]] : vector<16xi1>, vector<16xf32>
// SCALEF-NEXT:    llvm.return %[[Y]] : vector<16xf32>
// SCALEF-LABEL: llvm.func internal @mlc.rsqrt.v4f32(%{{.*}}: vector<4xf32>) -> vector<4xf32>
// SCALEF-NOT:     llvm.call_intrinsic
// SCALEF:         math.sqrt %{{.*}} : vector<4xf32>
// SCALEF-NEXT:    arith.divf %{{.*}}, %{{.*}} : vector<4xf32>
// SCALEF-LABEL: llvm.func internal @mlc.rsqrt.f32(%{{.*}}: f32) -> f32
// SCALEF:         math.sqrt %{{.*}} : f32
// SCALEF-NEXT:    arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-LABEL: llvm.func internal @mlc.rsqrt.v16f32(%{{.*}}: vector<16xf32>) -> vector<16xf32>
// CHECK-NOT:     llvm.call_intrinsic
// CHECK:         %[[ROOT:.*]] = math.sqrt %{{.*}} : vector<16xf32>
// CHECK-NEXT:    %[[Y:.*]] = arith.divf %{{.*}}, %[[ROOT]] : vector<16xf32>
// CHECK-NEXT:    llvm.return %[[Y]] : vector<16xf32>
llvm.func @rsqrt(%v: vector<16xf32>, %w: vector<4xf32>, %s: f32) {
  %0 = math.rsqrt %v : vector<16xf32>
  %1 = math.rsqrt %w : vector<4xf32>
  %2 = math.rsqrt %s : f32
  llvm.return
}
