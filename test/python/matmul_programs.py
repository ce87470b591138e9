"""Random graph programs around one `graph.matmul`, for the Hypothesis equivalence tests.

`matmul_programs()` draws `@main(%a, %b, ...)`: an f32, f16 or bf16 matmul of odd sizes (1, 3, 17; K
also 5), sometimes batched (batch dimensions broadcast on either side, or a batch of
one), sometimes after an elementwise producer on `a` (relu, neg, a cast round trip), and sometimes
with an elementwise epilogue: a bias add over the columns, a relu, the add of a residual of the
result's shape. It returns the last value, and sometimes the raw product too. Inputs come from
`programs.random_inputs`.
"""

from __future__ import annotations

from hypothesis import strategies as st

from programs import Program, Value, tensor_type

SIZES = (1, 3, 17)
DEPTHS = (1, 5, 17)
BATCHES = (((), ()), ((), ()), ((2,), ()), ((), (3,)), ((2,), (2,)), ((2, 1), (3,)), ((1,), (1,)), ((1, 3), (2, 1, 1)))
"""(a's, b's) batch dimensions: none, on one side, both, broadcast both ways, a batch of one."""


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    return tuple(max(x, y) for x, y in zip(a, b))


@st.composite
def matmul_programs(draw: st.DrawFn) -> str:
    element = draw(st.sampled_from(("f32", "f16", "bf16")))
    rows, columns, depth = draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES)), draw(st.sampled_from(DEPTHS))
    a_batch, b_batch = draw(st.sampled_from(BATCHES))
    program = Program((*_broadcast(a_batch, b_batch), rows, columns))
    a = Value("%a", (*a_batch, rows, depth), element)
    b = Value("%b", (*b_batch, depth, columns), element)
    program.arguments += [a, b]
    program.values += [a, b]
    left = _producer(draw, program, a)
    out = (*_broadcast(a_batch, b_batch), rows, columns)
    product = program.fresh(out, element)
    types = f"({tensor_type(left.shape, element)}, {tensor_type(b.shape, element)}) -> {tensor_type(out, element)}"
    program.emit(f"graph.matmul {left.name}, {b.name} : {types}", product)
    last = product
    for _ in range(draw(st.integers(0, 2))):
        last = _epilogue(draw, program, last)
    returned = [last] + ([product] if last is not product and draw(st.booleans()) else [])
    return program.text(returned)


def _producer(draw: st.DrawFn, program: Program, a: Value) -> Value:
    kind = draw(st.sampled_from(("none", "none", "relu", "neg", "cast")))
    if kind == "none":
        return a
    shape, element = a.shape, a.element
    if kind == "cast":
        other = "f16" if element == "f32" else "f32"
        wide = program.emit(f"graph.cast {a.name} : {tensor_type(shape, element)} to {tensor_type(shape, other)}", program.fresh(shape, other))
        return program.emit(f"graph.cast {wide.name} : {tensor_type(shape, other)} to {tensor_type(shape, element)}", program.fresh(shape, element))
    return program.emit(f"graph.{kind} {a.name} : {tensor_type(shape, element)}", program.fresh(shape, element))


def _epilogue(draw: st.DrawFn, program: Program, value: Value) -> Value:
    shape, element = value.shape, value.element
    kind = draw(st.sampled_from(("bias", "relu", "residual")))
    if kind == "relu":
        return program.emit(f"graph.relu {value.name} : {tensor_type(shape, element)}", program.fresh(shape, element))
    other = Value(f"%{kind}{len(program.arguments)}", shape[-1:] if kind == "bias" else shape, element)
    program.arguments.append(other)
    types = f"({tensor_type(shape, element)}, {tensor_type(other.shape, element)}) -> {tensor_type(shape, element)}"
    return program.emit(f"graph.add {value.name}, {other.name} : {types}", program.fresh(shape, element))
