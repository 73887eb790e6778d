"""Navix's envs (`navix/Navix-Empty-5x5-v0`, `navix/Navix-DoorKey-8x8-v0`, ...) as RawJaxEnvs, over
`navix.make(id)`'s `reset(key)` and its un-reset step `_step(timestep, action)` (its public `step`
resets on the same call that follows an end, with the key in its state).

Its Timestep's step_type is 2 on termination and 1 on truncation (`t >= max_steps`, navix's own
limit, 100 steps unless `max_steps` is given), so `max_episode_steps` is None unless set.
Observations: navix's categorical and symbolic grids as Box of ints (0..n-1), kept as navix gives
them (the torsos flatten them; a symbolic [H, W, 3] grid made channel-first would read as an
image), its RGB ones (0..255) as channel-first uint8 images. kwargs: `navix.make`'s (e.g. `max_steps`, `observation_fn`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.gymnax import channel_first


def ids() -> list[str]:
    import navix

    return sorted(navix.registry())


def _space(space: Any, leaf: jax.ShapeDtypeStruct) -> tuple[gym.spaces.Box, bool]:
    """(the Gymnasium space, whether observations are RGB images to make channel-first)."""
    dtype, shape = np.dtype(leaf.dtype), tuple(leaf.shape)
    low = np.broadcast_to(np.asarray(space.minimum), shape).astype(dtype)
    high = np.broadcast_to(np.asarray(space.maximum), shape).astype(dtype)
    rgb = len(shape) == 3 and shape[-1] == 3 and int(np.max(high)) == 255
    if rgb:
        low, high = low.transpose(2, 0, 1), high.transpose(2, 0, 1)
    return gym.spaces.Box(low, high, low.shape, dtype), rgb


class NavixEnv:
    """A RawJaxEnv over one navix env: state = its Timestep (which holds its state and key)."""

    def __init__(self, name: str, **kwargs: Any):
        import navix

        self.task_id = f"navix/{name}"
        try:
            self.env = navix.make(name, **kwargs)
        except TypeError as e:
            raise ValueError(f"bad kwarg(s) for {self.task_id}: {e}") from None
        self.max_episode_steps = None
        obs = jax.eval_shape(self.env.reset, jax.random.key_data(jax.random.key(0))).observation
        self.observation_space, self._rgb = _space(self.env.observation_space, obs)
        self.action_space = gym.spaces.Discrete(int(self.env.action_space.n))

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        ts = self.env.reset(jax.random.key_data(key))
        return ts, self._obs(ts.observation)

    def _obs(self, obs: jax.Array) -> jax.Array:
        return channel_first(obs) if self._rgb else obs

    def step(self, state: Any, action: jax.Array):
        ts = self.env._step(state, jnp.asarray(action, jnp.int32))
        return ts, self._obs(ts.observation), jnp.asarray(ts.reward, jnp.float32), ts.step_type == 2, ts.step_type == 1


make = NavixEnv
