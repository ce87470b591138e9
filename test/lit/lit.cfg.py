"""lit configuration for mlc's FileCheck tests.

Tests are .mlir files whose `// RUN:` lines call mlc-opt, mlc-translate or mlc-run (the console
scripts of the installed package) and pipe the output into `filecheck` (the Python port). The
directory of the Python running lit comes first on PATH, so a virtual environment's tools win.
"""

import os
import sys

import lit.formats

config.name = "mlc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

tool_directory = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([tool_directory, os.environ.get("PATH", "")])
config.environment["PYTHONUNBUFFERED"] = "1"
# lit passes only a few variables through; a PYTHONPATH naming a source tree (a worktree tested
# with another checkout's virtual environment) must reach the tools, or they import the other mlc.
if "PYTHONPATH" in os.environ:
    config.environment["PYTHONPATH"] = os.environ["PYTHONPATH"]
# The CPU is the device in CI; tests that need a GPU live in the pytest suite.
config.environment["MLC_DEVICE"] = "cpu"
# Tests never read or write the user's compile cache (mlc/runtime/artifact_cache.py).
config.environment["MLC_CACHE"] = "0"
# `%python` runs helper scripts (e.g. generators of ONNX models) with the Python running lit.
config.substitutions.append(("%python", sys.executable))
