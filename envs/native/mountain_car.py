"""MountainCar-v0 and MountainCarContinuous-v0, vectorized; reproduce Gymnasium's
mountain_car.MountainCarEnv and continuous_mountain_car.Continuous_MountainCarEnv.

Both reset to position ~ U(-0.6, -0.4) (one double) and velocity 0, and share the state layout.

The discrete env keeps its state in float64 throughout. The continuous one does not: its reset
state is a float64 array, but every step stores `np.array([position, velocity], np.float32)`, and
from then on the arithmetic on those np.float32 scalars follows NumPy's promotion rules (NEP 50,
NumPy >= 2): Python-float constants are cast to float32 and the operation is done in float32
(`force * power`, `3 * position`, `velocity + ...`, the clips and the comparisons with the goal
and the walls), while `math.cos` and the reward are float64. The first step after a reset thus
runs in float64 and every later one in float32. The task tracks which envs are still "fresh"
(float64) and runs the same dynamics in the matching precision, so both match bit for bit.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.native.base import Index, NativeTask

MIN_POSITION = -1.2
MAX_POSITION = 0.6
MAX_SPEED = 0.07
FORCE = 0.001
GRAVITY = 0.0025
GOAL_VELOCITY = 0
DISCRETE_GOAL_POSITION = 0.5
CONTINUOUS_GOAL_POSITION = 0.45
POWER = 0.0015
ACCEL = np.array([(a - 1) * FORCE for a in range(3)])  # (action - 1) * force, by action
NEG_GRAVITY = -GRAVITY


class _MountainCarBase(NativeTask):
    draws_per_reset = 1
    state_rows = 2  # rows: position, velocity

    @staticmethod
    def observation_space() -> gym.spaces.Box:
        low = np.array([MIN_POSITION, -MAX_SPEED], dtype=np.float32)
        high = np.array([MAX_POSITION, MAX_SPEED], dtype=np.float32)
        return gym.spaces.Box(low, high, dtype=np.float32)

    def reset(self, ids: np.ndarray) -> None:
        self.state[0, ids] = self.noise.uniform(ids, -0.6, -0.4)[:, 0]
        self.state[1, ids] = 0.0



class MountainCar(_MountainCarBase):
    task_id = "MountainCar-v0"
    max_episode_steps = 200
    reference_entry_point = "gymnasium.envs.classic_control.mountain_car:MountainCarEnv"

    @staticmethod
    def action_space() -> gym.spaces.Discrete:
        return gym.spaces.Discrete(3)

    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.state
        position, velocity = s[:, idx]
        velocity = velocity + (ACCEL[action] + np.cos(3 * position) * NEG_GRAVITY)
        velocity = np.minimum(np.maximum(velocity, -MAX_SPEED), MAX_SPEED)
        position = position + velocity
        position = np.minimum(np.maximum(position, MIN_POSITION), MAX_POSITION)
        at_wall = position == MIN_POSITION
        if at_wall.any():
            velocity = np.where(at_wall & (velocity < 0), 0.0, velocity)
        s[0, idx] = position
        s[1, idx] = velocity
        terminated = (position >= DISCRETE_GOAL_POSITION) & (velocity >= GOAL_VELOCITY)
        return np.full(terminated.shape, -1.0, np.float32), terminated


def _continuous_dynamics(
    position: np.ndarray, velocity: np.ndarray, delta: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The continuous env's update after `velocity += delta`, in the dtype of position/velocity
    (float64 or float32: Python-float constants take that dtype, as in the reference)."""
    velocity = velocity + delta.astype(velocity.dtype, copy=False)
    velocity = np.minimum(np.maximum(velocity, -MAX_SPEED), MAX_SPEED)
    position = position + velocity
    position = np.minimum(np.maximum(position, MIN_POSITION), MAX_POSITION)
    at_wall = position == MIN_POSITION
    if at_wall.any():
        velocity = np.where(at_wall & (velocity < 0), velocity.dtype.type(0), velocity)
    terminated = (position >= CONTINUOUS_GOAL_POSITION) & (velocity >= GOAL_VELOCITY)
    return position, velocity, terminated


class MountainCarContinuous(_MountainCarBase):
    task_id = "MountainCarContinuous-v0"
    max_episode_steps = 999
    reference_entry_point = "gymnasium.envs.classic_control.continuous_mountain_car:Continuous_MountainCarEnv"

    def __init__(self, num_envs: int, seed: int):
        super().__init__(num_envs, seed)
        self.fresh = np.ones(num_envs, bool)  # state still float64 (no step since reset)

    @staticmethod
    def action_space() -> gym.spaces.Box:
        return gym.spaces.Box(low=-1.0, high=1.0, shape=(1,), dtype=np.float32)

    def reset(self, ids: np.ndarray) -> None:
        super().reset(ids)
        self.fresh[ids] = True

    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.state
        position, velocity = s[:, idx]
        fresh = self.fresh[idx]
        a = action[:, 0].astype(np.float32, copy=False)
        # force = min(max(a, -1.0), 1.0): an np.float32 unless clipped to a Python float.
        # delta = force * power - 0.0025 * math.cos(3 * position)
        n_fresh = np.count_nonzero(fresh)
        arg = 3 * position  # exact in float64 for float32 positions; rounded below if float32
        if n_fresh < len(arg):
            arg32 = arg.astype(np.float32)
            arg = arg32 if n_fresh == 0 else np.where(fresh, arg, arg32)
        cos_term = 0.0025 * np.cos(arg, dtype=np.float64)
        delta = a * POWER - cos_term.astype(np.float32)  # float32 arithmetic, as np.float32 - float
        clipped = np.abs(a) > 1.0
        if clipped.any():  # Python-float force: the whole expression is float64
            delta = np.where(clipped, np.where(a > 0, POWER, -POWER) - cos_term, delta)
        if n_fresh == 0:
            new = _continuous_dynamics(position.astype(np.float32), velocity.astype(np.float32), delta)
        elif n_fresh == len(arg):
            new = _continuous_dynamics(position, velocity, delta)
        else:
            new64 = _continuous_dynamics(position, velocity, delta)
            new32 = _continuous_dynamics(position.astype(np.float32), velocity.astype(np.float32), delta)
            new = tuple(np.where(fresh, x64, x32) for x64, x32 in zip(new64, new32))
        position, velocity, terminated = new
        s[0, idx] = position.astype(np.float32)  # the reference stores float32
        s[1, idx] = velocity.astype(np.float32)
        self.fresh[idx] = False
        # reward = (100.0 if terminated else 0) - math.pow(action[0], 2) * 0.1, in float64
        a64 = a.astype(np.float64)
        reward = np.where(terminated, 100.0, 0.0) - a64 * a64 * 0.1
        return reward.astype(np.float32), terminated

    def get_state(self, i: int) -> np.ndarray:
        """Like the reference's `state`: float64 right after a reset, float32 after a step."""
        return self.state[:, i].astype(np.float64 if self.fresh[i] else np.float32)

    def set_state(self, i: int, state: np.ndarray) -> None:
        """A float32 state steps in float32, any other in float64, as in the reference."""
        state = np.asarray(state)
        self.state[:, i] = state
        self.fresh[i] = state.dtype != np.float32
