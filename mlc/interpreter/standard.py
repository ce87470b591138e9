"""Semantics of arith, math, scf, cf and func, and of `builtin.unrealized_conversion_cast`.

Every implementation works on lane arrays (see `values.py`), so the same code runs one host lane,
a tile (inside `tile.map`) or 64k GPU threads. Numeric semantics live in `scalar.py`; memref and
vector ops in `memory_ops.py`.

Control flow under masks:
* `scf.if` with a uniform condition runs one region; with a lane-varying one it runs each region
  for its lanes and merges the yielded values with `np.where`.
* `scf.for` with uniform bounds is a Python loop; with lane-varying bounds every lane keeps its own
  induction variable and the body runs while any lane is active, later iterations for fewer lanes.
* `scf.while` likewise; a lane's results are those its `scf.condition` had when it left.
* `cf.br`, `cf.cond_br`, `cf.switch` are terminators for the engine's lockstep scheduler.

`unrealized_conversion_cast` bridges the levels while a module is partly lowered: memref <->
bare `!llvm.ptr` (the address of element 0) or MLIR's memref descriptor struct, index <-> iN.

Limits: `scf.parallel` and `scf.forall` are not supported (mlc's loop level uses `loop.parallel`);
`arith.mul[su]i_extended` only up to 32 bits.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from xdsl.dialects import arith, builtin, cf, func, llvm, math, scf
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Attribute, Operation

from mlc.interpreter import scalar
from mlc.interpreter.engine import Branch, Execution, Implementation, OperationTable, TerminatorImplementation
from mlc.interpreter.errors import InterpreterError, UnsupportedOperation
from mlc.interpreter.operations import (
    astype,
    binary,
    by_name,
    call_function,
    conversion,
    exit_with_operands,
    integer_division,
    restrict,
    ternary,
    unary,
)
from mlc.interpreter.values import (
    Mask,
    MemRefValue,
    constant_value,
    dtype_of,
    is_uniform,
    memref_from_address,
    merge,
    zero_value,
)
from mlc.interpreter.warp_roles import WARP_ROLES, run_roles


# arith -------------------------------------------------------------------------------------------


def _constant(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return [execution.machine.cached(op, lambda: constant_value(op.properties["value"], op.results[0].type))]


def _cmpi(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    a, b = execution.operands(op)
    predicate = scalar.INTEGER_PREDICATES[op.properties["predicate"].value.data]  # type: ignore[attr-defined]
    return [scalar.compare_integers(predicate, a, b)]


def _cmpf(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    a, b = execution.operands(op)
    predicate = scalar.FLOAT_PREDICATES[op.properties["predicate"].value.data]  # type: ignore[attr-defined]
    return [scalar.compare_floats(predicate, a, b)]


def select_implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """`select %c, %a, %b`: an i1 condition picks whole values, a vector of i1 elementwise."""
    condition, when_true, when_false = execution.operands(op)
    result_type = op.results[0].type
    condition = np.asarray(condition, dtype=bool)
    if is_uniform(condition) and not isinstance(op.operands[0].type, VectorType):
        return [when_true if bool(condition) else when_false]
    if isinstance(op.operands[0].type, VectorType):
        return [np.where(condition, when_true, when_false)]
    return [merge(condition, when_true, when_false, result_type)]


def _index_cast(signed: bool) -> Implementation:
    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        (a,) = execution.operands(op)
        return [scalar.cast_integer(a, execution.machine.result_dtype(op), signed=signed)]

    return implementation


def _extended(kind: str) -> Implementation:
    """`addui_extended` (sum, carry) and `mul[su]i_extended` (low, high halves)."""

    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        a, b = (np.asarray(x) for x in execution.operands(op))
        dtype = a.dtype
        if kind == "add":
            total = scalar.addi(a, b)
            carry = scalar.compare_integers("ult", total, a)
            return [total, carry]
        bits = dtype.itemsize * 8
        if bits > 32:
            raise UnsupportedOperation(f"'{op.name}' on {bits}-bit integers")
        if kind == "muls":
            wide = a.astype(np.int64) * b.astype(np.int64)
        else:
            unsigned = scalar.extend_unsigned
            wide = unsigned(a, np.dtype(np.int64)) * unsigned(b, np.dtype(np.int64))
        low = wide.astype(dtype)
        high = (wide >> bits).astype(dtype)
        return [low, high]

    return implementation


ARITH: dict[str, Implementation] = {
    "arith.constant": _constant,
    "arith.addi": binary(scalar.addi),
    "arith.subi": binary(scalar.subi),
    "arith.muli": binary(scalar.muli),
    "arith.divsi": integer_division(scalar.divsi, signed=True),
    "arith.divui": integer_division(scalar.divui, signed=False),
    "arith.remsi": integer_division(scalar.remsi, signed=True),
    "arith.remui": integer_division(scalar.remui, signed=False),
    "arith.floordivsi": integer_division(scalar.floordivsi, signed=True),
    "arith.ceildivsi": integer_division(scalar.ceildivsi, signed=True),
    "arith.ceildivui": integer_division(scalar.ceildivui, signed=False),
    "arith.andi": binary(scalar.andi),
    "arith.ori": binary(scalar.ori),
    "arith.xori": binary(scalar.xori),
    "arith.shli": binary(scalar.shli),
    "arith.shrsi": binary(scalar.shrsi),
    "arith.shrui": binary(scalar.shrui),
    "arith.maxsi": binary(scalar.maxsi),
    "arith.minsi": binary(scalar.minsi),
    "arith.maxui": binary(scalar.maxui),
    "arith.minui": binary(scalar.minui),
    "arith.cmpi": _cmpi,
    "arith.cmpf": _cmpf,
    "arith.select": select_implementation,
    "arith.addf": binary(np.add),
    "arith.subf": binary(np.subtract),
    "arith.mulf": binary(np.multiply),
    "arith.divf": binary(np.divide),
    "arith.negf": unary(np.negative),
    "arith.maximumf": binary(scalar.maximumf),
    "arith.minimumf": binary(scalar.minimumf),
    "arith.maxnumf": binary(np.fmax),
    "arith.minnumf": binary(np.fmin),
    "arith.extf": conversion(astype),
    "arith.truncf": conversion(astype),
    "arith.extsi": conversion(scalar.extend_signed),
    "arith.extui": conversion(scalar.extend_unsigned),
    "arith.trunci": conversion(scalar.truncate_integer),
    "arith.sitofp": conversion(scalar.signed_to_float),
    "arith.uitofp": conversion(scalar.unsigned_to_float),
    "arith.fptosi": conversion(lambda a, d: scalar.float_to_integer(a, d, signed=True)),
    "arith.fptoui": conversion(lambda a, d: scalar.float_to_integer(a, d, signed=False)),
    "arith.index_cast": _index_cast(signed=True),
    "arith.bitcast": conversion(scalar.bitcast),
    "arith.addui_extended": _extended("add"),
    "arith.mulsi_extended": _extended("muls"),
    "arith.mului_extended": _extended("mulu"),
}

# math --------------------------------------------------------------------------------------------

MATH: dict[str, Implementation] = {
    **{
        f"math.{name}": unary(scalar.FLOAT_UNARY[name])
        for name in (
            "ceil",
            "floor",
            "trunc",
            "round",
            "roundeven",
            "sqrt",
            "rsqrt",
            "cbrt",
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "asinh",
            "acosh",
            "atanh",
            "erf",
        )
    },
    "math.absf": unary(np.abs),
    "math.absi": unary(scalar.absi),
    "math.ctlz": unary(scalar.ctlz),
    "math.cttz": unary(scalar.cttz),
    "math.ctpop": unary(scalar.ctpop),
    "math.atan2": binary(scalar.FLOAT_BINARY["atan2"]),
    "math.powf": binary(scalar.FLOAT_BINARY["pow"]),
    "math.copysign": binary(np.copysign),
    "math.fpowi": binary(scalar.powi),
    "math.ipowi": binary(scalar.ipowi),
    "math.fma": ternary(scalar.fma),
}

# scf ---------------------------------------------------------------------------------------------


def _scf_if(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, scf.IfOp)
    if WARP_ROLES in op.attributes:
        return run_roles(execution, op, mask)
    condition = np.asarray(execution.get(op.cond), dtype=bool)
    has_else = bool(op.false_region.blocks)
    if is_uniform(condition):
        if bool(condition):
            return execution.run_region(op.true_region, [], mask)
        return execution.run_region(op.false_region, [], mask) if has_else else []
    then_mask, any_then = restrict(mask, condition)
    else_mask, any_else = restrict(mask, ~condition)
    then_values = execution.run_region(op.true_region, [], then_mask) if any_then else None
    else_values = execution.run_region(op.false_region, [], else_mask) if any_else and has_else else None
    if then_values is None:
        return else_values if else_values is not None else [zero_value(r.type) for r in op.results]
    if else_values is None:
        return then_values
    return [merge(condition, t, e, r.type) for t, e, r in zip(then_values, else_values, op.results)]


def _scf_for(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, scf.ForOp)
    lower, upper, step, *values = execution.operands(op)
    dtype = dtype_of(op.lb.type)
    if is_uniform(lower) and is_uniform(upper) and is_uniform(step):
        index, end, increment = int(lower), int(upper), int(step)
        if increment <= 0 and index < end:
            raise InterpreterError(f"scf.for step must be positive, got {increment}")
        while index < end:
            values = execution.run_region(op.body, [dtype.type(index), *values], mask)
            index += increment
        return values
    if not np.all(np.asarray(step) > 0):
        raise InterpreterError("scf.for step must be positive in every lane")
    induction = np.asarray(lower, dtype=dtype)
    active, any_active = restrict(mask, induction < upper)
    types = [r.type for r in op.results]
    while any_active:
        new = execution.run_region(op.body, [induction, *values], active)
        values = [merge(active, n, o, t) for n, o, t in zip(new, values, types)]
        induction = (induction + np.asarray(step, dtype=dtype)).astype(dtype)
        active, any_active = restrict(active, induction < upper)
    return values


def _scf_while(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, scf.WhileOp)
    arguments = execution.operands(op)
    types = [r.type for r in op.res]
    results: list[object] | None = None
    active = mask
    while True:
        condition, *values = execution.run_region(op.before_region, arguments, active)
        leaving, any_leaving = restrict(active, np.logical_not(condition))
        if any_leaving:
            if results is None or leaving is None:
                results = values
            else:
                results = [merge(leaving, v, r, t) for v, r, t in zip(values, results, types)]
        active, any_staying = restrict(active, condition)
        if not any_staying:
            break
        arguments = execution.run_region(op.after_region, values, active)
    return results if results is not None else [zero_value(t) for t in types]


def _scf_execute_region(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    return execution.run_region(op.regions[0], [], mask)


def _scf_index_switch(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, scf.IndexSwitchOp)
    selector = np.asarray(execution.get(op.arg))
    cases = list(op.cases.get_values())
    types = [r.type for r in op.output]
    if is_uniform(selector):
        value = int(selector)
        region = op.case_regions[cases.index(value)] if value in cases else op.default_region
        return execution.run_region(region, [], mask)
    results: list[object] | None = None
    unmatched = np.ones(selector.shape, dtype=bool)
    for case, region in [*zip(cases, op.case_regions), (None, op.default_region)]:
        lanes = unmatched if case is None else (selector == case)
        unmatched = unmatched & ~lanes
        region_mask, any_lane = restrict(mask, lanes)
        if not any_lane:
            continue
        values = execution.run_region(region, [], region_mask)
        results = (
            values if results is None else [merge(lanes, v, r, t) for v, r, t in zip(values, results, types)]
        )
    return results if results is not None else [zero_value(t) for t in types]


SCF: dict[str, Implementation] = {
    "scf.if": _scf_if,
    "scf.for": _scf_for,
    "scf.while": _scf_while,
    "scf.execute_region": _scf_execute_region,
    "scf.index_switch": _scf_index_switch,
}
SCF_TERMINATORS: dict[str, TerminatorImplementation] = {
    "scf.yield": exit_with_operands,
    "scf.condition": exit_with_operands,
}

# cf ----------------------------------------------------------------------------------------------


def _branch(execution: Execution, op: Operation, mask: Mask) -> Branch:
    return Branch([(None, op.successors[0], execution.operands(op))])


def conditional_branch(execution: Execution, op: Operation, mask: Mask) -> Branch:
    """`cond_br %c, ^a(...), ^b(...)` of cf and llvm (same operand layout)."""
    then_operands, else_operands = execution.machine.cached(
        op,
        lambda: (tuple(op.then_arguments), tuple(op.else_arguments)),  # type: ignore[attr-defined]
    )
    condition = execution.get(op.operands[0])
    then_arguments = [execution.get(v) for v in then_operands]
    else_arguments = [execution.get(v) for v in else_operands]
    return Branch(
        [
            (np.asarray(condition, dtype=bool), op.successors[0], then_arguments),
            (None, op.successors[1], else_arguments),
        ]
    )


def _cf_switch(execution: Execution, op: Operation, mask: Mask) -> Branch:
    assert isinstance(op, cf.SwitchOp)
    flag = np.asarray(execution.get(op.flag))
    values = [] if op.case_values is None else [int(v) for v in op.case_values.get_values()]
    segments = list(op.case_operand_segments.get_values())
    case_operands = [execution.get(v) for v in op.case_operands]
    targets = []
    start = 0
    for value, size, block in zip(values, segments, op.case_blocks):
        targets.append((flag == value, block, case_operands[start : start + size]))
        start += size
    targets.append((None, op.default_block, [execution.get(v) for v in op.default_operands]))
    return Branch(targets)


def _cf_assert(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, cf.AssertOp)
    condition = np.asarray(execution.get(op.arg), dtype=bool)
    failed = ~condition if mask is None else (mask & ~condition)
    if failed.any():
        raise InterpreterError(f"assertion failed: {op.msg.data}")
    return None


CF: dict[str, Implementation] = {"cf.assert": _cf_assert}
CF_TERMINATORS: dict[str, TerminatorImplementation] = {
    "cf.br": _branch,
    "cf.cond_br": conditional_branch,
    "cf.switch": _cf_switch,
}

# func --------------------------------------------------------------------------------------------


def _func_call(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, func.CallOp)
    callee = execution.machine.lookup(op.callee.root_reference.data, op)
    return call_function(execution, callee, execution.operands(op), mask)


FUNC: dict[str, Implementation] = {"func.call": _func_call}
FUNC_TERMINATORS: dict[str, TerminatorImplementation] = {"func.return": exit_with_operands}

# builtin.unrealized_conversion_cast --------------------------------------------------------------


def _descriptor_from_memref(value: MemRefValue) -> tuple[object, ...]:
    """MLIR's memref descriptor: (allocated, aligned, offset, sizes, strides)."""
    sizes = tuple(np.int64(s) for s in value.shape)
    strides = tuple(np.int64(s) for s in value.strides)
    return (value.base, value.base, value.offset, sizes, strides)


def cast_value(value: object, source_type: Attribute, target_type: Attribute) -> object:
    """The value of `value` seen as `target_type` across the conversion to LLVM."""
    if source_type == target_type:
        return value
    if isinstance(value, MemRefValue):
        if isinstance(target_type, llvm.LLVMPointerType):
            return np.asarray(value.start_address(), dtype=np.int64)
        if isinstance(target_type, llvm.LLVMStructType):
            return _descriptor_from_memref(value)
        if isinstance(target_type, MemRefType):
            return value.reshaped(target_type) if target_type.get_shape() != value.shape else value
    if isinstance(target_type, MemRefType):
        if isinstance(source_type, llvm.LLVMPointerType):
            return memref_from_address(np.asarray(value), target_type)
        if isinstance(source_type, llvm.LLVMStructType) and isinstance(value, tuple):
            shape = tuple(target_type.get_shape())
            strides = tuple(int(np.asarray(s).reshape(-1)[0]) for s in value[4]) if value[4] else ()
            return MemRefValue(
                np.asarray(value[1]), np.asarray(value[2]), shape, strides, target_type.element_type
            )
    if isinstance(value, tuple) or isinstance(source_type, llvm.LLVMStructType):
        raise UnsupportedOperation(f"cast from {source_type} to {target_type}")
    array = np.asarray(value)
    target_dtype = dtype_of(target_type)
    if array.dtype.kind in "iub" and target_dtype.kind in "iub":
        return scalar.cast_integer(array, target_dtype, signed=True)
    if array.dtype == target_dtype:
        return array
    raise UnsupportedOperation(f"cast from {source_type} to {target_type}")


def _unrealized_conversion_cast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    if len(op.operands) != len(op.results):
        raise UnsupportedOperation(
            "an unrealized_conversion_cast with different numbers of inputs and outputs"
        )
    return [
        cast_value(execution.get(source), source.type, target.type)
        for source, target in zip(op.operands, op.results)
    ]


def table() -> OperationTable:
    """The implementations of this module, keyed by op class."""
    operations: dict[type[Operation], Implementation] = {}
    terminators: dict[type[Operation], TerminatorImplementation] = {}
    for dialect, ops, ends in (
        (arith.Arith, ARITH, {}),
        (math.Math, MATH, {}),
        (scf.Scf, SCF, SCF_TERMINATORS),
        (cf.Cf, CF, CF_TERMINATORS),
        (func.Func, FUNC, FUNC_TERMINATORS),
    ):
        operations.update(by_name(dialect, ops))  # type: ignore[arg-type]
        terminators.update(by_name(dialect, ends))  # type: ignore[arg-type]
    operations[builtin.UnrealizedConversionCastOp] = _unrealized_conversion_cast
    return OperationTable(MappingProxyType(operations), MappingProxyType(terminators))
