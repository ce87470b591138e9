"""Analyses that passes share: facts computed from IR, which never rewrite it.

affine indices, index ranges, thread dependence, shared-memory accesses and their sizes, the
partition of a graph into fusion groups, memory plans, the thread layout of tiles, and the reuse
that decides shared-memory promotion. A pass imports analyses, lowering helpers and dialects,
never another pass.
"""
