"""Compile a graph function with mlc from Python and call it on numpy arrays.

    python examples/run_from_python.py

Runs on the GPU when one is present, else on the CPU; checks the result against numpy and
prints the IR that mlc generated for the kernel.
"""

import numpy as np

import mlc

SOURCE = """
func.func @swish_bias(%x: tensor<1000x300xf32>, %b: tensor<300xf32>) -> tensor<1000x300xf32> {
  %0 = graph.add %x, %b : (tensor<1000x300xf32>, tensor<300xf32>) -> tensor<1000x300xf32>
  %1 = graph.sigmoid %0 : tensor<1000x300xf32>
  %2 = graph.mul %0, %1 : (tensor<1000x300xf32>, tensor<1000x300xf32>) -> tensor<1000x300xf32>
  func.return %2 : tensor<1000x300xf32>
}
"""


def main() -> None:
    swish_bias = mlc.compile(SOURCE)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 300), dtype=np.float32)
    b = rng.standard_normal(300, dtype=np.float32)
    y = swish_bias(x, b)
    z = x + b
    expected = z / (1 + np.exp(-z))
    print(f"ran {swish_bias.name} on {swish_bias.device}: max abs error vs numpy {np.abs(y - expected).max():.2e}")
    kernel_lines = [line for line in swish_bias.ir.splitlines() if "llvm.func @" in line]
    print("kernels:", *kernel_lines, sep="\n  ")


if __name__ == "__main__":
    main()
