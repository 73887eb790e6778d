"""What native code (C, C++) writes to file descriptor 2, taken off the terminal while it runs:
`captured_stderr` keeps it as lines for a logger, or drops it. Python's `sys.stderr` is flushed
first, so nothing of ours is caught."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def captured_stderr(lines: list[str] | None = None) -> Iterator[None]:
    """File descriptor 2 into a temporary file while inside; its lines appended to `lines`, or
    dropped with None (e.g. MuJoCo 4's warnings about Gymnasium's XML files while a probe builds an
    env, Warp's start-up line)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as f:
        os.dup2(f.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if lines is not None:
                f.seek(0)
                lines += f.read().decode(errors="replace").splitlines()
