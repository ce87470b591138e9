"""graph-transpose-tf32-rhs: give TF32 matmuls a K-major B, the layout Hopper's TF32 wgmma reads.

wgmma reads 32-bit operands from shared memory K-major only (its transpose immediates apply to
16-bit types): A as rows of K (a row-major M x K A is), B as N rows of K, i.e. B transposed. A
row-major K x N B is N-major, so a TF32 matmul on it would take mma.sync (`matmul_mma.py`) at
about half of wgmma's rate. With `wgmma=true` (what `mlc-lower-to-gpu{arch=sm_90}` sets) this pass
rewrites such a matmul to read B through a materialised transpose:

    bt = transpose(b)                 (N x K: a copy kernel, graph-fuse's transpose kernel)
    r  = matmul(a, transpose(bt))     (the torch `linear` form: bt read in place, K-major)

With `swap-operands` (`mlc-lower-to-gpu{tf32-swap=true}`, in `mlc.compile`'s sm_90 default: 8%
faster than the transpose kernel and the K-major product at 4096^3 on an H100 once its A registers
came in two sets and its cubin kept setmaxnreg, BENCHMARKS.md, tf16) a 2-D product that no elementwise op reads (so graph-fuse gives
it no epilogue) is instead marked `mlc.swap_operands`, and nothing is materialised: its kernel
computes C^T = B^T A^T (`matmul_plan.takes_swapped_operands`), wgmma's A = B^T taken from
registers, which any layout can be loaded into (`wgmma_nvvm.lower_register_tf32_wgmma`: 32-bit
loads of B's staged K x N block, M-major), and wgmma's B = A^T, whose K-major form is A's
row-major block; the kernel stores the transposed accumulator (`tile.scatter`). A matmul with an
elementwise reader keeps the transpose below (its kernel's epilogue works on C's layout).

graph-fuse then makes a kernel of `bt` and reads `transpose(bt)` in its stored layout
(`operand_maps.transposed_operands`, `mlc.operand_major` = ["k", "k"]), which `matmul_wgmma.py`
runs as TF32 warpgroup products. A matmul whose B is already a transpose (x @ transpose(w), the
torch linear weight) needs nothing and is left alone.

Exactness: a transpose copies values, so the product is the same matmul of the same values.

Cost: one read and one write of B (K x N f32), against the product's 2 M N K flops: about 45 µs
for 4096 x 4096 on an H100, a tenth of a 4096^3 TF32 product; nothing for the linear form.

Preconditions/limits: f32 operands whose precision is "tf32" (the matmul's own, else this pass's
`precision`, the default convert-graph-to-tile gives matmuls that state none); 3xtf32 splits its
operands in registers and keeps mma.sync; rows of 16-byte multiples (K a multiple of 4, for the
16-byte async copies) and K deeper than one wgmma K step (`TF32_WGMMA_DEPTH_STEP`), so that the
product has a K loop to pipeline; 2-D B; a row-major A (a transposed A is M-major, which TF32 wgmma
cannot read either; such a matmul is left alone) and not the products of an attention chain. A
constant B gains nothing: graph-fold-constants, which runs after this pass, folds both transposes
back into a row-major constant (mma.sync then runs the product, as before). Without `wgmma` the
pass changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType, UnitAttr
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects.graph import ops as graph
from mlc.dialects.precision import DEFAULT_PRECISION, PRECISIONS
from mlc.transforms.analysis.gemm_chain import matmuls_outside_attention
from mlc.transforms.analysis.operand_maps import matrix_transpose
from mlc.dialects import attributes
from mlc.transforms.analysis.fusion_groups import EPILOGUE_OPS
from mlc.transforms.lowering.matmul_blocks import TF32_WGMMA_TILE, swapped_tf32_applies

TF32_PRECISION = "tf32"
ROW_ALIGNMENT = 4
"""f32 elements in 16 bytes: the rows of A and of B transposed (K each) must be multiples of it."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return tuple(value_type.get_shape())


def _precision(op: graph.MatmulOp, default: str) -> str:
    return op.precision.data if "precision" in op.properties else default


def needs_transposed_rhs(op: graph.MatmulOp, default_precision: str) -> bool:
    """Whether `op` is a TF32 matmul that wgmma could run with B transposed (see the docstring)."""
    if not isinstance(op.result.type.element_type, Float32Type) or 0 in _shape(op.result):  # type: ignore[attr-defined]
        return False
    if _precision(op, default_precision) != TF32_PRECISION or len(_shape(op.b)) != 2:
        return False
    if matrix_transpose(op.a) is not None or matrix_transpose(op.b) is not None:
        return False
    depth = _shape(op.a)[-1]
    return depth % ROW_ALIGNMENT == 0 and depth > TF32_WGMMA_TILE[2]


def transpose_rhs(op: graph.MatmulOp) -> None:
    """Rewrites `op` as the module docstring says: B read through a materialised transpose."""
    stored = graph.TransposeOp(op.b, perm=(1, 0))
    read = graph.TransposeOp(stored.result, perm=(1, 0))
    Rewriter.insert_op([stored, read], InsertPoint.before(op))
    op.operands[1] = read.result


def takes_swap(op: graph.MatmulOp) -> bool:
    """Whether `op` (a TF32 matmul with a row-major B) is computed transposed instead: 2-D
    operands whose rows allow it (`swapped_tf32_applies`) and no elementwise reader (see the
    module docstring)."""
    return swapped_tf32_applies(op) and not any(isinstance(use.operation, EPILOGUE_OPS) for use in op.result.uses)


@dataclass(frozen=True)
class GraphTransposeTf32Rhs(ModulePass):
    """Read the B of TF32 matmuls through a materialised transpose, K-major, for wgmma."""

    name = "graph-transpose-tf32-rhs"

    wgmma: bool = False
    """Rewrite for Hopper's wgmma lowering (without it the pass changes nothing)."""
    precision: str = DEFAULT_PRECISION
    """The precision of f32 matmuls that state none (convert-graph-to-tile's option of that name)."""
    swap_operands: bool = False
    """Mark the matmuls `takes_swap` admits `mlc.swap_operands` instead of transposing their B."""

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.wgmma:
            return
        for matmul in matmuls_outside_attention(op):
            if not needs_transposed_rhs(matmul, self.precision):
                continue
            if self.swap_operands and takes_swap(matmul):
                attributes.SWAP_OPERANDS.write(matmul, UnitAttr())
            else:
                transpose_rhs(matmul)
