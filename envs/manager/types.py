"""The env states and timestep of DI-engine's env managers (di-engine-docs.readthedocs.io)."""

from __future__ import annotations

import enum
from typing import Any, NamedTuple


class EnvState(enum.IntEnum):
    """VOID: not built. INIT: built, not reset. RUN: reset or stepped, waiting or running.
    RESET: resetting. DONE: episode over and not reset (auto_reset off, or episode_num reached).
    ERROR: given up after max_retry consecutive faults; excluded from everything."""

    VOID = 0
    INIT = 1
    RUN = 2
    RESET = 3
    DONE = 4
    ERROR = 5


class BaseEnvTimestep(NamedTuple):
    """One env's step result. done = terminated or truncated; info also holds both flags, and
    after a fault `abnormal=True` with `fault` (recovered) or `error` (given up)."""

    obs: Any
    reward: Any
    done: bool
    info: dict[str, Any]
