"""view-op-graph: the fusion plan as a picture, a Graphviz graph of each function (MLIR's spelling).

For every `func.func` with a body, a `digraph` (DOT text): one node per argument, per op and for
the returned values, and an edge from each value's producer to each of its users, labelled with
the value's tensor type. Each `graph.fusion` is a cluster (`subgraph cluster_N`) titled with its
name and kind, holding its body's ops; edges into and out of it connect the ops outside with the
ops inside that read or compute the values (the body's arguments and its `graph.yield` are not
drawn). Constants are small grey nodes. So after `graph-fuse` a user looks at the kernels the
lowering will build: one cluster per kernel, ops outside every cluster each a kernel of their own.

    mlc-opt model.mlir -p graph-fuse,view-op-graph 2> plan.dot && dot -Tsvg plan.dot > plan.svg
    mlc-opt model.mlir --view-op-graph=plan.dot -p graph-fuse      # the same, after the pipeline

The IR is not changed. Output goes to standard error (as MLIR's pass writes it), or to the file
named by the `output` option (`view-op-graph{output=plan.dot}`), the graphs of all functions one
after another. Limits: ops in other regions than a fusion's body (none at the graph level) are
drawn as one node; labels are cut at `max-label-length` characters.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from mlc.dialects.graph import ops as graph
from mlc.errors import MlcError


def _quote(text: str) -> str:
    """`text` as a DOT string: backslashes and quotes escaped, line breaks as DOT's backslash-n."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n") + '"'


def _type_label(type_: Attribute) -> str:
    text = str(type_)
    return text.removeprefix("tensor<").removesuffix(">") if text.startswith("tensor<") else text


@dataclass
class _FunctionGraph:
    """The DOT text of one function, built by walking its ops once."""

    function: func.FuncOp
    max_label_length: int
    lines: list[str] = field(default_factory=list)
    node_of_value: dict[SSAValue, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    count: int = 0

    def build(self) -> str:
        name = self.function.sym_name.data
        self.lines += [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']
        for index, argument in enumerate(self.function.body.block.args):
            node = self._node(f"%{argument.name_hint or f'arg{index}'}\n{_type_label(argument.type)}", "shape=ellipse")
            self.node_of_value[argument] = node
        for op in self.function.body.block.ops:
            self._op(op, indent="  ")
        self.lines += [f"  {source} -> {target}{label};" for source, target, label in self._resolved_edges()]
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def _node(self, label: str, style: str = "", indent: str = "  ") -> str:
        node = f"n{self.count}"
        self.count += 1
        if len(label) > self.max_label_length:
            label = label[: self.max_label_length - 1] + "…"
        self.lines.append(f"{indent}{node} [label={_quote(label)}{', ' + style if style else ''}];")
        return node

    def _op(self, op: Operation, indent: str) -> None:
        if isinstance(op, graph.FusionOp):
            self._fusion(op, indent)
            return
        if isinstance(op, func.ReturnOp):
            node = self._node("return", "shape=ellipse", indent)
        elif isinstance(op, graph.ConstantOp):
            node = self._node(f"constant\n{_type_label(op.result.type)}", "style=filled, fillcolor=lightgrey", indent)
        else:
            node = self._node(op.name.removeprefix("graph."), "", indent)
        self._inputs(op, node)
        for result in op.results:
            self.node_of_value[result] = node

    def _fusion(self, fusion: graph.FusionOp, indent: str) -> None:
        number = self.count
        title = f"{fusion.group_name.data if fusion.group_name is not None else 'fusion'} ({fusion.kind.data})"
        self.lines += [f"{indent}subgraph cluster_{number} {{", f"{indent}  label={_quote(title)};", f"{indent}  style=rounded;"]
        body = fusion.body.block
        for argument, operand in zip(body.args, fusion.operands):
            self.node_of_value[argument] = self.node_of_value[operand]  # an argument is its operand
        for inner in body.ops:
            if isinstance(inner, graph.YieldOp):
                for result, value in zip(fusion.results, inner.operands):
                    self.node_of_value[result] = self.node_of_value[value]
            else:
                self._op(inner, indent + "  ")
        self.lines.append(f"{indent}}}")

    def _inputs(self, op: Operation, node: str) -> None:
        for operand in op.operands:
            self.edges.append((self.node_of_value[operand], node, f" [label={_quote(_type_label(operand.type))}]"))

    def _resolved_edges(self) -> Iterator[tuple[str, str, str]]:
        seen: set[tuple[str, str, str]] = set()
        for edge in self.edges:
            if edge not in seen:
                seen.add(edge)
                yield edge


def op_graph(function: func.FuncOp, max_label_length: int = 60) -> str:
    """The DOT text of `function` (see the module docstring)."""
    return _FunctionGraph(function, max_label_length).build()


@dataclass(frozen=True)
class ViewOpGraph(ModulePass):
    """Write a Graphviz graph of each function, each graph.fusion a cluster (the IR is unchanged)."""

    name = "view-op-graph"

    output: str = ""
    """A file to write the graphs to; standard error when empty."""
    max_label_length: int = 60

    def __post_init__(self) -> None:
        if self.max_label_length < 4:
            raise ValueError(f"max-label-length must be at least 4, got {self.max_label_length}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]
        text = "".join(op_graph(function, self.max_label_length) for function in functions)
        if not self.output:
            sys.stderr.write(text)
            return
        try:
            with open(self.output, "w", encoding="utf-8") as stream:
                stream.write(text)
        except OSError as error:
            raise MlcError(f"view-op-graph: cannot write {self.output}: {error.strerror}") from None

