"""The native MuJoCo pool against Gymnasium's v5 envs: whole seeded runs with auto-resets, step for
step and bit for bit (observations, rewards, terminated, truncated, info), with default and
non-default task kwargs; then the pool contract (async, snapshot, xla, dm) and bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import envs
from envs.mujoco import MUJOCO_TASKS
from tests.support.cli import child_env
from tests.support.job import assert_trees_equal
from tests.support.gym_mujoco import assert_spec_is_the_references, run_both
from tests.support.pool_checks import assert_async_matches_sync

pytest.importorskip("mujoco", reason="the mujoco extra is not installed: pip install -e '.[mujoco]'")

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("task_id", MUJOCO_TASKS)
def test_whole_runs_equal_gymnasium(task_id):
    ended = run_both(task_id, 120, max_episode_steps=40)
    assert ended >= 3  # every env crossed an auto-reset


@pytest.mark.parametrize(
    "task_id, kw",
    [
        ("HalfCheetah-v5", dict(forward_reward_weight=2.0, ctrl_cost_weight=0.3, reset_noise_scale=0.5,
                                exclude_current_positions_from_observation=False, frame_skip=3)),
        ("Hopper-v5", dict(terminate_when_unhealthy=False, healthy_z_range=(0.9, 2.0), healthy_reward=0.5,
                           healthy_angle_range=(-0.5, 0.5), healthy_state_range=(-50.0, 50.0), reset_noise_scale=0.05)),
        ("Walker2d-v5", dict(healthy_z_range=[0.9, 1.9], exclude_current_positions_from_observation=False)),
        ("Swimmer-v5", dict(ctrl_cost_weight=0.01, exclude_current_positions_from_observation=False)),
        ("Ant-v5", dict(include_cfrc_ext_in_observation=False, main_body="torso", contact_force_range=(-0.5, 0.5),
                        contact_cost_weight=1e-3, healthy_z_range=(0.3, 1.0), terminate_when_unhealthy=False)),
        ("Ant-v5", dict(xml_file="ant.xml", exclude_current_positions_from_observation=False)),
        ("Humanoid-v5", dict(include_cinert_in_observation=False, include_cvel_in_observation=False,
                             contact_cost_range=(-1.0, 1e-4), healthy_z_range=(1.1, 2.0), forward_reward_weight=2.0)),
        ("HumanoidStandup-v5", dict(include_qfrc_actuator_in_observation=False, include_cfrc_ext_in_observation=False,
                                    uph_cost_weight=2.0, impact_cost_range=(-1.0, 1e-3), reset_noise_scale=0.1)),
        ("InvertedDoublePendulum-v5", dict(healthy_reward=3.0, reset_noise_scale=0.3)),
        ("Reacher-v5", dict(reward_dist_weight=0.5, reward_control_weight=2.0, frame_skip=4)),
        ("Pusher-v5", dict(reward_near_weight=1.0, reward_dist_weight=0.3, reward_control_weight=0.5)),
    ],
    ids=["halfcheetah", "hopper", "walker2d", "swimmer", "ant", "ant-positions", "humanoid", "standup", "double-pendulum",
         "reacher", "pusher"],
)
def test_task_kwargs_equal_gymnasium(task_id, kw):
    run_both(task_id, 60, n=2, max_episode_steps=25, **kw)


def test_spaces_and_info_match_gymnasium():
    for task_id in MUJOCO_TASKS:
        assert_spec_is_the_references(task_id, gym.make(task_id))


def test_async_batches_follow_each_envs_own_trajectory():
    actions = np.random.default_rng(3).uniform(-1, 1, (4, 30, 6)).astype(np.float32)
    assert_async_matches_sync(lambda **kw: envs.make("HalfCheetah-v5", max_episode_steps=12, **kw), actions)


def test_snapshot_resumes_exactly():
    rng = np.random.default_rng(0)
    acts = rng.uniform(-1, 1, (30, 3, 8)).astype(np.float32)
    with envs.make("Ant-v5", num_envs=3, seed=2, max_episode_steps=20) as a:
        a.reset()
        for t in range(10):
            a.step(acts[t])
        snap = a.snapshot()
        want = [a.step(acts[t]) for t in range(10, 30)]
    with envs.make("Ant-v5", num_envs=3, seed=99, max_episode_steps=20) as b:
        b.reset()
        b.restore(snap)
        got = [b.step(acts[t]) for t in range(10, 30)]
    assert_trees_equal(got, want, "the restored pool's steps")


def test_dm_output_and_xla():
    import jax
    import jax.numpy as jnp

    with envs.make_dm("Hopper-v5", num_envs=2, seed=1) as pool:
        ts = pool.reset()
        assert ts.observation.obs.shape == (2, 11) and ts.observation.x_position.shape == (2,)
    actions = np.random.default_rng(1).uniform(-1, 1, (5, 2, 3)).astype(np.float32)
    with envs.make("Hopper-v5", num_envs=2, seed=1) as pool:
        pool.reset()
        want = [pool.step(a) for a in actions]
    with envs.make("Hopper-v5", num_envs=2, seed=1) as pool:
        handle, _, _, step = pool.xla()
        pool.reset()
        run = jax.jit(lambda h, acts: jax.lax.scan(lambda h, a: step(h, a), h, acts)[1])
        got = run(handle, jnp.asarray(actions))
    np.testing.assert_array_equal(np.asarray(got[0]), np.stack([w[0] for w in want]).astype(np.asarray(got[0]).dtype))
    np.testing.assert_array_equal(np.asarray(got[1]), np.stack([w[1] for w in want]))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"unknown kwarg\(s\) \['healthy_rewrd'\]"):
        envs.make("Hopper-v5", healthy_rewrd=2.0)
    with pytest.raises(ValueError, match="frame_skip must be an int >= 1"):
        envs.make("HalfCheetah-v5", frame_skip=0)
    with pytest.raises(ValueError, match="healthy_z_range must be a \\(low, high\\) pair"):
        envs.make("Hopper-v5", healthy_z_range=0.7)
    with pytest.raises(ValueError, match="main_body 'head' is not a body"):
        envs.make("Ant-v5", main_body="head")
    with pytest.raises(ValueError, match="xml_file 'nope.xml': no such file"):
        envs.make("Ant-v5", xml_file="nope.xml")
    with envs.make("HalfCheetah-v5", num_envs=2) as pool:
        pool.reset()
        with pytest.raises(ValueError, match=r"action must have shape \(2, 6\)"):
            pool.step(np.zeros((2, 5), np.float32))
        with pytest.raises(ValueError, match="NaN or Inf"):
            pool.step(np.full((2, 6), np.nan, np.float32))
        pool.step(np.zeros((2, 6), np.float32))  # still usable


def test_an_unstable_simulation_stops_the_pool_with_a_clear_error():
    """Huge initial velocities make MuJoCo warn of a bad qacc and reset the env's state; the pool
    raises, naming the envs, instead of returning a reset as a step's result."""
    with envs.make("Hopper-v5", num_envs=2, reset_noise_scale=1e12) as pool:
        pool.reset()
        with pytest.raises(RuntimeError, match=r"env_id \[0, 1\] became unstable"):
            for _ in range(5):
                pool.step(np.zeros((2, 3), np.float32))
        assert pool.closed


def test_process_backend_runs_gymnasiums_own_env():
    with envs.make("Swimmer-v5", num_envs=2, backend="process", num_threads=1, seed=0) as pool:
        assert pool.config["backend"] == "process"
        assert pool.reset()[0].shape == (2, 8)


def test_building_a_pool_prints_nothing():
    """MuJoCo 4.0 warns about Gymnasium's XML files on every load; the pool loads once, quietly."""
    code = "import envs; p = envs.make('Ant-v5', num_envs=8); p.reset(); p.close(); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok" and out.stderr == "", out.stderr


_TIMER_DRILL = """
import ctypes, mujoco, numpy as np, envs
from envs.mujoco.build import mujoco_functions
slot = ctypes.c_void_p.from_address(mujoco_functions()["mjcb_time"])
a = envs.make("Hopper-v5", num_envs=2, num_threads=2, seed=0)
assert slot.value, "the bindings install their timer with the first MjData"
a.reset(); a.step(np.zeros((2, 3)))
assert slot.value is None, "the pool's jobs turn the bindings' timer off"
assert all(d.timer[mujoco.mjtTimer.mjTIMER_STEP].duration == 0 for d in a._backend._datas)
calls = []
def user_timer():
    calls.append(1)
    return float(len(calls))
mujoco.set_mjcb_time(user_timer)
b = envs.make("Hopper-v5", num_envs=2, num_threads=2, seed=0)
b.reset(); b.step(np.zeros((2, 3))); a.step(np.zeros((2, 3)))
assert mujoco.get_mjcb_time() is user_timer and slot.value, "a timer the user set stays"
assert calls and all(d.timer[mujoco.mjtTimer.mjTIMER_STEP].duration > 0 for d in b._backend._datas)
print("ok")
"""


def test_the_bindings_profiling_timer_is_off_while_the_pool_steps_and_a_users_own_stays():
    """The `mujoco` bindings install a clock-reading mjcb_time with the first MjData (MuJoCo reads it
    ~20 times an mj_step to fill mjData.timer); the pool's jobs turn it off (kernel.c), and leave a
    timer the user set with mujoco.set_mjcb_time. Process-wide state: checked in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _TIMER_DRILL], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_worker_threads_and_their_pinning():
    """num_threads threads step envs (default min(batch_size, cores)): the caller, while it waits,
    and num_threads - 1 workers; thread_affinity_offset pins worker t to core offset + t, as
    EnvPool does. num_threads=1: no worker, the caller steps every env in recv."""
    import os
    import threading

    def threads() -> set[int]:
        return {int(t) for t in os.listdir("/proc/self/task")}

    before = threads()
    with envs.make("Hopper-v5", num_envs=4, num_threads=3, thread_affinity_offset=0) as pool:
        pool.reset()
        new = threads() - before - {threading.get_native_id()}
        assert len(new) == 2
        cores = os.cpu_count() or 1
        pinned = sorted(sorted(os.sched_getaffinity(t)) for t in new)
        assert pinned == sorted([[t % cores] for t in range(2)])
    assert not (threads() - before), "close() stops the workers"
    actions = np.random.default_rng(0).uniform(-1, 1, (6, 4, 3)).astype(np.float32)
    results = {}
    for n in (1, 2):
        with envs.make("Hopper-v5", num_envs=4, batch_size=2, num_threads=n, seed=0) as pool:
            assert len(threads() - before - {threading.get_native_id()}) == n - 1
            pool.async_reset()
            got: dict[int, list] = {i: [] for i in range(4)}
            for _ in range(12):
                obs, reward, *_, info = pool.recv()
                ids = info["env_id"]
                for i, row in zip(ids, obs):
                    got[int(i)].append(row)
                # each env's k-th action is row k of its own: the same whatever order envs come back in
                pool.send(np.stack([actions[len(got[int(i)]) - 1, i] for i in ids]), ids)
            results[n] = got
    for i in range(4):  # each env's trajectory is the same whatever thread stepped it
        k = min(len(results[1][i]), len(results[2][i]))
        assert k >= 3, f"env {i} came back {k} times"
        np.testing.assert_array_equal(np.array(results[1][i][:k]), np.array(results[2][i][:k]))


@pytest.mark.slow(seconds=3)
def test_ppo_mujoco_preset_runs_on_the_native_pool():
    code = "from experiments import ppo; print(ppo.preset('HalfCheetah-v5') is ppo.MUJOCO)"  # its own process: absl flags
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.split()[-1] == "True", out.stderr[-2000:]
    assert envs.make_spec("HalfCheetah-v5").config["backend"] == "mujoco"


def test_a_run_leaves_no_mujoco_log_and_prints_no_model_warning(tmp_path):
    """MuJoCo's own warning handler prints each warning and appends it to MUJOCO_LOG.TXT in the working
    directory; the pool routes them to the `envs.mujoco` logger (the settotalmass deprecation that
    every load of Gymnasium's XML files raises is dropped), so nothing is left behind, Gymnasium's own
    envs in the same process included."""
    script = ("import envs, gymnasium as gym\n"
              "with envs.make('HalfCheetah-v5', num_envs=2) as pool:\n"
              "    pool.reset(); pool.step(pool.action_space.sample()[None].repeat(2, 0))\n"
              "gym.make('HalfCheetah-v5').reset(seed=0)\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=child_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr.strip() == "" and list(tmp_path.iterdir()) == [], (out.stderr[-3000:], list(tmp_path.iterdir()))


def test_mujocos_warnings_reach_the_logger(caplog):
    """A real warning from MuJoCo's C code (an unstable simulation) after the pool routed them (in
    a process where no one set a handler: dm_control sets its own when imported, as a test of this
    worker may have done, and that one is kept; restored after)."""
    import mujoco

    from envs.mujoco.log import route_warnings

    before = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(None)
    try:
        route_warnings()
        model = mujoco.MjModel.from_xml_string(
            "<mujoco><worldbody><body><freejoint/><geom size='.1'/></body></worldbody></mujoco>")
        data = mujoco.MjData(model)
        data.qvel[:] = 1e20
        with caplog.at_level("WARNING", logger="envs.mujoco"):
            mujoco.mj_step(model, data)
    finally:
        mujoco.set_mju_user_warning(before)
    assert any("MuJoCo: Nan, Inf or huge value in QVEL" in r.getMessage() for r in caplog.records), caplog.text


def test_info_holds_each_episodes_start_state_as_envpools_test_build():
    """qpos0 and qvel0 (EnvPool's test info): the state each env's reset drew, on every step of
    its episode, the next episode's after an auto-reset."""
    kw = dict(exclude_current_positions_from_observation=False, max_episode_steps=5)
    with envs.make("Hopper-v5", num_envs=2, seed=4, **kw) as pool:
        obs, info = pool.reset()
        np.testing.assert_array_equal(info["qpos0"], obs[:, :6])
        np.testing.assert_array_equal(info["qvel0"], obs[:, 6:])  # reset velocities are within the clip
        start = info["qpos0"].copy()
        for _ in range(5):
            obs, _, _, truncated, info = pool.step(np.zeros((2, 3), np.float32))
            np.testing.assert_array_equal(info["qpos0"], start)
        assert truncated.all()
        obs, _, _, _, info = pool.step(np.zeros((2, 3), np.float32))  # the auto-reset
        np.testing.assert_array_equal(info["qpos0"], obs[:, :6])
        assert not np.array_equal(info["qpos0"], start)


def test_frame_stack_keeps_the_last_k_observations_oldest_first():
    """EnvPool's frame_stack on the gym ids: (k, *obs) observations; a reset fills the stack with
    its observation, each step drops the oldest; a snapshot carries the stacks."""
    assert envs.make_spec("HalfCheetah-v5", frame_stack=3).observation_space.shape == (3, 17)
    assert envs.make_spec("HalfCheetah-v5", frame_stack=1).observation_space.shape == (17,)
    actions = np.random.default_rng(0).uniform(-1, 1, (8, 2, 6)).astype(np.float32)
    with envs.make("HalfCheetah-v5", num_envs=2, seed=3, max_episode_steps=4) as plain, \
            envs.make("HalfCheetah-v5", num_envs=2, seed=3, max_episode_steps=4, frame_stack=3) as stacked:
        single = [plain.reset()[0]]  # single[i]: the observation after i steps; 5 is an auto-reset's
        obs, _ = stacked.reset()
        np.testing.assert_array_equal(obs, np.repeat(single[0][:, None], 3, 1))
        got = []
        for t, a in enumerate(actions):
            single.append(plain.step(a)[0])
            got.append(stacked.step(a)[0])
            if t == 4:
                snap = stacked.snapshot()
        for i, obs in enumerate(got, start=1):
            episode_start = 0 if i < 5 else 5
            want = [single[max(episode_start, i - 2 + j)] for j in range(3)]
            np.testing.assert_array_equal(obs, np.stack(want, 1), err_msg=f"after {i} steps")
        stacked.restore(snap)
        for i, a in enumerate(actions[5:], start=6):
            np.testing.assert_array_equal(stacked.step(a)[0], got[i - 1], err_msg=f"after {i} steps, restored")
    with pytest.raises(ValueError, match="frame_stack must be an int >= 1"):
        envs.make("Hopper-v5", frame_stack=0)
