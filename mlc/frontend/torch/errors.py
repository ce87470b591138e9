"""The errors of the PyTorch frontend (kept free of the `torch` import, so they can be raised
where torch is missing)."""

from __future__ import annotations

from mlc.errors import MlcError

TORCH_EXTRA_HINT = "pip install 'mlc[torch]'"


class TorchImportError(MlcError):
    """A PyTorch graph mlc cannot import; the message names the FX node, its op and the reason.

    `node` describes the node at fault (`node 'addmm_1' (aten.addmm.default)`), or is None when the
    problem is the graph's (a missing example input, torch not installed).
    """

    def __init__(self, message: str, node: str | None = None):
        super().__init__(f"{node}: {message}" if node else message)
        self.node = node
        self.reason = message


class MissingTorchError(TorchImportError, ImportError):
    """torch is not installed: the message names the extra that installs it."""


def require_torch() -> None:
    """Raises `MissingTorchError` naming the `mlc[torch]` extra when torch cannot be imported."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise MissingTorchError(f"the PyTorch frontend needs the 'torch' package: {TORCH_EXTRA_HINT}") from None
