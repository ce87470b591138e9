"""A hand-built TMA + mbarrier producer/consumer wgmma GEMM (sm_90a): does TMA pay for mlc?

A measurement, not a path of the compiler: the kernel is LLVM IR written here (not lowered
from graph IR), to learn what mlc's wgmma main loop would gain from the changes issue 14 lists
before building them into the passes. It computes C = A @ B for row-major f16/bf16 A (M x K),
B (K x N) and C (M x N), f32 accumulation, M a multiple of 128, N of 256, K of 64, and is timed
against `torch.matmul` (cuBLAS), the Triton kernel of `triton_matmul.py` and `mlc.compile`'s
current kernel in the same process.

The kernel: 128x256x64 blocks, S stages of shared memory (A 128x64, B 64x256 per stage, 48 KiB,
the 128-byte swizzle wgmma reads), 3 warpgroups. Warpgroup 0 is the producer: it gives registers
back (`setmaxnreg.dec 40`) and one thread issues, per K step, `mbarrier.arrive.expect_tx` on the
stage's full barrier and 5 `cp.async.bulk.tensor.2d` (one A box of 128x64, four B boxes of 64x64)
completing on it, after waiting on the stage's empty barrier. Warpgroups 1-2 are consumers
(`setmaxnreg.inc 232`), 64 rows each: wait on the full barrier, issue 4 `wgmma.mma_async
m64n256k16`, commit, `wgmma.wait_group 1` (one product in flight), then one lane per warp arrives
on the previous stage's empty barrier. No `bar.sync` in the main loop. The tensor maps live in
global memory (`mlc.runtime.tensor_maps`), acquired once by the producer thread. Tiles are taken
in a grouped order (GROUP_M block rows at a time, Triton's); `--persistent` launches one block per
multiprocessor looping over tiles, so that the producer fetches the next tile's stages while the
consumers store the last one.

Usage (GPU machine): python bench/tma_matmul.py [--sizes 4096 8192] [--shapes 4096x3072x1024 ...]
[--elements f16 bf16] [--stages 3 4] [--group-m 4 8] [--persistent no|yes|both] [--registers yes|no|both]
[--cluster 1 2] [--epilogue direct tma] [--repeat 2]
`--cluster 2` launches clusters of two blocks (`.reqnctapercluster 2, 1, 1`) on vertically adjacent
tiles of one column block: each block issues its own A box and two of the four B boxes with
`.multicast::cluster` (mask 0b11), so each B byte leaves L2 once per cluster instead of once per
block (48 -> 32 KiB per block and K step); the empty barriers count both blocks' consumer warps
(each warp's lanes 0 and 1 arrive on block 0's and block 1's through `mapa`), and a cluster barrier
after the barriers' init and before exit keeps the peer's copies and arrivals inside its lifetime.
Limits: no masking (shapes must be multiples of the block), no epilogue but the rounding store.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BM, BN, BK = 128, 256, 64
CONSUMERS = 2
THREADS = 128 * (1 + CONSUMERS)
A_STAGE = BM * BK * 2
B_BOX = BK * 64 * 2
B_STAGE = BK * BN * 2
ACCUMULATORS = BN // 2  # f32 per thread of a consumer warpgroup (64 x BN over 128 threads)
LLVM_TYPE = {"f16": "half", "bf16": "bfloat"}


@dataclass(frozen=True)
class Config:
    element: str
    m: int
    n: int
    k: int
    stages: int = 4
    group_m: int = 8
    persistent: bool = False
    registers: bool = True
    """Whether the warpgroups move registers (`setmaxnreg`: producer down to 40, consumers up to 232)."""
    epilogue: str = "direct"
    """"direct": each thread stores its fragment's pairs (4-byte stores, half a sector each);
    "tma": each consumer warpgroup writes its 64x128 halves with `stmatrix` into a 128-byte-swizzled
    staging buffer and one thread stores them with `cp.async.bulk.tensor` (two 64x64 boxes), which
    run on while the warpgroup starts its next tile."""
    cluster: int = 1
    """CTAs per cluster along M (1 or 2): with 2, the two blocks of a cluster take vertically
    adjacent tiles of one column block and each issues half of the shared B stage, multicast to both."""

    @property
    def staging_bytes(self) -> int:
        """The epilogue's staging buffer: 64 x 128 elements per consumer warpgroup."""
        return CONSUMERS * 64 * 128 * 2 if self.epilogue == "tma" else 0

    @property
    def barrier_offset(self) -> int:
        return self.stages * (A_STAGE + B_STAGE) + self.staging_bytes

    @property
    def shared_bytes(self) -> int:
        return self.barrier_offset + 2 * self.stages * 8

    @property
    def tiles(self) -> int:
        return (self.m // BM) * (self.n // BN)

    @property
    def units(self) -> int:
        """Work units: tiles of `cluster` vertically adjacent blocks (one per cluster)."""
        return self.tiles // self.cluster


class Ir:
    """Collects LLVM IR lines; `fresh` names values."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def __call__(self, line: str) -> None:
        self.lines.append("  " + line if not line.endswith(":") else line)

    def value(self, hint: str, expression: str) -> str:
        name = self.fresh(hint)
        self(f"{name} = {expression}")
        return name


FLOATS = "{" + ", ".join(["float"] * ACCUMULATORS) + "}"


def _accumulator_operands(ir: Ir, struct: str) -> str:
    """The accumulators of `struct` as inline-asm operands (tied to the asm's outputs)."""
    values = [ir.value("a", f"extractvalue {FLOATS} {struct}, {i}") for i in range(ACCUMULATORS)]
    return ", ".join(f"float {v}" for v in values)


def _tied(extra: str) -> str:
    return ",".join(["=f"] * ACCUMULATORS + [str(i) for i in range(ACCUMULATORS)] + ([extra] if extra else []))


def _wgmma(ir: Ir, element: str, accumulators: str, descriptor_a: str, descriptor_b: str) -> str:
    """One m64n256k16 product (as `wgmma_nvvm.lower_wgmma` writes it: A K-major, B N-major)."""
    n = ACCUMULATORS
    registers = ",".join(f"${i}" for i in range(n))
    text = (
        f"{{ .reg .pred p; setp.ne.b32 p, ${2 * n + 2}, 0; wgmma.mma_async.sync.aligned.m64n{BN}k16.f32.{element}.{element} "
        f"{{{registers}}}, ${2 * n}, ${2 * n + 1}, p, 1, 1, 0, 1; }}"
    )
    operands = _accumulator_operands(ir, accumulators)
    return ir.value("acc", f'call {FLOATS} asm sideeffect "{text}", "{_tied("l,l,r")}"({operands}, i64 {descriptor_a}, i64 {descriptor_b}, i32 1)')


def _wait_group(ir: Ir, accumulators: str, pending: int) -> str:
    operands = _accumulator_operands(ir, accumulators)
    return ir.value("acc", f'call {FLOATS} asm sideeffect "wgmma.wait_group.sync.aligned {pending};", "{_tied("")}"({operands})')


def _descriptor(ir: Ir, address: str, leading: int, stride: int) -> str:
    """The matrix descriptor of the 128-byte-swizzled matrix at shared `address` (`wgmma_nvvm`)."""
    start = ir.value("d", f"lshr i64 {ir.value('d', f'and i64 {address}, 262143')}, 4")
    fields = ((leading >> 4) << 16) | ((stride >> 4) << 32) | (1 << 62)
    return ir.value("desc", f"or i64 {start}, {fields}")


def _tile_origin(ir: Ir, config: Config, tile: str) -> tuple[str, str]:
    """(row, column) of this block's tile of work unit number `tile` in the grouped order (a unit
    is `cluster` vertically adjacent tiles; the block's rank in its cluster picks one)."""
    tiles_m, tiles_n = config.m // (BM * config.cluster), config.n // BN
    group = config.group_m * tiles_n
    first_m = ir.value("t", f"mul i32 {ir.value('t', f'udiv i32 {tile}, {group}')}, {config.group_m}")
    size_m = ir.value("t", f"call i32 @llvm.umin.i32(i32 {ir.value('t', f'sub i32 {tiles_m}, {first_m}')}, i32 {config.group_m})")
    within = ir.value("t", f"urem i32 {tile}, {group}")
    tile_m = ir.value("t", f"add i32 {first_m}, {ir.value('t', f'urem i32 {within}, {size_m}')}")
    tile_n = ir.value("t", f"udiv i32 {within}, {size_m}")
    row = ir.value("row", f"mul i32 {tile_m}, {BM * config.cluster}")
    if config.cluster > 1:
        row = ir.value("row", f"add i32 {row}, {ir.value('row', f'mul i32 %rank, {BM}')}")
    return row, ir.value("col", f"mul i32 {tile_n}, {BN}")


def _barrier(ir: Ir, index: str) -> str:
    """The mbarrier number `index`: full barriers 0..S-1, then empty barriers S..2S-1."""
    return ir.value("bar", f"getelementptr i64, ptr addrspace(3) %barriers, i32 {index}")


def _stage_and_parity(ir: Ir, config: Config, iteration: str) -> tuple[str, str]:
    """The stage K step number `iteration` (counted over the block's tiles) uses, and the parity of
    its full barrier's phase for that use (the empty barrier's is the other one's)."""
    stage = ir.value("s", f"urem i32 {iteration}, {config.stages}")
    parity = ir.value("p", f"and i32 {ir.value('r', f'udiv i32 {iteration}, {config.stages}')}, 1")
    return stage, parity


def _spin(ir: Ir, barrier: str, parity: str, label: str) -> None:
    """Waits until the phase of `barrier` with `parity` has completed."""
    ir(f"br label %{label}")
    ir(f"{label}:")
    done = ir.value("ok", f"call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) {barrier}, i32 {parity})")
    ir(f"br i1 {done}, label %{label}.done, label %{label}")
    ir(f"{label}.done:")


def _tile_loop_header(ir: Ir, prefix: str, entry: str) -> tuple[str, str]:
    """Opens the loop over this block's tiles (block, block + grid, ...): (the tile, the K steps
    of the block's earlier tiles, which number the stages' uses and so their mbarrier phases)."""
    tile, done = f"%{prefix}.tile", f"%{prefix}.done"
    ir(f"br label %{prefix}.tiles")
    ir(f"{prefix}.tiles:")
    ir(f"{tile} = phi i32 [%unit, %{entry}], [%{prefix}.tile.next, %{prefix}.tile.latch]")
    ir(f"{done} = phi i32 [0, %{entry}], [%{prefix}.done.next, %{prefix}.tile.latch]")
    return tile, done


def _tile_loop_latch(ir: Ir, config: Config, prefix: str, done: str, exit_label: str) -> None:
    """Closes the loop `_tile_loop_header` opened: the next tile is this one + the grid's size."""
    ir(f"br label %{prefix}.tile.latch")
    ir(f"{prefix}.tile.latch:")
    steps = config.k // BK
    ir(f"%{prefix}.done.next = add i32 {done}, {steps}")
    ir(f"%{prefix}.tile.next = add i32 %{prefix}.tile, %units")
    more = ir.value("more", f"icmp ult i32 %{prefix}.tile.next, {config.units}")
    ir(f"br i1 {more}, label %{prefix}.tiles, label %{exit_label}")


def _producer(ir: Ir, config: Config) -> None:
    """Warpgroup 0: thread 0 fills the stages, the others leave."""
    ir("producer:")
    if config.registers:
        ir("call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)")
    ir("br i1 %first, label %produce, label %exit")
    ir("produce:")
    ir('call void asm sideeffect "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l"(ptr %map_a)')
    ir('call void asm sideeffect "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l"(ptr %map_b)')
    tile, done = _tile_loop_header(ir, "p", "produce")
    row, column = _tile_origin(ir, config, tile)
    ir("br label %p.steps")
    ir("p.steps:")
    ir("%p.k = phi i32 [0, %p.tiles], [%p.k.next, %p.issue]")
    iteration = ir.value("it", f"add i32 {done}, %p.k")
    stage, parity = _stage_and_parity(ir, config, iteration)
    empty = _barrier(ir, ir.value("e", f"add i32 {stage}, {config.stages}"))
    _spin(ir, empty, ir.value("p", f"xor i32 {parity}, 1"), "p.free")
    ir("br label %p.issue")
    ir("p.issue:")
    full = _barrier(ir, stage)
    ir(f"call i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3) {full}, i32 {A_STAGE + B_STAGE})")
    depth = ir.value("kx", f"mul i32 %p.k, {BK}")
    a_offset = ir.value("o", f"mul i32 {stage}, {A_STAGE}")
    a_target = ir.value("dst", f"addrspacecast ptr addrspace(3) {ir.value('g', f'getelementptr i8, ptr addrspace(3) @smem, i32 {a_offset}')} to ptr addrspace(7)")
    copy = "call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d"
    ir(f"{copy}(ptr addrspace(7) {a_target}, ptr addrspace(3) {full}, ptr %map_a, i32 {depth}, i32 {row}, i16 0, i64 0, i1 false, i1 false, i32 0)")
    b_base = ir.value("o", f"add i32 {ir.value('o', f'mul i32 {stage}, {B_STAGE}')}, {config.stages * A_STAGE}")
    boxes = BN // 64 // config.cluster  # this block's share of the B boxes, multicast to the cluster
    if config.cluster > 1:
        b_base = ir.value("o", f"add i32 {b_base}, {ir.value('o', f'mul i32 %rank, {boxes * B_BOX}')}")
        column = ir.value("x", f"add i32 {column}, {ir.value('x', f'mul i32 %rank, {boxes * 64}')}")
    multicast = f"i16 {(1 << config.cluster) - 1}, i64 0, i1 true" if config.cluster > 1 else "i16 0, i64 0, i1 false"
    for box in range(boxes):
        offset = ir.value("o", f"add i32 {b_base}, {box * B_BOX}")
        target = ir.value("dst", f"addrspacecast ptr addrspace(3) {ir.value('g', f'getelementptr i8, ptr addrspace(3) @smem, i32 {offset}')} to ptr addrspace(7)")
        x = ir.value("x", f"add i32 {column}, {box * 64}")
        ir(f"{copy}(ptr addrspace(7) {target}, ptr addrspace(3) {full}, ptr %map_b, i32 {x}, i32 {depth}, {multicast}, i1 false, i32 0)")
    ir("%p.k.next = add i32 %p.k, 1")
    more = ir.value("more", f"icmp ult i32 %p.k.next, {config.k // BK}")
    ir(f"br i1 {more}, label %p.steps, label %p.steps.end")
    ir("p.steps.end:")
    _tile_loop_latch(ir, config, "p", done, "exit")


def _release(ir: Ir, config: Config, iteration: str, condition: str) -> None:
    """One lane per warp arrives on the empty barrier of `iteration`'s stage if `condition`; in a
    cluster, lane r arrives on block r's (every block's producer writes into this block's stage)."""
    stage, _ = _stage_and_parity(ir, config, iteration)
    empty = _barrier(ir, ir.value("e", f"add i32 {stage}, {config.stages}"))
    address = ir.value("ea", f"ptrtoint ptr addrspace(3) {empty} to i32")
    if config.cluster == 1:
        flag = ir.value("f", f"zext i1 {ir.value('f', f'and i1 {condition}, %lane0')} to i32")
        ir(f'call void asm sideeffect "{{ .reg .pred p; setp.ne.b32 p, $1, 0; @p mbarrier.arrive.shared::cta.b64 _, [$0]; }}", "r,r"(i32 {address}, i32 {flag})')
        return
    arrives = ir.value("f", f"and i1 {condition}, {ir.value('f', f'icmp ult i32 %lane, {config.cluster}')}")
    flag = ir.value("f", f"zext i1 {arrives} to i32")
    ir(
        'call void asm sideeffect "{ .reg .pred p; .reg .b32 remote; setp.ne.b32 p, $1, 0; mapa.shared::cluster.u32 remote, $0, $2; '
        f'@p mbarrier.arrive.shared::cluster.b64 _, [remote]; }}", "r,r,r"(i32 {address}, i32 {flag}, i32 %lane)'
    )


def _consumer(ir: Ir, config: Config) -> None:
    """Warpgroups 1..: 64 rows each of every tile, products from the stages, then the stores."""
    ir("consumer:")
    if config.registers:
        ir("call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 232)")
    ir("%ctid = sub i32 %tid, 128")
    ir("%cwg = lshr i32 %ctid, 7")
    ir("%warp = and i32 %ctid.w, 3")
    ir("%lane = and i32 %tid, 31")
    ir("%lane0 = icmp eq i32 %lane, 0")
    ir("%ctid.mod = and i32 %ctid, 127")
    ir("%smem_base = ptrtoint ptr addrspace(3) @smem to i64")
    ir("%cwg_rows = mul i32 %cwg, 64")
    ir(f"%cwg_bytes = mul i32 %cwg, {64 * 128}")
    if config.epilogue == "tma":
        ir("%issuer = icmp eq i32 %ctid.mod, 0")  # thread 0 of each consumer warpgroup stores
        ir("%issuer32 = zext i1 %issuer to i32")
        ir("%named = add i32 %cwg, 1")  # bar.sync id of the warpgroup (0 is the block's)
        ir('call void asm sideeffect "{ .reg .pred p; setp.ne.b32 p, $1, 0; @p fence.proxy.tensormap::generic.acquire.gpu [$0], 128; }", "l,r"(ptr %map_c, i32 %issuer32)')
        base = ir.value("s", "ptrtoint ptr addrspace(3) @smem to i32")
        share = ir.value("s", f"mul i32 %cwg, {64 * 128 * 2}")
        ir(f"%staging = add i32 {base}, {ir.value('s', f'add i32 {share}, {config.stages * (A_STAGE + B_STAGE)}')}")
    tile, done = _tile_loop_header(ir, "c", "consumer")
    row, column = _tile_origin(ir, config, tile)
    ir("br label %c.steps")
    ir("c.steps:")
    ir("%c.k = phi i32 [0, %c.tiles], [%c.k.next, %c.step.end]")
    ir(f"%c.acc = phi {FLOATS} [zeroinitializer, %c.tiles], [@@LANDED@@, %c.step.end]")
    iteration = ir.value("it", f"add i32 {done}, %c.k")
    stage, parity = _stage_and_parity(ir, config, iteration)
    _spin(ir, _barrier(ir, stage), parity, "c.full")
    ir('call void asm sideeffect "wgmma.fence.sync.aligned;", ""()')
    a_offset = ir.value("a", f"add i32 {ir.value('a', f'mul i32 {stage}, {A_STAGE}')}, %cwg_bytes")
    a_rows = ir.value("a", f"add i64 %smem_base, {ir.value('a', f'zext i32 {a_offset} to i64')}")
    b_offset = ir.value("b", f"add i32 {ir.value('b', f'mul i32 {stage}, {B_STAGE}')}, {config.stages * A_STAGE}")
    b_stage = ir.value("b", f"add i64 %smem_base, {ir.value('b', f'zext i32 {b_offset} to i64')}")
    accumulators = "%c.acc"
    for step in range(BK // 16):
        descriptor_a = _descriptor(ir, ir.value("a", f"add i64 {a_rows}, {step * 32}"), 16, 1024)
        descriptor_b = _descriptor(ir, ir.value("b", f"add i64 {b_stage}, {step * 16 * 128}"), BK * 128, 1024)
        accumulators = _wgmma(ir, config.element, accumulators, descriptor_a, descriptor_b)
    ir('call void asm sideeffect "wgmma.commit_group.sync.aligned;", ""()')
    landed = _wait_group(ir, accumulators, 1)
    previous = ir.value("it", f"sub i32 {iteration}, 1")
    _release(ir, config, previous, ir.value("c", "icmp ne i32 %c.k, 0"))
    ir("br label %c.step.end")
    ir("c.step.end:")
    ir.lines = [line.replace("@@LANDED@@", landed) for line in ir.lines]
    ir("%c.k.next = add i32 %c.k, 1")
    more = ir.value("more", f"icmp ult i32 %c.k.next, {config.k // BK}")
    ir(f"br i1 {more}, label %c.steps, label %c.epilogue")
    ir("c.epilogue:")
    final = _wait_group(ir, landed, 0)
    last = ir.value("it", f"add i32 {done}, {config.k // BK - 1}")
    _release(ir, config, last, "true")
    if config.epilogue == "tma":
        _store_through_shared(ir, config, final, row, column)
    else:
        _store(ir, config, final, row, column)
    _tile_loop_latch(ir, config, "c", done, "c.exit")
    ir("c.exit:")
    if config.epilogue == "tma":  # the last tile's stores must land before the kernel ends
        ir('call void asm sideeffect "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p cp.async.bulk.wait_group 0; }", "r,~{memory}"(i32 %issuer32)')
    ir("br label %exit")


def _store(ir: Ir, config: Config, accumulators: str, row: str, column: str) -> None:
    """Rounds the accumulators to pairs of 16-bit floats and stores them (the wgmma D layout)."""
    element = LLVM_TYPE[config.element]
    group = ir.value("g", "lshr i32 %lane, 2")
    pair = ir.value("t", f"mul i32 {ir.value('t', 'and i32 %lane, 3')}, 2")
    warp_row = ir.value("r", f"add i32 {ir.value('r', 'mul i32 %warp, 16')}, {group}")
    top = ir.value("r", f"add i32 {row}, {ir.value('r', f'add i32 %cwg_rows, {warp_row}')}")
    left = ir.value("c", f"add i32 {column}, {pair}")
    for half in range(2):
        line = ir.value("r", f"add i32 {top}, {8 * half}")
        base = ir.value("i", f"add i32 {ir.value('i', f'mul i32 {line}, {config.n}')}, {left}")
        for block in range(BN // 8):
            values = [ir.value("v", f"extractvalue {FLOATS} {accumulators}, {4 * block + 2 * half + e}") for e in range(2)]
            vector = ir.value("w", f"insertelement <2 x float> undef, float {values[0]}, i32 0")
            vector = ir.value("w", f"insertelement <2 x float> {vector}, float {values[1]}, i32 1")
            rounded = ir.value("h", f"fptrunc <2 x float> {vector} to <2 x {element}>")
            index = ir.value("i", f"add i32 {base}, {8 * block}")
            pointer = ir.value("ptr", f"getelementptr {element}, ptr addrspace(1) %c, i32 {index}")
            ir(f"store <2 x {element}> {rounded}, ptr addrspace(1) {pointer}, align 4")


def _warpgroup_sync(ir: Ir) -> None:
    ir('call void asm sideeffect "bar.sync $0, 128;", "r,~{memory}"(i32 %named)')


def _store_through_shared(ir: Ir, config: Config, accumulators: str, row: str, column: str) -> None:
    """The "tma" epilogue: per half of the warpgroup's 64 x 256 (two 64x64 boxes), `stmatrix`
    x4 of the rounded fragment into the staging buffer (128-byte swizzle: the 16-byte chunk c of
    row r at r * 128 + (c ^ r % 8) * 16, the tensor map's layout, so the 8 rows of a matrix hit
    different banks), a proxy fence and the warpgroup's barrier, then its thread 0 stores both
    boxes with `cp.async.bulk.tensor` and commits them as one bulk group. Before overwriting the
    buffer (the next half, the next tile) that thread waits until the group has read it."""
    element = LLVM_TYPE[config.element]
    quad = ir.value("q", "lshr i32 %lane, 3")  # which of the 4 matrices this lane addresses
    within = ir.value("q", "and i32 %lane, 7")
    lower = ir.value("q", f"mul i32 {ir.value('q', f'and i32 {quad}, 1')}, 8")  # matrices 1 and 3: rows 8..15
    matrix_row = ir.value("q", f"add i32 {ir.value('q', 'mul i32 %warp, 16')}, {ir.value('q', f'add i32 {within}, {lower}')}")
    block_step = ir.value("q", f"lshr i32 {quad}, 1")
    swizzle_row = ir.value("q", f"and i32 {matrix_row}, 7")
    row_bytes = ir.value("q", f"mul i32 {matrix_row}, 128")
    top = ir.value("r", f"add i32 {row}, %cwg_rows")
    for half in range(2):
        ir('call void asm sideeffect "{ .reg .pred p; setp.ne.b32 p, $0, 0; @p cp.async.bulk.wait_group.read 0; }", "r,~{memory}"(i32 %issuer32)')
        _warpgroup_sync(ir)
        for pair in range(8):
            block = 16 * half + 2 * pair  # 8-column blocks block and block + 1
            registers = []
            for b, h in ((block, 0), (block, 1), (block + 1, 0), (block + 1, 1)):
                values = [ir.value("v", f"extractvalue {FLOATS} {accumulators}, {4 * b + 2 * h + e}") for e in range(2)]
                vector = ir.value("w", f"insertelement <2 x float> undef, float {values[0]}, i32 0")
                vector = ir.value("w", f"insertelement <2 x float> {vector}, float {values[1]}, i32 1")
                registers.append(ir.value("h", f"bitcast <2 x {element}> {ir.value('h', f'fptrunc <2 x float> {vector} to <2 x {element}>')} to i32"))
            local_column = ir.value("q", f"add i32 {ir.value('q', f'mul i32 {block_step}, 8')}, {8 * (block - 16 * half)}")
            box = ir.value("q", f"lshr i32 {local_column}, 6")
            chunk = ir.value("q", f"lshr i32 {ir.value('q', f'and i32 {local_column}, 63')}, 3")
            swizzled = ir.value("q", f"mul i32 {ir.value('q', f'xor i32 {chunk}, {swizzle_row}')}, 16")
            offset = ir.value("q", f"add i32 {ir.value('q', f'mul i32 {box}, 8192')}, {ir.value('q', f'add i32 {row_bytes}, {swizzled}')}")
            address = ir.value("q", f"add i32 %staging, {offset}")
            operands = ", ".join(f"i32 {register}" for register in registers)
            ir(f'call void asm sideeffect "stmatrix.sync.aligned.m8n8.x4.shared.b16 [$0], {{$1, $2, $3, $4}};", "r,r,r,r,r,~{{memory}}"(i32 {address}, {operands})')
        ir('call void asm sideeffect "fence.proxy.async.shared::cta;", "~{memory}"()')
        _warpgroup_sync(ir)
        ir(f"br i1 %issuer, label %c.store{half}.{row[1:]}, label %c.stored{half}.{row[1:]}")
        ir(f"c.store{half}.{row[1:]}:")
        for box in range(2):
            x = ir.value("x", f"add i32 {column}, {128 * half + 64 * box}")
            source = ir.value("src", f"add i32 %staging, {8192 * box}")
            ir(f'call void asm sideeffect "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {{$1, $2}}], [$3];", "l,r,r,r,~{{memory}}"(ptr %map_c, i32 {x}, i32 {top}, i32 {source})')
        ir('call void asm sideeffect "cp.async.bulk.commit_group;", "~{memory}"()')
        ir(f"br label %c.stored{half}.{row[1:]}")
        ir(f"c.stored{half}.{row[1:]}:")


def kernel_ir(config: Config) -> str:
    """The LLVM IR of the kernel `tma_matmul` (see the module docstring)."""
    assert config.m % (BM * config.cluster) == 0 and config.n % BN == 0 and config.k % BK == 0
    ir = Ir()
    ir("entry:")
    ir("%tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()")
    ir("%block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()")
    ir("%grid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()")
    ir(f"%barriers = getelementptr i8, ptr addrspace(3) @smem, i32 {config.barrier_offset}")
    ir(f"%unit = udiv i32 %block, {config.cluster}")
    ir(f"%units = udiv i32 %grid, {config.cluster}")
    ir(f"%rank = urem i32 %block, {config.cluster}")  # cluster dims (C, 1, 1): the rank in the cluster
    ir("%first = icmp eq i32 %tid, 0")
    ir("br i1 %first, label %init, label %initialized")
    ir("init:")
    for stage in range(config.stages):
        ir(f"call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) {_barrier(ir, str(stage))}, i32 1)")
        ir(f"call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) {_barrier(ir, str(stage + config.stages))}, i32 {CONSUMERS * 4 * config.cluster})")
    ir("call void @llvm.nvvm.fence.proxy.async.shared_cta()")
    if config.cluster > 1:
        ir('call void asm sideeffect "fence.mbarrier_init.release.cluster;", "~{memory}"()')
    ir("br label %initialized")
    ir("initialized:")
    if config.cluster > 1:  # the peer's multicast copies and arrivals need this block's barriers
        ir("call void @llvm.nvvm.barrier.cluster.arrive()")
        ir("call void @llvm.nvvm.barrier.cluster.wait()")
    else:
        ir("call void @llvm.nvvm.barrier0()")
    ir("%ctid.w = lshr i32 %tid, 5")
    ir("%is_producer = icmp ult i32 %tid, 128")
    ir("br i1 %is_producer, label %producer, label %consumer")
    _producer(ir, config)
    _consumer(ir, config)
    ir("exit:")
    if config.cluster > 1:  # the peer still arrives on this block's empty barriers until it is done
        ir("call void @llvm.nvvm.barrier.cluster.arrive()")
        ir("call void @llvm.nvvm.barrier.cluster.wait()")
    ir("ret void")
    body = "\n".join(ir.lines)
    cluster = f' "nvvm.cluster_dim"="{config.cluster},1,1"' if config.cluster > 1 else ""
    map_c = ", ptr %map_c" if config.epilogue == "tma" else ""
    return f"""target triple = "nvptx64-nvidia-cuda"
@smem = external addrspace(3) global [0 x i8], align 1024
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.umin.i32(i32, i32)
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.barrier.cluster.arrive()
declare void @llvm.nvvm.barrier.cluster.wait()
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3), i32)
declare i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3), i32)
declare void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7), ptr addrspace(3), ptr, i32, i32, i16, i64, i1, i1, i32)
declare void @llvm.nvvm.fence.proxy.async.shared_cta()
declare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)
declare void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 immarg)

define ptx_kernel void @tma_matmul(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr %map_a, ptr %map_b{map_c}) #0 {{
{body}
}}
attributes #0 = {{ "nvvm.maxntid"="{THREADS}" "nvvm.minctasm"="1"{cluster} }}
"""


def blocks(config: Config, multiprocessors: int) -> int:
    """The grid: one block per tile, or per multiprocessor (at most, whole clusters) when persistent."""
    if not config.persistent:
        return config.tiles
    return min(config.tiles, multiprocessors - multiprocessors % config.cluster)


def resident_clusters(function, config: Config) -> int | None:
    """How many clusters of `config.cluster` blocks the device runs at once
    (`cuOccupancyMaxActiveClusters`; a GPC with an odd number of free multiprocessors leaves one
    idle), or None where the driver does not say."""
    from cuda.bindings import driver

    launch = driver.CUlaunchConfig()
    launch.gridDimX, launch.gridDimY, launch.gridDimZ = config.tiles, 1, 1
    launch.blockDimX, launch.blockDimY, launch.blockDimZ = THREADS, 1, 1
    launch.sharedMemBytes = config.shared_bytes
    try:
        with function.device.activated():
            error, count = driver.cuOccupancyMaxActiveClusters(function.handle, launch)
    except (TypeError, AttributeError):  # a cuda-python without the query's binding
        return None
    return int(count) if not error and count else None


def host_module(config: Config, multiprocessors: int = 132) -> str:
    """A host function `main(a, b) -> a @ b` launching the kernel with its two tensor maps
    (`mlc.tensor_maps`: the runtime encodes and passes them), for `HostProgram.for_cuda_plan`."""
    assert config.epilogue == "direct" and config.cluster == 1, "the host module launches the plain kernel"
    element = config.element
    a, b, c = (f"memref<{rows}x{columns}x{element}>" for rows, columns in ((config.m, config.k), (config.k, config.n), (config.m, config.n)))
    return f"""builtin.module {{
  llvm.func @tma_matmul(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr, !llvm.ptr) attributes {{nvvm.kernel,
      mlc.dynamic_shared_bytes = {config.shared_bytes} : i64,
      mlc.tensor_maps = [array<i64: 0, 128, {BM}, {BK}>, array<i64: 1, 128, {BK}, 64>]}}
  func.func @main(%a: {a}, %b: {b}) -> {c} {{
    %c = memref.alloc() : {c}
    mlc_gpu.launch @tma_matmul(%a, %b, %c) grid [{blocks(config, multiprocessors)}, 1, 1] block [{THREADS}, 1, 1] : {a}, {b}, {c}
    func.return %c : {c}
  }}
}}"""


def kernel_ptx(config: Config) -> str:
    from llvmlite import binding

    from mlc.backend.nvptx import target_machine

    module = binding.parse_assembly(kernel_ir(config))
    module.verify()
    return target_machine("sm_90a", 83).emit_assembly(module)


class _Address:
    """A device address as a kernel parameter (`KernelArguments.from_values` reads `.pointer`)."""

    def __init__(self, pointer: int):
        self.pointer = pointer


def tma_callable(config: Config, a, b, c):
    """A no-argument launch of the kernel computing c = a @ b (torch tensors on the device)."""
    from mlc.runtime.cuda import CudaModule, KernelArguments, get_device
    from mlc.runtime.tensor_maps import TensorMapGeometry, TensorMapTable

    function = CudaModule(kernel_ptx(config)).function("tma_matmul")
    function.allow_dynamic_shared_memory(config.shared_bytes)
    table, storage = TensorMapTable.on_device(capacity=4)
    map_a = table.address(a.data_ptr(), TensorMapGeometry.row_major(config.element, (config.m, config.k), (BM, BK)))
    map_b = table.address(b.data_ptr(), TensorMapGeometry.row_major(config.element, (config.k, config.n), (BK, 64)))
    maps = [map_a, map_b]
    if config.epilogue == "tma":
        maps.append(table.address(c.data_ptr(), TensorMapGeometry.row_major(config.element, (config.m, config.n), (64, 64))))
    operands = [_Address(tensor.data_ptr()) for tensor in (a, b, c)]
    arguments = KernelArguments.from_values([*operands, *(_Address(address) for address in maps)])
    grid = blocks(config, get_device().properties.multiprocessor_count)
    if config.persistent and config.cluster > 1:
        clusters = resident_clusters(function, config)
        grid = min(grid, clusters * config.cluster) if clusters else grid

    def call():
        function.launch(grid, THREADS, arguments, shared_memory_bytes=config.shared_bytes)

    call.keep = (storage, table)  # the maps' memory lives as long as the launch
    call.grid = grid
    return call


def main() -> None:
    import torch

    from harness import Case, mlc_callable, time_gpu
    from matmul import matmul_source

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[4096, 8192])
    parser.add_argument("--shapes", nargs="+", default=[], help="MxNxK products besides the cubes of --sizes")
    parser.add_argument("--cluster", type=int, nargs="+", default=[1], choices=[1, 2], help="CTAs per cluster (2: B multicast)")
    parser.add_argument("--epilogue", nargs="+", default=["direct"], choices=["direct", "tma"], help="fragment stores or stmatrix + TMA store")
    parser.add_argument("--elements", nargs="+", default=["f16", "bf16"])
    parser.add_argument("--stages", type=int, nargs="+", default=[4])
    parser.add_argument("--persistent", choices=["no", "yes", "both"], default="both")
    parser.add_argument("--group-m", type=int, nargs="+", default=[8], help="block rows per group of the tile order")
    parser.add_argument("--no-mlc", action="store_true", help="skip mlc.compile's current kernel")
    parser.add_argument("--registers", choices=["yes", "no", "both"], default="yes", help="setmaxnreg in the TMA kernel")
    parser.add_argument("--repeat", type=int, default=1, help="time every implementation this many times, interleaved")
    options = parser.parse_args()
    try:
        from triton_matmul import triton_matmul
    except ImportError:
        triton_matmul = None
    generator = torch.Generator(device="cuda").manual_seed(0)
    print(f"{'case':<28} {'impl':<36} {'median us':>10} {'TFLOP/s':>8} {'vs cuBLAS':>9}")
    for element in options.elements:
        dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[element]
        shapes = [(size, size, size) for size in options.sizes] + [tuple(int(d) for d in shape.split("x")) for shape in options.shapes]
        for m, n, k in shapes:
            label = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
            a = torch.randn(m, k, device="cuda", generator=generator).to(dtype)
            b = torch.randn(k, n, device="cuda", generator=generator).to(dtype)
            expected = torch.matmul(a, b)
            implementations = [("cublas", lambda: torch.matmul(a, b))]
            if triton_matmul is not None:
                implementations.append(("triton", lambda: triton_matmul(a, b)))
            if not options.no_mlc:
                case = Case(f"{element} {label}", lambda g: [a, b], torch.matmul, matmul_source(m, n, k, False, element), 0)
                call, _ = mlc_callable(case, [a, b])
                implementations.append(("mlc (cp.async)", call))
            persistent = {"no": [False], "yes": [True], "both": [False, True]}[options.persistent]
            registers = {"yes": [True], "no": [False], "both": [True, False]}[options.registers]
            variants = [
                (stages, group, keep_going, moved, cluster, epilogue)
                for stages in options.stages
                for group in options.group_m
                for keep_going in persistent
                for moved in registers
                for cluster in options.cluster
                for epilogue in options.epilogue
            ]
            for stages, group, keep_going, moved, cluster, epilogue in variants:
                config = Config(element, m, n, k, stages=stages, group_m=group, persistent=keep_going, registers=moved, cluster=cluster, epilogue=epilogue)
                out = torch.empty_like(expected)
                call = tma_callable(config, a, b, out)
                call()
                torch.cuda.synchronize()
                error = (out.float() - expected.float()).abs().max().item()
                if not torch.allclose(out.float(), expected.float(), rtol=1e-2, atol=1e-1):
                    print(f"{element} {label}: TMA kernel ({config}) differs from cuBLAS: max abs error {error:.3g}")
                    continue
                name = f"tma s{stages} g{group}{f' persistent({call.grid})' if keep_going else ''}{'' if moved else ' no-setmaxnreg'}{f' cluster{cluster}' if cluster > 1 else ''}{' tma-store' if epilogue == 'tma' else ''}"
                implementations.append((name, call))
            for _ in range(options.repeat):
                cublas = None
                for name, function in implementations:
                    median = statistics.median(time_gpu(function))
                    cublas = median if name == "cublas" else cublas
                    tflops = 2 * m * n * k / (median * 1e-6) / 1e12
                    print(f"{element + ' ' + label:<28} {name:<36} {median:>10.1f} {tflops:>8.1f} {cublas / median:>8.2f}x", flush=True)


if __name__ == "__main__":
    main()
