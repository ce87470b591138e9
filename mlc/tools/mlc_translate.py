"""mlc-translate: translate `llvm`-dialect MLIR to LLVM IR or PTX (mlc's counterpart of mlir-translate).

    mlc-translate --mlir-to-llvmir in.mlir                 LLVM IR (nvptx when the module has
                                                           nvvm.kernel functions, else cpu)
    mlc-translate --mlir-to-llvmir --target=cpu in.mlir
    mlc-translate --mlir-to-ptx --arch sm_80 in.mlir        PTX (libdevice linked when needed)

Only `llvm.func` and `llvm.mlir.global` ops are translated; host code beside them (`func.func`,
launches, `memref.global`) is skipped. A module without any `llvm.func` (graph-level IR, say) is an
error naming the level it is at and the pipeline that lowers it, not an empty output. Reads
standard input when the file is `-` or absent; `-o -` is standard output. Errors never show a
traceback: parse and verifier errors, and ops that cannot be translated, are reported at their
source location; the exit code is 1 on failure.
"""

from __future__ import annotations

import argparse
import sys

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import ParseError

from mlc.diagnostics import MlcError, PassFailure, describe_op, format_parse_error, parse_module, verify
from mlc.dialects import make_context
from mlc.tools.cli import exit_code, read_input, write_output

LEVELS = ("graph", "tile", "loop", "mlc_gpu")
"""The dialects of mlc's levels above llvm, highest first: what a module still holds tells how far
it has been lowered."""


def require_lowered(module: ModuleOp, command: str, pipeline: str) -> None:
    """Raises MlcError unless `module` has an `llvm.func` to translate, saying what it holds instead
    and how to lower it (`command` reads the lowered module, `pipeline` lowers it)."""
    if any(isinstance(op, llvm.FuncOp) for op in module.ops):
        return
    dialects = {op.name.split(".")[0] for op in module.walk()}
    level = next((level for level in LEVELS if level in dialects), None)
    holds = f"its ops are at the {level} level" if level else "it has no lowered kernels"
    raise MlcError(
        f"nothing to translate: the module has no llvm.func ({holds}); lower it first, e.g. "
        f"mlc-opt FILE --pass-pipeline='builtin.module({pipeline})' | {command}"
    )


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlc-translate", description="translate llvm-dialect MLIR to LLVM IR or PTX"
    )
    parser.add_argument("input_file", nargs="?", help="input .mlir file (standard input when '-' or absent)")
    parser.add_argument("-o", "--output-file", help="write the output here instead of standard output ('-')")
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
    verify(module, source_map, name)
    if args.mlir_to_ptx:
        require_lowered(module, "mlc-translate --mlir-to-ptx", "mlc-lower-to-gpu")
    else:
        cpu = args.target == "cpu"
        require_lowered(module, "mlc-translate --mlir-to-llvmir", "mlc-lower-to-cpu" if cpu else "mlc-lower-to-gpu")
    try:
        if args.mlir_to_ptx:
            return backend.compile_to_ptx(module, args.arch, ptx_version=args.ptx_version)
        return backend.llvm_ir_text(module, args.target or backend.default_target(module))
    except PassFailure as failure:  # a TranslationError: point at the op
        raise MlcError(describe_op(failure.op, failure.message, source_map, name)) from None


def _main(argv: list[str] | None) -> int:
    args = _arguments().parse_args(argv)
    text, name = read_input(args.input_file)
    write_output(translate(text, name, args), args.output_file)
    return 0


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv), "mlc-translate")


if __name__ == "__main__":
    sys.exit(main())
