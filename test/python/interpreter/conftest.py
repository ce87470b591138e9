"""Fixtures for the interpreter tests."""

from collections.abc import Callable

import numpy as np
import pytest
from interpreter_support import parse_module
from xdsl.dialects.builtin import ModuleOp


@pytest.fixture
def parse() -> Callable[[str], ModuleOp]:
    return parse_module


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261122)
