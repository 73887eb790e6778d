"""The cfg dict of an env manager, validated: unknown keys and bad values raise ValueError
naming the key."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from envs.process.retry import RetryConfig


@dataclasses.dataclass(frozen=True)
class ManagerConfig:
    auto_reset: bool = True
    episode_num: float = math.inf  # episodes per env before it stays DONE
    max_retry: int = 1
    retry_type: str = "reset"
    step_timeout: float | None = 60.0
    reset_timeout: float | None = 60.0
    retry_waiting_time: float = 0.1
    connect_timeout: float = 60.0
    shared_memory: bool = True
    shared_memory_threshold: int = 32 * 1024  # observation bytes from which shared memory is used
    # AsyncSubprocessEnvManager only: step() returns once wait_num envs answered, or
    # step_wait_timeout seconds after the first answer.
    wait_num: float = math.inf
    step_wait_timeout: float = 0.01

    @property
    def retry(self) -> RetryConfig:
        return RetryConfig(
            self.max_retry, self.retry_type, self.step_timeout, self.reset_timeout,
            self.retry_waiting_time, self.connect_timeout,
        )

    @classmethod
    def from_cfg(cls, cfg: Mapping[str, Any] | None, manager: str, async_keys: bool) -> ManagerConfig:
        cfg = {} if cfg is None else cfg
        if not isinstance(cfg, Mapping):
            raise ValueError(f"cfg must be a dict of {manager} settings, got {type(cfg).__name__}")
        allowed = {f.name for f in dataclasses.fields(cls)}
        if not async_keys:
            allowed -= {"wait_num", "step_wait_timeout"}
        unknown = sorted(set(cfg) - allowed)
        if unknown:
            raise ValueError(f"unknown {manager} cfg key(s) {unknown}; accepted keys are {sorted(allowed)}")
        out = cls(**cfg)
        out._validate()
        return out

    def _validate(self) -> None:
        for name in ("auto_reset", "shared_memory"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name in ("episode_num", "wait_num"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 1 or (v != math.inf and v != int(v)):
                raise ValueError(f"{name} must be an int >= 1 or math.inf, got {v!r}")
        t = self.shared_memory_threshold
        if isinstance(t, bool) or not isinstance(t, int) or t < 0:
            raise ValueError(f"shared_memory_threshold must be an int >= 0 (bytes), got {t!r}")
        if isinstance(self.step_wait_timeout, bool) or not isinstance(self.step_wait_timeout, (int, float)) or not self.step_wait_timeout >= 0:
            raise ValueError(f"step_wait_timeout must be a number >= 0, got {self.step_wait_timeout!r}")
        _ = self.retry  # validates max_retry, retry_type, the timeouts and retry_waiting_time
