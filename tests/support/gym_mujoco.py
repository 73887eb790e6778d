"""Gymnasium's MuJoCo envs as the references the native pool is checked against: `run_both` steps a
pool and one seeded reference env per pool env with the same actions, auto-resetting as EnvPool
does, and asserts every output equal. `legacy_reference` is Gymnasium's v4 env on EnvPool's
pre-v5 physics (no mj_rnePostConstraint after a step), the reference of envs/mujoco/legacy.py."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

import envs


def legacy_reference(gymnasium_id: str, post_constraint: bool = False, **kw: Any) -> gym.Env:
    """Gymnasium's v4 env `gymnasium_id` (Pusher-v4 too, which Gymnasium refuses under MuJoCo >= 3
    for its physics, Gymnasium issue 950; its math is what is checked here), stepping as EnvPool's
    pre-v5 ids do unless post_constraint."""
    import mujoco

    from gymnasium.envs.mujoco import pusher_v4

    real = pusher_v4.mujoco
    if gymnasium_id == "Pusher-v4":
        pusher_v4.mujoco = type("OldMujoco", (), {"__version__": "2.3.7"})  # only its version is read there
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "The environment .* is out of date", DeprecationWarning)
            env = gym.make(gymnasium_id, **kw)
    finally:
        pusher_v4.mujoco = real
    if not post_constraint:
        base = env.unwrapped

        def step_without_post_constraint(ctrl, n_frames):
            base.data.ctrl[:] = ctrl
            mujoco.mj_step(base.model, base.data, nstep=n_frames)

        base._step_mujoco_simulation = step_without_post_constraint
    return env


def run_both(task_id: str, steps: int, n: int = 3, seed: int = 5, action_scale: float = 1.2,
             make_ref: Callable[..., gym.Env] | None = None, pool_kw: dict[str, Any] | None = None,
             other_info: tuple[str, ...] = (), **kw) -> int:
    """Steps our pool and n seeded reference envs (`make_ref(**kw)`, default Gymnasium's
    `task_id`) with the same actions, asserting every output equal (but the info keys
    `other_info`); returns the number of episodes that ended. `pool_kw` go to the pool only."""
    make_ref = make_ref or (lambda **k: gym.make(task_id, **k))
    refs = [make_ref(**kw) for _ in range(n)]
    rng = np.random.default_rng(seed)
    ended = 0
    with envs.make(task_id, num_envs=n, seed=seed, **kw, **(pool_kw or {})) as pool:
        assert pool.config["backend"] == "mujoco"
        assert pool.observation_space == refs[0].observation_space
        obs, info = pool.reset()
        for i, ref in enumerate(refs):
            ref_obs, ref_info = ref.reset(seed=seed + i)
            np.testing.assert_array_equal(obs[i], ref_obs)
            for k, v in ref_info.items():
                np.testing.assert_array_equal(info[k][i], v, err_msg=k)
        space = pool.action_space
        done = np.zeros(n, bool)
        for t in range(steps):
            # past the bounds too: both pass actions to MuJoCo unclipped (it clamps ctrl itself)
            actions = rng.uniform(action_scale * space.low, action_scale * space.high, (n, *space.shape)).astype(np.float32)
            obs, reward, terminated, truncated, info = pool.step(actions)
            for i, ref in enumerate(refs):
                where = f"{task_id} step {t} env {i}"
                if done[i]:  # the auto-reset step: the action is not applied
                    ref_obs, ref_info = ref.reset()
                    ref_reward, ref_term, ref_trunc = 0.0, False, False
                    assert info["elapsed_step"][i] == 0, where
                else:
                    ref_obs, ref_reward, ref_term, ref_trunc, ref_info = ref.step(actions[i])
                np.testing.assert_array_equal(obs[i], ref_obs, err_msg=where)
                assert reward[i] == np.float32(ref_reward), where
                assert terminated[i] == ref_term, where
                assert truncated[i] == (ref_trunc and not ref_term), where
                for k, v in ref_info.items():
                    if k not in other_info:
                        np.testing.assert_array_equal(info[k][i], v, err_msg=f"{where} {k}")
                done[i] = ref_term or ref_trunc
                ended += bool(done[i])
    for ref in refs:
        ref.close()
    return ended


def assert_spec_is_the_references(task_id: str, ref: gym.Env) -> None:
    """The pool's spec of task_id has the reference env's spaces and time limit, and its info
    every key the reference's step info has."""
    spec = envs.make_spec(task_id)
    assert spec.observation_space == ref.observation_space, task_id
    assert spec.action_space == ref.action_space, task_id
    assert spec.config["max_episode_steps"] == ref.spec.max_episode_steps, task_id
    ref.reset(seed=0)
    step_info = ref.step(ref.action_space.sample())[4]
    assert set(step_info) <= set(spec.extra_info), task_id
    ref.close()
