"""MuJoCo Playground's envs (`playground/CartpoleBalance`, `playground/CheetahRun`, ...; the
`playground` package, module `mujoco_playground`) as RawJaxEnvs, over `registry.load(name)`
unwrapped: `reset(rng)` / `step(state, action)` (MJX).

Not Playground's training wrappers (`wrap_for_brax_training`): their auto-reset restores each
env's first state and their episode wrapper folds the time limit into `done`. Here `done` is a
true end and our JaxEnv truncates at the env's `episode_length` (its config's; 1000 for the DM
Control suite). Observations are a Box, or a Dict of Boxes where the env gives a dict (e.g.
`state`, `privileged_state`); actions Box(-1, 1). kwargs: overrides of the env's config (e.g.
`episode_length=500`, `ctrl_dt=0.02`).

Warp (MJX's engine here) says its lines through the logger `warp` (`warp_output_to_logging`), not
print: its greeting and a line per kernel module it loads are INFO records, which an entry point
keeps off the terminal (sebulba/experiment/run_log.py). Its kernels' own printf ("solver
iterations limit reached") is native stdout, which the entry points read into their log too.
"""

from __future__ import annotations

import logging
from typing import Any

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np

from envs.jax.gymnax import check_kwargs
from envs.mujoco.log import route_warnings
from envs.native_stderr import captured_stderr


WARP_LOG = logging.getLogger("warp")


class _WarpLog:
    """Warp's logger protocol (`warp.set_logger`) over Python's logging; `held`: a list that keeps
    the messages instead, while Warp starts."""

    def __init__(self) -> None:
        self.held: list[tuple[int, str]] | None = None

    def _say(self, level: int, message: str) -> None:
        if self.held is not None:
            self.held.append((level, message))
        else:
            WARP_LOG.log(level, message)

    def debug(self, message: str) -> None:
        self._say(logging.DEBUG, message)

    def info(self, message: str) -> None:
        self._say(logging.INFO, message)

    def warning(self, message: str, category: Any = None, stacklevel: int = 1) -> None:
        self._say(logging.WARNING, message)

    def error(self, message: str) -> None:
        self._say(logging.ERROR, message)


def warp_output_to_logging() -> None:
    """Warp's lines as records of the logger `warp`, and Warp started: its native start-up line
    (no CUDA driver found, on a host without one) an INFO record too. Idempotent."""
    try:
        import warp
    except ImportError:  # a Playground installed without Warp: its MJX runs on JAX alone
        return
    if isinstance(warp.get_logger(), _WarpLog):
        return
    logger, native = _WarpLog(), []
    logger.held = []
    warp.set_logger(logger)
    try:
        with captured_stderr(native):
            warp.init()
    finally:
        held, logger.held = logger.held, None
        for line in native:
            WARP_LOG.info(line)
        for level, message in held:
            WARP_LOG.log(level, message)


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
        warp_output_to_logging()
        route_warnings()  # the models' MuJoCo warnings into the log, no MUJOCO_LOG.TXT
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
