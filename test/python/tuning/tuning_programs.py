"""Tiny workloads for the tuner's tests (fast to compile and run)."""

from __future__ import annotations

from mlc.compiler import read_source as _read_source
from mlc.tuning.workload import Workload

ADD = """
func.func @main(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %s = graph.add %a, %b : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  func.return %s : tensor<1024xf32>
}
"""

MATMUL = """
func.func @main(%a: tensor<16x32xf32>, %b: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %p = graph.matmul %a, %b : (tensor<16x32xf32>, tensor<32x24xf32>) -> tensor<16x24xf32>
  %r = graph.relu %p : tensor<16x24xf32>
  func.return %r : tensor<16x24xf32>
}
"""


def workload(text: str, name: str = "test") -> Workload:
    module, _, _ = _read_source(text)
    return Workload(module, "main", name)
