"""The NCHW convolution with the horizontal shift after the product (hand-built, sm_90a): prepared, not yet run.

Why. `conv_tma.py` reads the NCHW input in place with one 4-D TMA box per image row and filter tap,
shifted by s - 1 columns for tap column s; the copy engine refuses that (a box's innermost start
must be a multiple of 16 bytes: an illegal instruction, BENCHMARKS.md, conv11). Here every box
starts at column 0 and the shift moves to the output (3x3 kernels, stride 1, padding 1):

    G_s[n][o][h][w] = sum over (r, c) of W[o][c][r][s] * x[n][c][h + r - 1][w]      (s = 0, 1, 2)
    out[n][o][h][w] = G_0[..][w - 1] + G_1[..][w] + G_2[..][w + 1]

with G_0[-1] = G_2[W] = 0 because x is zero there (the copy engine's zero fill past the image's
width, and before its first row / past its last for the vertical padding). `reference` is this
decomposition in numpy.

Kernel. Four warpgroups: a producer (one thread issues the copies on full/empty mbarrier pairs, as
`tma_matmul.py`) and three consumers, one per filter column s. A block computes 64 output channels
by 2 image rows (128 GEMM columns: 2 x 64 pixels, 56 of each real); K = (r, c), 3 C / 64 steps. A
step copies three A boxes (64 x 64 of W''[s] = W[:, :, :, s] as (O, 3 C)) and two B boxes, the
4-D boxes {w 64, h 1, c 64, n 1} of `conv_tma.py` at (0, h_j + r - 1, c0, n_j); consumer s runs
four m64n128k16 products of its A box with the shared B boxes, so each B box feeds all three taps
of its row (a third of `conv_tma.py`'s B copies). Epilogue: after a named barrier of the 384
consumer threads, consumers 0 and 2 write G_0 and G_2 (f32) into the pipeline's shared memory,
then consumer 1 adds them one column left and right of its own G_1 and stores NCHW as f16 pairs.
512 threads, 64 accumulators each: no `setmaxnreg`.

Usage (GPU machine): python bench/conv_tma_shifted.py [--stages 3 4] [--repeat 2]
Limits: 3x3, stride 1, padding 1, f16, channels a multiple of 64, outputs of 64, even image width
of at most 64, N * H even; one tile per block (not persistent: the epilogue reuses the stages).
Status: assembled by ptxas without spills (`test/python/runtime/test_conv_tma.py`); its
decomposition checked in numpy against a direct convolution; not yet run on a GPU.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from conv_tma import ROW, Layer, Unclustered, arguments, consumer_main_loop, fragment, input_geometry, kernel_module, products, ptx_of, row_bases, store_pair  # noqa: E402
from tma_matmul import BK, Ir, _Address, _barrier, _spin, _stage_and_parity, _tile_loop_header, _tile_loop_latch  # noqa: E402

TAPS = 3
"""Filter columns: one consumer warpgroup each."""
BM, ROWS = 64, 2
BN = ROWS * ROW
A_BOX = BM * BK * 2
A_STAGE = TAPS * A_BOX
B_BOX = BK * ROW * 2
B_STAGE = ROWS * B_BOX
STAGE = A_STAGE + B_STAGE
CONSUMER_THREADS = 128 * TAPS
THREADS = 128 + CONSUMER_THREADS
ACCUMULATORS = BN // 2
NARROW = products(ACCUMULATORS)
"""m64n128k16: 64 accumulators a thread."""
FLOATS = NARROW.floats
STAGING_BYTES = 2 * BM * BN * 4
"""G_0 and G_2 in f32 for the epilogue, in the stages' memory."""


@dataclass(frozen=True)
class ShiftedConfig(Unclustered):
    """One convolution and the kernel's stages; `k` and `tiles` are what `tma_matmul`'s loops read."""

    batch: int = 32
    channels: int = 256
    outputs: int = 256
    size: int = 56
    stages: int = 4
    element: str = "f16"

    @property
    def k(self) -> int:
        return TAPS * self.channels

    @property
    def tiles(self) -> int:
        return (self.outputs // BM) * (self.batch * self.size // ROWS)

    @property
    def shared_bytes(self) -> int:
        return max(self.stages * STAGE, STAGING_BYTES) + 2 * self.stages * 8

    def check(self) -> None:
        if self.channels % BK or self.outputs % BM or self.size > ROW or self.size % 2 or (self.batch * self.size) % ROWS:
            raise ValueError(f"channels a multiple of {BK}, outputs of {BM}, an even width of at most {ROW}, N * H even: {self}")


def _tile(ir: Ir, config: ShiftedConfig, tile: str) -> tuple[str, list[tuple[str, str]]]:
    """(first output channel, (image, row) of each image row) of `tile`:
    the channel blocks of one pair of image rows are neighbours, so they share the B boxes in L2."""
    tiles_m = config.outputs // BM
    row = ir.value("row", f"mul i32 {ir.value('t', f'urem i32 {tile}, {tiles_m}')}, {BM}")
    pair = ir.value("t", f"udiv i32 {tile}, {tiles_m}")
    rows = []
    for j in range(ROWS):
        number = ir.value("g", f"add i32 {ir.value('g', f'mul i32 {pair}, {ROWS}')}, {j}")
        rows.append((ir.value("img", f"udiv i32 {number}, {config.size}"), ir.value("h", f"urem i32 {number}, {config.size}")))
    return row, rows


def _copy(ir: Ir, offset: str, barrier: str, tensor_map: str, coordinates: list[str]) -> None:
    target = ir.value("dst", f"addrspacecast ptr addrspace(3) {ir.value('g', f'getelementptr i8, ptr addrspace(3) @smem, i32 {offset}')} to ptr addrspace(7)")
    arguments = ", ".join(f"i32 {c}" for c in coordinates)
    ir(f"call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{len(coordinates)}d(ptr addrspace(7) {target}, ptr addrspace(3) {barrier}, ptr {tensor_map}, {arguments}, i16 0, i64 0, i1 false, i1 false, i32 0)")


def _producer(ir: Ir, config: ShiftedConfig) -> None:
    ir("producer:")
    ir("br i1 %first, label %produce, label %exit")
    ir("produce:")
    for name in ("%map_a", "%map_b"):
        ir(f'call void asm sideeffect "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;", "l"(ptr {name})')
    tile, done = _tile_loop_header(ir, "p", "produce")
    row, rows = _tile(ir, config, tile)
    ir("br label %p.steps")
    ir("p.steps:")
    ir("%p.k = phi i32 [0, %p.tiles], [%p.k.next, %p.issue]")
    stage, parity = _stage_and_parity(ir, config, ir.value("it", f"add i32 {done}, %p.k"))  # type: ignore[arg-type]
    _spin(ir, _barrier(ir, ir.value("e", f"add i32 {stage}, {config.stages}")), ir.value("p", f"xor i32 {parity}, 1"), "p.free")
    ir("br label %p.issue")
    ir("p.issue:")
    full = _barrier(ir, stage)
    ir(f"call i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3) {full}, i32 {STAGE})")
    depth = ir.value("kx", f"mul i32 %p.k, {BK}")
    base = ir.value("o", f"mul i32 {stage}, {STAGE}")
    for tap in range(TAPS):  # A: W''[s] rows row..row+63, K columns depth..depth+63
        weights_row = ir.value("wr", f"add i32 {row}, {tap * config.outputs}")
        _copy(ir, ir.value("o", f"add i32 {base}, {tap * A_BOX}"), full, "%map_a", [depth, weights_row])
    source_shift = ir.value("dh", f"sub i32 {ir.value('r', f'udiv i32 {depth}, {config.channels}')}, 1")
    channel = ir.value("c0", f"urem i32 {depth}, {config.channels}")
    for j, (image, h) in enumerate(rows):  # B: one image row of 64 channels, from column 0 (16-byte aligned)
        _copy(ir, ir.value("o", f"add i32 {base}, {A_STAGE + j * B_BOX}"), full, "%map_b", ["0", ir.value("hr", f"add i32 {h}, {source_shift}"), channel, image])
    ir("%p.k.next = add i32 %p.k, 1")
    ir(f"br i1 {ir.value('more', f'icmp ult i32 %p.k.next, {config.k // BK}')}, label %p.steps, label %p.steps.end")
    ir("p.steps.end:")
    _tile_loop_latch(ir, config, "p", done, "exit")  # type: ignore[arg-type]


def _consumer(ir: Ir, config: ShiftedConfig) -> None:
    ir("consumer:")
    for line in ("%ctid = sub i32 %tid, 128", "%tap = lshr i32 %ctid, 7", "%warp = and i32 %ctid.w, 3", "%lane = and i32 %tid, 31", "%lane0 = icmp eq i32 %lane, 0"):
        ir(line)
    ir("%smem_base = ptrtoint ptr addrspace(3) @smem to i64")
    ir(f"%tap_bytes = mul i32 %tap, {A_BOX}")
    tile, done = _tile_loop_header(ir, "c", "consumer")
    row, rows = _tile(ir, config, tile)
    final = consumer_main_loop(
        ir, config, NARROW, done,
        lambda stage: ir.value("a", f"add i32 {ir.value('a', f'mul i32 {stage}, {STAGE}')}, %tap_bytes"),
        lambda stage: ir.value("b", f"add i32 {ir.value('b', f'mul i32 {stage}, {STAGE}')}, {A_STAGE}"),
    )
    _combine_and_store(ir, config, final, row, rows)
    _tile_loop_latch(ir, config, "c", done, "exit")  # type: ignore[arg-type]


def _staged(ir: Ir, table: str, local_row: str, column: str) -> str:
    """The address of the f32 cell (row, column) of the staged G_0 (`table` "0") or G_2
    (`table` the element offset `BM * BN`) in shared memory."""
    index = ir.value("si", f"add i32 {ir.value('si', f'mul i32 {local_row}, {BN}')}, {column}")
    return ir.value("sp", f"getelementptr float, ptr addrspace(3) @smem, i32 {ir.value('si', f'add i32 {index}, {table}')}")


def _combine_and_store(ir: Ir, config: ShiftedConfig, accumulators: str, row: str, rows: list[tuple[str, str]]) -> None:
    """Consumers 0 and 2 stage G_0 and G_2; consumer 1 adds them shifted by one column and stores."""
    consumers_meet = f'call void asm sideeffect "bar.sync 1, {CONSUMER_THREADS};", "~{{memory}}"()'
    ir(consumers_meet)  # every consumer's products are done: the stages are free
    local_row, pair = fragment(ir)
    ir(f"br i1 {ir.value('q', 'icmp eq i32 %tap, 1')}, label %c.combine, label %c.stage")
    ir("c.stage:")
    table = ir.value("wh", f"mul i32 {ir.value('wh', 'lshr i32 %tap, 1')}, {BM * BN}")
    for block in range(BN // 8):
        for half in range(2):
            line = ir.value("r", f"add i32 {local_row}, {8 * half}")
            for e in range(2):
                value = ir.value("v", f"extractvalue {FLOATS} {accumulators}, {4 * block + 2 * half + e}")
                ir(f"store float {value}, ptr addrspace(3) {_staged(ir, table, line, ir.value('cc', f'add i32 {pair}, {8 * block + e}'))}, align 4")
    ir(consumers_meet)
    ir("br label %c.stored")
    ir("c.combine:")
    ir(consumers_meet)
    first_pair = ir.value("fp", f"icmp eq i32 {pair}, 0")
    bases = row_bases(ir, config, rows, pair)
    for block in range(BN // 8):
        box, w = divmod(8 * block, ROW)
        if w >= config.size:
            continue  # the row's columns past the image: never stored
        for half in range(2):
            line = ir.value("r", f"add i32 {local_row}, {8 * half}")
            sums = []
            for e in range(2):
                column = ir.value("cc", f"add i32 {pair}, {8 * block + e}")
                own = ir.value("v", f"extractvalue {FLOATS} {accumulators}, {4 * block + 2 * half + e}")
                right = ir.value("v", f"load float, ptr addrspace(3) {_staged(ir, str(BM * BN), line, ir.value('cc', f'add i32 {column}, 1'))}, align 4")
                if w == 0 and e == 0:  # column 0 of the image has no left neighbour (G_0[-1] = 0)
                    left_column = ir.value("cc", f"select i1 {first_pair}, i32 {column}, i32 {ir.value('cc', f'sub i32 {column}, 1')}")
                    loaded = ir.value("v", f"load float, ptr addrspace(3) {_staged(ir, '0', line, left_column)}, align 4")
                    left = ir.value("v", f"select i1 {first_pair}, float 0.0, float {loaded}")
                else:
                    left = ir.value("v", f"load float, ptr addrspace(3) {_staged(ir, '0', line, ir.value('cc', f'sub i32 {column}, 1'))}, align 4")
                sums.append(ir.value("v", f"fadd float {ir.value('v', f'fadd float {left}, {own}')}, {right}"))
            store_pair(ir, sums, bases[box], ir.value("o", f"add i32 {row}, {line}"), w, config.size * config.size)
    ir("br label %c.stored")
    ir("c.stored:")


def kernel_ir(config: ShiftedConfig) -> str:
    """The LLVM IR of the kernel `tma_conv_shifted` (see the module docstring)."""
    config.check()

    def roles(ir: Ir) -> None:
        _producer(ir, config)
        _consumer(ir, config)

    return kernel_module("tma_conv_shifted", config, THREADS, TAPS * 4, max(config.stages * STAGE, STAGING_BYTES), roles)


def kernel_ptx(config: ShiftedConfig) -> str:
    return ptx_of(kernel_ir(config))


def weights_by_column(weights):
    """(O, C, 3, 3) -> (3 O, 3 C): row s O + o, column r C + c holds W[o][c][r][s] (the A boxes)."""
    outputs, channels = weights.shape[:2]
    return weights.permute(3, 0, 2, 1).reshape(TAPS * outputs, TAPS * channels).contiguous()


def reference(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The kernel's decomposition in numpy (f64): the G_s of unshifted columns, then the shifted sum."""
    n, c, h, w = x.shape
    rows = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (0, 0)))  # the vertical padding only
    columns = np.zeros((TAPS, n, weights.shape[0], h, w))
    for s in range(TAPS):
        for r in range(TAPS):
            columns[s] += np.einsum("oc,nchw->nohw", weights[:, :, r, s].astype(np.float64), rows[:, :, r : r + h, :])
    out = columns[1].copy()
    out[..., 1:] += columns[0][..., :-1]
    out[..., :-1] += columns[2][..., 1:]
    return out


def conv_callable(config: ShiftedConfig, weights_by_columns, x, out):
    """A no-argument launch computing out = conv(x) from `weights_by_column(weights)` (torch tensors)."""
    from mlc.runtime.cuda import CudaModule, KernelArguments
    from mlc.runtime.tensor_maps import TensorMapGeometry, TensorMapTable

    function = CudaModule(kernel_ptx(config)).function("tma_conv_shifted")
    function.allow_dynamic_shared_memory(config.shared_bytes)
    table, storage = TensorMapTable.on_device(capacity=4)
    map_a = table.address(weights_by_columns.data_ptr(), TensorMapGeometry.row_major(config.element, tuple(weights_by_columns.shape), (BM, BK)))
    map_b = table.address(x.data_ptr(), input_geometry(config))  # type: ignore[arg-type]
    arguments = KernelArguments.from_values([*(_Address(t.data_ptr()) for t in (weights_by_columns, x, out)), _Address(map_a), _Address(map_b)])

    def call():
        function.launch(config.tiles, THREADS, arguments, shared_memory_bytes=config.shared_bytes)

    call.keep = (storage, table)  # the maps' memory lives as long as the launch
    return call


def main() -> None:
    import torch

    options = arguments(__doc__.split("\n")[0]).parse_args()
    layer = Layer.random(options.batch, options.channels, options.size)
    prepared = weights_by_column(layer.weights)
    for stages in options.stages:
        config = ShiftedConfig(options.batch, options.channels, options.channels, options.size, stages=stages)
        out = torch.full_like(layer.expected, float("nan"))
        call = conv_callable(config, prepared, layer.x, out)
        if layer.add(f"shifted tma conv s{stages}", call, out):
            layer.implementations.append((f"shifted tma conv s{stages} + weights' layout", lambda call=call: (weights_by_column(layer.weights), call())))
    layer.time(options.repeat)


if __name__ == "__main__":
    main()
