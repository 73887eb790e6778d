"""gymnax's envs (`gymnax/CartPole-v1`, `gymnax/Breakout-MinAtar`, ...) as RawJaxEnvs: its
`reset_env`/`step_env`, which neither auto-reset nor truncate (our JaxEnv does both)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np


def _space(space: Any) -> gym.spaces.Space:
    """A gymnax space as the Gymnasium space of one env."""
    from gymnax.environments import spaces

    if isinstance(space, spaces.Discrete):
        return gym.spaces.Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        shape = tuple(space.shape)
        low = np.broadcast_to(np.asarray(space.low, np.float32), shape)
        high = np.broadcast_to(np.asarray(space.high, np.float32), shape)
        return gym.spaces.Box(low, high, shape, np.float32)
    raise ValueError(f"gymnax space {space} is not supported")


class GymnaxEnv:
    """A RawJaxEnv over one gymnax env: state = (gymnax state, key for its steps)."""

    def __init__(self, name: str, **params: Any):
        import gymnax

        self.task_id = f"gymnax/{name}"
        self.env, default = gymnax.make(name)
        self.params = default.replace(**params) if params else default
        self.max_episode_steps = int(self.params.max_steps_in_episode)
        # gymnax's is_terminal folds the time limit into `done`: our adapter truncates instead
        self._no_limit = self.params.replace(max_steps_in_episode=np.iinfo(np.int32).max)
        self.observation_space = _space(self.env.observation_space(self.params))
        self.action_space = _space(self.env.action_space(self.params))

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        key, now = jax.random.split(key)
        obs, state = self.env.reset_env(now, self.params)
        return (state, key), obs

    def step(self, state: Any, action: jax.Array):
        state, key = state
        key, now = jax.random.split(key)
        obs, state, reward, done, _ = self.env.step_env(now, state, action, self._no_limit)
        return (state, key), obs, jnp.asarray(reward, jnp.float32), jnp.asarray(done, bool), jnp.bool_(False)
