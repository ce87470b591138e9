"""Lowered kernels: llvm.func with unstructured control flow, NVVM intrinsics, casts, libm calls."""

import numpy as np
import pytest

from mlc.interpreter import BarrierDivergence, DataRace, UnsupportedOperation, run, run_kernel

# Each thread i < 1000 computes max(exp(sum_{k <= i % 8} x[i] * k), x[i]) with a loop whose trip
# count differs per lane, written as LLVM blocks with block arguments.
LOOP_KERNEL = """
llvm.func @expf(f32) -> f32
llvm.func @kernel(%x: !llvm.ptr, %out: !llvm.ptr) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %ctaid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ctaid.x"() : () -> i32
  %ntid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.ntid.x"() : () -> i32
  %t0 = llvm.mul %ctaid, %ntid : i32
  %i = llvm.add %t0, %tid : i32
  %n = llvm.mlir.constant(1000 : i32) : i32
  %inside = llvm.icmp "slt" %i, %n : i32
  llvm.cond_br %inside, ^body, ^exit
^body:
  %i64 = llvm.sext %i : i32 to i64
  %px = llvm.getelementptr %x[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %px : !llvm.ptr -> f32
  %c8 = llvm.mlir.constant(8 : i32) : i32
  %trip = llvm.urem %i, %c8 : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %fzero = llvm.mlir.constant(0.0 : f32) : f32
  llvm.br ^header(%zero, %fzero : i32, f32)
^header(%k: i32, %acc: f32):
  %more = llvm.icmp "sle" %k, %trip : i32
  llvm.cond_br %more, ^loop, ^done
^loop:
  %kf = llvm.sitofp %k : i32 to f32
  %p = llvm.fmul %v, %kf : f32
  %acc2 = llvm.fadd %acc, %p : f32
  %one = llvm.mlir.constant(1 : i32) : i32
  %k2 = llvm.add %k, %one : i32
  llvm.br ^header(%k2, %acc2 : i32, f32)
^done:
  %e = llvm.call @expf(%acc) : (f32) -> f32
  %m = llvm.call_intrinsic "llvm.maximum.f32"(%e, %v) : (f32, f32) -> f32
  %po = llvm.getelementptr %out[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %m, %po : f32, !llvm.ptr
  llvm.br ^exit
^exit:
  llvm.return
}
func.func @main(%x: memref<1000xf32>) -> memref<1000xf32> {
  %out = memref.alloc() : memref<1000xf32>
  mlc_gpu.launch @kernel(%x, %out) grid [8, 1, 1] block [128, 1, 1] : memref<1000xf32>, memref<1000xf32>
  func.return %out : memref<1000xf32>
}
"""


def _loop_kernel_reference(x: np.ndarray) -> np.ndarray:
    result = np.empty_like(x)
    for i, value in enumerate(x):
        total = np.float32(0)
        for k in range(i % 8 + 1):
            total = np.float32(total + np.float32(value * np.float32(k)))
        result[i] = max(np.float32(np.exp(np.float64(total))), value)
    return result


def test_gpu_kernel_with_branches_and_a_loop(parse, rng):
    x = rng.standard_normal(1000, dtype=np.float32)
    (out,) = run(parse(LOOP_KERNEL), "main", [x])
    np.testing.assert_array_equal(out, _loop_kernel_reference(x))


# Threads loop a different number of times, then meet at a barrier and exchange through shared
# memory: lanes that leave the loop early must wait at its exit (reconvergence).
SHARED_AFTER_LOOP = """
llvm.mlir.global internal @smem() {addr_space = 3 : i32} : !llvm.array<64 x i32>
llvm.func @exchange(%out: !llvm.ptr<1>) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %one = llvm.mlir.constant(1 : i32) : i32
  llvm.br ^header(%zero, %zero : i32, i32)
^header(%k: i32, %sum: i32):
  %more = llvm.icmp "slt" %k, %tid : i32
  llvm.cond_br %more, ^loop, ^exit
^loop:
  %sum2 = llvm.add %sum, %k : i32
  %k2 = llvm.add %k, %one : i32
  llvm.br ^header(%k2, %sum2 : i32, i32)
^exit:
  %shared = llvm.mlir.addressof @smem : !llvm.ptr<3>
  %t64 = llvm.zext %tid : i32 to i64
  %slot = llvm.getelementptr %shared[0, %t64] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<64 x i32>
  llvm.store %sum, %slot : i32, !llvm.ptr<3>
  BARRIER
  %c63 = llvm.mlir.constant(63 : i32) : i32
  %other = llvm.sub %c63, %tid : i32
  %o64 = llvm.zext %other : i32 to i64
  %from = llvm.getelementptr %shared[0, %o64] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<64 x i32>
  %v = llvm.load %from : !llvm.ptr<3> -> i32
  %generic = llvm.addrspacecast %out : !llvm.ptr<1> to !llvm.ptr
  %to = llvm.getelementptr %generic[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %v, %to : i32, !llvm.ptr
  llvm.return
}
"""

BARRIER = 'llvm.call_intrinsic "llvm.nvvm.barrier.cta.sync.aligned.all"(%zero) : (i32) -> ()'


def test_barrier_after_a_divergent_loop_reconverges(parse):
    module = parse(SHARED_AFTER_LOOP.replace("BARRIER", BARRIER))
    (out,) = run_kernel(module, "exchange", [np.zeros(64, np.int32)], grid=(1, 1, 1), block=(64, 1, 1))
    triangular = np.array([t * (t - 1) // 2 for t in range(64)], dtype=np.int32)
    np.testing.assert_array_equal(out, triangular[::-1])


def test_missing_nvvm_barrier_is_a_race(parse):
    module = parse(SHARED_AFTER_LOOP.replace("BARRIER", ""))
    with pytest.raises(DataRace) as caught:
        run_kernel(module, "exchange", [np.zeros(64, np.int32)], grid=(2, 1, 1), block=(64, 1, 1))
    assert caught.value.kind == "RAW"
    assert "smem" in caught.value.buffer


def test_nvvm_barrier_in_a_branch_is_an_error(parse):
    module = parse("""
    llvm.func @bad(%out: !llvm.ptr) {
      %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %odd = llvm.and %tid, %c1 : i32
      %skip = llvm.icmp "ne" %odd, %c1 : i32
      llvm.cond_br %skip, ^exit, ^wait
    ^wait:
      llvm.call_intrinsic "llvm.nvvm.barrier0"() : () -> ()
      llvm.br ^exit
    ^exit:
      llvm.return
    }
    """)
    with pytest.raises(BarrierDivergence):
        run_kernel(module, "bad", [np.zeros(4, np.float32)], grid=(1, 1, 1), block=(32, 1, 1))


def test_mixed_levels_with_unrealized_casts(parse, rng):
    # A partly lowered kernel: bare pointers cast back to memrefs, i64 cast to index.
    module = parse("""
    llvm.func @half_sum(%a: !llvm.ptr, %b: !llvm.ptr, %out: !llvm.ptr) {
      %x = builtin.unrealized_conversion_cast %a : !llvm.ptr to memref<4x8xf16>
      %y = builtin.unrealized_conversion_cast %b : !llvm.ptr to memref<4x8xf16>
      %o = builtin.unrealized_conversion_cast %out : !llvm.ptr to memref<4x8xf32>
      %tx = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
      %ty = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.y"() : () -> i32
      %x64 = llvm.zext %tx : i32 to i64
      %y64 = llvm.sext %ty : i32 to i64
      %col = builtin.unrealized_conversion_cast %x64 : i64 to index
      %row = builtin.unrealized_conversion_cast %y64 : i64 to index
      %u = memref.load %x[%row, %col] : memref<4x8xf16>
      %v = memref.load %y[%row, %col] : memref<4x8xf16>
      %s = arith.addf %u, %v : f16
      %w = llvm.fpext %s : f16 to f32
      memref.store %w, %o[%row, %col] : memref<4x8xf32>
      llvm.return
    }
    func.func @main(%a: memref<32xf16>, %b: memref<4x8xf16>) -> memref<4x8xf32> {
      %out = memref.alloc() : memref<4x8xf32>
      mlc_gpu.launch @half_sum(%a, %b, %out) grid [1, 1, 1] block [8, 4, 1] : memref<32xf16>, memref<4x8xf16>, memref<4x8xf32>
      func.return %out : memref<4x8xf32>
    }
    """)
    a = rng.standard_normal(32).astype(np.float16)
    b = rng.standard_normal((4, 8)).astype(np.float16)
    (out,) = run(module, "main", [a, b])
    np.testing.assert_array_equal(out, (a.reshape(4, 8) + b).astype(np.float32))


def test_cpu_kernel_runs_once_with_a_loop(parse, rng):
    module = parse("""
    llvm.func @scale(%x: !llvm.ptr, %out: !llvm.ptr) {
      %zero = llvm.mlir.constant(0 : i64) : i64
      %one = llvm.mlir.constant(1 : i64) : i64
      %n = llvm.mlir.constant(20 : i64) : i64
      llvm.br ^header(%zero : i64)
    ^header(%i: i64):
      %more = llvm.icmp "ult" %i, %n : i64
      llvm.cond_br %more, ^body, ^exit
    ^body:
      %p = llvm.getelementptr inbounds %x[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64
      %v = llvm.load %p : !llvm.ptr -> f64
      %r = llvm.call_intrinsic "llvm.sqrt.f64"(%v) : (f64) -> f64
      %q = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f64
      llvm.store %r, %q : f64, !llvm.ptr
      %next = llvm.add %i, %one : i64
      llvm.br ^header(%next : i64)
    ^exit:
      llvm.return
    }
    func.func @main(%x: memref<4x5xf64>) -> memref<4x5xf64> {
      %out = memref.alloc() : memref<4x5xf64>
      loop.launch @scale(%x, %out) : memref<4x5xf64>, memref<4x5xf64>
      func.return %out : memref<4x5xf64>
    }
    """)
    x = rng.random((4, 5))
    (out,) = run(module, "main", [x])
    np.testing.assert_array_equal(out, np.sqrt(x))


def test_vector_loads_reinterpret_bytes_and_unknown_calls_are_named(parse, rng):
    module = parse("""
    llvm.func @mystery(f32) -> f32
    llvm.func @bits(%x: !llvm.ptr, %out: !llvm.ptr) {
      %v = llvm.load %x : !llvm.ptr -> vector<4xi32>
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %c2 = llvm.mlir.constant(2 : i64) : i64
      %e = llvm.extractelement %v[%c1 : i32] : vector<4xi32>
      %w = llvm.insertelement %e, %v[%c2 : i64] : vector<4xi32>
      %f = llvm.bitcast %w : vector<4xi32> to vector<4xf32>
      llvm.store %f, %out : vector<4xf32>, !llvm.ptr
      llvm.return
    }
    llvm.func @calls_mystery(%x: !llvm.ptr) {
      %v = llvm.load %x : !llvm.ptr -> f32
      %r = llvm.call @mystery(%v) : (f32) -> f32
      llvm.return
    }
    """)
    x = rng.standard_normal(4, dtype=np.float32)
    (_, out) = run_kernel(module, "bits", [x, np.zeros(4, np.float32)])
    np.testing.assert_array_equal(out, x[[0, 1, 1, 3]])
    with pytest.raises(UnsupportedOperation, match="@mystery"):
        run_kernel(module, "calls_mystery", [x])


def test_warp_shuffle_reduction(parse, rng):
    # A butterfly sum over each warp, then lane 0 of every warp writes the total.
    module = parse("""
    llvm.func @warp_sum(%x: !llvm.ptr, %out: !llvm.ptr) {
      %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
      %t64 = llvm.zext %tid : i32 to i64
      %p = llvm.getelementptr %x[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v0 = llvm.load %p : !llvm.ptr -> f32
      %all = llvm.mlir.constant(-1 : i32) : i32
      %clamp = llvm.mlir.constant(31 : i32) : i32
      %c16 = llvm.mlir.constant(16 : i32) : i32
      %c8 = llvm.mlir.constant(8 : i32) : i32
      %c4 = llvm.mlir.constant(4 : i32) : i32
      %c2 = llvm.mlir.constant(2 : i32) : i32
      %c1 = llvm.mlir.constant(1 : i32) : i32
      %s16 = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%all, %v0, %c16, %clamp) : (i32, f32, i32, i32) -> f32
      %v1 = llvm.fadd %v0, %s16 : f32
      %s8 = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%all, %v1, %c8, %clamp) : (i32, f32, i32, i32) -> f32
      %v2 = llvm.fadd %v1, %s8 : f32
      %s4 = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%all, %v2, %c4, %clamp) : (i32, f32, i32, i32) -> f32
      %v3 = llvm.fadd %v2, %s4 : f32
      %s2 = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%all, %v3, %c2, %clamp) : (i32, f32, i32, i32) -> f32
      %v4 = llvm.fadd %v3, %s2 : f32
      %s1 = llvm.call_intrinsic "llvm.nvvm.shfl.sync.down.f32"(%all, %v4, %c1, %clamp) : (i32, f32, i32, i32) -> f32
      %v5 = llvm.fadd %v4, %s1 : f32
      %lane = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.laneid"() : () -> i32
      %zero = llvm.mlir.constant(0 : i32) : i32
      %first = llvm.icmp "eq" %lane, %zero : i32
      llvm.cond_br %first, ^write, ^exit
    ^write:
      %c5 = llvm.mlir.constant(5 : i32) : i32
      %warp = llvm.lshr %tid, %c5 : i32
      %w64 = llvm.zext %warp : i32 to i64
      %q = llvm.getelementptr %out[%w64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %v5, %q : f32, !llvm.ptr
      llvm.br ^exit
    ^exit:
      llvm.return
    }
    """)
    x = rng.integers(-8, 8, size=128).astype(np.float32)  # small integers: every order sums exactly
    (_, out) = run_kernel(module, "warp_sum", [x, np.zeros(4, np.float32)], grid=(1, 1, 1), block=(128, 1, 1))
    np.testing.assert_array_equal(out, x.reshape(4, 32).sum(axis=1))


def test_llvm_intrinsic_ops_and_f16_conversions(parse, rng):
    module = parse("""
    llvm.func @math(%x: !llvm.ptr, %out: !llvm.ptr) {
      %v = llvm.load %x : !llvm.ptr -> vector<4xf16>
      %w = llvm.fpext %v : vector<4xf16> to vector<4xf32>
      %a = llvm.intr.fabs(%w) : (vector<4xf32>) -> vector<4xf32>
      %b = llvm.intr.fma(%a, %w, %a) : (vector<4xf32>, vector<4xf32>, vector<4xf32>) -> vector<4xf32>
      %c = llvm.intr.maxnum(%b, %w) : (vector<4xf32>, vector<4xf32>) -> vector<4xf32>
      %start = llvm.mlir.constant(1.0 : f32) : f32
      %s = "llvm.intr.vector.reduce.fadd"(%start, %c) <{fastmathFlags = #llvm.fastmath<none>}> : (f32, vector<4xf32>) -> f32
      %h = llvm.fptrunc %s : f32 to f16
      llvm.store %h, %out : f16, !llvm.ptr
      llvm.return
    }
    """)
    x = rng.standard_normal(4).astype(np.float16)
    (_, out) = run_kernel(module, "math", [x, np.zeros(1, np.float16)])
    w = x.astype(np.float32)
    a = np.abs(w)
    c = np.fmax((a.astype(np.float64) * w + a).astype(np.float32), w)
    total = np.float32(1)
    for value in c:
        total = np.float32(total + value)
    assert out[0] == np.float16(total)


def test_constant_global_table(parse, rng):
    module = parse("""
    llvm.mlir.global internal constant @table(dense<[1.5, -2.0, 4.25, 8.0]> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
    llvm.func @lookup(%index: !llvm.ptr, %out: !llvm.ptr) {
      %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
      %t64 = llvm.sext %tid : i32 to i64
      %p = llvm.getelementptr %index[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
      %i = llvm.load %p : !llvm.ptr -> i32
      %table = llvm.mlir.addressof @table : !llvm.ptr
      %entry = llvm.getelementptr %table[0, %i] : (!llvm.ptr, i32) -> !llvm.ptr, !llvm.array<4 x f32>
      %v = llvm.load %entry : !llvm.ptr -> f32
      %q = llvm.getelementptr %out[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %v, %q : f32, !llvm.ptr
      llvm.return
    }
    """)
    index = rng.integers(0, 4, size=32, dtype=np.int32)
    (_, out) = run_kernel(
        module, "lookup", [index, np.zeros(32, np.float32)], grid=(1, 1, 1), block=(32, 1, 1)
    )
    np.testing.assert_array_equal(out, np.array([1.5, -2.0, 4.25, 8.0], np.float32)[index])
