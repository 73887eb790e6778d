"""XLand-MiniGrid's envs (`xminigrid/MiniGrid-Empty-8x8`, `xminigrid/XLand-MiniGrid-R1-9x9`, ...)
as RawJaxEnvs, over `xminigrid.make(id)`'s `reset(params, key)` / `step(params, timestep, action)`
(dm_env-style TimeSteps, no auto-reset).

A LAST TimeStep with discount 0 is terminated, with discount > 0 truncated: xminigrid ends an
episode at its own `max_steps` with discount 1, so `max_episode_steps` is None unless set.
Observations are its symbolic view, a uint8 grid [H, W, 2] (tile, colour per cell), presented
channel-first [2, H, W] as the pool presents images (`channel_last`: JaxEnv moves it), so the
automatic torso convolves it (a small CNN for grids under 36x36, sebulba/networks.py). kwargs: its
`EnvParams` fields (e.g. `max_steps`, `view_size`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.gymnax import check_kwargs


def ids() -> list[str]:
    import xminigrid

    return list(xminigrid.registered_environments())


class XMiniGridEnv:
    """A RawJaxEnv over one xminigrid env: state = its TimeStep (which holds its state and key)."""

    channel_last = True  # its [H, W, 2] view

    def __init__(self, name: str, **kwargs: Any):
        import xminigrid

        self.task_id = f"xminigrid/{name}"
        self.env, default = xminigrid.make(name)
        check_kwargs(self.task_id, kwargs, [f.name for f in dataclasses.fields(default)])
        self.params = default.replace(**kwargs) if kwargs else default
        self.max_episode_steps = None
        ts = jax.eval_shape(self.reset, jax.random.key(0))[1]
        dtype = np.dtype(ts.dtype)
        info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else np.finfo(dtype)
        self.observation_space = gym.spaces.Box(info.min, info.max, ts.shape, dtype)
        self.action_space = gym.spaces.Discrete(int(self.env.num_actions(self.params)))

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        ts = self.env.reset(self.params, jax.random.key_data(key))
        return ts, ts.observation

    def step(self, state: Any, action: jax.Array):
        ts = self.env.step(self.params, state, jnp.asarray(action, jnp.int32))
        last = ts.step_type == 2  # dm_env's StepType.LAST
        ended = ts.discount == 0
        return ts, ts.observation, jnp.asarray(ts.reward, jnp.float32), last & ended, last & ~ended


make = XMiniGridEnv
