"""Base class of the built-in tasks: a whole batch of envs stepped as numpy arrays.

A task holds the physical state of all `num_envs` envs. `step` and `reset` take `idx`, either
`slice(None)` (every env, no gather) or an int array of env ids, so the sync path never pays
for fancy indexing.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import gymnasium as gym
import numpy as np

Index = slice | np.ndarray

RESETS_BUFFERED = 64


class ResetNoise:
    """Per-env uniform draws, env i seeded with seed + i, identical to Gymnasium's `np_random`.

    Gymnasium draws `low + (high - low) * next_double` from `default_rng(seed + i)`. Drawing
    ahead in blocks consumes the same stream in the same order, so a vectorized reset of any
    subset of envs sees exactly the numbers the reference env would.
    """

    def __init__(self, num_envs: int, seed: int, draws_per_reset: int):
        self._k = draws_per_reset
        self._rngs = [np.random.default_rng(seed + i) for i in range(num_envs)]
        self._buf = np.empty((num_envs, RESETS_BUFFERED, draws_per_reset))
        self._pos = np.zeros(num_envs, np.int64)
        for i in range(num_envs):
            self._refill(i)

    def _refill(self, i: int) -> None:
        self._buf[i] = self._rngs[i].random(RESETS_BUFFERED * self._k).reshape(RESETS_BUFFERED, self._k)
        self._pos[i] = 0

    def reseed(self, seeds: dict[int, int]) -> None:
        """Env i's stream becomes default_rng(seeds[i]), as Gymnasium's reset(seed=seeds[i])."""
        for i, seed in seeds.items():
            self._rngs[i] = np.random.default_rng(seed)
            self._refill(i)

    def uniform(self, ids: np.ndarray, low: np.ndarray | float, high: np.ndarray | float) -> np.ndarray:
        """One reset's draws for each env in ids, shape (len(ids), draws_per_reset)."""
        pos = self._pos[ids]
        if np.count_nonzero(pos == RESETS_BUFFERED):
            for i in ids[pos == RESETS_BUFFERED].tolist():
                self._refill(i)
            pos = self._pos[ids]
        u = self._buf[ids, pos]
        self._pos[ids] = pos + 1
        return low + (high - low) * u  # numpy's own formula for uniform(low, high)


class NativeTask(abc.ABC):
    """A vectorized classic-control task. Subclasses match one Gymnasium reference env."""

    task_id: ClassVar[str]
    max_episode_steps: ClassVar[int]
    draws_per_reset: ClassVar[int]
    reference_entry_point: ClassVar[str]  # the Gymnasium env these dynamics reproduce

    state_rows: ClassVar[int]  # the reference's state variables, one row each in `self.state`

    def __init__(self, num_envs: int, seed: int):
        self.num_envs = num_envs
        self.noise = ResetNoise(num_envs, seed, self.draws_per_reset)
        self.state = np.zeros((self.state_rows, num_envs))  # float64, as the references

    @staticmethod
    @abc.abstractmethod
    def observation_space() -> gym.spaces.Box: ...

    @staticmethod
    @abc.abstractmethod
    def action_space() -> gym.spaces.Space: ...

    @abc.abstractmethod
    def reset(self, ids: np.ndarray) -> None:
        """Draw fresh initial states for the envs in ids."""

    @abc.abstractmethod
    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Advance the envs in idx; returns (reward float32, terminated bool)."""

    def observe(self, idx: Index) -> np.ndarray:
        """Observations of the envs in idx (default: the state itself, as float32 rows)."""
        return self.state[:, idx].T.astype(np.float32, order="C")

    def get_state(self, i: int) -> np.ndarray:
        """Env i's state in the layout of the reference env's `state` attribute (for tests)."""
        return self.state[:, i].copy()

    def set_state(self, i: int, state: np.ndarray) -> None:
        """Overwrite env i's state (for step-for-step tests against the reference)."""
        self.state[:, i] = state
