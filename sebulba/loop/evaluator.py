"""Evaluation episodes: an agent's evaluation policy (`Agent.evaluation_step`) playing complete
episodes on an env pool of its own, never the training envs (whose episodes must not be cut).

Each of the pool's N envs plays its share of the K episodes (env i plays (K + i) // N, as SB3's
`evaluate_policy`), so short episodes are not over-represented when N > 1. An episode that hits
the task's `max_episode_steps` counts as finished (truncated): an evaluation always ends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np

import envs
from sebulba.agent import Agent
from sebulba.types import EnvStep


@dataclasses.dataclass(frozen=True)
class EvalResult:
    returns: np.ndarray  # float64 [K], in the order the episodes finished
    lengths: np.ndarray  # int64 [K]

    def summary(self) -> dict[str, float]:
        r, n = self.returns, self.lengths
        return {"eval_return_mean": float(r.mean()), "eval_return_std": float(r.std()),
                "eval_return_min": float(r.min()), "eval_return_max": float(r.max()),
                "eval_length_mean": float(n.mean()), "eval_episodes": float(len(r))}


# on_step(obs, reward, terminated, truncated, episode_returns_so_far): after every pool step
StepCallback = Callable[[Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]


class Evaluator:
    """Plays evaluation episodes with `agent` on a sync pool of `num_envs` envs of `env_id`."""

    def __init__(self, agent: Agent, env_id: str, env_kwargs: Mapping[str, Any] | None = None, num_envs: int = 1,
                 seed: int = 0, greedy: bool = True, device: jax.Device | None = None):
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.agent = agent
        self.num_envs = num_envs
        self.device = device or jax.local_devices()[0]
        kwargs = {k: v for k, v in dict(env_kwargs or {}).items() if k not in ("num_envs", "batch_size", "seed")}
        self.pool = envs.make(env_id, num_envs=num_envs, seed=seed, **kwargs)
        policy = agent.evaluation_step if greedy else agent.step

        def act(networks, step_state, env_step):
            out, step_state = policy(networks, step_state, env_step)
            return agent.as_actor_output(out).action, step_state

        self._act = jax.jit(act)

    def run(self, networks: Any, episodes: int, key: jax.Array, on_step: StepCallback | None = None) -> EvalResult:
        """`episodes` complete episodes (a fresh reset of every env first) with these networks."""
        if not isinstance(episodes, int) or episodes < 1:
            raise ValueError(f"episodes must be a positive int, got {episodes!r}")
        n = self.num_envs
        targets = np.array([(episodes + i) // n for i in range(n)])
        with jax.default_device(self.device):
            networks = jax.device_put(networks, self.device)
            step_state = self.agent.init_step_state(networks, n, key)
            obs, info = self.pool.reset()
            reward, terminated, truncated = np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool)
            first = info["elapsed_step"] == 0
            running, length, counts = np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64)
            returns, lengths = [], []
            while (counts < targets).any():
                env_step = EnvStep(obs, reward, terminated, truncated, first)
                action, step_state = self._act(networks, step_state, env_step)
                obs, reward, terminated, truncated, info = self.pool.step(np.asarray(action))
                first = info["elapsed_step"] == 0
                running = np.where(first, 0.0, running + reward)
                length = np.where(first, 0, length + 1)
                done = terminated | truncated
                for i in np.flatnonzero(done & (counts < targets)):
                    returns.append(running[i])
                    lengths.append(length[i])
                    counts[i] += 1
                if on_step is not None:
                    on_step(obs, reward, terminated, truncated, running)
        return EvalResult(np.asarray(returns, np.float64), np.asarray(lengths, np.int64))

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
