"""`loop.wgmma` and swizzled shared memory in NVVM terms: matrix descriptors and inline PTX (sm_90a).

Layout of a swizzled buffer (`mlc.swizzle` = 128 on its allocation, a memref [..., R, C] of 16-bit
elements, C a multiple of 64, R of 8, or of f32 elements, C a multiple of 32): each leading index
selects an R x C matrix; its columns come in blocks of 128 bytes (64 or 32 elements), block after block; within a block, row-major rows of
128 bytes. That linear byte offset `b` is then swizzled as the hardware reads it (CUTLASS's
Swizzle<3,4,3>): `b ^ (((b >> 7) & 7) << 4)`, the 16-byte chunks of row r XORed with r mod 8.
The buffer must start on a 1024-byte boundary (8 rows of 128 bytes, the pattern's period);
convert-gpu-to-nvvm aligns it.

Matrix descriptors (PTX ISA, "matrix descriptor"; CUTLASS `GmmaDescriptor`): a 64-bit value with the
start address >> 4 in bits 0-13, the leading-dimension byte offset >> 4 in bits 16-29, the stride
byte offset >> 4 in bits 32-45, base offset 0 (the atoms are 1024-byte aligned) and the swizzle
mode in bits 62-63 (1 = 128 bytes). The start address is the *unswizzled* address of the block's
first element (the hardware applies the XOR), so stepping K by 16 adds 32 bytes in a K-major A,
and 16 rows (2048 bytes) in an N-major B.
- A (K-major, 64 rows x 16): SBO = 1024 (from one 8-row group to the next); LBO unused (1).
- B (N-major, PTX's transposed B, 16 x N): LBO = R * 128, the stride between 64-column blocks,
  SBO = 1024, between groups of 8 rows of K (`rhs_offsets`).
- B K-major (`loop.wgmma` with rhs "k" in `mlc.operand_major`, a buffer of N rows of K): A's
  layout and offsets, stepping K by 32 bytes, and the instruction's trans-b bit 0; A M-major (lhs
  "m", a buffer of K rows of M): a row-major B's layout and offsets, stepping K by 16 rows, and
  trans-a 1 (`operand_descriptors`).

Each `loop.wgmma m64nNkK` becomes `wgmma.fence`, K / 16 `wgmma.mma_async.sync.aligned.m64nNk16.f32.
{f16,bf16}.{f16,bf16}` with the accumulators tied through (scale-d = 1; trans-a = 0 and trans-b = 1 unless an operand is transposed, above),
or on f32 buffers K / 8 `...m64nNk8.f32.tf32.tf32` (K-major operands only, no transpose immediates;
a swizzled row holds 32 f32, so a step of 8 is again 32 bytes), then
`wgmma.commit_group`. An f32 `loop.wgmma` whose A is M-major (`mlc.operand_major` ["m", "k"]: a
product computed transposed, `mlc.swap_operands`, or a transposed A), a layout TF32 wgmma cannot
read from shared memory, loads A's fragment from the swizzled buffer into registers with 32-bit
shared loads and issues the register-A form (`lower_register_tf32_wgmma`).
With A from registers (`loop.wgmma` without a lhs buffer, `lower_register_wgmma`)
each step is PTX's register-A form, `... {d}, {a0, a1, a2, a3}, b-desc, p, 1, 1, trans-b` (no A
descriptor, no trans-a), the step's 4 `vector<2xT>` A registers passed as their 32 bits.
`loop.wgmma_wait N` becomes `wgmma.wait_group N` with the accumulators tied
through it, so that nothing reads them before the products land. There is no LLVM intrinsic for mma_async; fence,
commit and wait are inline assembly too, since their intrinsics abort LLVM below sm_90a.
Async copies into a wgmma kernel's shared memory are followed, after each `cp.async.wait_group`, by
`fence.proxy.async.shared::cta`: the copies write through the generic proxy, wgmma reads through
the async proxy. A wgmma kernel's roundings of two f32 to f16/bf16 at once (`arith.truncf` of a
vector<2xf32>, left by `async_pipeline.pack_roundings`) become one `cvt.rn.{f16x2,bf16x2}.f32`
(`lower_packed_roundings`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, llvm, vector
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, IntegerType, MemRefType, UnrealizedConversionCastOp, VectorType, f32, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.loop import ops as loop

SWIZZLE_ROW_BYTES = 128
SWIZZLE_ATOM_BYTES = 1024
"""8 rows of 128 bytes: the swizzle pattern's period, and the alignment a swizzled buffer needs."""
SWIZZLE_MODE = {128: 1}
"""The descriptor's layout code per swizzle span (64 and 32 bytes are 2 and 3; not used)."""
LHS_OFFSETS = (16, SWIZZLE_ATOM_BYTES)
"""(LBO, SBO) in bytes of a K-major A: LBO is unused with a swizzle (CUTLASS writes 1 << 4)."""


def rhs_offsets(rows: int) -> tuple[int, int]:
    """(LBO, SBO) in bytes of an N-major B of `rows` rows: LBO is the stride between 64-column
    blocks (R * 128 bytes), SBO the one between groups of 8 rows."""
    return rows * SWIZZLE_ROW_BYTES, SWIZZLE_ATOM_BYTES

FENCE_PROXY_ASYNC = "fence.proxy.async.shared::cta;"


def swizzle_of(memref_value: SSAValue) -> int | None:
    """The swizzle span of the shared buffer `memref_value` was cast from, if it is swizzled."""
    cast = memref_value.owner
    if isinstance(cast, UnrealizedConversionCastOp):
        swizzle = attributes.SWIZZLE.read(cast)
        if isinstance(swizzle, IntegerAttr):
            return swizzle.value.data
    return None


_NO_OVERFLOW = arith.IntegerOverflowAttr("none")


class _Builder:
    """Collects the ops of an address computation. The constants, adds and multiplies (most of
    the ops a swizzled kernel's addresses take) are built by `Operation.create` with exactly what
    their initialisers set: the IRDL initialiser costs more than the rest of the lowering."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def constant(self, value: int, value_type: Attribute | None = None) -> SSAValue:
        value_type = value_type or IndexType()
        attribute = IntegerAttr(value, value_type)  # type: ignore[arg-type]
        return self.emit(arith.ConstantOp.create(result_types=[value_type], properties={"value": attribute}))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.AddiOp.create(operands=[a, b], result_types=[a.type], properties={"overflowFlags": _NO_OVERFLOW}))

    def mul(self, a: SSAValue, factor: int) -> SSAValue:
        constant = self.constant(factor)
        return self.emit(
            arith.MuliOp.create(operands=[a, constant], result_types=[a.type], properties={"overflowFlags": _NO_OVERFLOW})
        )


def _linear_byte_offset(builder: _Builder, memref_type: MemRefType, indices: Sequence[SSAValue]) -> SSAValue:
    """The unswizzled byte offset of element `indices` of a swizzled buffer (see the module docstring)."""
    shape = memref_type.get_shape()
    rows, columns = shape[-2], shape[-1]
    *outer, row, column = indices
    matrix: SSAValue | None = None
    for index, size in zip(outer, shape[:-2]):
        matrix = index if matrix is None else builder.add(builder.mul(matrix, size), index)
    element_bytes = byte_width(memref_type.element_type)
    block_elements = SWIZZLE_ROW_BYTES // element_bytes
    block = builder.emit(arith.DivUIOp(column, builder.constant(block_elements)))
    within = builder.emit(arith.RemUIOp(column, builder.constant(block_elements)))
    elements = builder.add(builder.add(builder.mul(block, rows * block_elements), builder.mul(row, block_elements)), within)
    if matrix is not None:
        elements = builder.add(builder.mul(matrix, rows * columns), elements)
    return builder.mul(elements, element_bytes)


def swizzled_address(base: SSAValue, memref_type: MemRefType, indices: Sequence[SSAValue]) -> tuple[list[Operation], SSAValue]:
    """A GEP from `base` (an addrspace(3) pointer) to element `indices` of a swizzled buffer."""
    builder = _Builder()
    offset = builder.emit(arith.IndexCastOp(_linear_byte_offset(builder, memref_type, indices), i64))
    line = builder.emit(arith.ShRUIOp(offset, builder.constant(7, i64)))
    chunk = builder.emit(arith.ShLIOp(builder.emit(arith.AndIOp(line, builder.constant(7, i64))), builder.constant(4, i64)))
    swizzled = builder.emit(arith.XOrIOp(offset, chunk))
    address = builder.emit(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], IntegerType(8), ssa_indices=[swizzled], result_type=base.type, inbounds=True))
    return builder.ops, address


def _descriptor(builder: _Builder, base: SSAValue, offset: SSAValue, leading: int, stride: int, swizzle: int) -> SSAValue:
    """The 64-bit matrix descriptor of the matrix at `base` + `offset` bytes (see the module docstring)."""
    shared_address = builder.emit(llvm.PtrToIntOp(base, i64))
    address = builder.emit(arith.AddiOp(shared_address, builder.emit(arith.IndexCastOp(offset, i64))))
    start = builder.emit(arith.ShRUIOp(builder.emit(arith.AndIOp(address, builder.constant(0x3FFFF, i64))), builder.constant(4, i64)))
    fields = ((leading >> 4) << 16) | ((stride >> 4) << 32) | (SWIZZLE_MODE[swizzle] << 62)
    return builder.emit(arith.OrIOp(start, builder.constant(fields, i64)))


def _inline_asm(builder: _Builder, text: str, constraints: str, operands: Sequence[SSAValue], results: int) -> list[SSAValue]:
    result_types = [] if not results else [f32 if results == 1 else llvm.LLVMStructType.from_type_list([f32] * results)]
    call = llvm.InlineAsmOp(text, constraints, list(operands), result_types, has_side_effects=True)
    builder.ops.append(call)
    if results <= 1:
        return list(call.results)
    return [builder.emit(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [index]), call.results[0], f32)) for index in range(results)]


def _tied(count: int, extra: str) -> str:
    return ",".join(["=f"] * count + [str(i) for i in range(count)] + ([extra] if extra else []))


def lower_wgmma(op: loop.WgmmaOp, lhs_base: SSAValue | None, rhs_base: SSAValue) -> tuple[list[Operation], list[SSAValue]]:
    """`op` as fence, K / 16 mma_async, commit and wait (see the module docstring); A from
    registers (`lhs_base` None) by `lower_register_wgmma`."""
    if lhs_base is None:
        return lower_register_wgmma(op, rhs_base)
    builder = _Builder()
    lhs_type, rhs_type = op.lhs.type, op.rhs.type  # type: ignore[union-attr]
    assert isinstance(lhs_type, MemRefType) and isinstance(rhs_type, MemRefType)
    tf32 = lhs_type.element_type == f32
    if tf32 and op.lhs_m_major:
        return lower_register_tf32_wgmma(op, lhs_base, rhs_base)
    element = "tf32" if tf32 else str(lhs_type.element_type)
    depth = loop.TF32_WGMMA_DEPTH if tf32 else loop.WGMMA_DEPTH
    count = op.columns // 2
    accumulators = list(op.c)
    _inline_asm(builder, "wgmma.fence.sync.aligned;", "", [], 0)
    scale = builder.constant(1, i32)
    registers = ",".join(f"${i}" for i in range(count))
    instruction = f"wgmma.mma_async.sync.aligned.m64n{op.columns}k{depth}.f32.{element}.{element}"
    # imm-trans-a, imm-trans-b; TF32 has no transpose immediates (both operands K-major)
    transposes = "" if tf32 else f", {int(op.lhs_m_major)}, {int(not op.rhs_k_major)}"
    text = f"{{ .reg .pred p; setp.ne.b32 p, ${2 * count + 2}, 0; {instruction} {{{registers}}}, ${2 * count}, ${2 * count + 1}, p, 1, 1{transposes}; }}"
    for step in range(op.depth // depth):
        lhs_descriptor, rhs_descriptor = operand_descriptors(builder, op, lhs_base, rhs_base, step * depth)
        accumulators = _inline_asm(builder, text, _tied(count, "l,l,r"), [*accumulators, lhs_descriptor, rhs_descriptor, scale], count)
    _inline_asm(builder, "wgmma.commit_group.sync.aligned;", "", [], 0)
    return builder.ops, accumulators


def lower_register_wgmma(op: loop.WgmmaOp, rhs_base: SSAValue) -> tuple[list[Operation], list[SSAValue]]:
    """`op` with A from registers: fence (it also orders the A registers' last writes before
    the products read them), K / 16 `wgmma.mma_async ... {d}, {a0, a1, a2, a3}, b-desc, p, 1, 1,
    trans-b` (PTX's register-A form: no A descriptor, no trans-a), each A register a
    `vector<2xT>` passed as its 32 bits, then commit."""
    builder = _Builder()
    element = str(op.element_type)

    def words() -> list[SSAValue]:
        return [builder.emit(llvm.BitcastOp(register, i32)) for register in op.a]

    return builder.ops, _register_a_products(builder, op, rhs_base, words, f"{element}.{element}", loop.WGMMA_DEPTH, f", {int(not op.rhs_k_major)}")


def _register_a_products(
    builder: _Builder, op: loop.WgmmaOp, rhs_base: SSAValue, words: Callable[[], Sequence[SSAValue]], types: str, depth: int, transpose_b: str
) -> list[SSAValue]:
    """Fence, one register-A `wgmma.mma_async ... m64nNk{depth}.f32.{types}` per `depth` of
    `op.depth` (A: the step's 4 32-bit values of `words()`, which emits what they need after the
    fence, then `transpose_b`'s immediate if any), commit; returns the accumulators."""
    count = op.columns // 2
    accumulators = list(op.c)
    _inline_asm(builder, "wgmma.fence.sync.aligned;", "", [], 0)
    scale = builder.constant(1, i32)
    registers = ",".join(f"${i}" for i in range(count))
    a = ",".join(f"${2 * count + i}" for i in range(4))
    instruction = f"wgmma.mma_async.sync.aligned.m64n{op.columns}k{depth}.f32.{types}"
    text = f"{{ .reg .pred p; setp.ne.b32 p, ${2 * count + 5}, 0; {instruction} {{{registers}}}, {{{a}}}, ${2 * count + 4}, p, 1, 1{transpose_b}; }}"
    a_words = words()
    for step in range(op.depth // depth):
        rhs_descriptor = _block_descriptor(builder, op.rhs, op.rhs_indices, rhs_base, step * depth, k_major=op.rhs_k_major)
        accumulators = _inline_asm(builder, text, _tied(count, "r,r,r,r,l,r"), [*accumulators, *a_words[4 * step : 4 * step + 4], rhs_descriptor, scale], count)
    _inline_asm(builder, "wgmma.commit_group.sync.aligned;", "", [], 0)
    return accumulators


TF32_A_ROWS = (0, 8)
"""Row offsets (of M) of a lane's TF32 A registers from 16 w + g: registers 0, 2 at the first,
1, 3 at the second; registers 0, 1 at depth t, 2, 3 at t + 4 (PTX's m64k8 .tf32 A fragment,
mma.sync m16n8k8's; lane l, g = l / 4, t = l % 4, warp w of the warpgroup)."""


def lower_register_tf32_wgmma(op: loop.WgmmaOp, lhs_base: SSAValue, rhs_base: SSAValue) -> tuple[list[Operation], list[SSAValue]]:
    """`op` (f32, `mlc.operand_major` ["m", "k"]) with A loaded into registers: A's block is
    stored M-major (K rows of M, swizzled like an N-major B), a layout TF32 wgmma cannot read
    from shared memory, so each thread loads its fragment with 32-bit `ld.shared` (4 a step of 8,
    `TF32_A_ROWS`; all K / 8 steps' loads first), then fence, K / 8 `wgmma.mma_async ...
    m64nNk8.f32.tf32.tf32 {d}, {a0, a1, a2, a3}, b-desc, p, 1, 1` (no transpose immediates: B is
    K-major) and commit. The loads read the bits as they are: the tensor core ignores the low 13.

    The loads come after a `wgmma.wait_group N - 1`, N = `mlc.a_register_sets` (1 when absent): PTX
    leaves writing a product's A registers before a wait that completes it undefined, and in a K
    loop of one copy (N = 1) the loads rewrite the registers the previous step's products read, so
    they wait for all of them (one warpgroup's products then never overlap across K steps; the
    other warpgroup's run meanwhile: 1-2% slower than two sets at 4096^3 and 8192^3 on an H100,
    BENCHMARKS.md, tf16). With N copies an iteration (loop-unroll)
    each copy's loads are values of their own (their own PTX registers), last read by the product
    N steps back, which a wait for N - 1 groups in flight has completed (one group a step).

    Bank conflicts. A load's 32 lanes read 8 consecutive f32 of M (two 16-byte chunks c, c + 1,
    c even) in each of 4 rows of K; the 128-byte swizzle XORs row r's chunks with r mod 8, and
    {c, c + 1} is closed under XOR 1, so rows t = 0..3 (registers 0 or 1 of every lane) would
    conflict two ways. Instead load j (0, 1) of a row offset reads depth t + 4 ((t mod 2) XOR j):
    rows {0, 5, 2, 7}, then {4, 1, 6, 3}, whose XORs put the 4 pairs in 8 distinct chunks
    (conflict-free), and a select by t mod 2 puts each load in its register."""
    builder = _Builder()
    memref_type = op.lhs.type  # type: ignore[union-attr]
    assert isinstance(memref_type, MemRefType)
    thread_read = llvm.CallIntrinsicOp("llvm.nvvm.read.ptx.sreg.tid.x", [], [i32])
    builder.ops.append(thread_read)
    widened = builder.emit(llvm.ZExtOp(thread_read.results[0], i64))
    thread = builder.emit(UnrealizedConversionCastOp.get([widened], [IndexType()]))
    lane = builder.emit(arith.RemUIOp(thread, builder.constant(loop.WARP_SIZE)))
    warp = builder.emit(arith.RemUIOp(builder.emit(arith.DivUIOp(thread, builder.constant(loop.WARP_SIZE))), builder.constant(4)))
    group = builder.emit(arith.DivUIOp(lane, builder.constant(4)))
    quad = builder.emit(arith.RemUIOp(lane, builder.constant(4)))
    odd_bit = builder.emit(arith.AndIOp(quad, builder.constant(1)))
    odd = builder.emit(arith.CmpiOp(odd_bit, builder.constant(0), "ne"))
    # load j reads depth t + 4 ((t mod 2) XOR j): t + 4 (t mod 2), then t + 4 - 4 (t mod 2)
    first_depth = builder.add(quad, builder.mul(odd_bit, 4))
    second_depth = builder.add(quad, builder.mul(builder.emit(arith.XOrIOp(odd_bit, builder.constant(1))), 4))
    sets = attributes.A_REGISTER_SETS.read(op)
    in_flight = 0 if sets is None else sets.value.data - 1  # type: ignore[attr-defined]
    _inline_asm(builder, f"wgmma.wait_group.sync.aligned {in_flight};", "", [], 0)  # the products that read these registers
    *outer, k_origin, m_origin = op.lhs_indices
    row = builder.add(builder.add(m_origin, builder.mul(warp, 16)), group)  # M, along the buffer's columns
    depths = [builder.add(k_origin, first_depth), builder.add(k_origin, second_depth)]  # K, along its rows
    words: list[SSAValue] = []
    for step in range(op.depth // loop.TF32_WGMMA_DEPTH):
        loaded: list[list[SSAValue]] = []
        for depth in depths:
            loaded.append([])
            for row_offset in TF32_A_ROWS:
                at = [*outer, builder.add(depth, builder.constant(step * loop.TF32_WGMMA_DEPTH)), builder.add(row, builder.constant(row_offset))]
                address_ops, address = swizzled_address(lhs_base, memref_type, at)
                builder.ops.extend(address_ops)
                loaded[-1].append(builder.emit(llvm.LoadOp(address, i32)))
        # depth t: load 0 on even lanes, load 1 on odd ones; depth t + 4 the other
        near = [builder.emit(arith.SelectOp(odd, loaded[1][h], loaded[0][h])) for h in range(2)]
        far = [builder.emit(arith.SelectOp(odd, loaded[0][h], loaded[1][h])) for h in range(2)]
        words += [near[0], near[1], far[0], far[1]]
    # no transpose immediates: TF32 reads B K-major only
    return builder.ops, _register_a_products(builder, op, rhs_base, lambda: words, "tf32.tf32", loop.TF32_WGMMA_DEPTH, "")


def operand_descriptors(builder: _Builder, op: loop.WgmmaOp, lhs_base: SSAValue, rhs_base: SSAValue, depth: int) -> tuple[SSAValue, SSAValue]:
    """The matrix descriptors of `op`'s A and B blocks `depth` elements down K: each K-major (K
    along its rows' 128-byte lines) or MN-major (K down its rows): A K-major unless
    `op.lhs_m_major`, B N-major unless `op.rhs_k_major` (see the module docstring)."""
    return (
        _block_descriptor(builder, op.lhs, op.lhs_indices, lhs_base, depth, k_major=not op.lhs_m_major),
        _block_descriptor(builder, op.rhs, op.rhs_indices, rhs_base, depth, k_major=op.rhs_k_major),
    )


def _block_descriptor(builder: _Builder, buffer: SSAValue, indices: Sequence[SSAValue], base: SSAValue, depth: int, k_major: bool) -> SSAValue:
    """The descriptor of the operand block at `indices` of `buffer` (a swizzled buffer at `base`),
    `depth` elements down K: along the last dimension if `k_major`, else the next-to-last."""
    memref_type = buffer.type
    assert isinstance(memref_type, MemRefType)
    *outer, row, column = indices
    if k_major:
        at, offsets = [*outer, row, builder.add(column, builder.constant(depth))], LHS_OFFSETS
    else:
        at, offsets = [*outer, builder.add(row, builder.constant(depth)), column], rhs_offsets(memref_type.get_shape()[-2])
    return _descriptor(builder, base, _linear_byte_offset(builder, memref_type, at), *offsets, 128)


def lower_wgmma_wait(op: loop.WgmmaWaitOp) -> tuple[list[Operation], list[SSAValue]]:
    """`wgmma.wait_group N` with the accumulators tied through it (see the module docstring)."""
    builder = _Builder()
    count = len(op.accumulators)
    results = _inline_asm(builder, f"wgmma.wait_group.sync.aligned {op.groups_in_flight};", _tied(count, ""), list(op.accumulators), count)
    return builder.ops, results


def fence_proxy_async() -> llvm.InlineAsmOp:
    """Orders this thread's completed generic-proxy writes of shared memory before async-proxy reads."""
    return llvm.InlineAsmOp(FENCE_PROXY_ASYNC, "", [], [], has_side_effects=True)


PACKED_CONVERSION = {"f16": "f16x2", "bf16": "bf16x2"}
"""The PTX type of two 16-bit floats rounded from two f32 by one `cvt.rn`, per element type."""


def lower_packed_roundings(kernel: Operation) -> None:
    """Each `arith.truncf` of a vector<2xf32> to f16/bf16 in `kernel` whose lanes are only
    extracted (what `async_pipeline.pack_roundings` leaves after a wgmma loop) becomes one
    `cvt.rn.{f16x2,bf16x2}.f32` (sm_80+) in inline PTX, the extracted lanes its 16-bit halves.

    Why inline PTX: LLVM scalarizes a packed `fptrunc` whose lanes are extracted into one
    `cvt.rn.f16.f32` per lane, which makes ptxas serialize a deferred wgmma pipeline
    (`async_pipeline.PACKED_ROUNDING`)."""
    for op in [op for op in kernel.walk() if isinstance(op, arith.TruncFOp)]:
        source, result = op.operands[0].type, op.result.type
        if not (isinstance(source, VectorType) and source.get_shape() == (2,) and source.element_type == f32):
            continue
        assert isinstance(result, VectorType)
        extracts = [use.operation for use in op.result.uses]
        if not all(isinstance(extract, vector.ExtractOp) and not extract.dynamic_position for extract in extracts):
            continue
        builder = _Builder()
        lanes = [builder.emit(vector.ExtractOp(op.operands[0], [lane], f32)) for lane in range(2)]
        # cvt.rn.f16x2.f32 d, a, b puts a in the upper half of d and b in the lower one
        packed_type = PACKED_CONVERSION[str(result.element_type)]
        call = llvm.InlineAsmOp(f"cvt.rn.{packed_type}.f32 $0, $1, $2;", "=r,f,f", [lanes[1], lanes[0]], [i32], has_side_effects=False)
        builder.ops.append(call)
        halves = []
        for shift in (0, 16):
            bits = call.results[0] if not shift else builder.emit(arith.ShRUIOp(call.results[0], builder.constant(shift, i32)))
            halves.append(builder.emit(arith.BitcastOp(builder.emit(arith.TruncIOp(bits, IntegerType(16))), result.element_type)))
        Rewriter.insert_op(builder.ops, InsertPoint.before(op))
        for extract in extracts:
            assert isinstance(extract, vector.ExtractOp)
            (lane,) = extract.static_position.get_values()
            extract.result.replace_all_uses_with(halves[lane])
            extract.detach()
            extract.erase()
        op.detach()
        op.erase()


def prepare_wgmma_kernel(kernel: Operation) -> bool:
    """Whether `kernel` issues warpgroup products (`loop.wgmma`); in one that does, its packed
    roundings are lowered first (`lower_packed_roundings`: sm_80+ PTX, which a wgmma kernel's
    sm_90a target has)."""
    if not any(isinstance(op, loop.WgmmaOp) for op in kernel.walk()):
        return False
    lower_packed_roundings(kernel)
    return True
