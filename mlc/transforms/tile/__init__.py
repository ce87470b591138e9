"""Passes over tile IR (SPMD block programs over tiles), and the conversion to the loop level.

convert-tile-to-loop: one pass per file, the file named after the pass.
"""
