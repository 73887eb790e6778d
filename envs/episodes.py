"""EnvPool's auto-reset rule and episode counters, shared by every backend.

An env whose episode ended (terminated or truncated) is reset by its next step: that step
discards the action and returns the first observation with reward 0 and not-done. Reaching
max_episode_steps sets truncated, never terminated; a true termination on that same step
stays terminated and not truncated (its value is 0, which is what a learner needs to know).
"""

from __future__ import annotations

import functools

import numpy as np


class EpisodeBook:
    """Per-env elapsed steps and done flags. `idx` is slice(None) (all envs) or an id array."""

    def __init__(self, num_envs: int, max_episode_steps: int | None):
        self.max_episode_steps = max_episode_steps
        self.elapsed = np.zeros(num_envs, np.int32)
        self.done = np.ones(num_envs, bool)  # a fresh env resets on its first step

    def finish(
        self,
        idx: slice | np.ndarray,
        resets: np.ndarray | None,
        terminated: np.ndarray,
        env_truncated: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advance the counters after a step in which `resets` (mask over idx; None: none) reset.

        `terminated` must already be False where an env reset. `env_truncated` is a truncation
        the env itself reported (Gymnasium envs may have their own limits). Returns (terminated,
        truncated, elapsed) for the envs in idx.
        """
        rows = type(idx) is not slice  # an id array: take/put, twice as fast as indexing on a step's few envs
        elapsed = self.elapsed.take(idx) if rows else self.elapsed[idx].copy()
        elapsed += 1
        if resets is not None:
            elapsed[resets] = 0
        if self._limit is None:
            truncated = np.zeros(len(elapsed), bool)
        else:
            truncated = elapsed >= self._limit
        if env_truncated is not None:
            truncated |= env_truncated
        if np.count_nonzero(truncated):
            truncated &= ~terminated
            done = terminated | truncated
        else:
            done = terminated
        if rows:
            self.elapsed.put(idx, elapsed)
            self.done.put(idx, done)
        else:
            self.elapsed[idx] = elapsed
            self.done[idx] = done
        return terminated, truncated, elapsed

    @functools.cached_property
    def _limit(self) -> np.int32 | None:
        """max_episode_steps as elapsed's dtype (a comparison with a Python int costs twice as much)."""
        m = self.max_episode_steps
        return None if m is None else np.int32(min(m, np.iinfo(np.int32).max))

    def reset(self, idx: slice | np.ndarray) -> None:
        self.elapsed[idx] = 0
        self.done[idx] = False
