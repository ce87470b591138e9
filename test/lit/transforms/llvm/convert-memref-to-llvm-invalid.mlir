// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-memref-to-llvm

// Refused lowerings name the op and the reason.

llvm.func @heap() {
  // expected-error @+1 {{cannot allocate on the heap inside a kernel}}
  %a = memref.alloc() : memref<4xf32>
  llvm.return
}

// -----

llvm.func @shared() {
  // expected-error @+1 {{cannot lower an allocation in memory space 3}}
  %a = memref.alloca() : memref<4xf32, 3>
  llvm.return
}

// -----

"memref.global"() <{sym_name = "table", sym_visibility = "private", type = memref<2xf32>, initial_value = dense<[1.0, 2.0]> : tensor<2xf32>, constant}> : () -> ()

llvm.func @global() {
  // expected-error @+1 {{memref.get_global inside a kernel is not supported yet}}
  %t = memref.get_global @table : memref<2xf32>
  llvm.return
}

// -----

llvm.func @dynamic(%p: !llvm.ptr, %i: i64) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<?xf32>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  // expected-error @+1 {{cannot lower memref<?xf32>: memrefs must have a static shape}}
  %v = memref.load %m[%ii] : memref<?xf32>
  llvm.return
}

// -----

llvm.func @strided(%p: !llvm.ptr, %i: i64) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32, strided<[2]>>
  %ii = builtin.unrealized_conversion_cast %i : i64 to index
  // expected-error @+1 {{memrefs must have the identity layout}}
  %v = memref.load %m[%ii] : memref<4xf32, strided<[2]>>
  llvm.return
}

// -----

llvm.func @view(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4xf32>
  // expected-error @+1 {{has no lowering to LLVM in convert-memref-to-llvm}}
  %c = "memref.cast"(%m) : (memref<4xf32>) -> memref<?xf32>
  llvm.return
}
