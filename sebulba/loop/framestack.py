"""Frame stacking on the actor device (`LoopConfig.stack_on_device`).

An Atari pool with stack_num=S sends S frames per env step, S - 1 of which its actor device
already holds. Stacking on the device, the pools send only the newest frame: the inferencer keeps
each env's stack on its actor device, trajectories record single frames plus the stack before
their first step, and the learner rebuilds the stacked observations before any agent hook runs.
Agents see exactly the observations the env would have stacked; the host copies, the host-to-
device transfer carries and the trajectory queue holds 1/S of the observation bytes.

The stack follows ALE's rule: a game reset zeroes it before the reset frame; a life loss that
ends an episode (episodic_life) does not, the stack goes on into the next life.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

import envs
from sebulba.frames import Frames, history, push, restack
from sebulba.types import Trajectory

__all__ = ["Frames", "Restarts", "StackPlan", "history", "push", "restack", "restacked"]

@dataclasses.dataclass(frozen=True)
class StackPlan:
    """How an env's stacked observations are rebuilt from single frames."""

    num: int  # S: frames per stacked observation
    obs_shape: tuple[int, ...]  # the stacked observation: (S * c, H, W)
    dtype: np.dtype
    episodic_life: bool  # a life loss ends an episode without zeroing the stack

    @staticmethod
    def create(env_id: str, env_kwargs: Mapping[str, Any]) -> StackPlan:
        """The plan for env_id's stack_num option; ValueError for an env without one, or with
        nothing to stack."""
        spec = envs.make_spec(env_id, **env_kwargs)
        options = spec.pool_config.task_kwargs
        if "stack_num" not in options:
            raise ValueError(f"stack_on_device needs an env with a stack_num option (the Atari <Game>-v5 tasks); "
                             f"{env_id} has none")
        num = int(options["stack_num"])
        if num < 2:
            raise ValueError(f"stack_on_device: {env_id} has stack_num={num}, so there is nothing to stack")
        space = spec.observation_space
        return StackPlan(num, tuple(space.shape), np.dtype(space.dtype), bool(options.get("episodic_life", False)))

    @property
    def channels(self) -> int:
        """Channels of one frame (1 gray, 3 RGB)."""
        return self.obs_shape[0] // self.num

    def pool_kwargs(self, env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The pools send single frames."""
        return {**env_kwargs, "stack_num": 1}

    def empty(self, num_envs: int) -> np.ndarray:
        return np.zeros((num_envs, *self.obs_shape), self.dtype)


def restacked(traj: Trajectory) -> Trajectory:
    """A trajectory recorded with stacking on the device, with its stacked observations rebuilt
    (any other trajectory as it is)."""
    obs = traj.env_step.obs
    if not isinstance(obs, Frames):
        return traj
    return traj._replace(env_step=traj.env_step._replace(obs=restack(traj.obs_history, obs)), obs_history=())


class Restarts:
    """Host side, per sync pool: which envs' stacks restart at each step, by ALE's rule. ALE
    zeroes the stack at a game reset, i.e. on the step after a game over or a truncation, but
    not after a life loss with lives left (episodic_life). A game that is over in the same step
    as such a life loss is taken for a life loss (ALE's info cannot tell them apart)."""

    def __init__(self, episodic_life: bool):
        self.episodic_life = episodic_life
        self._lives: np.ndarray | None = None
        self._continues: np.ndarray | None = None

    def reset(self, lives: np.ndarray) -> np.ndarray:
        self._lives = lives.copy()
        self._continues = np.zeros(len(lives), bool)
        return np.ones(len(lives), bool)

    def step(self, first: np.ndarray, terminated: np.ndarray, truncated: np.ndarray, lives: np.ndarray) -> np.ndarray:
        restart = first & ~self._continues
        if self.episodic_life:
            self._continues = terminated & ~truncated & (lives < self._lives) & (lives > 0)
        self._lives = lives.copy()
        return restart
