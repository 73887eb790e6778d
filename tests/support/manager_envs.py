"""Small Gymnasium envs for the env-manager and process-backend fault drills; importable by
worker processes."""

import multiprocessing
import os
import signal
import time

import gymnasium as gym
import numpy as np


class CountEnv(gym.Env):
    """obs = [steps taken, reset count, first number drawn from np_random]; ends after `length` steps."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (3,), np.float64)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length=3):
        self.length, self.resets = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.resets = 0, self.resets + 1
        self.draw = float(self.np_random.random())
        if options and "start" in options:
            self.t = options["start"]
        return self._obs(), {"resets": self.resets}

    def _obs(self):
        return np.array([self.t, self.resets, self.draw])

    def step(self, action):
        self.t += 1
        return self._obs(), float(action), self.t >= self.length, False, {"t": self.t}


class HangEnv(CountEnv):
    """Hangs in step number `hang_at` of its first episode (a deadlocked simulator)."""

    def __init__(self, hang_at=2):
        super().__init__(length=100)
        self.hang_at, self.hung = hang_at, False

    def step(self, action):
        if self.t + 1 == self.hang_at and not self.hung:
            self.hung = True
            time.sleep(3600)
        return super().step(action)


class HangOnResetEnv(CountEnv):
    """Hangs in every reset."""

    def reset(self, *, seed=None, options=None):
        time.sleep(3600)


class RaiseEnv(CountEnv):
    """Raises in step number `fail_at` of every episode."""

    def __init__(self, fail_at=2):
        super().__init__(length=100)
        self.fail_at = fail_at

    def step(self, action):
        if self.t + 1 == self.fail_at:
            raise ZeroDivisionError("manager toy env blew up on purpose")
        return super().step(action)


class DieOnResetEnv(CountEnv):
    """Kills its own worker process (SIGKILL) whenever it resets; never in the test process."""

    def reset(self, *, seed=None, options=None):
        if multiprocessing.parent_process() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError("DieOnResetEnv only runs in a worker process")


class BigObsEnv(gym.Env):
    """A uint8 observation of `shape` (default 100 kB) whose pixels all equal the step count."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, shape=(100, 1000), length=1000):
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)
        self.length = length
        self._obs = np.zeros(shape, np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self._obs[:] = 0
        return self._obs.copy(), {}

    def step(self, action):
        self.t += 1
        self._obs[:] = self.t % 256
        return self._obs.copy(), 1.0, False, self.t >= self.length, {}


class CrashAtEnv(CountEnv):
    """For the pool drill: a registered env whose worker kills itself at `crash_at` total steps,
    once per process (after a respawn it runs normally)."""

    def __init__(self, crash_at=-1):
        super().__init__(length=4)
        self.crash_at, self.total = crash_at, 0

    def step(self, action):
        self.total += 1
        if self.total == self.crash_at and multiprocessing.parent_process() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().step(action)


def register_all():
    envs = (("ToyCount-v0", CountEnv), ("ToyCrashAt-v0", CrashAtEnv), ("ToyRaise-v0", RaiseEnv), ("ToyHang-v0", HangEnv))
    for name, cls in envs:
        if name not in gym.registry:
            gym.register(name, entry_point=cls, max_episode_steps=50)
