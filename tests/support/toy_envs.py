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


class InfoEnv(gym.Env):
    """Returns the info its action asks for, to test how the pool batches envs' own info.

    obs = [steps since reset]; the episode terminates after `length` steps. Reset info:
    {"resets": resets of this env instance, "who": the seed of its first reset}. Step info by
    action: 0 nothing; 1 {"hit": t}; 2 {"hit": t, "name": "t<t>", "ragged": arange(t), "tag":
    None, "episode": {"r": 1.5 t, "l": t}}; 3 keys that clash with the pool's or with namedtuple
    fields: {"env_id": 99, "elapsed_step": -1, "players": 5, "obs": 7, "x-y": 0.5, "class": "c", "_hit": True};
    4 an unpicklable value {"fn": a lambda}. `always`: every info also holds "who" and "t"."""

    observation_space = gym.spaces.Box(0, np.inf, (1,), np.float32)
    action_space = gym.spaces.Discrete(5)

    def __init__(self, length=1000, always=False):
        self.length, self.always, self.resets, self.who = length, always, 0, None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.who is None:
            self.who = seed
        self.t, self.resets = 0, self.resets + 1
        return self._obs(), self._with_always({"resets": self.resets, "who": self.who})

    def _obs(self):
        return np.array([self.t], np.float32)

    def _with_always(self, info):
        return {**info, "who": self.who, "t": self.t} if self.always else info

    def step(self, action):
        self.t += 1
        t = self.t
        info = [
            {},
            {"hit": t},
            {"hit": t, "name": f"t{t}", "ragged": np.arange(t), "tag": None, "episode": {"r": 1.5 * t, "l": t}},
            {"env_id": 99, "elapsed_step": -1, "players": 5, "obs": 7, "x-y": 0.5, "class": "c", "_hit": True},
            {"fn": lambda: 0},
        ][int(action)]
        return self._obs(), 0.0, t >= self.length, False, self._with_always(info)


def register_info_envs():
    if "ToyInfo-v0" not in gym.registry:
        gym.register("ToyInfo-v0", entry_point=InfoEnv, max_episode_steps=50)


class DictObsEnv(gym.Env):
    """A nested Dict/Tuple observation of every batchable leaf kind; each leaf encodes the seed
    of the env's first reset and its step count, so tests can tell envs and steps apart.
    The episode terminates after `length` steps."""

    observation_space = gym.spaces.Dict(
        {
            "pos": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32),
            "flag": gym.spaces.Discrete(4),
            "img": gym.spaces.Box(0, 255, (8, 6, 3), np.uint8),  # channel-last: the pool moves it
            "extra": gym.spaces.Tuple((gym.spaces.MultiBinary(2), gym.spaces.MultiDiscrete([3, 5]))),
        }
    )
    action_space = gym.spaces.Discrete(3)

    def __init__(self, length=4):
        self.length, self.who = length, None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if self.who is None:
            self.who = seed
        self.t = 0
        return self._obs(), {}

    def _obs(self):
        img = np.zeros((8, 6, 3), np.uint8)
        img[..., 0], img[..., 2] = self.t, self.who % 256
        return {
            "pos": np.array([self.who, self.t, 0.5], np.float32),
            "flag": self.t % 4,
            "img": img,
            "extra": (np.array([self.t % 2, 1], np.int8), np.array([self.t % 3, self.who % 5])),
        }

    def step(self, action):
        self.t += 1
        return self._obs(), float(action), self.t >= self.length, False, {}


class TextObsEnv(gym.Env):
    """A Dict observation with a Text leaf, which the pool cannot batch."""

    observation_space = gym.spaces.Dict({"x": gym.spaces.Box(0, 1, (1,), np.float32), "note": gym.spaces.Text(8)})
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"x": np.zeros(1, np.float32), "note": "hi"}, {}

    def step(self, action):
        return {"x": np.zeros(1, np.float32), "note": "hi"}, 0.0, False, False, {}


def register_structured_envs():
    for name, cls in (("ToyDictObs-v0", DictObsEnv), ("ToyTextObs-v0", TextObsEnv)):
        if name not in gym.registry:
            gym.register(name, entry_point=cls, max_episode_steps=50)


# Registered on import, for Gymnasium's `module:EnvId` form: envs.make("tests.support.toy_envs:ToyModuleForm-v0").
if "ToyModuleForm-v0" not in gym.registry:
    gym.register("ToyModuleForm-v0", entry_point=InfoEnv, max_episode_steps=50)


class MultiChoiceEnv(gym.Env):
    """A contextual bandit with MultiDiscrete actions, for learning tests. Each step shows one of
    `contexts` contexts (one-hot); in context c, action dim d has one right value,
    start[d] + (c + d) % nvec[d]. The reward is the fraction of dims right, so only a policy right
    in every dim earns the maximum, 1 per step (`length` per episode); uniform random play earns
    mean(1 / nvec) per step (0.36 for the default nvec), and a policy right in every dim but the
    4-valued one 0.75."""

    def __init__(self, nvec=(2, 3, 4), start=None, contexts=4, length=10):
        self.nvec = np.asarray(nvec, np.int64)
        self.start = np.zeros_like(self.nvec) if start is None else np.asarray(start, np.int64)
        self.contexts, self.length = contexts, length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (contexts,), np.float32)
        self.action_space = gym.spaces.MultiDiscrete(self.nvec, start=self.start)

    def best(self, context: int) -> np.ndarray:
        """The action that earns 1 in `context`."""
        return self.start + (context + np.arange(len(self.nvec))) % self.nvec

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._observe(), {}

    def _observe(self):
        self.context = int(self.np_random.integers(self.contexts))
        return np.eye(self.contexts, dtype=np.float32)[self.context]

    def step(self, action):
        action = np.asarray(action)
        if action.shape != self.nvec.shape or not self.action_space.contains(action.astype(np.int64)):
            raise ValueError(f"{action!r} is not an action of {self.action_space}")
        reward = float(np.mean(action == self.best(self.context)))
        self.t += 1
        return self._observe(), reward, self.t >= self.length, False, {}


# The MultiDiscrete learning task, by Gymnasium's `module:EnvId` form, as a CLI run names it
# (--env=tests.support.toy_envs:ToyMultiChoice-v0); the Start variant's dims begin at 1, -1 and 5.
for _name, _kwargs in (("ToyMultiChoice-v0", {}), ("ToyMultiChoiceStart-v0", {"start": (1, -1, 5)})):
    if _name not in gym.registry:
        gym.register(_name, entry_point=MultiChoiceEnv, kwargs=_kwargs)


class SlowStartEnv(InfoEnv):
    """Never finishes its first reset in a worker process (an env whose start takes hours): a pool of
    it stays being built. In the main process (its spec) it resets at once."""

    def reset(self, *, seed=None, options=None):
        import multiprocessing
        import time

        if multiprocessing.parent_process() is not None:
            time.sleep(3600)
        return super().reset(seed=seed, options=options)


# Registered on import, for the `module:EnvId` form: a run of it is still setting up when it is stopped.
if "ToySlowStart-v0" not in gym.registry:
    gym.register("ToySlowStart-v0", entry_point=SlowStartEnv, max_episode_steps=50)
