"""mlc-import-onnx: translate an ONNX model into graph-dialect MLIR.

    mlc-import-onnx model.onnx                      print the module
    mlc-import-onnx model.onnx -o model.mlir        write it to a file
    mlc-import-onnx model.onnx --entry forward --input-shape input=1x3x224x224

`--input-shape NAME=DxDx...` (repeatable) fixes the shape of a graph input with dynamic
dimensions; a scalar is `NAME=`. Errors (an unsupported op, a dynamic shape, an unreadable file)
go to stderr naming the node and the reason, never with a traceback; the exit code is 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from io import StringIO

from xdsl.printer import Printer

from mlc.errors import MlcError
from mlc.tools.cli import exit_code, write_result


def _input_shape(text: str) -> tuple[str, list[int]]:
    name, separator, dims = text.rpartition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=DxDx..., got '{text}'")
    try:
        return name, [int(dim) for dim in dims.split("x")] if dims else []
    except ValueError:
        raise argparse.ArgumentTypeError(f"dimensions must be integers separated by 'x', got '{dims}'") from None


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
    return parser


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    args = _arguments().parse_args(argv)
    from mlc.frontend.onnx import import_model

    try:
        module = import_model(args.input_file, entry_name=args.entry, input_shapes=dict(args.input_shape))
    except MlcError as error:
        message = str(error)
        prefix = "" if message.startswith("cannot read") else f"{args.input_file}: "
        sys.stderr.write(f"mlc-import-onnx: error: {prefix}{message}\n")
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
