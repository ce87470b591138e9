"""SHA-256 for the cache-hit path, without importing `hashlib`.

`hashlib` loads OpenSSL's `_hashlib` when it is imported (about 2.5 ms on the development
machine, an eighth of a CPU cache hit in a fresh process), although the cache only needs SHA-256,
which CPython also builds as a small module of its own (`_sha256` up to 3.11, `_sha2` from 3.12).
`sha256(data)` takes that module where the interpreter has it, else hashlib's; the digests are
the same (SHA-256 is SHA-256).

Limits: SHA-256 only; the private module names are CPython's (other interpreters take hashlib).
"""

from __future__ import annotations

from typing import Any


def _constructor() -> Any:
    try:
        from _sha2 import sha256 as builtin  # type: ignore[import-not-found]  # CPython >= 3.12
    except ImportError:
        try:
            from _sha256 import sha256 as builtin  # type: ignore[import-not-found, no-redef]  # CPython <= 3.11
        except ImportError:
            from hashlib import sha256 as builtin  # type: ignore[assignment]
    return builtin


sha256 = _constructor()
"""sha256(data=b"") -> a hash object with update, digest and hexdigest, as hashlib.sha256."""
