"""Acrobot-v1, vectorized; reproduces gymnasium.envs.classic_control.acrobot.AcrobotEnv.

The reference integrates one env with `rk4` over t = [0, dt] (one RK4 step), with the "book"
dynamics and no torque noise. Here the same arithmetic runs on (4, n) arrays, one column per
env, in the reference's operation order, so trajectories match bit for bit.

Notes on exactness (each checked against the reference in tests/test_native_tasks.py):
- The reference's `dtheta**2` and `d2**2` are NumPy-scalar powers, which call libm `pow`; `pow`
  is not always correctly rounded, so `x * x` / `np.square` can differ in the last bit.
  `np.float_power(x, 2.0)` calls the same `pow` on arrays (it has no square fast path, and no
  SIMD loop: `np.power` with an array exponent goes to SVML on AVX-512 hosts and differs).
- Products with a constant exactly 1.0 (m2, 2 * l1 * lc2, ...) are left out: x * 1.0 == x.
- Reset draws four doubles and rounds them to float32 (the reference's `.astype(np.float32)`);
  the dynamics then run in float64.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from envs.native.base import Index, NativeTask

PI = np.pi
DT = 0.2
LINK_LENGTH_1 = 1.0
LINK_MASS_1 = 1.0
LINK_MASS_2 = 1.0
LINK_COM_POS_1 = 0.5
LINK_COM_POS_2 = 0.5
LINK_MOI = 1.0
G = 9.8
MAX_VEL_1 = 4 * PI
MAX_VEL_2 = 9 * PI
TORQUES = np.array([-1.0, 0.0, 1.0])  # AVAIL_TORQUE, by action

# The reference's constant subexpressions, evaluated as it evaluates them.
_M1, _M2, _L1, _LC1, _LC2, _I1, _I2 = (
    LINK_MASS_1, LINK_MASS_2, LINK_LENGTH_1, LINK_COM_POS_1, LINK_COM_POS_2, LINK_MOI, LINK_MOI,
)
D1_A = _M1 * _LC1**2  # d1 = D1_A + m2 * (D1_B + [2 l1 lc2 = 1.0] * cos(theta2)) + I1 + I2
D1_B = _L1**2 + _LC2**2
D2_A = _LC2**2  # d2 = m2 * (D2_A + D2_B * cos(theta2)) + I2
D2_B = _L1 * _LC2
PHI2_C = _M2 * _LC2 * G  # phi2 = PHI2_C * cos(theta1 + theta2 - pi / 2)
NEG_T1_C = -_M2 * _L1 * _LC2  # first term of phi1: NEG_T1_C * dtheta2**2 * sin(theta2)
PHI1_C = (_M1 * _LC1 + _M2 * _L1) * G  # third term of phi1: PHI1_C * cos(theta1 - pi / 2)
DD2_C = _M2 * _L1 * _LC2  # ddtheta2 numerator term: DD2_C * dtheta1**2 * sin(theta2)
DEN_C = _M2 * _LC2**2 + _I2  # ddtheta2 denominator: DEN_C - d2**2 / d1
assert 2 * _M2 * _L1 * _LC2 == 1.0 and 2 * _L1 * _LC2 == 1.0 and _M2 == 1.0  # dropped factors
HALF_PI = PI / 2.0  # the reference writes pi / 2.0 and pi / 2: the same double
DT2 = DT / 2.0
DT6 = DT / 6.0
WRAP = PI - (-PI)  # wrap's diff = M - m
VEL_LOW = np.array([[-MAX_VEL_1], [-MAX_VEL_2]])
VEL_HIGH = np.array([[MAX_VEL_1], [MAX_VEL_2]])


def _dsdt(y: np.ndarray, a: np.ndarray) -> np.ndarray:
    """AcrobotEnv._dsdt ("book") for a (4, n) batch of states; a is the torque, shape (n,)."""
    t1, t2, w1, w2 = y
    k = np.empty_like(y)
    k[:2] = y[2:]
    c2 = np.cos(t2)
    s2 = np.sin(t2)
    d1 = D1_B + c2
    d1 += D1_A  # D1_A + (...): addition commutes exactly
    d1 += _I1
    d1 += _I2
    d2 = D2_B * c2
    d2 += D2_A
    d2 += _I2
    phi2 = PHI2_C * np.cos(t1 + t2 - HALF_PI)
    w1_sq, w2_sq = np.float_power(y[2:], 2.0)  # dtheta1**2, dtheta2**2 in one call
    phi1 = NEG_T1_C * w2_sq * s2 - w2 * w1 * s2 + PHI1_C * np.cos(t1 - HALF_PI) + phi2
    num = a + d2 / d1 * phi1 - DD2_C * w1_sq * s2 - phi2
    dd2 = np.divide(num, DEN_C - np.float_power(d2, 2.0) / d1, out=k[3])
    dd1 = d2 * dd2
    dd1 += phi1
    np.negative(dd1, out=dd1)
    np.divide(dd1, d1, out=k[2])
    return k


class Acrobot(NativeTask):
    task_id = "Acrobot-v1"
    max_episode_steps = 500
    draws_per_reset = 4
    state_rows = 4  # rows: theta1, theta2, dtheta1, dtheta2
    reference_entry_point = "gymnasium.envs.classic_control.acrobot:AcrobotEnv"

    @staticmethod
    def observation_space() -> gym.spaces.Box:
        high = np.array([1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2], dtype=np.float32)
        return gym.spaces.Box(low=-high, high=high, dtype=np.float32)

    @staticmethod
    def action_space() -> gym.spaces.Discrete:
        return gym.spaces.Discrete(3)

    def reset(self, ids: np.ndarray) -> None:
        self.state[:, ids] = self.noise.uniform(ids, -0.1, 0.1).astype(np.float32).T

    def step(self, idx: Index, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = self.state
        y0 = s[:, idx]
        a = TORQUES[action]
        k1 = _dsdt(y0, a)
        k2 = _dsdt(y0 + DT2 * k1, a)
        k3 = _dsdt(y0 + DT2 * k2, a)
        k4 = _dsdt(y0 + DT * k3, a)
        ns = y0 + DT6 * (k1 + 2 * k2 + 2 * k3 + k4)
        th = ns[:2]  # wrap(x, -pi, pi): subtract / add 2 pi until inside, as the reference loops
        if th.size and np.abs(th).max() > PI:
            over = th > PI
            while over.any():
                th[over] -= WRAP
                over = th > PI
            under = th < -PI
            while under.any():
                th[under] += WRAP
                under = th < -PI
        np.minimum(np.maximum(ns[2:], VEL_LOW), VEL_HIGH, out=ns[2:])  # bound(x, m, M)
        s[:, idx] = ns
        terminated = -np.cos(ns[0]) - np.cos(ns[1] + ns[0]) > 1.0
        return terminated - np.float32(1.0), terminated

    def observe(self, idx: Index) -> np.ndarray:
        s = self.state[:, idx]
        out = np.empty((6, s.shape[1]))
        np.cos(s[:2], out=out[0:4:2])
        np.sin(s[:2], out=out[1:4:2])
        out[4:] = s[2:]
        return out.T.astype(np.float32, order="C")

