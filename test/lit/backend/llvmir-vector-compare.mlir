// RUN: mlc-opt %s | filecheck %s --check-prefix=ROUNDTRIP
// RUN: mlc-translate --mlir-to-llvmir --target=cpu %s | filecheck %s

// mlc's llvm.fcmp and llvm.select take vectors as upstream MLIR's do (xDSL 0.74's take scalars
// only): a comparison of vectors gives a vector of i1, and a select on one picks lane by lane.
// The CPU's row kernels write `where(x > 0, x, 0.01 * x)` so (vector_maps.py).

// ROUNDTRIP-LABEL: llvm.func @leaky
// ROUNDTRIP:         %m = llvm.fcmp "ogt" %x, %zero : vector<8xf32>
// ROUNDTRIP-NEXT:    %s = llvm.select %m, %x, %y : vector<8xi1>, vector<8xf32>
// ROUNDTRIP:         %n = llvm.fcmp "uno" %a, %b : f32
// ROUNDTRIP-NEXT:    %t = llvm.select %n, %a, %b : i1, f32

// CHECK-LABEL: define <8 x float> @leaky(<8 x float> %x, <8 x float> %y, <8 x float> %zero)
// CHECK:         %m = fcmp ogt <8 x float> %x, %zero
// CHECK-NEXT:    %s = select <8 x i1> %m, <8 x float> %x, <8 x float> %y
// CHECK-LABEL: define float @unordered(float %a, float %b)
// CHECK:         %n = fcmp uno float %a, %b
// CHECK-NEXT:    %t = select i1 %n, float %a, float %b

builtin.module {
  llvm.func @leaky(%x: vector<8xf32>, %y: vector<8xf32>, %zero: vector<8xf32>) -> vector<8xf32> {
    %m = llvm.fcmp "ogt" %x, %zero : vector<8xf32>
    %s = llvm.select %m, %x, %y : vector<8xi1>, vector<8xf32>
    llvm.return %s : vector<8xf32>
  }
  llvm.func @unordered(%a: f32, %b: f32) -> f32 {
    %n = llvm.fcmp "uno" %a, %b : f32
    %t = llvm.select %n, %a, %b : i1, f32
    llvm.return %t : f32
  }
}
