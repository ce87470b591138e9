"""The API's part of the malformed-input corpus: `mlc.compile` and compiled functions on bad input.

Each row of a table is one case: what is passed, the exception class expected and a pattern its
message must match (it names the argument or the input). A clean failure here is an exception of
that class that is an `MlcError` (so tools print it without a traceback), and also a ValueError or
TypeError where Python convention expects one; never a crash, a raw numpy or driver error, or a
parse of something that is not MLIR text.

Some inputs are decisions rather than errors (a path without `.mlir`, non-contiguous, read-only,
byte-swapped and 0-d arrays, numpy scalars, objects with numpy's array protocol): the
`ACCEPTED_*` tables check that they work and give numpy's answer. Everything runs on the CPU.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mlc
from corpus_support import assert_clean_failure, run_tool
from mlc.compiler import CompileError
from mlc.errors import ArgumentError, ArgumentTypeError, MlcError, OutOfMemoryError

PROGRAM = """func.func @main(%x: tensor<4x8xf32>, %s: tensor<f32>) -> tensor<4x8xf32> {
  %0 = graph.mul %x, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
"""

HUGE_TYPE = "tensor<100000x100000x100000xf32>"
HUGE_OPERAND = f"""func.func @main(%x: {HUGE_TYPE}) -> {HUGE_TYPE} {{
  %0 = graph.relu %x : {HUGE_TYPE}
  func.return %0 : {HUGE_TYPE}
}}
"""
HUGE_ARGUMENT = f"""func.func @main(%x: {HUGE_TYPE}) -> {HUGE_TYPE} {{
  func.return %x : {HUGE_TYPE}
}}
"""
# Each intermediate is 10^12 f32 (3.64 TiB): below what the targets address, above any machine's memory.
# A softmax over axis 0, not an attention chain: graph-fuse would fuse a last-axis one into one
# kernel whose scores never reach memory, leaving no huge intermediate to refuse.
HUGE_INTERMEDIATES = """func.func @main(%a: tensor<1000000x1xf32>, %b: tensor<1x1000000xf32>) -> tensor<1000000x1xf32> {
  %h = graph.matmul %a, %b : (tensor<1000000x1xf32>, tensor<1x1000000xf32>) -> tensor<1000000x1000000xf32>
  %s = graph.softmax %h axis 0 : tensor<1000000x1000000xf32>
  %t = graph.reshape %b : tensor<1x1000000xf32> to tensor<1000000x1xf32>
  %y = graph.matmul %s, %t : (tensor<1000000x1000000xf32>, tensor<1000000x1xf32>) -> tensor<1000000x1xf32>
  func.return %y : tensor<1000000x1xf32>
}
"""

ARGUMENT_BEYOND_MEMORY = """func.func @main(%a: tensor<1000000x1000000xf32>) -> tensor<1000000x1xf32> {
  %y = graph.reduce_sum %a axes [1] keepdims true : tensor<1000000x1000000xf32> to tensor<1000000x1xf32>
  func.return %y : tensor<1000000x1xf32>
}
"""


def assert_clean_exception(error: BaseException, expected: type[BaseException], pattern: str) -> None:
    assert isinstance(error, expected), f"{type(error).__name__} instead of {expected.__name__}: {error}"
    assert isinstance(error, MlcError) or expected is TypeError, f"{type(error).__name__} is no MlcError: {error}"
    assert re.search(pattern, str(error)), f"the message does not match {pattern!r}:\n{error}"
    assert "Traceback" not in str(error)


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


# --------------------------------------------------------------------------------------------
# mlc.compile
# --------------------------------------------------------------------------------------------

# (id, arguments of mlc.compile given a scratch directory, exception, message pattern)
COMPILE_CASES: list[tuple[str, Callable[[Path], dict[str, Any]], type[BaseException], str]] = [
    ("source-none", lambda d: {"source": None}, ArgumentTypeError, r"source must be MLIR text .*got NoneType"),
    ("source-int", lambda d: {"source": 3}, ArgumentTypeError, r"source must be .*got int"),
    ("source-float", lambda d: {"source": 1.5}, ArgumentTypeError, r"source must be .*got float"),
    ("source-bytes", lambda d: {"source": PROGRAM.encode()}, ArgumentTypeError, r"got bytes \(decode bytes first"),
    ("source-list", lambda d: {"source": [PROGRAM]}, ArgumentTypeError, r"source must be .*got list"),
    ("source-dict", lambda d: {"source": {"main": PROGRAM}}, ArgumentTypeError, r"got dict"),
    (
        "missing-mlir-path",
        lambda d: {"source": str(d / "missing.mlir")},
        CompileError,
        r"cannot read .*missing\.mlir: No such file or directory",
    ),
    (
        "missing-pathlike",
        lambda d: {"source": d / "model.txt"},
        CompileError,
        r"cannot read .*model\.txt: No such file or directory",
    ),
    ("directory-string", lambda d: {"source": str(d)}, CompileError, r"is a directory, not an MLIR file"),
    ("directory-pathlike", lambda d: {"source": d}, CompileError, r"is a directory, not an MLIR file"),
    (
        "one-line-text-naming-no-file",
        lambda d: {"source": "model.onnx"},
        CompileError,
        r"(?s)<string>:1:\d+: error: .*\nnote: 'model\.onnx' names no file, so it was parsed as MLIR text",
    ),
    (
        "text-file-not-mlir",
        lambda d: {"source": str(write(d / "notes.txt", "these are notes\n"))},
        CompileError,
        r"notes\.txt:1:\d+: error: Operation these is not registered",
    ),
    (
        "non-utf8-file",
        lambda d: {"source": write(d / "latin1.mlir", "// caf\xe9\n".encode("latin-1") + PROGRAM.encode())},
        CompileError,
        r"latin1\.mlir is not UTF-8 text \(byte 0xe9 at offset 6\)",
    ),
    ("empty-text", lambda d: {"source": ""}, CompileError, r"<string> is empty: there is no function to compile"),
    ("blank-file", lambda d: {"source": write(d / "blank.mlir", "\n  \n")}, CompileError, r"blank\.mlir is empty"),
    (
        "no-function",
        lambda d: {"source": "builtin.module {}"},
        CompileError,
        r"the module has no function to run",
    ),
    ("device-gpu", lambda d: {"source": PROGRAM, "device": "gpu"}, ArgumentError, r"unknown device 'gpu'.*did you mean 'cuda'"),
    ("device-tpu", lambda d: {"source": PROGRAM, "device": "tpu"}, ArgumentError, r"unknown device 'tpu': use one of 'auto', 'cuda', 'cpu'"),
    ("device-none", lambda d: {"source": PROGRAM, "device": None}, ArgumentTypeError, r"device must be a string.*got NoneType"),
    ("entry-misspelt", lambda d: {"source": PROGRAM, "entry": "mian"}, CompileError, r"no function @mian .*did you mean @main\?"),
    ("entry-not-a-string", lambda d: {"source": PROGRAM, "entry": 0}, ArgumentTypeError, r"entry must be a string or None; got int"),
    ("pipeline-unknown-pass", lambda d: {"source": PROGRAM, "pipeline": "bogus"}, MlcError, r"unknown pass 'bogus'"),
    ("pipeline-unbalanced", lambda d: {"source": PROGRAM, "pipeline": "builtin.module(cse"}, MlcError, r"missing '\)'"),
    (
        "pipeline-unknown-option",
        lambda d: {"source": PROGRAM, "pipeline": "convert-graph-to-tile{bogus=1}"},
        MlcError,
        r"has no option 'bogus'",
    ),
    (
        "pipeline-that-does-not-lower",
        lambda d: {"source": PROGRAM, "pipeline": "cse"},
        MlcError,
        r"must be a memref, got tensor<4x8xf32>\nnote: the module was lowered with 'cse'; the cpu runtime runs what 'mlc-lower-to-cpu' produces",
    ),
    ("pipeline-not-a-string", lambda d: {"source": PROGRAM, "pipeline": ["cse"]}, ArgumentTypeError, r"pipeline must be a string"),
    (
        "tensor-beyond-addressable",
        lambda d: {"source": HUGE_OPERAND},
        MlcError,
        r"<string>:2:\d+: error: 'graph.relu' op operand #0 \(x\): tensor<100000x100000x100000xf32> has "
        r"1000000000000000 elements \(3.55 PiB\), more than any target of mlc can address",
    ),
    (
        "argument-beyond-addressable",
        lambda d: {"source": HUGE_ARGUMENT},
        MlcError,
        r"argument #0 \(%x\) of @main: memref<100000x100000x100000xf32> has 1000000000000000 elements",
    ),
    (
        "argument-beyond-memory",
        lambda d: {"source": ARGUMENT_BEYOND_MEMORY},
        OutOfMemoryError,
        r"@main: argument #0 \(%a\) of @main \(memref<1000000x1000000xf32>, 3.64 TiB\) does not fit in memory",
    ),
    (
        "intermediates-beyond-memory",
        lambda d: {"source": HUGE_INTERMEDIATES},
        OutOfMemoryError,
        r"@main: the arena of @main, which holds the intermediate buffers of kernels 'main_0_matmul' and "
        r"'main_1_reduce_max_sub_exp_reduce_sum' \(memref<8000000000000xi8>, 7.28 TiB\) does not fit in memory",
    ),
]


@pytest.mark.parametrize(("make_arguments", "expected", "pattern"), [c[1:] for c in COMPILE_CASES], ids=[c[0] for c in COMPILE_CASES])
def test_compile_refuses_cleanly(tmp_path: Path, make_arguments, expected: type[BaseException], pattern: str):
    arguments = make_arguments(tmp_path)
    source = arguments.pop("source")
    with pytest.raises(BaseException) as raised:
        mlc.compile(source, **({"device": "cpu"} | arguments))
    assert_clean_exception(raised.value, expected, pattern)


def test_cuda_without_a_device_is_a_clear_error():
    from mlc.runtime import is_available

    if is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(mlc.MlcError) as raised:
        mlc.compile(PROGRAM, device="cuda")
    assert_clean_exception(raised.value, mlc.MlcError, r"device='cuda' was requested, but .*no.* CUDA device.*device='cpu'")


# (id, source given a scratch directory, entry)
ACCEPTED_SOURCES: list[tuple[str, Callable[[Path], object], str | None]] = [
    ("text", lambda d: PROGRAM, None),
    ("mlir-path-string", lambda d: str(write(d / "program.mlir", PROGRAM)), None),
    ("path-without-mlir-suffix", lambda d: str(write(d / "program.txt", PROGRAM)), None),
    ("pathlike", lambda d: write(d / "program.ir", PROGRAM), None),
    ("entry-with-at-sign", lambda d: PROGRAM, "@main"),
]


@pytest.mark.parametrize(("make_source", "entry"), [c[1:] for c in ACCEPTED_SOURCES], ids=[c[0] for c in ACCEPTED_SOURCES])
def test_compile_accepts(tmp_path: Path, make_source, entry: str | None):
    function = mlc.compile(make_source(tmp_path), device="cpu", entry=entry)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(function(x, np.float32(2)), 2 * x)


# --------------------------------------------------------------------------------------------
# Calling a compiled function
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compiled() -> mlc.CompiledFunction:
    return mlc.compile(PROGRAM, device="cpu")


X = np.arange(32, dtype=np.float32).reshape(4, 8)
S = np.array(3, dtype=np.float32)


class FailingArray:
    """Claims numpy's array protocol, then fails to convert."""

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise RuntimeError("no data here")


class ArrayLike:
    """An array of another library, through numpy's array protocol."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        return self.array


# (id, positional arguments, exception, message pattern)
CALL_CASES: list[tuple[str, tuple[object, ...], type[BaseException], str]] = [
    ("no-arguments", (), ArgumentError, r"@main takes 2 argument\(s\) \(%x: memref<4x8xf32>, %s: memref<f32>\), got 0"),
    ("too-few", (X,), ArgumentError, r"@main takes 2 argument\(s\) .*got 1"),
    ("too-many", (X, S, S), ArgumentError, r"@main takes 2 argument\(s\) .*got 3"),
    ("float64", (X.astype(np.float64), S), ArgumentError, r"argument #0 \(%x\) of @main: expected dtype float32 .*got float64.*astype\(np.float32\)"),
    ("bool-for-f32", (X > 3, S), ArgumentError, r"argument #0 \(%x\) of @main: expected dtype float32 .*got bool"),
    ("int32-for-f32", (X.astype(np.int32), S), ArgumentError, r"argument #0 \(%x\) of @main: expected dtype float32 .*got int32"),
    ("float16-scalar", (X, np.float16(3)), ArgumentError, r"argument #1 \(%s\) of @main: expected dtype float32 .*got float16"),
    ("transposed-shape", (X.T.copy(), S), ArgumentError, r"argument #0 \(%x\) of @main: expected shape \(4, 8\) .*got \(8, 4\)"),
    ("wrong-rank", (X.reshape(32), S), ArgumentError, r"argument #0 \(%x\) of @main: expected shape \(4, 8\) .*got \(32,\)"),
    ("rank-1-for-rank-0", (X, S.reshape(1)), ArgumentError, r"argument #1 \(%s\) of @main: expected shape \(\) .*got \(1,\)"),
    ("0-d-for-rank-2", (S, S), ArgumentError, r"argument #0 \(%x\) of @main: expected shape \(4, 8\) .*got \(\)"),
    ("python-list", (X.tolist(), S), ArgumentTypeError, r"argument #0 \(%x\) of @main: expected a numpy array, got list; .*np.asarray\(value, dtype=np.float32\)"),
    ("python-tuple", (X, (3.0,)), ArgumentTypeError, r"argument #1 \(%s\) of @main: expected a numpy array, got tuple"),
    ("python-float", (X, 3.0), ArgumentTypeError, r"argument #1 \(%s\) of @main: expected a numpy array, got float; .*does not guess a dtype"),
    ("python-int", (X, 3), ArgumentTypeError, r"argument #1 \(%s\) of @main: expected a numpy array, got int"),
    ("none", (None, S), ArgumentTypeError, r"argument #0 \(%x\) of @main: expected a numpy array, got NoneType; it takes float32 values of shape \(4, 8\)"),
    ("string", ("x", S), ArgumentTypeError, r"argument #0 \(%x\) of @main: expected a numpy array, got str"),
    ("plain-object", (object(), S), ArgumentTypeError, r"argument #0 \(%x\) of @main: expected a numpy array, got object"),
    ("dict", ({"x": X}, S), ArgumentTypeError, r"argument #0 \(%x\) of @main: expected a numpy array, got dict"),
    ("masked-array", (np.ma.masked_less(X, 3), S), ArgumentTypeError, r"argument #0 \(%x\) of @main: masked arrays are not supported"),
    ("failing-array-protocol", (FailingArray(), S), ArgumentTypeError, r"argument #0 \(%x\) of @main: converting it to a numpy array failed: no data here"),
    ("array-protocol-wrong-dtype", (ArrayLike(X.astype(np.float64)), S), ArgumentError, r"argument #0 \(%x\) of @main: expected dtype float32"),
    ("object-dtype", (X.astype(object), S), ArgumentError, r"argument #0 \(%x\) of @main: expected dtype float32 .*got object"),
]


@pytest.mark.parametrize(("arguments", "expected", "pattern"), [c[1:] for c in CALL_CASES], ids=[c[0] for c in CALL_CASES])
def test_call_refuses_cleanly(compiled: mlc.CompiledFunction, arguments: tuple[object, ...], expected: type[BaseException], pattern: str):
    with pytest.raises(BaseException) as raised:
        compiled(*arguments)
    assert_clean_exception(raised.value, expected, pattern)
    assert isinstance(raised.value, ValueError | TypeError), "Python convention: a ValueError or TypeError"


def test_keyword_arguments_are_refused_by_python(compiled: mlc.CompiledFunction):
    with pytest.raises(TypeError, match="unexpected keyword argument 'x'"):
        compiled(x=X, s=S)  # type: ignore[call-arg]


def misaligned(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts one byte past an aligned address."""
    raw = np.empty(array.nbytes + 64 + 1, dtype=np.uint8)
    offset = (-raw.ctypes.data) % 64 + 1
    view = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    view[...] = array
    return view


def read_only(array: np.ndarray) -> np.ndarray:
    copy = array.copy()
    copy.setflags(write=False)
    return copy


# (id, positional arguments): each must give numpy's X * S.
ACCEPTED_CALLS: list[tuple[str, tuple[object, ...]]] = [
    ("contiguous", (X, S)),
    ("transposed-view", (np.ascontiguousarray(X.T).T, S)),
    ("strided-slice", (np.repeat(X, 2, axis=1)[:, ::2], S)),
    ("fortran-order", (np.asfortranarray(X), S)),
    ("read-only", (read_only(X), read_only(S))),
    ("misaligned", (misaligned(X), S)),
    ("byte-swapped", (X.astype(">f4"), S.astype(">f4"))),
    ("numpy-scalar-for-rank-0", (X, np.float32(3))),
    ("array-protocol", (ArrayLike(X), ArrayLike(S))),
    ("dlpack-host-array", (np.from_dlpack(X), S)),
]


@pytest.mark.parametrize("arguments", [c[1] for c in ACCEPTED_CALLS], ids=[c[0] for c in ACCEPTED_CALLS])
def test_call_accepts(compiled: mlc.CompiledFunction, arguments: tuple[object, ...]):
    result = compiled(*arguments)
    assert result.dtype == np.float32 and result.shape == (4, 8) and result.flags.c_contiguous
    np.testing.assert_array_equal(result, X * S)


def test_inputs_are_never_written(compiled: mlc.CompiledFunction):
    x, s = X.copy(), S.copy()
    compiled(x, s)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(s, S)


# --------------------------------------------------------------------------------------------
# The same resource limits through the tools: no traceback, a message naming the value
# --------------------------------------------------------------------------------------------

TOOL_CASES = [
    ("mlc-opt-huge-tensor", "mlc-opt", HUGE_OPERAND, r"huge\.mlir:2:\d+: error: 'graph.relu' op operand #0 \(x\): tensor<100000x100000x100000xf32> has"),
    ("mlc-run-huge-intermediates", "mlc-run", HUGE_INTERMEDIATES, r"the arena of @main, which holds the intermediate buffers of kernels 'main_0_matmul' and .* \(memref<8000000000000xi8>, 7.28 TiB\)"),
]


@pytest.mark.parametrize(("tool", "text", "pattern"), [c[1:] for c in TOOL_CASES], ids=[c[0] for c in TOOL_CASES])
def test_tools_refuse_sizes_cleanly(tmp_path: Path, tool: str, text: str, pattern: str):
    assert_clean_failure(run_tool(tool, write(tmp_path / "huge.mlir", text)), pattern)
