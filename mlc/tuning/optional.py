"""The tuner's optional dependencies (the `tune` extra: ray, lightgbm, tqdm, matplotlib), imported
only where used, so that `import mlc` and `mlc.compile` never need them."""

from __future__ import annotations

import importlib
from typing import Any

from mlc.errors import MlcError

EXTRA = "tune"


class MissingExtraError(MlcError):
    """An optional dependency of the tuner is not installed; the message names the extra."""


def require(module: str) -> Any:
    """The module `module`, or a MissingExtraError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(f"{module} is not installed: it comes with mlc's '{EXTRA}' extra (pip install 'mlc[{EXTRA}]')") from None
