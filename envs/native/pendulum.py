"""Pendulum-v1, vectorized; reproduces gymnasium.envs.classic_control.pendulum.PendulumEnv (g=10).
Pendulum-v0 (EnvPool's, as gym 0.21's): the same but for one line, the angle moving by the new
velocity before it is clipped to +-8 (v1 clips first); `PendulumV0Env` is its Gymnasium reference.

Exactness notes (NumPy >= 2 promotion, as the reference runs under):
- The torque u is the clipped float32 action, and the reference's `u**2`, `0.001 * u**2` and
  `3.0 * u` are float32 operations on an np.float32 scalar (Python constants take its dtype).
  `u**2` on an np.float32 scalar calls libm `powf`, which is not always correctly rounded
  (about 1 value in 1000 differs from `u * u` in the last bit). `np.power` with an array
  exponent calls the same `powf` on most hosts (a scalar exponent 2 would take NumPy's square
  fast path), but on AVX-512 hosts NumPy dispatches it to SVML, which differs far more often;
  `_POWF_EXACT` checks this once at import and falls back to `np.square` there. The last bit of
  0.001 * u**2 reaches the float32 reward only when the whole cost is tiny.
- `angle_normalize(th)**2` and `thdot**2` are NumPy-scalar float64 powers (libm `pow`), which
  `np.float_power(x, 2.0)` reproduces on arrays (it has no square fast path and no SIMD loop).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.pendulum import PendulumEnv, angle_normalize

from envs.native.base import Index, NativeTask

MAX_SPEED = 8
MAX_TORQUE = 2.0
DT = 0.05
G = 10.0
M = 1.0
L = 1.0
THDOT_GAIN = 3 * G / (2 * L)  # 3 * g / (2 * l) * np.sin(th)
U_GAIN = 3.0 / (M * L**2)  # 3.0 / (m * l**2) * u
RESET_HIGH = np.array([np.pi, 1.0])  # DEFAULT_X, DEFAULT_Y


def _powf_matches_scalar() -> bool:
    """Whether np.power with an array exponent gives the reference's np.float32 `u**2` here."""
    u = np.random.default_rng(0).uniform(-MAX_TORQUE, MAX_TORQUE, 4096).astype(np.float32)
    scalar = np.array([x**2 for x in u], np.float32)  # np.float32 scalars, as the reference
    return bool(np.array_equal(np.power(u, np.full_like(u, 2.0)), scalar))


_POWF_EXACT = _powf_matches_scalar()


class Pendulum(NativeTask):
    task_id = "Pendulum-v1"
    max_episode_steps = 200
    draws_per_reset = 2
    state_rows = 2  # rows: th, thdot
    reference_entry_point = "gymnasium.envs.classic_control.pendulum:PendulumEnv"
    clip_before_moving = True  # v1: the angle moves by the clipped velocity

    def __init__(self, num_envs: int, seed: int):
        super().__init__(num_envs, seed)
        self._two = np.full(num_envs, 2.0, np.float32)  # exponent for u**2 (see module doc)

    @staticmethod
    def observation_space() -> gym.spaces.Box:
        high = np.array([1.0, 1.0, MAX_SPEED], dtype=np.float32)
        return gym.spaces.Box(low=-high, high=high, dtype=np.float32)

    @staticmethod
    def action_space() -> gym.spaces.Box:
        return gym.spaces.Box(low=-MAX_TORQUE, high=MAX_TORQUE, shape=(1,), dtype=np.float32)

    def reset(self, ids: np.ndarray) -> None:
        self.state[:, ids] = self.noise.uniform(ids, -RESET_HIGH, RESET_HIGH).T

    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.state
        th, thdot = s[:, idx]
        u = np.minimum(np.maximum(action[:, 0].astype(np.float32, copy=False), -MAX_TORQUE), MAX_TORQUE)
        n = len(u)
        # angle_normalize(th)**2 + 0.1 * thdot**2 + 0.001 * (u**2)
        costs = (
            np.float_power(np.remainder(th + np.pi, 2 * np.pi) - np.pi, 2.0)
            + 0.1 * np.float_power(thdot, 2.0)
            + 0.001 * (np.power(u, self._two[:n]) if _POWF_EXACT else np.square(u))
        )
        newthdot = thdot + (THDOT_GAIN * np.sin(th) + U_GAIN * u) * DT
        clipped = np.minimum(np.maximum(newthdot, -MAX_SPEED), MAX_SPEED)
        s[0, idx] = th + (clipped if self.clip_before_moving else newthdot) * DT
        s[1, idx] = clipped
        reward = costs.astype(np.float32)
        np.negative(reward, out=reward)  # -costs: negation commutes with the float32 rounding
        return reward, np.zeros(n, bool)

    def observe(self, idx: Index) -> np.ndarray:
        th, thdot = self.state[:, idx]
        out = np.empty((3, len(th)))
        np.cos(th, out=out[0])
        np.sin(th, out=out[1])
        out[2] = thdot
        return out.T.astype(np.float32, order="C")



class PendulumV0(Pendulum):
    """EnvPool's Pendulum-v0 (gym 0.21's): the angle moves by the unclipped new velocity."""

    task_id = "Pendulum-v0"
    reference_entry_point = "envs.native.pendulum:PendulumV0Env"
    clip_before_moving = False


class PendulumV0Env(PendulumEnv):
    """Gymnasium's PendulumEnv with Pendulum-v0's step (gym 0.21's order: the angle moves by the
    new velocity, then the velocity is clipped), the reference of `PendulumV0`."""

    def step(self, u):
        th, thdot = self.state
        g, m, l, dt = self.g, self.m, self.l, self.dt
        u = np.clip(u, -self.max_torque, self.max_torque)[0]
        self.last_u = u
        costs = angle_normalize(th) ** 2 + 0.1 * thdot**2 + 0.001 * (u**2)
        newthdot = thdot + (3 * g / (2 * l) * np.sin(th) + 3.0 / (m * l**2) * u) * dt
        newth = th + newthdot * dt
        newthdot = np.clip(newthdot, -self.max_speed, self.max_speed)
        self.state = np.array([newth, newthdot])
        if self.render_mode == "human":
            self.render()
        return self._get_obs(), -costs, False, False, {}


def register() -> None:
    """Registers Pendulum-v0's Gymnasium id (backend="process" runs PendulumV0Env), 200 steps."""
    if PendulumV0.task_id not in gym.registry:
        gym.register(PendulumV0.task_id, entry_point=PendulumV0.reference_entry_point,
                     max_episode_steps=PendulumV0.max_episode_steps)
