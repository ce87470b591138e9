"""The autotuner: search a program's pass options on a device, keep the results, use the best.

Read in this order (each module's docstring says what, how and its limits):
`mlc/transforms/knobs.py` (the passes' tunable options), `space.py` (a workload's search space
and configurations as pipelines), `features.py` (loop-level features), `cost_model.py` (LightGBM),
`search.py` (`tune`: the heuristic first, then random or evolutionary batches), `measure.py` and
`ray_measure.py` (compile, check, time; local processes or Ray), `database.py` (SQLite records),
`workload.py` (keys; `mlc.compile`'s lookup), `report.py` (table and plot). The command line is
`mlc-tune` (`mlc/tools/mlc_tune.py`). Optional dependencies come with the `tune` extra
(`optional.py`); nothing here is imported by `import mlc`.
"""
