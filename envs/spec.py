"""EnvSpec: a pool's spaces and config without building the pool (`envs.make_spec`)."""

from __future__ import annotations

from typing import Any

import dm_env
import gymnasium as gym
import numpy as np
from dm_env import specs

from envs.config import PoolConfig


def space_to_dm_spec(space: gym.spaces.Space, name: str) -> specs.Array:
    """The dm_env spec of one env's Gymnasium space."""
    if isinstance(space, gym.spaces.Discrete):
        return specs.DiscreteArray(int(space.n), dtype=space.dtype, name=name)
    if isinstance(space, gym.spaces.Box):
        return specs.BoundedArray(space.shape, space.dtype, space.low, space.high, name=name)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return specs.BoundedArray(space.shape, space.dtype, 0, space.nvec - 1, name=name)
    if isinstance(space, gym.spaces.MultiBinary):
        return specs.BoundedArray(space.shape, space.dtype, 0, 1, name=name)
    raise ValueError(f"no dm_env spec for space {space}")


class EnvSpec:
    """What `make_spec` returns: the single env's spaces (channel-first) and the pool config."""

    def __init__(self, config: PoolConfig, observation_space: gym.spaces.Space, action_space: gym.spaces.Space):
        self._config = config
        self.observation_space = observation_space
        self.action_space = action_space

    @property
    def config(self) -> dict[str, Any]:
        return self._config.as_dict()

    @property
    def pool_config(self) -> PoolConfig:
        return self._config

    def observation_spec(self) -> specs.Array:
        return space_to_dm_spec(self.observation_space, "obs")

    def action_spec(self) -> specs.Array:
        return space_to_dm_spec(self.action_space, "action")

    def reward_spec(self) -> specs.Array:
        return specs.Array((), np.float32, name="reward")

    def discount_spec(self) -> specs.BoundedArray:
        return specs.BoundedArray((), np.float32, 0.0, 1.0, name="discount")

    def __repr__(self) -> str:
        return f"EnvSpec({self._config.task_id!r}, obs={self.observation_space}, action={self.action_space})"


__all__ = ["EnvSpec", "dm_env", "space_to_dm_spec"]
