"""Passes over loop IR (explicit loop nests over buffers), and the conversions to the CPU and GPU.

loop-promote-shared, loop-double-buffer, loop-unroll, convert-loop-to-cpu, convert-loop-to-gpu:
one pass per file, the file named after the pass.
"""
