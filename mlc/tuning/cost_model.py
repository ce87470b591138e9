"""The learned cost model: gradient-boosted trees from features to relative cost.

`CostModel` fits an XGBoost regressor (`xgboost`, the `tune` extra) on (feature vector, log of
cost / the workload's heuristic cost) pairs: relative costs are comparable across workloads, so
records of earlier tunings on the same target (other shapes, other programs: `add_history`) train
the model before the first measurement of this one (transfer). Failed candidates are taught as
twice the worst cost seen, so the search learns to avoid what does not compile or run.
`fit()` retrains from scratch on everything seen (cheap at tuning sizes: a few hundred rows), as
the search calls it after every batch. `predict` ranks candidates: lower is faster. Before
`MIN_ROWS` rows the model is not trained and `predict` returns zeros (the search then explores at
random).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

MIN_ROWS = 4
FAILURE_PENALTY = math.log(2.0)
PARAMETERS = {"max_depth": 4, "eta": 0.2, "objective": "reg:squarederror", "nthread": 1, "verbosity": 0}
ROUNDS = 60


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

        xgboost = require("xgboost")
        import numpy as np

        data = xgboost.DMatrix(np.asarray(self.rows, dtype=np.float64), label=np.asarray(self.targets, dtype=np.float64))
        self._booster = xgboost.train(PARAMETERS | {"seed": self.seed}, data, num_boost_round=ROUNDS)

    def predict(self, rows: Sequence[Sequence[float]]) -> list[float]:
        if self._booster is None or not rows:
            return [0.0] * len(rows)
        import numpy as np

        from mlc.tuning.optional import require

        data = require("xgboost").DMatrix(np.asarray(rows, dtype=np.float64))
        return [float(v) for v in self._booster.predict(data)]  # type: ignore[attr-defined]
