// RUN: mlc-translate --mlir-to-llvmir --target=cpu %s | filecheck %s
// RUN: mlc-translate --mlir-to-llvmir --target=nvptx %s | filecheck %s --check-prefix=GPU

// A non-temporal llvm.store (a CPU row kernel's result stores, `mlc.cpu_store_kind`) gets LLVM's
// `!nontemporal !{i32 1}` on x86, and every return of its function is preceded by an `sfence`:
// streaming stores are weakly ordered, and the runtime's pool signals the kernel's completion
// right after it returns. A function without such stores gets no fence. Other targets drop the
// hint (the NVPTX translation here), and with it the need for a fence.

// CHECK:       target triple = "x86_64
// CHECK-LABEL: define void @streamed(ptr %p, <16 x float> %v, i1 %early)
// CHECK:         store <16 x float> %v, ptr %p, align 16, !nontemporal ![[ONE:[0-9]+]]
// CHECK-NEXT:    call void @{{"?}}llvm.x86.sse.sfence{{"?}}()
// CHECK-NEXT:    ret void
// CHECK:         store <16 x float> %v, ptr %p, align 16{{$}}
// CHECK-NEXT:    call void @{{"?}}llvm.x86.sse.sfence{{"?}}()
// CHECK-NEXT:    ret void
// CHECK-LABEL: define void @ordinary(ptr %p, <16 x float> %v)
// CHECK-NEXT:  {{.*}}:
// CHECK-NEXT:    store <16 x float> %v, ptr %p, align 16{{$}}
// CHECK-NEXT:    ret void
// CHECK:       ![[ONE]] = !{{[{] ?}}i32 1{{ ?[}]}}

// GPU:         target triple = "nvptx64
// GPU-NOT:     nontemporal
// GPU-NOT:     sfence

builtin.module {
  llvm.func @streamed(%p: !llvm.ptr, %v: vector<16xf32>, %early: i1) {
    llvm.cond_br %early, ^stream, ^plain
  ^stream:
    llvm.store %v, %p {alignment = 16 : i64, nontemporal} : vector<16xf32>, !llvm.ptr
    llvm.return
  ^plain:
    llvm.store %v, %p {alignment = 16 : i64} : vector<16xf32>, !llvm.ptr
    llvm.return
  }
  llvm.func @ordinary(%p: !llvm.ptr, %v: vector<16xf32>) {
    llvm.store %v, %p {alignment = 16 : i64} : vector<16xf32>, !llvm.ptr
    llvm.return
  }
}
