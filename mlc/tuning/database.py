"""The tuning database: every measured configuration, in one SQLite file.

A record is one measurement: the workload (`workload_key`: a hash of its canonical IR and entry),
the target (`target_key`: 'cpu:<CPU name>' or 'cuda:<arch>'), mlc's version, the configuration
(`space.config_key`), the pipeline it spells, the cost in seconds (None for a failure, with the
error), its features and fingerprint, the trial number and the workload's name. `best(workload,
target)` is the cheapest successful record of this mlc version; `mlc.compile` asks it for the
default pipeline's options (`tuned_pipeline`).

Concurrency: the file is in WAL mode (readers never block the writer) with a busy timeout, and
every write is one short transaction retried on "database is locked", so several tuning processes
(or machines over a shared file system that supports locking) can add records to one file. Export
and import are JSON lines of records, to share results between machines; importing skips records
already present (same workload, target, version, configuration and trial).

The default file is `MLC_TUNING_DB`, else `tuning.sqlite` in mlc's cache directory
(`MLC_CACHE_DIR`, see `mlc/runtime/artifact_cache.py`). Only the standard library is needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from mlc.errors import MlcError
from mlc.tuning import default_path

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    workload TEXT NOT NULL, target TEXT NOT NULL, mlc_version TEXT NOT NULL,
    config TEXT NOT NULL, pipeline TEXT NOT NULL, cost REAL, error TEXT,
    features TEXT NOT NULL DEFAULT '[]', fingerprint TEXT NOT NULL DEFAULT '',
    trial INTEGER NOT NULL DEFAULT 0, name TEXT NOT NULL DEFAULT '', created REAL NOT NULL,
    UNIQUE (workload, target, mlc_version, config, trial)
);
CREATE INDEX IF NOT EXISTS by_workload ON records (workload, target, mlc_version, cost);
"""
RETRIES = 50
T = TypeVar("T")


class TuningDatabaseError(MlcError):
    """The tuning database cannot be opened, read or written; the message says which file and why."""


@dataclass(frozen=True)
class Record:
    workload: str
    target: str
    mlc_version: str
    config: str
    pipeline: str
    cost: float | None
    error: str | None = None
    features: list[float] = field(default_factory=list)
    fingerprint: str = ""
    trial: int = 0
    name: str = ""
    created: float = 0.0


COLUMNS = tuple(Record.__dataclass_fields__)


def workload_key(canonical_ir: str, entry: str) -> str:
    return hashlib.sha256(f"{entry}\n{canonical_ir}".encode()).hexdigest()[:24]


def current_version() -> str:
    import mlc

    return mlc.__version__


class TuningDatabase:
    """One SQLite file of records (see the module docstring); `contextlib.closing` closes it."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._retry(lambda: self._connection.execute("PRAGMA journal_mode=WAL"))
            self._retry(lambda: self._connection.executescript(SCHEMA))
        except (OSError, sqlite3.Error) as error:
            raise TuningDatabaseError(f"cannot open the tuning database {self.path}: {error}") from None

    def close(self) -> None:
        self._connection.close()

    def _retry(self, step: Callable[[], T]) -> T:
        for attempt in range(RETRIES):
            try:
                return step()
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) and "busy" not in str(error) or attempt == RETRIES - 1:
                    raise TuningDatabaseError(f"tuning database {self.path}: {error}") from None
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    def add(self, records: Iterable[Record]) -> int:
        """Adds records in one transaction (duplicates are ignored); returns how many were new."""
        rows = [_row(record) for record in records]

        def write() -> int:
            cursor = self._connection.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                before = self._connection.total_changes
                cursor.executemany(
                    f"INSERT OR IGNORE INTO records ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})", rows
                )
                cursor.execute("COMMIT")
                return self._connection.total_changes - before
            except BaseException:
                cursor.execute("ROLLBACK")
                raise

        return self._retry(write)

    def records(self, workload: str | None = None, target: str | None = None, version: str | None = None) -> list[Record]:
        clauses, values = [], []
        for column, value in (("workload", workload), ("target", target), ("mlc_version", version)):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        query = f"SELECT {', '.join(COLUMNS)} FROM records{where} ORDER BY created, trial"
        rows = self._retry(lambda: self._connection.execute(query, values).fetchall())
        return [_record(row) for row in rows]

    def best(self, workload: str, target: str, version: str | None = None) -> Record | None:
        """The cheapest successful record of `workload` on `target` for this mlc version."""
        query = (
            f"SELECT {', '.join(COLUMNS)} FROM records WHERE workload = ? AND target = ? AND mlc_version = ? "
            "AND cost IS NOT NULL ORDER BY cost LIMIT 1"
        )
        values = (workload, target, version or current_version())
        row = self._retry(lambda: self._connection.execute(query, values).fetchone())
        return None if row is None else _record(row)

    def export(self) -> Iterator[str]:
        """Every record as one line of JSON."""
        for record in self.records():
            yield json.dumps(asdict(record))

    def import_lines(self, lines: Iterable[str], source: str = "<input>") -> int:
        """Adds the records of JSON lines (as `export` writes them); returns how many were new."""
        records = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                records.append(Record(**{name: data[name] for name in COLUMNS if name in data}))
            except (ValueError, TypeError) as error:
                raise TuningDatabaseError(f"{source}:{number}: not a tuning record: {error}") from None
        return self.add(records)


def _row(record: Record) -> tuple[object, ...]:
    values = asdict(record)
    values["features"] = json.dumps(record.features)
    values["created"] = record.created or time.time()
    return tuple(values[name] for name in COLUMNS)


def _record(row: tuple[object, ...]) -> Record:
    values = dict(zip(COLUMNS, row))
    values["features"] = json.loads(values["features"])  # type: ignore[arg-type]
    return Record(**values)  # type: ignore[arg-type]
