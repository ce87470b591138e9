"""convert-tile-rows-to-cpu keeps what row kernels compute: within the error bounds, exactly for max/min.

Hypothesis draws graph functions around a reduction or normalisation (`programs.reduction_programs`,
f32: softmax, layer norm, sums, means, maxima and minima along any axis, with elementwise producers
and consumers, rows of 1 to 1000 elements), a vector width, an accumulator count and how many rows
the column loops interleave (1; 2, which divides a program's rows, a power of two, when there are
more than one; 3, which leaves rows over); the module is
lowered to the tile level for the CPU, the pass is applied, and the loop-level interpreter's
results must lie within `error_bounds.result_bounds` of the graph interpreter's (the pass sums in
another order than the tile interpreter, which the bounds allow for: any f32 summation order).
Elementwise kernels (no reduction) are drawn too (`programs.elementwise_programs`).
The elementwise draws also draw the loads' and the stores' prefetch distances (options), which must
reach exactly the accesses they are for and change no result, and the store kind
(`nontemporal-stores`): "on" marks exactly the parameters' whole-chunk stores of 16 bytes or more
`nontemporal` (without a prefetch), "off" none, and neither changes a result (the reduction draws
draw the store kind too). Maxima and minima do not depend on the order: there the loop kernel must give the tile
interpreter's bits. Fixed cases check that the kernels of the benchmarks (softmax, layer norm,
ragged rows whose chunks need masks) are the ones lowered.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from xdsl.dialects import scf, vector
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.interpreter import run
from mlc.transforms.lowering.cpu_prefetch import (
    PrefetchDistances,
    host_last_level_cache_bytes,
    host_prefetch_distances,
    is_x86_host,
    store_kind,
)
from mlc.transforms.pipelines import CPU_PIPELINE
from programs import (
    assert_compiled_matches,
    assert_equivalent,
    assert_within_bounds,
    elementwise_programs,
    lower,
    random_inputs,
    reduction_programs,
)

TO_TILE = "graph-decompose,graph-fuse,graph-plan-memory,convert-graph-to-tile{target=cpu},canonicalize"
ROWS = "convert-tile-rows-to-cpu{{vector-width={width} accumulators={accumulators} interleaved-rows={interleaved}}}"
WIDTHS = st.sampled_from((4, 8, 16))
ACCUMULATORS = st.sampled_from((1, 2, 4))
INTERLEAVED = st.sampled_from((1, 2, 3))


def _lowered_row_kernels(module) -> int:
    return sum(1 for op in module.walk() if isinstance(op, loop.KernelOp) and "mlc.cpu_vector_width" in op.attributes)


def _checked(program: str, width: int, accumulators: int, seed: int, options: str = "", interleaved: int = 1) -> ModuleOp:
    """Runs the pass (with `options` besides W, U and the interleaved rows) on `program`'s tile
    kernels, checks the results and returns the lowered module."""
    rows = ROWS.format(width=width, accumulators=accumulators, interleaved=interleaved)
    after = lower(program, f"{TO_TILE},{rows[:-1]} {options}}}" if options else f"{TO_TILE},{rows}")
    inputs = random_inputs(program, seed)
    assert_within_bounds(program, inputs, run(after, "main", [x.copy() for x in inputs]))
    return after


def _check(program: str, width: int, accumulators: int, seed: int, interleaved: int = 1) -> int:
    """`_checked`; returns how many kernels the pass lowered."""
    return _lowered_row_kernels(_checked(program, width, accumulators, seed, interleaved=interleaved))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    program=reduction_programs(row_lengths=(1, 2, 7, 33, 64, 1000)).filter(lambda text: "f16" not in text and "i32" not in text),
    width=WIDTHS,
    accumulators=ACCUMULATORS,
    seed=st.integers(0, 2**32 - 1),
    interleaved=INTERLEAVED,
    store_kind=st.sampled_from(("on", "off")),
)
def test_row_kernels_stay_within_the_error_bounds(program: str, width: int, accumulators: int, seed: int, interleaved: int, store_kind: str):
    """Also with the store kind drawn: non-temporal result stores change no result."""
    _checked(program, width, accumulators, seed, f"nontemporal-stores={store_kind}", interleaved)


def _prefetch_distances(module, access_type: type) -> set[int]:
    """The `mlc.cpu_prefetch_bytes` of the module's vector accesses of `access_type`."""
    found = (attributes.CPU_PREFETCH_BYTES.read(op) for op in module.walk() if isinstance(op, access_type))
    return {distance.value.data for distance in found if distance is not None}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    program=elementwise_programs(max_ops=5).filter(lambda text: "f16" not in text and "i32" not in text),
    width=WIDTHS,
    seed=st.integers(0, 2**32 - 1),
    loads=st.sampled_from((0, 64, 4096)),
    stores=st.sampled_from((0, 1024, 4096)),
    store_kind=st.sampled_from(("on", "off")),
)
def test_elementwise_kernels_stay_within_the_error_bounds(program: str, width: int, seed: int, loads: int, stores: int, store_kind: str):
    options = f"prefetch-bytes={loads} store-prefetch-bytes={stores} nontemporal-stores={store_kind}"
    after = _checked(program, width, 1, seed, options)
    assert _prefetch_distances(after, vector.LoadOp) <= ({loads} if loads else set())
    assert _prefetch_distances(after, vector.StoreOp) <= ({stores} if stores else set())
    for kernel in (op for op in after.walk() if isinstance(op, loop.KernelOp) and "mlc.cpu_vector_width" in op.attributes):
        lanes = kernel.attributes["mlc.cpu_vector_width"].value.data
        parameters = set(kernel.body.block.args)
        streaming = [store for store in kernel.walk() if isinstance(store, vector.StoreOp) and _is_nontemporal(store)]
        assert (attributes.CPU_STORE_KIND.read(kernel) is not None) == bool(streaming)
        for store in (op for op in kernel.walk() if isinstance(op, vector.StoreOp)):
            alignment = store.attributes["alignment"].value.data
            wide = alignment >= 16 and lanes >= 4 and store.vector.type.get_shape() == (lanes,)
            assert _is_nontemporal(store) == (store_kind == "on" and store.base in parameters and wide)
            if lanes > 1 and store.vector.type.get_shape() == (lanes,) and isinstance(store.parent_op(), scf.ForOp):
                # a column loop's whole-chunk store: prefetched, or not at 0 or where it streams
                expected = IntegerAttr(stores, i64) if stores and not _is_nontemporal(store) else None
                assert attributes.CPU_PREFETCH_BYTES.read(store) == expected


def _is_nontemporal(store: vector.StoreOp) -> bool:
    return store.nontemporal is not None and bool(store.nontemporal.value.data)


def _extremum(kind: str, rows: int, columns: int) -> str:
    t, r = f"tensor<{rows}x{columns}xf32>", f"tensor<{rows}x1xf32>"
    return f"""func.func @main(%x: {t}) -> ({r}, {t}) {{
  %m = graph.{kind} %x axes [1] keepdims true : {t} to {r}
  %d = graph.sub %x, %m : ({t}, {r}) -> {t}
  func.return %m, %d : {r}, {t}
}}"""


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(kind="reduce_max", rows=4, columns=5, width=4, accumulators=1, seed=1, interleaved=3)  # row 3 left over
@example(kind="reduce_min", rows=8, columns=48, width=8, accumulators=2, seed=2, interleaved=3)  # rows 6, 7 left over
@given(
    kind=st.sampled_from(("reduce_max", "reduce_min")),
    rows=st.sampled_from((1, 3, 4, 7, 8)),  # programs of 1, 4, 4, 8, 8 rows: 3 interleaved leave real rows over at 4, 7, 8
    columns=st.sampled_from((2, 5, 16, 48, 100, 257)),
    width=WIDTHS,
    accumulators=ACCUMULATORS,
    seed=st.integers(0, 2**32 - 1),
    interleaved=INTERLEAVED,
)
def test_maxima_and_minima_are_exact(kind: str, rows: int, columns: int, width: int, accumulators: int, seed: int, interleaved: int):
    program = _extremum(kind, rows, columns)
    before = lower(program, TO_TILE)
    after = lower(program, f"{TO_TILE},{ROWS.format(width=width, accumulators=accumulators, interleaved=interleaved)}")
    assert _lowered_row_kernels(after) == 1
    shape = next(op for op in before.walk() if isinstance(op, tile.ReduceOp)).source.type.get_shape()
    tile_rows = shape[0] if len(shape) == 2 else 1  # a program's rows, which the interleaved rows are cut to
    kernel = next(op for op in after.walk() if isinstance(op, loop.KernelOp))
    assert attributes.CPU_INTERLEAVED_ROWS.read(kernel) == IntegerAttr(min(interleaved, tile_rows), i64)
    inputs = random_inputs(program, seed)
    # Signed zeros and a NaN row; the NaN in the first row: a NaN row would hide a last row the
    # kernel never wrote (the interpreter fills fresh buffers with NaN).
    inputs[0][-1, columns // 2] = -0.0 if kind == "reduce_max" else 0.0
    inputs[0][0, -1] = np.nan
    assert_equivalent(before, after, inputs)


SOFTMAX = """func.func @main(%x: tensor<3x1000xf32>) -> tensor<3x1000xf32> {
  %0 = graph.softmax %x axis -1 : tensor<3x1000xf32>
  func.return %0 : tensor<3x1000xf32>
}"""
LAYER_NORM = """func.func @main(%x: tensor<6x256xf32>, %w: tensor<256xf32>, %b: tensor<256xf32>) -> tensor<6x256xf32> {
  %0 = graph.layer_norm %x, %w, %b axis -1 epsilon 1.0e-05 : (tensor<6x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<6x256xf32>
  func.return %0 : tensor<6x256xf32>
}"""
LOG_BIAS = """func.func @main(%x: tensor<6x40xf32>, %b: tensor<40xf32>) -> tensor<6x40xf32> {
  %0 = graph.abs %x : tensor<6x40xf32>
  %1 = graph.log %0 : tensor<6x40xf32>
  %2 = graph.add %1, %b : (tensor<6x40xf32>, tensor<40xf32>) -> tensor<6x40xf32>
  func.return %2 : tensor<6x40xf32>
}"""
SPLAT = """func.func @main(%a: tensor<3x0xf32>, %b: tensor<0x4xf32>) -> tensor<3x4xf32> {
  %0 = graph.matmul %a, %b : (tensor<3x0xf32>, tensor<0x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}"""
ACTIVATIONS = """func.func @main(%x: tensor<4x50xf32>) -> (tensor<4x50xf32>, tensor<4x50xf32>, tensor<4x50xf32>) {
  %0 = graph.gelu %x {approximate = "none"} : tensor<4x50xf32>
  %1 = graph.tanh %x : tensor<4x50xf32>
  %2 = graph.sigmoid %1 : tensor<4x50xf32>
  func.return %0, %1, %2 : tensor<4x50xf32>, tensor<4x50xf32>, tensor<4x50xf32>
}"""
ROW_SUMS = """func.func @main(%x: tensor<5x33xf32>) -> (tensor<5xf32>, tensor<5x33xf32>) {
  %0 = graph.exp %x : tensor<5x33xf32>
  %1 = graph.reduce_sum %0 axes [1] keepdims false : tensor<5x33xf32> to tensor<5xf32>
  %2 = graph.reduce_mean %0 axes [1] keepdims true : tensor<5x33xf32> to tensor<5x1xf32>
  %3 = graph.div %0, %2 : (tensor<5x33xf32>, tensor<5x1xf32>) -> tensor<5x33xf32>
  func.return %1, %3 : tensor<5xf32>, tensor<5x33xf32>
}"""


@pytest.mark.parametrize(
    "program",
    [SOFTMAX, LAYER_NORM, ROW_SUMS, LOG_BIAS, ACTIVATIONS, SPLAT],
    ids=["softmax-ragged", "layer-norm", "sums-and-stores", "elementwise-log", "gelu-tanh-sigmoid", "stored-splat"],
)
@pytest.mark.parametrize(("width", "accumulators", "interleaved"), [(16, 4, 1), (4, 1, 3)])
def test_benchmark_shapes_are_lowered_and_within_bounds(program: str, width: int, accumulators: int, interleaved: int):
    assert _check(program, width, accumulators, seed=7, interleaved=interleaved) >= 1


INTERLEAVED_LAYER_NORM = """func.func @main(%x: tensor<32x33xf32>, %s: tensor<33xf32>, %b: tensor<33xf32>) -> tensor<32x33xf32> {
  %0 = graph.layer_norm %x, %s, %b axis -1 epsilon 1.0e-05 : (tensor<32x33xf32>, tensor<33xf32>, tensor<33xf32>) -> tensor<32x33xf32>
  func.return %0 : tensor<32x33xf32>
}"""


def test_interleaved_rows_end_to_end_against_numpy():
    """A layer norm of 32 rows of 33 (one program of 32 rows: 10 steps of 3 rows, then rows 30 and
    31 one at a time) compiled for the CPU with three interleaved rows:
    within the bound of the graph interpreter's results, as the float64 numpy result rounded once
    (`programs.assert_compiled_matches`)."""
    import mlc

    pipeline = CPU_PIPELINE.replace("convert-tile-rows-to-cpu,", "convert-tile-rows-to-cpu{interleaved-rows=3},")
    assert pipeline != CPU_PIPELINE
    rng = np.random.default_rng(19)
    x = (rng.standard_normal((32, 33)) * 3 + 1).astype(np.float32)
    scale, bias = (rng.standard_normal(33).astype(np.float32) for _ in range(2))
    centered = x.astype(np.float64) - x.astype(np.float64).mean(axis=1, keepdims=True)
    expected = centered / np.sqrt((centered * centered).mean(axis=1, keepdims=True) + 1e-5) * scale + bias
    result = mlc.compile(INTERLEAVED_LAYER_NORM, device="cpu", pipeline=pipeline)(x, scale, bias)
    assert_compiled_matches(INTERLEAVED_LAYER_NORM, [x, scale, bias], result, [expected])


@pytest.mark.parametrize("cpu", ["znver4", "znver2", "emeraldrapids", "skylake-avx512"])
@pytest.mark.parametrize("reduces", [False, True])
def test_the_prefetch_default_follows_the_host_core(cpu: str, reduces: bool):
    """AMD Zen cores prefetch nothing in elementwise kernels; other kernels and cores a page ahead."""
    expected = PrefetchDistances(0, 0) if cpu.startswith("znver") and not reduces else PrefetchDistances(4096, 4096)
    assert host_prefetch_distances(reduces, cpu) == expected


def test_the_pass_without_distances_uses_the_hosts_and_records_them():
    """Without prefetch options the loop kernel records this host's distances (none where 0); an
    explicit option wins over the host's for its own accesses only."""
    host = host_prefetch_distances(reduces=False)
    for options, (loads, stores) in (("", (host.loads, host.stores)), ("store-prefetch-bytes=512", (host.loads, 512))):
        after = _checked(LOG_BIAS, 8, 1, 3, options)
        kernel = next(op for op in after.walk() if isinstance(op, loop.KernelOp) and "mlc.cpu_vector_width" in op.attributes)
        recorded = (attributes.CPU_PREFETCH_BYTES.read(kernel), attributes.CPU_STORE_PREFETCH_BYTES.read(kernel))
        assert recorded == tuple(IntegerAttr(d, i64) if d else None for d in (loads, stores))


NEGATE = """func.func @main(%x: tensor<ROWSxCOLUMNSxf32>) -> tensor<ROWSxCOLUMNSxf32> {
  %0 = graph.neg %x : tensor<ROWSxCOLUMNSxf32>
  func.return %0 : tensor<ROWSxCOLUMNSxf32>
}"""
TANH_CHAIN = """func.func @main(%x: tensor<ROWSxCOLUMNSxf32>, %y: tensor<ROWSxCOLUMNSxf32>) -> tensor<ROWSxCOLUMNSxf32> {
  %0 = graph.mul %x, %y : (tensor<ROWSxCOLUMNSxf32>, tensor<ROWSxCOLUMNSxf32>) -> tensor<ROWSxCOLUMNSxf32>
  %1 = graph.add %0, %x : (tensor<ROWSxCOLUMNSxf32>, tensor<ROWSxCOLUMNSxf32>) -> tensor<ROWSxCOLUMNSxf32>
  %2 = graph.tanh %1 : tensor<ROWSxCOLUMNSxf32>
  func.return %2 : tensor<ROWSxCOLUMNSxf32>
}"""


def _streams(compiled) -> bool:
    """Whether a compiled function's row kernel stores non-temporally (`mlc.cpu_store_kind`), after
    checking that its LLVM IR has `!nontemporal` stores exactly when it has the fence (x86)."""
    from mlc.backend.cpu import translate_for_cpu

    kernels = [op for op in compiled.lowered_module.walk() if "mlc.kernel" in op.attributes]
    streams = any(attributes.CPU_STORE_KIND.name in kernel.attributes for kernel in kernels)
    llvm_ir = str(translate_for_cpu(compiled.lowered_module))
    assert ("!nontemporal" in llvm_ir) == ('call void @"llvm.x86.sse.sfence"()' in llvm_ir) == (streams and is_x86_host())
    return streams


def test_nontemporal_stores_end_to_end():
    """-x and the tanh chain of 47 x 1001 compiled for the CPU with `nontemporal-stores=on`, on
    fresh random inputs: -x exactly, the chain within its bound (elementwise kernels run on the
    flattened elements, whose last chunk is partial: stored element by element, ordinarily), both
    streaming; a softmax of rows of 1001 (a row's width not a multiple of the vector: W cut to one
    lane, scalar stores) falls back to ordinary stores, without the attribute or a fence."""
    import mlc

    rows, columns = 47, 1001
    pipeline = CPU_PIPELINE.replace("convert-tile-rows-to-cpu,", "convert-tile-rows-to-cpu{nontemporal-stores=on},")
    assert pipeline != CPU_PIPELINE
    rng = np.random.default_rng()
    x, y = (rng.standard_normal((rows, columns)).astype(np.float32) for _ in range(2))
    negate = mlc.compile(NEGATE.replace("ROWS", str(rows)).replace("COLUMNS", str(columns)), device="cpu", pipeline=pipeline)
    np.testing.assert_array_equal(negate(x), -x)
    chain_text = TANH_CHAIN.replace("ROWS", str(rows)).replace("COLUMNS", str(columns))
    chain = mlc.compile(chain_text, device="cpu", pipeline=pipeline)
    assert_compiled_matches(chain_text, [x, y], chain(x, y), [np.tanh(x.astype(np.float64) * y + x)])
    softmax_text = SOFTMAX.replace("3x1000", f"5x{columns}")
    softmax = mlc.compile(softmax_text, device="cpu", pipeline=pipeline)
    z = x[:5].astype(np.float64)
    expected = np.exp(z - z.max(axis=1, keepdims=True))
    assert_compiled_matches(softmax_text, [x[:5].copy()], softmax(x[:5].copy()), [expected / expected.sum(axis=1, keepdims=True)])
    assert _streams(negate) and _streams(chain)
    assert not _streams(softmax)


@pytest.mark.parametrize(
    ("option", "streamed", "cache", "x86", "kind"),
    [
        ("auto", 512 << 20, 300 << 20, True, "nontemporal"),  # -x of 256 MiB on the Intel host
        ("auto", 32 << 20, 300 << 20, True, "ordinary"),  # -x of 16 MiB there: cached
        ("auto", 48 << 20, 32 << 20, True, "ordinary"),  # at 1.5x the dev machine's L3: not above it
        ("auto", 128 << 20, 32 << 20, True, "nontemporal"),
        ("auto", 128 << 20, 32 << 20, False, "ordinary"),  # no streaming stores off x86
        ("auto", 128 << 20, None, True, "ordinary"),  # an unknown cache
        ("on", 1024, 32 << 20, True, "nontemporal"),
        ("off", 1 << 40, 32 << 20, True, "ordinary"),
    ],
)
def test_the_store_kind_follows_the_hosts_last_level_cache(option: str, streamed: int, cache: int | None, x86: bool, kind: str, monkeypatch):
    import mlc.transforms.lowering.cpu_prefetch as policy

    monkeypatch.setattr(policy, "host_last_level_cache_bytes", lambda: cache)
    assert store_kind(option, streamed, x86=x86) == kind


def test_the_last_level_cache_is_read_from_sysfs(tmp_path):
    for index, (kind, level, size) in enumerate((("Data", 1, "48K"), ("Instruction", 1, "32K"), ("Unified", 2, "2048K"), ("Unified", 3, "300M"))):
        folder = tmp_path / f"index{index}"
        folder.mkdir()
        for name, value in (("type", kind), ("level", str(level)), ("size", size)):
            (folder / name).write_text(value + "\n")
    assert host_last_level_cache_bytes(tmp_path) == 300 << 20
    assert host_last_level_cache_bytes(tmp_path / "absent") is None


# -- column kernels (reductions over a non-last axis: columns_cpu.py) ---------------------------------


def _column_program(kind: str, shape: tuple[int, ...], axis: int, producer: str | None, consumer: str | None) -> str:
    t = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    o = "tensor<" + "x".join(str(size) for d, size in enumerate(shape) if d != axis) + "xf32>"
    lines, source = [], "%x"
    if producer:
        lines.append(f"%p = graph.{producer} %x : {t}")
        source = "%p"
    lines.append(f"%r = graph.{kind} {source} axes [{axis}] keepdims false : {t} to {o}")
    result = "%r"
    if consumer:
        lines.append(f"%c = graph.{consumer} %r : {o}")
        result = "%c"
    body = "\n  ".join(lines)
    return f"func.func @main(%x: {t}) -> {o} {{\n  {body}\n  func.return {result} : {o}\n}}"


def _strip_columns(shape: tuple[int, ...], axis: int) -> int:
    """The contiguous columns after collapsing: the product of the dimensions after `axis`."""
    return int(np.prod(shape[axis + 1 :]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(("reduce_sum", "reduce_mean", "reduce_max", "reduce_min")),
    leading=st.sampled_from((None, 1, 3)),
    rows=st.sampled_from((1, 3, 8, 33, 100)),
    columns=st.sampled_from((2, 5, 6, 16, 40, 130)),
    producer=st.sampled_from((None, "abs", "exp", "tanh", "sin")),
    consumer=st.sampled_from((None, "neg", "sqrt", "rsqrt")),
    width=WIDTHS,
    seed=st.integers(0, 2**32 - 1),
)
def test_column_kernels_stay_within_the_error_bounds(kind, leading, rows, columns, producer, consumer, width, seed):
    """Column reductions (over axis 0 of a matrix, over axis 0 or 1 of a batch) with producers and
    consumers (sin and rsqrt: vector polynomials of expand-math-for-cpu; the lit test has a map
    computed once per lane, no graph op's being left): within the bounds, bit for bit for
    max/min; lowered as column kernels where the columns are even (the CPU tile's strip needs no
    column mask)."""
    shape, axis = ((rows, columns), 0) if leading is None else ((leading, rows, columns), seed % 2)
    program = _column_program(kind, shape, axis, producer, consumer)
    lowered = _check(program, width, 1, seed)
    if shape[axis] > 1 and _strip_columns(shape, axis) % 2 == 0:
        assert lowered >= 1
    if kind in ("reduce_max", "reduce_min") and producer not in ("exp", "sin") and consumer is None:
        inputs = random_inputs(program, seed)
        inputs[0].flat[0] = np.nan  # a NaN column: max/min keep it
        assert_equivalent(lower(program, TO_TILE), lower(program, f"{TO_TILE},{ROWS.format(width=width, accumulators=1, interleaved=1)}"), inputs)


COLUMN_CASES = [("reduce_sum", (4096, 64), 0), ("reduce_mean", (300, 256), 0), ("reduce_max", (6, 200, 48), 1)]


@pytest.fixture(scope="module")
def compiled_column_reductions():
    """`COLUMN_CASES` compiled for the CPU (two worker threads), once for the tests."""
    import mlc

    return {case: mlc.compile(_column_program(*case, None, None), device="cpu", num_threads=2) for case in COLUMN_CASES}


@pytest.mark.parametrize(("kind", "shape", "axis"), COLUMN_CASES)
def test_column_reductions_end_to_end_against_numpy(compiled_column_reductions, kind: str, shape: tuple[int, ...], axis: int):
    """Compiled end to end for the CPU (two threads), against numpy in float64: sums and means
    within gamma(n) sum|x| (any f32 summation order, error_bounds.py), plus the mean's division;
    maxima exact."""
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    got = compiled_column_reductions[(kind, shape, axis)](x).astype(np.float64)
    exact = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max}[kind](x.astype(np.float64), axis=axis)
    if kind == "reduce_max":
        np.testing.assert_array_equal(got, exact)
        return
    n, u = shape[axis], 2.0**-24
    bound = n * u / (1 - n * u) * np.sum(np.abs(x.astype(np.float64)), axis=axis)
    if kind == "reduce_mean":
        bound = bound / n + u * np.abs(exact)  # the division's rounding
    assert np.all(np.abs(got - exact) <= bound)


_FORMS = {
    "where": "%r = graph.where %c, %x, %s : ({b}, {t}, {y_type}) -> {t}",
    "cast": "%f = graph.cast %c : {b} to {t}\n  %r = graph.mul %f, %s : ({t}, {y_type}) -> {t}",
    "stored": "",
}
"""What the comparison %c becomes (`_select_program`); "stored": the function returns it (i1)."""


def _select_program(predicate: str, rows: int, columns: int, against: str, form: str = "where") -> str:
    """where(x PREDICATE y, x, 0.5 y) on [rows, columns] f32 (`form` "where"; "cast": the
    comparison cast to f32 times 0.5 y; "stored": the comparison itself, i1), y a second input of
    the same shape ("tensor"), a per-row input [rows, 1] ("row") or the constant 0 ("constant")."""
    t = f"tensor<{rows}x{columns}xf32>"
    y_type = {"tensor": t, "row": f"tensor<{rows}x1xf32>", "constant": "tensor<f32>"}[against]
    arguments = f"%x: {t}" + ("" if against == "constant" else f", %y: {y_type}")
    constant = "  %y = graph.constant dense<0.0> : tensor<f32>\n" if against == "constant" else ""
    b = f"tensor<{rows}x{columns}xi1>"
    result, result_type = ("%c", b) if form == "stored" else ("%r", t)
    return f"""func.func @main({arguments}) -> {result_type} {{
{constant}  %half = graph.constant dense<0.5> : tensor<f32>
  %c = graph.cmp {predicate}, %x, %y : ({t}, {y_type}) -> {b}
  %s = graph.mul %y, %half : ({y_type}, tensor<f32>) -> {y_type}
  {_FORMS[form].format(b=b, t=t, y_type=y_type)}
  func.return {result} : {result_type}
}}"""


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    predicate=st.sampled_from(("eq", "ne", "lt", "le", "gt", "ge")),
    rows=st.sampled_from((1, 3, 8)),
    columns=st.sampled_from((5, 16, 40, 130)),
    against=st.sampled_from(("tensor", "row", "constant")),
    width=WIDTHS,
    seed=st.integers(0, 2**32 - 1),
    form=st.sampled_from(sorted(_FORMS)),
)
@example(predicate="gt", rows=3, columns=40, against="tensor", width=16, seed=1, form="cast")
@example(predicate="ne", rows=3, columns=40, against="row", width=8, seed=2, form="stored")
def test_comparisons_deciding_selects_are_computed_on_vectors(predicate, rows, columns, against, width, seed, form):
    """A comparison whose only use is a select's condition (or a cast to f32, a select of 1.0 and
    0.0) stays in the row kernel, as llvm.fcmp of vectors (a vector of i1) and llvm.select lane
    by lane, and the kernel computes what the graph interpreter does (exactly: a select moves
    values; the cast's product is rounded as the interpreter rounds it)."""
    from mlc.dialects import llvm_extra

    program = _select_program(predicate, rows, columns, against, form)
    after = _checked(program, width, 1, seed)
    assert _lowered_row_kernels(after) == 1
    compares = [op for op in after.walk() if isinstance(op, llvm_extra.FCmpOp)]
    assert compares and all(op.lhs.type.get_shape() == (width,) for op in compares if columns >= width)


@pytest.mark.parametrize(
    ("predicate", "form"), [(p, "where") for p in ("eq", "ne", "lt", "le", "gt", "ge")] + [(p, f) for p in ("gt", "ne") for f in ("cast", "stored")]
)
def test_comparisons_on_vectors_end_to_end_against_numpy(predicate: str, form: str):
    """Compiled for the CPU, where(x PREDICATE y, x, 0.5 y), (x PREDICATE y).astype(f32) * 0.5 y
    and x PREDICATE y itself (a bool array: one byte an element) give numpy's bits, NaNs included
    (ordered predicates are false on a NaN, `ne` true, as numpy's)."""
    import mlc

    program = _select_program(predicate, 4, 70, "tensor", form)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 70)).astype(np.float32)
    y = np.where(rng.random((4, 70)) < 0.3, x, rng.standard_normal((4, 70)).astype(np.float32))
    x[0, :5] = np.nan
    y[1, 3:9] = np.nan
    compare = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
    condition = compare[predicate](x, y)
    with np.errstate(invalid="ignore"):
        expected = {
            "where": lambda: np.where(condition, x, y * np.float32(0.5)),
            "cast": lambda: condition.astype(np.float32) * (y * np.float32(0.5)),
            "stored": lambda: condition,
        }[form]()
    result = mlc.compile(program, device="cpu")(x, y)
    np.testing.assert_array_equal(result, expected)
