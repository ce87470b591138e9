"""mlc-compile: compile a graph function into a bundle that runs without compiling again.

    mlc-compile model.mlir -o model.mlcb [--device auto|cuda|cpu] [--entry NAME]

The bundle holds the kernels (PTX or a native object), the host plan and the graph source
(`mlc.save`); `mlc.load("model.mlcb")` runs it on a machine with the same GPU architecture (or
CPU) and mlc version, without importing the compiler's passes. The input is read as a file
whatever its name (`-` is standard input). Errors are messages, never tracebacks; exit code 1.
"""

from __future__ import annotations

import argparse
import sys

from mlc.tools.cli import exit_code, read_input


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv), "mlc-compile")


def _main(argv: list[str] | None) -> int:
    import mlc

    parser = argparse.ArgumentParser(prog="mlc-compile", description=__doc__.split("\n")[0])
    parser.add_argument("input", nargs="?", default="-", help="the graph-level MLIR file ('-': standard input)")
    parser.add_argument("-o", "--output", required=True, help="the bundle to write")
    parser.add_argument("--device", default="auto", help="auto (the GPU when there is one), cuda or cpu")
    parser.add_argument("--entry", default=None, help="the function to compile (default: the only or first public one)")
    args = parser.parse_args(argv)
    text, _ = read_input(args.input)
    compiled = mlc.compile(text, device=args.device, entry=args.entry)
    mlc.save(compiled, args.output)
    sys.stderr.write(f"wrote {args.output}: @{compiled.name} for {compiled.device}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
