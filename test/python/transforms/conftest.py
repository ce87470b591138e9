"""The pass tests: one folder per level, as in `mlc/transforms/`; tests over whole pipelines here.

This file puts its folder on `sys.path` (pytest's rootdir-relative import mode), so the tests of
every level import the shared helpers beside it (`graph_checks`).
"""
