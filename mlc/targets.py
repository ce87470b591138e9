"""What distinguishes the GPU targets' lowerings: constants shared by the named pipelines and the
API. The module imports nothing, so that the API can spell a device's default pipeline (part of a
compile cache key) on the cached path without loading the passes."""

WGMMA_ARCHS = ("sm_90", "sm_90a")
"""The GPU architectures whose f16/bf16 matmuls `mlc-lower-to-gpu{arch=...}` lowers to wgmma."""
