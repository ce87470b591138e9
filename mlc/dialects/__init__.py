"""mlc's dialects, and the standard dialects its IR uses, registered for parsing.

`mlc_dialects()` lists the four dialects of our own (what the `xdsl.universe` entry point
exports); `all_dialects()` adds the standard ones (`builtin`, `func`, `arith`, `math`, `scf`,
`cf`, `memref`, `vector` and the `llvm` dialect with mlc's additions); `make_context()` returns an
xDSL context in which all of them load lazily on first use.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def _graph() -> Dialect:
    from mlc.dialects.graph.ops import Graph

    return Graph


def _tile() -> Dialect:
    from mlc.dialects.tile.ops import Tile

    return Tile


def _loop() -> Dialect:
    from mlc.dialects.loop.ops import Loop

    return Loop


def _mlc_gpu() -> Dialect:
    from mlc.dialects.gpu.ops import MlcGpu

    return MlcGpu


def _llvm() -> Dialect:
    from mlc.dialects.llvm_extra import LLVM_WITH_EXTRAS

    return LLVM_WITH_EXTRAS


def mlc_dialects() -> dict[str, Callable[[], Dialect]]:
    return {"graph": _graph, "tile": _tile, "loop": _loop, "mlc_gpu": _mlc_gpu}


def standard_dialects() -> dict[str, Callable[[], Dialect]]:
    from xdsl.dialects import arith, builtin, cf, func, math, memref, scf, vector

    return {
        "builtin": lambda: builtin.Builtin,
        "func": lambda: func.Func,
        "arith": lambda: arith.Arith,
        "math": lambda: math.Math,
        "scf": lambda: scf.Scf,
        "cf": lambda: cf.Cf,
        "memref": lambda: memref.MemRef,
        "vector": lambda: vector.Vector,
        "llvm": _llvm,
    }


def all_dialects() -> dict[str, Callable[[], Dialect]]:
    return standard_dialects() | mlc_dialects()


def make_context() -> Context:
    """A context that knows every dialect mlc reads and writes."""
    context = Context()
    for name, factory in all_dialects().items():
        context.register_dialect(name, factory)
    return context
