"""What distinguishes the GPU targets' lowerings: constants shared by the named pipelines, the
API and the frontends. The module imports nothing, so that the API can spell a device's default
pipeline (part of a compile cache key) on the cached path without loading the passes."""

WGMMA_ARCHS = ("sm_90", "sm_90a")
"""The GPU architectures whose f16/bf16 matmuls `mlc-lower-to-gpu{arch=...}` lowers to wgmma."""

WGMMA_CHAIN_EXTENT = (64, 256)
"""Warpgroup products of the GEMM-chain (attention) kernel (`chain_wgmma.py`): the query block in
whole warpgroups of 64 rows, the key block and both head dims (padded to powers of two) in
128-byte swizzle rows of 64 elements, each at most 256 (an instruction's N). Here, not in the
chain's analysis, because the torch frontend's attention placement reads it too."""
