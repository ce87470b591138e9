"""The conversions of the standard dialects inside kernels to the llvm dialect.

convert-arith-to-llvm, convert-cf-to-llvm, convert-math-to-llvm, convert-memref-to-llvm,
convert-vector-to-llvm: one pass per file, the file named after the pass.
"""
