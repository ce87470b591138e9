"""Passes over graph IR (tensors, value semantics), and the conversion to the tile level.

graph-simplify, graph-fold-constants, graph-decompose, graph-fuse, graph-inline-fusion,
graph-plan-memory, convert-graph-to-tile: one pass per file, the file named after the pass.
"""
