"""The learned cost model: gradient-boosted trees from features to relative cost.

`CostModel` fits a LightGBM regressor (`lightgbm`, the `tune` extra) on (feature vector, log of
cost / the workload's heuristic cost) pairs: relative costs are comparable across workloads, so
records of earlier tunings on the same target (other shapes, other programs: `add_history`) train
the model before the first measurement of this one (transfer). Failed candidates are taught as
twice the worst cost seen, so the search learns to avoid what does not compile or run.
`fit()` retrains from scratch on everything seen (cheap at tuning sizes: a few hundred rows), as
the search calls it before each proposal that follows new results. `predict` ranks candidates: lower is faster. Before
`MIN_ROWS` rows the model is not trained and `predict` returns zeros (the search then explores at
random).

LightGBM rather than XGBoost: the same gradient-boosted trees, and a 3.5 MB wheel against 130 MB,
which is what lets the tuner travel to a GPU machine that cannot download (and CI install faster).
Its defaults are for large data sets (a leaf needs 20 rows); tuning has tens to hundreds of rows,
so leaves and bins may hold one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

MIN_ROWS = 4
FAILURE_PENALTY = math.log(2.0)
PARAMETERS = {
    "objective": "regression",
    "max_depth": 4,
    "num_leaves": 15,
    "learning_rate": 0.2,
    "min_data_in_leaf": 1,
    "min_data_in_bin": 1,
    "num_threads": 1,
    "deterministic": True,
    "verbosity": -1,
}
ROUNDS = 60
DATASET_PARAMETERS = {"verbosity": -1, "num_threads": 1}
"""One thread for building the data set and predicting too, not only for training: left to
OpenMP's default, each call used a thread per core of the host, for a few hundred rows. On the
2-GPU machine (32 cores) the search's process used 59 CPU-s in a 28 s tuning (34 in 16 s); with
one thread, 2.4 s in either."""


@dataclass
class CostModel:
    seed: int = 0
    rows: list[list[float]] = field(default_factory=list)
    targets: list[float] = field(default_factory=list)
    _booster: object | None = None

    def add(self, features: Sequence[float], relative_cost: float | None) -> None:
        """One measurement: `relative_cost` = cost / heuristic cost, None for a failure."""
        if relative_cost is None:
            worst = max(self.targets, default=0.0)
            self.targets.append(worst + FAILURE_PENALTY)
        else:
            self.targets.append(math.log(relative_cost))
        self.rows.append(list(features))

    def add_history(self, rows: Sequence[tuple[Sequence[float], float | None]]) -> None:
        for features, relative_cost in rows:
            self.add(features, relative_cost)

    @property
    def trained(self) -> bool:
        return self._booster is not None

    def fit(self) -> None:
        if len(self.rows) < MIN_ROWS or len({len(row) for row in self.rows}) != 1:
            return
        from mlc.tuning.optional import require

        lightgbm = require("lightgbm")
        import numpy as np

        data = lightgbm.Dataset(np.asarray(self.rows, dtype=np.float64), label=np.asarray(self.targets, dtype=np.float64), params=DATASET_PARAMETERS)
        self._booster = lightgbm.train(PARAMETERS | {"seed": self.seed}, data, num_boost_round=ROUNDS)

    def predict(self, rows: Sequence[Sequence[float]]) -> list[float]:
        if self._booster is None or not rows:
            return [0.0] * len(rows)
        import numpy as np

        return [float(v) for v in self._booster.predict(np.asarray(rows, dtype=np.float64), num_threads=1)]  # type: ignore[attr-defined]
