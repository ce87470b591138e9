"""Passes over mlc_gpu IR (kernels, thread ids, barriers), and the conversion to NVVM.

gpu-insert-barriers, convert-gpu-to-nvvm: one pass per file, the file named after the pass.
"""
