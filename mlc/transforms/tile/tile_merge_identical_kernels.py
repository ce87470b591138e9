"""tile-merge-identical-kernels: keep one `tile.kernel` of each set of identical kernels.

Why. Programs repeat themselves: the layers of a transformer, the same normalisation applied to
several tensors, a bias-add after each of several equally shaped matmuls. convert-graph-to-tile
builds one kernel per fusion group, so such a program carries the same kernel several times under
different names, and every later pass, LLVM's code generation and the driver's PTX load pay for
each copy. Merging them at the tile level, right after the kernels are built, lowers and compiles
each distinct kernel once per module.

Algorithm. Kernels are bucketed by a cheap signature (function type, grid, warps, op count), then
compared within a bucket by xDSL's structural equivalence of their bodies (same ops, operands
wired the same way, same attributes, properties and types; value names do not matter) and of
their properties and attributes other than the symbol name. Each kernel equivalent to an earlier
one is erased and the `tile.launch`es of it are redirected to the earlier one. Kernels are
compared only with the kept representatives of their bucket, so the cost is linear in the
kernels when they are all distinct or all the same.

Preconditions: none; a module without duplicates is left unchanged. A kernel referenced by
anything but a `tile.launch` (a symbol use the pass does not know) is kept as it is.
Limits: kernels that differ only in a constant (say, the same chain with another scale) are not
merged; that would need specialising on a new parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from mlc.dialects.tile import ops as tile


def _signature(kernel: tile.KernelOp) -> tuple[object, ...]:
    """What identical kernels share, cheap to compute: a bucket key."""
    properties = tuple(sorted((name, value) for name, value in kernel.properties.items() if name != "sym_name"))
    return (properties, tuple(sorted(kernel.attributes.items())), sum(1 for _ in kernel.walk()))


def _identical(kernel: tile.KernelOp, other: tile.KernelOp) -> bool:
    return kernel.body.is_structurally_equivalent(other.body)


def _other_symbol_uses(module: ModuleOp) -> set[str]:
    """Names of kernels some op other than a `tile.launch` refers to."""
    names: set[str] = set()
    for op in module.walk():
        if isinstance(op, tile.LaunchOp):
            continue
        for value in (*op.properties.values(), *op.attributes.values()):
            if isinstance(value, SymbolRefAttr) and not isinstance(op, tile.KernelOp):
                names.add(value.root_reference.data)
    return names


def merge_identical_kernels(module: ModuleOp) -> dict[str, str]:
    """Erases each kernel identical to an earlier one; returns {erased name: kept name}."""
    pinned = _other_symbol_uses(module)
    kept_by_signature: dict[tuple[object, ...], list[tile.KernelOp]] = {}
    replacement: dict[str, str] = {}
    duplicates: list[Operation] = []
    for kernel in [op for op in module.body.block.ops if isinstance(op, tile.KernelOp)]:
        name = kernel.sym_name.data
        bucket = kept_by_signature.setdefault(_signature(kernel), [])
        same = next((kept for kept in bucket if _identical(kernel, kept)), None) if name not in pinned else None
        if same is None:
            bucket.append(kernel)
            continue
        replacement[name] = same.sym_name.data
        duplicates.append(kernel)
    if not replacement:
        return replacement
    for launch in [op for op in module.walk() if isinstance(op, tile.LaunchOp)]:
        target = replacement.get(launch.kernel.root_reference.data)
        if target is not None:
            launch.kernel = SymbolRefAttr(target)
    for kernel in duplicates:
        kernel.detach()
        kernel.erase()
    return replacement


@dataclass(frozen=True)
class TileMergeIdenticalKernels(ModulePass):
    """Keep one of each set of identical tile.kernels and launch it in place of the others."""

    name = "tile-merge-identical-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_identical_kernels(op)
