"""CartPoleNoVelocity-v1: CartPole-v1 with obs = [x, theta] (the R2D2 memory task).

It has no Gymnasium reference, so it is checked against the built-in CartPole-v1 through the
public pool: same seed and actions give the same trajectories, with the velocity columns dropped.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.native.cartpole import CartPole, CartPoleNoVelocity
from envs.native.tasks import NATIVE_TASKS

TASK = "CartPoleNoVelocity-v1"
VISIBLE = [0, 2]  # x, theta of CartPole's [x, x_dot, theta, theta_dot]


def _compare_with_cartpole(steps: int, **kw) -> tuple[int, int]:
    """Steps both pools with the same random actions; returns (auto-resets, truncations) seen."""
    rng = np.random.default_rng(3)
    resets = truncations = 0
    with envs.make(TASK, **kw) as ours, envs.make("CartPole-v1", **kw) as full:
        obs, info = ours.reset()
        ref_obs, ref_info = full.reset()
        batch = kw.get("batch_size", kw["num_envs"])
        assert obs.shape == (kw["num_envs"], 2) and obs.dtype == np.float32
        np.testing.assert_array_equal(obs, ref_obs[:, VISIBLE])
        np.testing.assert_array_equal(info["env_id"], ref_info["env_id"])
        np.testing.assert_array_equal(info["elapsed_step"], ref_info["elapsed_step"])
        for _ in range(steps):
            ids = info["env_id"]  # act on the envs of the last batch (async: batch_size of them)
            actions = rng.integers(0, 2, len(ids))
            obs, reward, terminated, truncated, info = ours.step(actions, ids)
            ref_obs, ref_reward, ref_terminated, ref_truncated, ref_info = full.step(actions, ids)
            assert obs.shape == (batch, 2) and obs.dtype == np.float32
            assert obs.flags.c_contiguous
            np.testing.assert_array_equal(obs, ref_obs[:, VISIBLE])
            np.testing.assert_array_equal(reward, ref_reward)
            assert reward.dtype == ref_reward.dtype
            np.testing.assert_array_equal(terminated, ref_terminated)
            np.testing.assert_array_equal(truncated, ref_truncated)
            np.testing.assert_array_equal(info["env_id"], ref_info["env_id"])
            np.testing.assert_array_equal(info["elapsed_step"], ref_info["elapsed_step"])
            resets += int(np.count_nonzero((info["elapsed_step"] == 0)))
            truncations += int(np.count_nonzero(truncated))
    return resets, truncations


def test_trajectories_are_cartpole_without_velocities():
    resets, _ = _compare_with_cartpole(300, num_envs=4, seed=7)
    assert resets > 0, "the run should cover auto-resets"


def test_truncation_matches_cartpole():
    # a short limit so truncations happen alongside terminations
    resets, truncations = _compare_with_cartpole(200, num_envs=4, seed=11, max_episode_steps=15)
    assert resets > 0 and truncations > 0


def test_async_pool_matches_cartpole():
    # batch_size < num_envs: the same env ids come back in the same order from both pools
    _compare_with_cartpole(200, num_envs=6, batch_size=3, seed=5)


def test_spaces():
    full = CartPole.observation_space()
    space = CartPoleNoVelocity.observation_space()
    assert isinstance(space, gym.spaces.Box)
    assert space.shape == (2,) and space.dtype == np.float32
    np.testing.assert_array_equal(space.low, full.low[VISIBLE])
    np.testing.assert_array_equal(space.high, full.high[VISIBLE])
    assert np.isfinite(space.low).all() and np.isfinite(space.high).all()
    assert CartPoleNoVelocity.action_space() == CartPole.action_space()
    with envs.make(TASK, num_envs=2) as pool:
        assert pool.observation_space == space
        assert pool.action_space == gym.spaces.Discrete(2)


def test_task_class():
    assert NATIVE_TASKS[TASK] is CartPoleNoVelocity
    assert issubclass(CartPoleNoVelocity, CartPole)
    assert CartPoleNoVelocity.max_episode_steps == CartPole.max_episode_steps == 500
    assert CartPoleNoVelocity.draws_per_reset == CartPole.draws_per_reset
    task = CartPoleNoVelocity(num_envs=5, seed=0)
    task.reset(np.arange(5))
    np.testing.assert_array_equal(task.observe(slice(None)), task.state[VISIBLE].T.astype(np.float32))
    ids = np.array([4, 1])
    np.testing.assert_array_equal(task.observe(ids), task.state[VISIBLE][:, ids].T.astype(np.float32))


def test_make_spec():
    spec = envs.make_spec(TASK, num_envs=8, batch_size=4)
    assert spec.config["task_id"] == TASK
    assert spec.config["num_envs"] == 8 and spec.config["batch_size"] == 4
    assert spec.config["max_episode_steps"] == 500
    assert spec.observation_space == CartPoleNoVelocity.observation_space()
    assert spec.observation_spec().obs.shape == (2,)
    np.testing.assert_array_equal(spec.observation_spec().obs.minimum, spec.observation_space.low)
    np.testing.assert_array_equal(spec.observation_spec().obs.maximum, spec.observation_space.high)
    assert spec.action_spec().num_values == 2
    with envs.make_dm(TASK, num_envs=2) as pool:
        assert pool.spec.observation_space == spec.observation_space


def test_listed_as_built_in():
    ids = envs.list_all_envs()
    assert TASK in ids and "CartPole-v1" in ids
    assert len(ids) == len(set(ids))
    assert TASK not in gym.registry  # built in only


def test_process_backend_rejects_it():
    with pytest.raises(ValueError, match=r"'CartPoleNoVelocity-v1' is built in only.*backend='process' cannot run it"):
        envs.make(TASK, backend="process", num_envs=2)
