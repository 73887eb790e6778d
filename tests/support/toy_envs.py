"""Small Gymnasium envs registered by tests; importable by worker processes."""

import os

import gymnasium as gym
import numpy as np


class ImageEnv(gym.Env):
    """Channel-last uint8 images whose pixels encode the step count."""

    observation_space = gym.spaces.Box(0, 255, (8, 6, 3), np.uint8)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        img = np.zeros((8, 6, 3), np.uint8)
        img[..., 0] = self.t
        img[..., 2] = 7
        return img

    def step(self, action):
        self.t += 1
        return self._obs(), float(action), self.t >= 5, False, {}


class FailingEnv(gym.Env):
    """Raises inside step once `fail_at` steps have been taken."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def __init__(self, fail_at=3):
        self.fail_at = fail_at

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        if self.t >= self.fail_at:
            raise ZeroDivisionError("toy env blew up on purpose")
        return np.asarray(action, np.float32), 0.0, False, False, {}


class SuicideEnv(FailingEnv):
    """Kills its own worker process with SIGKILL at step `fail_at`."""

    def step(self, action):
        self.t += 1
        if self.t >= self.fail_at:
            os.kill(os.getpid(), 9)
        return np.asarray(action, np.float32), 0.0, False, False, {}


def register_all():
    for name, cls in (("ToyImage-v0", ImageEnv), ("ToyFailing-v0", FailingEnv), ("ToySuicide-v0", SuicideEnv)):
        if name not in gym.registry:
            gym.register(name, entry_point=cls, max_episode_steps=50)
