"""mlc-cache: look at or empty mlc's on-disk compile cache.

    mlc-cache info     where the cache is, how many entries, how much space of its limit
    mlc-cache clear    remove every entry

The cache is the one `mlc.compile` uses in this environment (`MLC_CACHE_DIR`, else the user's
cache directory; `MLC_CACHE_MAX_BYTES`), see `mlc/runtime/artifact_cache.py`. With `MLC_CACHE=0`
both commands say the cache is off, and `clear` still empties the directory.
"""

from __future__ import annotations

import argparse
import os
import sys

from mlc.tools.cli import exit_code


def main(argv: list[str] | None = None) -> int:
    return exit_code(lambda: _main(argv), "mlc-cache")


def _main(argv: list[str] | None) -> int:
    from mlc.runtime.artifact_cache import ArtifactCache, cache_enabled

    parser = argparse.ArgumentParser(prog="mlc-cache", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("info", "clear"))
    args = parser.parse_args(argv)
    enabled = cache_enabled()
    if not enabled:
        os.environ["MLC_CACHE"] = "1"  # to find the directory; nothing is compiled here
    cache = ArtifactCache.from_environment()
    assert cache is not None
    note = "" if enabled else " (MLC_CACHE=0: mlc.compile does not use it)"
    if args.command == "info":
        sys.stdout.write(f"{cache.info()}{note}\n")
    else:
        removed = cache.clear()
        sys.stdout.write(f"removed {removed} {'entry' if removed == 1 else 'entries'} from {cache.directory}{note}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
