"""Frontends: ways into the graph dialect.

* `mlc.frontend.graph_builder` — `GraphBuilder`, which appends graph ops to a block and works out
  their result types (the frontends' common base; no dependency beyond xDSL and numpy).
* `mlc.frontend.onnx` — `import_model(path_or_ModelProto)`: an ONNX model as a graph-dialect
  module (needs the optional `onnx` package: `pip install 'mlc[onnx]'`).

Frontends produce graph IR as directly as the source allows and leave optimisation (folding,
simplification, fusion) to the graph passes.
"""
