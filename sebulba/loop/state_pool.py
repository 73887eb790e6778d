"""StatePool: a JAX env's batch stepped from the host as a sync pool is (`reset()`, `step(action)`
with `envs.make`'s returns), whose envs' own states are at hand (`state`): what evaluation plays on
when a player needs them, an agent that plans with the env (`Agent.plans_with_env`: AlphaZero)
or the pure-MCTS opponent (`sebulba.loop.mcts_player`). Its envs are the pool's of the same id
and seed (`JaxEnv.reset_as_pool`), with the pool's contract (auto-reset, rows per player)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np

import envs
from envs.jax.backend import render_states
from envs.jax.registry import make_jax_env


class StatePool:
    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None, num_envs: int, seed: int):
        kwargs = {k: v for k, v in dict(env_kwargs or {}).items() if k not in ("render_mode", "num_threads")}
        self.spec = envs.make_spec(env_id, **kwargs)
        self.env = make_jax_env(env_id, kwargs.pop("max_episode_steps", None), **kwargs)
        self.num_envs, self.seed = num_envs, seed
        self.num_players = self.env.num_players
        self.observation_space, self.action_space = self.env.observation_space, self.env.action_space
        self._step = jax.jit(self.env.step)
        self._lanes = None

    @property
    def state(self) -> Any:
        """The envs' raw states [num_envs, ...] (on the device), after the last reset or step."""
        return self._lanes.state

    def _out(self, step: Any) -> tuple:
        obs, reward, terminated, truncated = jax.device_get((step.obs, step.reward, step.terminated, step.truncated))
        elapsed = np.repeat(np.asarray(self._lanes.elapsed), self.num_players)
        return obs, reward, terminated, truncated, {"elapsed_step": elapsed}

    def reset(self) -> tuple[Any, dict]:
        self._lanes, step = self.env.reset_as_pool(self.seed, self.num_envs)
        obs, *_, info = self._out(step)
        return obs, info

    def step(self, action: np.ndarray) -> tuple:
        self._lanes, step = self._step(self._lanes, action)
        return self._out(step)

    def render(self, env_ids: Any = None) -> np.ndarray:
        """Frames (k, H, W, 3) uint8 of envs env_ids (default env 0), as the pool's `render`: a raw
        env that draws them (its `render(state)`; pgx's boards)."""
        if not callable(getattr(self.env.raw, "render", None)):
            raise ValueError(f"{self.env.task_id} draws no frames (of the JAX-native envs, pgx's connect four, "
                             "tic-tac-toe and othello do)")
        ids = np.zeros(1, np.int32) if env_ids is None else np.atleast_1d(np.asarray(env_ids))
        return render_states(self.env.raw, jax.device_get(self.state), ids)

    def close(self) -> None:
        self._lanes = None
