"""MetricsWindow: a process's per-iteration figures aggregated into one report per logging
interval, and its recent episode statistics, which carry over runs and checkpoints."""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np


class MetricsWindow:
    """Aggregates per-iteration figures into one report per logging interval."""

    def __init__(self, recent_episodes: int = 20):
        self.returns: deque[float] = deque(maxlen=recent_episodes)
        self.lengths: deque[int] = deque(maxlen=recent_episodes)
        self.episodes = 0
        self._reset(time.perf_counter(), 0, 0)

    def restart(self, env_steps: int, learner_steps: int) -> None:
        """A new run's first interval starts now, at these counters."""
        self._reset(time.perf_counter(), env_steps, learner_steps)

    def state(self) -> dict[str, np.ndarray]:
        """The episode statistics as fixed-shape arrays (what a checkpoint saves per process)."""
        n = self.returns.maxlen
        returns, lengths = np.zeros(n, np.float64), np.zeros(n, np.int64)
        returns[:len(self.returns)] = list(self.returns)
        lengths[:len(self.lengths)] = list(self.lengths)
        return {"returns": returns, "lengths": lengths, "recent": np.int64(len(self.returns)),
                "episodes": np.int64(self.episodes)}

    def load(self, state: dict[str, Any]) -> None:
        """Episode statistics saved by `state()`."""
        recent = int(state["recent"])
        self.returns.clear()
        self.lengths.clear()
        self.returns.extend(float(r) for r in np.asarray(state["returns"])[:recent])
        self.lengths.extend(int(n) for n in np.asarray(state["lengths"])[:recent])
        self.episodes = int(state["episodes"])

    def _reset(self, now: float, env_steps: int, learner_steps: int) -> None:
        self.start, self.env_steps0, self.learner_steps0 = now, env_steps, learner_steps
        self.learner_wait = self.lag_sum = 0.0
        self.iterations = 0
        self.actor_wait0 = None

    def due(self, every_s: float) -> bool:
        """Whether the logging interval has closed."""
        return time.perf_counter() - self.start >= every_s

    def add(self, ctx: Any) -> None:
        r = ctx.result
        self.returns.extend(r.episode_returns.tolist())
        self.lengths.extend(r.episode_lengths.tolist())
        self.episodes += len(r.episode_returns)
        self.learner_wait += ctx.fetch_wait_s
        self.lag_sum += ctx.policy_lag
        self.iterations += 1

    def report(self, ctx: Any, actor_wait_s: float, num_actors: int) -> dict[str, float]:
        now = time.perf_counter()
        dt = max(now - self.start, 1e-9)
        actor_wait = (actor_wait_s - (self.actor_wait0 or 0.0)) / max(num_actors, 1)
        out = {
            "env_steps": ctx.env_steps,
            "learner_steps": ctx.learner_steps,
            "episodes": self.episodes,
            "sps": (ctx.env_steps - self.env_steps0) / dt,
            "updates_per_s": (ctx.learner_steps - self.learner_steps0) / dt,
            "policy_lag": self.lag_sum / max(self.iterations, 1),
            "learner_wait_frac": self.learner_wait / dt,
            "actor_wait_frac": actor_wait / dt,
            "episode_return_mean": float(np.mean(self.returns)) if self.returns else float("nan"),
            "episode_length_mean": float(np.mean(self.lengths)) if self.lengths else float("nan"),
        }
        out.update({k: float(v) for k, v in ctx.train_metrics.items()})
        self._reset(now, ctx.env_steps, ctx.learner_steps)
        self.actor_wait0 = actor_wait_s
        return out
