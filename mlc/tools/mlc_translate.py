"""mlc-translate: translate `llvm`-dialect MLIR to LLVM IR or PTX (mlc's counterpart of mlir-translate).

    mlc-translate --mlir-to-llvmir in.mlir                 LLVM IR (nvptx when the module has
                                                           nvvm.kernel functions, else cpu)
    mlc-translate --mlir-to-llvmir --target=cpu in.mlir
    mlc-translate --mlir-to-ptx --arch sm_80 in.mlir        PTX (libdevice linked when needed)

Only `llvm.func` and `llvm.mlir.global` ops are translated; host code beside them (`func.func`,
launches, `memref.global`) is skipped. Reads stdin when no file is given. Errors never show a
traceback: parse and verifier errors, and ops that cannot be translated, are reported at their
source location; the exit code is 1 on failure.
"""

from __future__ import annotations

import argparse
import sys

from xdsl.utils.exceptions import ParseError, VerifyException

from mlc.diagnostics import MlcError, PassFailure, describe_op, parse_module, verify
from mlc.tools.cli import write_result
from mlc.dialects import make_context
from mlc.diagnostics import format_parse_error


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlc-translate", description="translate llvm-dialect MLIR to LLVM IR or PTX"
    )
    parser.add_argument("input_file", nargs="?", help="input .mlir file (stdin when absent)")
    parser.add_argument("-o", "--output-file", help="write the output here instead of stdout")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--mlir-to-llvmir", action="store_true", help="print LLVM IR")
    mode.add_argument("--mlir-to-ptx", action="store_true", help="print PTX for an NVIDIA GPU")
    parser.add_argument(
        "--target",
        choices=("nvptx", "cpu"),
        help="LLVM IR for the GPU or the host CPU (default: nvptx when the module has nvvm.kernel functions)",
    )
    parser.add_argument("--arch", default="sm_90", help="GPU architecture for --mlir-to-ptx (default: sm_90)")
    parser.add_argument(
        "--ptx-version", type=int, help="PTX ISA version times ten, e.g. 80 (default: the arch's, at least 80)"
    )
    return parser


def translate(text: str, name: str, args: argparse.Namespace) -> str:
    """The LLVM IR or PTX of the module in `text`; raises MlcError with a located message."""
    from mlc import backend

    try:
        module, source_map = parse_module(text, make_context(), name)
    except ParseError as error:
        raise MlcError(format_parse_error(error)) from None
    except VerifyException as error:  # an attribute that fails its own verifier while parsing
        raise MlcError(f"{name}: error: {error}") from None
    verify(module, source_map, name)
    try:
        if args.mlir_to_ptx:
            return backend.compile_to_ptx(module, args.arch, ptx_version=args.ptx_version)
        return backend.llvm_ir_text(module, args.target or backend.default_target(module))
    except PassFailure as failure:  # a TranslationError: point at the op
        raise MlcError(describe_op(failure.op, failure.message, source_map, name)) from None


def main(argv: list[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    name = args.input_file or "<stdin>"
    try:
        text = sys.stdin.read() if args.input_file is None else open(args.input_file, encoding="utf-8").read()
    except OSError as error:
        sys.stderr.write(f"mlc-translate: error: cannot read {name}: {error.strerror}\n")
        return 1
    try:
        result = translate(text, name, args)
    except MlcError as error:
        message = str(error)
        # Located messages start with the file name; others get the tool's name.
        prefix = "" if message.startswith(name) else "mlc-translate: error: "
        sys.stderr.write(f"{prefix}{message}\n")
        return 1
    return write_result(result, args.output_file, "mlc-translate")


if __name__ == "__main__":
    sys.exit(main())
