"""Spaces and replay batches for the continuous-control agents' tests (SAC, TD3)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from sebulba.replay.transitions import Transitions

OBS = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
PENDULUM_ACTIONS = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
ACTIONS_2D = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
DICT_OBS = gym.spaces.Dict({"position": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
                            "goal": gym.spaces.Discrete(4)})


def batch_of(b: int, obs_space: gym.spaces.Space = OBS, action_dim: int = 2, seed: int = 0) -> Transitions:
    """b random transitions of obs_space (OBS or DICT_OBS) with numpy leaves; discounts of a
    1-step, a terminated and a 2-step transition in turn."""
    rng = np.random.default_rng(seed)

    def obs():
        if isinstance(obs_space, gym.spaces.Dict):
            return {"goal": rng.integers(0, 4, (b,)).astype(np.int32),
                    "position": rng.uniform(-1, 1, (b, 2, 3)).astype(np.float32)}
        return rng.uniform(-1, 1, (b, *obs_space.shape)).astype(np.float32)

    discount = np.resize(np.array([0.99, 0.0, 0.9801], np.float32), b)  # 1 step, terminated, 2 steps
    return Transitions(obs(), rng.uniform(-0.5, 0.5, (b, action_dim)).astype(np.float32),
                       rng.normal(size=b).astype(np.float32), discount, obs())
