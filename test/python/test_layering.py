"""The layering of mlc's packages, checked on the source of every module under `mlc/`.

Imports run one way (DESIGN.md): `tools` -> the API (`mlc/__init__.py`, `mlc/compiler.py`) ->
`frontend`, `transforms`, `backend`, `runtime`, `interpreter` -> `dialects`. Every import counts:
at the top of a module, inside a function (a lazy import is still a dependency), under
`if TYPE_CHECKING`, and `importlib.import_module` of a literal name. An import names the module
it loads: `from mlc.runtime import cuda` imports `mlc.runtime.cuda`, `from mlc.runtime import
is_available` imports the package `mlc.runtime` itself, and `import mlc` or `from mlc import
compile` imports the API. The rules:

1. A dialect knows nothing of the passes over it, code generation or execution: the modules of
   `mlc.dialects` import only `mlc.dialects` and `mlc.errors`. (The graph dialect's numpy
   semantics, `graph/interpret.py`, are part of it; the semantics of the tile, loop and mlc_gpu
   ops run on the interpreter's engine and live in `mlc.interpreter`, which imports the dialects
   and is imported by none of them.)
2. The stages below the API do not reach each other or up: `mlc.interpreter`, `mlc.backend`
   (which produces artifacts), `mlc.runtime` (which loads and runs them, and does not compile) and
   `mlc.frontend` (which produces graph IR) import none of the passes (`mlc.transforms`,
   `mlc.passes`), the API (`mlc`, `mlc.compiler`) or one another. The exceptions: the ONNX
   backend adapter, `mlc.frontend.onnx.backend`, is a client of the public API (`mlc.compile`,
   `mlc.interpret`, ...) and imports `mlc` inside its functions; never `mlc.compiler`, never at
   the top of the module. So is the torch.compile backend, `mlc.frontend.torch.backend`.
3. No import cycle among the modules of `mlc.runtime`, of `mlc.backend` or of `mlc.interpreter`
   (a package's `__init__.py` is one of its modules): what two modules share lives in the lower
   one, and private names do not cross modules.
4. Nothing imports the command-line faces: no module outside `mlc.tools` imports it.

5. Within `mlc.transforms`: a pass never imports another pass (what passes share lives in
   `mlc.transforms.analysis` and `mlc.transforms.lowering`, which import no pass either; only the
   registry and the named pipelines name passes), and no pass file is longer than
   `MAX_PASS_LINES`, the median at most `MAX_MEDIAN_PASS_LINES` (a pass a newcomer can read).
6. The autotuner sits beside the API, above passes and runtime: only the API (inside its
   functions: `import mlc` never loads it), the tools and the tuner itself import `mlc.tuning`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import mlc

PACKAGE_ROOT = Path(mlc.__file__).parent

API = ("mlc", "mlc.compiler")
"""The public API's modules: `mlc/__init__.py` and `mlc/compiler.py`."""

PASSES = ("mlc.transforms", "mlc.passes")

STAGES = ("mlc.interpreter", "mlc.backend", "mlc.runtime", "mlc.frontend")
"""The packages of rule 2, each of which may import none of the others."""

API_CLIENT = "mlc.frontend.onnx.backend"
"""A frontend module that may import the API, inside its functions (rule 2)."""

API_CLIENTS = (API_CLIENT, "mlc.frontend.torch.backend")
"""The frontend modules that may: the ONNX backend adapter and the torch.compile backend."""

ACYCLIC = ("mlc.runtime", "mlc.backend", "mlc.interpreter")
"""The packages of rule 3."""

MAX_PASS_LINES = 400
MAX_MEDIAN_PASS_LINES = 250
REGISTRY = ("mlc.transforms", "mlc.transforms.pipelines")
"""The modules that name passes (rule 5): the registry and the named pipelines."""


@dataclass(frozen=True)
class Source:
    text: str
    path: str
    is_package: bool
    """An `__init__.py`: relative imports are relative to the module itself."""


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    """The module loaded (`from M import n`: M.n when that is a module, else M)."""
    path: str
    line: int
    lazy: bool
    """Inside a function."""

    def __str__(self) -> str:
        where = " (inside a function)" if self.lazy else ""
        return f"{self.path}:{self.line}: {self.importer} imports {self.target}{where}"


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def is_api(module: str) -> bool:
    return module == "mlc" or within(module, "mlc.compiler")


def tree_sources(root: Path = PACKAGE_ROOT) -> dict[str, Source]:
    """Every module of the `mlc` package under `root`, by dotted name."""
    sources = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        shown = path.relative_to(root.parent).as_posix()
        sources[name] = Source(path.read_text(encoding="utf-8"), shown, is_package)
    return sources


class _ImportCollector(ast.NodeVisitor):
    """The names a module imports, with their lines and whether a function encloses them."""

    def __init__(self, package: str):
        self.package = package
        self.found: list[tuple[str, list[str], int, bool]] = []  # module, names from it, line, lazy
        self._function_depth = 0

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self._function_depth += 1
        self.generic_visit(node)
        self._function_depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function  # noqa: N815 - ast's names

    def visit_Import(self, node: ast.Import) -> None:  # noqa: N802 - ast's name
        for alias in node.names:
            self.found.append((alias.name, [], node.lineno, self._function_depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:  # noqa: N802 - ast's name
        module = node.module or ""
        if node.level:
            base = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
            module = ".".join([*base, module] if module else base)
        names = [alias.name for alias in node.names]
        self.found.append((module, names, node.lineno, self._function_depth > 0))

    def visit_Call(self, node: ast.Call) -> None:  # noqa: N802 - ast's name
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            if isinstance(node.args[0].value, str):
                self.found.append((node.args[0].value, [], node.lineno, self._function_depth > 0))
        self.generic_visit(node)


def imports_of(name: str, source: Source, modules: Iterable[str]) -> list[Import]:
    """The imports of mlc modules made by module `name`."""
    # Folders without an __init__.py (namespace packages such as mlc/tools) are modules too.
    known = {prefix for module in modules for prefix in _prefixes(module)}
    package = name if source.is_package else name.rpartition(".")[0]
    collector = _ImportCollector(package)
    collector.visit(ast.parse(source.text, source.path))
    found = []
    for module, names, line, lazy in collector.found:
        # `from M import n` loads the module M.n when there is one, else M (n is a name in M).
        targets = [f"{module}.{n}" if f"{module}.{n}" in known else module for n in names] or [module]
        for target in dict.fromkeys(targets):
            if within(target, "mlc") and target != name:
                found.append(Import(name, target, source.path, line, lazy))
    return found


def _prefixes(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


def import_graph(sources: Mapping[str, Source]) -> list[Import]:
    return [found for name, source in sources.items() for found in imports_of(name, source, sources)]


# -- the rules --------------------------------------------------------------------------------------


def dialect_violations(imports: Iterable[Import]) -> list[str]:
    """Rule 1."""
    return [
        str(i)
        for i in imports
        if within(i.importer, "mlc.dialects") and not (within(i.target, "mlc.dialects") or i.target == "mlc.errors")
    ]


def stage_violations(imports: Iterable[Import]) -> list[str]:
    """Rule 2."""
    problems = []
    for i in imports:
        stage = next((s for s in STAGES if within(i.importer, s)), None)
        if stage is None:
            continue
        forbidden = [p for p in (*PASSES, *STAGES) if p != stage] + ["mlc.compiler"]
        if i.importer in API_CLIENTS and i.target == "mlc":
            if not i.lazy:
                problems.append(f"{i}: the adapter imports the API inside its functions only")
        elif i.target == "mlc" or any(within(i.target, p) for p in forbidden):
            problems.append(str(i))
    return problems


def cycles_within(package: str, imports: Iterable[Import]) -> list[list[str]]:
    """Rule 3: the import cycles among the modules of `package` (each a list of its modules)."""
    edges: dict[str, set[str]] = {}
    for i in imports:
        if within(i.importer, package) and within(i.target, package):
            edges.setdefault(i.importer, set()).add(i.target)
            edges.setdefault(i.target, set())
    # Tarjan's strongly connected components; a component of several modules holds a cycle.
    index: dict[str, int] = {}
    lowest: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = lowest[module] = len(index)
        stack.append(module)
        for target in sorted(edges[module]):
            if target not in index:
                visit(target)
                lowest[module] = min(lowest[module], lowest[target])
            elif target in stack:
                lowest[module] = min(lowest[module], index[target])
        if lowest[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                components.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return components


def tools_violations(imports: Iterable[Import]) -> list[str]:
    """Rule 4."""
    return [str(i) for i in imports if within(i.target, "mlc.tools") and not within(i.importer, "mlc.tools")]


def pass_modules() -> set[str]:
    """The module of every registered mlc pass (the named pipelines aside)."""
    from mlc.transforms import MLC_PASSES

    return {location.split(":")[0] for location in MLC_PASSES.values()} - set(REGISTRY)


def pass_violations(imports: Iterable[Import], passes: set[str]) -> list[str]:
    """Rule 5: imports of a pass module by anything in mlc.transforms but the registry."""
    return [
        str(i)
        for i in imports
        if within(i.importer, "mlc.transforms") and i.importer not in REGISTRY and i.target in passes
    ]


# -- the tree -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    return import_graph(tree_sources())


def test_the_whole_tree_is_read_with_its_lazy_imports(graph: list[Import]):
    """The checks below see what they check: every package, and imports inside functions."""
    importers = {i.importer for i in graph}
    for package in ("mlc.dialects", "mlc.interpreter", "mlc.runtime", "mlc.backend", "mlc.frontend", "mlc.tools"):
        assert any(within(m, package) for m in importers), package
    assert any(i.importer == "mlc.compiler" and within(i.target, "mlc.interpreter") and i.lazy for i in graph)
    assert any(i.importer == API_CLIENT and i.target == "mlc" for i in graph)


def test_dialects_import_only_dialects_and_errors(graph: list[Import]):
    assert dialect_violations(graph) == []


def test_stages_below_the_api_import_neither_passes_nor_api_nor_each_other(graph: list[Import]):
    assert stage_violations(graph) == []


@pytest.mark.parametrize("package", ACYCLIC)
def test_no_import_cycle_within(package: str, graph: list[Import]):
    cycles = cycles_within(package, graph)
    details = [str(i) for i in graph if any(i.importer in c and i.target in c for c in cycles)]
    assert cycles == [], "\n".join(details)


def tuning_violations(imports: Iterable[Import]) -> list[str]:
    """Rule 6."""
    return [
        str(i)
        for i in imports
        if within(i.target, "mlc.tuning")
        and not within(i.importer, "mlc.tuning")
        and not within(i.importer, "mlc.tools")
        and not (is_api(i.importer) and i.lazy)
    ]


def test_only_the_api_and_the_tools_import_the_tuner(graph: list[Import]):
    assert any(i.importer == "mlc.compiler" and within(i.target, "mlc.tuning") for i in graph)
    assert tuning_violations(graph) == []
    assert tuning_violations(_graph_of({"mlc.runtime.x": "from mlc.tuning import database"})) != []


def test_nothing_imports_the_tools(graph: list[Import]):
    assert tools_violations(graph) == []


def test_no_pass_imports_another_pass(graph: list[Import]):
    passes = pass_modules()
    assert len(passes) >= 20 and all(module.count(".") == 3 for module in passes)  # mlc.transforms.<level>.<pass>
    assert pass_violations(graph, passes) == []


def test_pass_files_stay_readable():
    sources = tree_sources()
    lengths = {module: sources[module].text.count("\n") for module in pass_modules()}
    too_long = {module: length for module, length in lengths.items() if length > MAX_PASS_LINES}
    assert too_long == {}
    ordered = sorted(lengths.values())
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    assert median <= MAX_MEDIAN_PASS_LINES, f"median pass file {median} lines"


def test_a_pass_importing_a_pass_is_reported():
    graph = _graph_of(
        {
            "mlc.transforms.graph.a": "from mlc.transforms.graph.b import helper",
            "mlc.transforms.graph.b": "def helper(): pass",
        }
    )
    assert pass_violations(graph, {"mlc.transforms.graph.a", "mlc.transforms.graph.b"}) != []
    assert pass_violations(graph, {"mlc.transforms.graph.a"}) == []


# -- the checks themselves, on made-up modules --------------------------------------------------------


def _graph_of(modules: dict[str, str]) -> list[Import]:
    sources = {
        name: Source(text, name.replace(".", "/") + ".py", name in ("mlc", "mlc.runtime", "mlc.dialects"))
        for name, text in modules.items()
    }
    return import_graph(sources)


def test_a_lazy_import_of_the_interpreter_in_a_dialect_is_reported():
    found = _graph_of(
        {
            "mlc.dialects.tile.ops": "def table():\n    from mlc.interpreter.engine import Machine\n",
            "mlc.interpreter.engine": "from ..dialects.tile import ops\n",
            "mlc.dialects.syntax": "from mlc.errors import MlcError\nfrom . import element_types\n",
            "mlc.dialects.element_types": "",
            "mlc.errors": "",
        }
    )
    assert dialect_violations(found) == ["mlc/dialects/tile/ops.py:2: mlc.dialects.tile.ops imports mlc.interpreter.engine (inside a function)"]
    assert Import("mlc.interpreter.engine", "mlc.dialects.tile.ops", "mlc/interpreter/engine.py", 1, False) in found


def test_a_cycle_through_a_lazy_import_is_reported():
    found = _graph_of(
        {
            "mlc.runtime": "from mlc.runtime.cuda import Stream\n",
            "mlc.runtime.cuda": "def f():\n    from mlc.runtime.foreign_arrays import view\n",
            "mlc.runtime.foreign_arrays": "from mlc.runtime import cuda\n",
            "mlc.runtime.host": "from mlc.runtime import cuda, foreign_arrays\nimport mlc.runtime.cuda\n",
        }
    )
    assert cycles_within("mlc.runtime", found) == [["mlc.runtime.cuda", "mlc.runtime.foreign_arrays"]]
    # `from mlc.runtime import cuda` loads the module, not the package: the package is no cycle.
    assert all(i.target != "mlc.runtime" for i in found)


def test_the_package_importing_its_modules_back_is_a_cycle():
    found = _graph_of({"mlc.runtime": "from mlc.runtime.host import run\n", "mlc.runtime.host": "from mlc.runtime import is_available\n"})
    assert cycles_within("mlc.runtime", found) == [["mlc.runtime", "mlc.runtime.host"]]


@pytest.mark.parametrize(
    ("text", "allowed"),
    [
        ("def f():\n    import mlc\n", True),
        ("def f():\n    from mlc import compile, LoweringError\n", True),
        ("import mlc\n", False),
        ("def f():\n    from mlc.compiler import CompileError\n", False),
        ("def f():\n    from mlc.interpreter import run\n", False),
        ("def f():\n    importlib.import_module('mlc.runtime')\n", False),
    ],
)
def test_only_lazy_imports_of_the_api_itself_are_allowed_in_the_adapter(text: str, allowed: bool):
    modules = {"mlc": "", "mlc.compiler": "", "mlc.interpreter": "", "mlc.runtime": "", API_CLIENT: text}
    assert (stage_violations(_graph_of(modules)) == []) == allowed
    # Any other frontend module may not import the API at all.
    assert stage_violations(_graph_of({**modules, "mlc.frontend.onnx.importer": text})) != []


def test_stages_may_not_import_each_other_or_the_passes():
    found = _graph_of(
        {
            "mlc.runtime.host": "from mlc.backend import compile_to_ptx\nfrom mlc.dialects.gpu import ops\n",
            "mlc.backend": "from mlc.transforms.pipelines import GPU_PIPELINE\n",
            "mlc.interpreter.host": "from mlc.diagnostics import first_line_of\n",
        }
    )
    assert stage_violations(found) == [
        "mlc/runtime/host.py:1: mlc.runtime.host imports mlc.backend",
        "mlc/backend.py:1: mlc.backend imports mlc.transforms.pipelines",
    ]


def test_importing_the_tools_is_reported():
    found = _graph_of({"mlc.compiler": "def f():\n    from mlc.tools.cli import main\n", "mlc.tools.mlc_opt": "from mlc.tools.cli import main\n", "mlc.tools.cli": ""})
    assert tools_violations(found) == ["mlc/compiler.py:2: mlc.compiler imports mlc.tools.cli (inside a function)"]
