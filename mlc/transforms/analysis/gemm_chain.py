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

Data-movement model (`plan_attention`), after Chimera (Zheng et al., HPCA 2023): for the block
order of the fused loop nest and each block size (BM query rows, BN keys, powers of two from 16
to 128), count the bytes moved between global memory and on-chip memory (registers and shared
memory) over the whole chain, assuming nothing is reused across programs (no cache):

* rows outer (a program owns BM query rows and walks the keys in blocks, FlashAttention's order):
  Q read once, K and V read once per row block, O written once, each mask block read once:
      B*e*(M*D + ceil(M/BM)*N*(D + Dv) + M*Dv) + mask;
* separate kernels (the alternative): the score and probability matrices make a round trip,
  with mlc's 64x64 matmul blocks re-reading operands:
      B*(e*(M*D*ceil(N/64) + D*N*ceil(M/64)) + 4*M*N*s + e*(M*N*ceil(Dv/64) + N*Dv*ceil(M/64) + M*Dv)) + mask,
  s = 1 + 2 + 1 (the score matrix written, read twice by the softmax, the probabilities written).

The other order, keys outer (a program owns BN keys and walks the query rows), reads K and V once
but must write and re-read O's f32 accumulator and the running max and sum once per key block;
it pays only for very short key sequences and is not lowered, so it is not a candidate.

A choice must fit on chip: the f32 score tile (BM*BN), the f32 accumulator (BM*Dv) and running
max and sum (2*BM), and the operand tiles (e*(BM*D + BN*D + BN*Dv)), head dims padded to powers of
two, within `on_chip_bytes` (graph-fuse's option; the default is what one program of a GPU
block may hold beside a second resident block). The cheapest fitting (BM, BN) wins, ties to the
smaller footprint. No region is formed (the ops fall back to separate kernels) when no
choice fits or when the fused chain would move at least as many bytes as separate kernels.

Compute term (`ComputeModel`, graph-fuse's `compute-model`; the GPU pipeline names `gpu`). Bytes
alone decide only where the fused kernel does its products as fast as separate kernels would.
Each side is estimated as a roofline, `max(bytes / bandwidth, flops / products' rate)` with flops
= 2*B*M*N*(D + Dv) (the fused side: the key blocks it visits) and the model's measured rates, and
the chain falls back when its estimate is not below the separate kernels' (the reason, with both
estimates, in `mlc.chain_fallback`). On an H100 (bench/attention.py, BENCHMARKS.md) the chain
kernel on tensor cores (`chain_mma.py`: f16/bf16, head dims padding to 16 or more) ran its
products at 154-185 TFLOP/s, faster than separate f16 kernels (55-106 TFLOP/s for the whole
chain), so such chains fuse, with the tensor-core kernel's blocks (`_plan_tensor_cores`: BM 128,
BN 64, halved while two stages of K and V blocks do not fit; BM halved to 64 where that still
makes at most one wave of programs, `wave_filling_rows`; warps of 32 query rows for 128-row blocks
of head dims up to 64, `warp_rows_for`; `products = "wgmma"` where the blocks fit warpgroup
products, `wgmma_chain_fits`: on an H100 the wgmma kernel, `chain_wgmma.py`, took 36.3 against
40.7 µs at 128 x 512 x 64, 115.6 against 144.0 at 64 x 1024 x 128, 873 against 1013 at 64 x 4096
x 64, and tied at 16 x 512 x 64, BENCHMARKS.md, branch attn11); the CUDA-core chain kernel (f32,
tiny head dims: one thread per query row) ran at 3.5 to 4.8 TFLOP/s, so an f32 chain of a real
head dim falls back, and only tiny head dims, where the score round trip (about 16 bytes per
score) outweighs 2*(D + Dv) slow flops, stay fused on CUDA cores. `none` (the default, and the
CPU's) counts bytes only.

Limits. Only attention chains (not plain matmul -> matmul chains yet); the compute term's
rates are one GPU's measurements, not a model of occupancy or latency.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, TensorType, i1
from xdsl.ir import Operation, SSAValue

from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.error_bounds import ONLINE_SOFTMAX_MIN_BLOCK
from mlc.transforms.analysis.causal_mask import CausalMask, causal_mask
from mlc.transforms.analysis.fusion_groups import is_splat_constant
from mlc.transforms.analysis.strided_views import transpose_permutation
from mlc.targets import WGMMA_CHAIN_EXTENT
from mlc.transforms.lowering.elementwise_expansion import splat_constant_value

MAX_HEAD_DIM = 256
FAST_MATH_KEY = "fast_math"
"""The chain plan's optional entry (a unit attribute, graph-fuse's `fast-math`): the chain's kernel
may compute its scores in f32 without the graph's per-op roundings and use `exp2`."""
PRODUCTS_KEY = "products"
"""The chain plan's optional entry naming the tensor-core kernel's products: "wgmma" (warpgroup
products where the target has them, `chain_wgmma.py`; `wgmma_chain_fits`), absent for mma.sync."""
BLOCK_CHOICES = tuple(ONLINE_SOFTMAX_MIN_BLOCK << shift for shift in range(4))
"""16 to 128: at least the block error_bounds assumes for an online softmax."""
SEPARATE_MATMUL_BLOCK = 64
DEFAULT_ON_CHIP_BYTES = 96 * 1024
SCORE_ELEMENTWISE = (*graph.ELEMENTWISE_OPS, graph.BroadcastOp)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


def _element(value: SSAValue):
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def _pow2(value: int) -> int:
    return 1 << max(0, (value - 1).bit_length())


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
        *batch, rows, depth = _shape(self.scores.a)
        keys = _shape(self.scores.b)[-1]
        return math.prod(batch), rows, keys, depth, _shape(self.output.b)[-1]


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
    rank = len(_shape(op.x))
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
        if softmax.normalized_axis() != len(_shape(softmax.x)) - 1:
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
    if not isinstance(zero, graph.ConstantOp) or splat_constant_value(zero) != 0 or _shape(where.result) != _shape(guarded):
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
        candidates = [v for v in op.operands if _shape(v) == _shape(scores) and _reaches_matmul(v)]
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
    ranks = {len(_shape(x)) for x in (q, kt, v, output.result)}
    batch = {_shape(x)[:-2] for x in (q, kt, v, output.result)}
    types = {type(_element(x)) for x in (q, kt, v)}
    if len(ranks) != 1 or len(batch) != 1 or len(types) != 1 or not types <= {Float32Type, Float16Type, BFloat16Type}:
        return False
    if _shape(scores.result)[-1] != _shape(v)[-2] or max(_shape(q)[-1], _shape(v)[-1]) > MAX_HEAD_DIM:
        return False
    score_shape = _shape(scores.result)
    if any(_shape(op.results[0]) != score_shape for op in chain.score_ops):
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


# -- Chimera's model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComputeModel:
    """A target's measured rates for the compute term (see the module docstring)."""

    bandwidth: float
    """Bytes per second between global memory and the chip."""
    fused_flops: float
    """The chain kernel's products on CUDA cores (one thread per query row), FLOP/s."""
    separate_flops: dict[str, float]
    """Separate matmul kernels' products, FLOP/s, by operand type (`f16`, `bf16`, `f32`)."""
    tensor_core_flops: float | None = None
    """The chain kernel on tensor cores (`chain_mma.py`), FLOP/s, for f16/bf16 chains whose head
    dims pad to at least 16; None: the target has no such kernel."""
    staged_bytes: int = 96 * 1024
    """Shared memory the tensor-core kernel's staged K and V blocks may take."""
    multiprocessors: int = 0
    """The GPU's multiprocessors (0: unknown): the tensor-core kernel halves its query block while
    twice its programs still fit one wave of them (`_plan_tensor_cores`)."""


COMPUTE_MODELS = {
    "none": None,
    # H100 (bench/attention.py, 2026-11-25/26): the device copy moves ~3.0 TB/s; the CUDA-core chain
    # kernel ran 3.5-4.8 TFLOP/s, the tensor-core one 154-185 (blocks visited); mlc's separate
    # kernels ran the whole chain at 55-106 TFLOP/s in f16 (tensor cores; products alone faster)
    # and 23 in f32: conservative product rates below.
    "gpu": ComputeModel(
        3.0e12, 4.0e12, {"f16": 100e12, "bf16": 100e12, "f32": 25e12}, tensor_core_flops=150e12, multiprocessors=132
    ),
}

TENSOR_CORE_BLOCKS = (128, 64)
"""BM, BN of the tensor-core chain kernel: 8 warps of 16 query rows, 64 keys per block (BN halved
while two stages of the K and V blocks do not fit `staged_bytes`)."""
TENSOR_CORE_MIN_DEPTH = 16
TENSOR_CORE_STAGES = 2
TENSOR_CORE_MIN_ROWS = 64
"""The smallest query block `_plan_tensor_cores` halves to for a launch of few programs: four warps
of 16 rows, one per tensor-core unit of a multiprocessor."""


WIDE_WARP_MAX_HEAD_DIM = 64
"""Warps of 32 query rows (`warp_rows`, `chain_mma.py`) for blocks of 128 rows or more when both
head dims pad to at most this: two m16 rows share each K and V register loaded from shared
memory. H100, fast math (bench/chain_blocks.py, BENCHMARKS.md, branch xformer10): 128 x 512 x 64
(the transformer block at batch 8) 50.2 -> 39.7 µs, 64 x 4096 x 64 1209 -> 1047 µs; with head
dims of 128 the doubled accumulator costs more than it saves (64 x 1024 x 128: 141 -> 161 µs),
and 64-row blocks (4 warps of 16 rows) stay faster than 2 warps of 32 (16 x 512 x 64: 11.8 against
12.4 µs)."""


def warp_rows_for(block_rows: int, depth: int, value_depth: int) -> int:
    """The tensor-core kernel's query rows per warp (see `WIDE_WARP_MAX_HEAD_DIM`)."""
    narrow_heads = max(_pow2(depth), _pow2(value_depth)) <= WIDE_WARP_MAX_HEAD_DIM
    return 32 if block_rows >= 128 and narrow_heads else 16


def wgmma_chain_fits(block_rows: int, block_keys: int, depth: int, value_depth: int) -> bool:
    """Whether the tensor-core chain kernel's blocks fit warpgroup products (`WGMMA_CHAIN_EXTENT`)."""
    step, most = WGMMA_CHAIN_EXTENT
    return all(extent % step == 0 and extent <= most for extent in (block_rows, block_keys, _pow2(depth), _pow2(value_depth)))


def wave_filling_rows(batch: int, rows: int, block_rows: int, multiprocessors: int) -> int:
    """`block_rows` halved (down to `TENSOR_CORE_MIN_ROWS`) while twice the programs still fit one
    wave of `multiprocessors`: the rows-outer kernel's programs are batch x row blocks, so a short
    sequence of few heads (16 heads x 512 rows: 64 programs of 128 rows) would leave half of an
    H100's 132 multiprocessors idle; 64-row blocks give each of 128 of them four warps."""
    programs = lambda bm: batch * -(-rows // bm)
    while block_rows > TENSOR_CORE_MIN_ROWS and 2 * programs(block_rows) <= multiprocessors:
        block_rows //= 2
    return block_rows


def _estimate_seconds(moved: int, flops: int, rate: float, model: ComputeModel) -> float:
    return max(moved / model.bandwidth, flops / rate)


def uses_tensor_cores(chain: AttentionChain, model: ComputeModel | None) -> bool:
    """Whether `model`'s target runs the chain kernel on tensor cores: f16/bf16 operands, head dims
    padding to at least 16."""
    _, _, _, depth, value_depth = chain.dims
    narrow = isinstance(_element(chain.scores.a), Float16Type | BFloat16Type)
    return model is not None and model.tensor_core_flops is not None and narrow and min(_pow2(depth), _pow2(value_depth)) >= TENSOR_CORE_MIN_DEPTH


def compute_verdict(chain: AttentionChain, fused: int, separate: int, model: ComputeModel, blocks: tuple[int, int]) -> str | None:
    """Why the fused chain does not pay under `model`'s rates (None when it does); `blocks` are
    the fused kernel's (BM, BN), for the keys it visits."""
    batch, rows, keys, depth, value_depth = chain.dims
    flops = 2 * batch * rows * keys * (depth + value_depth)
    fused_flops = flops * visited_keys(chain, *blocks) // max(1, -(-rows // blocks[0]) * keys)
    element = str(_element(chain.scores.a))
    tensor_cores = uses_tensor_cores(chain, model)
    fused_rate = model.tensor_core_flops if tensor_cores else model.fused_flops
    fused_s = _estimate_seconds(fused, fused_flops, fused_rate, model)  # type: ignore[arg-type]
    separate_s = _estimate_seconds(separate, flops, model.separate_flops.get(element, model.fused_flops), model)
    if fused_s < separate_s:
        return None
    where = "tensor cores" if tensor_cores else "CUDA cores"
    return (
        f"the chain kernel's products on {where}: about {fused_s * 1e6:.1f} us fused, {separate_s * 1e6:.1f} us "
        f"as separate kernels ({flops} flops; {fused} / {separate} bytes): fusion does not pay"
    )


@dataclass(frozen=True)
class ChainPlan:
    """The model's choice for one chain, with its numbers (all recorded in the IR)."""

    order: str
    block_rows: int
    block_keys: int
    fused_bytes: int
    separate_bytes: int
    on_chip_bytes: int
    """The chosen blocks' footprint on chip."""
    warp_rows: int = 16
    """The query rows each warp of the mma.sync tensor-core kernel owns (`chain_mma.py`)."""
    products: str = ""
    """"wgmma" where the tensor-core kernel's blocks fit warpgroup products (`wgmma_chain_fits`)."""


def on_chip_footprint(block_rows: int, block_keys: int, depth: int, value_depth: int, element_bytes: int) -> int:
    depth, value_depth = _pow2(depth), _pow2(value_depth)
    tiles = block_rows * depth + block_keys * depth + block_keys * value_depth
    return 4 * (block_rows * block_keys + block_rows * value_depth + 2 * block_rows) + element_bytes * tiles


def _mask_bytes(chain: AttentionChain, block_rows: int, block_keys: int) -> int:
    batch, rows, keys, _, _ = chain.dims
    total = 0
    for value in chain.side_inputs:
        if is_splat_constant(value):  # a scalar in the kernel's code, not memory traffic
            continue
        shape = (1, 1, *_shape(value))[-2:]
        per_block = (block_rows if shape[0] != 1 else 1) * (block_keys if shape[1] != 1 else 1)
        bytes_per = max(1, _element(value).bitwidth // 8)  # type: ignore[attr-defined]
        total += batch * -(-rows // block_rows) * -(-keys // block_keys) * per_block * bytes_per
    return total


def visited_keys(chain: AttentionChain, block_rows: int, block_keys: int) -> int:
    """Keys the fused kernel walks, summed over its row blocks: all N for each, or with a causal
    mask the blocks up to the last key the block's last row sees."""
    _, rows, keys, _, _ = chain.dims
    blocks = -(-rows // block_rows)
    if chain.causal is None:
        return blocks * keys
    total = 0
    for block in range(blocks):
        seen = max(0, min(keys, (block + 1) * block_rows + chain.causal.offset))
        total += min(keys, -(-seen // block_keys) * block_keys)
    return total


def fused_bytes(chain: AttentionChain, block_rows: int, block_keys: int) -> int:
    """Bytes moved by the fused chain in the rows-outer order (see the module docstring)."""
    batch, rows, _, depth, value_depth = chain.dims
    e = _element(chain.scores.a).bitwidth // 8  # type: ignore[attr-defined]
    streamed = rows * depth + visited_keys(chain, block_rows, block_keys) * (depth + value_depth) + rows * value_depth
    return batch * e * streamed + _mask_bytes(chain, block_rows, block_keys)


def separate_bytes(chain: AttentionChain) -> int:
    batch, rows, keys, depth, value_depth = chain.dims
    e = _element(chain.scores.a).bitwidth // 8  # type: ignore[attr-defined]
    b = SEPARATE_MATMUL_BLOCK
    first = e * (rows * depth * -(-keys // b) + depth * keys * -(-rows // b))
    second = e * (rows * keys * -(-value_depth // b) + keys * value_depth * -(-rows // b) + rows * value_depth)
    if chain.kind == "attention":  # f32 scores written, read twice by the softmax, P written
        intermediate = 4 * rows * keys * 4
    else:  # f(S) written by the first kernel (its epilogue), read by the second
        intermediate = 2 * rows * keys * (_element(chain.output.a).bitwidth // 8)  # type: ignore[attr-defined]
    return batch * (first + intermediate + second) + _mask_bytes(chain, b, b)


def plan_attention(chain: AttentionChain, on_chip_bytes: int, compute: ComputeModel | None = None) -> ChainPlan | str:
    """The cheapest fitting choice, or the reason to fall back to separate kernels."""
    _, rows, keys, depth, value_depth = chain.dims
    e = _element(chain.scores.a).bitwidth // 8  # type: ignore[attr-defined]
    separate = separate_bytes(chain)
    if uses_tensor_cores(chain, compute):
        return _plan_tensor_cores(chain, on_chip_bytes, compute, separate)  # type: ignore[arg-type]
    candidates = []
    row_blocks = [b for b in BLOCK_CHOICES if b <= max(16, _pow2(rows))]
    key_blocks = [b for b in BLOCK_CHOICES if b <= max(16, _pow2(keys))]
    for bm, bn in itertools.product(row_blocks, key_blocks):
        footprint = on_chip_footprint(bm, bn, depth, value_depth, e)
        if footprint <= on_chip_bytes:
            candidates.append((fused_bytes(chain, bm, bn), footprint, bm, bn))
    if not candidates:
        smallest = on_chip_footprint(16, 16, depth, value_depth, e)
        return f"the smallest blocks (16x16) need {smallest} bytes on chip, more than {on_chip_bytes}"
    moved, footprint, bm, bn = min(candidates)
    if moved >= separate:
        return f"fusion moves {moved} bytes, separate kernels {separate}: fusion does not pay"
    verdict = None if compute is None else compute_verdict(chain, moved, separate, compute, (bm, bn))
    if verdict is not None:
        return verdict
    return ChainPlan("rows-outer", bm, bn, moved, separate, footprint)


def _plan_tensor_cores(chain: AttentionChain, on_chip_bytes: int, compute: ComputeModel, separate: int) -> ChainPlan | str:
    """The tensor-core kernel's blocks (`TENSOR_CORE_BLOCKS`, cut to the problem): its scores and
    accumulator live in registers, so what must fit on chip is the staged K and V blocks."""
    _, rows, keys, depth, value_depth = chain.dims
    e = _element(chain.scores.a).bitwidth // 8  # type: ignore[attr-defined]
    batch = chain.dims[0]
    block_rows = wave_filling_rows(batch, rows, min(TENSOR_CORE_BLOCKS[0], max(16, _pow2(rows))), compute.multiprocessors)
    block_keys = min(TENSOR_CORE_BLOCKS[1], max(16, _pow2(keys)))
    staged = lambda bn: TENSOR_CORE_STAGES * e * bn * (_pow2(depth) + _pow2(value_depth))
    while block_keys > 16 and staged(block_keys) > min(on_chip_bytes, compute.staged_bytes):
        block_keys //= 2
    if staged(block_keys) > on_chip_bytes:
        return f"the smallest blocks (16 keys) need {staged(block_keys)} bytes of staged K and V on chip, more than {on_chip_bytes}"
    moved = fused_bytes(chain, block_rows, block_keys)
    verdict = compute_verdict(chain, moved, separate, compute, (block_rows, block_keys))
    if verdict is not None:
        return verdict
    products = "wgmma" if wgmma_chain_fits(block_rows, block_keys, depth, value_depth) else ""
    return ChainPlan("rows-outer", block_rows, block_keys, moved, separate, staged(block_keys), warp_rows_for(block_rows, depth, value_depth), products)
