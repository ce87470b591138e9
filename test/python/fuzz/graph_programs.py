"""Random well-typed graph programs over every op of the graph dialect, for differential testing.

`graph_programs()` is a Hypothesis strategy of `FuzzProgram`s: the text of a module with one
function `@main`, and for each argument the range its random inputs are drawn from. A program
starts from one to three arguments and applies a random sequence of steps, each picking its
operands from the values made so far (so values are reused, and programs are DAGs, not chains):

* elementwise ops of every kind, on operands that broadcast (shapes with 1s, dropped leading
  dimensions), comparisons into i1 values and `where` on them, i1 arguments, casts between every
  element type, splat and dense constants;
* layout ops: broadcast, reshape, transpose, slice (negative and out-of-range bounds, negative
  steps), concat;
* reductions over random axes with and without keepdims, softmax and layer norm on random axes;
* matmuls (batched, broadcast batch dimensions, chains through earlier results), conv2d and
  pools on NCHW values;
* f32, f16, bf16 and i32 programs (mixed through casts);
* mostly small shapes (one program per kernel), one in six with one long dimension (grids of many
  programs, rows longer than a program holds).

Values are kept in safe ranges so that the comparison means something: each value carries a
conservative interval of what it can hold (inputs are drawn from known ranges), and ops whose
result would leave the safe magnitude, or whose operand can reach outside the op's domain, get a
guard first (`tanh` to squash, `abs(x) + c` before `log`/`sqrt`/`rsqrt`/a divisor, a positive
base for `pow`). Shapes stay small (at most a few thousand elements) so the interpreter is quick.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, bf16, f16, f32, i1, i32
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.printer import Printer

from mlc.frontend.graph_builder import GraphBuilder, element_type_of, shape_of

FLOAT_TYPES: dict[str, Attribute] = {"f32": f32, "f16": f16, "bf16": bf16}
ELEMENT_TYPES: dict[str, Attribute] = {**FLOAT_TYPES, "i32": i32}
SAFE_MAGNITUDE = {"f32": 1e4, "f16": 1e3, "bf16": 1e3, "i32": 1e6}
"""Values beyond this magnitude are squashed (floats) or not multiplied further (integers)."""
DIMENSIONS = (1, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33)
MAX_ELEMENTS = 4096
LARGE_DIMENSIONS = (100, 257, 1000, 2049, 4097, 70001)
"""One dimension of a *large* program: several programs per kernel, rows reduced in chunks."""
LARGE_MAX_ELEMENTS = 160_000

FLOAT_BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
INTEGER_BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
FLOAT_UNARY = ("neg", "abs", "relu", "exp", "tanh", "sigmoid", "sqrt", "rsqrt", "log", "erf", "sin", "cos", "reciprocal", "gelu")
INTEGER_UNARY = ("neg", "abs", "relu")
PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCTIONS = ("sum", "max", "min", "mean")
STEP_KINDS = (
    "binary", "binary", "binary", "unary", "unary", "compare_where", "cast", "constant",
    "broadcast", "reshape", "transpose", "slice", "concat",
    "reduce", "reduce", "softmax", "layer_norm", "matmul", "matmul", "conv2d", "pool",
)


@dataclass
class Interval:
    """A conservative range of a value's elements."""

    low: float
    high: float

    @property
    def magnitude(self) -> float:
        return max(abs(self.low), abs(self.high))


@dataclass
class ArgumentSpec:
    """How the inputs of one argument are drawn."""

    shape: tuple[int, ...]
    dtype: str
    low: float
    high: float


@dataclass
class FuzzProgram:
    text: str
    arguments: list[ArgumentSpec]

    def inputs(self, seed: int) -> list[np.ndarray]:
        """Fresh random inputs (never all zeros) for every argument."""
        from mlc.dialects.element_types import to_numpy_dtype

        generator = np.random.default_rng(seed)
        arrays = []
        for spec in self.arguments:
            if spec.dtype == "i1":
                arrays.append(generator.random(spec.shape) < 0.5)
                continue
            dtype = to_numpy_dtype(ELEMENT_TYPES[spec.dtype])
            if spec.dtype == "i32":
                values = generator.integers(int(spec.low), int(spec.high) + 1, size=spec.shape)
            else:
                values = generator.uniform(spec.low, spec.high, size=spec.shape)
            arrays.append(np.asarray(values).astype(dtype))
        return arrays


@dataclass
class _Value:
    ssa: SSAValue
    interval: Interval

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.ssa)

    @property
    def element(self) -> str:
        return str(element_type_of(self.ssa))


@dataclass
class _Program:
    """A function under construction: its block, builder, values and argument specs."""

    draw: st.DrawFn
    max_elements: int = MAX_ELEMENTS
    block: Block = field(default_factory=Block)
    values: list[_Value] = field(default_factory=list)
    arguments: list[ArgumentSpec] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.builder = GraphBuilder(self.block)

    def argument(self, shape: tuple[int, ...], element: str, interval: Interval | None = None) -> _Value:
        if interval is None:
            interval = Interval(-20, 20) if element == "i32" else Interval(0, 1) if element == "i1" else Interval(-2.0, 2.0)
        element_type = i1 if element == "i1" else ELEMENT_TYPES[element]
        ssa = self.block.insert_arg(TensorType(element_type, shape), len(self.block.args))
        self.arguments.append(ArgumentSpec(shape, element, interval.low, interval.high))
        return self.add(ssa, interval)

    def add(self, ssa: SSAValue, interval: Interval) -> _Value:
        value = _Value(ssa, interval)
        self.values.append(value)
        return value

    def pick(self, predicate=lambda value: True) -> _Value | None:
        """A value satisfying `predicate`: often the latest one (so ops compose), else any."""
        candidates = [v for v in self.values if predicate(v)]
        if not candidates:
            return None
        if self.draw(st.booleans()):
            return candidates[-1]
        return self.draw(st.sampled_from(candidates))


def _elements(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def _is_float(element: str) -> bool:
    return element in FLOAT_TYPES


# -- guards: keep values in ranges where the comparison is meaningful -------------------------------


def _squash(program: _Program, value: _Value) -> _Value:
    """`tanh(value)` for floats beyond the safe magnitude (integers are left as they are)."""
    if not _is_float(value.element) or value.interval.magnitude <= SAFE_MAGNITUDE[value.element]:
        return value
    return program.add(program.builder.unary("graph.tanh", value.ssa), Interval(-1, 1))


def _positive(program: _Program, value: _Value, floor: float) -> _Value:
    """`abs(value) + floor` (a value at least `floor`), unless the value already is."""
    if value.interval.low >= floor:
        return value
    builder = program.builder
    absolute = builder.unary("graph.abs", value.ssa)
    shifted = builder.binary("graph.add", absolute, builder.scalar(floor, element_type_of(value.ssa)))
    return program.add(shifted, Interval(floor, value.interval.magnitude + floor))


# -- steps ----------------------------------------------------------------------------------------


def _broadcast_partner(program: _Program, value: _Value) -> _Value:
    """A value of `value`'s element type whose shape broadcasts with it (reused or new)."""
    draw = program.draw
    shape = value.shape
    existing = program.pick(
        lambda v: v.element == value.element and _broadcasts(v.shape, shape) and _elements(np.broadcast_shapes(v.shape, shape)) <= program.max_elements
    )
    if existing is not None and draw(st.booleans()):
        return existing
    dropped = draw(st.integers(0, len(shape)))
    partner = [1 if draw(st.integers(0, 2)) == 0 else size for size in shape[dropped:]]
    if draw(st.integers(0, 5)) == 0:
        return _constant(program, tuple(partner), value.element)
    return program.argument(tuple(partner), value.element)


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def _constant(program: _Program, shape: tuple[int, ...], element: str) -> _Value:
    draw = program.draw
    element_type = ELEMENT_TYPES[element]
    if draw(st.booleans()) or _elements(shape) > 64:
        literal = draw(st.sampled_from((0.5, 2.0, -1.0, 3.0, 0.0, -0.25)))
        array = np.full(shape, int(literal) if element == "i32" else literal)
    else:
        seed = draw(st.integers(0, 2**16))
        array = np.random.default_rng(seed).uniform(-2, 2, size=shape)
        array = np.round(array) if element == "i32" else array
    ssa = program.builder.constant(array, element_type)
    return program.add(ssa, Interval(float(np.min(array, initial=0)), float(np.max(array, initial=0))))


def _binary_interval(op: str, a: Interval, b: Interval) -> Interval:
    if op == "add":
        return Interval(a.low + b.low, a.high + b.high)
    if op == "sub":
        return Interval(a.low - b.high, a.high - b.low)
    if op in ("max", "min"):
        function = max if op == "max" else min
        return Interval(function(a.low, b.low), function(a.high, b.high))
    products = [x * y for x in (a.low, a.high) for y in (b.low, b.high)]
    if op == "mul":
        return Interval(min(products), max(products))
    # div and pow get operands kept away from trouble; a wide interval is fine for them.
    bound = max(a.magnitude, 1.0) * max(b.magnitude, 1.0) * 8
    return Interval(-bound, bound)


def _step_binary(program: _Program) -> None:
    draw = program.draw
    lhs = program.pick(lambda v: v.element != "i1")
    if lhs is None:
        return
    floats = _is_float(lhs.element)
    op = draw(st.sampled_from(FLOAT_BINARY if floats else INTEGER_BINARY))
    lhs = _squash(program, lhs)
    rhs = _squash(program, _broadcast_partner(program, lhs))
    if op == "div" and floats:
        rhs = _positive(program, rhs, 0.5)
    if op == "pow" and floats:
        lhs = _positive(program, lhs, 0.25)
        exponent = draw(st.sampled_from((2.0, 0.5, 3.0, -1.0, 1.5)))
        rhs = program.add(program.builder.scalar(exponent, ELEMENT_TYPES[lhs.element]), Interval(exponent, exponent))
    elif op == "pow":  # small exponents, a negative one included (the truncated reciprocal)
        exponent = draw(st.sampled_from((0, 1, 2, 3, -1)))
        rhs = program.add(program.builder.scalar(exponent, ELEMENT_TYPES[lhs.element]), Interval(exponent, exponent))
    if op in ("mul", "pow") and lhs.interval.magnitude * max(rhs.interval.magnitude, 1) > SAFE_MAGNITUDE[lhs.element]:
        op = "add"
    if op == "pow" and not floats and max(lhs.interval.magnitude, 1.0) ** 3 > SAFE_MAGNITUDE[lhs.element]:
        op = "add"
    result = program.builder.binary(f"graph.{op}", lhs.ssa, rhs.ssa)
    interval = _binary_interval(op, lhs.interval, rhs.interval)
    if op == "pow":
        magnitude = max(lhs.interval.magnitude, 4.0) ** 3
        interval = Interval(0.0 if floats else -magnitude, magnitude)
    program.add(result, interval)


def _unary_interval(op: str, x: Interval) -> Interval:
    monotone = {"exp": math.exp, "tanh": math.tanh, "sigmoid": lambda v: 0.5 * (1 + math.tanh(v / 2)), "erf": math.erf}
    if op in monotone:
        return Interval(monotone[op](x.low), monotone[op](x.high))
    if op == "neg":
        return Interval(-x.high, -x.low)
    if op in ("abs", "relu"):
        return Interval(0.0 if op == "relu" or x.low <= 0 <= x.high else min(abs(x.low), abs(x.high)), max(x.magnitude, 0.0))
    if op == "gelu":
        return Interval(-0.2, max(x.high, 0.0))
    if op == "sqrt":
        return Interval(math.sqrt(x.low), math.sqrt(x.high))
    if op == "rsqrt":
        return Interval(1 / math.sqrt(x.high), 1 / math.sqrt(x.low))
    if op == "log":
        return Interval(math.log(x.low), math.log(x.high))
    if op == "reciprocal":
        return Interval(1 / x.high, 1 / x.low)
    if op in ("sin", "cos"):
        return Interval(-1.0, 1.0)
    raise AssertionError(op)


def _step_unary(program: _Program) -> None:
    draw = program.draw
    x = program.pick(lambda v: v.element != "i1")
    if x is None:
        return
    floats = _is_float(x.element)
    op = draw(st.sampled_from(FLOAT_UNARY if floats else INTEGER_UNARY))
    if not floats:
        program.add(program.builder.unary(f"graph.{op}", x.ssa), _unary_interval(op, x.interval))
        return
    x = _squash(program, x)
    if op in ("sqrt", "rsqrt", "log", "reciprocal"):
        x = _positive(program, x, 0.25)
    if op == "exp" and x.interval.high > 6:
        x = program.add(program.builder.unary("graph.tanh", x.ssa), Interval(-1, 1))
    if op == "gelu":
        approximate = draw(st.sampled_from(("none", "tanh")))
        program.add(program.builder.gelu(x.ssa, approximate), _unary_interval(op, x.interval))
        return
    program.add(program.builder.unary(f"graph.{op}", x.ssa), _unary_interval(op, x.interval))


def _step_compare_where(program: _Program) -> None:
    draw = program.draw
    lhs = program.pick(lambda v: v.element != "i1")
    if lhs is None:
        return
    conditions = [v for v in program.values if v.element == "i1"]
    if conditions and draw(st.booleans()):
        condition = draw(st.sampled_from(conditions))
    elif draw(st.integers(0, 3)) == 0:
        condition = program.argument(tuple(lhs.shape), "i1")
    else:
        rhs = _broadcast_partner(program, lhs)
        predicate = draw(st.sampled_from(PREDICATES))
        condition = program.add(program.builder.compare(predicate, lhs.ssa, rhs.ssa), Interval(0, 1))
        if draw(st.booleans()):
            return  # the i1 value itself is the step's result (returned, or used by a later where)
    true_value = lhs
    false_value = _broadcast_partner(program, lhs)
    if not _broadcasts(condition.shape, np.broadcast_shapes(true_value.shape, false_value.shape)):
        return
    shape = np.broadcast_shapes(condition.shape, true_value.shape, false_value.shape)
    if _elements(shape) > program.max_elements:
        return
    interval = Interval(min(true_value.interval.low, false_value.interval.low), max(true_value.interval.high, false_value.interval.high))
    program.add(program.builder.where(condition.ssa, true_value.ssa, false_value.ssa), interval)


def _step_cast(program: _Program) -> None:
    draw = program.draw
    x = program.pick()
    assert x is not None
    targets = [name for name in (*ELEMENT_TYPES, "i1") if name != x.element]
    target = draw(st.sampled_from(targets))
    x = _squash(program, x)
    if target in ("f16", "bf16") and x.interval.magnitude > SAFE_MAGNITUDE[target]:
        return
    element_type = i1 if target == "i1" else ELEMENT_TYPES[target]
    interval = Interval(0, 1) if target == "i1" else x.interval
    if target == "i32":
        interval = Interval(math.trunc(x.interval.low), math.trunc(x.interval.high))
    program.add(program.builder.cast(x.ssa, element_type), interval)


def _step_constant(program: _Program) -> None:
    x = program.pick(lambda v: v.element != "i1")
    if x is not None:
        shape = x.shape[program.draw(st.integers(0, len(x.shape))) :]
        _constant(program, tuple(shape), x.element)


def _step_broadcast(program: _Program) -> None:
    draw = program.draw
    x = program.pick()
    assert x is not None
    extra = tuple(draw(st.lists(st.sampled_from(DIMENSIONS[:8]), max_size=2)))
    shape = extra + tuple(draw(st.sampled_from((size, 3, 4))) if size == 1 else size for size in x.shape)
    if _elements(shape) <= program.max_elements and len(shape) <= 5:
        program.add(program.builder.broadcast(x.ssa, shape), x.interval)


def _factorizations(count: int) -> list[tuple[int, ...]]:
    """A few shapes with `count` elements (rank 0 to 4)."""
    divisors = [d for d in range(1, count + 1) if count % d == 0]
    shapes: list[tuple[int, ...]] = [(count,), (1, count), (count, 1)]
    shapes += [(d, count // d) for d in divisors]
    shapes += [(d, 1, count // d) for d in divisors[:3]] + [(2, d, count // (2 * d)) for d in divisors if count % (2 * d) == 0]
    if count == 1:
        shapes.append(())
    return shapes


def _step_reshape(program: _Program) -> None:
    x = program.pick()
    assert x is not None
    shape = program.draw(st.sampled_from(_factorizations(_elements(x.shape))))
    program.add(program.builder.reshape(x.ssa, shape), x.interval)


def _step_transpose(program: _Program) -> None:
    x = program.pick(lambda v: len(v.shape) >= 2)
    if x is not None:
        permutation = program.draw(st.permutations(range(len(x.shape))))
        program.add(program.builder.transpose(x.ssa, permutation), x.interval)


def _step_slice(program: _Program) -> None:
    draw = program.draw
    x = program.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return
    starts, ends, steps = [], [], []
    for size in x.shape:
        step = draw(st.sampled_from((1, 1, 2, 3, -1, -2)))
        starts.append(draw(st.integers(-size - 2, size + 2)))
        ends.append(draw(st.integers(-size - 2, size + 2)))
        steps.append(step)
    if any(len(range(*slice(a, b, c).indices(n))) == 0 for a, b, c, n in zip(starts, ends, steps, x.shape)) and draw(st.integers(0, 4)):
        return  # empty slices are valid, but mostly we want data through
    program.add(program.builder.slice(x.ssa, starts, ends, steps), x.interval)


def _step_concat(program: _Program) -> None:
    draw = program.draw
    x = program.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return
    axis = draw(st.integers(0, len(x.shape) - 1))
    parts = [x]
    for _ in range(draw(st.integers(1, 2))):
        same = program.pick(lambda v: v.element == x.element and len(v.shape) == len(x.shape) and all(a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != axis))
        if same is None or draw(st.booleans()):
            shape = list(x.shape)
            shape[axis] = draw(st.sampled_from((1, 2, 3, 5)))
            same = program.argument(tuple(shape), x.element) if x.element != "i1" else program.argument(tuple(shape), "i1")
        parts.append(same)
    shape = list(x.shape)
    shape[axis] = sum(part.shape[axis] for part in parts)
    if _elements(tuple(shape)) <= program.max_elements:
        interval = Interval(min(p.interval.low for p in parts), max(p.interval.high for p in parts))
        program.add(program.builder.concat([p.ssa for p in parts], axis), interval)


def _step_reduce(program: _Program) -> None:
    draw = program.draw
    x = program.pick(lambda v: v.element != "i1")
    if x is None:
        return
    kind = draw(st.sampled_from(REDUCTIONS if _is_float(x.element) else REDUCTIONS[:3]))
    rank = len(x.shape)
    axes = sorted(draw(st.sets(st.integers(0, max(rank - 1, 0)), min_size=1 if rank else 0, max_size=rank)))
    keepdims = draw(st.booleans())
    count = math.prod(x.shape[axis] for axis in axes)
    x = _squash(program, x)
    interval = x.interval
    if kind == "sum":
        interval = Interval(min(0, x.interval.low * count), max(0, x.interval.high * count))
    program.add(program.builder.reduce(kind, x.ssa, axes, keepdims), interval)


def _step_softmax(program: _Program) -> None:
    x = program.pick(lambda v: _is_float(v.element) and len(v.shape) >= 1)
    if x is not None:
        axis = program.draw(st.integers(0, len(x.shape) - 1))
        x = _squash(program, x)
        program.add(program.builder.softmax(x.ssa, axis), Interval(0.0, 1.0))


def _step_layer_norm(program: _Program) -> None:
    draw = program.draw
    x = program.pick(lambda v: _is_float(v.element) and len(v.shape) >= 1)
    if x is None:
        return
    axis = draw(st.integers(0, len(x.shape) - 1))
    normalised = x.shape[axis:]
    scale = program.argument(normalised, x.element, Interval(0.5, 1.5))
    bias = program.argument(normalised, x.element, Interval(-1.0, 1.0))
    epsilon = draw(st.sampled_from((1e-5, 1e-3, 0.1)))
    x = _squash(program, x)
    reach = math.sqrt(_elements(normalised)) * 1.5 + 1.0
    program.add(program.builder.layer_norm(x.ssa, scale.ssa, bias.ssa, axis, epsilon), Interval(-reach, reach))


def _step_matmul(program: _Program) -> None:
    draw = program.draw
    a = program.pick(lambda v: v.element != "i1" and len(v.shape) >= 2)
    if a is None:
        a = program.pick(lambda v: v.element != "i1" and len(v.shape) == 1)
        if a is None:
            return
        a = program.add(program.builder.reshape(a.ssa, (1, a.shape[0])), a.interval)
    a = _squash(program, a)
    if a.element == "i32" and a.interval.magnitude > 1000:
        return
    k = a.shape[-1]
    n = draw(st.sampled_from(DIMENSIONS))
    existing = program.pick(lambda v: v.element == a.element and len(v.shape) >= 2 and v.shape[-2] == k)
    if existing is not None and draw(st.booleans()):
        b = _squash(program, existing)
    else:
        batch = a.shape[:-2][draw(st.integers(0, len(a.shape) - 2)) :]
        batch = tuple(1 if draw(st.integers(0, 2)) == 0 else size for size in batch)
        interval = Interval(-5, 5) if a.element == "i32" else Interval(-1.0, 1.0)
        b = program.argument((*batch, k, n), a.element, interval)
    if not _broadcasts(a.shape[:-2], b.shape[:-2]):
        return
    shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    if _elements(shape) * k > 64 * program.max_elements:
        return
    reach = k * a.interval.magnitude * b.interval.magnitude
    program.add(program.builder.matmul(a.ssa, b.ssa), Interval(-reach, reach))


def _nchw(program: _Program) -> _Value | None:
    """A rank-4 float value: an existing one, or an existing value reshaped, or a new argument."""
    draw = program.draw
    x = program.pick(lambda v: _is_float(v.element) and len(v.shape) == 4 and min(v.shape[2:]) >= 2)
    if x is not None and draw(st.booleans()):
        return _squash(program, x)
    element = draw(st.sampled_from(tuple(FLOAT_TYPES)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(2, 9)), draw(st.integers(2, 9)))
    return program.argument(shape, element)


def _step_conv2d(program: _Program) -> None:
    draw = program.draw
    x = _nchw(program)
    assert x is not None
    batch, channels, height, width = x.shape
    group = draw(st.sampled_from([g for g in (1, 2, channels) if channels % g == 0]))
    outputs = group * draw(st.integers(1, 3))
    kernel = (draw(st.integers(1, min(3, height))), draw(st.integers(1, min(3, width))))
    weight = program.argument((outputs, channels // group, *kernel), x.element, Interval(-1.0, 1.0))
    bias = program.argument((outputs,), x.element, Interval(-1.0, 1.0)) if draw(st.booleans()) else None
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, 1)) for _ in range(4))
    dilations = (1, 1) if draw(st.booleans()) else (draw(st.integers(1, 2)), 1)
    if any(size + pads[i] + pads[i + 2] < dilations[i] * (kernel[i] - 1) + 1 for i, size in enumerate((height, width))):
        return
    reach = channels // group * kernel[0] * kernel[1] * x.interval.magnitude + 1.0
    result = program.builder.conv2d(x.ssa, weight.ssa, bias.ssa if bias else None, strides, pads, dilations, group)
    program.add(result, Interval(-reach, reach))


def _step_pool(program: _Program) -> None:
    draw = program.draw
    x = _nchw(program)
    assert x is not None
    height, width = x.shape[2:]
    kernel = (draw(st.integers(1, min(3, height))), draw(st.integers(1, min(3, width))))
    strides = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    pads = tuple(draw(st.integers(0, kernel[i % 2] - 1)) for i in range(4))
    kind = draw(st.sampled_from(("max", "avg")))
    program.add(program.builder.pool2d(kind, x.ssa, kernel, strides, pads), x.interval)


STEPS = {
    "binary": _step_binary,
    "unary": _step_unary,
    "compare_where": _step_compare_where,
    "cast": _step_cast,
    "constant": _step_constant,
    "broadcast": _step_broadcast,
    "reshape": _step_reshape,
    "transpose": _step_transpose,
    "slice": _step_slice,
    "concat": _step_concat,
    "reduce": _step_reduce,
    "softmax": _step_softmax,
    "layer_norm": _step_layer_norm,
    "matmul": _step_matmul,
    "conv2d": _step_conv2d,
    "pool": _step_pool,
}


def _module_text(program: _Program, returned: list[_Value]) -> str:
    from mlc.dialects import make_context  # noqa: F401 - the dialects print through the context

    function_type = ([arg.type for arg in program.block.args], [v.ssa.type for v in returned])
    program.block.add_op(func.ReturnOp(*[v.ssa for v in returned]))
    function = func.FuncOp("main", function_type, Region(program.block))
    module = ModuleOp([function])
    module.verify()
    from io import StringIO

    stream = StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue() + "\n"


@st.composite
def graph_programs(draw: st.DrawFn, max_steps: int = 10, step_kinds: tuple[str, ...] = STEP_KINDS) -> FuzzProgram:
    """A random graph function `@main` and the ranges of its inputs (see the module docstring)."""
    large = draw(st.integers(0, 5)) == 0
    program = _Program(draw, max_elements=LARGE_MAX_ELEMENTS if large else MAX_ELEMENTS)
    element = draw(st.sampled_from(("f32", "f32", "f32", "f16", "bf16", "i32")))
    rank = draw(st.sampled_from((2, 3, 1, 4, 2, 3, 0)))
    domain: tuple[int, ...] = ()
    for _ in range(rank):
        size = draw(st.sampled_from(DIMENSIONS))
        if _elements(domain) * size <= MAX_ELEMENTS // 4:
            domain += (size,)
    if large:
        position = draw(st.integers(0, len(domain)))
        large_size = draw(st.sampled_from(LARGE_DIMENSIONS))
        domain = domain[:position] + (large_size,) + domain[position:]
        while _elements(domain) > program.max_elements // 2:
            domain = domain[1:] if domain[0] != large_size else domain[:1] + domain[2:]
    program.argument(domain, element)
    for _ in range(draw(st.integers(0, 1))):
        _broadcast_partner(program, program.values[0])
    for _ in range(draw(st.integers(min(3, max_steps), max_steps))):
        STEPS[draw(st.sampled_from(step_kinds))](program)
    last = program.values[-1]
    returned = [last]
    if draw(st.booleans()):
        other = draw(st.sampled_from(program.values))
        if other is not last:
            returned.append(other)
    return FuzzProgram(_module_text(program, returned), program.arguments)
