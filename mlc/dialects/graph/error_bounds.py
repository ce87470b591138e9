"""Error bounds: how far a correct compilation of a graph function may be from the interpreter.

The graph interpreter (`interpret.py`) computes each op in float64 and rounds once to the result
type. Compiled code computes in f32 (f16 and bf16 too, rounding where it stores), fuses ops,
contracts multiplies and adds, sums in any order and calls a math library a few units in the last
place (ulp) from the exact result. So "agrees with the interpreter" has to mean "within the error
that these freedoms can produce", and that error depends on the program and its data: a sum of
2048 products may be off by far more than one of 4, `exp` magnifies an error in its argument, a
`cmp` of two values closer than their errors may go either way. `result_bounds` derives that
bound by a first-order forward error analysis over the function, run alongside the interpreter:

    B(v) >= |c(v) - r(v)|  for every value v, element by element,

where r is the interpreter's value and c that of any implementation meeting `ACCURACY` below. An
op's bound is the sensitivity of its exact function to its operands' errors, evaluated over the
box r(operand) +- B(operand) (exactly for monotone functions, by a Lipschitz constant for the
others), plus its local error: the interpreter's own rounding and the implementation's, in units
of the unit roundoff u of the types involved, times the magnitude of the result (the magnitude of
the terms for composite functions such as gelu, where cancellation makes a relative bound wrong).

* Sums and dot products: an f32 accumulation of n terms in any order is within
  gamma(n) * sum|terms| of the exact sum, gamma(n) = n*u / (1 - n*u) (Higham, Accuracy and
  Stability of Numerical Algorithms, 2nd ed., section 3.1). f16/bf16 accumulate in f32 (the spec).
* A matmul of precision tf32 / 3xtf32 (`mlc/dialects/precision.py`) adds its per-term product
  error, for the interpreter's model and the implementation's.
* softmax: a perturbation d of a row multiplies each output by a factor within exp(+-2 max|d|).
  An online softmax (fused attention) rescales its partial sums: counted as a perturbation of
  the input (`online_rescale_error`); a fast-math chain kernel's exp2 with a rounded log2(e) and
  its reciprocal of the sum are counted too (`FAST_MATH_SOFTMAX_ROUNDINGS`).
* layer_norm is bounded through its definition (mean, centring, variance, rsqrt, scale, bias).
* Comparisons whose operands are closer than their errors are *uncertain* (bound 1 on the i1
  result), unless both operands are one value (x against x, like x - x, is exact); `where` on an uncertain condition may give either value; a float-to-int cast may
  truncate to a neighbouring integer. Integer arithmetic on certain values is exact.
* NaN, computed infinities and operands outside a function's domain (log of a value whose box reaches 0)
  make the element's bound infinite: such elements are not compared. An infinity that every
  implementation computes alike is exact (bound 0): a constant's (a mask's -inf), moved by layout
  ops or casts, chosen by a `where` whose condition is certain, or added to a finite value
  (`_exact_infinities`); softmax ignores exact -inf inputs (exp gives exactly 0), so masked
  attention rows are compared. Callers report how many
  elements were compared, so that a program whose bounds are all infinite is seen, not passed.

`check_results` compares a compiled function's results with the interpreter's under the bounds
and names the first element out of bound. Limits: the analysis is first order where stated (the
products of two bounds are kept only for mul, div and matmul); it is conservative, so a wrong
result that hides under a loose bound (a layer norm of nearly constant rows) is not found; conv2d
and pooling use the same rules as matmul and reductions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from mlc.dialects.element_types import is_bool, is_float
from mlc.dialects.graph import interpret
from mlc.dialects.graph import ops as graph
from mlc.dialects.precision import DEFAULT_PRECISION, PRODUCT_ERROR, PRODUCTS

U32 = 2.0**-24
"""The unit roundoff of f32, the type compiled code computes and accumulates in."""

ONLINE_SOFTMAX_MIN_BLOCK = 16
"""The fewest elements of a row a fused (online) softmax takes per block (`online_rescale_error`)."""

ACCURACY: dict[type[Operation], float] = {
    graph.ExpOp: 4.0,
    graph.LogOp: 2.0,
    graph.TanhOp: 4.0,
    graph.ErfOp: 4.0,
    graph.SinOp: 4.0,
    graph.CosOp: 4.0,
    graph.SigmoidOp: 8.0,
    graph.RsqrtOp: 4.0,
    graph.PowOp: 8.0,
    graph.GeluOp: 12.0,
}
"""Error of the implementation of each transcendental op beyond correct rounding, in units of
U32 relative to the result (gelu: to |x|). Twice the maximum ulp errors that CUDA's libdevice
documents for the f32 functions (expf 2 ulp, logf 1, tanhf 2, erff 2, rsqrtf 2, powf 4, sinf
and cosf 2 over their whole range), which
bound glibc's too; sigmoid and gelu are composed of these and a few rounded operations. The CPU
pipeline's own f32 exp and tanh (expand-math-for-cpu) state 3 u and 4 u from the exact
value (`RELATIVE_ERROR_BOUND` there), within the 1 + 4 u these entries allow; its exact GELU,
x Phi(x) fused (`GELU_ERROR_BOUND` there), states 1.6 u of |x|: tighter than the composition
0.5 x (1 + erf(x / sqrt 2)) with its 3 u erf guarantees (0.5 |x| (3 u + 2 u) for erf and 1 + erf,
plus the argument's rounding: about 3.7 u of |x|), within the 1 + 12 u allowed here. Its sin and
cos state 1.5 u from the exact value in f32 lanes (|x| <= 2^17: f32 Cody-Waite reduction by pi or
an odd multiple of pi/2 made exact to ~2^-48, one f32 sine polynomial per lane; measured 1.262 u
(sin) and 1.281 u (cos) over every f32 of that range; NARROW_ERROR_BOUND in trig_expansion.py), 1.001 u in f64 lanes
(|x| <= 2^40: reduced and evaluated in f64, rounded once; WIDE_ERROR_BOUND) and 2 u with libm's
lanes beyond (RELATIVE_ERROR_BOUND there), its pow 1.001 u for x > 0 (exp2(y log2 x) in f64 lanes, rounded once) and 2 u with libm's
lanes (negative bases, zeros, infinities, NaNs), its rsqrt 2 u (1 / sqrt in f32; vrsqrt14ps and a Newton step on
AVX-512's 16 lanes, 1.594 u by its analysis): within the
1 + 4 u (pow: 1 + 8 u) allowed. Ops not listed
(add, mul, div, sqrt, ...) are correctly rounded in f32."""


def unit_roundoff(element_type: Attribute) -> float:
    """u of a float type (half the distance from 1 to the next float); 0 for integers."""
    if isinstance(element_type, Float16Type):
        return 2.0**-11
    if isinstance(element_type, BFloat16Type):
        return 2.0**-8
    if isinstance(element_type, Float32Type):
        return U32
    if isinstance(element_type, Float64Type):
        return 2.0**-53
    return 0.0


def smallest_normal(element_type: Attribute) -> float:
    """Below this, a GPU may flush results to zero: an absolute error each op may add."""
    if isinstance(element_type, Float16Type):
        return 2.0**-14
    if isinstance(element_type, BFloat16Type | Float32Type):
        return 2.0**-126
    return 0.0


def gamma(count: np.ndarray | int) -> np.ndarray:
    """Higham's gamma(n) for an f32 sum of n terms; infinite where n*u >= 1."""
    n_u = np.asarray(count, dtype=np.float64) * U32
    return np.where(n_u < 1.0, n_u / np.maximum(1.0 - n_u, 1e-300), np.inf)


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType), f"graph values are tensors, got {value_type}"
    return value_type.element_type


def _finite(bound: np.ndarray) -> np.ndarray:
    """NaN bounds (inf * 0 in a product) become infinite: unknown, never 'exact'."""
    return np.nan_to_num(np.asarray(bound, dtype=np.float64), nan=np.inf, posinf=np.inf)


@dataclass
class _Operand:
    """An operand as the analysis sees it: the interpreter's value (float64) and its bound."""

    value: np.ndarray
    bound: np.ndarray


def _local_error(op: Operation, result: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Rounding of the interpreter plus the implementation's error, for one op's result."""
    element_type = _element_type(op.results[0])
    if not is_float(element_type):
        return np.zeros_like(result, dtype=np.float64)
    relative = 2.0 * unit_roundoff(element_type) + (1.0 + ACCURACY.get(type(op), 0.0)) * U32
    return relative * magnitude + 2.0 * smallest_normal(element_type)


def _over_box(function: Callable[..., np.ndarray], operands: Sequence[_Operand]) -> np.ndarray:
    """max |f(corner) - f(value)| over the corners of the operands' boxes (exact for monotone f)."""
    center = function(*(operand.value for operand in operands))
    spread = np.zeros(np.shape(center))
    corners = [(-1.0, 1.0)] * len(operands)
    for signs in np.array(np.meshgrid(*corners)).T.reshape(-1, len(operands)):
        corner = function(*(operand.value + sign * operand.bound for operand, sign in zip(operands, signs)))
        spread = np.maximum(spread, np.abs(corner - center))
    return _finite(spread)


def _binary(op: Operation, a: _Operand, b: _Operand, float_values: bool) -> np.ndarray:
    """The propagated error of a binary elementwise op (before its local rounding)."""
    if isinstance(op, graph.AddOp | graph.SubOp):
        return a.bound + b.bound
    if isinstance(op, graph.MaxOp | graph.MinOp):
        return np.maximum(a.bound, b.bound)
    if isinstance(op, graph.MulOp):
        return np.abs(a.value) * b.bound + np.abs(b.value) * a.bound + a.bound * b.bound
    if isinstance(op, graph.DivOp):
        margin = np.abs(b.value) - b.bound
        if not float_values:  # an uncertain integer operand: the truncated quotient is unknown
            return np.where((a.bound > 0) | (b.bound > 0), np.inf, 0.0)
        with np.errstate(all="ignore"):
            bound = (np.abs(a.value) * b.bound + np.abs(b.value) * a.bound) / (np.abs(b.value) * margin)
        return np.where(margin > 0, bound, np.inf)
    assert isinstance(op, graph.PowOp)
    base_crosses_zero = a.value - a.bound <= 0
    with np.errstate(all="ignore"):
        spread = _over_box(np.power, [a, b])
    return np.where(base_crosses_zero & ((a.bound > 0) | (b.bound > 0)), np.inf, spread)


def _unary_function(op: Operation) -> Callable[[np.ndarray], np.ndarray]:
    if isinstance(op, graph.GeluOp):
        approximate = op.approximate.data
        return lambda x: interpret._gelu(x, approximate)  # noqa: SLF001 - one definition of gelu
    return interpret._FLOAT_UNARY[type(op)]  # noqa: SLF001


_DOMAIN_LOWER_BOUND: dict[type[Operation], float] = {
    graph.LogOp: 0.0,
    graph.RsqrtOp: 0.0,
    graph.SqrtOp: 0.0,
}
"""Ops whose operand box must stay above this value for the bound to be finite."""

_GELU_LIPSCHITZ = 1.13
"""sup |gelu'(x)| = 1.1289 (at x = 2.4 for the erf form; the tanh form stays below it too)."""


def _unary(op: Operation, x: _Operand) -> tuple[np.ndarray, np.ndarray]:
    """(propagated error, magnitude for the local error) of a float unary op."""
    result = _unary_function(op)(x.value)
    if isinstance(op, graph.AbsOp | graph.ReluOp | graph.NegOp):
        return x.bound, np.abs(result)
    if isinstance(op, graph.GeluOp):
        return _GELU_LIPSCHITZ * x.bound, np.abs(x.value) + np.abs(result)
    if isinstance(op, graph.SinOp | graph.CosOp):  # Lipschitz 1; not monotone, so no corners
        return x.bound, np.abs(result)
    if isinstance(op, graph.ReciprocalOp):
        margin = np.abs(x.value) - x.bound
        with np.errstate(all="ignore"):
            bound = x.bound / (np.abs(x.value) * margin)
        return np.where(margin > 0, bound, np.inf), np.abs(result)
    with np.errstate(all="ignore"):
        spread = _over_box(_unary_function(op), [x])
    lower = _DOMAIN_LOWER_BOUND.get(type(op))
    if lower is not None:
        spread = np.where((x.value - x.bound <= lower) & (x.bound > 0), np.inf, spread)
    return spread, np.abs(result)


def _comparison_uncertain(a: _Operand, b: _Operand) -> np.ndarray:
    """1 where the operands' boxes overlap (the comparison may go either way), else 0."""
    slack = a.bound + b.bound
    return ((slack > 0) & (np.abs(a.value - b.value) <= slack)).astype(np.float64)


def _cast(op: graph.CastOp, x: _Operand, result: np.ndarray) -> np.ndarray:
    source, target = _element_type(op.operands[0]), _element_type(op.result)
    if is_bool(target):
        return ((x.bound > 0) & (np.abs(x.value) <= x.bound)).astype(np.float64)
    if is_float(source) and not is_float(target) and not is_bool(target):
        truncated = np.trunc(x.value)
        return np.maximum(np.abs(np.trunc(x.value + x.bound) - truncated), np.abs(np.trunc(x.value - x.bound) - truncated))
    return x.bound


def _reduced_axes(op: graph.ReductionOp, rank: int) -> tuple[int, ...]:
    return tuple(axis % rank for axis in op.normalized_axes()) if rank else ()


def _sum_with_error(x: _Operand, axes: tuple[int, ...], keepdims: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the sum's propagated error, its accumulation error in f32) over `axes`."""
    count = math.prod(x.value.shape[axis] for axis in axes)
    propagated = np.sum(x.bound, axis=axes, keepdims=keepdims)
    accumulation = gamma(max(count - 1, 0)) * np.sum(np.abs(x.value), axis=axes, keepdims=keepdims)
    return propagated, accumulation


def _reduction(op: graph.ReductionOp, x: _Operand, result: np.ndarray) -> np.ndarray:
    axes = _reduced_axes(op, x.value.ndim)
    keepdims = op.keeps_dims()
    if isinstance(op, graph.ReduceMaxOp | graph.ReduceMinOp):  # one of the inputs: exact ones give it exactly
        largest = np.max(x.bound, axis=axes, keepdims=keepdims, initial=0.0)
        return np.where(largest == 0, 0.0, largest + _local_error(op, result, np.abs(result)))
    propagated, accumulation = _sum_with_error(x, axes, keepdims)
    if isinstance(op, graph.ReduceMeanOp):
        count = max(math.prod(x.value.shape[axis] for axis in axes), 1)
        propagated, accumulation = propagated / count, accumulation / count + U32 * np.abs(result)
    if not is_float(_element_type(op.result)):
        return propagated  # integer sums are exact (wrapping) on both sides
    return propagated + accumulation + _local_error(op, result, np.abs(result))


FAST_MATH_SOFTMAX_ROUNDINGS = 1.0
"""The roundings a fast-math attention kernel (`attention_kernel.py`, graph-fuse's `fast-math`)
adds to a softmax, in units of the two terms above they add to. It computes e_i as
exp2(fma(x_i, L, -fl(max L))), L = log2(e) rounded to f32 (relative error <= u), with libdevice's
`exp2f` (2 ulp, as `expf`: `ACCURACY[exp]` covers it). Exactly, that is 2^((x_i - max) L (1 +
d_L) - max L d_m): the second term is the same for a whole row (and, through the alphas, which
move earlier blocks by the same rounded shifts, for every block), so it cancels in the quotient;
the first moves each exponent by at most u |x_i - max| (one more rounding of the subtraction's
kind: 2^(y L) has relative error ln 2 L |y| d = |y| d); the fma rounds once, as the subtraction
did. The quotient becomes a reciprocal of the sum and a product: one more rounding. The f16/bf16
roundings of the scores that fast math skips are inside the bound already (each op's bound counts
the interpreter's rounding, which an implementation need not repeat)."""


def online_rescale_error(count: int, spread: np.ndarray) -> np.ndarray:
    """The error of an online softmax's rescalings, as an equivalent perturbation of its input.

    A fused kernel (an attention chain) walks a row in blocks of at least `ONLINE_SOFTMAX_MIN_BLOCK`
    and multiplies its running sum and accumulator by alpha = exp(m_old - m_new) whenever the
    running max grows: at most ceil(n / block) - 1 times. The numerator and the sum of one block are
    scaled by the same computed alphas, so each alpha's error (exp's, the rounding of the
    subtraction, u |m_old - m_new|, and of the two products) acts as a perturbation of that block's
    inputs by at most (ACCURACY[exp] + 3) u + u |m_old - m_new|; the differences of the maxima
    telescope to at most the row's spread."""
    rescales = max(-(-count // ONLINE_SOFTMAX_MIN_BLOCK) - 1, 0)
    return (ACCURACY[graph.ExpOp] + 3.0) * U32 * rescales + U32 * np.abs(spread)


def _softmax(op: graph.SoftmaxOp, x: _Operand, result: np.ndarray) -> np.ndarray:
    axis = op.normalized_axis()
    count = x.value.shape[axis]
    # An exact -inf input (a mask) contributes exp(-inf) = 0 whatever the others' errors: it takes
    # no part in the row's spread or its largest perturbation.
    masked = (x.value == -np.inf) & (x.bound == 0)
    highest = np.max(np.where(masked, -np.inf, x.value), axis=axis, keepdims=True, initial=-np.inf)
    lowest = np.min(np.where(masked, np.inf, x.value), axis=axis, keepdims=True, initial=np.inf)
    spread = np.where(np.all(masked, axis=axis, keepdims=True), 0.0, highest - lowest)
    with np.errstate(all="ignore"):
        largest_error = np.max(np.where(masked, 0.0, x.bound), axis=axis, keepdims=True, initial=0.0) + online_rescale_error(count, spread)
        propagated = result * np.expm1(2.0 * largest_error)
    # Computed: e_i = exp(x_i - max) with the subtraction rounded (u |x_i - max|) and exp's own
    # error; the sum of the e_i adds gamma(n); the quotient rounds once. A fast-math chain kernel
    # adds FAST_MATH_SOFTMAX_ROUNDINGS of each (see there).
    extra = 1.0 + FAST_MATH_SOFTMAX_ROUNDINGS
    exponential_error = extra * U32 * np.abs(spread) + (1.0 + ACCURACY[graph.ExpOp]) * U32
    relative = 2.0 * exponential_error + gamma(max(count - 1, 0)) + extra * U32
    return _finite(propagated + relative * result + _local_error(op, result, result))


def _layer_norm(op: graph.LayerNormOp, operands: Sequence[_Operand], result: np.ndarray) -> np.ndarray:
    """The bound through layer norm's definition, each step with the rules above."""
    x, scale, bias = operands
    axes = tuple(range(op.normalized_axis(), x.value.ndim))
    count = max(math.prod(x.value.shape[axis] for axis in axes), 1)
    mean_value = np.sum(x.value, axis=axes, keepdims=True) / count
    propagated, accumulation = _sum_with_error(x, axes, keepdims=True)
    mean = _Operand(mean_value, (propagated + accumulation) / count + U32 * np.abs(mean_value))
    centred_value = x.value - mean_value
    centred = _Operand(centred_value, x.bound + mean.bound + U32 * np.abs(centred_value))
    if count == 1:  # the mean of one element is that element: centring gives exactly 0
        centred.bound = np.zeros_like(centred_value)
    squares_value = centred_value * centred_value
    squares = _Operand(squares_value, 2.0 * np.abs(centred_value) * centred.bound + centred.bound**2 + U32 * squares_value)
    variance_value = np.sum(squares_value, axis=axes, keepdims=True) / count
    propagated, accumulation = _sum_with_error(squares, axes, keepdims=True)
    variance_bound = (propagated + accumulation) / count + U32 * variance_value
    epsilon = float(np.float32(op.epsilon.value.data))
    shifted = _Operand(variance_value + epsilon, variance_bound + U32 * (variance_value + epsilon))
    with np.errstate(all="ignore"):
        inverse = _Operand(1.0 / np.sqrt(shifted.value), _over_box(lambda v: 1.0 / np.sqrt(v), [shifted]))
    inverse.bound = np.where(shifted.value - shifted.bound <= 0, np.inf, inverse.bound + ACCURACY[graph.RsqrtOp] * U32 * inverse.value)
    normalised_value = centred_value * inverse.value
    normalised_bound = (
        np.abs(centred_value) * inverse.bound + inverse.value * centred.bound + centred.bound * inverse.bound
        + U32 * np.abs(normalised_value)
    )
    scaled_value = normalised_value * scale.value
    scaled_bound = (
        np.abs(normalised_value) * scale.bound + np.abs(scale.value) * normalised_bound
        + normalised_bound * scale.bound + U32 * np.abs(scaled_value)
    )
    magnitude = np.abs(scaled_value) + np.abs(bias.value)
    return _finite(scaled_bound + bias.bound + _local_error(op, result, magnitude))


def _contraction_in_float64(op: Operation, operands: Sequence[np.ndarray]) -> np.ndarray:
    """A matmul or conv2d of float64 `operands` (the interpreter's definition, unrounded; a
    matmul's exact product whatever its precision, whose error `_contraction` adds)."""
    if isinstance(op, graph.MatmulOp):
        return np.matmul(*operands)
    structured = interpret._STRUCTURED[type(op)]  # noqa: SLF001 - one definition of each op
    return structured(op, list(operands), np.dtype(np.float64))


def _contraction(op: Operation, operands: Sequence[_Operand], result: np.ndarray) -> np.ndarray:
    """matmul / conv2d: |A| dB + dA |B| + dA dB + gamma(K) |A||B|, then the local rounding.

    A matmul of precision tf32 or 3xtf32 adds, per term, its product error (`PRODUCT_ERROR`)
    twice: once for the interpreter's model, once for the implementation's, which may round to
    TF32 otherwise; 3xtf32 accumulates three products per term (gamma(3K))."""
    a, b = operands[0], operands[1]
    contract = lambda p, q: _contraction_in_float64(op, [p, q])  # noqa: E731
    magnitude = contract(np.abs(a.value), np.abs(b.value))
    propagated = contract(np.abs(a.value), b.bound) + contract(a.bound, np.abs(b.value)) + contract(a.bound, b.bound)
    terms = a.value.shape[-1] if isinstance(op, graph.MatmulOp) else math.prod(b.value.shape[1:])
    if not is_float(_element_type(op.results[0])):
        return _finite(propagated)
    precision = op.precision.data if isinstance(op, graph.MatmulOp) else DEFAULT_PRECISION
    products = PRODUCTS[precision] * terms
    bound = propagated + (gamma(products) + 2.0 * PRODUCT_ERROR[precision]) * magnitude
    if len(operands) == 3:  # conv2d's bias
        bound = bound + operands[2].bound[:, None, None] + U32 * (magnitude + np.abs(operands[2].value)[:, None, None])
    return _finite(bound + _local_error(op, result, np.abs(result)))


def _pool(op: graph.Pool2dOp, x: _Operand, result: np.ndarray) -> np.ndarray:
    pooled_bound = interpret._pool2d(op, [x.bound], np.dtype(np.float64))  # noqa: SLF001
    if isinstance(op, graph.MaxPool2dOp):
        return pooled_bound + _local_error(op, result, np.abs(result))
    window = math.prod(op.kernel.get_values())
    pooled_magnitude = interpret._pool2d(op, [np.abs(x.value)], np.dtype(np.float64))  # noqa: SLF001
    return pooled_bound + (gamma(window) + U32) * pooled_magnitude + _local_error(op, result, np.abs(result))


LAYOUT_OPS = (graph.BroadcastOp, graph.ReshapeOp, graph.TransposeOp, graph.SliceOp, graph.ConcatOp)


def _layout(op: Operation, operands: Sequence[_Operand]) -> np.ndarray:
    """Ops that only move elements move their bounds the same way."""
    if isinstance(op, graph.BroadcastOp):
        return np.broadcast_to(operands[0].bound, op.result.type.get_shape()).copy()  # type: ignore[attr-defined]
    if isinstance(op, graph.ReshapeOp):
        return np.reshape(operands[0].bound, op.result.type.get_shape()).copy()  # type: ignore[attr-defined]
    structured = interpret._STRUCTURED[type(op)]  # noqa: SLF001 - transpose, slice, concat
    return structured(op, [operand.bound for operand in operands], np.dtype(np.float64))


def op_bound(op: Operation, operands: Sequence[_Operand], result: np.ndarray) -> np.ndarray:
    """The bound on one single-result graph op's result, given its operands' values and bounds."""
    result64 = np.asarray(result, dtype=np.float64)
    if isinstance(op, graph.ConstantOp):
        return np.zeros(result.shape)
    if isinstance(op, LAYOUT_OPS):
        return _layout(op, operands)
    if isinstance(op, graph.CmpOp):
        if op.operands[0] is op.operands[1]:  # x against itself: both sides see the same value
            return np.zeros(result.shape)
        return np.broadcast_to(_comparison_uncertain(*operands), result.shape).copy()
    if isinstance(op, graph.WhereOp):
        condition, a, b = operands
        uncertain = condition.bound > 0
        chosen = np.where(condition.value != 0, a.bound, b.bound)
        either = np.abs(a.value - b.value) + np.maximum(a.bound, b.bound)
        return np.broadcast_to(np.where(uncertain, either, chosen), result.shape).copy()
    if isinstance(op, graph.CastOp):
        if is_bool(_element_type(op.operands[0])):  # 0 and 1 are exact in every type
            return np.broadcast_to(operands[0].bound, result.shape).copy()
        return _cast(op, operands[0], result64) + _local_error(op, result64, np.abs(result64))
    if isinstance(op, graph.SubOp) and op.operands[0] is op.operands[1]:
        return np.zeros(result.shape)  # x - x is exactly 0 whatever x's error
    if isinstance(op, graph.BINARY_OPS):
        float_values = is_float(_element_type(op.operands[0]))
        propagated = _binary(op, *operands, float_values)
        return _finite(np.broadcast_to(propagated, result.shape) + _local_error(op, result64, np.abs(result64)))
    if isinstance(op, graph.UNARY_OPS):
        if not is_float(_element_type(op.operands[0])):
            return operands[0].bound  # neg, abs, relu of integers: 1-Lipschitz and exact
        propagated, magnitude = _unary(op, operands[0])
        return _finite(propagated + _local_error(op, result64, magnitude))
    if isinstance(op, graph.REDUCTION_OPS):
        return _finite(_reduction(op, operands[0], result64))
    if isinstance(op, graph.SoftmaxOp):
        return _softmax(op, operands[0], result64)
    if isinstance(op, graph.LayerNormOp):
        return _layer_norm(op, operands, result64)
    if isinstance(op, graph.CONTRACTION_OPS):
        return _contraction(op, operands, result64)
    if isinstance(op, graph.POOLING_OPS):
        return _finite(_pool(op, operands[0], result64))
    raise NotImplementedError(f"no error bound for '{op.name}'")


def _unknown_where_not_finite(value: np.ndarray, bound: np.ndarray, exact: np.ndarray | bool = False) -> np.ndarray:
    """Infinite bounds where the interpreter's value is NaN or infinite (not compared), but where
    it is an `exact` infinity (`_exact_infinities`)."""
    if not np.issubdtype(value.dtype, np.inexact) and value.dtype.kind != "V":
        return bound
    finite = np.isfinite(np.asarray(value, dtype=np.float64))
    return np.where(exact, 0.0, np.where(finite, bound, np.inf))


def _exact_infinities(op: Operation, operands: Sequence[_Operand], result: np.ndarray) -> np.ndarray | bool:
    """Where `op`'s infinite result is the same in every implementation: an exact infinity (bound 0,
    a mask's -inf) moved by a layout op or a cast, chosen by a certain `where`, or added to (or
    subtracted from) a finite value: inf + x = inf for every finite x."""
    if not np.issubdtype(np.asarray(result).dtype, np.inexact):
        return False
    infinite = np.isinf(np.asarray(result, dtype=np.float64))
    exact = [(np.isinf(o.value) & (o.bound == 0)) for o in operands]
    if isinstance(op, graph.CastOp):
        return infinite & exact[0]
    if isinstance(op, LAYOUT_OPS):  # the exact elements move as the bounds do
        moved = _layout(op, [_Operand(o.value, np.where(e, 0.0, 1.0)) for o, e in zip(operands, exact)])
        return infinite & (moved == 0)
    if isinstance(op, graph.WhereOp):
        condition, a, b = operands
        chosen = np.where(condition.value != 0, exact[1], exact[2])
        return infinite & (condition.bound == 0) & np.broadcast_to(chosen, result.shape)
    if isinstance(op, graph.AddOp | graph.SubOp):
        finite = [np.isfinite(o.value) & np.isfinite(o.bound) for o in operands]
        inherited = (exact[0] & finite[1]) | (exact[1] & finite[0])
        return infinite & np.broadcast_to(inherited, result.shape)
    return False


def _evaluate_block(
    ops: Sequence[Operation], values: dict[SSAValue, np.ndarray], bounds: dict[SSAValue, np.ndarray]
) -> list[SSAValue]:
    """Evaluates ops in order, filling `values` and `bounds`; returns what the terminator returns."""
    for op in ops:
        if isinstance(op, func.ReturnOp | graph.YieldOp):
            return list(op.operands)
        if isinstance(op, graph.FusionOp):
            body = op.body.block
            for argument, operand in zip(body.args, op.operands):
                values[argument], bounds[argument] = values[operand], bounds[operand]
            yielded = _evaluate_block(list(body.ops), values, bounds)
            for result, inner in zip(op.results, yielded):
                values[result], bounds[result] = values[inner], bounds[inner]
            continue
        operand_values = [values[operand] for operand in op.operands]
        result = interpret.evaluate(op, operand_values)
        operands = [_Operand(np.asarray(values[v], dtype=np.float64), bounds[v]) for v in op.operands]
        values[op.results[0]] = result
        with np.errstate(all="ignore"):
            bound = op_bound(op, operands, result)
            # A constant is exact, its infinities included (masks compare with -inf); only computed
            # infinities and NaNs are undetermined.
            exact = _exact_infinities(op, operands, result)
            bounds[op.results[0]] = bound if isinstance(op, graph.ConstantOp) else _unknown_where_not_finite(result, bound, exact)
    raise ValueError("a block without a terminator")


def result_bounds(function: func.FuncOp, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The interpreter's results of graph function `function` on `inputs`, and their bounds.

    Inputs are exact (bound 0). Each bound has its result's shape, in float64; infinite where the
    result is not determined closely enough to compare (see the module docstring).
    """
    block = function.body.block
    values: dict[SSAValue, np.ndarray] = {}
    bounds: dict[SSAValue, np.ndarray] = {}
    for argument, array in zip(block.args, inputs):
        values[argument] = np.asarray(array)
        bounds[argument] = np.zeros(np.shape(array))
    returned = _evaluate_block(list(block.ops), values, bounds)
    return [values[v] for v in returned], [bounds[v] for v in returned]


@dataclass
class Comparison:
    """The outcome of `check_results`: how many elements were compared, and the first failure."""

    compared: int
    skipped: int
    failure: str | None = None


def check_results(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray], bounds: Sequence[np.ndarray]) -> Comparison:
    """Compares results element by element: |actual - expected| <= bound (NaN only where allowed)."""
    compared = skipped = 0
    for index, (got, want, bound) in enumerate(zip(actual, expected, bounds)):
        got, want = np.asarray(got), np.asarray(want)
        if got.shape != want.shape or got.dtype != want.dtype:
            return Comparison(compared, skipped, f"result #{index}: got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
        known = np.isfinite(bound)
        skipped += int(np.size(bound) - np.count_nonzero(known))
        compared += int(np.count_nonzero(known))
        got64, want64 = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(all="ignore"):
            error = np.where(got64 == want64, 0.0, np.abs(got64 - want64))  # an exact infinity: equal
        bad = known & ~(error <= bound)
        if np.any(bad):
            position = tuple(int(i) for i in np.argwhere(bad)[0])
            return Comparison(
                compared,
                skipped,
                f"result #{index} at {list(position)}: got {got64[position]!r}, expected {want64[position]!r} "
                f"within {bound[position]:.3g} (error {error[position]:.3g}; {int(np.count_nonzero(bad))} elements out of bound)",
            )
    return Comparison(compared, skipped)
