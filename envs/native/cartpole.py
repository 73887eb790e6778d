"""CartPole-v1, vectorized; reproduces gymnasium.envs.classic_control.cartpole.CartPoleEnv."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

from envs.native.base import Index, NativeTask

GRAVITY, MASSCART, MASSPOLE, LENGTH, FORCE_MAG, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASSPOLE + MASSCART
POLEMASS_LENGTH = MASSPOLE * LENGTH
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
_THRESHOLDS = np.array([[X_THRESHOLD], [THETA_THRESHOLD]])  # |x|, |theta| limits
_FORCE = np.array([-FORCE_MAG, FORCE_MAG])  # indexed by the action


class CartPole(NativeTask):
    task_id = "CartPole-v1"
    max_episode_steps = 500
    draws_per_reset = 4
    state_rows = 4  # rows: x, x_dot, theta, theta_dot
    reference_entry_point = "gymnasium.envs.classic_control.cartpole:CartPoleEnv"

    def __init__(self, num_envs: int, seed: int):
        super().__init__(num_envs, seed)
        self._ones = np.ones(num_envs, np.float32)

    @staticmethod
    def observation_space() -> gym.spaces.Box:
        high = np.array(
            [X_THRESHOLD * 2, np.inf, THETA_THRESHOLD * 2, np.inf],
            dtype=np.float32,
        )
        return gym.spaces.Box(-high, high, dtype=np.float32)

    @staticmethod
    def action_space() -> gym.spaces.Discrete:
        return gym.spaces.Discrete(2)

    def reset(self, ids: np.ndarray) -> None:
        self.state[:, ids] = self.noise.uniform(ids, -0.05, 0.05).T

    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.state[:, idx]
        x_dot, theta, theta_dot = s[1], s[2], s[3]
        force = _FORCE[action]
        costheta = np.cos(theta)
        sintheta = np.sin(theta)
        temp = (force + POLEMASS_LENGTH * np.square(theta_dot) * sintheta) / TOTAL_MASS
        thetaacc = (GRAVITY * sintheta - costheta * temp) / (
            LENGTH * (4.0 / 3.0 - MASSPOLE * np.square(costheta) / TOTAL_MASS)
        )
        xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
        # Euler step of all four variables in one op: x += tau*x_dot, x_dot += tau*xacc, ...
        deriv = np.concatenate((x_dot, xacc, theta_dot, thetaacc)).reshape(s.shape)
        new = s + TAU * deriv
        self.state[:, idx] = new
        out = np.abs(new[0::2]) > _THRESHOLDS
        return self._ones[: len(x_dot)].copy(), out[0] | out[1]


class CartPoleNoVelocity(CartPole):
    """CartPole-v1 with the velocities hidden: obs = [x, theta], a memory task.

    Dynamics, rewards, termination, seeding and the 500-step limit are CartPole-v1's (the state is
    still all four rows, and `reference_entry_point` names the env these dynamics reproduce); only
    the observation drops x_dot and theta_dot, so a policy must infer them from history. There is
    no Gymnasium id for it, so `backend="process"` does not serve it.
    """

    task_id = "CartPoleNoVelocity-v1"

    @staticmethod
    def observation_space() -> gym.spaces.Box:
        full = CartPole.observation_space()
        return gym.spaces.Box(full.low[0::2], full.high[0::2], dtype=np.float32)

    def observe(self, idx: Index) -> np.ndarray:
        return self.state[0::2, idx].T.astype(np.float32, order="C")  # rows x, theta
