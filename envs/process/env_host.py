"""One Gymnasium env and the commands an env manager sends it: reset, step (with the auto-reset
folded in, saving a round trip), close. Run inside a worker process, or in-process by
BaseEnvManager. Observations of the shared-memory shape go into `obs_slots` (slot 0: the step's,
slot 1: the auto-reset's) and travel as the marker IN_SHM; the rest are returned as they are."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

IN_SHM = "__in_shared_memory__"


class EnvHost:
    def __init__(self, env: gym.Env):
        self.env = env
        self.obs_slots: np.ndarray | None = None

    def _out(self, obs: Any, slot: int) -> Any:
        slots = self.obs_slots
        if slots is not None and type(obs) is np.ndarray and obs.shape == slots.shape[1:] and obs.dtype == slots.dtype:
            slots[slot] = obs
            return IN_SHM
        return obs

    def reset(self, kwargs: dict[str, Any]) -> tuple[Any, dict]:
        obs, info = self.env.reset(**kwargs)
        return self._out(obs, 1), info

    def step(self, action: Any, auto_reset: dict[str, Any] | None) -> tuple:
        """(obs, reward, terminated, truncated, info, reset) where reset is the (obs, info) of the
        auto-reset done when the episode ended and auto_reset (its reset kwargs) is not None."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs = self._out(obs, 0)
        reset = None
        if (terminated or truncated) and auto_reset is not None:
            reset = self.reset(auto_reset)
        return obs, float(reward), bool(terminated), bool(truncated), info, reset

    def close(self) -> None:
        self.env.close()
