// --dump-pass-pipeline prints the expansion of a pipeline (named pipelines expanded, func.func
// anchors and options kept) in MLIR syntax, and exits without reading any input.
//
// RUN: mlc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(mlc-lower-to-gpu)' | filecheck %s --check-prefix=GPU
// RUN: mlc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(mlc-lower-to-gpu)' | filecheck %s --check-prefix=GPU-NOT-CPU
// RUN: mlc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(mlc-lower-to-cpu)' | filecheck %s --check-prefix=CPU
// RUN: mlc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(mlc-lower-to-cpu)' | filecheck %s --check-prefix=CPU-NOT-GPU
// RUN: mlc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(func.func(cse,canonicalize), convert-graph-to-tile{num-warps=8})' | filecheck %s --check-prefix=ANCHORS
// RUN: mlc-opt --dump-pass-pipeline -p 'canonicalize,dce' | filecheck %s --check-prefix=XDSL

// graph optimisations, the kernels decided at the graph level (decompose, fuse with the GPU's compute
// model for GEMM chains, plan memory), then graph -> tile -> loop (tensor cores for f16/bf16 dots)
// -> mlc_gpu -> llvm, with libdevice for the math functions.
// GPU:      builtin.module(graph-simplify, graph-fold-constants, cse, graph-decompose, cse, graph-pad-matmul-operands, graph-transpose-tf32-rhs, graph-fold-constants, graph-fuse{compute-model="gpu" store-layouts=true}, graph-plan-memory, convert-graph-to-tile,
// GPU-SAME: convert-tile-to-loop{tensor-cores=true},
// GPU-SAME: convert-loop-to-gpu, gpu-insert-barriers, convert-gpu-to-nvvm,
// GPU-SAME: convert-scf-to-cf,
// GPU-SAME: convert-math-to-llvm{library="libdevice"},
// GPU-SAME: convert-arith-to-llvm,
// GPU-SAME: reconcile-unrealized-casts,
// GPU-SAME: ){{$}}
// GPU-NOT-CPU-NOT: mlc-lower-to
// GPU-NOT-CPU-NOT: convert-loop-to-cpu

// graph -> tile -> loop -> llvm for the CPU (libm, the default library, is not spelled out); long
// column reductions split into row blocks; matmuls take the CPU's blocks and vector micro-kernels.
// CPU:      builtin.module(graph-simplify, graph-fold-constants, cse, graph-decompose, cse, graph-split-column-reductions, graph-fold-constants, graph-fuse, graph-plan-memory, convert-graph-to-tile{target="cpu"},
// CPU-SAME: tile-merge-identical-kernels, convert-tile-dot-to-cpu, convert-tile-rows-to-cpu, convert-tile-to-loop,
// CPU-SAME: convert-loop-to-cpu, expand-math-for-cpu, convert-scf-to-cf,
// CPU-SAME: convert-math-to-llvm,
// CPU-SAME: convert-arith-to-llvm,
// CPU-SAME: reconcile-unrealized-casts,
// CPU-SAME: ){{$}}
// CPU-NOT-GPU-NOT: mlc-lower-to
// CPU-NOT-GPU-NOT: gpu
// CPU-NOT-GPU-NOT: nvvm
// CPU-NOT-GPU-NOT: libdevice

// ANCHORS: {{^}}builtin.module(func.func(cse, canonicalize), convert-graph-to-tile{num-warps=8}){{$}}
// XDSL:    {{^}}builtin.module(canonicalize, dce){{$}}
