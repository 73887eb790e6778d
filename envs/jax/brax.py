"""Brax's envs (`brax/ant`, `brax/halfcheetah`, `brax/humanoid`, ...) as RawJaxEnvs, over
`brax.envs.get_environment(name, **kwargs)` unwrapped: `reset(rng)` / `step(state, action)`.

Not brax's `create(auto_reset=True)` training wrappers: its AutoResetWrapper restores each env's
first state, and its EpisodeWrapper folds the time limit into `done`. Here `done` is a true end
(an unhealthy ant) and our JaxEnv truncates at `max_episode_steps`, 1000 by default (brax's own
training episode length). Observations are Box vectors, actions Box(-1, 1). kwargs: the env's
constructor arguments (e.g. `backend="mjx"`, `ctrl_cost_weight`).
"""

from __future__ import annotations

import inspect
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.gymnax import check_kwargs
from envs.mujoco.log import route_warnings

EPISODE_LENGTH = 1000


def ids() -> list[str]:
    from brax import envs

    return sorted(envs._envs)


class BraxEnv:
    """A RawJaxEnv over one brax env: state = brax's State (pipeline state, obs, reward, done, ...)."""

    def __init__(self, name: str, **kwargs: Any):
        from brax import envs

        self.task_id = f"brax/{name}"
        route_warnings()  # the models' MuJoCo warnings into the log, no MUJOCO_LOG.TXT
        params = inspect.signature(envs._envs[name]).parameters
        check_kwargs(self.task_id, kwargs, [p for p, v in params.items() if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY)])
        self.env = envs.get_environment(name, **kwargs)
        self.max_episode_steps = EPISODE_LENGTH
        obs = jax.eval_shape(self.reset, jax.random.key(0))[1]
        if not isinstance(obs, jax.ShapeDtypeStruct):
            raise ValueError(f"{self.task_id}: structured observations are not supported")
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, obs.shape, np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (int(self.env.action_size),), np.float32)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        state = self.env.reset(jax.random.key_data(key))
        return state, state.obs.astype(jnp.float32)

    def step(self, state: Any, action: jax.Array):
        state = self.env.step(state, jnp.asarray(action, jnp.float32))
        return state, state.obs.astype(jnp.float32), jnp.asarray(state.reward, jnp.float32), state.done > 0, jnp.bool_(False)


make = BraxEnv
