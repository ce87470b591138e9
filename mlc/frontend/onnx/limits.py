"""`ImportLimits`: how much a model may make the importer read, allocate or recurse into.

Kept free of the `onnx` import, so that `mlc.frontend.onnx` exports it without loading onnx.
Each limit has a command-line option of `mlc-import-onnx`; messages name both.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 1024**3


@dataclass(frozen=True)
class ImportLimits:
    """Bounds on what a model may make the importer read or allocate (see `loading.py`)."""

    max_model_bytes: int = 2 * GIB
    """The largest model file (or bytes) read; protobuf cannot parse more than 2 GiB anyway."""
    max_tensor_elements: int = 2**31
    """The most elements any one tensor (initializer, attribute or value) may have."""
    max_evaluated_elements: int = 2**31
    """The most elements the importer computes at import time, all values together (nodes of ops
    mlc does not map, evaluated on constants: a hostile model could chain many Range nodes)."""
    max_subgraph_depth: int = 16
    """The deepest nesting of subgraphs (If/Loop/Scan bodies), and of calls between local functions."""


LIMIT_OPTIONS = {
    "max_model_bytes": "--max-model-size",
    "max_tensor_elements": "--max-tensor-elements",
    "max_evaluated_elements": "--max-evaluated-elements",
    "max_subgraph_depth": "--max-subgraph-depth",
}
"""Each limit's command-line option."""


def over_limit(limit: str, value: int) -> str:
    """`more than the maximum of N (max_x, --max-x)`: how messages name a limit that was passed."""
    return f"more than the maximum of {value} ({limit}, {LIMIT_OPTIONS[limit]})"
