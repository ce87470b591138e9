"""The table of ONNX ops mlc maps: op type -> handler, the op versions it handles, which inputs
must be constants.

Handlers register themselves with `@maps(op_type, versions=...)`. `versions` lists the schema
versions (`since_version`s) the handler implements, as ONNX defines each; a model whose opset
selects another version of the op gets an error naming it rather than a silent misreading.

`constant_inputs` are inputs whose values the handler reads at import time (a Reshape's shape,
Slice's starts, a reduction's axes): they must be initializers, Constant nodes, or computable
from them and static shapes. `shape_only_inputs` are inputs of which only the type is read (the
input of `Shape`). The importer evaluates the first kind and does not import the producers of
either unless their values are also used as tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np
from xdsl.ir import SSAValue

if TYPE_CHECKING:
    from mlc.frontend.onnx.node import Node

HandlerResult = Sequence[Union[SSAValue, np.ndarray, None]]
"""One entry per node output: the graph value, a constant known at import time (materialised as a
`graph.constant` where it is used as a tensor), or None for an optional output not produced."""

Handler = Callable[["Node"], HandlerResult]


@dataclass(frozen=True)
class OpMapping:
    op_type: str
    handler: Handler
    versions: tuple[int, ...]
    constant_inputs: frozenset[int]
    shape_only_inputs: frozenset[int]


_MAPPINGS: dict[str, OpMapping] = {}


def maps(
    op_type: str,
    versions: Sequence[int],
    constant_inputs: Sequence[int] = (),
    shape_only_inputs: Sequence[int] = (),
) -> Callable[[Handler], Handler]:
    """Registers the decorated function as the handler of `op_type` (default ONNX domain)."""

    def register(handler: Handler) -> Handler:
        _MAPPINGS[op_type] = OpMapping(
            op_type, handler, tuple(sorted(versions)), frozenset(constant_inputs), frozenset(shape_only_inputs)
        )
        return handler

    return register


def mappings() -> dict[str, OpMapping]:
    """Every mapped op of the default ONNX domain, by op type."""
    # The handler modules register on import; they are imported here, not at the top, because
    # they import `maps` from this module.
    from mlc.frontend.onnx import elementwise, model_ops, neural, pooling, resize, tensor_ops  # noqa: F401

    return _MAPPINGS
