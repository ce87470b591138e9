"""Helpers of loop-promote-shared's copies: where a chunk of a box goes, how it is stored.

A box of E elements is copied in chunks of `width` neighbouring elements along its last
dimension, numbered row-major over the box (`chunk_coordinates`); a chunk is stored as one
aligned vector (`store_chunk`) or, for a transposed copy, element by element down a column
(`store_transposed`); reads of a transposed copy become vector reads (`redirect_group`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    MemRefType,
    VectorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import constant_index
from mlc.transforms.analysis.shared_memory_promotion import (
    ReadSite,
    constant_bounds,
    element_type_of,
)
from mlc.transforms.lowering.chunk_access import Emitter


def chunk_coordinates(emitter: Emitter, chunk: SSAValue, extents: Sequence[int], width: int) -> list[SSAValue]:
    """The box position of a chunk: row-major over the box, `width` elements each."""
    per_row = emitter.index(extents[-1] // width)
    coordinates = [emitter.emit(arith.MuliOp(emitter.emit(arith.RemUIOp(chunk, per_row)), emitter.index(width)))]
    rest = emitter.emit(arith.DivUIOp(chunk, per_row)) if len(extents) > 1 else chunk
    for position, extent in enumerate(reversed(extents[:-1])):
        outermost = position == len(extents) - 2
        coordinates.append(rest if outermost else emitter.emit(arith.RemUIOp(rest, emitter.index(extent))))
        if not outermost:
            rest = emitter.emit(arith.DivUIOp(rest, emitter.index(extent)))
    return coordinates[::-1]


def store_chunk(emitter: Emitter, shared: SSAValue, coordinates: list[SSAValue], elements: list[SSAValue]) -> None:
    element_type = element_type_of(shared)
    if len(elements) == 1:
        emitter.builder.insert(memref.StoreOp.get(elements[0], shared, coordinates))
        return
    packed = emitter.emit(vector.BroadcastOp(elements[0], VectorType(element_type, [len(elements)])))
    for position in range(1, len(elements)):
        packed = emitter.emit(vector.InsertOp(elements[position], packed, [position]))
    store = vector.StoreOp(packed, shared, coordinates)
    store.attributes["alignment"] = IntegerAttr(len(elements) * byte_width(element_type), i64)
    emitter.builder.insert(store)

def store_transposed(emitter: Emitter, shared: SSAValue, coordinates: list[SSAValue], elements: list[SSAValue]) -> None:
    """A chunk along the box's last dimension, element by element down a column of the copy."""
    *outer, row, column = coordinates
    for position, element in enumerate(elements):
        shifted = emitter.add(column, emitter.index(position)) if position else column
        emitter.builder.insert(memref.StoreOp.get(element, shared, [*outer, shifted, row]))


def require_parameter_alignment(kernel: loop.KernelOp, memref_value: SSAValue, alignment: int) -> None:
    """Raises the kernel's recorded alignment of the parameter the copy reads with vectors."""
    recorded = attributes.ARG_ALIGNMENT.integers(kernel)
    arguments = list(kernel.body.block.args)
    if memref_value not in arguments:
        return
    if recorded is not None:
        values = [int(v) for v in recorded]
    else:
        values = [byte_width(a.type.element_type) if isinstance(a.type, MemRefType) else 1 for a in arguments]
    position = arguments.index(memref_value)
    values[position] = max(values[position], alignment)
    attributes.ARG_ALIGNMENT.write(kernel, DenseArrayBase.from_list(i64, values))


Counter = int | SSAValue
"""A loop counter's value: a constant, or computed in the IR."""


def last_iteration(scope: scf.ForOp) -> Counter | None:
    """The counter's value in the last run of a loop with constant bounds that runs at least
    twice; for a constant start and step and a computed end (a causal chain kernel's key loop),
    `lb + ((max(ub, lb + 1) - 1 - lb) / step) * step` emitted right after the end is computed (lb
    when the loop does not run, so that copies made for it stay at a real counter)."""
    bounds = constant_bounds(scope)
    if bounds is not None:
        low, upper, step = bounds
        return None if upper - low <= step else low + (upper - 1 - low) // step * step
    low, step = constant_index(scope.lb), constant_index(scope.step)
    if low is None or step is None or step <= 0:
        return None
    owner = scope.ub.owner
    block = owner if isinstance(owner, Block) else owner.parent_block()
    emitter = Emitter(Block())
    at_least_once = emitter.emit(arith.MaxSIOp(scope.ub, emitter.index(low + 1)))
    runs = emitter.emit(arith.DivUIOp(emitter.emit(arith.SubiOp(at_least_once, emitter.index(low + 1))), emitter.index(step)))
    last = emitter.add(emitter.emit(arith.MuliOp(runs, emitter.index(step))), emitter.index(low))
    last.name_hint = "last"
    for op in list(emitter.builder.insertion_point.block.ops):
        op.detach()
        if isinstance(owner, Block):
            block.insert_op_before(op, block.first_op)  # type: ignore[union-attr, arg-type]
        else:
            block.insert_op_after(op, owner)  # type: ignore[union-attr]
            owner = op
    return last


def counter_value(emitter: Emitter, counter: Counter) -> SSAValue:
    return emitter.index(counter) if isinstance(counter, int) else counter


def move_ops(staging: Emitter, block: Block, before: Operation | None) -> None:
    """Moves what `staging` emitted into `block`, before `before` (at the end when None)."""
    for op in list(staging.builder.insertion_point.block.ops):
        op.detach()
        block.insert_op_before(op, before) if before is not None else block.add_op(op)


def redirect_group(group: list[ReadSite], shared: SSAValue, origins: list[SSAValue]) -> None:
    """Neighbouring scalar reads become one aligned vector read of the transposed copy.

    The vector read goes where the group's earliest read was (the others' indices may not be
    defined yet there) and starts at that read's index minus its distance from the first element.
    """
    block = group[0].op.parent_block()
    assert block is not None
    earliest = min(group, key=lambda site: block.get_operation_index(site.op))
    emitter = Emitter(block)
    emitter.builder.insertion_point = InsertPoint.before(earliest.op)
    local = [emitter.emit(arith.SubiOp(index, origin)) for index, origin in zip(earliest.op.indices, origins)]
    distance = group.index(earliest)
    if distance:
        local[-2] = emitter.emit(arith.SubiOp(local[-2], emitter.index(distance)))
    element_type = element_type_of(shared)
    read = vector.LoadOp(shared, [*local[:-2], local[-1], local[-2]], VectorType(element_type, [len(group)]))
    read.attributes["alignment"] = IntegerAttr(len(group) * byte_width(element_type), i64)
    for name, attribute in earliest.op.attributes.items():
        if name != "alignment":
            read.attributes[name] = attribute
    emitter.builder.insert(read)
    for position, site in enumerate(group):
        element = emitter.emit(vector.ExtractOp(read.result, [position], element_type))
        site.op.results[0].replace_all_uses_with(element)
    for site in group:
        block.erase_op(site.op)


def redirect_read(
    site: ReadSite, shared: SSAValue, origins: list[SSAValue], stage: SSAValue | None, aligned: Callable[[SSAValue, int, SSAValue], bool]
) -> None:
    """Replaces the read of `site` by the same read of `shared` at `index - origin` (in `stage`, if
    staged); a vector read keeps its alignment where `aligned(origin, width, shared)` says so."""
    op = site.op
    block = op.parent_block()
    assert block is not None
    local = [] if stage is None else [stage]
    indices = op.read_region(site.role)[1] if isinstance(op, loop.WgmmaOp) and site.role is not None else op.indices
    for index, origin in zip(indices, origins):
        difference = arith.SubiOp(index, origin)
        block.insert_op_before(difference, op)
        local.append(difference.result)
    if isinstance(op, loop.WgmmaOp):
        operands = (shared, local, op.rhs, op.rhs_indices) if site.role == "lhs" else (op.lhs, op.lhs_indices, shared, local)
        replacement: Operation = loop.WgmmaOp(*operands, op.c, op.columns, op.depth, op.a)
    elif isinstance(op, loop.LdMatrixOp):
        replacement = loop.LdMatrixOp(shared, local, op.matrices, op.transposed, op.registers[0].type)
    elif isinstance(op, vector.LoadOp):
        replacement = vector.LoadOp(shared, local, op.result.type)
        alignment = op.attributes.get("alignment")
        width_bytes = site.width * byte_width(element_type_of(shared))
        if alignment is not None and aligned(origins[-1], site.width, shared):
            replacement.attributes["alignment"] = IntegerAttr(width_bytes, i64)
    else:
        replacement = memref.LoadOp.get(shared, local)
    for name, attribute in op.attributes.items():
        if name != "alignment":
            replacement.attributes[name] = attribute
    block.insert_op_before(replacement, op)
    for old, new in zip(op.results, replacement.results):
        old.replace_all_uses_with(new)
    block.erase_op(op)
