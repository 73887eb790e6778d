"""EnvPool's toy-text ids that Gymnasium does not register: its own Catch-v0 and NChain-v0
(envpool/toy_text/catch.h, nchain.h), and the older versions of Gymnasium's tasks EnvPool still
serves (Taxi-v3, CliffWalking-v0: the same task as Gymnasium's Taxi-v4 and CliffWalking-v1 with
their default arguments). Registered as Gymnasium ids on import, so the pool serves them as any
Gymnasium id (`backend="process"`) and `gymnasium.make` builds them too.

One id the pool serves as EnvPool does rather than as Gymnasium registers it (`SERVED_AS`, read
by `envs.ids.find_spec`; `gymnasium.make` is left as it is): Blackjack-v1, whose observation
EnvPool serves as one int32 array [3] (blackjack.h) where Gymnasium's is a Tuple of Discretes;
the same game and rules (sab=True, natural=False, Gymnasium's registered arguments too)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.toy_text.blackjack import BlackjackEnv as _Blackjack


class CatchEnv(gym.Env):
    """EnvPool's Catch: a ball falls one row a step down a `height` x `width` grid from a random
    column of the top row; the paddle on the bottom row moves left, stays or moves right (actions
    0, 1, 2). When the ball reaches the row above the paddle (after height - 1 steps) the episode
    ends with reward 1 if the paddle is under it, else -1; every other step rewards 0. The
    observation is the grid as float32: 1 at the ball and at the paddle."""

    metadata = {"render_modes": []}

    def __init__(self, height: int = 10, width: int = 5):
        if height < 2 or width < 1:
            raise ValueError(f"Catch needs height >= 2 and width >= 1, got {height} x {width}")
        self.height, self.width = int(height), int(width)
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self.height, self.width), np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self._row = self._column = self._paddle = 0

    def _obs(self) -> np.ndarray:
        obs = np.zeros((self.height, self.width), np.float32)
        obs[self._row, self._column] = 1.0
        obs[self.height - 1, self._paddle] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._row, self._column, self._paddle = 0, int(self.np_random.integers(self.width)), self.width // 2
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._paddle = min(max(self._paddle + int(action) - 1, 0), self.width - 1)
        self._row += 1
        done = self._row == self.height - 1
        reward = (1.0 if self._column == self._paddle else -1.0) if done else 0.0
        return self._obs(), reward, done, False, {}


class NChainEnv(gym.Env):
    """EnvPool's NChain (Strens 2000): a chain of 5 states from 0. Action 0 moves one state along
    (reward 0; at the last state it stays there and rewards 10), action 1 returns to state 0 with
    reward 2; with probability 0.2 the other action is taken. Episodes end by the time limit
    (1,000 steps, as EnvPool's)."""

    metadata = {"render_modes": []}
    n = 5
    slip = 0.2

    def __init__(self):
        self.observation_space = gym.spaces.Discrete(self.n)
        self.action_space = gym.spaces.Discrete(2)
        self._state = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        self._state = 0
        return self._state, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict]:
        action = int(action)
        if self.np_random.random() < self.slip:
            action = 1 - action
        if action != 0:
            reward, self._state = 2.0, 0
        elif self._state < self.n - 1:
            reward, self._state = 0.0, self._state + 1
        else:
            reward = 10.0
        return self._state, reward, False, False, {}


class BlackjackEnv(_Blackjack):
    """Gymnasium's Blackjack with EnvPool's observation: [player's sum, dealer's showing card,
    usable ace] as int32 [3] in [0, 31]."""

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.observation_space = gym.spaces.Box(0, 31, (3,), np.int32)

    def _get_obs(self) -> np.ndarray:
        return np.asarray(super()._get_obs(), np.int32)


# id -> the spec the pool serves it by, in place of Gymnasium's registration of it
SERVED_AS: dict[str, gym.envs.registration.EnvSpec] = {
    "Blackjack-v1": gym.envs.registration.EnvSpec(
        "Blackjack-v1", entry_point="envs.toy_text:BlackjackEnv", kwargs=dict(sab=True, natural=False)),
}

IDS: dict[str, dict[str, Any]] = {  # id -> gym.register's arguments (EnvPool's registration.py)
    "Catch-v0": dict(entry_point="envs.toy_text:CatchEnv", kwargs=dict(height=10, width=5)),
    "NChain-v0": dict(entry_point="envs.toy_text:NChainEnv", max_episode_steps=1000),
    "Taxi-v3": dict(entry_point="gymnasium.envs.toy_text.taxi:TaxiEnv", max_episode_steps=200, reward_threshold=8.0),
    "CliffWalking-v0": dict(entry_point="gymnasium.envs.toy_text.cliffwalking:CliffWalkingEnv",
                            kwargs=dict(is_slippery=False)),
}


def register() -> None:
    """Registers the ids Gymnasium lacks (an id it has is left as it is)."""
    for task_id, arguments in IDS.items():
        if task_id not in gym.registry:
            gym.register(task_id, **arguments)
