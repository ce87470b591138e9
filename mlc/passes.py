"""Building pass pipelines from text, with errors that name the nearest valid spelling.

Two spellings are accepted:

* MLIR's, `builtin.module(cse,func.func(canonicalize),convert-graph-to-tile{num-warps=8})`, with
  MLIR's nesting rules: every pass sits inside an anchor naming the op it runs on. The input is a
  module, so the top level holds `builtin.module(...)` anchors; inside one, module passes and
  `func.func(...)` anchors; inside `func.func(...)`, only the passes that work within the op they
  are given (`FUNCTION_PASSES`), which then run on each function of the module in turn. Anything
  else (a top-level pass or `func.func`, a module pass such as `mlc-lower-to-cpu` inside
  `func.func`, another anchor) is an error naming the pass and the anchor, where MLIR would refuse
  it too.
* xDSL's, a flat `cse,convert-graph-to-tile{num-warps=8}`: module passes without anchors.

Named pipelines (`NamedPipeline` subclasses such as `mlc-lower-to-gpu`) expand into their
passes, so timing and IR dumps see every step.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from mlc.diagnostics import MlcError, run_pass

PassFactories = dict[str, Callable[[], type[ModulePass]]]

MODULE_ANCHOR = "builtin.module"
FUNCTION_ANCHOR = "func.func"

FUNCTION_PASSES = frozenset(
    {
        "canonicalize",
        "cse",
        "dce",
        "licm",
        "graph-decompose",
        "graph-fold-constants",
        "graph-fuse",
        "graph-inline-fusion",
        "graph-simplify",
    }
)
"""Passes that only rewrite inside the op they are given, so that `func.func(...)` can run them on
one function at a time (the others, e.g. convert-graph-to-tile, add ops beside the function)."""


class PipelineError(MlcError):
    pass


def suggest(name: str, candidates: Sequence[str]) -> str:
    """' (did you mean 'x'?)' for the closest candidates, or ''."""
    matches = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(f"'{m}'" for m in matches) + "?)"


@dataclass
class PipelineElement:
    """A pass (`nested` is None) with its `{...}` options, or an anchor and what it holds."""

    name: str
    options: str = ""
    nested: list[PipelineElement] | None = None

    def spelling(self) -> str:
        return self.name + self.options


def parse_mlir_pipeline(text: str) -> list[PipelineElement]:
    """The elements of an MLIR pipeline text, nesting kept; PipelineError for malformed text."""
    position = 0

    def skip_space() -> None:
        nonlocal position
        while position < len(text) and text[position].isspace():
            position += 1

    def options() -> str:
        nonlocal position
        depth, start = 0, position
        while position < len(text):
            depth += {"{": 1, "}": -1}.get(text[position], 0)
            position += 1
            if depth == 0:
                return text[start:position]
        return ""

    def parse_list(anchor: str | None) -> list[PipelineElement]:
        nonlocal position
        elements: list[PipelineElement] = []
        while True:
            skip_space()
            if position >= len(text) or (anchor is not None and text[position] == ")"):
                if elements:  # after a ',' (an empty list is fine)
                    raise PipelineError(f"expected a pass name at column {position + 1} of '{text}'")
                return elements
            start = position
            while position < len(text) and text[position] not in ",(){}" and not text[position].isspace():
                position += 1
            name = text[start:position]
            if not name:
                got = text[position]
                raise PipelineError(f"expected a pass name at column {position + 1} of '{text}', got '{got}'")
            skip_space()
            element = PipelineElement(name)
            if position < len(text) and text[position] == "(":
                position += 1
                element.nested = parse_list(name)
                if position >= len(text) or text[position] != ")":
                    raise PipelineError(f"missing ')' for anchor '{name}' in '{text}'")
                position += 1
            elif position < len(text) and text[position] == "{":
                element.options = options()
                if not element.options:
                    raise PipelineError(f"missing '}}' for the options of '{name}' in '{text}'")
            elements.append(element)
            skip_space()
            if position < len(text) and text[position] == ",":
                position += 1
                continue
            return elements

    elements = parse_list(None)
    skip_space()
    if position != len(text):
        raise PipelineError(f"unexpected '{text[position]}' at column {position + 1} of '{text}'")
    return elements


def _option_names(pass_class: type[ModulePass]) -> list[str]:
    return [f.name.replace("_", "-") for f in dataclasses.fields(pass_class) if f.init and f.name != "name"]


_INCOMPATIBLE = re.compile(r"given \((.*?),?\), expected (?:<class '(\w+)'>|tuple\[(\w+), \.\.\.\])")


def _option_error(spec: ArgSpec, pass_class: type[ModulePass], error: ValueError) -> PipelineError:
    """xDSL's "Incompatible types: given ('abc',), expected <class 'int'>", naming the option."""
    for option, values in spec.parameters.items():
        spelled = option.replace("_", "-")
        try:
            pass_class.from_pass_spec(ArgSpec(spec.name, {option: values}))
        except ValueError as option_error:
            match = _INCOMPATIBLE.search(str(option_error))
            if match is None:  # the pass's own check (in __post_init__), which names the option
                break
            single, element = match.group(2), match.group(3)
            expected = f"a value of type {single}" if single else f"a comma-separated list of {element} values"
            given = ",".join(str(value) for value in values) or "nothing"
            return PipelineError(f"option '{spelled}' of pass '{spec.name}' expects {expected}, got '{given}'")
    return PipelineError(f"pass '{spec.name}': {error}")


def _instantiate(spec: ArgSpec, available: PassFactories) -> ModulePass:
    if spec.name not in available:
        raise PipelineError(f"unknown pass '{spec.name}'{suggest(spec.name, list(available))}")
    pass_class = available[spec.name]()
    spec = spec.normalize_parameter_names()
    options = _option_names(pass_class)
    for given in spec.parameters:
        spelled = given.replace("_", "-")
        if spelled not in options:
            valid = ", ".join(options) if options else "none"
            raise PipelineError(
                f"pass '{spec.name}' has no option '{spelled}'{suggest(spelled, options)}; "
                f"its options are: {valid}"
            )
    try:
        return pass_class.from_pass_spec(spec)
    except ValueError as error:
        raise _option_error(spec, pass_class, error) from None


def _parse_specs(text: str) -> list[ArgSpec]:
    try:
        return list(parse_pipeline(text))
    except ArgSpecParseError as error:
        # xDSL's message: a header, `pass-pipeline:1:COLUMN`, the text, a caret, the reason.
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        column = re.search(r":(\d+)$", lines[1]) if len(lines) > 1 else None
        where = f" at column {column.group(1)}" if column else ""
        raise PipelineError(f"cannot parse '{text}'{where}: {lines[-1]}") from None


def _function_passes(anchor: PipelineElement, available: PassFactories) -> FunctionPasses:
    nested: list[ModulePass] = []
    for element in anchor.nested or []:
        if element.nested is not None:
            raise PipelineError(
                f"'{element.name}(...)' cannot be nested in '{FUNCTION_ANCHOR}': mlc anchors passes only on "
                f"'{MODULE_ANCHOR}' and, inside it, '{FUNCTION_ANCHOR}'"
            )
        (spec,) = _parse_specs(element.spelling())
        if spec.name in available and spec.name not in FUNCTION_PASSES:
            raise PipelineError(
                f"pass '{spec.name}' runs on the whole module and cannot be nested in '{FUNCTION_ANCHOR}'; "
                f"write it directly inside '{MODULE_ANCHOR}(...)'. Passes that can run on one function: "
                + ", ".join(sorted(FUNCTION_PASSES))
            )
        nested.append(_instantiate(spec, available))
    return FunctionPasses(tuple(nested))


def _module_passes(anchor: PipelineElement, available: PassFactories) -> list[ModulePass]:
    passes: list[ModulePass] = []
    for element in anchor.nested or []:
        if element.nested is None:
            passes += expand([_instantiate(spec, available) for spec in _parse_specs(element.spelling())])
        elif element.name == FUNCTION_ANCHOR:
            passes.append(_function_passes(element, available))
        else:
            raise PipelineError(
                f"'{element.name}(...)' cannot be nested in '{MODULE_ANCHOR}': mlc anchors passes only on "
                f"'{MODULE_ANCHOR}' and, inside it, '{FUNCTION_ANCHOR}'"
            )
    return passes


def build_mlir_pipeline(text: str, available: PassFactories) -> list[ModulePass]:
    """The passes of an MLIR pipeline text, checked against MLIR's nesting rules (module docstring)."""
    passes: list[ModulePass] = []
    for element in parse_mlir_pipeline(text):
        if element.name == MODULE_ANCHOR and element.nested is not None:
            passes += _module_passes(element, available)
        elif element.nested is None:
            raise PipelineError(
                f"pass '{element.name}' is not nested in an anchor; the input is a module, so write "
                f"'{MODULE_ANCHOR}({element.spelling()})'"
            )
        elif element.name == FUNCTION_ANCHOR:
            raise PipelineError(
                f"'{FUNCTION_ANCHOR}(...)' cannot run on the input, which is a '{MODULE_ANCHOR}'; nest it: "
                f"'{MODULE_ANCHOR}({FUNCTION_ANCHOR}(...))'"
            )
        else:
            raise PipelineError(
                f"unknown anchor '{element.name}'{suggest(element.name, [MODULE_ANCHOR, FUNCTION_ANCHOR])}; "
                f"a pipeline starts with '{MODULE_ANCHOR}(...)'"
            )
    return passes


def build_pipeline(text: str, available: PassFactories, mlir_syntax: bool) -> list[ModulePass]:
    """The passes of a pipeline text, with named pipelines expanded."""
    if mlir_syntax:
        return build_mlir_pipeline(text, available)
    return expand([_instantiate(spec, available) for spec in _parse_specs(text)])


def expand(passes: Sequence[ModulePass]) -> list[ModulePass]:
    result: list[ModulePass] = []
    for module_pass in passes:
        if isinstance(module_pass, NamedPipeline):
            result.extend(expand(module_pass.passes()))
        else:
            result.append(module_pass)
    return result


def _spell(module_pass: ModulePass) -> str:
    if isinstance(module_pass, FunctionPasses):
        return f"{FUNCTION_ANCHOR}(" + ", ".join(_spell(p) for p in module_pass.passes) + ")"
    spec = module_pass.pipeline_pass_spec()
    options = " ".join(
        f"{name.replace('_', '-')}=" + ",".join(ArgSpec._spec_parameter_type_str(v) for v in values)
        for name, values in spec.parameters.items()
    )
    return spec.name + (f"{{{options}}}" if options else "")


def format_pipeline(passes: Sequence[ModulePass]) -> str:
    """MLIR spelling of a pipeline: `builtin.module(a, func.func(b), c{x-y=1})` (hyphenated options)."""
    return f"{MODULE_ANCHOR}(" + ", ".join(_spell(p) for p in passes) + ")"


@dataclass(frozen=True)
class FunctionPasses(ModulePass):
    """`func.func(...)`: its passes run on each function of the module in turn (every pass on one
    function before the next function), as in MLIR."""

    name = FUNCTION_ANCHOR

    passes: tuple[ModulePass, ...] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            for module_pass in self.passes:
                # FUNCTION_PASSES work within whatever op they are given.
                run_pass(module_pass, ctx, function)  # type: ignore[arg-type]


@dataclass(frozen=True)
class NamedPipeline(ModulePass):
    """A pass that stands for a sequence of passes (given by `passes()`)."""

    def passes(self) -> list[ModulePass]:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for module_pass in expand(self.passes()):
            run_pass(module_pass, ctx, op)
            op.verify()
