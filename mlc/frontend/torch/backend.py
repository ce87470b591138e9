"""The `torch.compile` backend "mlc": each captured graph compiled by mlc, with PyTorch running
what mlc cannot compile.

For each FX graph dynamo hands over:

1. **Core ATen.** AOT autograd traces it with `decompositions.decompositions()` into a functional
   ATen graph (parameters become inputs, so they are arguments of the compiled functions, never
   copied into them). Backward graphs, when autograd needs them, run in PyTorch. Under `no_grad`
   `make_fx` traces it instead (`_traced_for_inference`: no AOT runtime wrapper around each call;
   AOT autograd again if that tracing fails).
   Work on the module's parameters and buffers alone (a linear layer's transposed weight) is
   hoisted out of the graph and done once in PyTorch, again only when one of them changes
   (`parameters.py`); an elementwise op after a view is moved before it, so that it can fuse with
   its producer, and a `bmm` on flattened batch dimensions becomes the batched `matmul` it was
   decomposed from, so that attention's two products and its softmax share one batch shape and
   fuse into one chain (`graph_rewrites.py`).
2. **Ask mlc.** For the inputs' device ('cpu' or 'cuda'), `SupportOracle` answers per node whether
   mlc compiles it (the node imported alone and lowered by `mlc.lower`). Each unsupported node is
   logged once (logger `mlc.frontend.torch`, level WARNING: `node 'permute' (aten.permute.default)
   runs in PyTorch: ...`).
   A view whose users all run in PyTorch runs there too, where it copies nothing
   (`graph_rewrites.layout_ops_for_pytorch`). On CUDA, PyTorch's fused SDPA kernels (the
   dispatcher's choice for `scaled_dot_product_attention`: cuDNN, flash, memory-efficient) are
   placed by `attention_choice.decide` (`attention="auto"`, the default): mlc imports one as
   attention (mask and `is_causal` included) unless its chain kernel's estimated extra time over
   PyTorch's kernel exceeds what a split around the node costs (its q, k, v and output moved in
   PyTorch's layouts, a second partition); short sequences go to mlc, so that the graph stays one
   partition, long ones stay in PyTorch. `explain` gives both estimates for each such node.
   `attention="pytorch"` or `"mlc"` decides for every graph.
3. **Partition.** `CapabilityBasedPartitioner` groups the supported nodes into maximal
   partitions; each becomes one function (`FxImporter`, parameters as arguments) compiled with
   `mlc.compile` for the device and called through `MlcPartition`: on the CPU through numpy views
   of the tensors (no copy for contiguous ones), on CUDA by handing PyTorch's tensors to
   `run_on_device` as inputs and outputs (no copies), on PyTorch's current stream, so that the
   launches are ordered with the PyTorch work around them, inside `torch.cuda.stream(...)` too.
   A partition that fails to compile as a whole (a fusion mlc cannot make one kernel) is logged
   and runs in PyTorch.
4. **Dynamic shapes.** When dynamo marks a size dynamic (symbolic sizes in the example inputs),
   `PerShapeGraph` compiles the graph again, steps 1 to 3, for each concrete shape it is called
   with, and keeps each compilation.

`explain(model, inputs)` compiles and runs the model with a backend that records every decision:
an `Explanation` lists each node with where it ran and why. It asks dynamo for static shapes
(`dynamic=False`): otherwise a model compiled after another one whose frame dynamo shares (every
`torch.nn` module's call goes through one wrapper frame) is traced with dynamic sizes, dynamo's
automatic response to a recompilation, and on CUDA PyTorch's fused `TransformerEncoderLayer`
inference op does not run on fake tensors then ("unsupported operator", PyTorch 2.11): the graph
broke before its first op and nothing reached mlc. This module is a client of the public
API (`mlc.compile`, `mlc.lower`), imported inside its functions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from mlc.frontend.torch.attention_choice import AttentionChoice, decide, device_has_wgmma, is_fused_attention
from mlc.frontend.torch.decompositions import decompositions
from mlc.frontend.torch.emitter import describe_node, fake_value, target_name
from mlc.frontend.torch.errors import TorchImportError
from mlc.frontend.torch.graph_rewrites import layout_ops_for_pytorch, sink_views_below_elementwise, unflatten_batched_matmuls
from mlc.frontend.torch.importer import FxImporter
from mlc.frontend.torch.parameters import ParameterWork, hoist_parameter_work, static_positions
from mlc.frontend.torch.support import SupportOracle

log = logging.getLogger("mlc.frontend.torch")

DEVICES = ("cpu", "cuda")


@dataclass
class NodeRecord:
    """Where one ATen node ran: 'mlc' or 'pytorch', and why not mlc."""

    graph: int
    node: str
    op: str
    ran_in: str
    reason: str | None = None
    note: str | None = None
    """For a node placed by a rule (the attention), why it ran where it did."""


@dataclass
class Explanation:
    """What the backend decided for every node of every graph it compiled."""

    records: list[NodeRecord] = field(default_factory=list)
    graphs: int = 0
    outputs: Any = None
    """What the compiled model returned on the inputs `explain` ran it on."""

    @property
    def in_mlc(self) -> list[NodeRecord]:
        return [r for r in self.records if r.ran_in == "mlc"]

    @property
    def in_pytorch(self) -> list[NodeRecord]:
        return [r for r in self.records if r.ran_in == "pytorch"]

    def __str__(self) -> str:
        lines = [f"{self.graphs} graph(s): {len(self.in_mlc)} node(s) ran in mlc, {len(self.in_pytorch)} in PyTorch"]
        for r in self.records:
            why = f"  ({r.reason or r.note})" if r.reason or r.note else ""
            lines.append(f"  graph {r.graph}  {r.ran_in:<8} {r.node:<24} {r.op}{why}")
        return "\n".join(lines)


class _AskMlc(OperatorSupport):
    def __init__(self, oracle: SupportOracle, reasons: dict[torch.fx.Node, str | None]):
        super().__init__()
        self.oracle, self.reasons = oracle, reasons

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        if node not in self.reasons:
            self.reasons[node] = self.oracle.reason(node)
        return self.reasons[node] is None


class MlcPartition(torch.nn.Module):
    """A partition compiled by mlc, called on torch tensors (see the module docstring)."""

    def __init__(self, compiled: Any, graph_module: torch.fx.GraphModule, device: str):
        super().__init__()
        self.compiled, self.device = compiled, device
        output = next(n for n in graph_module.graph.nodes if n.op == "output").args[0]
        self.returns_tuple = isinstance(output, tuple | list)
        results = output if self.returns_tuple else [output]
        self.result_specs = [(tuple(fake_value(r).shape), fake_value(r).dtype) for r in results]

    def __call__(self, *tensors: torch.Tensor) -> Any:
        # Module.__call__'s hook handling skipped (the fused graph calls this at every call, and
        # nobody hooks a partition): host time that bounds a small batch (issue 18).
        return self.forward(*tensors)

    def forward(self, *tensors: torch.Tensor) -> Any:
        # detach only what autograd tracks (parameters not given as `ParameterWork`'s aliases): a
        # new tensor object per input is host time
        inputs = [(t.detach() if t.requires_grad else t).contiguous() for t in tensors]
        if self.device == "cuda":
            device = inputs[0].device if inputs else torch.device("cuda")
            outputs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in self.result_specs]
            # PyTorch tensors in and out: the call runs on PyTorch's current stream.
            self.compiled.run_on_device(*inputs, outputs=outputs)
        else:
            results = self.compiled(*[t.numpy() for t in inputs])
            results = results if isinstance(results, tuple) else (results,)
            outputs = [torch.from_numpy(np.asarray(r)) for r in results]
        return tuple(outputs) if self.returns_tuple else outputs[0]


def graph_device(example_inputs: Sequence[Any]) -> str | None:
    """The one device of the graph's tensor inputs, when mlc compiles for it."""
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)}
    if len(devices) > 1:
        return None
    device = devices.pop() if devices else "cpu"
    return device if device in DEVICES else None


ATTENTION_CHOICES = ("pytorch", "mlc", "auto")
PYTORCH_ATTENTION_REASON = "PyTorch's fused attention kernel (the backend option attention='pytorch')"


def attention_placements(
    gm: torch.fx.GraphModule, device: str, attention: str, wgmma: bool | None = None
) -> dict[torch.fx.Node, AttentionChoice | None]:
    """Each fused attention node of `gm` -> its `attention="auto"` estimate, or None where the
    option decides alone (in PyTorch: 'pytorch' on CUDA; in mlc: 'mlc', or the CPU, whose fused
    op mlc always compiles). `wgmma`: whether the chain runs on warpgroup products (None: ask
    the current CUDA device)."""
    nodes = [node for node in gm.graph.nodes if is_fused_attention(node)]
    if device != "cuda" or attention != "auto":
        return dict.fromkeys(nodes)
    wgmma = device_has_wgmma() if wgmma is None else wgmma
    return {node: decide(node, wgmma) for node in nodes}


def _in_pytorch(choice: AttentionChoice | None, device: str, attention: str) -> bool:
    return choice.in_pytorch if choice is not None else device == "cuda" and attention == "pytorch"


def compile_graph(
    gm: torch.fx.GraphModule, device: str, explanation: Explanation | None = None, attention: str = "auto"
) -> torch.fx.GraphModule:
    """`gm` (an ATen graph with `meta["val"]`) with its mlc-compilable partitions compiled;
    `attention`: who runs PyTorch's fused SDPA kernels on CUDA (see the module docstring)."""
    import mlc

    graph_index = explanation.graphs if explanation is not None else 0
    if explanation is not None:
        explanation.graphs += 1
    sink_views_below_elementwise(gm)
    unflatten_batched_matmuls(gm)
    reasons: dict[torch.fx.Node, str | None] = {}
    oracle = SupportOracle(device, lambda module, target: mlc.lower(module, device=target))
    ask = _AskMlc(oracle, reasons)
    placements = attention_placements(gm, device, attention)
    for node in gm.graph.nodes:
        if node.op == "call_function":
            ask.is_node_supported({}, node)
    for node, choice in placements.items():
        if _in_pytorch(choice, device, attention):
            reasons[node] = choice.why() if choice is not None else PYTORCH_ATTENTION_REASON
    layout_ops_for_pytorch(gm, reasons)
    partitioner = CapabilityBasedPartitioner(gm, ask, allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    # fuse_partitions rewrites gm in place: read the nodes and their partitions first.
    nodes = [(node, reasons.get(node)) for node in gm.graph.nodes if node.op == "call_function"]
    partition_of = {node: f"fused_{index}" for index, partition in enumerate(partitions) for node in partition.nodes}
    fused = partitioner.fuse_partitions(partitions)
    failed: dict[str, str] = {}
    for name, submodule in list(fused.named_children()):
        if not name.startswith("fused_") or not isinstance(submodule, torch.fx.GraphModule):
            continue
        try:
            module = FxImporter(submodule, "arguments").import_module()
            compiled = mlc.compile(module, device=device)
        except (TorchImportError, mlc.CompileError) as error:
            failed[name] = str(error).strip().splitlines()[0]
            log.warning("mlc: partition %s runs in PyTorch: %s", name, failed[name])
            continue
        setattr(fused, name, MlcPartition(compiled, submodule, device))
    fused.recompile()
    for node, reason in nodes:
        if reason is not None:
            log.warning("mlc: %s runs in PyTorch: %s", describe_node(node), reason)
        elif partition_of.get(node) in failed:
            reason = f"its partition did not compile: {failed[partition_of[node]]}"
        if explanation is not None:
            where = "pytorch" if reason is not None else "mlc"
            choice = placements.get(node)
            note = choice.why() if choice is not None and where == "mlc" else None
            explanation.records.append(NodeRecord(graph_index, node.name, target_name(node), where, reason, note))
    return fused


def _has_symbolic_sizes(example_inputs: Sequence[Any]) -> bool:
    for x in example_inputs:
        if isinstance(x, torch.SymInt | torch.SymFloat):
            return True
        if isinstance(x, torch.Tensor) and any(not isinstance(s, int) for s in x.shape):
            return True
    return False


def _aot_compile(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    explanation: Explanation | None,
    attention: str = "auto",
) -> Callable[..., Any]:
    from torch._dynamo.backends.common import aot_autograd

    device = graph_device(example_inputs)
    if device is None:
        log.warning(
            "mlc: a graph with inputs on %s runs in PyTorch",
            sorted({str(getattr(x, "device", "")) for x in example_inputs}),
        )
        return gm.forward

    static = static_positions(gm, example_inputs)
    if not torch.is_grad_enabled():
        try:
            traced = _traced_for_inference(gm, example_inputs)
        except Exception as error:  # noqa: BLE001 - any tracing failure: AOT autograd traces instead
            log.warning("mlc: make_fx could not trace the graph (%s); tracing with AOT autograd", error)
        else:
            return _compile_forward(traced, static, device, explanation, attention)

    def forward_compiler(forward: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
        return _compile_forward(forward, static if _same_inputs(forward, example_inputs) else None, device, explanation, attention)

    def backward_in_pytorch(backward: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[..., Any]:
        from torch._functorch.aot_autograd import make_boxed_func

        return make_boxed_func(backward.forward)

    backend = aot_autograd(
        fw_compiler=forward_compiler,
        bw_compiler=backward_in_pytorch,
        decompositions=decompositions(),
    )
    return backend(gm, list(example_inputs))


def _traced_for_inference(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> torch.fx.GraphModule:
    """The graph traced to functional core ATen by `make_fx` on fake tensors, for `no_grad` calls.

    No AOT autograd: under `no_grad`, which dynamo's guards on the grad mode keep true for every
    call of the result, there is no backward to prepare, and the compiled function is then called
    without AOT's runtime wrapper (its handling of inputs and outputs around every call), host
    time that decides the speed of a small batch. The placeholders are the example inputs one for
    one, so parameter work is hoisted as from AOT's forward graph."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.func import functionalize
    from torch.fx.experimental.proxy_tensor import make_fx

    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    fakes = [fake_mode.from_tensor(x, static_shapes=True) if isinstance(x, torch.Tensor) else x for x in example_inputs]
    with fake_mode:
        return make_fx(functionalize(gm, remove="mutations"), decomposition_table=decompositions())(*fakes)


def _compile_forward(
    forward: torch.fx.GraphModule, static: set[int] | None, device: str, explanation: Explanation | None, attention: str
) -> Callable[..., Any]:
    """A forward ATen graph compiled by `compile_graph`, the work on its `static` inputs (None:
    their positions are unknown) hoisted out and done again only when one of them changes."""
    hoisted = hoist_parameter_work(forward, static) if static is not None else None
    compiled = compile_graph(forward, device, explanation, attention)
    if hoisted is None:
        return compiled
    if explanation is not None:
        reason = "computed from parameters and buffers alone: once, again when one changes"
        for node in hoisted.derived:
            explanation.records.append(NodeRecord(explanation.graphs - 1, node.name, target_name(node), "pytorch", reason))
    return ParameterWork(hoisted.prefix, compiled, sorted(static))  # type: ignore[arg-type]


def _same_inputs(forward: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """Whether AOT autograd's forward graph takes dynamo's inputs one for one (it may drop
    duplicates or add inputs), so that dynamo's positions of parameters hold in it."""
    placeholders = [node for node in forward.graph.nodes if node.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return False
    for node, value in zip(placeholders, example_inputs):
        fake = fake_value(node)
        if isinstance(value, torch.Tensor) != isinstance(fake, torch.Tensor):
            return False
        if isinstance(value, torch.Tensor) and (tuple(fake.shape) != tuple(value.shape) or fake.dtype != value.dtype):
            return False
    return True


class PerShapeGraph:
    """A graph with dynamic sizes, compiled again for each concrete shape it is called with."""

    def __init__(self, gm: torch.fx.GraphModule, explanation: Explanation | None, attention: str = "auto"):
        self.gm, self.explanation, self.attention = gm, explanation, attention
        self.compiled: dict[tuple[Any, ...], Callable[..., Any]] = {}

    def __call__(self, *args: Any) -> Any:
        key = tuple((tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor) else a for a in args)
        if key not in self.compiled:
            self.compiled[key] = _aot_compile(self.gm, args, self.explanation, self.attention)
        return self.compiled[key](*args)


def mlc_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    explanation: Explanation | None = None,
    attention: str = "auto",
) -> Callable[..., Any]:
    """The torch.compile backend (see the module docstring)."""
    if attention not in ATTENTION_CHOICES:
        import mlc

        raise mlc.ArgumentError(f"attention={attention!r}: expected one of {', '.join(map(repr, ATTENTION_CHOICES))}")
    if _has_symbolic_sizes(example_inputs):
        return PerShapeGraph(gm, explanation, attention)
    return _aot_compile(gm, example_inputs, explanation, attention)


def explain(model: Callable[..., Any], inputs: Sequence[Any], attention: str = "auto") -> Explanation:
    """Compiles `model` with the mlc backend, calls it on `inputs` and returns what ran where."""
    explanation = Explanation()

    def recording_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        return mlc_backend(gm, example_inputs, explanation=explanation, attention=attention)

    explanation.outputs = torch.compile(model, backend=recording_backend, dynamic=False)(*inputs)
    return explanation
