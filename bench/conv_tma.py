"""A hand-built NCHW implicit-GEMM convolution on TMA boxes (sm_90a): what issue 15's design reaches.

A measurement, not a path of the compiler (as `tma_matmul.py` was for the TMA main loop): the
kernel is LLVM IR written here, to learn what reading the NCHW input in place would give mlc's f16
ResNet layer (N=32, 256 -> 256 channels, 56x56, 3x3, padding 1) before building it into the passes.
It is timed against cuDNN (`torch.nn.functional.conv2d`) in the same process.

The GEMM's roles are swapped against mlc's current implicit GEMM (`window_decomposition.py`,
M = padded pixels): M = output channels, N = output pixels, K = (kh, kw, c):

    out[n][o][h][w] = sum over (r, s, c) of W'[o][(r, s, c)] * x[n][c][h + r - pad][w + s - pad]

W' is the weights transposed to (O, KH*KW*C) (a small one-off transpose: a model's weights are
constants). The pixel axis is taken in image rows of 64 columns (56 of them real: the 12.5%
waste of this layout); a block of 128 x 256 outputs is 128 output channels by 4 image rows. A K
step (one filter tap (r, s), 64 input channels) copies the A box (128 x 64 of W', one 2-D TMA copy,
as `tma_matmul.py`) and, per image row j of the block, one **4-D TMA box** {w: 64, h: 1, c: 64,
n: 1} of the NCHW input at (s - pad, h_j + r - pad, c0, n_j), relying on the copy engine's zero
fill outside the tensor for the padding; the box lands as 64 rows (channels) of 64 pixels,
128-byte swizzled: exactly the 64 x 64 B box of an N-major wgmma operand. So the only layout work
left outside the GEMM is the weights' transpose; the accumulators' columns are consecutive pixels
of one channel, stored as 4-byte pairs straight into NCHW (columns 56..63 of each row dropped at
compile time).

**It does not run as designed**: the copy engine needs a box's innermost start coordinate to be a
multiple of 16 bytes (outer ones may be anything, negative included), so the column shifts
s - pad = -1, +1 stop the kernel with an illegal instruction (BENCHMARKS.md, conv11).
`--aligned-columns` starts every box at column 0 instead: wrong results for the taps s != pad,
everything else as designed, which times the box shape (0.89-0.93x cuDNN on an H100).
`conv_tma_shifted.py` is the design that keeps the boxes aligned (the shift after the product).

The rest of the kernel is `tma_matmul.py`'s (its helpers are imported): 3 warpgroups, a producer
thread issuing the copies on full/empty mbarrier pairs, two consumer warpgroups of m64n256k16
products, grouped tile order, optional persistent grid.

Usage (GPU machine): python bench/conv_tma.py [--stages 3 4] [--persistent no|yes|both]
[--repeat 2] [--batch 32] [--channels 256] [--size 56]
Limits: stride 1, 'same' padding of odd square kernels, f16, channels a multiple of 64, image
width at most 64 and even, N * H a multiple of 4 (whole blocks of image rows).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tma_matmul import (  # noqa: E402
    A_STAGE,
    B_BOX,
    B_STAGE,
    BK,
    BM,
    BN,
    CONSUMERS,
    THREADS,
    Ir,
    _Address,
    _barrier,
    _descriptor,
    _release,
    _spin,
    _stage_and_parity,
    _tile_loop_header,
    _tile_loop_latch,
    _tile_origin,
)

ROW = 64
"""Pixel columns per image row in the GEMM's N axis (one 128-byte swizzled box row of f16)."""
ROWS_PER_BLOCK = BN // ROW


class Unclustered:
    """What `tma_matmul`'s tile loop reads of a configuration besides its `tiles`: one tile a work
    unit, no clusters."""

    tiles: int

    @property
    def units(self) -> int:
        """Work units of `tma_matmul`'s tile loop: one tile each (no clusters)."""
        return self.tiles

    @property
    def cluster(self) -> int:
        """Blocks of a cluster for `tma_matmul`'s helpers: none."""
        return 1


@dataclass(frozen=True)
class ConvConfig(Unclustered):
    """One convolution and the kernel's variant. `m`, `n`, `k`, `tiles` are the GEMM's (the
    names `tma_matmul`'s tile order and loops read)."""

    batch: int = 32
    channels: int = 256
    outputs: int = 256
    size: int = 56
    kernel: int = 3
    stages: int = 4
    group_m: int = 8
    persistent: bool = False
    registers: bool = True
    element: str = "f16"
    shift_columns: bool = True
    """False (a timing diagnosis, wrong results for taps s != pad): every input box starts at column
    0, a 16-byte aligned innermost coordinate, which the copy engine requires (see the docstring)."""

    @property
    def pad(self) -> int:
        return self.kernel // 2

    @property
    def m(self) -> int:
        return self.outputs

    @property
    def n(self) -> int:
        return self.batch * self.size * ROW

    @property
    def k(self) -> int:
        return self.kernel * self.kernel * self.channels

    @property
    def tiles(self) -> int:
        return (self.m // BM) * (self.n // BN)

    @property
    def shared_bytes(self) -> int:
        return self.stages * (A_STAGE + B_STAGE) + 2 * self.stages * 8

    def check(self) -> None:
        if self.kernel % 2 == 0 or self.channels % BK or self.outputs % BM:
            raise ValueError(f"odd kernels, channels a multiple of {BK} and outputs of {BM}: {self}")
        if self.size > ROW or self.size % 2 or (self.batch * self.size) % ROWS_PER_BLOCK:
            raise ValueError(f"an image width of at most {ROW}, even, and N * H a multiple of {ROWS_PER_BLOCK}: {self}")


def _image_row(ir: Ir, config: ConvConfig, column: str, box: int) -> tuple[str, str]:
    """(image n, row h) of the block's image row `box`, whose GEMM column starts at `column`."""
    row_number = ir.value("g", f"add i32 {ir.value('g', f'udiv i32 {column}, {ROW}')}, {box}")
    return ir.value("img", f"udiv i32 {row_number}, {config.size}"), ir.value("h", f"urem i32 {row_number}, {config.size}")


def _producer(ir: Ir, config: ConvConfig) -> None:
    """Warpgroup 0: thread 0 fills the stages (A: a box of W'; B: one 4-D box of x per image row)."""
    ir("producer:")
    if config.registers:
        ir("call void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 40)")
    ir("br i1 %first, label %produce, label %exit")
    ir("produce:")
    ir('call void asm sideeffect "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l"(ptr %map_a)')
    ir('call void asm sideeffect "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l"(ptr %map_b)')
    tile, done = _tile_loop_header(ir, "p", "produce")
    row, column = _tile_origin(ir, config, tile)  # type: ignore[arg-type]
    rows = [_image_row(ir, config, column, box) for box in range(ROWS_PER_BLOCK)]
    ir("br label %p.steps")
    ir("p.steps:")
    ir("%p.k = phi i32 [0, %p.tiles], [%p.k.next, %p.issue]")
    iteration = ir.value("it", f"add i32 {done}, %p.k")
    stage, parity = _stage_and_parity(ir, config, iteration)  # type: ignore[arg-type]
    empty = _barrier(ir, ir.value("e", f"add i32 {stage}, {config.stages}"))
    _spin(ir, empty, ir.value("p", f"xor i32 {parity}, 1"), "p.free")
    ir("br label %p.issue")
    ir("p.issue:")
    full = _barrier(ir, stage)
    ir(f"call i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3) {full}, i32 {A_STAGE + B_STAGE})")
    depth = ir.value("kx", f"mul i32 %p.k, {BK}")
    a_offset = ir.value("o", f"mul i32 {stage}, {A_STAGE}")
    a_target = ir.value("dst", f"addrspacecast ptr addrspace(3) {ir.value('g', f'getelementptr i8, ptr addrspace(3) @smem, i32 {a_offset}')} to ptr addrspace(7)")
    flags = "i16 0, i64 0, i1 false, i1 false, i32 0"
    ir(f"call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7) {a_target}, ptr addrspace(3) {full}, ptr %map_a, i32 {depth}, i32 {row}, {flags})")
    tap = ir.value("tap", f"udiv i32 {depth}, {config.channels}")
    channel = ir.value("c0", f"urem i32 {depth}, {config.channels}")
    # x[n][c][h + r - pad][w + s - pad]: the box's start may be -pad (zero filled by the copy engine)
    column_shift = ir.value("s", f"urem i32 {tap}, {config.kernel}") if config.shift_columns else config.pad
    w0 = ir.value("w0", f"sub i32 {column_shift}, {config.pad}")
    shift = ir.value("dh", f"sub i32 {ir.value('r', f'udiv i32 {tap}, {config.kernel}')}, {config.pad}")
    b_base = ir.value("o", f"add i32 {ir.value('o', f'mul i32 {stage}, {B_STAGE}')}, {config.stages * A_STAGE}")
    for box, (image, h) in enumerate(rows):
        offset = ir.value("o", f"add i32 {b_base}, {box * B_BOX}")
        target = ir.value("dst", f"addrspacecast ptr addrspace(3) {ir.value('g', f'getelementptr i8, ptr addrspace(3) @smem, i32 {offset}')} to ptr addrspace(7)")
        source_row = ir.value("hr", f"add i32 {h}, {shift}")
        ir(
            f"call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.4d(ptr addrspace(7) {target}, ptr addrspace(3) {full}, ptr %map_b, "
            f"i32 {w0}, i32 {source_row}, i32 {channel}, i32 {image}, {flags})"
        )
    ir("%p.k.next = add i32 %p.k, 1")
    more = ir.value("more", f"icmp ult i32 %p.k.next, {config.k // BK}")
    ir(f"br i1 {more}, label %p.steps, label %p.steps.end")
    ir("p.steps.end:")
    _tile_loop_latch(ir, config, "p", done, "exit")  # type: ignore[arg-type]


@dataclass(frozen=True)
class Products:
    """A consumer warpgroup's products: the accumulators' LLVM struct type, one m64nNk16 product
    (ir, element, accumulators, descriptor A, descriptor B) -> accumulators, and the wait for all
    but `pending` of them (ir, accumulators, pending) -> accumulators."""

    floats: str
    product: Callable[[Ir, str, str, str, str], str]
    wait: Callable[[Ir, str, int], str]


def products(accumulators: int) -> Products:
    """The m64nNk16 products with N = 2 `accumulators` (f32 per thread), A K-major and B N-major,
    as `wgmma_nvvm.lower_wgmma` writes them (`tma_matmul._wgmma` is the N = 256 one)."""
    floats = "{" + ", ".join(["float"] * accumulators) + "}"
    tied = lambda extra: ",".join(["=f"] * accumulators + [str(i) for i in range(accumulators)] + ([extra] if extra else []))  # noqa: E731

    def operands(ir: Ir, struct: str) -> str:
        return ", ".join(f"float {ir.value('a', f'extractvalue {floats} {struct}, {i}')}" for i in range(accumulators))

    def product(ir: Ir, element: str, accumulated: str, descriptor_a: str, descriptor_b: str) -> str:
        n = accumulators
        registers = ",".join(f"${i}" for i in range(n))
        text = (
            f"{{ .reg .pred p; setp.ne.b32 p, ${2 * n + 2}, 0; wgmma.mma_async.sync.aligned.m64n{2 * n}k16.f32.{element}.{element} "
            f"{{{registers}}}, ${2 * n}, ${2 * n + 1}, p, 1, 1, 0, 1; }}"
        )
        call = f'call {floats} asm sideeffect "{text}", "{tied("l,l,r")}"({operands(ir, accumulated)}, i64 {descriptor_a}, i64 {descriptor_b}, i32 1)'
        return ir.value("acc", call)

    def wait(ir: Ir, accumulated: str, pending: int) -> str:
        return ir.value("acc", f'call {floats} asm sideeffect "wgmma.wait_group.sync.aligned {pending};", "{tied("")}"({operands(ir, accumulated)})')

    return Products(floats, product, wait)


WIDE = products(BN // 2)
"""m64n256k16: 128 accumulators a thread."""


def consumer_main_loop(ir: Ir, config: Any, products: Products, done: str, a_offset: Callable[[str], str], b_offset: Callable[[str], str]) -> str:
    """The K loop of a consumer warpgroup (as `tma_matmul._consumer`'s): wait on the stage's full
    barrier, BK / 16 products of the A matrix at shared byte `a_offset(stage)` (K-major, 64 rows)
    and the B stage at `b_offset(stage)` (N-major, 64-column blocks), one product group in flight,
    the previous stage released; then the last wait and release. Returns the final accumulators."""
    ir("br label %c.steps")
    ir("c.steps:")
    ir("%c.k = phi i32 [0, %c.tiles], [%c.k.next, %c.step.end]")
    ir(f"%c.acc = phi {products.floats} [zeroinitializer, %c.tiles], [@@LANDED@@, %c.step.end]")
    iteration = ir.value("it", f"add i32 {done}, %c.k")
    stage, parity = _stage_and_parity(ir, config, iteration)
    _spin(ir, _barrier(ir, stage), parity, "c.full")
    ir('call void asm sideeffect "wgmma.fence.sync.aligned;", ""()')
    a_rows = ir.value("a", f"add i64 %smem_base, {ir.value('a', f'zext i32 {a_offset(stage)} to i64')}")
    b_stage = ir.value("b", f"add i64 %smem_base, {ir.value('b', f'zext i32 {b_offset(stage)} to i64')}")
    accumulators = "%c.acc"
    for step in range(BK // 16):
        descriptor_a = _descriptor(ir, ir.value("a", f"add i64 {a_rows}, {step * 32}"), 16, 1024)
        descriptor_b = _descriptor(ir, ir.value("b", f"add i64 {b_stage}, {step * 16 * 128}"), BK * 128, 1024)
        accumulators = products.product(ir, config.element, accumulators, descriptor_a, descriptor_b)
    ir('call void asm sideeffect "wgmma.commit_group.sync.aligned;", ""()')
    landed = products.wait(ir, accumulators, 1)
    _release(ir, config, ir.value("it", f"sub i32 {iteration}, 1"), ir.value("c", "icmp ne i32 %c.k, 0"))
    ir("br label %c.step.end")
    ir("c.step.end:")
    ir.lines = [line.replace("@@LANDED@@", landed) for line in ir.lines]
    ir("%c.k.next = add i32 %c.k, 1")
    more = ir.value("more", f"icmp ult i32 %c.k.next, {config.k // BK}")
    ir(f"br i1 {more}, label %c.steps, label %c.epilogue")
    ir("c.epilogue:")
    final = products.wait(ir, landed, 0)
    _release(ir, config, ir.value("it", f"add i32 {done}, {config.k // BK - 1}"), "true")
    return final


def _consumer(ir: Ir, config: ConvConfig) -> None:
    """Warpgroups 1..: 64 output channels each of every tile, products from the stages, then the
    NCHW stores."""
    ir("consumer:")
    if config.registers:
        ir("call void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 232)")
    for line in ("%ctid = sub i32 %tid, 128", "%cwg = lshr i32 %ctid, 7", "%warp = and i32 %ctid.w, 3", "%lane = and i32 %tid, 31", "%lane0 = icmp eq i32 %lane, 0"):
        ir(line)
    ir("%smem_base = ptrtoint ptr addrspace(3) @smem to i64")
    ir("%cwg_rows = mul i32 %cwg, 64")
    ir(f"%cwg_bytes = mul i32 %cwg, {64 * 128}")
    tile, done = _tile_loop_header(ir, "c", "consumer")
    row, column = _tile_origin(ir, config, tile)  # type: ignore[arg-type]
    final = consumer_main_loop(
        ir, config, WIDE, done,
        lambda stage: ir.value("a", f"add i32 {ir.value('a', f'mul i32 {stage}, {A_STAGE}')}, %cwg_bytes"),
        lambda stage: ir.value("b", f"add i32 {ir.value('b', f'mul i32 {stage}, {B_STAGE}')}, {config.stages * A_STAGE}"),
    )
    _store_nchw(ir, config, final, row, column)
    _tile_loop_latch(ir, config, "c", done, "exit")  # type: ignore[arg-type]


def fragment(ir: Ir) -> tuple[str, str]:
    """(row within the warpgroup's 64, first column) of this thread's wgmma D fragment: rows
    16 warp + lane / 4 (+ 8), columns 8 b + 2 (lane % 4) (+ 1) for each 8-column block b."""
    group = ir.value("g", "lshr i32 %lane, 2")
    local_row = ir.value("r", f"add i32 {ir.value('r', 'mul i32 %warp, 16')}, {group}")
    return local_row, ir.value("t", f"mul i32 {ir.value('t', 'and i32 %lane, 3')}, 2")


def row_bases(ir: Ir, config: Any, rows: list[tuple[str, str]], pair: str) -> list[str]:
    """Per image row (n, h) of the block: the NCHW element index of (n, channel 0, h, `pair`)."""
    plane = config.size * config.size
    bases = []
    for image, h in rows:
        start = ir.value("i", f"add i32 {ir.value('i', f'mul i32 {image}, {config.outputs * plane}')}, {ir.value('i', f'mul i32 {h}, {config.size}')}")
        bases.append(ir.value("i", f"add i32 {start}, {pair}"))
    return bases


def store_pair(ir: Ir, values: list[str], base: str, channel: str, column: int, plane: int) -> None:
    """Rounds two f32 values to f16 and stores them at NCHW element `base + channel * plane + column`."""
    vector = ir.value("w", f"insertelement <2 x float> undef, float {values[0]}, i32 0")
    vector = ir.value("w", f"insertelement <2 x float> {vector}, float {values[1]}, i32 1")
    rounded = ir.value("h", f"fptrunc <2 x float> {vector} to <2 x half>")
    channel_offset = ir.value("i", f"mul i32 {channel}, {plane}")
    index = ir.value("i", f"add i32 {ir.value('i', f'add i32 {base}, {channel_offset}')}, {column}")
    pointer = ir.value("ptr", f"getelementptr half, ptr addrspace(1) %out, i32 {index}")
    ir(f"store <2 x half> {rounded}, ptr addrspace(1) {pointer}, align 4")


def _store_nchw(ir: Ir, config: ConvConfig, accumulators: str, row: str, column: str) -> None:
    """Rounds the accumulators to f16 pairs and stores them into NCHW: accumulator row = output
    channel, column 64 j + w = pixel w of the block's image row j (w < size; wgmma's D layout)."""
    local_row, pair = fragment(ir)
    top = ir.value("r", f"add i32 {row}, {ir.value('r', f'add i32 %cwg_rows, {local_row}')}")
    bases = row_bases(ir, config, [_image_row(ir, config, column, box) for box in range(ROWS_PER_BLOCK)], pair)
    for half in range(2):
        channel = ir.value("r", f"add i32 {top}, {8 * half}")
        for block in range(BN // 8):
            box, w = divmod(8 * block, ROW)
            if w >= config.size:
                continue  # the row's columns past the image: computed, never stored
            values = [ir.value("v", f"extractvalue {WIDE.floats} {accumulators}, {4 * block + 2 * half + e}") for e in range(2)]
            store_pair(ir, values, bases[box], channel, w, config.size * config.size)


def kernel_module(name: str, config: Any, threads: int, empty_arrivals: int, barriers_at: int, roles: Callable[[Ir], None]) -> str:
    """The LLVM module of a producer/consumer kernel `name(w, x, out, map_a, map_b)` (`threads`
    threads, warpgroup 0 the producer): thread 0 initializes the full (1 arrival) and empty
    (`empty_arrivals`) mbarrier of each stage at shared byte `barriers_at`, the block meets, then
    `roles` emits the `producer:` and `consumer:` blocks, which end at `exit:`."""
    ir = Ir()
    ir("entry:")
    for line in ("%tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()", "%block = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()", "%grid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()", "%unit = add i32 %block, 0", "%units = add i32 %grid, 0"):
        ir(line)
    ir(f"%barriers = getelementptr i8, ptr addrspace(3) @smem, i32 {barriers_at}")
    ir("%first = icmp eq i32 %tid, 0")
    ir("br i1 %first, label %init, label %initialized")
    ir("init:")
    for stage in range(config.stages):
        ir(f"call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) {_barrier(ir, str(stage))}, i32 1)")
        ir(f"call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) {_barrier(ir, str(stage + config.stages))}, i32 {empty_arrivals})")
    ir("call void @llvm.nvvm.fence.proxy.async.shared_cta()")
    ir("br label %initialized")
    ir("initialized:")
    ir("call void @llvm.nvvm.barrier0()")
    ir("%ctid.w = lshr i32 %tid, 5")
    ir("%is_producer = icmp ult i32 %tid, 128")
    ir("br i1 %is_producer, label %producer, label %consumer")
    roles(ir)
    ir("exit:")
    ir("ret void")
    body = "\n".join(ir.lines)
    return f"""target triple = "nvptx64-nvidia-cuda"
@smem = external addrspace(3) global [0 x i8], align 1024
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.umin.i32(i32, i32)
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3), i32)
declare i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3), i32)
declare void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7), ptr addrspace(3), ptr, i32, i32, i16, i64, i1, i1, i32)
declare void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.4d(ptr addrspace(7), ptr addrspace(3), ptr, i32, i32, i32, i32, i16, i64, i1, i1, i32)
declare void @llvm.nvvm.fence.proxy.async.shared_cta()
declare void @llvm.nvvm.setmaxnreg.inc.sync.aligned.u32(i32 immarg)
declare void @llvm.nvvm.setmaxnreg.dec.sync.aligned.u32(i32 immarg)

define ptx_kernel void @{name}(ptr addrspace(1) %w, ptr addrspace(1) %x, ptr addrspace(1) %out, ptr %map_a, ptr %map_b) #0 {{
{body}
}}
attributes #0 = {{ "nvvm.maxntid"="{threads}" "nvvm.minctasm"="1" }}
"""


def kernel_ir(config: ConvConfig) -> str:
    """The LLVM IR of the kernel `tma_conv` (see the module docstring)."""
    config.check()

    def roles(ir: Ir) -> None:
        _producer(ir, config)
        _consumer(ir, config)

    return kernel_module("tma_conv", config, THREADS, CONSUMERS * 4, config.stages * (A_STAGE + B_STAGE), roles)


def ptx_of(llvm_ir: str) -> str:
    """The sm_90a PTX of a module of LLVM IR (verified first)."""
    from llvmlite import binding

    from mlc.backend.nvptx import target_machine

    module = binding.parse_assembly(llvm_ir)
    module.verify()
    return target_machine("sm_90a", 83).emit_assembly(module)


def kernel_ptx(config: ConvConfig) -> str:
    return ptx_of(kernel_ir(config))


def input_geometry(config: ConvConfig):
    """The 4-D tensor map of the NCHW input: one image row of 64 channels per box."""
    from mlc.runtime.tensor_maps import TensorMapGeometry

    shape = (config.batch, config.channels, config.size, config.size)
    return TensorMapGeometry.row_major(config.element, shape, (1, BK, 1, ROW))


def conv_callable(config: ConvConfig, weights_by_tap, x, out):
    """A no-argument launch computing out = conv(x) from the (O, KH*KW*C) weights (torch tensors)."""
    from mlc.runtime.cuda import CudaModule, KernelArguments, get_device
    from mlc.runtime.tensor_maps import TensorMapGeometry, TensorMapTable

    function = CudaModule(kernel_ptx(config)).function("tma_conv")
    function.allow_dynamic_shared_memory(config.shared_bytes)
    table, storage = TensorMapTable.on_device(capacity=4)
    map_a = table.address(weights_by_tap.data_ptr(), TensorMapGeometry.row_major(config.element, (config.m, config.k), (BM, BK)))
    map_b = table.address(x.data_ptr(), input_geometry(config))
    arguments = KernelArguments.from_values([*(_Address(t.data_ptr()) for t in (weights_by_tap, x, out)), _Address(map_a), _Address(map_b)])
    multiprocessors = get_device().properties.multiprocessor_count
    grid = min(config.tiles, multiprocessors) if config.persistent else config.tiles

    def call():
        function.launch(grid, THREADS, arguments, shared_memory_bytes=config.shared_bytes)

    call.keep = (storage, table)  # the maps' memory lives as long as the launch
    return call


def by_tap(weights):
    """(O, C, KH, KW) -> (O, KH*KW*C): the A operand, K ordered (r, s, c) as the kernel walks it."""
    return weights.permute(0, 2, 3, 1).reshape(weights.shape[0], -1).contiguous()


def arguments(description: str) -> argparse.ArgumentParser:
    """The options both hand-built convolution benchmarks take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--size", type=int, default=56)
    parser.add_argument("--stages", type=int, nargs="+", default=[3, 4])
    parser.add_argument("--repeat", type=int, default=2, help="time every implementation this many times, interleaved")
    return parser


@dataclass
class Layer:
    """The f16 layer on the device (NCHW input, (O, C, 3, 3) weights, cuDNN's result) and the
    implementations timed against cuDNN, as (name, no-argument call)."""

    x: Any
    weights: Any
    expected: Any
    implementations: list[tuple[str, Callable[[], object]]]

    @classmethod
    def random(cls, batch: int, channels: int, size: int) -> Layer:
        import torch
        import torch.nn.functional as F

        torch.backends.cudnn.allow_tf32 = False
        generator = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(batch, channels, size, size, device="cuda", generator=generator).half()
        weights = (torch.randn(channels, channels, 3, 3, device="cuda", generator=generator) / (3 * channels**0.5)).half()
        return cls(x, weights, F.conv2d(x, weights, padding=1), [("cudnn", lambda: F.conv2d(x, weights, padding=1))])

    def add(self, name: str, call: Callable[[], object], out: Any, timed_if_wrong: bool = False) -> bool:
        """Runs `call` once (writing `out`), reports its error against cuDNN and keeps it for timing
        if it agrees (or `timed_if_wrong`). Returns whether it agrees."""
        import torch

        call()
        torch.cuda.synchronize()
        error = (out.float() - self.expected.float()).abs().max().item()
        print(f"{name}: max abs error against cuDNN {error:.3g}", flush=True)
        agrees = torch.allclose(out.float(), self.expected.float(), rtol=1e-2, atol=2e-2)
        if agrees or timed_if_wrong:
            self.implementations.append((name, call))
        else:
            print("  differs from cuDNN: not timed")
        return agrees

    def time(self, repeat: int) -> None:
        """Times every implementation `repeat` times, interleaved, cuDNN first each round."""
        from harness import time_gpu

        n, c, size = self.x.shape[0], self.x.shape[1], self.x.shape[2]
        flops = 2 * n * c * c * 9 * size * size
        case = f"conv 3x3 {n}x{c}x{size}^2 f16"
        print(f"{'case':<28} {'impl':<44} {'median us':>10} {'TFLOP/s':>8} {'vs cuDNN':>9}")
        for _ in range(repeat):
            cudnn = None
            for name, function in self.implementations:
                median = statistics.median(time_gpu(function))
                cudnn = median if name == "cudnn" else cudnn
                print(f"{case:<28} {name:<44} {median:>10.2f} {flops / (median * 1e-6) / 1e12:>8.1f} {cudnn / median:>8.2f}x", flush=True)


def main() -> None:
    import torch

    parser = arguments(__doc__.split("\n")[0])
    parser.add_argument("--persistent", choices=["no", "yes", "both"], default="both")
    parser.add_argument("--aligned-columns", action="store_true", help="diagnosis: every box starts at column 0 (wrong results, timed anyway)")
    options = parser.parse_args()
    layer = Layer.random(options.batch, options.channels, options.size)
    persistent = {"no": [False], "yes": [True], "both": [False, True]}[options.persistent]
    prepared = by_tap(layer.weights)
    for stages in options.stages:
        for keep_going in persistent:
            config = ConvConfig(options.batch, options.channels, options.channels, options.size, stages=stages, persistent=keep_going, shift_columns=not options.aligned_columns)
            out = torch.empty_like(layer.expected)
            name = f"tma conv s{stages}{' persistent' if keep_going else ''}"
            call = conv_callable(config, prepared, layer.x, out)
            if layer.add(name, call, out, timed_if_wrong=not config.shift_columns) and stages == options.stages[-1] and keep_going == persistent[-1]:
                layer.implementations.append((name + " + weights' transpose", lambda call=call: (by_tap(layer.weights), call())))
    layer.time(options.repeat)


if __name__ == "__main__":
    main()
