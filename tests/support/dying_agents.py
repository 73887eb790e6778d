"""A PettingZoo ParallelEnv whose agents leave one by one: agent i terminates on step i + 1 (and
leaves `env.agents`, as PettingZoo defines it), so the pool's rows of gone players are checked
at known steps. Observation of agent i after step t: [t, i]; its reward on step t: 10 * i + t.
Run by the pool as `pettingzoo/tests.support/dying_agents`."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv


class DyingAgents(ParallelEnv):
    metadata = {"name": "dying_agents_v0"}

    def __init__(self, num_agents: int = 3):
        self.possible_agents = [f"agent_{i}" for i in range(num_agents)]
        self.agents: list[str] = []
        self._t = 0

    def observation_space(self, agent: str) -> gym.spaces.Space:
        return gym.spaces.Box(0, 100, (2,), np.float32)

    def action_space(self, agent: str) -> gym.spaces.Space:
        return gym.spaces.Discrete(3)

    def _obs(self, i: int) -> np.ndarray:
        return np.array([self._t, i], np.float32)

    def reset(self, seed=None, options=None):
        self.agents, self._t = list(self.possible_agents), 0
        return {a: self._obs(i) for i, a in enumerate(self.possible_agents)}, {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents), (actions, self.agents)  # PettingZoo: actions of live agents only
        self._t += 1
        index = {a: self.possible_agents.index(a) for a in self.agents}
        obs = {a: self._obs(i) for a, i in index.items()}
        rewards = {a: float(10 * i + self._t) for a, i in index.items()}
        terminations = {a: i + 1 == self._t for a, i in index.items()}
        truncations = {a: False for a in self.agents}
        infos = {a: {"action": int(actions[a])} for a in self.agents}
        self.agents = [a for a in self.agents if not terminations[a]]
        return obs, rewards, terminations, truncations, infos


def parallel_env(**kwargs) -> DyingAgents:
    return DyingAgents(**kwargs)
