"""mlc's `xdsl.universe` plugin: makes mlc's dialects and passes visible to plain xDSL tools.

pyproject.toml declares the entry point

    [project.entry-points."xdsl.universe"]
    mlc = "mlc.universe:MLC_UNIVERSE"

so that, once the package is installed, `xdsl-opt` (and any tool built on `xDSLOptMain` or
`Universe.get_multiverse()`) parses the `graph`, `tile`, `loop` and `mlc_gpu` dialects and runs
mlc's passes, e.g. `xdsl-opt model.mlir -p convert-graph-to-tile`.

Only mlc's own dialects and passes are exported: the standard dialects come from xDSL's own
universe, and a name defined by two universes makes `get_multiverse()` fail. Everything is loaded
lazily, so importing this module imports neither the dialects nor the passes.
"""

from __future__ import annotations

from xdsl.universe import Universe

from mlc.dialects import mlc_dialects
from mlc.transforms import mlc_passes

MLC_UNIVERSE = Universe(all_dialects=mlc_dialects(), all_passes=mlc_passes())
