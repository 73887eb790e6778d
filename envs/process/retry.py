"""Recovery settings of env workers, shared by the env pool's process backend and the env managers."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

RETRY_TYPES = ("reset", "renew")


def _number(name: str, value: Any, allow_none: bool, minimum: float, strict: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{name} must be a number{' or None' if allow_none else ''}, got {value!r}")
    if value < minimum or (strict and value == minimum):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum}, got {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class RetryConfig:
    """How faults of an env worker (death, hang, exception) are survived.

    max_retry: consecutive faults an env (pool: a worker) may have, counted since its last
    successful step, before it is given up (manager: state ERROR; pool: WorkerError).
    retry_type: "renew" respawns the worker (fresh env from its factory); "reset" resets the env in
    place after an exception (a dead or hung worker is always renewed).
    step_timeout / reset_timeout: seconds a worker may take to answer (None: wait forever).
    retry_waiting_time: seconds to wait before a retry. connect_timeout: seconds for a worker to start.
    """

    max_retry: int = 1
    retry_type: str = "reset"
    step_timeout: float | None = None
    reset_timeout: float | None = None
    retry_waiting_time: float = 0.0
    connect_timeout: float = 120.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retry, bool) or not isinstance(self.max_retry, int) or self.max_retry < 0:
            raise ValueError(f"max_retry must be an int >= 0, got {self.max_retry!r}")
        if self.retry_type not in RETRY_TYPES:
            raise ValueError(f"retry_type must be one of {RETRY_TYPES}, got {self.retry_type!r}")
        _number("step_timeout", self.step_timeout, True, 0, strict=True)
        _number("reset_timeout", self.reset_timeout, True, 0, strict=True)
        _number("retry_waiting_time", self.retry_waiting_time, False, 0)
        _number("connect_timeout", self.connect_timeout, False, 0, strict=True)
