// RUN: not mlc-translate --mlir-to-llvmir %s 2>&1 | filecheck %s
// RUN: not mlc-opt %s -t llvm 2>&1 | filecheck %s
// RUN: not mlc-opt %s -t ptxx 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not mlc-translate --mlir-to-ptx --arch sm_91 %s 2>&1 | filecheck %s --check-prefix=ARCH

// Ops that cannot be translated are reported at their location, without a traceback.

// CHECK:       errors.mlir:[[# @LINE + 6]]:5: error: 'arith.addi' op is not an llvm dialect op; lower it before translating to LLVM IR
// CHECK-NEXT:      %y = arith.addi %x, %x : i32
// CHECK-NOT:   Traceback

llvm.func @k(%p: !llvm.ptr) attributes {nvvm.kernel} {
    %x = llvm.load %p : !llvm.ptr -> i32
    %y = arith.addi %x, %x : i32
    llvm.store %y, %p : i32, !llvm.ptr
    llvm.return
}

// TARGET: unknown output target 'ptxx' (did you mean 'ptx'?); valid targets: mlir, llvm, ptx
// ARCH:   mlc-translate: error: unknown GPU architecture 'sm_91' (did you mean 'sm_90'
