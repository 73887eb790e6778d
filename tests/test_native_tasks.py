"""The built-in tasks against Gymnasium's reference envs: spaces, step-for-step dynamics from
identical states, and whole seeded trajectories through the public pool (auto-reset included).

Every comparison is exact (bit for bit on the float32 observations and rewards, and on the
float64 state): the native tasks mirror the reference's floating-point operations in order,
including its dtype promotions (NumPy >= 2) and its libm `pow` for `x**2` on NumPy scalars.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.native import pendulum
from envs.native.acrobot import Acrobot
from envs.native.base import NativeTask
from envs.native.cartpole import CartPole
from envs.native.mountain_car import MountainCar, MountainCarContinuous
from envs.native.pendulum import Pendulum, PendulumV0
from envs.native.tasks import NATIVE_TASKS

PI = np.pi


@dataclasses.dataclass(frozen=True)
class Case:
    task: type[NativeTask]
    # rng -> a state in the reference's `state` layout, spread over the interesting region
    # (walls, goals, angle wrap-around, velocity bounds) so terminations and clips happen
    state: Callable[[np.random.Generator], np.ndarray]
    # (rng, n) -> n actions; continuous ones go a bit past the bounds to exercise the clip
    actions: Callable[[np.random.Generator, int], np.ndarray]

    @property
    def id(self) -> str:
        return self.task.task_id


def _discrete(k: int) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: rng.integers(0, k, n)


def _box(limit: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    return lambda rng, n: rng.uniform(-1.25 * limit, 1.25 * limit, (n, 1)).astype(np.float32)


def _mountain_car_state(rng: np.random.Generator) -> np.ndarray:
    kind = rng.integers(3)
    if kind == 0:  # anywhere
        return np.array([rng.uniform(-1.2, 0.6), rng.uniform(-0.07, 0.07)])
    if kind == 1:  # heading for the goal
        return np.array([rng.uniform(0.3, 0.6), rng.uniform(0.0, 0.07)])
    return np.array([rng.uniform(-1.2, -1.0), rng.uniform(-0.07, 0.0)])  # into the left wall


def _continuous_mountain_car_state(rng: np.random.Generator) -> np.ndarray:
    # The reference's state is float64 after reset and float32 after a step, and it steps in
    # that precision: try both.
    s = _mountain_car_state(rng)
    return s if rng.random() < 0.5 else s.astype(np.float32)


CASES = [
    Case(CartPole, lambda rng: rng.uniform([-2.4, -2, -0.2, -2], [2.4, 2, 0.2, 2]), _discrete(2)),
    Case(
        Acrobot,
        lambda rng: rng.uniform([-PI, -PI, -4 * PI, -9 * PI], [PI, PI, 4 * PI, 9 * PI]),
        _discrete(3),
    ),
    Case(MountainCar, _mountain_car_state, _discrete(3)),
    Case(MountainCarContinuous, _continuous_mountain_car_state, _box(1.0)),
    Case(Pendulum, lambda rng: rng.uniform([-2 * PI, -8], [2 * PI, 8]), _box(2.0)),
    Case(PendulumV0, lambda rng: rng.uniform([-2 * PI, -8], [2 * PI, 8]), _box(2.0)),  # EnvPool's v0, our reference
]
IDS = [c.id for c in CASES]


def _ref_action(a: np.ndarray):
    return int(a) if a.ndim == 0 else a


def test_table_lists_every_task():
    # CartPoleNoVelocity has no reference; SignalCorridor's (ours, Dict observations) is tested in test_structured_obs
    assert sorted(NATIVE_TASKS) == sorted(IDS + ["CartPoleNoVelocity-v1", "SignalCorridor-v0"])
    for task_id in IDS:
        assert task_id in envs.list_all_envs()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_spaces_and_defaults_match_reference(case: Case):
    ref = gym.make(case.id)
    spec = gym.spec(case.id)
    assert case.task.max_episode_steps == spec.max_episode_steps
    assert case.task.reference_entry_point == spec.entry_point
    for ours, theirs in (
        (case.task.observation_space(), ref.observation_space),
        (case.task.action_space(), ref.action_space),
    ):
        assert type(ours) is type(theirs)
        assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
        if isinstance(theirs, gym.spaces.Box):
            np.testing.assert_array_equal(ours.low, theirs.low)
            np.testing.assert_array_equal(ours.high, theirs.high)
        else:
            assert (ours.n, ours.start) == (theirs.n, theirs.start)
    with envs.make(case.id, num_envs=2) as pool:
        assert pool.observation_space == ref.observation_space
        assert pool.action_space == ref.action_space
        assert pool.config["max_episode_steps"] == spec.max_episode_steps
    ref.close()


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_reset_consumes_draws_per_reset_doubles(case: Case):
    ref = gym.make(case.id).unwrapped
    ref.reset(seed=3)
    rng = np.random.default_rng(3)
    rng.random(case.task.draws_per_reset)
    assert ref.np_random.random() == rng.random()


@pytest.mark.parametrize("idx", [slice(None), np.array([5, 1, 3])], ids=["all", "subset"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_step_for_step_from_identical_states(case: Case, idx):
    n, steps = 8, 200
    rng = np.random.default_rng(1234)
    task = case.task(num_envs=n, seed=0)
    task.reset(np.arange(n))
    refs = [gym.make(case.id).unwrapped for _ in range(n)]
    for i, ref in enumerate(refs):
        ref.reset(seed=i)

    def sync(i: int) -> None:
        state = case.state(rng)
        refs[i].state = state.copy()
        if hasattr(refs[i], "steps_beyond_terminated"):  # CartPole: as its reset() does
            refs[i].steps_beyond_terminated = None
        task.set_state(i, state)

    for i in range(n):
        sync(i)
    ids = np.arange(n)[idx]
    terminations = 0
    for _ in range(steps):
        actions = case.actions(rng, len(ids))
        reward, terminated = task.step(idx, actions)
        obs = task.observe(idx)
        assert reward.dtype == np.float32 and terminated.dtype == bool and obs.dtype == np.float32
        assert reward.shape == terminated.shape == (len(ids),)
        for j, i in enumerate(ids):
            ref_obs, ref_reward, ref_term, ref_trunc, _ = refs[i].step(_ref_action(actions[j]))
            np.testing.assert_array_equal(obs[j], ref_obs)
            assert reward[j] == np.float32(ref_reward)
            assert terminated[j] == ref_term and not ref_trunc
            # the whole float64 state, not only its float32 observation
            ref_state = np.asarray(refs[i].state)
            our_state = task.get_state(i)
            assert our_state.dtype == ref_state.dtype
            np.testing.assert_array_equal(our_state, ref_state)
            if ref_term:  # our task is not auto-reset when driven directly: restart both
                terminations += 1
                sync(i)
        for i in np.setdiff1d(np.arange(n), ids):  # envs outside idx do not move
            np.testing.assert_array_equal(task.get_state(i), np.asarray(refs[i].state))
    if not issubclass(case.task, Pendulum):  # Pendulum never terminates
        assert terminations > 0, "the sampled states should reach a termination"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pool_trajectories_match_seeded_reference(case: Case):
    n, seed = 4, 7
    max_steps = case.task.max_episode_steps
    steps = max_steps + 60  # every env is truncated (or terminated) at least once
    rng = np.random.default_rng(99)
    refs = [gym.make(case.id) for _ in range(n)]
    with envs.make(case.id, num_envs=n, seed=seed) as pool:
        obs, info = pool.reset()
        for i, ref in enumerate(refs):
            np.testing.assert_array_equal(obs[i], ref.reset(seed=seed + i)[0])
        np.testing.assert_array_equal(info["elapsed_step"], 0)
        ref_done = np.zeros(n, bool)
        episodes = 0
        for _ in range(steps):
            actions = case.actions(rng, n)
            if isinstance(pool.action_space, gym.spaces.Box):
                actions = np.clip(actions, pool.action_space.low, pool.action_space.high)
            obs, reward, terminated, truncated, info = pool.step(actions)
            for i, ref in enumerate(refs):
                if ref_done[i]:  # the pool's auto-reset step: the action is discarded
                    ref_obs, _ = ref.reset()  # no seed: the RNG stream continues, as ours does
                    ref_reward, ref_term, ref_trunc = 0.0, False, False
                    assert info["elapsed_step"][i] == 0
                    episodes += 1
                else:
                    ref_obs, ref_reward, ref_term, ref_trunc, _ = ref.step(_ref_action(actions[i]))
                np.testing.assert_array_equal(obs[i], ref_obs)
                assert reward[i] == np.float32(ref_reward)
                assert terminated[i] == ref_term
                # TimeLimit sets both flags when the last step also terminates; the pool keeps
                # truncated False then (envs/episodes.py)
                assert truncated[i] == (ref_trunc and not ref_term)
                ref_done[i] = ref_term or ref_trunc
        assert episodes > 0, "the run should cover at least one auto-reset"
    for ref in refs:
        ref.close()


@pytest.mark.skipif(
    not pendulum._POWF_EXACT,
    reason="NumPy's float32 power is SIMD (SVML) here, not libm powf: the task uses np.square",
)
def test_pendulum_torque_cost_uses_float32_pow():
    # Upright at rest the cost is 0.001 * u**2 alone, so the float32 reward shows the last bit of
    # the reference's np.float32 `u**2` (powf, not always the correctly rounded u * u).
    rng = np.random.default_rng(5)
    u = rng.uniform(-2, 2, 20000).astype(np.float32)
    powf = np.array([np.float32(v) ** 2 for v in u], np.float32)
    u = np.concatenate([u[powf != u * u][:6], u[:2]])
    assert len(u) == 8
    task = Pendulum(num_envs=8, seed=0)
    ref = gym.make("Pendulum-v1").unwrapped
    ref.reset(seed=0)
    for i in range(8):
        task.set_state(i, np.zeros(2))
    reward, _ = task.step(slice(None), u[:, None])
    for i in range(8):
        ref.state = np.zeros(2)
        assert reward[i] == np.float32(ref.step(u[i : i + 1])[1])


def test_pendulum_v0_moves_the_angle_by_the_unclipped_velocity():
    """The one difference between EnvPool's Pendulum-v0 (gym 0.21's) and v1, by hand: from
    theta 0.5 at speed 7.99 with torque 2, the new speed 7.99 + (15 sin 0.5 + 6) 0.05 passes the
    clip at 8; v1 moves theta by 8 x 0.05, v0 by the unclipped speed x 0.05. Both keep speed 8."""
    new_speed = 7.99 + (15 * np.sin(0.5) + 6.0) * 0.05
    for task, theta in ((Pendulum, 0.5 + 8 * 0.05), (PendulumV0, 0.5 + new_speed * 0.05)):
        env = task(1, 0)
        env.state[:, 0] = [0.5, 7.99]
        env.step(np.arange(1), np.array([[2.0]], np.float32))
        np.testing.assert_allclose(env.state[:, 0], [theta, 8.0], rtol=1e-12)
    assert "Pendulum-v0" in envs.list_all_envs() and envs.make_spec("Pendulum-v0").config["max_episode_steps"] == 200
