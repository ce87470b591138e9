"""The malformed-input corpus of mlc-opt, mlc-translate and mlc-run, and the behaviours it relies on.

Every row of the `*_CASES` tables is one input a tool must refuse cleanly (corpus_support: a
non-zero exit, no traceback, no hang, a message matching the row's pattern). Inputs are MLIR text
written here, or files stored under test/corpus/ (binary and non-UTF-8 data). In a pattern,
`{file}` stands for the input's path, so locations are checked exactly (`{file}:4:1: error: ...`).

The tests after the tables check what the corpus cannot: the paths that must succeed (`-` for
standard input, an empty module, a path without `.mlir`), internal compiler errors (a pass that
raises on valid IR: a short message naming the pass, the traceback only with MLC_DEBUG=1), and that
`func.func(...)` runs a pass on each function with the result of running it on the module.
"""

from __future__ import annotations

import os
import re
import subprocess
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlc.passes import FUNCTION_PASSES, build_pipeline
from mlc.transforms import all_passes

sys.path.insert(0, os.path.dirname(__file__))
from corpus_support import CORPUS, assert_clean_failure, assert_no_traceback, run_tool, tool_path  # noqa: E402


@dataclass(frozen=True)
class Case:
    """`tool` on an input (MLIR `text`, or a `stored` file of test/corpus) must fail with `pattern`."""

    id: str
    pattern: str
    text: str | None = None
    stored: str | None = None
    tool: str = "mlc-opt"
    arguments: tuple[str, ...] = field(default=())


def _function(body: str, signature: str = "(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32>") -> str:
    """A function @f whose body is `body` (lines indented by two) returning %0 of its result type."""
    result_type = signature.rsplit("-> ", 1)[1]
    lines = "".join(f"  {line}\n" for line in body.splitlines())
    return f"func.func @f{signature} {{\n{lines}  func.return %0 : {result_type}\n}}\n"


RELU = _function("%0 = graph.relu %a : tensor<4x8xf32>")
UNTERMINATED_STRING = _function(
    '%0 = "graph.cmp"(%a, %a) <{predicate = "gt}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>',
    "(%a: tensor<4x8xf32>) -> tensor<4x8xi1>",
)


def _nested(depth: int, open_text: str, close_text: str, inner: str = "") -> str:
    return open_text * depth + inner + close_text * depth


SYNTAX_CASES = [
    Case(
        "missing-brace-of-function",
        r"{file}:4:1: error: missing '}': the input ends inside a region\n.*\n.*\n"
        r"{file}:1:73: note: the region that is not closed begins here",
        text=RELU.rsplit("}", 1)[0],
    ),
    Case(
        "missing-brace-of-module",
        r"{file}:7:1: error: missing '}': .*\n(.*\n){2}{file}:1:16: note: the region that is not closed begins here",
        text="builtin.module {\n" + RELU + "\n",
    ),
    Case("unterminated-string", r"{file}:2:42: error: unterminated string literal", text=UNTERMINATED_STRING),
    Case(
        "unterminated-string-run",
        r"{file}:2:42: error: unterminated string literal",
        text=UNTERMINATED_STRING,
        tool="mlc-run",
    ),
    Case(
        "unterminated-string-translate",
        r"{file}:2:42: error: unterminated string literal",
        text=UNTERMINATED_STRING,
        tool="mlc-translate",
        arguments=("--mlir-to-ptx",),
    ),
    Case(
        "unterminated-string-first-token",
        r"{file}:1:1: error: unterminated string literal",
        text='"graph.relu(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32> // and a long line to backtrack over\n',
    ),
    Case(
        "invalid-escape-in-string",
        r"{file}:1:35: error: invalid escape sequence '\\q'",
        text='func.func @f() attributes {a = "ab\\qc"} {\n  func.return\n}\n',
    ),
    Case(
        "unknown-element-type",
        r"{file}:2:35: error: Expected shape type",
        text=_function("%0 = graph.relu %a : tensor<4x8xf33>"),
    ),
    Case(
        "unclosed-type",
        r"{file}:3:3: error: Expected '>'",
        text=_function("%0 = graph.relu %a : tensor<4x8xf32"),
    ),
    Case(
        "stray-character",
        r"{file}:2:40: error: Unexpected character: \$",
        text=_function("%0 = graph.relu %a : tensor<4x8xf32> $"),
    ),
    Case(
        "stray-control-character",
        r"{file}:2:40: error: unexpected character U\+0001",
        text=_function("%0 = graph.relu %a : tensor<4x8xf32> \x01"),
    ),
    Case("stray-closing-brace", r"{file}:5:1: error: unexpected '}': no region is open here", text=RELU + "}\n"),
    Case(
        "stray-token-in-region",
        r"{file}:3:3: error: expected an operation or '}' to end the region, got '42'",
        text=_function("%0 = graph.relu %a : tensor<4x8xf32>\n42"),
    ),
    Case(
        "truncated-in-an-op",
        r"{file}:2:23: error: type expected",
        text=RELU.split("tensor<4x8xf32>\n  func.return")[0].rsplit(" ", 1)[0],
    ),
    Case(
        "undefined-value",
        r"{file}:2:19: error: use of undefined value '%c'",
        text=_function("%0 = graph.relu %c : tensor<4x8xf32>"),
    ),
    Case(
        "value-of-another-function",
        r"{file}:6:15: error: use of undefined value '%a'",
        text=RELU + "func.func @g() -> tensor<4x8xf32> {\n  func.return %a : tensor<4x8xf32>\n}\n",
    ),
    Case(
        "value-defined-twice",
        r"{file}:3:3: error: SSA value %0 is already defined",
        text=_function("%0 = graph.relu %a : tensor<4x8xf32>\n%0 = graph.neg %a : tensor<4x8xf32>"),
    ),
    Case(
        "use-before-definition",
        r"{file}:2:3: error: 'graph.relu' op operand #0 does not dominate this use\n(.*\n){2}"
        r"{file}:3:3: note: operand defined here",
        text=_function("%0 = graph.relu %1 : tensor<4x8xf32>\n%1 = graph.neg %a : tensor<4x8xf32>"),
    ),
    Case(
        "use-before-definition-run",
        r"{file}:2:3: error: 'graph.relu' op operand #0 does not dominate this use",
        text=_function("%0 = graph.relu %1 : tensor<4x8xf32>\n%1 = graph.neg %a : tensor<4x8xf32>"),
        tool="mlc-run",
    ),
    Case(
        "unknown-op",
        r"{file}:2:16: error: Operation foo.bar is not registered",
        text=_function("%0 = foo.bar %a : tensor<4x8xf32>"),
    ),
    Case(
        "misspelled-op",
        r"Operation graph.rleu is not registered\n(.*\n){2}note: did you mean 'graph.relu'",
        text=_function("%0 = graph.rleu %a : tensor<4x8xf32>"),
    ),
    Case(
        "unknown-op-generic-form",
        r"{file}:2:20: error: Operation mystery.op is not registered",
        text=_function('%0 = "mystery.op"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>'),
    ),
    Case(
        "unknown-dialect-type",
        r"{file}:1:26: error: 'foo.bar' is not registered",
        text="func.func @f(%a: !foo.bar) {\n  func.return\n}\n",
    ),
    Case(
        "block-defined-twice",
        r"{file}:5:1: error: redefinition of block '\^bb1'\n(.*\n){2}{file}:3:1: note: the block is first defined here",
        text="func.func @f() {\n  cf.br ^bb1\n^bb1:\n  func.return\n^bb1:\n  func.return\n}\n",
    ),
    Case(
        "function-defined-twice",
        r"{file}:5:1: error: 'func.func' op redefines the symbol @f\n(.*\n){2}{file}:1:1: note: first defined here",
        text="func.func @f() {\n  func.return\n}\n\nfunc.func @f() {\n  func.return\n}\n",
    ),
    Case(
        "function-without-terminator",
        r"{file}:1:1: error: 'func.func' op .*empty block.*terminator",
        text="func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n}\n",
    ),
    Case(
        "modules-nested-too-deeply",
        r"{file}:\d+:\d+: error: the input is nested too deeply",
        text=_nested(300, "builtin.module {\n", "}\n"),
    ),
    Case(
        "attribute-nested-too-deeply",
        r"{file}:1:\d+: error: the input is nested too deeply",
        text="func.func @f() attributes {a = " + _nested(400, "[", "]") + "} {\n  func.return\n}\n",
    ),
    Case(
        "regions-nested-too-deeply-run",
        r"{file}:\d+:\d+: error: the input is nested too deeply",
        text="func.func @f() {\n" + _nested(300, "scf.execute_region {\n", "}\n") + "  func.return\n}\n",
        tool="mlc-run",
    ),
]

VERIFIER_CASES = [
    Case(
        "operands-do-not-broadcast",
        r"{file}:2:3: error: 'graph.sub' op operand #1 \(rhs\) of shape 3 does not broadcast with lhs of shape 4x8",
        text=_function(
            "%0 = graph.sub %a, %c : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>",
            "(%a: tensor<4x8xf32>, %c: tensor<3xf32>) -> tensor<4x8xf32>",
        ),
    ),
    Case(
        "result-type-not-the-broadcast",
        r"{file}:2:3: error: 'graph.add' op result type tensor<8xf32> does not match the broadcast",
        text=_function(
            "%0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>",
            "(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<8xf32>",
        ),
    ),
    Case(
        "element-types-differ",
        r"{file}:2:3: error: 'graph.mul' op operand #1 \(rhs\) has element type f16, but lhs has f32",
        text=_function(
            "%0 = graph.mul %a, %h : (tensor<4x8xf32>, tensor<8xf16>) -> tensor<4x8xf32>",
            "(%a: tensor<4x8xf32>, %h: tensor<8xf16>) -> tensor<4x8xf32>",
        ),
    ),
    Case(
        "unknown-predicate",
        r"{file}:2:3: error: 'graph.cmp' op unknown predicate 'LT'",
        text=_function(
            '%0 = "graph.cmp"(%a, %a) <{predicate = "LT"}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xi1>',
            "(%a: tensor<4x8xf32>) -> tensor<4x8xi1>",
        ),
    ),
    Case(
        "axis-out-of-range",
        r"{file}:2:3: error: 'graph.reduce_sum' op entry 2 of property 'axes' is out of range",
        text=_function(
            "%0 = graph.reduce_sum %a axes [2] keepdims false : tensor<4x8xf32> to tensor<4xf32>",
            "(%a: tensor<4x8xf32>) -> tensor<4xf32>",
        ),
    ),
    Case(
        "axis-beyond-64-bits",
        r"{file}:2:\d+: error: a value does not fit its type",
        text=_function(
            "%0 = graph.reduce_sum %a axes [99999999999999999999999] keepdims false : tensor<4x8xf32> to tensor<4xf32>",
            "(%a: tensor<4x8xf32>) -> tensor<4xf32>",
        ),
    ),
    Case(
        "duplicate-axes",
        r"{file}:2:3: error: 'graph.reduce_max' op property 'axes' = \[1, -1\] names an axis of operand #0 \(x\) "
        r"more than once",
        text=_function(
            "%0 = graph.reduce_max %a axes [1, -1] keepdims false : tensor<4x8xf32> to tensor<4xf32>",
            "(%a: tensor<4x8xf32>) -> tensor<4xf32>",
        ),
    ),
    Case(
        "not-a-permutation",
        r"{file}:2:3: error: 'graph.transpose' op property 'perm' = \[1, 1\] is not a permutation",
        text=_function(
            "%0 = graph.transpose %a perm [1, 1] : tensor<4x8xf32> to tensor<8x8xf32>",
            "(%a: tensor<4x8xf32>) -> tensor<8x8xf32>",
        ),
    ),
    Case(
        "dynamic-dimension",
        r"{file}:2:3: error: 'graph.relu' op operand #0 \(x\) has a dynamic shape \(tensor<\?x8xf32>\); mlc needs "
        r"static shapes",
        text=_function("%0 = graph.relu %a : tensor<?x8xf32>", "(%a: tensor<?x8xf32>) -> tensor<?x8xf32>"),
    ),
    Case(
        "dynamic-dimension-run",
        r"{file}:2:3: error: 'graph.relu' op operand #0 \(x\) has a dynamic shape",
        text=_function("%0 = graph.relu %a : tensor<?x8xf32>", "(%a: tensor<?x8xf32>) -> tensor<?x8xf32>"),
        tool="mlc-run",
    ),
    Case(
        "matmul-inner-dimensions-run",
        r"{file}:2:3: error: 'graph.matmul' op operand #1 \(b\) of shape 4x5 has 4 rows, but operand #0 \(a\) of "
        r"shape 4x8 has 8 columns",
        text=_function(
            "%0 = graph.matmul %a, %w : (tensor<4x8xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>",
            "(%a: tensor<4x8xf32>, %w: tensor<4x5xf32>) -> tensor<4x5xf32>",
        ),
        tool="mlc-run",
    ),
    Case(
        "reshape-element-count-translate",
        r"{file}:2:3: error: 'graph.reshape' op operand #0 \(x\) has 32 elements but the result tensor<5x2xf32> has 10",
        text=_function(
            "%0 = graph.reshape %a : tensor<4x8xf32> to tensor<5x2xf32>",
            "(%a: tensor<4x8xf32>) -> tensor<5x2xf32>",
        ),
        tool="mlc-translate",
        arguments=("--mlir-to-llvmir",),
    ),
    Case(
        "return-type-differs",
        r"{file}:2:3: error: 'func.return' op Expected arguments to have the same types as the function output types",
        text="func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return\n}\n",
    ),
    Case(
        "wrong-operand-count",
        r"{file}:2:3: error: 'graph.add' op Expected 2 operands, but got 1",
        text=_function('%0 = "graph.add"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>'),
    ),
]

CONSTANT_CASES = [
    Case(
        "hex-wider-than-f16",
        r"{file}:2:30: error: hexadecimal literal 0x7FC00000 does not fit the 16 bits of f16",
        text=_function("%0 = graph.constant dense<[0x7FC00000, 0x7C00]> : tensor<2xf16>", "() -> tensor<2xf16>"),
    ),
    Case(
        "hex-wider-than-bf16-splat",
        r"{file}:2:29: error: hexadecimal literal 0x7F800000 does not fit the 16 bits of bf16",
        text=_function("%0 = graph.constant dense<0x7F800000> : tensor<2xbf16>", "() -> tensor<2xbf16>"),
    ),
    Case(
        "hex-float-with-minus",
        r"{file}:2:42: error: a hexadecimal float literal cannot have a leading minus",
        text=_function("%0 = graph.constant dense<[0x7FC00000, -0x7F800000]> : tensor<2xf32>", "() -> tensor<2xf32>"),
    ),
    Case(
        "float-beyond-f16",
        r"{file}:2:23: error: a value of the dense literal does not fit f16",
        text=_function("%0 = graph.constant dense<70000.0> : tensor<2xf16>", "() -> tensor<2xf16>"),
    ),
    Case(
        "integer-beyond-i1",
        r"{file}:2:23: error: a value of the dense literal does not fit i1",
        text=_function("%0 = graph.constant dense<2> : tensor<2xi1>", "() -> tensor<2xi1>"),
    ),
    Case(
        "dense-literal-shape",
        r"{file}:2:23: error: Shape mismatch in dense literal. Expected \[3\] shape from the type, but got \[2\] shape",
        text=_function("%0 = graph.constant dense<[1.0, 2.0]> : tensor<3xf32>", "() -> tensor<3xf32>"),
    ),
    Case(
        "not-a-dense-literal",
        r"{file}:2:23: error: expected a dense elements attribute such as dense<1.0> : tensor<4xf32>",
        text=_function("%0 = graph.constant 1.0 : f32", "() -> tensor<f32>"),
    ),
]

FILE_CASES = [
    Case(
        "binary-file",
        r"{file}:1:8: error: a NUL byte: this is a binary file, not MLIR text",
        stored="bytes/elf-header.bin",
    ),
    Case(
        "binary-file-translate",
        r"{file}:1:\d+: error: .*binary file",
        stored="bytes/gzip.bin",
        tool="mlc-translate",
        arguments=("--mlir-to-ptx",),
    ),
    Case("binary-file-run", r"{file}:1:8: error: a NUL byte", stored="bytes/elf-header.bin", tool="mlc-run"),
    Case("latin-1-text", r"{file}:1:46: error: invalid UTF-8 \(byte 0xe9\)", stored="mlir/latin1-comment.mlir"),
    Case(
        "latin-1-text-translate",
        r"{file}:1:46: error: invalid UTF-8",
        stored="mlir/latin1-comment.mlir",
        tool="mlc-translate",
        arguments=("--mlir-to-llvmir",),
    ),
    Case("utf-16-text", r"{file}: error: this is UTF-16 text", stored="mlir/utf16.mlir"),
    Case(
        "truncated-utf-8",
        r"{file}:5:\d+: error: invalid UTF-8 \(byte 0xe2\)",
        stored="mlir/truncated-utf8.mlir",
        tool="mlc-run",
    ),
    Case("empty-file-run", r"mlc-run: error: .*input.mlir is empty: there is no function to compile", text="", tool="mlc-run"),
    Case(
        "empty-file-translate",
        r"mlc-translate: error: nothing to translate: the module has no llvm.func",
        text="",
        tool="mlc-translate",
        arguments=("--mlir-to-ptx",),
    ),
]

PIPELINE_CASES = [
    Case(
        "unknown-pass",
        r"mlc-opt: error: unknown pass 'convert-graph-to-tiles' \(did you mean 'convert-graph-to-tile'",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-graph-to-tiles)",),
    ),
    Case(
        "unknown-option",
        r"mlc-opt: error: pass 'convert-graph-to-tile' has no option 'num-wraps' \(did you mean 'num-warps' or 'reduction-warps'\?\)",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-graph-to-tile{num-wraps=8})",),
    ),
    Case(
        "option-value-of-wrong-type",
        r"mlc-opt: error: option 'num-warps' of pass 'convert-graph-to-tile' expects a value of type int, got 'many'",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-graph-to-tile{num-warps=many})",),
    ),
    Case(
        "option-list-of-wrong-type",
        r"mlc-opt: error: option 'matmul-tile' of pass 'convert-graph-to-tile' expects a comma-separated list of "
        r"int values, got 'big'",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-graph-to-tile{matmul-tile=big})",),
    ),
    Case(
        "option-without-value",
        r"mlc-opt: error: cannot parse 'convert-graph-to-tile\{num-warps=\}' at column 33",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-graph-to-tile{num-warps=})",),
    ),
    Case(
        "option-value-rejected-by-pass",
        r"mlc-opt: error: pass 'convert-math-to-llvm': library must be one of",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-math-to-llvm{library=cuda})",),
    ),
    Case(
        "unclosed-parenthesis",
        r"mlc-opt: error: missing '\)' for anchor 'builtin.module' in 'builtin.module\(func.func\(cse\)'",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(func.func(cse)",),
    ),
    Case(
        "extra-parenthesis",
        r"mlc-opt: error: unexpected '\)' at column 20",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(cse))",),
    ),
    Case(
        "unclosed-options",
        r"mlc-opt: error: missing '}' for the options of 'convert-graph-to-tile'",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(convert-graph-to-tile{num-warps=8)",),
    ),
    Case(
        "empty-pass-name",
        r"mlc-opt: error: expected a pass name at column 20",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(cse,)",),
    ),
    Case(
        "function-anchor-at-top-level",
        r"mlc-opt: error: 'func.func\(...\)' cannot run on the input, which is a 'builtin.module'",
        text=RELU,
        arguments=("--pass-pipeline=func.func(cse)",),
    ),
    Case(
        "module-pass-in-function-anchor",
        r"mlc-opt: error: pass 'mlc-lower-to-cpu' runs on the whole module and cannot be nested in 'func.func'",
        text=RELU,
        arguments=("--pass-pipeline=builtin.module(func.func(mlc-lower-to-cpu))",),
    ),
    Case(
        "module-pass-in-top-level-function-anchor",
        r"mlc-opt: error: 'func.func\(...\)' cannot run on the input",
        text=RELU,
        arguments=("--pass-pipeline=func.func(mlc-lower-to-cpu)",),
    ),
    Case(
        "pass-without-anchor",
        r"mlc-opt: error: pass 'cse' is not nested in an anchor; the input is a module, so write "
        r"'builtin.module\(cse\)'",
        text=RELU,
        arguments=("--pass-pipeline=cse",),
    ),
    Case(
        "misspelled-anchor",
        r"mlc-opt: error: unknown anchor 'builtin.modul' \(did you mean 'builtin.module'\?\)",
        text=RELU,
        arguments=("--pass-pipeline=builtin.modul(cse)",),
    ),
    Case(
        "xdsl-spelling-with-anchor",
        r"mlc-opt: error: cannot parse 'func.func\(cse\)' at column 5: Unknown token",
        text=RELU,
        arguments=("-p", "func.func(cse)"),
    ),
    Case(
        "bad-pipeline-run",
        r"mlc-run: error: 'func.func\(...\)' cannot run on the input",
        text=RELU,
        tool="mlc-run",
        arguments=("--pass-pipeline=func.func(cse)",),
    ),
]

TRANSLATE_CASES = [
    Case(
        "graph-level-to-ptx",
        r"mlc-translate: error: nothing to translate: the module has no llvm.func \(its ops are at the graph level\); "
        r"lower it first, e.g. mlc-opt FILE --pass-pipeline='builtin.module\(mlc-lower-to-gpu\)' \| mlc-translate "
        r"--mlir-to-ptx",
        text=RELU,
        tool="mlc-translate",
        arguments=("--mlir-to-ptx",),
    ),
    Case(
        "graph-level-to-cpu-llvm-ir",
        r"mlc-translate: error: nothing to translate: .*graph level.*mlc-lower-to-cpu",
        text=RELU,
        tool="mlc-translate",
        arguments=("--mlir-to-llvmir", "--target=cpu"),
    ),
    Case(
        "graph-level-to-ptx-opt",
        r"mlc-opt: error: nothing to translate: .*graph level",
        text=RELU,
        arguments=("-t", "ptx"),
    ),
    Case(
        "unknown-output-target",
        r"mlc-opt: error: unknown output target 'ptxx' \(did you mean 'ptx'\?\)",
        text=RELU,
        arguments=("-t", "ptxx"),
    ),
]

RUN_CASES = [
    Case(
        "input-beyond-memory",
        r"mlc-run: error: @f: argument #0 \(%a\) of @f \(memref<1000000x1000000xf32>, 3.64 TiB\) does not fit "
        r"in memory",
        text=_function(
            "%0 = graph.relu %a : tensor<1000000x1000000xf32>",
            "(%a: tensor<1000000x1000000xf32>) -> tensor<1000000x1000000xf32>",
        ),
        tool="mlc-run",
    ),
    Case(
        "missing-entry",
        r"mlc-run: error: no function @g in the module \(functions: @f\)",
        text=RELU,
        tool="mlc-run",
        arguments=("--entry", "g"),
    ),
    Case(
        "only-a-declaration",
        r"mlc-run: error: the module has no function to run",
        text="func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32>\n",
        tool="mlc-run",
    ),
]

ALL_CASES = SYNTAX_CASES + VERIFIER_CASES + CONSTANT_CASES + FILE_CASES + PIPELINE_CASES + TRANSLATE_CASES + RUN_CASES


def _input_path(case: Case, directory: Path) -> Path:
    if case.stored is not None:
        return CORPUS / case.stored
    path = directory / "input.mlir"
    path.write_text(case.text or "", encoding="utf-8")
    return path


@pytest.mark.parametrize("case", ALL_CASES, ids=[case.id for case in ALL_CASES])
def test_malformed_input_fails_cleanly(case: Case, tmp_path: Path) -> None:
    path = _input_path(case, tmp_path)
    result = run_tool(case.tool, path, *case.arguments)
    assert_clean_failure(result, case.pattern.replace("{file}", re.escape(str(path))))


def test_option_value_out_of_range_is_a_pipeline_error(tmp_path: Path) -> None:
    source = tmp_path / "input.mlir"
    source.write_text(RELU, encoding="utf-8")
    result = run_tool("mlc-opt", source, "--pass-pipeline=builtin.module(convert-graph-to-tile{num-warps=0})")
    assert_clean_failure(result, r"mlc-opt: error: pass 'convert-graph-to-tile': .*num-warps")


def test_corpus_holds_enough_cases() -> None:
    ids = [case.id for case in ALL_CASES]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    assert len(ids) >= 40


STDIN_CASES = [
    ("mlc-opt", (), r"<stdin>:2:42: error: unterminated string literal"),
    ("mlc-translate", ("--mlir-to-ptx",), r"<stdin>:2:42: error: unterminated string literal"),
    ("mlc-run", (), r"<stdin>:2:42: error: unterminated string literal"),
]


@pytest.mark.parametrize("tool, arguments, pattern", STDIN_CASES, ids=[tool for tool, _, _ in STDIN_CASES])
def test_dash_reads_standard_input(tool: str, arguments: tuple[str, ...], pattern: str) -> None:
    result = run_tool(tool, "-", *arguments, stdin=UNTERMINATED_STRING.encode())
    assert_clean_failure(result, pattern)


# --- Unwritable outputs -------------------------------------------------------------------------

LLVM_KERNEL = "llvm.func @k() attributes {mlc.kernel} {\n  llvm.return\n}\n"
"""A module mlc-translate can translate, so that only writing its result can fail."""

OUTPUT_TOOLS = [("mlc-opt", RELU, ()), ("mlc-translate", LLVM_KERNEL, ("--mlir-to-llvmir", "--target=cpu"))]


@pytest.mark.parametrize("tool, text, arguments", OUTPUT_TOOLS, ids=[tool for tool, _, _ in OUTPUT_TOOLS])
@pytest.mark.parametrize(
    "where, pattern",
    [
        ("missing-directory", r"cannot write {out}: the directory {directory} does not exist"),
        ("onto-a-directory", r"cannot write {out}: Is a directory"),
    ],
    ids=["missing-directory", "onto-a-directory"],
)
def test_unwritable_output_fails_cleanly(
    tool: str, text: str, arguments: tuple[str, ...], where: str, pattern: str, tmp_path: Path
) -> None:
    source = tmp_path / "input.mlir"
    source.write_text(text, encoding="utf-8")
    output = tmp_path / "no-such-directory" / "out.txt" if where == "missing-directory" else tmp_path
    result = run_tool(tool, source, *arguments, "-o", output)
    expected = pattern.replace("{out}", re.escape(str(output))).replace("{directory}", re.escape(str(output.parent)))
    assert_clean_failure(result, f"{tool}: error: {expected}")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write to a read-only file")
def test_read_only_output_fails_cleanly(tmp_path: Path) -> None:
    source, output = tmp_path / "input.mlir", tmp_path / "read-only.mlir"
    source.write_text(RELU, encoding="utf-8")
    output.write_text("", encoding="utf-8")
    output.chmod(stat.S_IRUSR)
    result = run_tool("mlc-opt", source, "-o", output)
    assert_clean_failure(result, rf"mlc-opt: error: cannot write {re.escape(str(output))}: Permission denied")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device that is always full)")
def test_full_device_output_fails_cleanly(tmp_path: Path) -> None:
    source = tmp_path / "input.mlir"
    source.write_text(RELU, encoding="utf-8")
    result = run_tool("mlc-opt", source, "-o", "/dev/full")
    assert_clean_failure(result, r"mlc-opt: error: cannot write /dev/full: No space left on device")


@pytest.mark.parametrize("tool", ["mlc-opt", "mlc-translate", "mlc-run"])
def test_directory_and_missing_file_as_input_fail_cleanly(tool: str, tmp_path: Path) -> None:
    arguments = ("--mlir-to-ptx",) if tool == "mlc-translate" else ()
    directory_message = rf"{tool}: error: cannot read {re.escape(str(tmp_path))}: Is a directory"
    assert_clean_failure(run_tool(tool, tmp_path, *arguments), directory_message)
    missing = tmp_path / "missing.mlir"
    missing_message = rf"{tool}: error: cannot read {re.escape(str(missing))}: No such file or directory"
    assert_clean_failure(run_tool(tool, missing, *arguments), missing_message)


# --- What must succeed ----------------------------------------------------------------------------


def test_dash_and_no_file_read_standard_input_and_dash_output_is_standard_output() -> None:
    for arguments in (("-",), (), ("-", "-o", "-")):
        result = run_tool("mlc-opt", *arguments, stdin=RELU.encode())
        assert_no_traceback(result.stdout + result.stderr)
        assert result.returncode == 0 and "graph.relu %a : tensor<4x8xf32>" in result.stdout, result.stderr


def test_a_reader_that_stops_early_is_not_an_error(tmp_path: Path) -> None:
    # `mlc-opt --split-input-file big.mlir | head -1`: the pipe closes while chunks are printed,
    # more of them than a pipe holds, so that a later chunk's write fails.
    body = "\n".join(f"%{index + 1} = graph.relu %{index} : tensor<4x8xf32>" for index in range(10))
    chunk = f"func.func @f(%0: tensor<4x8xf32>) -> tensor<4x8xf32> {{\n{body}\nfunc.return %10 : tensor<4x8xf32>\n}}"
    source = tmp_path / "chunks.mlir"
    source.write_text("\n// -----\n".join([chunk] * 400), encoding="utf-8")
    environment = os.environ | {"MLC_DEVICE": "cpu"}
    process = subprocess.Popen(
        [tool_path("mlc-opt"), "--split-input-file", str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()
    process.stdout.close()  # as `head -1` does
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 0, error
    assert "internal compiler error" not in error and "Traceback" not in error, error


def test_run_reads_a_path_without_mlir_suffix_as_a_file(tmp_path: Path) -> None:
    # mlc.compile guesses between text and a path from the string; mlc-run must not guess.
    source = tmp_path / "program.txt"
    source.write_text(RELU, encoding="utf-8")
    result = run_tool("mlc-run", source, "--device", "cpu")
    assert_no_traceback(result.stdout + result.stderr)
    assert result.returncode == 0 and "@f on cpu" in result.stdout, result.stderr


def test_empty_input_is_an_empty_module(tmp_path: Path) -> None:
    # As in MLIR: whitespace and comments are an empty module, not an error.
    source = tmp_path / "empty.mlir"
    source.write_text("// nothing but a comment\n", encoding="utf-8")
    result = run_tool("mlc-opt", source)
    assert result.returncode == 0 and result.stdout.split() == ["builtin.module", "{", "}"], result.stderr


# --- Internal compiler errors ---------------------------------------------------------------------


@dataclass(frozen=True)
class CrashingPass(ModulePass):
    """A pass with a bug: it raises on any input."""

    name = "test-crash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise ValueError("an invented bug")


def _passes_with_crash() -> dict:
    return all_passes() | {"test-crash": lambda: CrashingPass}


@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "MLC_DEBUG"])
def test_exception_in_a_pass_is_an_internal_compiler_error_naming_it(
    debug: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from mlc.tools import mlc_opt

    monkeypatch.setattr(mlc_opt, "all_passes", _passes_with_crash)
    monkeypatch.setenv("MLC_DEBUG", "1" if debug else "")
    source = tmp_path / "input.mlir"
    source.write_text(RELU, encoding="utf-8")
    assert mlc_opt.main([str(source), "--pass-pipeline=builtin.module(cse,test-crash)"]) == 1
    error = capsys.readouterr().err
    assert f"{source}: internal compiler error in pass 'test-crash': ValueError: an invented bug" in error
    assert "this is a bug in mlc, not in the input; please report it" in error
    assert ("Traceback (most recent call last)" in error) == debug
    assert ("raise ValueError" in error) == debug  # the traceback is the pass's, not the wrapper's


def test_exception_in_a_pass_through_mlc_run_names_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import mlc.transforms
    from mlc.tools import mlc_run

    monkeypatch.setattr(mlc.transforms, "all_passes", _passes_with_crash)
    monkeypatch.delenv("MLC_DEBUG", raising=False)
    source = tmp_path / "input.mlir"
    source.write_text(RELU, encoding="utf-8")
    assert mlc_run.main([str(source), "--device", "cpu", "--pass-pipeline=builtin.module(test-crash)"]) == 1
    error = capsys.readouterr().err
    assert "mlc-run: internal compiler error in pass 'test-crash': ValueError: an invented bug" in error
    assert_no_traceback(error)


# --- Pipelines ------------------------------------------------------------------------------------

TWO_FUNCTIONS = """
func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %c = graph.constant dense<2.0> : tensor<8xf32>
  %d = graph.constant dense<3.0> : tensor<8xf32>
  %e = graph.add %c, %d : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %0 = graph.add %a, %e : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.add %a, %e : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = graph.softmax %0 axis 1 : tensor<4x8xf32>
  %3 = graph.neg %2 : tensor<4x8xf32>
  %4 = graph.neg %3 : tensor<4x8xf32>
  %5 = graph.mul %4, %1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %unused = graph.relu %a : tensor<4x8xf32>
  func.return %5 : tensor<4x8xf32>
}
func.func @g(%a: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.exp %a : tensor<8xf32>
  %1 = graph.exp %a : tensor<8xf32>
  %2 = graph.reduce_mean %1 axes [0] keepdims true : tensor<8xf32> to tensor<1xf32>
  %3 = graph.sub %0, %2 : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  func.return %3 : tensor<8xf32>
}
"""


def _after(pipeline: str) -> str:
    from mlc.diagnostics import parse_module, run_pass
    from mlc.dialects import make_context

    context = make_context()
    module, _ = parse_module(TWO_FUNCTIONS, context)
    for module_pass in build_pipeline(pipeline, all_passes(), mlir_syntax=True):
        run_pass(module_pass, context, module)
    module.verify()
    return str(module)


@pytest.mark.parametrize("name", sorted(FUNCTION_PASSES))
def test_function_anchor_runs_a_pass_as_on_the_module(name: str) -> None:
    assert _after(f"builtin.module(func.func({name}))") == _after(f"builtin.module({name})")
