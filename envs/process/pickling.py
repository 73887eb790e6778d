"""Env factories travel to worker processes pickled: with cloudpickle (lambdas, closures, local
classes) when it is installed, which it is wherever Gymnasium is, else with plain pickle."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

try:
    import cloudpickle
except ImportError:  # pragma: no cover - Gymnasium depends on cloudpickle
    cloudpickle = None


def dumps_factory(fn: Callable[[], Any], what: str) -> bytes:
    """Pickle an env factory for a worker; a clear ValueError naming `what` if it cannot be."""
    if not callable(fn):
        raise ValueError(f"{what} must be a callable returning an env, got {type(fn).__name__}")
    try:
        if cloudpickle is not None:
            return cloudpickle.dumps(fn)
        return pickle.dumps(fn)
    except Exception as e:
        how = "cloudpickle" if cloudpickle is not None else "pickle (install cloudpickle for lambdas and closures)"
        raise ValueError(f"{what} cannot be sent to a worker process: {how} failed: {type(e).__name__}: {e}") from e
