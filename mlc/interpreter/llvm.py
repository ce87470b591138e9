"""Semantics of the `llvm` dialect, with mlc's extra ops (`fptosi`, `uitofp`, `addrspacecast`, ...).

Pointers are int64 byte addresses (see `memory.py`): `getelementptr` adds byte offsets computed
from its element type with LLVM's default data layout (natural alignment, as on NVPTX and x86-64),
`load`/`store` reinterpret the bytes there with the accessed type (scalars, pointers, vectors),
address-space casts change nothing. Aggregates (struct, array values) are tuples of fields.
`llvm.mlir.global`s are allocated on first `addressof`: once per run, or once per launch and per
block in address space 3 (shared memory). Calls and intrinsics are in `intrinsics.py`.

Limits: no inline assembly, no atomics (`atomicrmw`, `cmpxchg` are not in the dialect either), no
loads or stores of aggregates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import MappingProxyType

import numpy as np
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    VectorType,
    i1,
)
from xdsl.ir import Attribute, Operation

from mlc.dialects import attributes, llvm_extra
from mlc.interpreter import scalar
from mlc.interpreter.engine import (
    Branch,
    Execution,
    Exit,
    Implementation,
    OperationTable,
    TerminatorImplementation,
)
from mlc.interpreter.errors import InterpreterError, UnsupportedOperation
from mlc.interpreter.operations import binary, by_name, conversion, integer_division, static_int, ternary, unary
from mlc.interpreter.standard import conditional_branch, select_implementation
from mlc.interpreter.values import (
    Mask,
    MemRefValue,
    as_array,
    constant_value,
    dtype_of,
    poison_value,
    trailing_shape,
    zero_value,
)

PRIVATE_MEMORY_SPACE = 5
SHARED_MEMORY_SPACE = 3

# Data layout -------------------------------------------------------------------------------------


def type_size(type_: Attribute) -> int:
    """LLVM's store size of `type_` in bytes."""
    if isinstance(type_, IntegerType):
        return max(1, (type_.width.data + 7) // 8)
    if isinstance(type_, IndexType | llvm.LLVMPointerType | Float64Type):
        return 8
    if isinstance(type_, Float32Type):
        return 4
    if isinstance(type_, Float16Type | BFloat16Type):
        return 2
    if isinstance(type_, VectorType):
        return int(np.prod(type_.get_shape())) * type_size(type_.element_type)
    if isinstance(type_, llvm.LLVMArrayType):
        return type_.size.data * allocation_size(type_.type)
    if isinstance(type_, llvm.LLVMStructType):
        offsets = field_offsets(type_)
        fields = type_.types.data
        end = offsets[-1] + type_size(fields[-1]) if fields else 0
        alignment = type_alignment(type_)
        return -(-end // alignment) * alignment
    raise UnsupportedOperation(f"no size for type {type_}")


def type_alignment(type_: Attribute) -> int:
    if isinstance(type_, llvm.LLVMArrayType):
        return type_alignment(type_.type)
    if isinstance(type_, llvm.LLVMStructType):
        return max((type_alignment(t) for t in type_.types.data), default=1)
    size = type_size(type_)
    alignment = 1
    while alignment < size:
        alignment *= 2
    return alignment


def allocation_size(type_: Attribute) -> int:
    alignment = type_alignment(type_)
    return -(-type_size(type_) // alignment) * alignment


def field_offsets(struct_type: llvm.LLVMStructType) -> list[int]:
    offsets = []
    position = 0
    for field in struct_type.types.data:
        alignment = type_alignment(field)
        position = -(-position // alignment) * alignment
        offsets.append(position)
        position += type_size(field)
    return offsets


def innermost_scalar_type(type_: Attribute) -> Attribute:
    while isinstance(type_, llvm.LLVMArrayType | VectorType):
        type_ = type_.type if isinstance(type_, llvm.LLVMArrayType) else type_.element_type
    return type_


def _poison_dtype(type_: Attribute) -> np.dtype:
    try:
        return dtype_of(innermost_scalar_type(type_))
    except InterpreterError:
        return np.dtype(np.uint8)


# Memory ------------------------------------------------------------------------------------------


def scalar_layout(type_: Attribute) -> tuple[np.dtype, tuple[int, ...]]:
    """The dtype and vector shape of a loadable type."""
    if isinstance(type_, llvm.LLVMStructType | llvm.LLVMArrayType):
        raise UnsupportedOperation(f"loads and stores of the aggregate type {type_}")
    if isinstance(type_, VectorType) and type_.element_type == i1:
        # LLVM packs a vector of i1 into bits in memory, where mlc's buffers hold one byte per
        # boolean: such an access would read or write the wrong bytes on a real target.
        raise UnsupportedOperation(f"a load or store of {type_}: LLVM packs it into bits; access i8 vectors")
    return dtype_of(type_), trailing_shape(type_)


def vector_addresses(address: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if not shape:
        return np.asarray(address, dtype=np.int64)
    offsets = (np.arange(int(np.prod(shape)), dtype=np.int64) * dtype.itemsize).reshape(shape)
    return np.asarray(address, dtype=np.int64)[(...,) + (None,) * len(shape)] + offsets


def _load(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (address,) = execution.operands(op)
    dtype, shape = scalar_layout(op.results[0].type)
    return [execution.read(vector_addresses(address, dtype, shape), dtype, mask, op, len(shape))]


def _store(execution: Execution, op: Operation, mask: Mask) -> None:
    value, address = execution.operands(op)
    dtype, shape = scalar_layout(op.operands[0].type)
    execution.write(vector_addresses(address, dtype, shape), value, dtype, mask, op, len(shape))


def _alloca(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, llvm.AllocaOp)
    count = static_int(execution.get(op.size), "the size of an llvm.alloca")
    element_type = op.elem_type
    dtype = _poison_dtype(element_type)
    size = count * allocation_size(element_type)
    name = op.res.name_hint or "alloca"
    address = execution.allocate(name, size, PRIVATE_MEMORY_SPACE, dtype, (), str(element_type))
    return [address]


GepLayout = tuple[int, tuple[tuple[int, int], ...]]
"""A GEP's constant byte offset, and (operand position, bytes per unit) for each SSA index."""


def gep_layout(op: llvm.GEPOp) -> GepLayout:
    """The byte arithmetic of a `getelementptr`, from its element type (static)."""
    constant = 0
    scaled: list[tuple[int, int]] = []
    operand = 1  # operand 0 is the base pointer
    current: Attribute = op.elem_type
    for position, raw in enumerate(op.rawConstantIndices.get_values()):
        dynamic = raw == llvm.GEP_USE_SSA_VAL
        if position == 0:
            unit = allocation_size(current)
        elif isinstance(current, llvm.LLVMArrayType):
            current = current.type
            unit = allocation_size(current)
        elif isinstance(current, VectorType):
            current = current.element_type
            unit = type_size(current)
        elif isinstance(current, llvm.LLVMStructType):
            if dynamic:
                raise InterpreterError("a struct field index of getelementptr must be a constant")
            constant += field_offsets(current)[int(raw)]
            current = current.types.data[int(raw)]
            continue
        else:
            raise InterpreterError(f"getelementptr index into the non-aggregate type {current}")
        if dynamic:
            scaled.append((operand, unit))
            operand += 1
        else:
            constant += int(raw) * unit
    return constant, tuple(scaled)


def _gep(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, llvm.GEPOp)
    constant, scaled = execution.machine.cached(op, lambda: gep_layout(op))  # type: ignore[misc]
    operands = execution.operands(op)
    address = np.asarray(operands[0], dtype=np.int64) + constant
    for position, unit in scaled:
        address = address + np.asarray(operands[position], dtype=np.int64) * unit
    return [address]


def global_address(execution: Execution, op: Operation, name: str) -> np.ndarray:
    """The address of `llvm.mlir.global @name` (per block when in address space 3)."""
    global_op = execution.machine.lookup(name, op)
    if not isinstance(global_op, llvm.GlobalOp):
        raise UnsupportedOperation(f"the address of '@{name}', a '{global_op.name}'", op)
    space = global_op.addr_space.value.data
    per_launch = space in (SHARED_MEMORY_SPACE, PRIVATE_MEMORY_SPACE)
    cache = execution.level.launch_globals if per_launch else execution.machine.module_globals
    address = cache.get(name)
    if address is not None:
        return address
    global_type = global_op.global_type
    dtype = _poison_dtype(global_type)
    size = type_size(global_type)
    dynamic = attributes.DYNAMIC_SHARED_BYTES.read(global_op)
    if isinstance(dynamic, IntegerAttr):  # the block's dynamic shared memory (convert-gpu-to-nvvm)
        size = dynamic.value.data
    if per_launch:
        address = execution.allocate(name, size, space, dtype, (), str(global_type))
    else:
        memory = execution.machine.memory
        value = global_op.value
        fill = None if value is not None else np.asarray(poison_value(dtype))
        buffer = memory.allocate(
            name, size, granularity=dtype.itemsize, fill=fill, description=str(global_type)
        )
        if isinstance(value, DenseIntOrFPElementsAttr | FloatAttr | IntegerAttr):
            scalar_type = innermost_scalar_type(global_type)
            initial = np.asarray(
                constant_value(
                    value, value.type if isinstance(value, DenseIntOrFPElementsAttr) else scalar_type
                )
            )
            count = size // dtype.itemsize
            elements = np.broadcast_to(initial.astype(dtype).reshape(-1), (count,))
            buffer.data[:size] = np.ascontiguousarray(elements).view(np.uint8)
        elif isinstance(value, StringAttr):
            encoded = value.data.encode("latin-1")
            buffer.data[: len(encoded)] = np.frombuffer(encoded, dtype=np.uint8)
        buffer.read_only = global_op.constant is not None
        address = np.int64(buffer.base)
    cache[name] = address
    return address


def _addressof(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, llvm.AddressOfOp)
    return [global_address(execution, op, op.global_name.root_reference.data)]


# Values ------------------------------------------------------------------------------------------


def _constant(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return [execution.machine.cached(op, lambda: constant_value(op.properties["value"], op.results[0].type))]


def _zero(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return [zero_value(op.results[0].type)]


def _extract_value(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, llvm.ExtractValueOp)
    value = execution.get(op.container)
    for position in op.position.get_values():
        value = value[int(position)]  # type: ignore[index]
    return [value]


def _insert(container: object, positions: Sequence[int], value: object) -> object:
    assert isinstance(container, tuple)
    first = positions[0]
    replacement = value if len(positions) == 1 else _insert(container[first], positions[1:], value)
    return container[:first] + (replacement,) + container[first + 1 :]


def _insert_value(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, llvm.InsertValueOp)
    container = execution.get(op.container)
    positions = [int(p) for p in op.position.get_values()]
    return [_insert(container, positions, execution.get(op.value))]


def _insert_element(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    vector, value, index = (np.asarray(v) for v in execution.operands(op))
    size = trailing_shape(op.results[0].type)[0]
    chosen = np.arange(size) == index.astype(np.int64)[..., None]
    return [np.where(chosen, value[..., None], vector)]


def _extract_element(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    vector, index = (np.asarray(v) for v in execution.operands(op))
    if index.ndim == 0:
        return [vector[..., int(index)]]
    shape = np.broadcast_shapes(vector.shape[:-1], index.shape)
    full = np.broadcast_to(vector, shape + vector.shape[-1:])
    return [
        np.take_along_axis(full, np.broadcast_to(index.astype(np.int64), shape)[..., None], axis=-1)[..., 0]
    ]


def _shuffle_vector(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    first, second = (np.asarray(v) for v in execution.operands(op))
    lanes = np.broadcast_shapes(first.shape[:-1], second.shape[:-1])
    joined = np.concatenate(
        [
            np.broadcast_to(first, lanes + first.shape[-1:]),
            np.broadcast_to(second, lanes + second.shape[-1:]),
        ],
        axis=-1,
    )
    selection = [max(int(i), 0) for i in op.properties["mask"].get_values()]  # type: ignore[attr-defined]
    return [np.take(joined, selection, axis=-1)]


def _predicate(
    names: Sequence[str], compare: Callable[[str, np.ndarray, np.ndarray], np.ndarray]
) -> Implementation:
    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        a, b = execution.operands(op)
        name = names[op.properties["predicate"].value.data].lstrip("_")  # type: ignore[attr-defined]
        return [compare(name, a, b)]

    return implementation


def _llvm_bitcast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (value,) = execution.operands(op)
    source_type, target_type = op.operands[0].type, op.results[0].type
    if isinstance(target_type, llvm.LLVMPointerType) or source_type == target_type:
        return [value]
    source = np.ascontiguousarray(value)
    lanes = source.shape[: source.ndim - len(trailing_shape(source_type))]
    return [source.view(dtype_of(target_type)).reshape(lanes + trailing_shape(target_type))]


def _identity(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return [execution.get(op.operands[0])]


def _ptr_to_int(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (value,) = execution.operands(op)
    return [
        scalar.cast_integer(np.asarray(value, dtype=np.int64), dtype_of(op.results[0].type), signed=False)
    ]


def _int_to_ptr(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    (value,) = execution.operands(op)
    return [scalar.cast_integer(value, np.dtype(np.int64), signed=False)]


def _vector_reduce(function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Implementation:
    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        start, values = execution.operands(op)
        return [as_array(ordered_reduce(function, np.asarray(values), start), dtype_of(op.results[0].type))]

    return implementation


def ordered_reduce(
    function: Callable[[np.ndarray, np.ndarray], np.ndarray], values: np.ndarray, start: object
) -> np.ndarray:
    """Left-to-right reduction over the last axis, from `start` when given."""
    result = values[..., 0] if start is None else function(np.asarray(start), values[..., 0])
    for position in range(1, values.shape[-1]):
        result = function(result, values[..., position])
    return result


def _masked_store(execution: Execution, op: Operation, mask: Mask) -> None:
    value, address, vector_mask = execution.operands(op)
    dtype, shape = scalar_layout(op.operands[0].type)
    lanes = np.asarray(vector_mask, dtype=bool)
    execution.write(vector_addresses(address, dtype, shape), value, dtype, mask, op, len(shape), lanes)


def _unreachable(execution: Execution, op: Operation, mask: Mask) -> Exit:
    raise InterpreterError("control reached 'llvm.unreachable'")


def _return(execution: Execution, op: Operation, mask: Mask) -> Exit:
    return Exit(execution.operands(op))


def _br(execution: Execution, op: Operation, mask: Mask) -> Branch:
    return Branch([(None, op.successors[0], execution.operands(op))])


def _inline_asm(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, llvm.InlineAsmOp)
    raise UnsupportedOperation(f"inline assembly '{op.asm_string.data}'")


def _extra_cast(signed: bool, to_float: bool) -> Implementation:
    def function(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
        if to_float:
            return scalar.signed_to_float(a, dtype) if signed else scalar.unsigned_to_float(a, dtype)
        return scalar.float_to_integer(a, dtype, signed=signed)

    return conversion(function)


LLVM_OPERATIONS: dict[str, Implementation] = {
    "llvm.add": binary(scalar.addi),
    "llvm.sub": binary(scalar.subi),
    "llvm.mul": binary(scalar.muli),
    "llvm.udiv": integer_division(scalar.divui, signed=False),
    "llvm.sdiv": integer_division(scalar.divsi, signed=True),
    "llvm.urem": integer_division(scalar.remui, signed=False),
    "llvm.srem": integer_division(scalar.remsi, signed=True),
    "llvm.and": binary(scalar.andi),
    "llvm.or": binary(scalar.ori),
    "llvm.xor": binary(scalar.xori),
    "llvm.shl": binary(scalar.shli),
    "llvm.lshr": binary(scalar.shrui),
    "llvm.ashr": binary(scalar.shrsi),
    "llvm.fadd": binary(np.add),
    "llvm.fsub": binary(np.subtract),
    "llvm.fmul": binary(np.multiply),
    "llvm.fdiv": binary(np.divide),
    "llvm.frem": binary(np.fmod),
    "llvm.fneg": unary(np.negative),
    "llvm.icmp": _predicate(scalar.INTEGER_PREDICATES, scalar.compare_integers),
    "llvm.fcmp": _predicate(scalar.FLOAT_PREDICATES, scalar.compare_floats),
    "llvm.select": select_implementation,
    "llvm.trunc": conversion(scalar.truncate_integer),
    "llvm.zext": conversion(scalar.extend_unsigned),
    "llvm.sext": conversion(scalar.extend_signed),
    "llvm.fpext": conversion(lambda a, d: a.astype(d)),
    "llvm.fptrunc": conversion(lambda a, d: a.astype(d)),
    "llvm.sitofp": conversion(scalar.signed_to_float),
    "llvm.bitcast": _llvm_bitcast,
    "llvm.ptrtoint": _ptr_to_int,
    "llvm.inttoptr": _int_to_ptr,
    "llvm.mlir.constant": _constant,
    "llvm.mlir.undef": _zero,
    "llvm.mlir.zero": _zero,
    "llvm.mlir.addressof": _addressof,
    "llvm.extractvalue": _extract_value,
    "llvm.insertvalue": _insert_value,
    "llvm.insertelement": _insert_element,
    "llvm.shufflevector": _shuffle_vector,
    "llvm.load": _load,
    "llvm.store": _store,
    "llvm.alloca": _alloca,
    "llvm.getelementptr": _gep,
    "llvm.inline_asm": _inline_asm,
    "llvm.intr.fabs": unary(np.abs),
    "llvm.intr.ceil": unary(np.ceil),
    "llvm.intr.floor": unary(np.floor),
    "llvm.intr.sqrt": unary(scalar.FLOAT_UNARY["sqrt"]),
    "llvm.intr.exp": unary(scalar.FLOAT_UNARY["exp"]),
    "llvm.intr.exp2": unary(scalar.FLOAT_UNARY["exp2"]),
    "llvm.intr.log": unary(scalar.FLOAT_UNARY["log"]),
    "llvm.intr.log2": unary(scalar.FLOAT_UNARY["log2"]),
    "llvm.intr.sin": unary(scalar.FLOAT_UNARY["sin"]),
    "llvm.intr.cos": unary(scalar.FLOAT_UNARY["cos"]),
    "llvm.intr.copysign": binary(np.copysign),
    "llvm.intr.fma": ternary(scalar.fma),
    "llvm.intr.maxnum": binary(np.fmax),
    "llvm.intr.minnum": binary(np.fmin),
    "llvm.intr.pow": binary(scalar.FLOAT_BINARY["pow"]),
    "llvm.intr.vector.reduce.fadd": _vector_reduce(np.add),
    "llvm.intr.vector.reduce.fmul": _vector_reduce(np.multiply),
    "llvm.intr.masked.store": _masked_store,
    "llvm.intr.stacksave": lambda execution, op, mask: [np.int64(0)],
    "llvm.intr.stackrestore": lambda execution, op, mask: None,
    "llvm.fptosi": _extra_cast(signed=True, to_float=False),
    "llvm.fptoui": _extra_cast(signed=False, to_float=False),
    "llvm.uitofp": _extra_cast(signed=False, to_float=True),
    "llvm.addrspacecast": _identity,
    "llvm.extractelement": _extract_element,
}

LLVM_TERMINATORS: dict[str, TerminatorImplementation] = {
    "llvm.return": _return,
    "llvm.br": _br,
    "llvm.cond_br": conditional_branch,
    "llvm.unreachable": _unreachable,
}


def table() -> OperationTable:
    dialect = llvm_extra.LLVM_WITH_EXTRAS
    return OperationTable(
        MappingProxyType(by_name(dialect, LLVM_OPERATIONS)),  # type: ignore[arg-type]
        MappingProxyType(by_name(dialect, LLVM_TERMINATORS)),  # type: ignore[arg-type]
    )


def plain_kernel_arguments(arguments: Sequence[object]) -> list[object]:
    """Buffers passed to an `llvm.func` kernel become bare pointers (the first element's address)."""
    return [
        np.asarray(a.start_address(), dtype=np.int64) if isinstance(a, MemRefValue) else a for a in arguments
    ]
