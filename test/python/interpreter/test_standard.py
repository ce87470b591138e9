"""Semantics of the standard dialects: exact dtypes, signless integers, casts, math precision.

Each case runs one op inside a `tile.map`, i.e. on whole arrays through the same implementations
the SIMT engine uses, and compares with a numpy reference.
"""

import math

import numpy as np
import pytest

from mlc.interpreter import InterpreterError, OutOfBounds, UnsupportedOperation, run, run_kernel

SIZE = 64

MAP_KERNEL = """
tile.kernel @k(%a: memref<{n}x{t}>, %b: memref<{n}x{t}>, %out: memref<{n}x{r}>) grid [1] {{
  %c0 = arith.constant 0 : index
  %x = tile.load %a[%c0] : memref<{n}x{t}> -> !tile.tile<{n}x{t}>
  %y = tile.load %b[%c0] : memref<{n}x{t}> -> !tile.tile<{n}x{t}>
  %m = tile.map %x, %y : !tile.tile<{n}x{t}>, !tile.tile<{n}x{t}> -> !tile.tile<{n}x{r}> {{
  ^bb0(%u: {t}, %v: {t}):
    {body}
    tile.yield %w : {r}
  }}
  tile.store %m, %out[%c0] : !tile.tile<{n}x{r}>, memref<{n}x{r}>
  tile.return
}}
"""

DTYPES = {
    "i1": np.bool_,
    "i8": np.int8,
    "i32": np.int32,
    "i64": np.int64,
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
}


def run_map(parse, body: str, operand: str, result: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    module = parse(MAP_KERNEL.format(n=SIZE, t=operand, r=result, body=body))
    (_, _, out) = run_kernel(module, "k", [a, b, np.zeros(SIZE, DTYPES[result])])
    assert out.dtype == DTYPES[result]
    return out


def _ints(rng, dtype=np.int32):
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=SIZE, dtype=dtype, endpoint=True)
    values[:6] = [info.min, info.max, -1, 0, 1, -7]
    return values


def _trunc_div(a, b):
    return np.fix(a.astype(np.float64) / b.astype(np.float64)).astype(np.int64)


INTEGER_CASES = {
    "arith.addi %u, %v : i32": lambda a, b: (a.astype(np.int64) + b).astype(np.int32),
    "arith.muli %u, %v : i32": lambda a, b: (a.astype(np.int64) * b).astype(np.int32),
    "arith.divsi %u, %v : i32": lambda a, b: _trunc_div(a, b).astype(np.int32),
    "arith.remsi %u, %v : i32": lambda a, b: (a - _trunc_div(a, b) * b).astype(np.int32),
    "arith.floordivsi %u, %v : i32": lambda a, b: np.floor_divide(a.astype(np.int64), b).astype(np.int32),
    "arith.ceildivsi %u, %v : i32": lambda a, b: (-np.floor_divide(-a.astype(np.int64), b)).astype(np.int32),
    "arith.divui %u, %v : i32": lambda a, b: (a.view(np.uint32) // b.view(np.uint32)).view(np.int32),
    "arith.remui %u, %v : i32": lambda a, b: (a.view(np.uint32) % b.view(np.uint32)).view(np.int32),
    "arith.maxui %u, %v : i32": lambda a, b: np.maximum(a.view(np.uint32), b.view(np.uint32)).view(np.int32),
    "arith.minsi %u, %v : i32": np.minimum,
    "arith.xori %u, %v : i32": np.bitwise_xor,
}


@pytest.mark.parametrize("body", sorted(INTEGER_CASES))
def test_integer_arithmetic_is_signless_and_wraps(parse, rng, body):
    a, b = _ints(rng), _ints(rng)
    b[b == 0] = 3
    b[6] = -1  # INT_MIN / -1 overflows; any value is fine there, so do not compare it
    a[6] = 5
    out = run_map(parse, f"%w = {body}", "i32", "i32", a, b)
    np.testing.assert_array_equal(out, INTEGER_CASES[body](a, b))


@pytest.mark.parametrize("kind", ["shli", "shrsi", "shrui"])
def test_shifts(parse, rng, kind):
    a = _ints(rng)
    b = rng.integers(0, 32, size=SIZE, dtype=np.int32)
    out = run_map(parse, f"%w = arith.{kind} %u, %v : i32", "i32", "i32", a, b)
    shifted = {
        "shli": lambda: (a.astype(np.int64) << b).astype(np.int32),
        "shrsi": lambda: a >> b,
        "shrui": lambda: (a.view(np.uint32) >> b.view(np.uint32)).view(np.int32),
    }[kind]()
    np.testing.assert_array_equal(out, shifted)


@pytest.mark.parametrize("predicate", ["slt", "ult", "sge", "uge", "eq"])
def test_integer_comparisons(parse, rng, predicate):
    a, b = _ints(rng), _ints(rng)
    b[:8] = a[:8]
    out = run_map(parse, f"%w = arith.cmpi {predicate}, %u, %v : i32", "i32", "i1", a, b)
    signed, unsigned = (a, b), (a.view(np.uint32), b.view(np.uint32))
    operation = {"lt": np.less, "ge": np.greater_equal, "eq": np.equal}[predicate[-2:]]
    left, right = unsigned if predicate[0] == "u" else signed
    np.testing.assert_array_equal(out, operation(left, right))


def test_i1_extends_as_a_one_bit_integer(parse, rng):
    a, b = _ints(rng), _ints(rng)
    body = """%c = arith.cmpi slt, %u, %v : i32
    %s = arith.extsi %c : i1 to i32
    %z = arith.extui %c : i1 to i32
    %m = arith.muli %z, %v : i32
    %w = arith.addi %s, %m : i32"""
    out = run_map(parse, body, "i32", "i32", a, b)
    less = a < b
    np.testing.assert_array_equal(out, np.where(less, -1, 0) + np.where(less, b, 0))


CAST_CASES = [
    ("arith.extsi %u : i8 to i32", "i8", "i32", lambda a: a.astype(np.int32)),
    ("arith.extui %u : i8 to i32", "i8", "i32", lambda a: a.view(np.uint8).astype(np.int32)),
    ("arith.trunci %u : i32 to i8", "i32", "i8", lambda a: a.astype(np.int8)),
    ("arith.sitofp %u : i32 to f32", "i32", "f32", lambda a: a.astype(np.float32)),
    ("arith.uitofp %u : i32 to f32", "i32", "f32", lambda a: a.view(np.uint32).astype(np.float32)),
    ("arith.bitcast %u : i32 to f32", "i32", "f32", lambda a: a.view(np.float32)),
    (
        "arith.index_cast %u : i32 to index\n    %w = arith.index_cast %i : index to i8",
        "i32",
        "i8",
        lambda a: a.astype(np.int8),
    ),
    ("arith.fptosi %u : f32 to i32", "f32", "i32", lambda a: np.trunc(a).astype(np.int32)),
    ("arith.truncf %u : f32 to f16", "f32", "f16", lambda a: a.astype(np.float16)),
    ("arith.extf %u : f16 to f64", "f16", "f64", lambda a: a.astype(np.float64)),
]


@pytest.mark.parametrize("case", CAST_CASES, ids=[c[0].split()[0] + "_" + c[1] for c in CAST_CASES])
def test_casts(parse, rng, case):
    body, source, target, reference = case
    if source.startswith("i"):
        a = _ints(rng, DTYPES[source])
    else:
        a = (rng.standard_normal(SIZE) * 1000).astype(DTYPES[source])
    body = f"%i = {body}" if "\n" in body else f"%w = {body}"
    out = run_map(parse, body, source, target, a, a)
    np.testing.assert_array_equal(out, reference(a))


def _round_from_double(function):
    return lambda x: function(x.astype(np.float64)).astype(x.dtype)


FLOAT_CASES = {
    "arith.addf %u, %v : f32": lambda a, b: a + b,
    "arith.divf %u, %v : f32": lambda a, b: a / b,
    "math.fma %u, %v, %u : f32": lambda a, b: (a.astype(np.float64) * b + a).astype(np.float32),
    "math.exp %u : f32": lambda a, b: _round_from_double(np.exp)(a),
    "math.tanh %u : f32": lambda a, b: _round_from_double(np.tanh)(a),
    "math.erf %u : f32": lambda a, b: np.array([math.erf(x) for x in a.astype(np.float64)]).astype(
        np.float32
    ),
    "math.rsqrt %u : f32": lambda a, b: (1.0 / np.sqrt(np.abs(a).astype(np.float64))).astype(np.float32),
    "math.powf %u, %v : f32": lambda a, b: np.power(np.abs(a).astype(np.float64), b).astype(np.float32),
    "arith.maximumf %u, %v : f32": np.maximum,
    "arith.maxnumf %u, %v : f32": np.fmax,
    "math.round %u : f32": lambda a, b: (np.sign(a) * np.floor(np.abs(a) + np.float32(0.5))).astype(
        np.float32
    ),
}


@pytest.mark.parametrize("body", sorted(FLOAT_CASES))
def test_f32_math_is_float32(parse, rng, body):
    a = (rng.standard_normal(SIZE) * 3).astype(np.float32)
    b = rng.standard_normal(SIZE).astype(np.float32)
    a[0], b[1] = np.nan, np.nan
    a[2] = 2.5
    reference = FLOAT_CASES[body]
    if "rsqrt" in body or "powf" in body:  # defined for non-negative bases only
        program = "%p = math.absf %u : f32\n    %w = " + body.replace("%u", "%p")
    else:
        program = "%w = " + body
    out = run_map(parse, program, "f32", "f32", a, b)
    np.testing.assert_array_equal(out, reference(a, b))


@pytest.mark.parametrize("predicate", ["olt", "ult", "one", "ueq", "uno", "ord"])
def test_float_comparisons_with_nan(parse, rng, predicate):
    a = rng.standard_normal(SIZE).astype(np.float32)
    b = rng.standard_normal(SIZE).astype(np.float32)
    a[:4], b[2:6] = np.nan, np.nan
    b[10:12] = a[10:12]
    out = run_map(parse, f"%w = arith.cmpf {predicate}, %u, %v : f32", "f32", "i1", a, b)
    unordered = np.isnan(a) | np.isnan(b)
    expected = {
        "olt": (a < b) & ~unordered,
        "ult": (a < b) | unordered,
        "one": (a != b) & ~unordered,
        "ueq": (a == b) | unordered,
        "uno": unordered,
        "ord": ~unordered,
    }[predicate]
    np.testing.assert_array_equal(out, expected)


def test_f16_arithmetic_rounds_to_f16(parse, rng):
    a = rng.standard_normal(SIZE).astype(np.float16)
    b = rng.standard_normal(SIZE).astype(np.float16)
    out = run_map(parse, "%p = arith.mulf %u, %v : f16\n    %w = arith.subf %p, %v : f16", "f16", "f16", a, b)
    np.testing.assert_array_equal(out, a * b - b)


def test_graph_functions_run_on_tensors(parse, rng):
    module = parse("""
    func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
      %s = graph.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
      %e = graph.exp %s : tensor<3x4xf32>
      func.return %e : tensor<3x4xf32>
    }
    """)
    a = rng.standard_normal((3, 4), dtype=np.float32)
    b = rng.standard_normal(4, dtype=np.float32)
    (out,) = run(module, None, [a, b])
    np.testing.assert_array_equal(out, np.exp((a + b).astype(np.float64)).astype(np.float32))


HOST = """
"memref.global"() <{sym_name = "weights", sym_visibility = "private", type = memref<2x2xf32>, initial_value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>, constant}> : () -> ()
tile.kernel @mul(%x: memref<4xf32>, %w: memref<4xf32>, %out: memref<4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<4xf32> -> !tile.tile<4xf32>
  %b = tile.load %w[%c0] : memref<4xf32> -> !tile.tile<4xf32>
  %p = tile.map %a, %b : !tile.tile<4xf32>, !tile.tile<4xf32> -> !tile.tile<4xf32> {
  ^bb0(%u: f32, %v: f32):
    %r = arith.mulf %u, %v : f32
    tile.yield %r : f32
  }
  tile.store %p, %out[%c0] : !tile.tile<4xf32>, memref<4xf32>
  tile.return
}
func.func @main(%x: memref<2x2xf32>) -> memref<2x2xf32> {
  %w = memref.get_global @weights : memref<2x2xf32>
  %out = memref.alloc() : memref<2x2xf32>
  tile.launch @mul(%x, %w, %out) : memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>
  func.return %out : memref<2x2xf32>
}
"""


def test_host_globals_and_reshaped_launch_arguments(parse, rng):
    x = rng.standard_normal((2, 2), dtype=np.float32)
    (out,) = run(parse(HOST), "main", [x])
    np.testing.assert_array_equal(out, x * np.array([[1, 2], [3, 4]], np.float32))


def test_writing_a_constant_global_is_an_error(parse):
    module = parse(HOST.replace("tile.launch @mul(%x, %w, %out)", "tile.launch @mul(%x, %x, %w)"))
    with pytest.raises(InterpreterError, match="constant buffer 'weights'"):
        run(module, "main", [np.ones((2, 2), np.float32)])


def test_pointer_past_the_end_is_out_of_bounds(parse):
    module = parse("""
    llvm.func @past(%x: !llvm.ptr) {
      %c = llvm.mlir.constant(4 : i64) : i64
      %p = llvm.getelementptr %x[%c] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %p : !llvm.ptr -> f32
      llvm.return
    }
    """)
    with pytest.raises(OutOfBounds, match="byte 16 of buffer 'x'.* 16 bytes"):
        run_kernel(module, "past", [np.zeros(4, np.float32)])


def test_unsupported_ops_are_named(parse):
    module = parse("""
    func.func @main(%x: memref<4xf32>) {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<4xf32>
      "vector.print"(%v) : (f32) -> ()
      func.return
    }
    """)
    with pytest.raises(UnsupportedOperation, match="cannot run 'vector.print'"):
        run(module, "main", [np.zeros(4, np.float32)])


def test_dynamic_host_memrefs_and_scalar_results(parse, rng):
    module = parse("""
    func.func @main(%x: memref<?xf32>) -> (memref<?xf32>, index) {
      %c0 = arith.constant 0 : index
      %n = memref.dim %x, %c0 : memref<?xf32>
      %out = memref.alloc(%n) : memref<?xf32>
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %n step %c1 {
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.mulf %v, %v : f32
        memref.store %w, %out[%i] : memref<?xf32>
      }
      func.return %out, %n : memref<?xf32>, index
    }
    """)
    x = rng.standard_normal(7, dtype=np.float32)
    out, n = run(module, "main", [x])
    np.testing.assert_array_equal(out, x * x)
    assert n == 7 and n.dtype == np.int64
