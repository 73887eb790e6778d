"""MuJoCo Playground's envs (`playground/CartpoleBalance`, `playground/CheetahRun`, ...; the
`playground` package, module `mujoco_playground`) as RawJaxEnvs, over `registry.load(name)`
unwrapped: `reset(rng)` / `step(state, action)` (MJX).

Not Playground's training wrappers (`wrap_for_brax_training`): their auto-reset restores each
env's first state and their episode wrapper folds the time limit into `done`. Here `done` is a
true end and our JaxEnv truncates at the env's `episode_length` (its config's; 1000 for the DM
Control suite). Observations are a Box, or a Dict of Boxes where the env gives a dict (e.g.
`state`, `privileged_state`); actions Box(-1, 1). kwargs: overrides of the env's config (e.g.
`episode_length=500`, `ctrl_dt=0.02`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.gymnax import check_kwargs


def ids() -> list[str]:
    from mujoco_playground import registry

    return sorted(registry.ALL_ENVS)


def _space(leaf: Any) -> gym.spaces.Space:
    if isinstance(leaf, dict):
        return gym.spaces.Dict({k: _space(v) for k, v in leaf.items()})
    return gym.spaces.Box(-np.inf, np.inf, tuple(leaf.shape), np.float32)


class PlaygroundEnv:
    """A RawJaxEnv over one Playground env: state = its State (MJX data, obs, reward, done, ...)."""

    def __init__(self, name: str, **kwargs: Any):
        from mujoco_playground import registry

        self.task_id = f"playground/{name}"
        config = registry.get_default_config(name)
        check_kwargs(self.task_id, kwargs, list(config.keys()))
        self.env = registry.load(name, config_overrides=kwargs or None)
        self.max_episode_steps = int(kwargs.get("episode_length", config.episode_length))
        obs = jax.eval_shape(self.reset, jax.random.key(0))[1]
        self.observation_space = _space(obs)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (int(self.env.action_size),), np.float32)

    def reset(self, key: jax.Array) -> tuple[Any, Any]:
        state = self.env.reset(jax.random.key_data(key))
        return state, jax.tree.map(lambda x: x.astype(jnp.float32), state.obs)

    def step(self, state: Any, action: jax.Array):
        state = self.env.step(state, jnp.asarray(action, jnp.float32))
        obs = jax.tree.map(lambda x: x.astype(jnp.float32), state.obs)
        return state, obs, jnp.asarray(state.reward, jnp.float32), state.done > 0, jnp.bool_(False)


make = PlaygroundEnv
