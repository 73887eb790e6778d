"""Choosing our built-in tasks' path in a benchmark: compiled (the default) or numpy."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def numpy_path() -> Iterator[None]:
    """Pools made inside run the built-in tasks on their numpy path (SEBULBA_NATIVE_KERNEL=0)."""
    old = os.environ.get("SEBULBA_NATIVE_KERNEL")
    os.environ["SEBULBA_NATIVE_KERNEL"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["SEBULBA_NATIVE_KERNEL"]
        else:
            os.environ["SEBULBA_NATIVE_KERNEL"] = old
