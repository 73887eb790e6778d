"""dm_control's suite on the native MuJoCo pool: exact to the real dm_control, step for step.

Env i of a pool seeded s is `dm_control.suite.load(domain, task, task_kwargs={"random": s + i})`:
the same episode starts (its RandomState's draws), the same observations, rewards, discounts and
step types under the same actions, through the time limit's last step and the next episode's
start (auto-reset draws from the same RandomState as dm_control's next reset); lqr, endless in
dm_control, ends at EnvPool's 1,000 steps."""

from __future__ import annotations

import dm_env
import numpy as np
import pytest

import envs
from envs.mujoco.dmc import DMC_IDS, dmc_id, served

pytest.importorskip("dm_control")
pytest.importorskip("mujoco")

from tests.support.dm_control_suite import load  # noqa: E402

SERVED = sorted(served())


def compare(task_id: str, steps: int, num_envs: int = 2, seed: int = 3) -> None:
    domain, task = DMC_IDS[task_id]
    refs = [load(domain, task, seed + i) for i in range(num_envs)]
    rng = np.random.default_rng(0)
    with envs.make_dm(task_id, num_envs=num_envs, seed=seed) as pool:
        spec = refs[0].action_spec()
        assert pool.action_spec().shape == spec.shape
        np.testing.assert_array_equal(pool.action_spec().minimum, spec.minimum)
        np.testing.assert_array_equal(pool.action_spec().maximum, spec.maximum)
        keys = list(refs[0].observation_spec())
        assert [k for k in pool.observation_spec()._fields if k in keys] == keys
        low, high = np.maximum(spec.minimum, -1), np.minimum(spec.maximum, 1)  # lqr's motors are unbounded
        # dm_control's lqr has no time limit; EnvPool's ids (and ours) end it at 1,000 steps, where
        # dm_control's next step is a MID: compared up to there
        endless = np.isinf(served()[task_id].time_limit)
        steps = min(steps, 1000) if endless else steps
        ts = pool.reset()
        want = [r.reset() for r in refs]
        for t in range(steps + 1):
            for i, w in enumerate(want):
                where = f"{task_id} env {i} step {t}"
                expected = dm_env.StepType.LAST if endless and t == 1000 else w.step_type
                assert ts.step_type[i] == expected, where
                for k in keys:
                    np.testing.assert_allclose(getattr(ts.observation, k)[i], w.observation[k], rtol=1e-7, atol=1e-6,
                                               err_msg=where + " " + k)
                if w.step_type != dm_env.StepType.FIRST:
                    np.testing.assert_allclose(ts.reward[i], w.reward, rtol=1e-6, atol=1e-7, err_msg=where)
                    assert ts.discount[i] == w.discount, where
            action = rng.uniform(low, high, (num_envs, *spec.shape))
            ts = pool.step(action)
            want = [r.step(a) for r, a in zip(refs, action)]


@pytest.mark.parametrize("task_id", SERVED)
def test_short_episodes_are_dm_controls(task_id):
    compare(task_id, 40)


@pytest.mark.slow
@pytest.mark.parametrize("task_id", SERVED)
def test_a_whole_episode_and_the_next_start_are_dm_controls(task_id):
    compare(task_id, 1002, num_envs=1)


def test_ids_are_envpools():
    assert dmc_id("ball_in_cup", "catch") == "BallInCupCatch-v1"
    assert dmc_id("humanoid_CMU", "run") == "HumanoidCMURun-v1"
    assert dmc_id("lqr", "lqr_2_1") == "LqrLqr21-v1"
    assert len(DMC_IDS) == 51
    assert set(SERVED) <= set(DMC_IDS) and set(SERVED) <= set(envs.list_all_envs())
