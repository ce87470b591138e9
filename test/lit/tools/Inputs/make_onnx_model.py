"""Writes a small ONNX model for the mlc-import-onnx lit test: `make_onnx_model.py OUT KIND`.

KIND `mlp` (the default): Flatten -> MatMul -> Add -> Relu -> Softmax at opset 17, with a dynamic
batch dimension named `batch` when KIND is `dynamic`; `unsupported`: a Tan node named `tangent`;
`pooling`: a dilated 1-D AveragePool (opset 19), which mlc decomposes into strided slices.
"""

import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def main(path: str, kind: str) -> None:
    opset = 17
    if kind == "unsupported":
        nodes = [helper.make_node("Tan", ["x"], ["y"], name="tangent")]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])]
        initializers = []
    elif kind == "pooling":
        attributes = {"kernel_shape": [2], "dilations": [2], "pads": [1, 0]}
        nodes = [helper.make_node("AveragePool", ["x"], ["y"], name="pool", **attributes)]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5])]
        initializers = []
        opset = 19
    else:
        batch = "batch" if kind == "dynamic" else 2
        nodes = [
            helper.make_node("Flatten", ["x"], ["flat"], name="flatten"),
            helper.make_node("MatMul", ["flat", "w"], ["product"], name="fc"),
            helper.make_node("Add", ["product", "b"], ["biased"], name="bias"),
            helper.make_node("Relu", ["biased"], ["activated"], name="relu"),
            helper.make_node("Softmax", ["activated"], ["y"], name="softmax"),
        ]
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 2, 3])]
        initializers = [
            numpy_helper.from_array(np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4), "w"),
            numpy_helper.from_array(np.array([0.5, -0.5, 0.25, 0.0], dtype=np.float32), "b"),
        ]
    outputs = [helper.make_empty_tensor_value_info("y")]
    graph = helper.make_graph(nodes, "lit", inputs, outputs, initializer=initializers)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "mlp")
