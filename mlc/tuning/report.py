"""The tuning report: a table of every tuned workload and a plot of the search's progress.

`summaries(records)` groups a database's records by workload and target: trials, failures, the
heuristic's cost (trial 0), the best cost, the speedup and the best configuration. `table` writes
them as aligned text; `plot` draws, per workload, the best throughput found so far (calls per
second, 1 / best cost) against the trial number, as a PNG (matplotlib, the `tune` extra).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from mlc.tuning.database import Record
from mlc.tuning.optional import require
from mlc.tuning.space import config_from_key, describe


@dataclass(frozen=True)
class Summary:
    name: str
    workload: str
    target: str
    version: str
    trials: int
    failures: int
    heuristic: float | None
    best: Record | None
    progress: tuple[float, ...]
    """Best throughput (1 / best cost) after each trial, 0 until a trial succeeds."""

    @property
    def speedup(self) -> float | None:
        if self.heuristic is None or self.best is None or self.best.cost is None:
            return None
        return self.heuristic / self.best.cost


def summaries(records: Sequence[Record]) -> list[Summary]:
    groups: dict[tuple[str, str, str], list[Record]] = {}
    for record in records:
        groups.setdefault((record.workload, record.target, record.mlc_version), []).append(record)
    result = []
    for (workload, target, version), group in groups.items():
        group.sort(key=lambda r: (r.trial, r.created))
        succeeded = [r for r in group if r.cost is not None]
        best = min(succeeded, key=lambda r: r.cost) if succeeded else None  # type: ignore[arg-type, return-value]
        heuristic = next((r.cost for r in group if r.trial == 0), None)
        progress, lowest = [], None
        for record in group:
            if record.cost is not None and (lowest is None or record.cost < lowest):
                lowest = record.cost
            progress.append(1.0 / lowest if lowest else 0.0)
        name = group[0].name or workload[:12]
        result.append(Summary(name, workload, target, version, len(group), len(group) - len(succeeded), heuristic, best, tuple(progress)))
    return result


def _milliseconds(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4g}"


def table(items: Sequence[Summary]) -> str:
    header = ("workload", "target", "trials", "failed", "heuristic ms", "best ms", "speedup", "best configuration")
    rows = [
        (
            s.name,
            s.target,
            str(s.trials),
            str(s.failures),
            _milliseconds(s.heuristic),
            _milliseconds(s.best.cost if s.best else None),
            "-" if s.speedup is None else f"{s.speedup:.2f}x",
            describe(config_from_key(s.best.config)) if s.best else "-",
        )
        for s in items
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (header, *rows)]
    return "\n".join(lines) + "\n"


def plot(items: Sequence[Summary], path: str | os.PathLike[str]) -> None:
    matplotlib = require("matplotlib")
    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(8, 5))
    for summary in items:
        axes.plot(range(1, len(summary.progress) + 1), summary.progress, marker=".", label=f"{summary.name} ({summary.target})")
    axes.set_xlabel("trials")
    axes.set_ylabel("best throughput so far (calls / s)")
    axes.set_title("mlc-tune: best configuration found against trials")
    if items:
        axes.legend(fontsize="small")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
