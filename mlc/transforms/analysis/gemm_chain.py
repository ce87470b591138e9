"""GEMM chains: recognising attention in graph IR, and Chimera's data-movement model for it.

Pattern (`match_attention`). Attention is `matmul(softmax(f(matmul(Q, Kt))), V)`:

    S  = graph.matmul Q [..., M, D], Kt [..., D, N]       (Kt: K transposed, by whatever op; a
                                transpose swapping the last two axes of a stored K [..., N, D]
                                that only S reads joins the chain, `key_transpose`: the kernel
                                reads K in place)
    T  = f(S, side inputs)      elementwise ops over S's shape: the 1/sqrt(d) scale (mul or div by
                                a constant), an additive mask (padding, causal; broadcast), casts
    P  = softmax(T) over the last axis: `graph.softmax`, or its decomposition as graph-decompose
                                writes it (`e = exp(T - reduce_max T)`, `e * reciprocal(reduce_sum e)`
                                or `e / reduce_sum e`), with f32 casts around it for f16
    O  = graph.matmul P (or cast P), V [..., N, Dv]      P possibly guarded, see below

with Q, Kt, V and O of one batch shape (batch x heads, not broadcast), f32, f16 or bf16, head dims
D, Dv <= `MAX_HEAD_DIM`, and every intermediate used only inside the chain (a score matrix needed
elsewhere must be written to memory anyway). Side inputs must not depend on S.

The NaN guard of PyTorch's ONNX export of SDPA (opset 17: `Where(IsNaN(P), 0, P)`, imported as
`graph.where(graph.cmp ne P, P; 0; P)`) may stand between P and the last matmul: it zeroes the
probabilities of a row whose softmax is NaN. It becomes part of the chain (`masked_rows =
"zero"`) and the kernel writes 0 for such rows. Exact, derived: in the unfused program a NaN in a
row of P makes the whole row NaN (the row's sum is NaN, every element times its reciprocal), and
that happens exactly when the row's scores are all -inf (-inf - -inf) or one is NaN or +inf; the
online softmax's running sum is then 0 (all -inf: every term exp(-inf) = 0, while any finite
score puts a term exp(0) = 1 in) or NaN (maximumf propagates NaN; exp(+inf - +inf) is NaN), so
"sum is 0 or unordered" selects the same rows. The zeroed row's output, 0 @ V, is 0 for finite V
(an infinite V would give NaN in the unfused program, 0 in the kernel).

Core ATen's SDPA (torch.compile) guards the same rows another way: `where(not(any(not(T ==
-inf))), 0, P)` over the last axis (logical_not as `where(x, false, true)`, any as `max(float(x !=
false)) != 0`), T the softmax's input (`masked_rows = "zero-masked"`). Its rows are exactly those
whose running sum is 0 (all -inf); a NaN or +inf score leaves both the guard and the kernel's NaN.

A side input that is a causal mask (`causal_mask.py`) is recorded in `AttentionChain.causal`, its
ops (constants, the comparison) part of the chain; the kernel computes it from positions and
skips the key blocks past the diagonal, and the model counts only the key blocks it visits
(`visited_keys`: K and V bytes and the fused kernel's products).

The cost model that decides whether a matched chain is fused, and with which blocks, is
`attention_cost.py`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, TensorType, i1
from xdsl.ir import Operation, SSAValue

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.causal_mask import CausalMask, causal_mask
from mlc.transforms.analysis.fusion_groups import shape_of
from mlc.transforms.analysis.strided_views import transpose_permutation
from mlc.transforms.lowering.elementwise_expansion import splat_constant_value

MAX_HEAD_DIM = 256
FAST_MATH_KEY = "fast_math"
"""The chain plan's optional entry (a unit attribute, graph-fuse's `fast-math`): the chain's kernel
may compute its scores in f32 without the graph's per-op roundings and use `exp2`."""
PRODUCTS_KEY = "products"
"""The chain plan's optional entry naming the tensor-core kernel's products: "wgmma" (warpgroup
products where the target has them, `chain_wgmma.py`; `wgmma_chain_fits`), absent for mma.sync."""
SCORE_ELEMENTWISE = (*graph.ELEMENTWISE_OPS, graph.BroadcastOp)


def _element(value: SSAValue):
    assert isinstance(value.type, TensorType)
    return value.type.element_type


@dataclass(frozen=True)
class AttentionChain:
    """The ops of one attention chain, in program order, and its roles."""

    scores: graph.MatmulOp
    output: graph.MatmulOp
    score_ops: tuple[Operation, ...]
    """The elementwise ops from S to the softmax's input (scale, mask, casts)."""
    softmax_ops: tuple[Operation, ...]
    side_inputs: tuple[SSAValue, ...]
    """Values the score ops read besides S (masks, scales), in first-use order."""
    causal: CausalMask | None = None
    """A side input that is a causal mask (`causal_mask.py`): computed from positions in the
    kernel, its ops part of the chain, the key blocks past the diagonal skipped."""
    kind: str = "attention"
    """`attention`, or `matmul` for a plain chain `matmul(f(matmul(A, B)), C)` (no softmax:
    `softmax_ops` empty, `score_ops` the elementwise f; `match_matmul_chain`)."""
    masked_rows: str = "nan"
    """What a row whose probabilities are NaN gives: `nan` (0/0, as the unfused softmax); `zero`
    (ONNX's NaN guard: 0 where the row's sum is 0 or NaN); `zero-masked` (core ATen's guard: 0
    where every score is -inf, the sum 0). The guard's ops are in `softmax_ops`."""
    key_transpose: graph.TransposeOp | None = None
    """Kt's `graph.transpose` swapping the last two axes of a stored K [..., N, D], when only the
    chain reads it: part of the chain, the kernel reads K's blocks in place (`keys`)."""

    @property
    def keys(self) -> SSAValue:
        """The keys as the kernel reads them: K [..., N, D] under `key_transpose`, else Kt [..., D, N]."""
        return self.key_transpose.x if self.key_transpose is not None else self.scores.b

    @property
    def ops(self) -> tuple[Operation, ...]:
        members = {self.scores, self.output, *self.score_ops, *self.softmax_ops, *(self.causal.ops if self.causal else ())}
        members |= {self.key_transpose} if self.key_transpose is not None else set()
        block = self.output.parent_block()
        assert block is not None
        return tuple(op for op in block.ops if op in members)

    @property
    def softmax_input(self) -> SSAValue:
        return self.score_ops[-1].results[0] if self.score_ops else self.scores.result

    @property
    def dims(self) -> tuple[int, int, int, int, int]:
        """(batch, M, N, D, Dv): batch the product of the batch dimensions."""
        *batch, rows, depth = shape_of(self.scores.a)
        keys = shape_of(self.scores.b)[-1]
        return math.prod(batch), rows, keys, depth, shape_of(self.output.b)[-1]


def _single_use(value: SSAValue, members: set[Operation]) -> bool:
    return bool(value.uses) and all(use.operation in members for use in value.uses)


def _producer(value: SSAValue, kind: type[Operation] | tuple[type[Operation], ...]) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, kind) else None


def _last_axis_reduction(value: SSAValue, kind: type[graph.ReductionOp]) -> graph.ReductionOp | None:
    op = _producer(value, kind)
    if op is None:
        return None
    assert isinstance(op, graph.ReductionOp)
    rank = len(shape_of(op.x))
    return op if op.keeps_dims() and tuple(op.normalized_axes()) == (rank - 1,) else None


def _skip_casts(value: SSAValue, ops: list[Operation]) -> SSAValue:
    while isinstance(value.owner, graph.CastOp):
        ops.append(value.owner)
        value = value.owner.x
    return value


def _softmax_of(probabilities: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """The input of the softmax computing `probabilities`, and the softmax's ops; None if none."""
    ops: list[Operation] = []
    value = _skip_casts(probabilities, ops)
    softmax = _producer(value, graph.SoftmaxOp)
    if softmax is not None:
        assert isinstance(softmax, graph.SoftmaxOp)
        if softmax.normalized_axis() != len(shape_of(softmax.x)) - 1:
            return None
        ops.append(softmax)
        return _skip_casts(softmax.x, ops), ops
    quotient = value.owner
    if isinstance(quotient, graph.DivOp):
        exponentials, total = quotient.lhs, quotient.rhs
        ops.append(quotient)
    elif isinstance(quotient, graph.MulOp):
        for exponentials, inverse in ((quotient.lhs, quotient.rhs), (quotient.rhs, quotient.lhs)):
            reciprocal = _producer(inverse, graph.ReciprocalOp)
            if reciprocal is not None:
                break
        else:
            return None
        total = reciprocal.x  # type: ignore[attr-defined]
        ops += [quotient, reciprocal]
    else:
        return None
    total_op = _last_axis_reduction(total, graph.ReduceSumOp)
    exp = _producer(exponentials, graph.ExpOp)
    if total_op is None or exp is None or total_op.x is not exponentials:
        return None
    shifted = _producer(exp.x, graph.SubOp)  # type: ignore[attr-defined]
    if shifted is None:
        return None
    maximum = _last_axis_reduction(shifted.rhs, graph.ReduceMaxOp)  # type: ignore[attr-defined]
    if maximum is None or maximum.x is not shifted.lhs:  # type: ignore[attr-defined]
        return None
    ops += [total_op, exp, shifted, maximum]
    return _skip_casts(maximum.x, ops), ops


def _nan_guard(probabilities: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """P and the guard's ops (casts after it included) if `probabilities` is `where(P != P, 0, P)`
    (`cmp ne` is IsNaN: NaN compares unequal to itself), else None."""
    ops: list[Operation] = []
    where = _producer(_skip_casts(probabilities, ops), graph.WhereOp)
    if where is None:
        return None
    assert isinstance(where, graph.WhereOp)
    guarded, test = where.false_value, where.condition.owner
    if not isinstance(test, graph.CmpOp) or test.predicate.data != "ne" or not (test.lhs is guarded and test.rhs is guarded):
        return None
    zero = where.true_value.owner
    if not isinstance(zero, graph.ConstantOp) or splat_constant_value(zero) != 0 or shape_of(where.result) != shape_of(guarded):
        return None
    return guarded, [*ops, where, test]


def _splat(value: SSAValue) -> float | int | None:
    owner = value.owner
    return splat_constant_value(owner) if isinstance(owner, graph.ConstantOp) else None


def _negation(value: SSAValue, ops: list[Operation]) -> SSAValue | None:
    """x if `value` is `where(x, false, true)` (logical_not as the torch frontend writes it)."""
    where = _producer(value, graph.WhereOp)
    if where is None or _splat(where.true_value) != 0 or _splat(where.false_value) != 1:  # type: ignore[attr-defined]
        return None
    ops.append(where)
    return where.condition  # type: ignore[attr-defined]


def _last_axis_any(value: SSAValue, ops: list[Operation]) -> SSAValue | None:
    """x if `value` is any(x) over the last axis, kept (`aten.any`: `max(float(x != false)) != 0`,
    with any casts around the max: of values 0 and 1, exact)."""
    test = _producer(value, graph.CmpOp)
    if test is None or test.predicate.data != "ne" or _splat(test.rhs) != 0:  # type: ignore[attr-defined]
        return None
    ops.append(test)
    maximum = _last_axis_reduction(_skip_casts(test.lhs, ops), graph.ReduceMaxOp)  # type: ignore[attr-defined]
    if maximum is None:
        return None
    ops.append(maximum)
    operand = _skip_casts(maximum.x, ops)
    if not isinstance(operand.type, TensorType) or operand.type.element_type != i1:
        return None
    boolean = _producer(operand, graph.CmpOp)
    if boolean is not None and boolean.predicate.data == "ne" and _splat(boolean.rhs) == 0:  # type: ignore[attr-defined]
        ops.append(boolean)
        operand = boolean.lhs  # type: ignore[attr-defined]
    return operand


def _masked_row_guard(probabilities: SSAValue) -> tuple[SSAValue, SSAValue, list[Operation]] | None:
    """P, the softmax input T it tests and the guard's ops if `probabilities` is core ATen's guard
    of SDPA, `where(not(any(not(T == -inf))), 0, P)` (rows of P whose every score is -inf zeroed),
    else None."""
    ops: list[Operation] = []
    where = _producer(_skip_casts(probabilities, ops), graph.WhereOp)
    if where is None or _splat(where.true_value) != 0:  # type: ignore[attr-defined]
        return None
    ops.append(where)
    fully_masked = _negation(where.condition, ops)  # type: ignore[attr-defined]
    seen = None if fully_masked is None else _last_axis_any(fully_masked, ops)
    unmasked = None if seen is None else _negation(seen, ops)
    test = None if unmasked is None else _producer(unmasked, graph.CmpOp)
    if test is None or test.predicate.data != "eq":  # type: ignore[attr-defined]
        return None
    scores = [v for v in test.operands if _splat(v) != -math.inf]
    if len(scores) != 1 or len(test.operands) != 2:
        return None
    return where.false_value, scores[0], [*ops, test]  # type: ignore[attr-defined]


def upstream_ops(op: Operation) -> set[Operation]:
    """The ops `op` depends on, directly or not."""
    found: set[Operation] = set()
    worklist = [operand.owner for operand in op.operands]
    while worklist:
        producer = worklist.pop()
        if isinstance(producer, Operation) and producer not in found:
            found.add(producer)
            worklist += [operand.owner for operand in producer.operands]
    return found


def _reaches_matmul(value: SSAValue) -> bool:
    owner = value.owner
    if isinstance(owner, graph.MatmulOp):
        return True
    return isinstance(owner, SCORE_ELEMENTWISE) and any(isinstance(op, graph.MatmulOp) for op in upstream_ops(owner))


def _score_ops(scores: SSAValue) -> tuple[graph.MatmulOp, list[Operation], list[SSAValue]] | None:
    """Walks back from the softmax's input through elementwise ops to the one matmul S."""
    ops: list[Operation] = []
    side: list[SSAValue] = []
    value = scores
    while not isinstance(value.owner, graph.MatmulOp):
        op = value.owner
        if not isinstance(op, SCORE_ELEMENTWISE) or len(op.results) != 1:
            return None
        ops.append(op)
        candidates = [v for v in op.operands if shape_of(v) == shape_of(scores) and _reaches_matmul(v)]
        if not candidates:
            return None
        value = candidates[0]
        side += [v for v in op.operands if v is not value]
    matmul = value.owner
    assert isinstance(matmul, graph.MatmulOp)
    if any(isinstance(v.owner, Operation) and matmul in (upstream_ops(v.owner) | {v.owner}) for v in side):
        return None
    return matmul, ops[::-1], list(dict.fromkeys(side))


def match_attention(output: Operation) -> AttentionChain | None:
    """The attention chain ending at the matmul `output` (see the module docstring), or None."""
    if not isinstance(output, graph.MatmulOp):
        return None
    guard, tested = _nan_guard(output.a), None
    probabilities, guard_ops = guard if guard is not None else (output.a, [])
    masked_rows = "zero" if guard is not None else "nan"
    row_guard = _masked_row_guard(output.a)
    if row_guard is not None:
        probabilities, tested, guard_ops = row_guard
        masked_rows = "zero-masked"
    softmax = _softmax_of(probabilities)
    if softmax is None:
        return None
    softmax_input, softmax_ops = softmax
    if tested is not None and tested is not softmax_input:
        return None
    found = _score_ops(softmax_input)
    if found is None:
        return None
    scores, score_ops, side = found
    chain = AttentionChain(scores, output, tuple(score_ops), (*guard_ops, *softmax_ops), tuple(side), masked_rows=masked_rows)
    if not _supported(chain):
        return None
    causal = _causal(chain)
    return dataclasses.replace(chain, causal=causal, key_transpose=_key_transpose(scores))


def is_last_axes_swap(op: Operation) -> bool:
    """Whether `op` is a `graph.transpose` swapping its last two axes only."""
    perm = transpose_permutation(op)
    return perm is not None and len(perm) >= 2 and perm == (*range(len(perm) - 2), len(perm) - 1, len(perm) - 2)


def _key_transpose(scores: graph.MatmulOp) -> graph.TransposeOp | None:
    """Kt's transpose of a stored K when it swaps the last two axes and only the product reads it."""
    owner = scores.b.owner
    if isinstance(owner, graph.TransposeOp) and is_last_axes_swap(owner) and _single_use(scores.b, {scores}):
        return owner
    return None


def matmuls_outside_attention(root: Operation) -> list[graph.MatmulOp]:
    """The matmuls under `root` that are not the score or output product of an attention chain
    (`match_attention`: graph-fuse makes one kernel of those, which reads them as they are)."""
    matmuls = [op for op in root.walk() if isinstance(op, graph.MatmulOp)]
    in_chains = {member for matmul in matmuls if (chain := match_attention(matmul)) for member in (chain.scores, chain.output)}
    return [matmul for matmul in matmuls if matmul not in in_chains]


def match_matmul_chain(output: Operation) -> AttentionChain | None:
    """The plain chain `matmul(f(matmul(A, B)), C)` ending at the matmul `output`, f elementwise
    ops over the intermediate's shape (bias, activation, casts; no softmax), with the shapes,
    types and single uses of an attention chain; None where there is none or it is attention."""
    if not isinstance(output, graph.MatmulOp) or match_attention(output) is not None:
        return None
    found = _score_ops(output.a)
    if found is None:
        return None
    scores, score_ops, side = found
    chain = AttentionChain(scores, output, tuple(score_ops), (), tuple(side), kind="matmul")
    return chain if _supported(chain) else None


def match_chain(output: Operation) -> AttentionChain | None:
    """An attention chain ending at `output`, else a plain matmul chain."""
    return match_attention(output) or match_matmul_chain(output)


def _supported(chain: AttentionChain) -> bool:
    """Q, Kt, V and O of one rank and batch shape and one float type, the head dims within
    `MAX_HEAD_DIM`, every intermediate of the score's shape and used only inside the chain."""
    scores, output = chain.scores, chain.output
    q, kt, v = scores.a, scores.b, output.b
    ranks = {len(shape_of(x)) for x in (q, kt, v, output.result)}
    batch = {shape_of(x)[:-2] for x in (q, kt, v, output.result)}
    types = {type(_element(x)) for x in (q, kt, v)}
    if len(ranks) != 1 or len(batch) != 1 or len(types) != 1 or not types <= {Float32Type, Float16Type, BFloat16Type}:
        return False
    if shape_of(scores.result)[-1] != shape_of(v)[-2] or max(shape_of(q)[-1], shape_of(v)[-1]) > MAX_HEAD_DIM:
        return False
    score_shape = shape_of(scores.result)
    if any(shape_of(op.results[0]) != score_shape for op in chain.score_ops):
        return False
    members = set(chain.ops)
    internal = [scores.result, *(op.results[0] for op in (*chain.score_ops, *chain.softmax_ops))]
    return all(_single_use(value, members) for value in internal)


def _causal(chain: AttentionChain) -> CausalMask | None:
    """The chain's causal mask, if a side input is one that only the chain uses and whose -inf
    reaches the softmax (only casts after the op that applies it)."""
    for position, op in enumerate(chain.score_ops):
        if not all(isinstance(later, graph.CastOp) for later in chain.score_ops[position + 1 :]):
            continue
        for value in op.operands:
            if value not in chain.side_inputs:
                continue
            mask = causal_mask(value, op)
            if mask is None:
                continue
            members = {*chain.ops, *mask.ops}
            if all(_single_use(result, members) for mask_op in mask.ops for result in mask_op.results):
                return mask
    return None
