"""The autotuner: search a program's pass options on a device, keep the results, use the best.

Read in this order (each module's docstring says what, how and its limits):
`mlc/transforms/knobs.py` (the passes' tunable options), `space.py` (a workload's search space
and configurations as pipelines), `features.py` (loop-level features), `cost_model.py` (LightGBM),
`search.py` (`tune`: the heuristic first, then random or evolutionary proposals, streamed: `streams.py`,
`prefetch.py`),
`measure.py`, `device_worker.py` and `ray_measure.py` (compile, check, time; local processes or Ray), `database.py` (SQLite records),
`workload.py` (keys; `mlc.compile`'s lookup), `report.py` (table and plot). The command line is
`mlc-tune` (`mlc/tools/mlc_tune.py`). Optional dependencies come with the `tune` extra
(`optional.py`); nothing here is imported by `import mlc`.
"""

from __future__ import annotations

import os
from pathlib import Path


def default_path() -> Path:
    """The tuning database's file: `MLC_TUNING_DB`, else `tuning.sqlite` in mlc's cache directory.

    Here rather than in `database.py` so that `mlc.compile`, which asks whether the file exists
    before every compile, cache hits included, does not import SQLite and the records' classes."""
    if os.environ.get("MLC_TUNING_DB"):
        return Path(os.environ["MLC_TUNING_DB"])
    from mlc.runtime.artifact_cache import default_directory

    directory = Path(os.environ["MLC_CACHE_DIR"]) if os.environ.get("MLC_CACHE_DIR") else default_directory()
    return directory / "tuning.sqlite"
