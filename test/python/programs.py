"""Random graph programs for Hypothesis, and the before/after equivalence check of passes.

`elementwise_programs()` draws small elementwise graph functions: a domain shape, inputs that
broadcast to it (some dimensions 1, some leading ones dropped), and a chain or DAG of graph ops
over f32, f16, bf16, i32 and i1 values, sometimes through splat constants, broadcasts and reshapes.
`reduction_programs()` draws functions around one softmax, layer_norm or reduce_* op: elementwise
producers before it, elementwise consumers after it, rows of awkward lengths (1, 31, 33, 1000,
4097, ...; or, given `LONG_ROW_LENGTHS`, longer than a program holds). `mixed_programs()` draws
small f32 matrix programs with matmuls, reductions, normalisations, transposes and reshapes among
elementwise ops (what graph-fuse groups apart).
`random_inputs()` draws matching numpy data from a seed (never zeros).

`assert_equivalent(before, after, inputs)` interprets both modules with `mlc.interpreter.run` and
compares every result bit for bit (NaN equals NaN: both sides must produce it in the same places).
`assert_within_bounds(program, inputs, results)` compares the results of any implementation of the
graph function `@main` of `program` (compiled code, a later stage of its lowering, a rewritten
graph) with the graph interpreter, element by element within the error bound derived from the ops
and the data (`mlc.dialects.graph.error_bounds.result_bounds`; no fixed tolerance), and returns
how many elements it compared so that tests can show (`hypothesis.event`) when nothing was.
`assert_perturbation_caught` shows that such a check decides (a result moved by a few bounds
fails it), and `assert_compiled_matches` does both and also holds a float64 numpy reference of the
same function to the same bound. Lower-level tests whose kernels compute one graph op state that
op as a graph function and use the same helpers.
"""

from __future__ import annotations

import collections
import functools
import weakref
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from hypothesis import seed, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

from mlc.dialects import make_context
from mlc.diagnostics import parse_module
from mlc.passes import build_pipeline
from mlc.transforms import all_passes

FLOAT_TYPES = ("f32", "f16", "bf16")
ELEMENT_TYPES = ("f32", "f16", "bf16", "i32")
NUMPY_TYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i32": np.int32, "i1": np.bool_}

FLOAT_BINARY = ("add", "sub", "mul", "div", "max", "min")
INTEGER_BINARY = ("add", "sub", "mul", "div", "max", "min")
FLOAT_UNARY = ("neg", "abs", "relu", "exp", "tanh", "sigmoid", "sqrt", "rsqrt", "log", "erf", "reciprocal", "gelu")
INTEGER_UNARY = ("neg", "abs", "relu")
PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


def tensor_type(shape: tuple[int, ...], element: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


@dataclass
class Value:
    name: str
    shape: tuple[int, ...]
    element: str


@dataclass
class Program:
    """A graph function under construction."""

    domain: tuple[int, ...]
    arguments: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)

    def fresh(self, shape: tuple[int, ...], element: str) -> Value:
        value = Value(f"%v{len(self.lines)}", shape, element)
        self.values.append(value)
        return value

    def emit(self, text: str, result: Value) -> Value:
        self.lines.append(f"  {result.name} = {text}")
        return result

    def text(self, returned: list[Value]) -> str:
        arguments = ", ".join(f"{a.name}: {tensor_type(a.shape, a.element)}" for a in self.arguments)
        results = ", ".join(tensor_type(v.shape, v.element) for v in returned)
        names = ", ".join(v.name for v in returned)
        return (
            f"func.func @main({arguments}) -> ({results}) {{\n"
            + "\n".join(self.lines)
            + f"\n  func.return {names} : {results}\n}}\n"
        )


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(a, b))


@st.composite
def _input_shape(draw: st.DrawFn, domain: tuple[int, ...]) -> tuple[int, ...]:
    dropped = draw(st.integers(0, len(domain)))
    shape = list(domain[dropped:])
    for index in range(len(shape)):
        if draw(st.integers(0, 3)) == 0:
            shape[index] = 1
    return tuple(shape)


@st.composite
def elementwise_programs(draw: st.DrawFn, max_ops: int = 6) -> str:
    """The text of a random elementwise graph function `@main`."""
    domain = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    element = draw(st.sampled_from(ELEMENT_TYPES))
    program = Program(domain)
    for index in range(draw(st.integers(1, 3))):
        shape = domain if index == 0 else draw(_input_shape(domain))
        argument = Value(f"%arg{index}", shape, element)
        program.arguments.append(argument)
        program.values.append(argument)
    for _ in range(draw(st.integers(1, max_ops))):
        _draw_op(draw, program, element)
    candidates = [v for v in program.values if v.element != "i1" or draw(st.booleans())]
    last = program.values[-1]
    returned = [last] + ([draw(st.sampled_from(candidates))] if draw(st.booleans()) else [])
    return program.text(returned)


def _draw_op(draw: st.DrawFn, program: Program, element: str) -> None:
    same_type = [v for v in program.values if v.element == element]
    kind = draw(st.sampled_from(("binary", "binary", "unary", "unary", "cmp", "where", "constant", "cast", "broadcast")))
    lhs = draw(st.sampled_from(same_type))
    if kind == "constant":
        value = draw(st.sampled_from((0.5, 2.0, -1.0, 3.0)))
        literal = str(int(value)) if element == "i32" else repr(value)
        constant = program.fresh((), element)
        program.emit(f"graph.constant dense<{literal}> : {tensor_type((), element)}", constant)
        kind, rhs = "binary", constant
    else:
        rhs = draw(st.sampled_from(same_type))
    floats = element in FLOAT_TYPES
    if kind == "binary":
        op = draw(st.sampled_from(FLOAT_BINARY if floats else INTEGER_BINARY))
        shape = _broadcast(lhs.shape, rhs.shape)
        result = program.fresh(shape, element)
        types = f"({tensor_type(lhs.shape, element)}, {tensor_type(rhs.shape, element)}) -> {tensor_type(shape, element)}"
        program.emit(f"graph.{op} {lhs.name}, {rhs.name} : {types}", result)
    elif kind == "unary":
        op = draw(st.sampled_from(FLOAT_UNARY if floats else INTEGER_UNARY))
        result = program.fresh(lhs.shape, element)
        program.emit(f"graph.{op} {lhs.name} : {tensor_type(lhs.shape, element)}", result)
    elif kind == "cmp":
        predicate = draw(st.sampled_from(PREDICATES))
        shape = _broadcast(lhs.shape, rhs.shape)
        result = program.fresh(shape, "i1")
        types = f"({tensor_type(lhs.shape, element)}, {tensor_type(rhs.shape, element)}) -> {tensor_type(shape, 'i1')}"
        program.emit(f"graph.cmp {predicate}, {lhs.name}, {rhs.name} : {types}", result)
    elif kind == "where":
        conditions = [v for v in program.values if v.element == "i1"]
        if not conditions:
            return
        condition = draw(st.sampled_from(conditions))
        shape = _broadcast(_broadcast(condition.shape, lhs.shape), rhs.shape)
        result = program.fresh(shape, element)
        types = (
            f"({tensor_type(condition.shape, 'i1')}, {tensor_type(lhs.shape, element)}, "
            f"{tensor_type(rhs.shape, element)}) -> {tensor_type(shape, element)}"
        )
        program.emit(f"graph.where {condition.name}, {lhs.name}, {rhs.name} : {types}", result)
    elif kind == "cast":
        target = draw(st.sampled_from([t for t in ELEMENT_TYPES if t != element]))
        result = program.fresh(lhs.shape, target)
        program.emit(f"graph.cast {lhs.name} : {tensor_type(lhs.shape, element)} to {tensor_type(lhs.shape, target)}", result)
        # Casting back keeps the rest of the program in one element type.
        back = program.fresh(lhs.shape, element)
        program.emit(f"graph.cast {result.name} : {tensor_type(lhs.shape, target)} to {tensor_type(lhs.shape, element)}", back)
    elif kind == "broadcast" and lhs.shape != program.domain:
        result = program.fresh(program.domain, element)
        program.emit(f"graph.broadcast {lhs.name} : {tensor_type(lhs.shape, element)} to {tensor_type(program.domain, element)}", result)


ROW_LENGTHS = (1, 2, 7, 31, 33, 64, 1000, 4097)
"""Lengths of reduced dimensions: powers of two, odd sizes either side of a warp, long rows."""
LONG_ROW_LENGTHS = (65537, 70001, 100000)
"""Lengths beyond the 65536 elements a program holds in registers (reduced chunk by chunk)."""
REDUCTIONS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_mean", "softmax", "layer_norm")


@st.composite
def reduction_programs(draw: st.DrawFn, row_lengths: tuple[int, ...] = ROW_LENGTHS, largest_other: int = 5) -> str:
    """The text of `@main`: producers, one reduction or normalisation, then consumers.

    One dimension has a length from `row_lengths`, the others at most `largest_other`.
    """
    rank = draw(st.integers(1, 3))
    domain = tuple(draw(st.lists(st.integers(1, largest_other), min_size=rank - 1, max_size=rank - 1))) + (
        draw(st.sampled_from(row_lengths)),
    )
    if rank > 1 and draw(st.booleans()):  # the long dimension is not always the last one
        domain = domain[-1:] + domain[:-1]
    kind = draw(st.sampled_from(REDUCTIONS))
    integer_allowed = kind in ("reduce_sum", "reduce_max", "reduce_min")
    element = draw(st.sampled_from(ELEMENT_TYPES if integer_allowed else FLOAT_TYPES))
    program = Program(domain)
    x = Value("%x", domain, element)
    program.arguments.append(x)
    program.values.append(x)
    for _ in range(draw(st.integers(0, 2))):
        _draw_op(draw, program, element)
    source = draw(st.sampled_from([v for v in program.values if v.shape == domain and v.element == element]))
    reduced = _emit_reduction(draw, program, kind, source)
    consumers = [reduced]
    for _ in range(draw(st.integers(0, 2))):
        consumers.append(_draw_consumer(draw, program, consumers[-1], source))
    returned = [consumers[-1]] + ([reduced] if len(consumers) > 1 and draw(st.booleans()) else [])
    return program.text(returned)


def _emit_reduction(draw: st.DrawFn, program: Program, kind: str, x: Value) -> Value:
    rank, shape, element = len(x.shape), x.shape, x.element
    if kind == "softmax":
        axis = draw(st.integers(-rank, rank - 1))
        result = program.fresh(shape, element)
        text = f"graph.softmax {x.name} axis {axis} : {tensor_type(shape, element)}"
    elif kind == "layer_norm":
        axis = draw(st.integers(0, rank - 1))
        scale, bias = (Value(f"%{name}", shape[axis:], element) for name in ("scale", "bias"))
        program.arguments += [scale, bias]
        epsilon = draw(st.sampled_from((1e-5, 1e-3, 0.0)))
        result = program.fresh(shape, element)
        parameter = tensor_type(shape[axis:], element)
        text = (
            f"graph.layer_norm {x.name}, %scale, %bias axis {axis} epsilon {epsilon:e} : "
            f"({tensor_type(shape, element)}, {parameter}, {parameter}) -> {tensor_type(shape, element)}"
        )
    else:
        axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
        keepdims = draw(st.booleans())
        out = tuple(1 if d in axes else size for d, size in enumerate(shape)) if keepdims else tuple(
            size for d, size in enumerate(shape) if d not in axes
        )
        result = program.fresh(out, element)
        text = (
            f"graph.{kind} {x.name} axes [{', '.join(map(str, axes))}] keepdims {str(keepdims).lower()} : "
            f"{tensor_type(shape, element)} to {tensor_type(out, element)}"
        )
    return program.emit(text, result)


def _draw_consumer(draw: st.DrawFn, program: Program, value: Value, source: Value) -> Value:
    """An elementwise op on `value`: unary, or binary with itself, a constant or the source."""
    element = value.element
    floats = element in FLOAT_TYPES
    choice = draw(st.sampled_from(("unary", "constant", "source")))
    if choice == "unary":
        op = draw(st.sampled_from(("neg", "abs", "relu", "exp", "tanh") if floats else INTEGER_UNARY))
        return program.emit(f"graph.{op} {value.name} : {tensor_type(value.shape, element)}", program.fresh(value.shape, element))
    if choice == "source" and len(value.shape) == len(source.shape):
        other = source
    else:
        other = program.fresh((), element)
        literal = "3" if element == "i32" else "0.5"
        program.emit(f"graph.constant dense<{literal}> : {tensor_type((), element)}", other)
    op = draw(st.sampled_from(("add", "sub", "mul", "max")))
    shape = _broadcast(value.shape, other.shape)
    types = f"({tensor_type(value.shape, element)}, {tensor_type(other.shape, element)}) -> {tensor_type(shape, element)}"
    return program.emit(f"graph.{op} {value.name}, {other.name} : {types}", program.fresh(shape, element))


MIXED_STEPS = ("matmul", "matmul", "unary", "bias", "binary", "softmax", "reduce", "layer_norm", "transpose", "reshape")
MIXED_UNARY = ("relu", "tanh", "exp", "neg", "sigmoid", "gelu")


@st.composite
def mixed_programs(draw: st.DrawFn, max_ops: int = 7) -> str:
    """`@main` over small f32 matrices with every kind of op graph-fuse groups apart: matmuls and
    their epilogues, elementwise ops, reductions (some dropping their axes), softmax, layer_norm,
    transposes and reshapes, in random DAGs."""
    shape = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    program = Program(shape)
    x = Value("%x", shape, "f32")
    program.arguments.append(x)
    program.values.append(x)
    for _ in range(draw(st.integers(1, max_ops))):
        _draw_mixed_op(draw, program)
    returned = [program.values[-1]] + ([draw(st.sampled_from(program.values))] if draw(st.booleans()) else [])
    return program.text(returned)


def _new_argument(program: Program, shape: tuple[int, ...]) -> Value:
    argument = Value(f"%w{len(program.arguments)}", shape, "f32")
    program.arguments.append(argument)
    return argument


def _recent(draw: st.DrawFn, values: list[Value]) -> Value:
    """One of `values`, the last one half of the time (so that chains, which fuse, are common)."""
    return values[-1] if draw(st.booleans()) else draw(st.sampled_from(values))


def _draw_mixed_op(draw: st.DrawFn, program: Program) -> None:
    kind = draw(st.sampled_from(MIXED_STEPS))
    if kind == "unary":
        value = _recent(draw, program.values)
        op = draw(st.sampled_from(MIXED_UNARY))
        program.emit(f"graph.{op} {value.name} : {tensor_type(value.shape, 'f32')}", program.fresh(value.shape, "f32"))
        return
    value = _recent(draw, [v for v in program.values if len(v.shape) == 2])
    rows, columns = value.shape
    source = tensor_type(value.shape, "f32")
    if kind == "matmul":
        weight = _new_argument(program, (columns, draw(st.integers(1, 5))))
        result = program.fresh((rows, weight.shape[1]), "f32")
        types = f"({source}, {tensor_type(weight.shape, 'f32')}) -> {tensor_type(result.shape, 'f32')}"
        program.emit(f"graph.matmul {value.name}, {weight.name} : {types}", result)
    elif kind in ("bias", "binary"):
        same_shape = [v for v in program.values if v.shape == value.shape]
        other = _new_argument(program, (columns,)) if kind == "bias" else draw(st.sampled_from(same_shape))
        op = draw(st.sampled_from(("add", "sub", "mul", "max")))
        types = f"({source}, {tensor_type(other.shape, 'f32')}) -> {source}"
        program.emit(f"graph.{op} {value.name}, {other.name} : {types}", program.fresh(value.shape, "f32"))
    elif kind == "softmax":
        axis = draw(st.integers(-2, 1))
        program.emit(f"graph.softmax {value.name} axis {axis} : {source}", program.fresh(value.shape, "f32"))
    elif kind == "reduce":
        op = draw(st.sampled_from(("reduce_sum", "reduce_max", "reduce_mean")))
        axis, keepdims = draw(st.integers(0, 1)), draw(st.booleans())
        shape = tuple(1 if d == axis else size for d, size in enumerate(value.shape)) if keepdims else (value.shape[1 - axis],)
        result = program.fresh(shape, "f32")
        text = f"graph.{op} {value.name} axes [{axis}] keepdims {str(keepdims).lower()} : {source} to {tensor_type(shape, 'f32')}"
        program.emit(text, result)
    elif kind == "layer_norm":
        axis = draw(st.integers(0, 1))
        scale, bias = _new_argument(program, value.shape[axis:]), _new_argument(program, value.shape[axis:])
        parameter = tensor_type(value.shape[axis:], "f32")
        types = f"({source}, {parameter}, {parameter}) -> {source}"
        program.emit(
            f"graph.layer_norm {value.name}, {scale.name}, {bias.name} axis {axis} epsilon 1.000000e-05 : {types}",
            program.fresh(value.shape, "f32"),
        )
    elif kind == "transpose":
        result = program.fresh((columns, rows), "f32")
        program.emit(f"graph.transpose {value.name} perm [1, 0] : {source} to {tensor_type(result.shape, 'f32')}", result)
    else:
        shape = draw(st.sampled_from(((columns, rows), (1, rows * columns))))
        program.emit(f"graph.reshape {value.name} : {source} to {tensor_type(shape, 'f32')}", program.fresh(shape, "f32"))


def random_inputs(module_text: str, seed: int) -> list[np.ndarray]:
    """Seeded random arguments for `@main` of `module_text` (never all zeros)."""
    module, _ = parse_module(module_text, make_context())
    function = next(op for op in module.walk() if getattr(op, "sym_name", None) is not None and op.sym_name.data == "main")
    rng = np.random.default_rng(seed)
    arrays = []
    for argument_type in function.function_type.inputs.data:
        shape = argument_type.get_shape()
        element = str(argument_type.element_type)
        if element == "i32":
            array = rng.integers(-20, 20, size=shape, dtype=np.int32)
        elif element == "i1":
            array = rng.random(size=shape) < 0.5
        else:
            array = (rng.standard_normal(size=shape) * 2).astype(NUMPY_TYPES[element])
        arrays.append(np.asarray(array))
    return arrays


def lower(module_text: str, pipeline: str):
    """The module of `module_text` after the passes of `pipeline` (xDSL spelling), verified.

    A fresh copy each call (callers may change it). The equivalence tests lower the same program
    through every prefix of a pipeline, one pass further each step; `_lowered` remembers the
    recent prefixes, so each step applies one pass instead of the whole prefix again."""
    remembered = stage(module_text, pipeline)
    module = remembered.clone()
    _LOWERED_FROM[module] = _LOWERED_FROM[remembered]
    return module


def stage(module_text: str, pipeline: str):
    """`lower` without the copy: the remembered module itself, to read only (interpret it, compare
    it with `assert_equivalent`, print it), never to change; `lower` gives a copy to change. The
    equivalence tests compare each stage with the next: a copy of both for every example and step
    cost them as much as the passes (xDSL's `clone` is slow)."""
    passes = tuple(split_pipeline(pipeline))
    module = _lowered(module_text, passes)
    _LOWERED_FROM[module] = (module_text, passes)
    return module


_LOWERED_FROM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Which (program, passes) each module `lower` or `stage` handed out came from, so that `assert_equivalent`
can reuse the interpretation of a stage the previous step already ran (a test that changes the
module after `lower` must not compare it with `assert_equivalent`: see `_interpret`)."""


def same_draws_for_every_step(test):
    """Under a derandomized profile (CI), every parametrization of the Hypothesis `test` draws the
    same examples (a fixed seed: Hypothesis otherwise seeds each parametrization apart), so the
    steps of a pipeline check the same programs and share their lowerings (`lower` remembers them);
    exploring profiles keep drawing new examples for each step."""
    return seed(20261126)(test) if settings.default.derandomize else test


def split_pipeline(pipeline: str) -> list[str]:
    """The passes of an xDSL-spelled pipeline, commas inside a pass's `{options}` kept."""
    passes, depth, start = [], 0, 0
    for index, character in enumerate(pipeline):
        depth += {"{": 1, "}": -1}.get(character, 0)
        if character == "," and depth == 0:
            passes.append(pipeline[start:index].strip())
            start = index + 1
    passes.append(pipeline[start:].strip())
    return [name for name in passes if name]


_REMEMBERED: collections.OrderedDict[tuple[str, tuple[str, ...]], ModuleOp] = collections.OrderedDict()
"""The modules `_lowered` built last, least recently used first."""
_REMEMBERED_COUNT = 192


def _lowered(module_text: str, passes: tuple[str, ...]) -> ModuleOp:
    """`module_text` after `passes`, remembered; treated as read-only (`lower` hands out clones).

    Built from a copy of the longest remembered prefix of `passes` (in the step-by-step tests, the
    module one pass shorter), else parsed; the module is verified after each pass. Only the result
    is remembered: a copy of every intermediate module would cost more than the passes."""
    key = (module_text, passes)
    if key in _REMEMBERED:
        _REMEMBERED.move_to_end(key)
        return _REMEMBERED[key]
    start = next((length for length in range(len(passes) - 1, -1, -1) if (module_text, passes[:length]) in _REMEMBERED), None)
    if start is None:
        module, _ = parse_module(module_text, make_context())
        module.verify()
        start = 0
    else:
        module = _REMEMBERED[(module_text, passes[:start])].clone()
    for name in passes[start:]:
        for module_pass in build_pipeline(name, all_passes(), mlir_syntax=False):
            module_pass.apply(make_context(), module)
        module.verify()
    _REMEMBERED[key] = module
    if len(_REMEMBERED) > _REMEMBERED_COUNT:
        _REMEMBERED.popitem(last=False)
    return module


def main_function(program):
    """The entry function of `program` (MLIR text or a parsed module): `@main`, or its only function."""
    from mlc.compiler import select_entry

    module = parse_module(program, make_context())[0] if isinstance(program, str) else program
    return select_entry(module, None)


def bounded_comparison(program, inputs: list[np.ndarray], results):
    """The results of an implementation of graph function `@main` of `program` (one array or a
    sequence) against the graph interpreter's on `inputs`, within `result_bounds` (sound for any
    implementation computing in f32 with the math-library accuracy that `error_bounds.ACCURACY`
    states, in any summation order). Elements whose bound is infinite (a comparison that may go
    either way, a domain edge, a NaN) are not compared by value; where the interpreter's result is
    NaN or an infinity, the implementation must give the same (NaN anywhere, the infinity of the
    same sign). Returns the `error_bounds.Comparison`: its `failure` is None when all agree."""
    from mlc.dialects.graph.error_bounds import Comparison, check_results, result_bounds

    results = list(results) if isinstance(results, list | tuple) else [results]
    expected, bounds = result_bounds(main_function(program), [x.copy() for x in inputs])
    if len(results) != len(expected):
        return Comparison(0, 0, f"{len(results)} results, expected {len(expected)}")
    comparison = check_results([np.asarray(r) for r in results], expected, bounds)
    if comparison.failure is not None:
        return comparison
    for index, (got, want) in enumerate(zip(results, expected)):
        if not np.issubdtype(want.dtype, np.inexact) and want.dtype.kind != "V":
            continue
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        special = ~np.isfinite(want64)
        same = np.where(np.isnan(want64), np.isnan(got64), got64 == want64)
        wrong = special & ~same
        if np.any(wrong):
            position = tuple(int(i) for i in np.argwhere(wrong)[0])
            comparison.failure = f"result #{index} at {list(position)}: got {got64[position]!r}, expected {want64[position]!r}"
            return comparison
    return comparison


def assert_within_bounds(program, inputs: list[np.ndarray], results):
    """`bounded_comparison`, asserting agreement; returns the `Comparison` (elements compared)."""
    comparison = bounded_comparison(program, inputs, results)
    assert comparison.failure is None, comparison.failure
    return comparison


def assert_perturbation_caught(program, inputs: list[np.ndarray], results, factor: float = 4.0) -> None:
    """The bound decides: each result, moved at its element of largest finite bound by `factor`
    times that bound (at least one unit in the last place), fails `bounded_comparison`."""
    from mlc.dialects.graph.error_bounds import result_bounds

    results = [np.asarray(r) for r in (results if isinstance(results, list | tuple) else [results])]
    expected, bounds = result_bounds(main_function(program), [x.copy() for x in inputs])
    for index, (want, bound) in enumerate(zip(expected, bounds)):
        known = np.isfinite(bound) & np.isfinite(np.asarray(want, np.float64))
        if not np.any(known) or want.dtype == np.bool_:
            continue
        position = np.unravel_index(int(np.argmax(np.where(known, bound, -1.0))), bound.shape)
        wrong = [r.copy() for r in results]
        if np.issubdtype(want.dtype, np.integer):
            step = int(bound[position]) + 1
            value = int(want[position])
            wrong[index][position] = value + step if value + step <= np.iinfo(want.dtype).max else value - step
        else:
            with np.errstate(over="ignore"):  # a bound beyond the type's range moves the result to inf
                moved = want.dtype.type(float(want[position]) + factor * float(bound[position]))
            wrong[index][position] = moved if moved != want[position] else np.nextafter(want[position], want.dtype.type(np.inf))
        failure = bounded_comparison(program, inputs, wrong).failure
        assert failure is not None and failure.startswith(f"result #{index}"), f"result #{index} moved by {factor}x its bound: {failure}"


def assert_compiled_matches(program, inputs: list[np.ndarray], results, references=()):
    """Compiled `results` of `program` on `inputs` against the graph interpreter, within the derived
    bound (`assert_within_bounds`); a result moved by a few bounds fails
    (`assert_perturbation_caught`). Each of `references` (float64 numpy expressions of the same
    function, one per result; None to skip one) rounded once to its result's type is an
    implementation too, so it must be within the same bound: the interpreter means what the numpy
    expression says. Returns the comparison of `results`."""
    results = list(results) if isinstance(results, list | tuple) else [results]
    comparison = assert_within_bounds(program, inputs, results)
    assert_perturbation_caught(program, inputs, results)
    if references:
        rounded = [
            np.asarray(result if reference is None else np.asarray(reference).astype(np.asarray(result).dtype))
            for result, reference in zip(results, references, strict=True)
        ]
        failure = bounded_comparison(program, inputs, rounded).failure
        assert failure is None, f"the numpy reference: {failure}"
    return comparison


def comparison_event(comparison) -> str:
    """A label for `hypothesis.event`: whether any element was compared by value."""
    return "elements compared" if comparison.compared else "no element with a finite bound (nothing compared by value)"


def assert_equivalent(before, after, inputs: list[np.ndarray]) -> None:
    """Both modules' `@main` in `mlc.interpreter.run` give the same results, bit for bit."""
    expected = _interpret(before, inputs)
    actual = _interpret(after, inputs)
    assert len(expected) == len(actual)
    for index, (want, got) in enumerate(zip(expected, actual)):
        assert want.shape == got.shape and want.dtype == got.dtype, f"result #{index}: {got.dtype}{got.shape} != {want.dtype}{want.shape}"
        if want.dtype == ml_dtypes.bfloat16:  # not a numpy floating type: compare its (exact) f32 values, NaN == NaN
            want, got = want.astype(np.float32), got.astype(np.float32)
        np.testing.assert_array_equal(got, want, err_msg=f"result #{index}")


class _Inputs:
    """Input arrays that hash and compare by value (a key of `_interpreted_stage`)."""

    def __init__(self, arrays: list[np.ndarray]):
        self.arrays = [np.array(x, copy=True) for x in arrays]
        self._key = tuple((str(x.dtype), x.shape, x.tobytes()) for x in self.arrays)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Inputs) and self._key == other._key


def _interpret(module, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """`@main` of `module` on `inputs`; remembered for modules fresh from `lower` (a step's "before"
    is the previous step's "after"). A module changed since `lower` made it would need `run` itself:
    the equivalence tests pass `lower`'s modules unchanged."""
    from mlc.interpreter import run

    origin = _LOWERED_FROM.get(module)
    if origin is None:
        return run(module, "main", [x.copy() for x in inputs])
    return [x.copy() for x in _interpreted_stage(*origin, _Inputs(inputs))]


@functools.lru_cache(maxsize=64)
def _interpreted_stage(module_text: str, passes: tuple[str, ...], inputs: _Inputs) -> list[np.ndarray]:
    from mlc.interpreter import run

    # No copy: the interpreter reads the module and never changes it.
    return run(_lowered(module_text, passes), "main", [x.copy() for x in inputs.arrays])


@dataclass(frozen=True)
class AttentionProgram:
    """An attention core as PyTorch exports it: matmul(Q, Kt), scale, mask, softmax, matmul(P, V)."""

    text: str
    element: str
    batch: tuple[int, ...]
    rows: int
    keys: int
    depth: int
    value_depth: int
    mask: str
    stored_keys: bool = False
    """K is the argument `%k` [..., N, D], transposed in the program (PyTorch's `k.transpose(-2, -1)`);
    otherwise `%kt` [..., D, N]."""


MASKS = ("none", "additive", "causal", "padding", "causal-where", "padding-guarded", "padding-aten-guarded")
"""No mask; an additive f32/f16 mask argument [M, N]; a causal constant (0 / -inf, upper triangle);
a boolean padding argument [batch..., 1, N] selecting -inf with `graph.where`; PyTorch's
`is_causal` as `graph.where` of a key <= query comparison of two index vectors (`graph.cmp ge` of
[M, 1] and [1, N] constants); the padding mask with the NaN guard of PyTorch's ONNX export of SDPA
(`graph.where(P != P, 0, P)`: a fully masked row gives 0, not NaN); the padding mask with core
ATen's guard of SDPA as the torch frontend imports it (`where(not(any(not(T == -inf))), 0, P)`,
logical_not a `where`, any a max over a cast)."""


def matmul_relu_program(batch: tuple[int, ...], m: int, n: int, k: int, element: str, relu: bool, attributes: str = "") -> str:
    """`matmul(%a, %b)` of (batch..., M x K) by (batch..., K x N), `attributes` (e.g.
    `{precision = "tf32"}`) on the matmul, then `relu` of it if `relu`."""
    a, b, c = (tensor_type((*batch, *shape), element) for shape in ((m, k), (k, n), (m, n)))
    stated = f" {attributes}" if attributes else ""
    body = f"%0 = graph.matmul %a, %b{stated} : ({a}, {b}) -> {c}\n"
    result = "%0"
    if relu:
        body += f"  %1 = graph.relu %0 : {c}\n"
        result = "%1"
    return f"func.func @main(%a: {a}, %b: {b}) -> {c} {{\n  {body}  func.return {result} : {c}\n}}\n"


def transposed_matmul_program(
    batch: tuple[int, ...], m: int, k: int, n: int, lhs_transposed: bool, rhs_transposed: bool, element: str, epilogue: bool
) -> str:
    """`matmul(a, b)` where `a` (M x K) and/or `b` (K x N) are `graph.transpose`s of the last two
    dimensions of the arguments `%x` (stored K x M) and `%w` (stored N x K; the torch linear's
    weight), then `relu(. + %bias)` if `epilogue`: a matmul reading transposed operands in place."""
    t = lambda *shape: tensor_type((*batch, *shape), element)  # noqa: E731
    perm = [*range(len(batch)), len(batch) + 1, len(batch)]
    stored = {"%x": (k, m) if lhs_transposed else (m, k), "%w": (n, k) if rhs_transposed else (k, n)}
    arguments = [f"{name}: {t(*shape)}" for name, shape in stored.items()]
    lines, operands = [], []
    for name, transposed, shape in (("%x", lhs_transposed, (m, k)), ("%w", rhs_transposed, (k, n))):
        if transposed:
            lines.append(f"{name}t = graph.transpose {name} perm {perm} : {t(*stored[name])} to {t(*shape)}")
        operands.append(f"{name}t" if transposed else name)
    lines.append(f"%p = graph.matmul {operands[0]}, {operands[1]} : ({t(m, k)}, {t(k, n)}) -> {t(m, n)}")
    result = "%p"
    if epilogue:
        bias = f"tensor<{n}x{element}>"
        arguments.append(f"%bias: {bias}")
        lines += [f"%s = graph.add %p, %bias : ({t(m, n)}, {bias}) -> {t(m, n)}", f"%r = graph.relu %s : {t(m, n)}"]
        result = "%r"
    body = "".join(f"  {line}\n" for line in lines)
    return f"func.func @main({', '.join(arguments)}) -> {t(m, n)} {{\n{body}  func.return {result} : {t(m, n)}\n}}\n"


def matmul_chain_program(element: str, batch: tuple[int, ...], rows: int, inner: int, hidden: int, columns: int, activation: str, bias: bool) -> str:
    """`matmul(activation(matmul(a, b) [+ bias]), c)`: a plain two-matmul chain (a two-layer MLP
    when `batch` is empty); `activation` a unary graph op (`relu`, `gelu`, ...) or `none`."""
    t = lambda *shape: tensor_type((*batch, *shape), element)  # noqa: E731
    arguments = [f"%a: {t(rows, inner)}", f"%b: {t(inner, hidden)}", f"%c: {t(hidden, columns)}"]
    lines = [f"%h = graph.matmul %a, %b : ({t(rows, inner)}, {t(inner, hidden)}) -> {t(rows, hidden)}"]
    value = "%h"
    if bias:
        arguments.append(f"%bias: tensor<{hidden}x{element}>")
        lines.append(f"%biased = graph.add %h, %bias : ({t(rows, hidden)}, tensor<{hidden}x{element}>) -> {t(rows, hidden)}")
        value = "%biased"
    if activation != "none":
        lines.append(f"%active = graph.{activation} {value} : {t(rows, hidden)}")
        value = "%active"
    lines.append(f"%o = graph.matmul {value}, %c : ({t(rows, hidden)}, {t(hidden, columns)}) -> {t(rows, columns)}")
    body = "".join(f"  {line}\n" for line in lines)
    return f"func.func @main({', '.join(arguments)}) -> {t(rows, columns)} {{\n{body}  func.return %o : {t(rows, columns)}\n}}\n"


@st.composite
def matmul_chain_programs(draw: st.DrawFn, elements: tuple[str, ...] = ("f32", "f16", "bf16")) -> str:
    """Plain two-matmul chains of random shapes (not multiples of the blocks), activations and bias."""
    element = draw(st.sampled_from(elements))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=1)))
    rows, hidden = draw(st.integers(1, 40)), draw(st.integers(1, 90))
    inner, columns = draw(st.sampled_from((8, 16, 33, 64))), draw(st.sampled_from((8, 16, 24, 64)))
    activation = draw(st.sampled_from(("none", "relu", "gelu", "tanh")))
    return matmul_chain_program(element, batch, rows, inner, hidden, columns, activation, draw(st.booleans()))


MINUS_INFINITY = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}
"""-inf as a dense literal of each float type."""


@st.composite
def attention_programs(
    draw: st.DrawFn,
    max_rows: int = 40,
    max_keys: int = 70,
    depths: tuple[int, ...] = (1, 3, 8, 16, 33, 64, 128, 256),
    elements: tuple[str, ...] = ("f32", "f16"),
) -> AttentionProgram:
    element = draw(st.sampled_from(elements))
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    rows, keys = draw(st.integers(1, max_rows)), draw(st.integers(2, max_keys))  # softmax of one key is 1
    depth, value_depth = draw(st.sampled_from(depths)), draw(st.sampled_from(depths))
    divide = draw(st.booleans())  # PyTorch's exports divide by sqrt(d); others multiply by 1/sqrt(d)
    stored_keys = draw(st.booleans())
    return attention_program(element, batch, rows, keys, depth, value_depth, draw(st.sampled_from(MASKS)), divide, stored_keys)


def _aten_guard(masked: str, element: str, batch: tuple[int, ...], rows: int, keys: int) -> list[str]:
    """`%p`: the softmax of `masked` with core ATen's guard zeroing the rows whose every score is -inf."""
    scores, flags = tensor_type((*batch, rows, keys), element), tensor_type((*batch, rows, keys), "i1")
    row_flags, row_values = tensor_type((*batch, rows, 1), "i1"), tensor_type((*batch, rows, 1), element)
    return [
        f"%unguarded = graph.softmax {masked} axis -1 : {scores}",
        f"%is_masked = graph.cmp eq, {masked}, %minus_infinity : ({scores}, tensor<{element}>) -> {flags}",
        "%false = graph.constant dense<false> : tensor<i1>",
        "%true = graph.constant dense<true> : tensor<i1>",
        f"%seen = graph.where %is_masked, %false, %true : ({flags}, tensor<i1>, tensor<i1>) -> {flags}",
        f"%seen_flag = graph.cmp ne, %seen, %false : ({flags}, tensor<i1>) -> {flags}",
        f"%seen_value = graph.cast %seen_flag : {flags} to {scores}",
        f"%any_value = graph.reduce_max %seen_value axes [{len(batch) + 1}] keepdims true : {scores} to {row_values}",
        f"%zero = graph.constant dense<0.0> : tensor<{element}>",
        f"%any = graph.cmp ne, %any_value, %zero : ({row_values}, tensor<{element}>) -> {row_flags}",
        f"%fully_masked = graph.where %any, %false, %true : ({row_flags}, tensor<i1>, tensor<i1>) -> {row_flags}",
        f"%p = graph.where %fully_masked, %zero, %unguarded : ({row_flags}, tensor<{element}>, {scores}) -> {scores}",
    ]


def attention_program(
    element: str, batch: tuple[int, ...], rows: int, keys: int, depth: int, value_depth: int, mask: str, divide: bool,
    stored_keys: bool = False,
) -> AttentionProgram:
    """One attention core (see `AttentionProgram`, `MASKS`)."""
    t = lambda *shape: tensor_type((*batch, *shape), element)  # noqa: E731
    scores = t(rows, keys)
    arguments = [f"%q: {t(rows, depth)}", f"%k: {t(keys, depth)}" if stored_keys else f"%kt: {t(depth, keys)}", f"%v: {t(keys, value_depth)}"]
    scale = 1.0 / np.sqrt(depth)
    swap = [*range(len(batch)), len(batch) + 1, len(batch)]
    lines = [f"%kt = graph.transpose %k perm {swap} : {t(keys, depth)} to {t(depth, keys)}"] if stored_keys else []
    lines += [
        f"%s = graph.matmul %q, %kt : ({t(rows, depth)}, {t(depth, keys)}) -> {scores}",
        f"%scale = graph.constant dense<{np.sqrt(depth) if divide else scale}> : tensor<{element}>",
    ]
    lines.append(f"%scaled = graph.{'div' if divide else 'mul'} %s, %scale : ({scores}, tensor<{element}>) -> {scores}")
    masked = "%scaled"
    if mask == "additive":
        arguments.append(f"%mask: {tensor_type((rows, keys), element)}")
        lines.append(f"%masked = graph.add %scaled, %mask : ({scores}, {tensor_type((rows, keys), element)}) -> {scores}")
        masked = "%masked"
    elif mask == "causal":
        causal = np.where(np.arange(keys)[None, :] > np.arange(rows)[:, None], -np.inf, 0.0)
        body = ", ".join("[" + ", ".join(MINUS_INFINITY[element] if c else "0.0" for c in row) + "]" for row in causal)
        lines.append(f"%causal = graph.constant dense<[{body}]> : {tensor_type((rows, keys), element)}")
        lines.append(f"%masked = graph.add %scaled, %causal : ({scores}, {tensor_type((rows, keys), element)}) -> {scores}")
        masked = "%masked"
    elif mask == "causal-where":
        lines.append(f"%queries = graph.constant dense<[{', '.join(f'[{r}]' for r in range(rows))}]> : tensor<{rows}x1xi32>")
        lines.append(f"%keys = graph.constant dense<[[{', '.join(map(str, range(keys)))}]]> : tensor<1x{keys}xi32>")
        allowed = tensor_type((rows, keys), "i1")
        lines.append(f"%allowed = graph.cmp ge, %queries, %keys : (tensor<{rows}x1xi32>, tensor<1x{keys}xi32>) -> {allowed}")
        lines.append(f"%minus_infinity = graph.constant dense<{MINUS_INFINITY[element]}> : tensor<{element}>")
        lines.append(f"%masked = graph.where %allowed, %scaled, %minus_infinity : ({allowed}, {scores}, tensor<{element}>) -> {scores}")
        masked = "%masked"
    elif mask in ("padding", "padding-guarded", "padding-aten-guarded"):
        keep = tensor_type((*batch, 1, keys), "i1")
        arguments.append(f"%keep: {keep}")
        lines.append(f"%minus_infinity = graph.constant dense<{MINUS_INFINITY[element]}> : tensor<{element}>")
        lines.append(f"%masked = graph.where %keep, %scaled, %minus_infinity : ({keep}, {scores}, tensor<{element}>) -> {scores}")
        masked = "%masked"
    if mask == "padding-guarded":  # ONNX's Where(IsNaN(P), 0, P)
        lines.append(f"%unguarded = graph.softmax {masked} axis -1 : {scores}")
        nan = tensor_type((*batch, rows, keys), "i1")
        lines.append(f"%nan = graph.cmp ne, %unguarded, %unguarded : ({scores}, {scores}) -> {nan}")
        lines.append(f"%zero = graph.constant dense<0.0> : tensor<{element}>")
        lines.append(f"%p = graph.where %nan, %zero, %unguarded : ({nan}, tensor<{element}>, {scores}) -> {scores}")
    elif mask == "padding-aten-guarded":
        lines += _aten_guard(masked, element, batch, rows, keys)
    else:
        lines.append(f"%p = graph.softmax {masked} axis -1 : {scores}")
    lines.append(f"%o = graph.matmul %p, %v : ({scores}, {t(keys, value_depth)}) -> {t(rows, value_depth)}")
    text = (
        f"func.func @main({', '.join(arguments)}) -> {t(rows, value_depth)} {{\n"
        + "".join(f"  {line}\n" for line in lines)
        + f"  func.return %o : {t(rows, value_depth)}\n}}\n"
    )
    return AttentionProgram(text, element, batch, rows, keys, depth, value_depth, mask, stored_keys)


def head_split_attention_program(
    element: str, sequence: int, batch: int, heads: int, depth: int, batch_first: bool, merge_heads: bool = False,
) -> str:
    """Multi-head self-attention after its in-projection, as PyTorch's slow path writes it: the
    projection `%p` [S*B, 3E] (`batch_first`: [B*S, 3E]) viewed as (S, B, 3H, d), q, k and v
    sliced from it and transposed to [B, H, S, d] (K to Kt [B, H, d, S]), scaled scores, softmax,
    O = P @ V [B, H, S, d]; with `merge_heads`, O transposed back to (S, B, H, d) and reshaped to
    [S*B, E] (the out-projection's operand)."""
    outer = (batch, sequence) if batch_first else (sequence, batch)
    width = 3 * heads * depth
    split = tensor_type((*outer, 3 * heads, depth), element)
    third = tensor_type((*outer, heads, depth), element)
    heads_first = tensor_type((batch, heads, sequence, depth), element)
    keys_transposed = tensor_type((batch, heads, depth, sequence), element)
    scores = tensor_type((batch, heads, sequence, sequence), element)
    order, key_order = ([0, 2, 1, 3], [0, 2, 3, 1]) if batch_first else ([1, 2, 0, 3], [1, 2, 3, 0])
    lines = [f"%split = graph.reshape %p : {tensor_type((sequence * batch, width), element)} to {split}"]
    for index, name in enumerate("qkv"):
        ends = [*outer, (index + 1) * heads, depth]
        lines.append(f"%{name}_part = graph.slice %split starts [0, 0, {index * heads}, 0] ends {ends} steps [1, 1, 1, 1] : {split} to {third}")
        perm, result = (key_order, keys_transposed) if name == "k" else (order, heads_first)
        lines.append(f"%{name} = graph.transpose %{name}_part perm {perm} : {third} to {result}")
    lines += [
        f"%s = graph.matmul %q, %k : ({heads_first}, {keys_transposed}) -> {scores}",
        f"%scale = graph.constant dense<{1.0 / np.sqrt(depth)}> : tensor<{element}>",
        f"%scaled = graph.mul %s, %scale : ({scores}, tensor<{element}>) -> {scores}",
        f"%probabilities = graph.softmax %scaled axis -1 : {scores}",
        f"%o = graph.matmul %probabilities, %v : ({scores}, {heads_first}) -> {heads_first}",
    ]
    result, result_type = "%o", heads_first
    if merge_heads:
        merged = tensor_type((sequence * batch, heads * depth), element)
        lines.append(f"%o_rows = graph.transpose %o perm {[0, 2, 1, 3] if batch_first else [2, 0, 1, 3]} : {heads_first} to {third}")
        lines.append(f"%merged = graph.reshape %o_rows : {third} to {merged}")
        result, result_type = "%merged", merged
    return (
        f"func.func @main(%p: {tensor_type((sequence * batch, width), element)}) -> {result_type} {{\n"
        + "".join(f"  {line}\n" for line in lines)
        + f"  func.return {result} : {result_type}\n}}\n"
    )


# A two-stage ring of async copies in an mlc_gpu kernel (test_async_copy.py, gpu-insert-barriers'
# tests): {wait}, {barrier_after_wait}, {early_read} and {barrier_after_read} are pieces to fill.
ASYNC_RING = """
mlc_gpu.func @ring(%a: memref<64x64xf16>, %out: memref<64x64xf16>) grid [1, 1, 1] block [64, 1, 1] {{
  %t = mlc_gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %stages = memref.alloca() : memref<2x64x8xf16, 3 : i64>
  %other = arith.subi %c63, %t : index
  %true = arith.constant true
  loop.async_copy %a[%t, %c0] to %stages[%c0, %t, %c0], 8 if %true : memref<64x64xf16> to memref<2x64x8xf16, 3 : i64>
  loop.async_commit
  scf.for %k = %c0 to %c8 step %c1 {{
    %stage = arith.remui %k, %c2 : index
    %next = arith.addi %k, %c1 : index
    %next_stage = arith.remui %next, %c2 : index
    %more = arith.cmpi ult, %next, %c8 : index
    %column = arith.muli %next, %c8 : index
    {wait}
    {barrier_after_wait}
    loop.async_copy %a[%t, %column] to %stages[%next_stage, %t, %c0], 8 if %more : memref<64x64xf16> to memref<2x64x8xf16, 3 : i64>
    loop.async_commit
    {early_read}
    %row = vector.load %stages[%stage, %other, %c0] : memref<2x64x8xf16, 3 : i64>, vector<8xf16>
    %here = arith.muli %k, %c8 : index
    vector.store %row, %out[%other, %here] : memref<64x64xf16>, vector<8xf16>
    {barrier_after_read}
  }}
  loop.async_wait 0
  mlc_gpu.return
}}
"""


# A two-stage ring of bulk tensor copies completing on mbarriers (test_tma.py: its protocol on the
# interpreter; test_tma_nvvm.py: its PTX). `{count}` arrivals per phase, `{bytes}` announced per
# box, `{wait}` the wait before the reads, `{barrier_after_read}` the barrier before the next copy.
TMA_RING = """
mlc_gpu.func @ring(%a: memref<48x256xf16>, %out: memref<64x256xf16>) grid [1, 1, 1] block [64, 1, 1] {{
  %t = mlc_gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %bars = memref.alloca() : memref<2xi64, 3 : i64>
  %stages = memref.alloca() : memref<2x64x64xf16, 3 : i64>
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {{
    loop.mbarrier_init %bars[%c0], {count} : memref<2xi64, 3 : i64>
    loop.mbarrier_init %bars[%c1], {count} : memref<2xi64, 3 : i64>
    loop.mbarrier_arrive %bars[%c0] expect_tx {bytes} : memref<2xi64, 3 : i64>
    loop.tma_load %a[%c0, %c0] to %stages[%c0, %c0, %c0], %bars[%c0] : memref<48x256xf16> to memref<2x64x64xf16, 3 : i64>, memref<2xi64, 3 : i64>
  }}
  mlc_gpu.barrier
  scf.for %k = %c0 to %c4 step %c1 {{
    %stage = arith.remui %k, %c2 : index
    %next = arith.addi %k, %c1 : index
    %next_stage = arith.remui %next, %c2 : index
    %more = arith.cmpi ult, %next, %c4 : index
    %issue = arith.andi %first, %more : i1
    scf.if %issue {{
      %column = arith.muli %next, %c64 : index
      loop.mbarrier_arrive %bars[%next_stage] expect_tx {bytes} : memref<2xi64, 3 : i64>
      loop.tma_load %a[%c0, %column] to %stages[%next_stage, %c0, %c0], %bars[%next_stage] : memref<48x256xf16> to memref<2x64x64xf16, 3 : i64>, memref<2xi64, 3 : i64>
    }}
    %use = arith.divui %k, %c2 : index
    %parity = arith.remui %use, %c2 : index
    {wait}
    %row = vector.load %stages[%stage, %t, %c0] : memref<2x64x64xf16, 3 : i64>, vector<64xf16>
    %here = arith.muli %k, %c64 : index
    vector.store %row, %out[%t, %here] : memref<64x256xf16>, vector<64xf16>
    {barrier_after_read}
  }}
  mlc_gpu.return
}}
"""


WARP_SPECIALIZED_RING = """
mlc_gpu.func @ring(%a: memref<48x256xf16>, %out: memref<2x128x256xf16>) grid [2, 1, 1] block [256, 1, 1] attributes {{mlc.min_blocks_per_multiprocessor = 1 : i64}} {{
  %t = mlc_gpu.thread_id x
  %block = mlc_gpu.block_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c64 = arith.constant 64 : index
  %full = memref.alloca() : memref<2xi64, 3 : i64>
  %empty = memref.alloca() : memref<2xi64, 3 : i64>
  %stages = memref.alloca() : memref<2x128x64xf16, 3 : i64>
  %first = arith.cmpi eq, %t, %c0 : index
  scf.if %first {{
    loop.mbarrier_init %full[%c0], 1 : memref<2xi64, 3 : i64>
    loop.mbarrier_init %full[%c1], 1 : memref<2xi64, 3 : i64>
    loop.mbarrier_init %empty[%c0], {consumers} : memref<2xi64, 3 : i64>
    loop.mbarrier_init %empty[%c1], {consumers} : memref<2xi64, 3 : i64>
  }}
  mlc_gpu.barrier
  %producer = arith.cmpi ult, %t, %c128 : index
  scf.if %producer {{
    scf.if %first {{
      scf.for %k = %c0 to %c4 step %c1 {{
        %stage = arith.remui %k, %c2 : index
        %use = arith.divui %k, %c2 : index
        %released = arith.addi %use, %c1 : index
        %parity = arith.remui %released, %c2 : index
        {producer_wait}
        %column = arith.muli %k, %c64 : index
        loop.mbarrier_arrive %full[%stage] expect_tx 16384 : memref<2xi64, 3 : i64>
        loop.tma_load %a[%c0, %column] to %stages[%stage, %c0, %c0], %full[%stage] : memref<48x256xf16> to memref<2x128x64xf16, 3 : i64>, memref<2xi64, 3 : i64>
      }}
    }}
  }} else {{
    %row = arith.subi %t, %c128 : index
    scf.for %k = %c0 to %c4 step %c1 {{
      %stage = arith.remui %k, %c2 : index
      %use = arith.divui %k, %c2 : index
      %parity = arith.remui %use, %c2 : index
      {consumer_wait}
      {early_release}
      %values = vector.load %stages[%stage, %row, %c0] : memref<2x128x64xf16, 3 : i64>, vector<64xf16>
      %column = arith.muli %k, %c64 : index
      vector.store %values, %out[%block, %row, %column] : memref<2x128x256xf16>, vector<64xf16>
      {release}
    }}
  }} {{mlc.warp_roles = array<i64: 40, 232>}}
  mlc_gpu.return
}}
"""
"""A warp-specialized two-stage ring (`interpreter/test_warp_roles.py`, `lit/pipelines/warp-roles.mlir`):
in each of 2 blocks, warpgroup 0 is the producer (thread 0 waits on a stage's *empty* mbarrier,
announces 16 KiB on its *full* one and copies the next 128x64 box of a 48x256 f16 matrix: rows
48.. are zeros), warpgroup 1 consumes (wait on *full*, copy its row out, arrive on *empty*). No `mlc_gpu.barrier` in the loops: only mbarriers order
them. The placeholders break the protocol in the variants."""

WARP_SPECIALIZED_LOOP_RING = """
loop.kernel @ring(%a: memref<48x256xf16>, %out: memref<2x128x256xf16>) {{
  loop.parallel %block < 2 mapping block.x {{
    %full = memref.alloca() : memref<2xi64, 3 : i64>
    %empty = memref.alloca() : memref<2xi64, 3 : i64>
    %stages = memref.alloca() : memref<2x128x64xf16, 3 : i64>
    loop.parallel %t < 256 mapping thread.x {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c128 = arith.constant 128 : index
      %c64 = arith.constant 64 : index
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {{
        loop.mbarrier_init %full[%c0], 1 : memref<2xi64, 3 : i64>
        loop.mbarrier_init %full[%c1], 1 : memref<2xi64, 3 : i64>
        loop.mbarrier_init %empty[%c0], 128 : memref<2xi64, 3 : i64>
        loop.mbarrier_init %empty[%c1], 128 : memref<2xi64, 3 : i64>
      }}
      %producer = arith.cmpi ult, %t, %c128 : index
      scf.if %producer {{
        scf.if %first {{
          scf.for %k = %c0 to %c4 step %c1 {{
            %stage = arith.remui %k, %c2 : index
            %use = arith.divui %k, %c2 : index
            %released = arith.addi %use, %c1 : index
            %parity = arith.remui %released, %c2 : index
            {producer_wait}
            %column = arith.muli %k, %c64 : index
            loop.mbarrier_arrive %full[%stage] expect_tx 16384 : memref<2xi64, 3 : i64>
            loop.tma_load %a[%c0, %column] to %stages[%stage, %c0, %c0], %full[%stage] : memref<48x256xf16> to memref<2x128x64xf16, 3 : i64>, memref<2xi64, 3 : i64>
          }}
        }}
      }} else {{
        %row = arith.subi %t, %c128 : index
        scf.for %k = %c0 to %c4 step %c1 {{
          %stage = arith.remui %k, %c2 : index
          %use = arith.divui %k, %c2 : index
          %parity = arith.remui %use, %c2 : index
          {consumer_wait}
          %values = vector.load %stages[%stage, %row, %c0] : memref<2x128x64xf16, 3 : i64>, vector<64xf16>
          %column = arith.muli %k, %c64 : index
          vector.store %values, %out[%block, %row, %column] : memref<2x128x256xf16>, vector<64xf16>
          {release}
        }}
      }} {{mlc.warp_roles = array<i64: 40, 232>}}
    }}
  }}
  loop.return
}}
"""
"""`WARP_SPECIALIZED_RING` as a loop kernel (the level where `loop-promote-shared` builds it)."""
