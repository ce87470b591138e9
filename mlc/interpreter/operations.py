"""Building blocks shared by the op implementations of every dialect.

An implementation is a function `(execution, op, mask) -> results | None` (see `engine.py`); most
are one numpy function applied to the operands, and these wrappers build them (`unary`, `binary`,
`ternary`, `conversion`). `by_name` turns a table keyed by op name into one keyed by op class, and
fails loudly on a misspelt name. `restrict` narrows a mask by a per-lane condition, which is how
every structured control-flow op decides which lanes run a region.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Dialect, Operation

from mlc.interpreter.engine import Execution, Exit, Implementation
from mlc.interpreter.errors import InterpreterError, UnsupportedOperation
from mlc.interpreter.values import Mask, as_array, dtype_of, is_uniform


def by_name(dialect: Dialect, implementations: Mapping[str, object]) -> dict[type[Operation], object]:
    """Maps op names of `dialect` to op classes (so tables are written with the names users see)."""
    classes = {op.name: op for op in dialect.operations}
    missing = [name for name in implementations if name not in classes]
    if missing:
        raise KeyError(f"unknown ops in {dialect.name}: {missing}")
    return {classes[name]: implementation for name, implementation in implementations.items()}


def restrict(mask: Mask, condition: object) -> tuple[Mask, bool]:
    """The lanes of `mask` where `condition` holds (None when that is every lane), and whether any."""
    condition = np.asarray(condition, dtype=bool)
    combined = condition if mask is None else np.logical_and(mask, condition)
    if combined.all():
        return None, True
    return combined, bool(combined.any())


def result_dtype(op: Operation, index: int = 0) -> np.dtype:
    return dtype_of(op.results[index].type)


def static_int(value: object, what: str) -> int:
    """A value that must be the same in every lane (a size, a step), as a Python int."""
    if not is_uniform(value):
        flat = np.asarray(value).reshape(-1)
        if flat.size and (flat == flat[0]).all():
            return int(flat[0])
        raise UnsupportedOperation(f"{what} differs between lanes")
    return int(np.asarray(value))


# Generic elementwise wrappers -----------------------------------------------------------------


def unary(function: Callable[[np.ndarray], np.ndarray]) -> Implementation:
    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        (a,) = execution.operands(op)
        return [as_array(function(a), execution.machine.result_dtype(op))]

    return implementation


def binary(function: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Implementation:
    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        a, b = execution.operands(op)
        return [as_array(function(a, b), execution.machine.result_dtype(op))]

    return implementation


def integer_division(function: Callable[[np.ndarray, np.ndarray], np.ndarray], signed: bool) -> Implementation:
    """A division or remainder that is undefined, as in MLIR and LLVM, for a zero divisor and (signed)
    for INT_MIN / -1 in an active lane: real targets trap there (x86 raises SIGFPE), so the
    interpreter refuses it rather than give a value a compiled program would never produce.
    Inactive lanes may hold anything (their results are discarded)."""

    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        a, b = execution.operands(op)
        numerator, divisor = np.asarray(a), np.asarray(b)
        if numerator.dtype != np.bool_:
            undefined = divisor == 0
            if signed and np.issubdtype(numerator.dtype, np.signedinteger):
                undefined = undefined | ((numerator == np.iinfo(numerator.dtype).min) & (divisor == -1))
            result_type = op.results[0].type
            vector_rank = len(result_type.get_shape()) if isinstance(result_type, VectorType) else 0
            if vector_rank:
                undefined = np.asarray(undefined).reshape(np.shape(undefined)[: -vector_rank] + (-1,)).any(axis=-1)
            if np.any(undefined if mask is None else np.logical_and(undefined, mask)):
                kind = "a zero divisor" if np.any(divisor == 0) else "INT_MIN / -1"
                raise InterpreterError(f"'{op.name}' with {kind} is undefined (it traps on real targets)")
        return [as_array(function(a, b), execution.machine.result_dtype(op))]

    return implementation


def ternary(function: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> Implementation:
    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        a, b, c = execution.operands(op)
        return [as_array(function(a, b, c), execution.machine.result_dtype(op))]

    return implementation


def conversion(function: Callable[[np.ndarray, np.dtype], np.ndarray]) -> Implementation:
    """An op converting its one operand to the result's dtype."""

    def implementation(execution: Execution, op: Operation, mask: Mask) -> list[object]:
        (a,) = execution.operands(op)
        return [function(np.asarray(a), execution.machine.result_dtype(op))]

    return implementation


def astype(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return a.astype(dtype)


def exit_with_operands(execution: Execution, op: Operation, mask: Mask) -> Exit:
    """A terminator that leaves its region with its operands (`scf.yield`, `func.return`, ...)."""
    return Exit(execution.operands(op))


def call_function(
    execution: Execution, callee: Operation, arguments: Sequence[object], mask: Mask
) -> list[object]:
    """Runs a function body on the caller's lanes in a fresh value environment."""
    if not callee.regions or not callee.regions[0].blocks:
        name = callee.properties["sym_name"].data  # type: ignore[attr-defined]
        raise UnsupportedOperation(f"cannot call the declaration @{name}")
    return execution.child().run_region(callee.regions[0], arguments, mask)
