"""Which of ONNX's node tests cover the ops of mlc's ONNX conformance target.

`CONFORMANCE_OPS` are the ops of issue 3 whose ONNX node tests (`onnx.backend.test`, kind "node")
mlc is measured against. `node_tests()` groups those tests by op: a test belongs to the op of its
one node, and an expanded test (`test_softmax_axis_0_expanded`, `..._expanded_ver18`: the op's
function body written out in other ops) to the op of the test it expands, so `test_castlike_*`
tests belong to CastLike even where their expansion is a single Cast. Names are ONNX's, without
the `_cpu` / `_cuda` suffix its test runner adds.

The pytest target (`test/python/frontend/test_onnx_backend.py`) and the table
(`bench/onnx_conformance.py`) both select tests here. Loading the node tests takes a few seconds:
onnx builds every test model and computes its expected outputs when its test cases are imported.
"""

from __future__ import annotations

import re
import warnings
from functools import cache
from typing import Any

CONFORMANCE_OPS: tuple[str, ...] = tuple(
    (
        "Add Sub Mul Div Pow Max Min Neg Abs Exp Log Sqrt Reciprocal Tanh Sigmoid Relu Gelu Erf Where "
        "Equal Less Greater Cast MatMul Gemm Transpose Reshape Flatten Squeeze Unsqueeze Expand Concat "
        "Slice Softmax LayerNormalization ReduceSum ReduceMean ReduceMax ReduceMin Conv MaxPool "
        "AveragePool GlobalAveragePool BatchNormalization Identity Constant Dropout"
    ).split()
)
"""The ops of issue 3, in its order."""

MODEL_OPS: tuple[str, ...] = tuple(
    "Softplus ReduceL2 Trilu Gather Einsum Split Clip LeakyRelu HardSigmoid HardSwish Range Sin Cos Resize".split()
)
"""The further ops of issue 15 (what exported transformers and CNNs use), measured apart."""

_EXPANDED = re.compile(r"_expanded(_ver\d+)?$")


def base_name(test_name: str) -> str:
    """The name of the test an expanded test expands (`test_x_expanded_ver18` -> `test_x`)."""
    return _EXPANDED.sub("", test_name)


@cache
def _all_node_tests() -> tuple[Any, ...]:
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        # onnx's test cases overflow casts on purpose while computing expected outputs, and use
        # numpy APIs that newer numpy deprecates: neither is ours to report.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return tuple(load_model_tests(kind="node"))


def node_tests(ops: tuple[str, ...] = CONFORMANCE_OPS) -> dict[str, list[Any]]:
    """op -> ONNX's node test cases (`onnx.backend.test.case.test_case.TestCase`) of that op, in
    ONNX's order; every op of `ops` is a key, with an empty list if it has no tests."""
    tests = _all_node_tests()
    op_of_test: dict[str, str] = {}
    for test in tests:
        node_ops = {node.op_type for node in test.model.graph.node}
        if not _EXPANDED.search(test.name) and len(node_ops) == 1:
            op_of_test[test.name] = next(iter(node_ops))
    grouped: dict[str, list[Any]] = {op: [] for op in ops}
    for test in tests:
        op = op_of_test.get(base_name(test.name))
        if op in grouped:
            grouped[op].append(test)
    return grouped


def op_by_test_name(ops: tuple[str, ...] = CONFORMANCE_OPS) -> dict[str, str]:
    """test name -> op, for the node tests of `ops`."""
    return {test.name: op for op, tests in node_tests(ops).items() for test in tests}
