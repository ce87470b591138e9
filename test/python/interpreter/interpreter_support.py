"""Parsing helper shared by the interpreter tests (modules in mlc's custom syntax)."""

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from mlc.dialects import make_context


def parse_module(text: str) -> ModuleOp:
    """Parses and verifies `text` with every dialect mlc knows."""
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module
