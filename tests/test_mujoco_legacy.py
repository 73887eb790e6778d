"""EnvPool's v4 and older gym MuJoCo ids on the native pool (envs/mujoco/legacy.py) against
Gymnasium's v4 envs on EnvPool's pre-v5 physics (no mj_rnePostConstraint after a step): whole
seeded runs with auto-resets, step for step and bit for bit, default and non-default kwargs, the
v2/v3 aliases, post_constraint=True against Gymnasium's own physics, and rendering."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import envs
from envs.mujoco import LEGACY_MUJOCO_TASKS
from tests.support.gym_mujoco import assert_spec_is_the_references, legacy_reference, run_both

pytest.importorskip("mujoco", reason="the mujoco extra is not installed: pip install -e '.[mujoco]'")

V4 = [t for t in LEGACY_MUJOCO_TASKS if t.endswith("-v4")]
OLDER = [t for t in LEGACY_MUJOCO_TASKS if not t.endswith("-v4")]


def v4_of(task_id: str) -> str:
    return f"{task_id.split('-')[0]}-v4"


@pytest.mark.parametrize("task_id", V4)
def test_v4_runs_equal_gymnasium_v4_without_post_constraint(task_id):
    ended = run_both(task_id, 120, make_ref=functools.partial(legacy_reference, task_id), max_episode_steps=40)
    assert ended >= 3  # every env crossed an auto-reset


@pytest.mark.parametrize("task_id", [t for t in OLDER if t not in ("Ant-v3", "Humanoid-v3")])
def test_older_ids_are_their_v4_task(task_id):
    run_both(task_id, 60, n=2, make_ref=functools.partial(legacy_reference, v4_of(task_id)), max_episode_steps=25)


def test_ant_v3_observes_and_pays_for_contact_forces():
    """gym 0.21's Ant-v3 is Gymnasium's Ant-v4 with use_contact_forces, but for v4's info, which
    overwrites reward_ctrl with the contact cost: v3 keeps reward_ctrl and adds reward_contact."""
    assert envs.make_spec("Ant-v3").observation_space.shape == (111,)
    ref = functools.partial(legacy_reference, "Ant-v4", use_contact_forces=True)
    # with post_constraint=True the contact forces are not zero, so the cost is really paid
    for post in (False, True):
        run_both("Ant-v3", 40, n=2, make_ref=functools.partial(ref, post_constraint=post), contact_force_range=(-0.5, 0.5),
                 max_episode_steps=15, pool_kw={"post_constraint": post} if post else {}, other_info=("reward_ctrl",))
    with envs.make("Ant-v3", num_envs=1, seed=0, post_constraint=True) as pool:
        env = legacy_reference("Ant-v4", post_constraint=True, use_contact_forces=True)
        pool.reset()
        env.reset(seed=0)
        action = np.full((1, 8), 0.5, np.float32)
        for _ in range(20):  # the legs touch the floor
            _, _, _, _, info = pool.step(action)
            _, _, _, _, ref_info = env.step(action[0])
        assert info["reward_contact"][0] == ref_info["reward_ctrl"] < 0  # v4's misplaced contact cost
        assert info["reward_ctrl"][0] == -0.5 * np.square(action).sum()


def test_humanoid_v3_pays_the_contact_cost():
    """gym 0.21's Humanoid-v3: v4's task minus the clipped contact cost, reported as reward_impact;
    zero on the pre-v5 physics (no contact forces), real with post_constraint=True."""
    run_both("Humanoid-v3", 40, n=2, make_ref=functools.partial(legacy_reference, "Humanoid-v4"), max_episode_steps=15)
    env = legacy_reference("Humanoid-v4", post_constraint=True, terminate_when_unhealthy=False)
    with envs.make("Humanoid-v3", num_envs=1, seed=3, post_constraint=True, contact_cost_weight=1e-6,
                   terminate_when_unhealthy=False) as pool:
        obs, _ = pool.reset()
        np.testing.assert_array_equal(obs[0], env.reset(seed=3)[0])
        actions = np.random.default_rng(0).uniform(-0.4, 0.4, (40, 1, 17)).astype(np.float32)
        paid = []
        for a in actions:
            obs, reward, _, _, info = pool.step(a)
            ref_obs, ref_reward, *_ = env.step(a[0])
            np.testing.assert_array_equal(obs[0], ref_obs)
            contact = min(1e-6 * np.square(env.unwrapped.data.cfrc_ext).sum(), 10.0)
            assert info["reward_impact"][0] == -contact
            assert reward[0] == np.float32(ref_reward - contact)
            paid.append(contact)
        assert max(paid) > 0


@pytest.mark.parametrize(
    "task_id, kw",
    [
        ("HalfCheetah-v4", dict(forward_reward_weight=2.0, ctrl_cost_weight=0.3, reset_noise_scale=0.5,
                                exclude_current_positions_from_observation=False)),
        ("Hopper-v4", dict(terminate_when_unhealthy=False, healthy_z_range=(0.9, 2.0), healthy_reward=0.5,
                           healthy_angle_range=(-0.5, 0.5), healthy_state_range=(-50.0, 50.0), reset_noise_scale=0.05)),
        ("Walker2d-v4", dict(healthy_z_range=[0.9, 1.9], exclude_current_positions_from_observation=False,
                             terminate_when_unhealthy=False)),
        ("Swimmer-v4", dict(ctrl_cost_weight=0.01, exclude_current_positions_from_observation=False)),
        ("Ant-v4", dict(use_contact_forces=True, contact_force_range=(-0.5, 0.5), contact_cost_weight=1e-3,
                        healthy_z_range=(0.3, 1.0), terminate_when_unhealthy=False)),
        ("Ant-v4", dict(xml_file="ant.xml", exclude_current_positions_from_observation=False)),
        ("Humanoid-v4", dict(healthy_z_range=(1.1, 2.0), forward_reward_weight=2.0, terminate_when_unhealthy=False,
                             exclude_current_positions_from_observation=False)),
    ],
    ids=["halfcheetah", "hopper", "walker2d", "swimmer", "ant-contact", "ant-positions", "humanoid"],
)
def test_v4_kwargs_equal_gymnasium_v4(task_id, kw):
    run_both(task_id, 60, n=2, make_ref=functools.partial(legacy_reference, task_id), max_episode_steps=25, **kw)


@pytest.mark.parametrize("task_id", ["Humanoid-v4", "InvertedDoublePendulum-v4", "Ant-v4"])
def test_post_constraint_true_is_gymnasium_v4_as_it_steps(task_id):
    """post_constraint=True: Gymnasium 1.x's own v4 physics (mj_rnePostConstraint after each step)."""
    kw = {"use_contact_forces": True} if task_id == "Ant-v4" else {}
    run_both(task_id, 40, n=2, make_ref=functools.partial(legacy_reference, task_id, post_constraint=True),
             max_episode_steps=15, pool_kw={"post_constraint": True}, **kw)


def test_the_pre_v5_physics_leaves_contact_forces_zero():
    with envs.make("Humanoid-v4", num_envs=2, seed=0) as pool:
        pool.reset()
        obs = pool.step(np.full((2, 17), 0.3, np.float32))[0]
    assert np.all(obs[:, -84:] == 0) and np.any(obs[:, 22:45] != 0)  # cfrc_ext rows zero, qvel not


def test_spaces_limits_and_info_keys_match_gymnasium_v4():
    for task_id in LEGACY_MUJOCO_TASKS:
        ref = legacy_reference(v4_of(task_id), **({"use_contact_forces": True} if task_id == "Ant-v3" else {}))
        assert_spec_is_the_references(task_id, ref)


def test_bad_kwargs_are_one_line_errors():
    with pytest.raises(ValueError, match="use_contact_forces must be a bool"):
        envs.make("Ant-v4", use_contact_forces=1)
    with pytest.raises(ValueError, match="post_constraint must be a bool"):
        envs.make("Hopper-v3", post_constraint="no")
    with pytest.raises(ValueError, match="unknown kwarg.*forward_reward_weight"):
        envs.make("Ant-v4", forward_reward_weight=2.0)  # v5's kwarg; v4's Ant has none
    with pytest.raises(ValueError, match="runs on backend='mujoco'"):
        envs.make("Ant-v3", backend="process")


def test_a_v4_frame_is_gymnasiums():
    """The v4 env's own camera (its module's DEFAULT_CAMERA_CONFIG: Reacher-v4 tracks the world
    body from above), pixel for pixel."""
    from envs.mujoco import gl

    gl.choose()  # Gymnasium's own choice tries GLFW first, which crashes without a display
    size = dict(width=96, height=72)
    env = legacy_reference("Reacher-v4", render_mode="rgb_array", **size)
    actions = np.random.default_rng(0).uniform(-1, 1, (6, 1, 2)).astype(np.float32)
    with envs.make("Reacher-v4", num_envs=1, seed=2, render_mode="rgb_array", **size) as pool:
        pool.reset()
        env.reset(seed=2)
        frames = [(pool.render()[0], env.render())]
        for a in actions:
            pool.step(a)
            env.step(a[0])
            frames.append((pool.render()[0], env.render()))
    got, want = map(np.stack, zip(*frames))
    assert want.std() > 10 and np.abs(np.diff(want.astype(int), axis=0)).sum() > 0  # a scene that moves
    np.testing.assert_array_equal(got, want)
