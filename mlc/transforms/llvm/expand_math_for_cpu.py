"""expand-math-for-cpu: f32 `math.exp`, `log`, `tanh`, `erf`, `sin`, `cos`, `powf`, `rsqrt` and the exact GELU become vector arithmetic.

On the CPU a libm call per element keeps every loop that contains one scalar: LLVM cannot
vectorize across an opaque call. Written as `arith`/`math` arithmetic without branches (fma,
roundeven, integer bit operations and selects), the same functions vectorize with the loop
around them (LLVM's SLP and loop vectorizers, at the host's vector width), and cost a few
instructions per element instead of a call.

Each (function, type) pair is expanded once per module, as an internal `llvm.func`
(`@mlc.exp.f32`, `@mlc.exp.v4f32`, `@mlc.tanh.v16f32`), and every op becomes an `llvm.call` of it:
LLVM's inliner puts the body back at each call before vectorizing, while the passes after this one
see a few ops per call instead of ~30 per exp (unrolled loops hold many: expanding each in place
doubled the compile time of softmax over long rows).

The exact GELU: graph.gelu {approximate = "none"} reaches this pass as its definition,
`mulf(mulf(0.5, x), addf(1, erf(mulf(x, sqrt(1/2)))))` (operands of each op in either order,
constants as scalar or splat `arith.constant`s, possibly `vector.broadcast` of one), built by
the elementwise expansion for every target. Where the erf's only use is that addf and the addf's
only use that mulf, the chain becomes one call of `@mlc.gelu_erf.<type>(x)`, x Phi(x) computed
directly as max(x, -0) - |x| Q(|x|) (no erf: one exp-like tail instead of two forms, an exp and
a division; the tails saturate by themselves; 19 vector ops per 16 elements with AVX-512), and
the ops it replaces are erased where nothing else uses them.

The algorithms, their coefficients and their stated accuracy are those of `MathEmitter`
(mlc/transforms/lowering/math_expansion.py): relative error at most `RELATIVE_ERROR_BOUND`
units of 2^-24 (exp 3, log 2, tanh 4, erf 3), within error_bounds.ACCURACY; the exact GELU at
most `GELU_ERROR_BOUND` (1.6, from a running error analysis) units of 2^-24 times |x|, within
error_bounds.ACCURACY's gelu entry (relative to |x| as well) and below what the composition with
the 3 u erf guarantees (about 3.7). Checked by
test/python/transforms/llvm/test_expand_math_for_cpu.py against float64 over the whole f32
range and the special values.

sin and cos (trig_expansion.py's `narrow_trig`): for |x| <= NARROW_TRIG_LIMIT = 2^17, in f32
lanes, one polynomial per lane (as SLEEF's and Cephes' sinf / cosf): a = |x| is reduced by pi
(sin) or by an odd multiple of pi/2 (cos) (Cody-Waite with a three-part f32 constant and fmas, the
first step exact or its rounding recovered by Fast2Sum, the second made exact by a Fast2Sum, so
r = high + low to about 2^-48, |r| < 1.5825), one fitted degree-9 sine of high + low with its
large correction term's roundings compensated, and the quotient's bit 0 (with x's sign for sin)
flips the sign: within `NARROW_ERROR_BOUND` (1.5) u of the exact value (measured: at most
1.262 u (sin) and 1.281 u (cos) over every f32 of [-2^17, 2^17]; the final rounding alone
gives up to 1 u in this measure, for results just above a power of two). 28 vector
instructions per 16 lanes for sin and 32 for cos with AVX-512 (the form with both series
evaluated in every lane and the quadrant picking one: 45 and 44; from the load to the range
branch, register copies left out). Chunks with some lane of |x| beyond 2^17 (or +-inf, NaN) take
a second block (`trig`) for those lanes: x reduced by pi/2 in f64 lanes (Cody-Waite, pi/2 in
three f64 parts, each product exact in an fma; the remainder's relative error is 2^-52 for every
f32 up to TRIG_REDUCTION_LIMIT = 2^40), both Taylor series evaluated in f64 and rounded once to
f32: within `WIDE_ERROR_BOUND` (1.001) u (measured: at most 1.000 u over every f32 of [2^-4, 8] and
every 11th of [8, 2^40]). Lanes of finite |x| beyond 2^40, where the f64 quotient no longer gives
the nearest multiple, take libm's: a third block, reached only when some lane of the chunk needs
it, computes `math.sin` / `math.cos` of the whole operand (convert-math-to-llvm calls sinf / cosf
per lane) and takes it for those lanes, so every lane's value depends on its own x only.
`RELATIVE_ERROR_BOUND`'s 2 u for sin and cos covers all three (glibc documents 1 ulp).
(The f64 lanes alone, the earlier form, ran at 0.41-0.57x PyTorch's SLEEF f32 vectors on the
16-vCPU Intel host: an f64 vector holds half the lanes.)
NaN and +-inf give NaN, sin(-0) = -0, cos(+-0) = 1. These (and pow's) are the only branches.

pow (pow_expansion.py's `power`): exp2(y log2 x) in f64 lanes, rounded once to f32: within
`WIDE_ERROR_BOUND` (1.001) u of the exact x^y where x > 0 and both are finite (measured at most
0.996 u over the 298 k pairs of the compiled test with a normal f32 result: bases spread over all
positive f32 and dense in (0, 4], exponents of [-90, 90], integers and halves among them). Lanes with x <= 0 (negative bases,
zeros of either sign), an infinity or a NaN take libm's powf through the same second block as sin
and cos: C's special values (pow(x, 0) = 1, pow(1, y) = 1, signs of zeros and odd integer powers of
negative bases) stay libm's, and `RELATIVE_ERROR_BOUND`'s 2 u for pow covers glibc's 1 ulp there.

rsqrt: on 16-lane vectors with AVX-512 (`scaling=scalef`), vrsqrt14ps (within 2^-14) and one
Newton step in f32 fmas (`MathEmitter.rsqrt`): within 1.594 u by its error analysis, the stated
2 u (`RELATIVE_ERROR_BOUND`); measured 1.2541 u over every finite positive f32
(bench/rsqrt_accuracy.py); +-0, +inf, negatives and NaN keep vrsqrt14ps's exact special values.
Scalars, other widths and the other scalings: 1 / sqrt(x) in f32, two correctly rounded
operations: within 2 u of the exact value (the two relative errors u / (1 + u) each compose to
at most 2u); measured 1.5000 u over every finite positive f32. (convert-math-to-llvm's libm lowering, which the CPU pipeline no longer reaches for f32,
computes it in f64 for a single rounding: a vector of f64 lanes costs twice the f32 one.)

Preconditions: none beyond valid IR; ops on other element types (f16, bf16, f64) are untouched.
Limits: only exp, log, tanh, erf, sin, cos, pow, rsqrt and the exact GELU pattern (tan and the
rest still call libm; pow of negative bases calls it per lane); a GELU whose erf or sum has another use keeps the composition; the CPU
pipeline runs this pass, the GPU's keeps libdevice.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from llvmlite import binding
from xdsl.context import Context
from xdsl.dialects import arith, llvm, math, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, FloatAttr, IntegerAttr, ModuleOp, VectorType, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from mlc.transforms.lowering.math_expansion import GELU_ERROR_BOUND, RELATIVE_ERROR_BOUND, SCALINGS, MathEmitter
from mlc.transforms.lowering.pow_expansion import power
from mlc.transforms.lowering.trig_expansion import NARROW_ERROR_BOUND, NARROW_TRIG_LIMIT, TRIG_REDUCTION_LIMIT, WIDE_ERROR_BOUND, narrow_trig, trig

__all__ = [
    "GELU_ERROR_BOUND", "NARROW_ERROR_BOUND", "NARROW_TRIG_LIMIT", "RELATIVE_ERROR_BOUND", "TRIG_REDUCTION_LIMIT", "WIDE_ERROR_BOUND", "ExpandMathForCpu", "host_has_avx512",
    "host_scaling",
]

EXPANDED = (math.ExpOp, math.LogOp, math.TanhOp, math.ErfOp, math.SinOp, math.CosOp, math.RsqrtOp, math.PowFOp)
"""The math ops this pass expands (on f32 scalars and vectors)."""
FALLBACKS: dict[str, type[Operation]] = {"sin": math.SinOp, "cos": math.CosOp, "powf": math.PowFOp}
"""The expansions whose lanes outside their range (sin, cos: beyond the reduction's; pow: the
special values) take the libm op."""
SQRT_HALF = 0.7071067811865476
"""sqrt(1/2): the elementwise expansion's scaling of the GELU's erf argument (compared in f32)."""


def host_has_avx512() -> bool:
    """AVX-512's foundation and its DQ extension (vscalefps; vrangeps and vreduceps of the exact
    GELU): every AVX-512 Xeon and Core since Skylake-SP has both."""
    try:
        features = binding.get_host_cpu_features()
    except RuntimeError:  # LLVM cannot tell
        return False
    return bool(features.get("avx512f")) and bool(features.get("avx512dq"))


def host_scaling() -> str:
    """`scalef` where the host has AVX-512 (one `vscalefps`), else `multiply`."""
    return "scalef" if host_has_avx512() else "multiply"


def _is_f32(value_type: Attribute) -> bool:
    element = value_type.element_type if isinstance(value_type, VectorType) else value_type
    return isinstance(element, Float32Type)


def _expandable(op: Operation) -> bool:
    """An f32 op of EXPANDED, scalar or vector."""
    return isinstance(op, EXPANDED) and _is_f32(op.result.type)


def _splat_value(value: SSAValue) -> float | None:
    """The float every element of `value` holds, when it is a constant (scalar, splat, or a
    vector.broadcast of a scalar constant); else None."""
    owner = value.owner
    if isinstance(owner, vector.BroadcastOp):
        return _splat_value(owner.source)
    if not isinstance(owner, arith.ConstantOp):
        return None
    attribute = owner.value
    if isinstance(attribute, FloatAttr):
        return float(attribute.value.data)
    if isinstance(attribute, DenseIntOrFPElementsAttr):
        values = attribute.get_values()
        if values and all(element == values[0] for element in values):
            return float(values[0])
    return None


def _as_f32(value: float | None) -> float | None:
    return None if value is None else struct.unpack("<f", struct.pack("<f", value))[0]


def _other_operand(op: Operation, constant: float) -> SSAValue | None:
    """The operand of a binary op beside a splat `constant` (equal once rounded to f32), if one
    operand is that constant."""
    lhs, rhs = op.operands
    if _as_f32(_splat_value(rhs)) == _as_f32(constant):
        return lhs
    if _as_f32(_splat_value(lhs)) == _as_f32(constant):
        return rhs
    return None


def _only_use(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


@dataclass(frozen=True)
class _GeluChain:
    """The ops of one exact GELU, `product = half * addf(1, erf(scaled))`, of the input `x`."""

    x: SSAValue
    scaled: Operation
    erf: Operation
    sum: Operation
    half: Operation
    product: Operation


def _gelu_chain(erf: math.ErfOp) -> _GeluChain | None:
    """The exact GELU this f32 erf belongs to (see the module docstring), or None."""
    scaled = erf.operand.owner
    if not isinstance(scaled, arith.MulfOp):
        return None
    x = _other_operand(scaled, SQRT_HALF)
    total = _only_use(erf.result)
    if x is None or not isinstance(total, arith.AddfOp) or _other_operand(total, 1.0) is not erf.result:
        return None
    product = _only_use(total.result)
    if not isinstance(product, arith.MulfOp):
        return None
    half = product.lhs.owner if product.rhs is total.result else product.rhs.owner
    if not isinstance(half, arith.MulfOp) or half is total or _other_operand(half, 0.5) is not x:
        return None
    return _GeluChain(x, scaled, erf, total, half, product)


def _function_name(function: str, value_type: Attribute) -> str:
    lanes = f"v{value_type.get_shape()[0]}" if isinstance(value_type, VectorType) else ""
    return f"mlc.{function}.{lanes}f32"


def _expansion_function(function: str, value_type: Attribute, scaling: str) -> llvm.FuncOp:
    """`name(x) = function(x)` as arithmetic, with internal linkage so that LLVM inlines and
    then vectorizes it at every call."""
    operands = [value_type] * (2 if function == "powf" else 1)
    body = Block(arg_types=operands)
    emitter = MathEmitter(body, value_type, scaling)
    expansions = {
        "exp": emitter.exp, "log": emitter.log, "tanh": emitter.tanh, "erf": emitter.erf, "gelu_erf": emitter.gelu_erf,
        "rsqrt": emitter.rsqrt,
    }
    blocks = _with_library_fallback(emitter, function) if function in FALLBACKS else [body]
    if function not in FALLBACKS:
        body.add_op(llvm.ReturnOp(expansions[function](body.args[0])))
    return llvm.FuncOp(
        _function_name(function, value_type),
        llvm.LLVMFunctionType(operands, value_type),
        linkage=llvm.LinkageAttr("internal"),
        body=Region(blocks),
    )


def _with_library_fallback(emitter: MathEmitter, function: str) -> list[Block]:
    """sin, cos or pow: the vector form; where some lane is outside its range, further blocks
    compute those lanes otherwise. sin, cos: f32 lanes (`narrow_trig`); where some lane has
    finite |x| beyond NARROW_TRIG_LIMIT, a block of f64 lanes (`trig`) for every lane, and where
    some has finite |x| beyond TRIG_REDUCTION_LIMIT, one more of libm's (math.sin / math.cos,
    which convert-math-to-llvm calls per lane). pow: f64 lanes, and libm's (math.powf) where
    some lane has x <= 0, an infinity or a NaN. Each block takes its value for its lanes only."""
    entry = emitter.block
    arguments = list(entry.args)
    done = Block(arg_types=[emitter.float_type])
    done.add_op(llvm.ReturnOp(done.args[0]))
    blocks = [entry]
    if function == "powf":
        value, beyond = power(emitter, *arguments)
    else:
        cosine = function == "cos"
        value, beyond = narrow_trig(emitter, arguments[0], cosine)
        wide = Block()
        _branch_if_any(emitter, beyond, wide, done, value)
        emitter.block = wide
        blocks.append(wide)
        wide_value, wide_beyond = trig(emitter, arguments[0], cosine)
        value, beyond = emitter.pick(beyond, wide_value, value), wide_beyond
    fallback = Block()
    _branch_if_any(emitter, beyond, fallback, done, value)
    emitter.block = fallback
    library = emitter.emit(FALLBACKS[function](*arguments))
    fallback.add_op(llvm.BrOp(done, emitter.pick(beyond, library, value)))
    return [*blocks, fallback, done]


def _branch_if_any(emitter: MathEmitter, mask: SSAValue, taken: Block, done: Block, value: SSAValue) -> None:
    """End the emitter's block: to `taken` where some lane of the i32 `mask` is set, else to
    `done` with `value`."""
    any_set = mask
    if isinstance(emitter.float_type, VectorType):
        name = f"llvm.vector.reduce.or.v{emitter.float_type.get_shape()[0]}i32"
        any_set = emitter.emit(llvm.CallIntrinsicOp(name, [mask], [i32]))
    zero = emitter.emit(arith.ConstantOp(IntegerAttr(0, i32), i32))
    flag = emitter.emit(llvm.ICmpOp(any_set, zero, IntegerAttr(llvm.ICmpPredicateFlag.NE.to_int(), i64)))
    emitter.block.add_op(llvm.CondBrOp(flag, taken, [], done, [value]))


def _erase_if_unused(rewriter: Rewriter, *ops: Operation) -> None:
    for op in ops:  # in order: each op's users come before it
        if op.parent is not None and all(not result.uses for result in op.results):
            rewriter.erase_op(op)


@dataclass(frozen=True)
class ExpandMathForCpu(ModulePass):
    """Rewrite f32 math.exp, math.log, math.tanh, math.erf, math.sin, math.cos, math.powf,
    math.rsqrt and the exact GELU's chain as calls of one arithmetic function each (branch-free
    but for the libm block of sin, cos and pow), which LLVM inlines and vectorizes."""

    name = "expand-math-for-cpu"

    scaling: str = ""
    """How exp scales by 2^n: `scalef` (AVX-512's vscalefps of the f32 n, on 16-lane vectors;
    llvm.ldexp on other types), `ldexp` (one llvm.ldexp of an i32 n) or `multiply` (two
    multiplications by powers of two); by default the host's choice (`host_scaling`)."""

    def __post_init__(self) -> None:
        if self.scaling not in ("", *SCALINGS):
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {self.scaling}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        scaling = self.scaling or host_scaling()
        if scaling == "scalef" and not host_has_avx512():
            scaling = "ldexp"  # LLVM cannot select the x86 intrinsic (it would abort): the same value
        functions: dict[str, llvm.FuncOp] = {}
        rewriter = Rewriter()

        def call(function: str, replaced: Operation, *arguments: SSAValue) -> None:
            value_type = replaced.results[0].type
            name = _function_name(function, value_type)
            if name not in functions:
                functions[name] = _expansion_function(function, value_type, scaling)
            rewriter.replace_op(replaced, llvm.CallOp(name, *arguments, return_type=value_type))

        for math_op in [inner for inner in op.walk() if _expandable(inner)]:
            if math_op.parent is None:  # erased with a GELU chain
                continue
            chain = _gelu_chain(math_op) if isinstance(math_op, math.ErfOp) else None
            if chain is None:
                call(math_op.name.removeprefix("math."), math_op, *math_op.operands)
                continue
            call("gelu_erf", chain.product, chain.x)
            _erase_if_unused(rewriter, chain.sum, chain.erf, chain.scaled, chain.half)
        module_block, first = op.body.block, op.body.block.first_op
        for function in functions.values():  # ahead of the code, in the order of first use
            if first is None:
                module_block.add_op(function)
            else:
                module_block.insert_op_before(function, first)
