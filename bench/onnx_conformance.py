"""ONNX conformance table: ONNX's node tests of the ops of issue 3, per op and device.

    python bench/onnx_conformance.py [--devices interp,cpu[,cuda]] [--ops Add,Conv,...]
                                     [--details] [--json FILE]

Every node test of `mlc.frontend.onnx.conformance.CONFORMANCE_OPS` runs through mlc's ONNX backend
(`MlcBackend.pinned(device)`) under ONNX's own test runner (`onnx.backend.test.BackendTest`), once
per device, and is classified:

    passed       the outputs match ONNX's expected outputs within the test's tolerances
    failed       wrong outputs, or an error that is not a known limit (a crash in a pass, a
                 verifier failure, a runtime error)
    unsupported  mlc refuses the model on that device (`UnsupportedModelError`): the importer
                 rejects it, or a lowering pass cannot lower one of its ops yet

The table has one row per op (its number of tests, then passed / failed / unsupported per device)
and the totals. `--details` lists each test that did not pass, with the reason; `--json FILE`
writes every test's outcome, reason and time (`-` writes the JSON to stdout instead of the table).
`cuda` is left out, with a note, when no CUDA device is present. Exit status: 0 when no test
failed, 1 when some did, 2 for bad arguments or a missing `onnx` package.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unittest
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO

OUTCOMES = ("passed", "failed", "unsupported")
DEVICES = ("interp", "cpu", "cuda")


@dataclass
class Outcome:
    op: str
    outcome: str
    """passed, failed or unsupported (skipped only if ONNX's runner skips it)."""
    reason: str
    seconds: float


class _Recorder(unittest.TestResult):
    """Classifies each test of ONNX's runner as it finishes (see the module docstring)."""

    def __init__(self, ops: dict[str, str], suffix: str, unsupported_error: type[Exception]):
        super().__init__()
        self.ops = ops
        self.suffix = suffix
        self.unsupported_error = unsupported_error
        self.outcomes: dict[str, Outcome] = {}
        self._started = 0.0

    def _record(self, test: unittest.TestCase, outcome: str, reason: str) -> None:
        name = test._testMethodName.removesuffix(self.suffix)
        self.outcomes[name] = Outcome(self.ops[name], outcome, reason, time.perf_counter() - self._started)

    def startTest(self, test: unittest.TestCase) -> None:
        super().startTest(test)
        self._started = time.perf_counter()

    def addSuccess(self, test: unittest.TestCase) -> None:
        self._record(test, "passed", "")

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        self._record(test, "failed", _one_line(err[1]))

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        if isinstance(err[1], self.unsupported_error):
            self._record(test, "unsupported", _one_line(err[1]))
        else:
            self._record(test, "failed", f"{type(err[1]).__name__}: {_one_line(err[1])}")

    def addSkip(self, test: unittest.TestCase, reason: str) -> None:
        self._record(test, "skipped", reason)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def run_device(device: str, ops: dict[str, str]) -> dict[str, Outcome]:
    """Runs the node tests named in `ops` (name -> op) on `device` through ONNX's runner."""
    import onnx.backend.test

    from mlc.frontend.onnx.backend import MlcBackend, UnsupportedModelError

    # ONNX's runner names its devices CPU and CUDA and suffixes every test with one of them.
    suffix = "_cuda" if device == "cuda" else "_cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        backend_test = onnx.backend.test.BackendTest(MlcBackend.pinned(device), __name__)
    backend_test.include(rf"^({'|'.join(map(re.escape, ops))}){suffix}$")
    test_case = backend_test.test_cases["OnnxBackendNodeModelTest"]
    suite = unittest.TestSuite(test_case(f"{name}{suffix}") for name in ops)
    recorder = _Recorder(ops, suffix, UnsupportedModelError)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's warnings on NaN and infinity inputs
        suite.run(recorder)
    return recorder.outcomes


def _counts(outcomes: dict[str, Outcome], op: str | None = None) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes.values():
        if op is None or outcome.op == op:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    return counts


def print_table(
    ops: Sequence[str], tests: dict[str, str], results: dict[str, dict[str, Outcome]], out: TextIO
) -> None:
    devices = list(results)
    op_width = max(len("total"), *(len(op) for op in ops))
    cell = " ".join(f"{label:>5}" for label in ("pass", "fail", "unsup"))
    header_devices = "".join(f"   {device:^{len(cell)}}" for device in devices)
    out.write(f"{'':{op_width}} {'':>5}{header_devices}\n")
    out.write(f"{'op':{op_width}} {'tests':>5}" + "".join(f"   {cell}" for _ in devices) + "\n")
    rows = [(op, sum(1 for test_op in tests.values() if test_op == op), op) for op in ops]
    rows.append(("total", len(tests), None))
    for label, count, op in rows:
        if op is None:
            out.write("-" * (op_width + 6 + len(devices) * (len(cell) + 3)) + "\n")
        line = f"{label:{op_width}} {count:>5}"
        for device in devices:
            counts = _counts(results[device], op)
            line += "   " + " ".join(f"{counts[outcome]:>5}" for outcome in OUTCOMES)
        out.write(line + "\n")


def print_details(results: dict[str, dict[str, Outcome]], out: TextIO) -> None:
    for device, outcomes in results.items():
        for outcome_kind in ("failed", "unsupported", "skipped"):
            listed = [(name, o) for name, o in outcomes.items() if o.outcome == outcome_kind]
            if not listed:
                continue
            out.write(f"\n{device}: {outcome_kind} ({len(listed)})\n")
            for name, outcome in listed:
                out.write(f"  {name} [{outcome.op}]: {outcome.reason[:300]}\n")


def _parse_arguments(argv: Sequence[str] | None, ops: Sequence[str], more_ops: Sequence[str] = ()) -> argparse.Namespace:
    """`ops` run by default; `more_ops` only when named in --ops."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="interp,cpu", help="comma-separated: interp, cpu, cuda (default interp,cpu)")
    parser.add_argument("--ops", help="comma-separated ONNX ops to run (default: all of issue 3; issue 15's MODEL_OPS by name)")
    parser.add_argument("--details", action="store_true", help="list each test that did not pass, with the reason")
    parser.add_argument("--json", metavar="FILE", help="write every test's outcome as JSON ('-': stdout, no table)")
    args = parser.parse_args(argv)
    args.devices = [device.strip() for device in args.devices.split(",") if device.strip()]
    for device in args.devices:
        if device not in DEVICES:
            parser.error(f"unknown device '{device}' (devices: {', '.join(DEVICES)})")
    if args.ops:
        args.ops = [op.strip() for op in args.ops.split(",") if op.strip()]
        unknown = [op for op in args.ops if op not in (*ops, *more_ops)]
        if unknown:
            parser.error(f"not among the conformance ops: {', '.join(unknown)} (ops: {' '.join((*ops, *more_ops))})")
    else:
        args.ops = list(ops)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        import onnx
    except ImportError:
        sys.stderr.write("onnx_conformance: needs the 'onnx' package (pip install 'mlc[onnx]')\n")
        return 2
    from mlc.frontend.onnx.backend import cuda_available
    from mlc.frontend.onnx.conformance import CONFORMANCE_OPS, MODEL_OPS, op_by_test_name

    args = _parse_arguments(argv, CONFORMANCE_OPS, MODEL_OPS)
    notes = sys.stderr if args.json == "-" else sys.stdout
    devices = list(args.devices)
    if "cuda" in devices and not cuda_available():
        devices.remove("cuda")
        notes.write("cuda: left out, no CUDA device is present\n")
    tests = op_by_test_name(tuple(args.ops))
    results: dict[str, dict[str, Outcome]] = {}
    elapsed: dict[str, float] = {}
    for device in devices:
        started = time.perf_counter()
        results[device] = run_device(device, tests)
        elapsed[device] = time.perf_counter() - started
    report = {
        "onnx": onnx.__version__,
        "opset": onnx.defs.onnx_opset_version(),
        "devices": devices,
        "seconds": {device: round(seconds, 1) for device, seconds in elapsed.items()},
        "totals": {device: _counts(outcomes) for device, outcomes in results.items()},
        "tests": {device: {name: asdict(o) for name, o in outcomes.items()} for device, outcomes in results.items()},
    }
    if args.json == "-":
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as file:
                json.dump(report, file, indent=1)
                file.write("\n")
        out = sys.stdout
        out.write(
            f"ONNX node tests of {len(args.ops)} ops through mlc (onnx {onnx.__version__}, "
            f"newest opset {onnx.defs.onnx_opset_version()})\n\n"
        )
        print_table(args.ops, tests, results, out)
        out.write("\n" + "; ".join(f"{device}: {seconds:.1f} s" for device, seconds in elapsed.items()) + "\n")
        if args.details:
            print_details(results, out)
    failed = any(outcome.outcome == "failed" for outcomes in results.values() for outcome in outcomes.values())
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader (e.g. `head`) stopped reading: not an error of ours
        sys.stderr.close()
        sys.exit(0)
