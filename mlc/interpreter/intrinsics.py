"""LLVM intrinsics (`llvm.call_intrinsic`), NVVM, and calls (`llvm.call`) to functions and libm.

`llvm.call_intrinsic` is looked up by the intrinsic's name without its type suffixes
(`llvm.maximum.f32` -> `llvm.maximum`, `llvm.masked.load.v4f32.p1` -> `llvm.masked.load`). NVVM's
special registers (`llvm.nvvm.read.ptx.sreg.tid.x`, ...), barriers (`llvm.nvvm.barrier0`,
`llvm.nvvm.barrier.cta.sync.aligned.all`) and shuffles (`llvm.nvvm.shfl.sync.bfly.f32`, ...) need
a running grid (`simt.GridLevel`).

`llvm.call` runs a function defined in the module, or else a math function of libm or libdevice by
name: `expf`, `__nv_expf`, `__nv_fast_expf`, `erff`, `tanhf`, `powf`, `__nv_rsqrtf`, ... (single
and double precision; transcendental functions are computed in float64 and rounded once, the
approximate `__nv_fast_*` and `.approx` variants included).

Limits: intrinsics not in `INTRINSICS` raise `UnsupportedOperation` naming them; no calls through
function pointers, no varargs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import MappingProxyType

import numpy as np
from xdsl.dialects import llvm
from xdsl.ir import Operation

from mlc.interpreter import scalar
from mlc.interpreter.async_copy import CP_ASYNC_INTRINSICS
from mlc.interpreter.engine import Execution, OperationTable
from mlc.interpreter.errors import UnsupportedOperation
from mlc.interpreter.llvm import ordered_reduce, scalar_layout, vector_addresses
from mlc.interpreter.operations import call_function, static_int
from mlc.interpreter.simt import grid_level
from mlc.interpreter.values import Mask, as_array, dtype_of
from mlc.interpreter.warp import LDMATRIX_INTRINSICS, MMA_INTRINSICS, TF32_INTRINSIC, ldmatrix_intrinsic, mma_intrinsic, tf32_intrinsic


# Library functions ------------------------------------------------------------------------------------------

LIBRARY_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    **{
        name: function
        for name, function in scalar.FLOAT_UNARY.items()
        if name not in ("neg", "roundeven", "sigmoid")
    },
    "fabs": np.abs,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "fmod": np.fmod,
    "pow": scalar.FLOAT_BINARY["pow"],
    "powi": scalar.powi,
    "atan2": scalar.FLOAT_BINARY["atan2"],
    "hypot": scalar.FLOAT_BINARY["hypot"],
    "copysign": np.copysign,
    "fma": scalar.fma,
    "fdim": scalar.in_double(lambda a, b: np.where(a > b, a - b, 0.0)),
    "saturate": lambda x: np.clip(x, 0, 1).astype(np.asarray(x).dtype),
    "fdividef": np.divide,
    "frcp_rn": lambda x: np.divide(np.ones((), dtype=np.asarray(x).dtype), x),
}


def library_function(name: str) -> Callable[..., np.ndarray] | None:
    """A libm/libdevice function by name: `expf`, `__nv_expf`, `__nv_fast_expf`, `exp` ..."""
    for prefix in ("__nv_fast_", "__nv_", "__"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    if name in LIBRARY_FUNCTIONS:
        return LIBRARY_FUNCTIONS[name]
    if name.endswith("f") and name[:-1] in LIBRARY_FUNCTIONS:
        return LIBRARY_FUNCTIONS[name[:-1]]
    return None


def _call(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, llvm.CallOp)
    if op.callee is None:
        raise UnsupportedOperation("indirect calls through function pointers")
    target = execution.machine.cached(op, lambda: _call_target(execution, op))
    arguments = execution.operands(op)
    if isinstance(target, llvm.FuncOp):
        return call_function(execution, target, arguments, mask)
    result = target(*arguments)  # type: ignore[operator]
    return [as_array(result, execution.machine.result_dtype(op))] if op.results else []


def _call_target(execution: Execution, op: llvm.CallOp) -> llvm.FuncOp | Callable[..., np.ndarray]:
    """The function a call runs: one defined in the module, else a library function."""
    assert op.callee is not None
    name = op.callee.root_reference.data
    callee = execution.machine.symbols.get(name)
    if isinstance(callee, llvm.FuncOp) and callee.body.blocks:
        return callee
    function = library_function(name)
    if function is None:
        raise UnsupportedOperation(f"call to the external function '@{name}'")
    return function


_TYPE_SUFFIX = re.compile(r"(f16|bf16|f32|f64|f80|f128|i\d+|v\d+[a-z]+\d*|p\d+[a-z0-9]*|nxv\w+)")


def intrinsic_base_name(name: str) -> str:
    """`llvm.maximum.f32` -> `llvm.maximum`; `llvm.masked.load.v4f32.p1` -> `llvm.masked.load`."""
    parts = name.split(".")
    while len(parts) > 2 and _TYPE_SUFFIX.fullmatch(parts[-1]):
        parts.pop()
    return ".".join(parts)


IntrinsicImplementation = Callable[[Execution, Operation, list[object], Mask], list[object]]


def _elementwise(function: Callable[..., np.ndarray], arity: int | None = None) -> IntrinsicImplementation:
    def implementation(
        execution: Execution, op: Operation, arguments: list[object], mask: Mask
    ) -> list[object]:
        used = arguments if arity is None else arguments[:arity]
        return [as_array(function(*used), dtype_of(op.results[0].type))]

    return implementation


def _special_register(register: str) -> IntrinsicImplementation:
    def implementation(
        execution: Execution, op: Operation, arguments: list[object], mask: Mask
    ) -> list[object]:
        value = grid_level(execution.level, op).special_register(register)
        return [as_array(value, dtype_of(op.results[0].type))]

    return implementation


def _barrier(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    grid_level(execution.level, op).barrier(mask, op)
    return []


def _no_effect(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    return []


def _shuffle(mode: str) -> IntrinsicImplementation:
    def implementation(
        execution: Execution, op: Operation, arguments: list[object], mask: Mask
    ) -> list[object]:
        _member_mask, value, offset, clamp = arguments
        result = grid_level(execution.level, op).shuffle(np.asarray(value), mode, np.asarray(offset), clamp)
        return [as_array(result, dtype_of(op.results[0].type))]

    return implementation


def _intrinsic_masked_load(
    execution: Execution, op: Operation, arguments: list[object], mask: Mask
) -> list[object]:
    address, *rest = arguments
    # Upstream's signature is (ptr, [alignment,] mask, passthru).
    vector_mask, pass_through = rest[-2], rest[-1]
    dtype, shape = scalar_layout(op.results[0].type)
    lanes = np.asarray(vector_mask, dtype=bool)
    loaded = execution.read(vector_addresses(address, dtype, shape), dtype, mask, op, len(shape), lanes)
    return [np.where(lanes, loaded, pass_through)]


def _intrinsic_masked_store(
    execution: Execution, op: Operation, arguments: list[object], mask: Mask
) -> list[object]:
    value, address, *rest = arguments
    vector_mask = rest[-1]
    dtype, shape = scalar_layout(op.operands[0].type)
    lanes = np.asarray(vector_mask, dtype=bool)
    execution.write(vector_addresses(address, dtype, shape), value, dtype, mask, op, len(shape), lanes)
    return []


def _memory_bytes(address: object, length: object) -> np.ndarray:
    count = static_int(length, "the length of a memory intrinsic")
    return np.asarray(address, dtype=np.int64)[..., None] + np.arange(count, dtype=np.int64)


def _memcpy(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    target, source, length = arguments[:3]
    byte = np.dtype(np.uint8)
    values = execution.read(_memory_bytes(source, length), byte, mask, op, 1)
    execution.write(_memory_bytes(target, length), values, byte, mask, op, 1)
    return []


def _memset(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    target, value, length = arguments[:3]
    byte = np.dtype(np.uint8)
    fill = np.asarray(value).astype(np.uint8)[..., None]
    execution.write(_memory_bytes(target, length), fill, byte, mask, op, 1)
    return []


def _reduce_intrinsic(
    function: Callable[[np.ndarray, np.ndarray], np.ndarray], with_start: bool
) -> IntrinsicImplementation:
    def implementation(
        execution: Execution, op: Operation, arguments: list[object], mask: Mask
    ) -> list[object]:
        start = arguments[0] if with_start else None
        values = np.asarray(arguments[-1])
        return [as_array(ordered_reduce(function, values, start), dtype_of(op.results[0].type))]

    return implementation


INTRINSICS: dict[str, IntrinsicImplementation] = {
    **{
        f"llvm.{name}": _elementwise(scalar.FLOAT_UNARY[name])
        for name in (
            "sqrt",
            "exp",
            "exp2",
            "exp10",
            "log",
            "log2",
            "log10",
            "sin",
            "cos",
            "tan",
            "floor",
            "ceil",
            "trunc",
            "round",
            "roundeven",
            "rint",
            "nearbyint",
            "tanh",
            "sinh",
            "cosh",
            "asin",
            "acos",
            "atan",
        )
    },
    "llvm.fabs": _elementwise(np.abs),
    "llvm.fma": _elementwise(scalar.fma),
    "llvm.fmuladd": _elementwise(scalar.fma),
    "llvm.pow": _elementwise(scalar.FLOAT_BINARY["pow"]),
    "llvm.powi": _elementwise(scalar.powi),
    "llvm.atan2": _elementwise(scalar.FLOAT_BINARY["atan2"]),
    "llvm.copysign": _elementwise(np.copysign),
    "llvm.ldexp": _elementwise(np.ldexp),
    "llvm.maxnum": _elementwise(np.fmax),
    "llvm.minnum": _elementwise(np.fmin),
    "llvm.maximum": _elementwise(scalar.maximumf),
    "llvm.minimum": _elementwise(scalar.minimumf),
    "llvm.maximumnum": _elementwise(np.fmax),
    "llvm.minimumnum": _elementwise(np.fmin),
    "llvm.smax": _elementwise(scalar.maxsi),
    "llvm.smin": _elementwise(scalar.minsi),
    "llvm.umax": _elementwise(scalar.maxui),
    "llvm.umin": _elementwise(scalar.minui),
    "llvm.abs": _elementwise(scalar.absi, arity=1),
    "llvm.ctlz": _elementwise(scalar.ctlz, arity=1),
    "llvm.cttz": _elementwise(scalar.cttz, arity=1),
    "llvm.ctpop": _elementwise(scalar.ctpop),
    "llvm.vector.reduce.fadd": _reduce_intrinsic(np.add, with_start=True),
    "llvm.vector.reduce.fmul": _reduce_intrinsic(np.multiply, with_start=True),
    "llvm.vector.reduce.fmax": _reduce_intrinsic(np.fmax, with_start=False),
    "llvm.vector.reduce.fmin": _reduce_intrinsic(np.fmin, with_start=False),
    "llvm.vector.reduce.fmaximum": _reduce_intrinsic(scalar.maximumf, with_start=False),
    "llvm.vector.reduce.fminimum": _reduce_intrinsic(scalar.minimumf, with_start=False),
    "llvm.vector.reduce.add": _reduce_intrinsic(scalar.addi, with_start=False),
    "llvm.vector.reduce.mul": _reduce_intrinsic(scalar.muli, with_start=False),
    "llvm.vector.reduce.and": _reduce_intrinsic(np.bitwise_and, with_start=False),
    "llvm.vector.reduce.or": _reduce_intrinsic(np.bitwise_or, with_start=False),
    "llvm.vector.reduce.xor": _reduce_intrinsic(np.bitwise_xor, with_start=False),
    "llvm.vector.reduce.smax": _reduce_intrinsic(scalar.maxsi, with_start=False),
    "llvm.vector.reduce.smin": _reduce_intrinsic(scalar.minsi, with_start=False),
    "llvm.vector.reduce.umax": _reduce_intrinsic(scalar.maxui, with_start=False),
    "llvm.vector.reduce.umin": _reduce_intrinsic(scalar.minui, with_start=False),
    "llvm.masked.load": _intrinsic_masked_load,
    "llvm.masked.store": _intrinsic_masked_store,
    "llvm.memcpy": _memcpy,
    "llvm.memmove": _memcpy,
    "llvm.memset": _memset,
    "llvm.assume": _no_effect,
    "llvm.lifetime.start": _no_effect,
    "llvm.lifetime.end": _no_effect,
    "llvm.prefetch": _no_effect,
    "llvm.nvvm.barrier0": _barrier,
    "llvm.nvvm.barrier.cta.sync.aligned.all": _barrier,
    "llvm.nvvm.barrier.cta.sync.all": _barrier,
    "llvm.nvvm.barrier.sync": _barrier,
    "llvm.nvvm.bar.sync": _barrier,
    "llvm.nvvm.bar.warp.sync": _no_effect,
    "llvm.nvvm.membar.cta": _no_effect,
    "llvm.nvvm.fence.sc.cta": _no_effect,
    "llvm.nvvm.read.ptx.sreg.laneid": _special_register("laneid"),
    "llvm.nvvm.read.ptx.sreg.warpsize": _special_register("warpsize"),
    **{
        f"llvm.nvvm.read.ptx.sreg.{register}.{dimension}": _special_register(f"{register}.{dimension}")
        for register in ("tid", "ntid", "ctaid", "nctaid")
        for dimension in "xyz"
    },
    **{f"llvm.nvvm.shfl.sync.{mode}": _shuffle(mode) for mode in ("up", "down", "bfly", "idx")},
    **{name: mma_intrinsic for name in MMA_INTRINSICS},
    TF32_INTRINSIC: tf32_intrinsic,
    **{name: ldmatrix_intrinsic for name in LDMATRIX_INTRINSICS},
    **CP_ASYNC_INTRINSICS,
    "llvm.nvvm.fmax.f": _elementwise(np.fmax),
    "llvm.nvvm.fmin.f": _elementwise(np.fmin),
    "llvm.nvvm.ex2.approx.f": _elementwise(scalar.FLOAT_UNARY["exp2"]),
    "llvm.nvvm.ex2.approx.ftz.f": _elementwise(scalar.FLOAT_UNARY["exp2"]),
    "llvm.nvvm.rsqrt.approx.f": _elementwise(scalar.FLOAT_UNARY["rsqrt"]),
    "llvm.nvvm.rsqrt.approx.ftz.f": _elementwise(scalar.FLOAT_UNARY["rsqrt"]),
    "llvm.nvvm.sqrt.rn.f": _elementwise(scalar.FLOAT_UNARY["sqrt"]),
    "llvm.nvvm.sqrt.approx.f": _elementwise(scalar.FLOAT_UNARY["sqrt"]),
    "llvm.nvvm.div.rn.f": _elementwise(np.divide),
    "llvm.nvvm.div.approx.f": _elementwise(np.divide),
    "llvm.nvvm.rcp.rn.f": _elementwise(LIBRARY_FUNCTIONS["frcp_rn"]),
    "llvm.nvvm.rcp.approx.ftz.f": _elementwise(LIBRARY_FUNCTIONS["frcp_rn"]),
}


def _intrinsic(name: str) -> IntrinsicImplementation:
    implementation = INTRINSICS.get(name) or INTRINSICS.get(intrinsic_base_name(name))
    if implementation is None:
        raise UnsupportedOperation(f"the interpreter does not know the intrinsic '{name}'")
    return implementation


def _call_intrinsic(execution: Execution, op: Operation, mask: Mask) -> list[object] | None:
    assert isinstance(op, llvm.CallIntrinsicOp)
    implementation = execution.machine.cached(op, lambda: _intrinsic(op.intrin.data))
    arguments = execution.operands(op)
    results = implementation(execution, op, arguments, mask)
    return results if op.results else None


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType({llvm.CallOp: _call, llvm.CallIntrinsicOp: _call_intrinsic}),
        MappingProxyType({}),
    )
