"""mlc-import-onnx: translate an ONNX model into graph-dialect MLIR.

    mlc-import-onnx model.onnx                      print the module
    mlc-import-onnx model.onnx -o model.mlir        write it to a file
    mlc-import-onnx model.onnx --entry forward --input-shape input=1x3x224x224

`--input-shape NAME=DxDx...` (repeatable) fixes the shape of a graph input with dynamic
dimensions; a scalar is `NAME=`. `--max-model-size`, `--max-tensor-elements`,
`--max-evaluated-elements` and `--max-subgraph-depth` change the bounds of safe loading
(`mlc.frontend.onnx.ImportLimits`).
Errors (an unsupported op, a dynamic shape, an unreadable file, a model over a bound) go to stderr
naming the file, the node and the reason, never with a traceback; the exit code is 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from io import StringIO

from xdsl.printer import Printer

from mlc.errors import MlcError
from mlc.frontend.onnx.errors import ModelFileError
from mlc.frontend.onnx.limits import LIMIT_OPTIONS, ImportLimits
from mlc.tools.cli import exit_code, write_result


def _input_shape(text: str) -> tuple[str, list[int]]:
    name, separator, dims = text.rpartition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=DxDx..., got '{text}'")
    try:
        return name, [int(dim) for dim in dims.split("x")] if dims else []
    except ValueError:
        raise argparse.ArgumentTypeError(f"dimensions must be integers separated by 'x', got '{dims}'") from None


def _positive_integer(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


_LIMIT_HELP = {
    "max_model_bytes": "largest model file read, in bytes",
    "max_tensor_elements": "most elements of any one tensor",
    "max_evaluated_elements": "most elements computed at import time, all values together",
    "max_subgraph_depth": "deepest nesting of subgraphs and local function calls",
}


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlc-import-onnx", description="translate an ONNX model to graph-dialect MLIR"
    )
    parser.add_argument("input_file", help="the .onnx model")
    parser.add_argument("-o", "--output-file", help="write the module here instead of stdout")
    parser.add_argument("--entry", default="main", help="name of the function (default: main)")
    parser.add_argument(
        "--input-shape",
        action="append",
        type=_input_shape,
        default=[],
        metavar="NAME=DxDx...",
        help="static shape for a graph input (repeatable)",
    )
    parser.add_argument(
        "--print-op-generic", "--mlir-print-op-generic", action="store_true", help="print the generic form"
    )
    defaults = ImportLimits()
    for field, option in LIMIT_OPTIONS.items():
        default = getattr(defaults, field)
        help_text = f"{_LIMIT_HELP[field]} (default: {default})"
        parser.add_argument(option, dest=field, type=_positive_integer, default=default, metavar="N", help=help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    args = _arguments().parse_args(argv)
    from mlc.frontend.onnx import import_model

    limits = ImportLimits(**{field: getattr(args, field) for field in LIMIT_OPTIONS})
    try:
        module = import_model(
            args.input_file, entry_name=args.entry, input_shapes=dict(args.input_shape), limits=limits
        )
    except MlcError as error:
        prefix = "" if isinstance(error, ModelFileError) else f"{args.input_file}: "  # it names the file
        sys.stderr.write(f"mlc-import-onnx: error: {prefix}{error}\n")
        return 1
    except Exception as error:  # a bug in the importer, not bad input: say so, keep it short
        if os.environ.get("MLC_DEBUG"):
            raise
        sys.stderr.write(
            f"mlc-import-onnx: internal error while importing {args.input_file}: {type(error).__name__}: {error}\n"
            "note: this is a bug in mlc; set MLC_DEBUG=1 for the Python traceback\n"
        )
        return 1
    text = StringIO()
    Printer(stream=text, print_generic_format=args.print_op_generic).print_op(module)
    text.write("\n")
    return write_result(text.getvalue(), args.output_file, "mlc-import-onnx")


if __name__ == "__main__":
    sys.exit(main())
