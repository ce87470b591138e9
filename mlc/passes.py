"""Building pass pipelines from text, with errors that name the nearest valid spelling.

Two spellings are accepted:

* MLIR's, `builtin.module(cse,func.func(convert-graph-to-tile{num-warps=8}))`. Anchors
  (`builtin.module(...)`, `func.func(...)`, ...) are accepted and flattened: every mlc pass
  works on the whole module and finds the ops it rewrites itself.
* xDSL's, `cse,convert-graph-to-tile{num-warps=8}`.

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
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from mlc.diagnostics import MlcError

PassFactories = dict[str, Callable[[], type[ModulePass]]]


class PipelineError(MlcError):
    pass


def suggest(name: str, candidates: Sequence[str]) -> str:
    """' (did you mean 'x'?)' for the closest candidates, or ''."""
    matches = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(f"'{m}'" for m in matches) + "?)"


def flatten_mlir_pipeline(text: str) -> str:
    """Turns MLIR pipeline syntax into xDSL's flat `a,b{x=1}` list (anchors dropped)."""
    elements: list[str] = []
    position = 0

    def skip_space() -> None:
        nonlocal position
        while position < len(text) and text[position].isspace():
            position += 1

    def parse_list(closing: str | None) -> None:
        nonlocal position
        while True:
            skip_space()
            if position >= len(text) or (closing is not None and text[position] == closing):
                break
            start = position
            while position < len(text) and text[position] not in ",(){}" and not text[position].isspace():
                position += 1
            name = text[start:position]
            if not name:
                raise PipelineError(f"expected a pass name at column {position + 1} of '{text}'")
            skip_space()
            if position < len(text) and text[position] == "(":
                position += 1
                parse_list(")")
                if position >= len(text) or text[position] != ")":
                    raise PipelineError(f"missing ')' for anchor '{name}' in '{text}'")
                position += 1
            elif position < len(text) and text[position] == "{":
                depth, options_start = 0, position
                while position < len(text):
                    depth += {"{": 1, "}": -1}.get(text[position], 0)
                    position += 1
                    if depth == 0:
                        break
                if depth != 0:
                    raise PipelineError(f"missing '}}' for the options of '{name}' in '{text}'")
                elements.append(name + text[options_start:position])
            else:
                elements.append(name)
            skip_space()
            if position < len(text) and text[position] == ",":
                position += 1
                continue
            break

    parse_list(None)
    skip_space()
    if position != len(text):
        raise PipelineError(f"unexpected '{text[position]}' at column {position + 1} of '{text}'")
    return ",".join(elements)


def _option_names(pass_class: type[ModulePass]) -> list[str]:
    return [f.name.replace("_", "-") for f in dataclasses.fields(pass_class) if f.init and f.name != "name"]


def _instantiate(spec: ArgSpec, available: PassFactories) -> ModulePass:
    if spec.name not in available:
        raise PipelineError(f"unknown pass '{spec.name}'{suggest(spec.name, list(available))}")
    pass_class = available[spec.name]()
    options = _option_names(pass_class)
    for given in spec.normalize_parameter_names().parameters:
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
        message = str(error)
        match = re.search(r"given \((.*?),?\), expected <class '(\w+)'>", message)
        if match:
            message = f"an option expects a value of type {match.group(2)}, got {match.group(1)}"
        raise PipelineError(f"pass '{spec.name}': {message}") from None


def build_pipeline(text: str, available: PassFactories, mlir_syntax: bool) -> list[ModulePass]:
    """The passes of a pipeline text, with named pipelines expanded."""
    flat = flatten_mlir_pipeline(text) if mlir_syntax else text
    try:
        specs = list(parse_pipeline(flat))
    except ArgSpecParseError as error:
        raise PipelineError(f"cannot parse pass pipeline '{text}': {error}") from None
    return expand(_instantiate(spec, available) for spec in specs)


def expand(passes: Sequence[ModulePass] | object) -> list[ModulePass]:
    result: list[ModulePass] = []
    for module_pass in passes:  # type: ignore[attr-defined]
        if isinstance(module_pass, NamedPipeline):
            result.extend(expand(module_pass.passes()))
        else:
            result.append(module_pass)
    return result


def format_pipeline(passes: Sequence[ModulePass]) -> str:
    """MLIR spelling of a flat pipeline: `builtin.module(a, b{x-y=1})` (hyphenated option names)."""

    def spell(module_pass: ModulePass) -> str:
        spec = module_pass.pipeline_pass_spec()
        options = " ".join(
            f"{name.replace('_', '-')}=" + ",".join(ArgSpec._spec_parameter_type_str(v) for v in values)
            for name, values in spec.parameters.items()
        )
        return spec.name + (f"{{{options}}}" if options else "")

    return "builtin.module(" + ", ".join(spell(p) for p in passes) + ")"


@dataclass(frozen=True)
class NamedPipeline(ModulePass):
    """A pass that stands for a sequence of passes (given by `passes()`)."""

    def passes(self) -> list[ModulePass]:
        raise NotImplementedError

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for module_pass in expand(self.passes()):
            module_pass.apply(ctx, op)
            op.verify()
