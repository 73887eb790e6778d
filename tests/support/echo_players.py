"""A PettingZoo ParallelEnv whose every agent sees the action it took last: observation of agent i
after a step: [its action, i, t] ([-1, i, 0] after a reset); episodes of `steps` steps
(truncated). Run by the pool as `pettingzoo/tests.support/echo_players`: a row's action that
reached another player shows in the next observation."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv


class EchoPlayers(ParallelEnv):
    metadata = {"name": "echo_players_v0"}

    def __init__(self, num_agents: int = 3, steps: int = 5):
        self.possible_agents = [f"agent_{i}" for i in range(num_agents)]
        self.agents: list[str] = []
        self._steps, self._t = steps, 0

    def observation_space(self, agent: str) -> gym.spaces.Space:
        return gym.spaces.Box(-1, 100, (3,), np.float32)

    def action_space(self, agent: str) -> gym.spaces.Space:
        return gym.spaces.Discrete(5)

    def reset(self, seed=None, options=None):
        self.agents, self._t = list(self.possible_agents), 0
        return {a: np.array([-1, i, 0], np.float32) for i, a in enumerate(self.agents)}, {a: {} for a in self.agents}

    def step(self, actions):
        self._t += 1
        obs = {a: np.array([actions[a], i, self._t], np.float32) for i, a in enumerate(self.possible_agents)}
        done = self._t >= self._steps
        rewards = {a: float(actions[a] == i) for i, a in enumerate(self.possible_agents)}
        flags = {a: False for a in self.agents}
        if done:
            self.agents = []
        return obs, rewards, flags, {a: done for a in flags}, {a: {} for a in flags}


def parallel_env(**kwargs) -> EchoPlayers:
    return EchoPlayers(**kwargs)
