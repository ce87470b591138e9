"""Checks that a change to the LLVM conversions or the LLVM->PTX translation changes no output.

    python bench/conversion_identity.py --write DIR     # record the outputs of this checkout
    python bench/conversion_identity.py --check DIR     # compare this checkout's outputs with DIR

Outputs recorded, one file each: for the four programs of `bench/compile_time.py`, the printed
module after `mlc-lower-to-gpu{arch=sm_90}` (the LLVM-dialect kernels and the host functions) and
the PTX `mlc.backend.compile_to_ptx(module, "sm_90")` makes of it; for every lit input of
`test/lit/transforms/llvm/`, what the first RUN line's `mlc-opt` prints (stdout and stderr, without
`--verify-diagnostics`: the `-invalid` inputs' diagnostics too). No GPU is needed. `--check` lists every output that differs
and exits with status 1 if any does. Run both from the same interpreter and machine: the PTX
depends on the installed llvmlite.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
LIT_INPUTS = ROOT / "test" / "lit" / "transforms" / "llvm"
GPU_PIPELINE = "mlc-lower-to-gpu{arch=sm_90}"


def program_outputs() -> dict[str, str]:
    """The lowered module and the PTX of each bench program, by file name."""
    import compile_time

    from mlc import backend
    from mlc.compiler import lower
    from mlc.diagnostics import parse_module
    from mlc.dialects import make_context

    outputs: dict[str, str] = {}
    for name, source in compile_time.PROGRAMS.items():
        stem = re.sub(r"[^a-z0-9]+", "_", name.lower())
        module, _ = parse_module(source, make_context(), "<bench>")
        lower(module, GPU_PIPELINE)
        outputs[f"{stem}.mlir"] = str(module)
        outputs[f"{stem}.ptx"] = backend.compile_to_ptx(module, arch="sm_90")
    return outputs


def lit_outputs() -> dict[str, str]:
    """What the first RUN line's mlc-opt command prints for each lit input of the conversions."""
    outputs: dict[str, str] = {}
    for path in sorted(LIT_INPUTS.glob("*.mlir")):
        run_line = next(line for line in path.read_text().splitlines() if "RUN:" in line)
        command = shlex.split(run_line.split("RUN:", 1)[1].split("|")[0].replace("%s", str(path.relative_to(ROOT))))
        assert command[0] == "mlc-opt", run_line
        # The diagnostics themselves, not only whether they match the expectations.
        command = [word for word in command if word != "--verify-diagnostics"]
        completed = subprocess.run(
            [sys.executable, "-m", "mlc.tools.mlc_opt", *command[1:]], capture_output=True, text=True, check=False, cwd=ROOT
        )
        outputs[f"lit_{path.stem}.out"] = completed.stdout + "\n--- stderr ---\n" + completed.stderr
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", type=Path, help="directory to record the outputs in")
    mode.add_argument("--check", type=Path, help="directory of recorded outputs to compare with")
    args = parser.parse_args()
    outputs = {**lit_outputs(), **program_outputs()}
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in outputs.items():
            (args.write / name).write_text(text)
        print(f"recorded {len(outputs)} outputs in {args.write}")
        return
    differing = [name for name, text in outputs.items() if (args.check / name).read_text() != text]
    missing = sorted({path.name for path in args.check.iterdir()} - set(outputs))
    for name in differing + missing:
        print(f"DIFFERS: {name}")
    print(f"{len(outputs) - len(differing)} of {len(outputs)} outputs identical to {args.check}")
    sys.exit(1 if differing or missing else 0)


if __name__ == "__main__":
    main()
