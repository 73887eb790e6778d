"""SignalCorridor-v0: a built-in task with a `Dict` observation in which both leaves matter.

The agent walks a corridor of LENGTH cells, starting in the middle; walking off either end ends
the episode (terminated). A signal drawn at reset says which end pays: +1 there, -1 at the other
end, 0 per step. The observation is {"position": Box(1) in [0, 1], "signal": Discrete(2)}: the
position alone gives an expected return of 0, the signal alone cannot tell when to stop, and the
two together give +1 in LENGTH // 2 + 1 steps. Small enough that an agent learns it in seconds,
structured enough to test the pool's and the agents' Dict observations end to end.

`SignalCorridorEnv` is the single Gymnasium env (registered as SignalCorridor-v0, what
backend="process" runs) and `SignalCorridor` the vectorized native task; both draw the signal
as `uniform(0, 1) < 0.5` from the env's seeded generator, so they agree step for step.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from envs.native.base import Index, NativeTask

LENGTH = 7  # cells 0 .. LENGTH - 1; the episode ends on stepping past cell 0 or LENGTH - 1
START = LENGTH // 2
MAX_EPISODE_STEPS = 50
_MOVE = np.array([-1.0, 1.0])  # by action: 0 left, 1 right
_CELL = 32  # pixels per cell in rendered frames


def observation_space() -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {"position": gym.spaces.Box(0.0, 1.0, (1,), np.float32), "signal": gym.spaces.Discrete(2)}
    )


def _frame(position: float, signal: int) -> np.ndarray:
    """A strip of LENGTH cells plus one exit on each side: the paying exit green, the other red,
    the agent blue."""
    cells = np.full((LENGTH + 2, 3), 200, np.uint8)
    cells[0] = (40, 160, 40) if signal == 0 else (180, 40, 40)
    cells[-1] = (40, 160, 40) if signal == 1 else (180, 40, 40)
    cells[1 + int(np.clip(position, -1, LENGTH))] = (40, 80, 200)
    return np.repeat(np.repeat(cells[None], _CELL, axis=0), _CELL, axis=1)


class SignalCorridorEnv(gym.Env):
    """One env of the task, Gymnasium's way (the reference the native task reproduces)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 8}

    def __init__(self, render_mode: str | None = None):
        self.observation_space = observation_space()
        self.action_space = gym.spaces.Discrete(2)
        self.render_mode = render_mode
        self.state = np.array([START, 0.0])  # position, signal

    def _obs(self) -> dict[str, Any]:
        return {"position": np.array([self.state[0] / (LENGTH - 1)], np.float32), "signal": int(self.state[1])}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.state = np.array([START, float(self.np_random.uniform(0.0, 1.0) < 0.5)])
        return self._obs(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        assert self.action_space.contains(action), f"{action!r} ({type(action)}) invalid"
        position = self.state[0] + _MOVE[int(action)]
        self.state = np.array([position, self.state[1]])
        left, right = position < 0, position > LENGTH - 1
        terminated = bool(left or right)
        reward = 0.0
        if terminated:
            reward = 1.0 if (right and self.state[1] == 1) or (left and self.state[1] == 0) else -1.0
        return self._obs(), reward, terminated, False, {}

    def render(self) -> np.ndarray:
        return _frame(self.state[0], int(self.state[1]))


class SignalCorridor(NativeTask):
    task_id = "SignalCorridor-v0"
    max_episode_steps = MAX_EPISODE_STEPS
    draws_per_reset = 1
    state_rows = 2  # rows: position (a cell index, as a float), signal
    reference_entry_point = "envs.native.signal_corridor:SignalCorridorEnv"

    @staticmethod
    def observation_space() -> gym.spaces.Dict:
        return observation_space()

    @staticmethod
    def action_space() -> gym.spaces.Discrete:
        return gym.spaces.Discrete(2)

    def reset(self, ids: np.ndarray) -> None:
        self.state[0, ids] = START
        self.state[1, ids] = self.noise.uniform(ids, 0.0, 1.0)[:, 0] < 0.5

    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        position = self.state[0, idx] + _MOVE[action]
        self.state[0, idx] = position
        left, right = position < 0, position > LENGTH - 1
        terminated = left | right
        paid = np.where(self.state[1, idx] == 1, right, left)
        reward = np.where(terminated, np.where(paid, 1.0, -1.0), 0.0).astype(np.float32)
        return reward, terminated

    def observe(self, idx: Index) -> dict[str, np.ndarray]:
        position = (self.state[0, idx] / (LENGTH - 1)).astype(np.float32)[:, None]
        return {"position": position, "signal": self.state[1, idx].astype(np.int64)}


def register() -> None:
    """Registers the Gymnasium id (backend="process" runs SignalCorridorEnv)."""
    if SignalCorridor.task_id not in gym.registry:
        gym.register(
            SignalCorridor.task_id,
            entry_point=SignalCorridor.reference_entry_point,
            max_episode_steps=MAX_EPISODE_STEPS,
        )
