"""The machinery that the conversion passes share: building kernels, lowering scalars and memory
accesses, the LLVM conversion framework. Nothing here is a pass; passes import these modules.
"""
