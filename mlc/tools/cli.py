"""What the command-line tools share: exit codes when the reader goes away, writing the result."""

from __future__ import annotations

import sys
from collections.abc import Callable


def exit_code(run: Callable[[], int]) -> int:
    """`run()`'s exit code; 0 when the reader of our output (e.g. `head`) stopped reading early,
    which is not an error of ours."""
    try:
        return run()
    except BrokenPipeError:
        sys.stderr.close()
        return 0


def write_result(text: str, output_file: str | None, tool: str) -> int:
    """Writes `text` to `output_file` (stdout when None); the exit code, with a message on failure."""
    if output_file is None:
        sys.stdout.write(text)
        return 0
    try:
        with open(output_file, "w", encoding="utf-8") as output:
            output.write(text)
    except OSError as error:
        sys.stderr.write(f"{tool}: error: cannot write {output_file}: {error.strerror}\n")
        return 1
    return 0
