"""mlc-opt: parse MLIR, run passes, print the result (mlc's counterpart of mlir-opt).

    mlc-opt in.mlir --pass-pipeline='builtin.module(convert-graph-to-tile,cse)'
    mlc-opt in.mlir -p convert-graph-to-tile,cse        # xDSL's spelling
    mlc-opt --list-passes
    mlc-opt --dump-pass-pipeline --pass-pipeline='builtin.module(mlc-lower-to-gpu)'

Reads standard input when the file is `-` or absent; `-o -` is standard output.
`--split-input-file` handles `// -----` separated chunks independently. `--verify-diagnostics`
checks MLIR-style `// expected-error {{...}}` annotations (optionally `@+N`/`@-N`/`@above`/
`@below`) against the errors each chunk produces, and fails on any mismatch; in a chunk without
annotations it prints the error and goes on (xDSL's behaviour). Errors never show a traceback;
the exit code is 1 on failure. An exception in a pass is reported as an internal compiler error
naming the pass (the traceback with MLC_DEBUG=1; see `cli.py`).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from io import StringIO
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from mlc.diagnostics import (
    InternalCompilerError,
    MlcError,
    PassFailure,
    SourceMap,
    VerificationFailure,
    describe_op,
    format_parse_error,
    parse_module,
    run_pass,
    verify,
)
from mlc.dialects import make_context
from mlc.passes import build_pipeline, format_pipeline, suggest
from mlc.tools.cli import (
    STANDARD_STREAM,
    exit_code,
    format_error,
    internal_error_message,
    print_traceback_when_debugging,
    read_input,
    write_output,
)
from mlc.transforms import PASS_SUMMARIES, all_passes


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, suggesting the nearest valid flag for a mistyped one."""

    def error(self, message: str) -> NoReturn:
        match = re.search(r"unrecognized arguments: (\S+)", message)
        if match:
            flags = [flag for action in self._actions for flag in action.option_strings]
            message += suggest(match.group(1).split("=")[0], flags)
        super().error(message)


def _arguments() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="mlc-opt", description="mlc modular optimizer: parse MLIR, run passes, print the result"
    )
    parser.add_argument("input_file", nargs="?", help="input .mlir file (standard input when '-' or absent)")
    parser.add_argument("-o", "--output-file", help="write the output here instead of standard output ('-')")
    parser.add_argument("--pass-pipeline", help="MLIR pipeline, e.g. 'builtin.module(cse,canonicalize)'")
    parser.add_argument("-p", "--passes", default="", help="xDSL pipeline, e.g. 'cse,canonicalize'")
    parser.add_argument("-t", "--target", default="mlir", help="output format: mlir (default), llvm or ptx")
    parser.add_argument("--split-input-file", action="store_true", help="process '// -----' chunks separately")
    parser.add_argument("--verify-diagnostics", action="store_true", help="check expected-error annotations")
    parser.add_argument(
        "--print-op-generic", "--mlir-print-op-generic", action="store_true", help="print the generic form"
    )
    parser.add_argument(
        "--print-ir-after-all",
        "--mlir-print-ir-after-all",
        action="store_true",
        help="print the IR to stderr after every pass",
    )
    parser.add_argument("--time-passes", "--mlir-timing", action="store_true", help="report time per pass on stderr")
    parser.add_argument("--list-passes", action="store_true", help="list the passes with a one-line summary")
    parser.add_argument("--dump-pass-pipeline", action="store_true", help="print the expanded pipeline and exit")
    parser.add_argument("--disable-verify", action="store_true", help="do not verify between passes")
    parser.add_argument(
        "--view-op-graph",
        nargs="?",
        const="",
        metavar="FILE",
        help="after the passes, write a Graphviz graph of each function (fusion groups as clusters) "
        "to FILE, or to standard error",
    )
    return parser


def _summary(name: str, pass_class: type[ModulePass]) -> str:
    if name in PASS_SUMMARIES:
        return PASS_SUMMARIES[name]
    doc = (pass_class.__doc__ or "").strip()
    first_paragraph = " ".join(doc.split("\n\n")[0].split())
    return first_paragraph.split(". ")[0].rstrip(".") + "." if first_paragraph else ""


def list_passes(stream: IO[str]) -> None:
    passes = all_passes()
    width = max(len(name) for name in passes)
    for name in sorted(passes):
        try:
            summary = _summary(name, passes[name]())
        except Exception as error:  # a broken registration should not hide the other passes
            summary = f"(cannot be loaded: {type(error).__name__}: {error})"
        stream.write(f"  {name.ljust(width)}  {summary}\n")


@dataclass
class ExpectedError:
    line: int
    message: str


_EXPECTED = re.compile(r"//\s*expected-error\s*(@[+-]\d+|@above|@below)?\s*\{\{(.*?)\}\}")


def expected_errors(chunk: str, first_line: int) -> list[ExpectedError]:
    found = []
    for index, line in enumerate(chunk.splitlines()):
        match = _EXPECTED.search(line)
        if match is None:
            continue
        line_number = first_line + index
        anchor = match.group(1)
        if anchor == "@above":
            line_number -= 1
        elif anchor == "@below":
            line_number += 1
        elif anchor:
            line_number += int(anchor[1:])
        found.append(ExpectedError(line_number, match.group(2)))
    return found


def _error_line(text: str) -> int | None:
    match = re.match(r"[^\n]*?:(\d+):\d+", text)
    return int(match.group(1)) if match else None


class Driver:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.context: Context = make_context()
        self.passes: list[ModulePass] = []
        self.timings: dict[str, float] = {}
        self.failed = False

    def setup(self) -> None:
        if self.args.target != "mlir":  # an unknown target fails before any input is read
            from mlc.backend import parse_target_spec

            parse_target_spec(self.args.target)
        if self.args.pass_pipeline is not None:
            self.passes = build_pipeline(self.args.pass_pipeline, all_passes(), mlir_syntax=True)
        if self.args.passes:
            self.passes += build_pipeline(self.args.passes, all_passes(), mlir_syntax=False)
        if self.args.view_op_graph is not None:
            from mlc.transforms.graph.view_op_graph import ViewOpGraph

            self.passes.append(ViewOpGraph(output=self.args.view_op_graph))

    def run_chunk(self, text: str, name: str, first_line: int, output: IO[str]) -> None:
        expected = expected_errors(text, first_line) if self.args.verify_diagnostics else []
        padded = "\n" * (first_line - 1) + text  # keeps line numbers of the whole file
        error = self.process(padded, name, output if not expected else StringIO())
        if not self.args.verify_diagnostics:
            if error is not None:
                sys.stderr.write(error + "\n")
                self.failed = True
            return
        if not expected:
            if error is not None:
                output.write(error + "\n")
            return
        self.check_expected(expected, error, name)

    def check_expected(self, expected: list[ExpectedError], error: str | None, name: str) -> None:
        want = expected[0]
        if len(expected) > 1:
            # Processing stops at a chunk's first error, so a second one can never be produced.
            sys.stderr.write(
                f"{name}:{expected[1].line}: error: only one expected-error per chunk is supported; "
                "split the input with '// -----'\n"
            )
            self.failed = True
            return
        if error is None:
            sys.stderr.write(f"{name}:{want.line}: error: expected error \"{want.message}\" was not produced\n")
            self.failed = True
            return
        line = _error_line(error)
        if want.message not in error or (line is not None and line != want.line):
            sys.stderr.write(
                f"{name}:{want.line}: error: expected error \"{want.message}\" at line {want.line}, got:\n{error}\n"
            )
            self.failed = True

    def process(self, text: str, name: str, output: IO[str]) -> str | None:
        """Parses, verifies, transforms and prints one chunk; returns an error message or None."""
        start = time.perf_counter()
        try:
            module, source_map = parse_module(text, self.context, name)
        except ParseError as error:
            return format_parse_error(error)
        except VerifyException as error:  # an attribute that fails its own verifier while parsing
            return f"{name}: error: {error}"
        finally:
            self.add_time("(parse)", start)
        try:
            self.verify(module, source_map, name)
            self.apply_passes(module, source_map, name)
            start = time.perf_counter()
            output.write(self.emit(module))
            self.add_time("(output)", start)
        except PassFailure as failure:
            return describe_op(failure.op, failure.message, source_map, name)
        except BrokenPipeError:  # the reader stopped early (`| head`): exit_code ends quietly
            raise
        except MlcError as error:
            if isinstance(error, InternalCompilerError):
                print_traceback_when_debugging(error)
                return internal_error_message(error, name)
            return format_error("mlc-opt", str(error))
        except Exception as error:  # a compiler bug, not bad input: say so, keep it short
            print_traceback_when_debugging(error)
            return internal_error_message(error, name)
        return None

    def apply_passes(self, module: ModuleOp, source_map: SourceMap, name: str) -> None:
        for module_pass in self.passes:
            start = time.perf_counter()
            run_pass(module_pass, self.context, module)
            self.add_time(module_pass.name, start)
            if not self.args.disable_verify:
                try:
                    self.verify(module, source_map, name)
                except VerificationFailure as failure:
                    raise MlcError(f"the IR after pass '{module_pass.name}' does not verify:\n{failure}") from None
            if self.args.print_ir_after_all:
                sys.stderr.write(f"// -----// IR Dump After {module_pass.name} //----- //\n")
                Printer(stream=sys.stderr, print_generic_format=self.args.print_op_generic).print_op(module)
                sys.stderr.write("\n\n")

    def verify(self, module: ModuleOp, source_map: SourceMap, name: str) -> None:
        start = time.perf_counter()
        try:
            verify(module, source_map, name)
        finally:
            self.add_time("(verify)", start)

    def add_time(self, row: str, start: float) -> None:
        """Adds the time since `start` to the --time-passes row `row` (a pass name, or a
        parenthesized step that is not a pass: parsing, verification, output)."""
        self.timings[row] = self.timings.get(row, 0.0) + time.perf_counter() - start

    def emit(self, module: ModuleOp) -> str:
        if self.args.target == "mlir":
            text = StringIO()
            Printer(stream=text, print_generic_format=self.args.print_op_generic).print_op(module)
            return text.getvalue() + "\n"
        from mlc.backend import emit_target
        from mlc.tools.mlc_translate import require_lowered

        pipeline = "mlc-lower-to-cpu" if "cpu" in self.args.target else "mlc-lower-to-gpu"
        require_lowered(module, f"mlc-opt -t '{self.args.target}'", pipeline)

        return emit_target(self.args.target, module)

    def report_timings(self) -> None:
        total = sum(self.timings.values())
        sys.stderr.write("===" + "-" * 73 + "===\n")
        sys.stderr.write("  ... Pass execution timing report ...\n")
        sys.stderr.write("===" + "-" * 73 + "===\n")
        sys.stderr.write(f"  Total Execution Time: {total:.4f} seconds\n\n   Wall Time  Name\n")
        steps_after = ("(verify)", "(output)")  # summed over the pipeline; parsing comes first anyway
        rows = [row for row in self.timings if row not in steps_after] + [row for row in steps_after if row in self.timings]
        for pass_name in rows:
            seconds = self.timings[pass_name]
            share = 100.0 * seconds / total if total else 0.0
            sys.stderr.write(f"   {seconds:.4f} ({share:5.1f}%)  {pass_name}\n")
        sys.stderr.write(f"   {total:.4f} (100.0%)  Total\n")


def split_chunks(text: str, split: bool) -> list[tuple[str, int]]:
    """The chunks of `text` and the line each starts on."""
    if not split:
        return [(text, 1)]
    chunks, line = [], 1
    for chunk in re.split(r"^// -----.*$\n?", text, flags=re.MULTILINE):
        chunks.append((chunk, line))
        line += chunk.count("\n") + 1
    return chunks


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv), "mlc-opt")


def _main(argv: list[str] | None) -> int:
    args = _arguments().parse_args(argv)
    if args.list_passes:
        list_passes(sys.stdout)
        return 0
    driver = Driver(args)
    driver.setup()
    if args.dump_pass_pipeline:
        sys.stdout.write(format_pipeline(driver.passes) + "\n")
        return 0
    text, name = read_input(args.input_file)
    # Standard output gets each chunk's output as it comes (interleaved with errors on stderr); a
    # file gets all of it at the end.
    to_stdout = args.output_file in (None, STANDARD_STREAM)
    output = sys.stdout if to_stdout else StringIO()
    for index, (chunk, first_line) in enumerate(split_chunks(text, args.split_input_file)):
        if index > 0:
            output.write("// -----\n")
        driver.run_chunk(chunk, name, first_line, output)
    if not to_stdout:
        write_output(output.getvalue(), args.output_file)
    if args.time_passes:
        driver.report_timings()
    return 1 if driver.failed else 0


if __name__ == "__main__":
    sys.exit(main())
