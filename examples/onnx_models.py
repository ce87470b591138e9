"""Three small real networks built with ONNX's helper API, run by mlc and by onnxruntime.

    python examples/onnx_models.py [--device cpu|cuda] [--batch 2]

* `mlp`: MatMul + Add, GELU written as ONNX exporters write it (Erf), MatMul + Add, Softmax.
* `cnn`: a ResNet-style network: Conv-BatchNormalization-Relu, a residual block of two convolutions
  with an identity skip, MaxPool, a strided convolution, a depthwise convolution, global average
  pooling, Flatten, Gemm.
* `transformer`: an encoder block: token embeddings (Gather of int64 ids) plus positions, causal
  multi-head self-attention (Reshape/Transpose into heads, a Where mask from Trilu, Softmax),
  LayerNormalization, a GELU MLP, residual connections. Masked scores are set to -30 rather than
  -inf (exp(-30) is below 1e-13 at these scales): mlc computes either exactly as onnxruntime
  does, but the error analysis of `mlc.dialects.graph.error_bounds` derives no finite bound
  through a softmax over -inf or -1e9 entries, so the test could not compare those rows.

Weights are seeded random constants (initializers); `build(name, batch)` returns the model and
feeds. The script prints, per model, the largest difference between mlc and onnxruntime (when
installed) and between mlc and mlc's interpreter. `test/python/frontend/test_onnx_models.py`
checks the same models against derived error bounds.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

MODELS = ("mlp", "cnn", "transformer")
OPSET = 17


class _Graph:
    """Collects nodes and seeded initializers for one model."""

    def __init__(self, seed: int):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.initializers: list = []
        self.count = 0

    def weight(self, shape: tuple[int, ...], scale: float | None = None) -> str:
        fan_in = math.prod(shape[1:]) if len(shape) > 1 else shape[0]
        values = self.rng.standard_normal(shape).astype(np.float32) * (scale if scale is not None else 1 / math.sqrt(fan_in))
        return self.constant(values)

    def constant(self, values: np.ndarray) -> str:
        name = f"c{len(self.initializers)}"
        self.initializers.append(self.numpy_helper.from_array(np.asarray(values), name))
        return name

    def node(self, op: str, inputs: list[str], **attributes) -> str:
        self.count += 1
        output = f"{op.lower()}{self.count}"
        self.nodes.append(self.helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def gelu(self, x: str) -> str:
        scaled = self.node("Div", [x, self.constant(np.float32(math.sqrt(2)))])
        erf = self.node("Erf", [scaled])
        one_plus = self.node("Add", [erf, self.constant(np.float32(1))])
        return self.node("Mul", [self.node("Mul", [x, one_plus]), self.constant(np.float32(0.5))])

    def conv_bn_relu(self, x: str, channels: int, outputs: int, relu: bool = True, **attributes) -> str:
        group = attributes.get("group", 1)
        y = self.node("Conv", [x, self.weight((outputs, channels // group, 3, 3))], kernel_shape=[3, 3], **attributes)
        parameters = [
            self.constant(self.rng.uniform(0.5, 1.5, outputs).astype(np.float32)),
            self.constant(self.rng.uniform(-0.2, 0.2, outputs).astype(np.float32)),
            self.constant(self.rng.uniform(-0.2, 0.2, outputs).astype(np.float32)),
            self.constant(self.rng.uniform(0.5, 1.5, outputs).astype(np.float32)),
        ]
        y = self.node("BatchNormalization", [y, *parameters], epsilon=1e-5)
        return self.node("Relu", [y]) if relu else y

    def model(self, inputs: list, output: str, output_shape: list[int]):
        helper = self.helper
        graph = helper.make_graph(
            self.nodes,
            "model",
            inputs,
            [helper.make_tensor_value_info(output, 1, output_shape)],
            initializer=self.initializers,
        )
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)


def _mlp(batch: int, rng: np.random.Generator):
    g = _Graph(1)
    x = "x"
    h = g.node("Add", [g.node("MatMul", [x, g.weight((64, 128))]), g.weight((128,), 0.1)])
    h = g.gelu(h)
    logits = g.node("Add", [g.node("MatMul", [h, g.weight((128, 10))]), g.weight((10,), 0.1)])
    probabilities = g.node("Softmax", [logits], axis=-1)
    inputs = [g.helper.make_tensor_value_info("x", 1, [batch, 64])]
    return g.model(inputs, probabilities, [batch, 10]), {"x": rng.standard_normal((batch, 64)).astype(np.float32)}


def _cnn(batch: int, rng: np.random.Generator):
    g = _Graph(2)
    stem = g.conv_bn_relu("x", 3, 8, pads=[1, 1, 1, 1])
    inner = g.conv_bn_relu(stem, 8, 8, pads=[1, 1, 1, 1])
    inner = g.conv_bn_relu(inner, 8, 8, relu=False, pads=[1, 1, 1, 1])
    block = g.node("Relu", [g.node("Add", [inner, stem])])
    pooled = g.node("MaxPool", [block], kernel_shape=[2, 2], strides=[2, 2])
    down = g.conv_bn_relu(pooled, 8, 16, pads=[1, 1, 1, 1], strides=[2, 2])
    depthwise = g.conv_bn_relu(down, 16, 16, pads=[1, 1, 1, 1], group=16)
    features = g.node("Flatten", [g.node("GlobalAveragePool", [depthwise])])
    logits = g.node("Gemm", [features, g.weight((10, 16)), g.weight((10,), 0.1)], transB=1)
    inputs = [g.helper.make_tensor_value_info("x", 1, [batch, 3, 16, 16])]
    return g.model(inputs, logits, [batch, 10]), {"x": rng.standard_normal((batch, 3, 16, 16)).astype(np.float32)}


def _transformer(batch: int, rng: np.random.Generator):
    g = _Graph(3)
    vocabulary, length, width, heads = 50, 8, 32, 4
    head = width // heads
    embedded = g.node("Gather", [g.weight((vocabulary, width), 1.0), "ids"], axis=0)
    x = g.node("Add", [embedded, g.weight((length, width), 0.1)])

    def layer_norm(value: str) -> str:
        scale = g.constant(g.rng.uniform(0.8, 1.2, width).astype(np.float32))
        bias = g.constant(g.rng.uniform(-0.1, 0.1, width).astype(np.float32))
        return g.node("LayerNormalization", [value, scale, bias], axis=-1, epsilon=1e-5)

    def heads_of(value: str) -> str:
        split = g.node("Reshape", [value, g.constant(np.array([batch, length, heads, head], dtype=np.int64))])
        return g.node("Transpose", [split], perm=[0, 2, 1, 3])

    normalized = layer_norm(x)
    q, k, v = (heads_of(g.node("MatMul", [normalized, g.weight((width, width))])) for _ in range(3))
    scores = g.node("MatMul", [q, g.node("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = g.node("Div", [scores, g.constant(np.float32(math.sqrt(head)))])
    causal = g.node("Cast", [g.node("Trilu", [g.constant(np.ones((length, length), dtype=np.int64))], upper=0)], to=9)
    scores = g.node("Where", [causal, scores, g.constant(np.float32(-30.0))])
    attention = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
    merged = g.node("Reshape", [g.node("Transpose", [attention], perm=[0, 2, 1, 3]), g.constant(np.array([batch, length, width], dtype=np.int64))])
    x = g.node("Add", [x, g.node("MatMul", [merged, g.weight((width, width))])])
    hidden = g.gelu(g.node("Add", [g.node("MatMul", [layer_norm(x), g.weight((width, 4 * width))]), g.weight((4 * width,), 0.1)]))
    x = g.node("Add", [x, g.node("MatMul", [hidden, g.weight((4 * width, width))])])
    inputs = [g.helper.make_tensor_value_info("ids", 7, [batch, length])]
    ids = rng.integers(-vocabulary, vocabulary, (batch, length)).astype(np.int64)  # negative ids count from the end
    return g.model(inputs, x, [batch, length, width]), {"ids": ids}


def build(name: str, batch: int = 2, seed: int = 0):
    """The model `name` (one of MODELS) at `batch`, and seeded feeds for it."""
    rng = np.random.default_rng(seed)
    return {"mlp": _mlp, "cnn": _cnn, "transformer": _transformer}[name](batch, rng)


def main() -> None:
    import mlc
    from mlc.frontend.onnx import import_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"))
    parser.add_argument("--batch", type=int, default=2)
    args = parser.parse_args()
    for name in MODELS:
        model, feeds = build(name, args.batch)
        module = import_model(model)
        compiled = mlc.compile(import_model(model), device=args.device)
        result = compiled(*feeds.values())
        interpreted = mlc.interpret(module, *feeds.values())
        line = f"{name:12s} {list(result.shape)}: |mlc - interpreter| <= {np.max(np.abs(result - interpreted)):.3g}"
        try:
            import onnxruntime

            session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            reference = session.run(None, feeds)[0]
            line += f", |mlc - onnxruntime| <= {np.max(np.abs(result - reference)):.3g}"
        except ImportError:
            line += " (onnxruntime is not installed)"
        print(line)


if __name__ == "__main__":
    main()
