"""Navix's envs (`navix/Navix-Empty-5x5-v0`, `navix/Navix-DoorKey-8x8-v0`, ...) as RawJaxEnvs, over
`navix.make(id)`'s `reset(key)` and its un-reset step `_step(timestep, action)` (its public `step`
resets on the same call that follows an end, with the key in its state).

Its Timestep's step_type is 2 on termination and 1 on truncation (`t >= max_steps`, navix's own
limit, 100 steps unless `max_steps` is given), so `max_episode_steps` is None unless set.
Observations: navix's grids as Box of ints over their dtype's range (`_space`); the rank-3 ones (its symbolic
[H, W, 3] views, the default, and its RGB images) channel-first [C, H, W] as the pool presents
images (`channel_last`: JaxEnv moves them), so the automatic torso convolves them; its categorical
[H, W] grids are kept. kwargs: `navix.make`'s (e.g. `max_steps`, `observation_fn`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np


def ids() -> list[str]:
    import navix

    return sorted(navix.registry())


def _space(space: Any, leaf: jax.ShapeDtypeStruct) -> gym.spaces.Box:
    """The Gymnasium space of navix's, with the shape and dtype navix returns; integer grids span
    their dtype (navix 0.7.4 declares its symbolic views 0..8, and its tags reach 10: lava's is 9,
    the player's 10)."""
    dtype, shape = np.dtype(leaf.dtype), tuple(leaf.shape)
    if np.issubdtype(dtype, np.integer):
        return gym.spaces.Box(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, dtype)
    low = np.broadcast_to(np.asarray(space.minimum), shape).astype(dtype)
    high = np.broadcast_to(np.asarray(space.maximum), shape).astype(dtype)
    return gym.spaces.Box(low, high, shape, dtype)


class NavixEnv:
    """A RawJaxEnv over one navix env: state = its Timestep (which holds its state and key)."""

    channel_last = True  # its symbolic and RGB views [H, W, C]

    def __init__(self, name: str, **kwargs: Any):
        import navix

        self.task_id = f"navix/{name}"
        try:
            self.env = navix.make(name, **kwargs)
        except TypeError as e:
            raise ValueError(f"bad kwarg(s) for {self.task_id}: {e}") from None
        self.max_episode_steps = None
        obs = jax.eval_shape(self.env.reset, jax.random.key_data(jax.random.key(0))).observation
        self.observation_space = _space(self.env.observation_space, obs)
        self.action_space = gym.spaces.Discrete(int(self.env.action_space.n))

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        ts = self.env.reset(jax.random.key_data(key))
        return ts, ts.observation

    def step(self, state: Any, action: jax.Array):
        ts = self.env._step(state, jnp.asarray(action, jnp.int32))
        return ts, ts.observation, jnp.asarray(ts.reward, jnp.float32), ts.step_type == 2, ts.step_type == 1


make = NavixEnv
