"""EnvPool's contract (seed 001), for both backends: outputs, auto-reset, async, determinism."""

import dm_env
import numpy as np
import pytest

import envs
from tests.support.pool_checks import assert_async_matches_sync

BACKENDS = ["native", "process"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def make(backend, **kw):
    kw.setdefault("num_threads", 2) if backend == "process" else None
    return envs.make("CartPole-v1", backend=backend, **kw)


def test_gym_outputs_have_first_dim_num_envs(backend):
    with make(backend, num_envs=3) as pool:
        obs, info = pool.reset()
        assert obs.shape == (3, 4) and obs.dtype == np.float32
        assert info["env_id"].tolist() == [0, 1, 2]
        assert info["elapsed_step"].tolist() == [0, 0, 0]
        obs, rew, term, trunc, info = pool.step(np.array([0, 1, 0]))
        assert obs.shape == (3, 4)
        assert rew.shape == term.shape == trunc.shape == (3,)
        assert rew.dtype == np.float32 and term.dtype == bool and trunc.dtype == bool
        assert info["elapsed_step"].tolist() == [1, 1, 1]
        assert pool.observation_space.shape == (4,) and pool.action_space.n == 2


def test_auto_reset_table_of_seed_001(backend):
    """Five step() calls with max_episode_steps=3, exactly as the table in seed 001."""
    with make(backend, num_envs=2, max_episode_steps=3) as pool, make(backend, num_envs=2) as fresh:
        first_obs, _ = fresh.reset()
        calls = [pool.step(np.array([1, 0])) for _ in range(5)]
    elapsed = [c[4]["elapsed_step"].tolist() for c in calls]
    assert elapsed == [[0, 0], [1, 1], [2, 2], [3, 3], [0, 0]]
    # 1: reset, action discarded: same obs as a plain reset, reward 0, not done.
    np.testing.assert_array_equal(calls[0][0], first_obs)
    assert calls[0][1].tolist() == [0, 0] and not calls[0][2].any() and not calls[0][3].any()
    for c in calls[1:3]:
        assert c[1].tolist() == [1, 1] and not c[2].any() and not c[3].any()
    # 4: hit max_episode_steps: truncated, never terminated.
    assert calls[3][3].tolist() == [True, True] and not calls[3][2].any()
    # 5: reset again, action discarded.
    assert calls[4][1].tolist() == [0, 0] and not calls[4][2].any() and not calls[4][3].any()


def test_auto_reset_after_termination(backend):
    with make(backend, num_envs=1) as pool:
        pool.reset()
        for _ in range(100):
            obs, rew, term, trunc, info = pool.step(np.array([1]))
            if term[0]:
                break
        assert term[0] and not trunc[0] and rew[0] == 1.0
        obs, rew, term, trunc, info = pool.step(np.array([1]))
        assert info["elapsed_step"][0] == 0 and rew[0] == 0.0 and not term[0]
        assert np.abs(obs).max() <= 0.05  # a fresh CartPole state


def test_dm_timesteps(backend):
    with envs.make_dm("CartPole-v1", backend=backend, num_envs=2, max_episode_steps=2) as pool:
        ts = pool.reset()
        assert isinstance(ts, dm_env.TimeStep)
        assert ts.step_type.tolist() == [dm_env.StepType.FIRST] * 2
        assert ts.reward.tolist() == [0, 0] and ts.discount.tolist() == [1, 1]
        assert ts.observation.obs.shape == (2, 4) and ts.observation.env_id.tolist() == [0, 1]
        ts = pool.step(np.array([0, 1]))
        assert ts.step_type.tolist() == [dm_env.StepType.MID] * 2
        ts = pool.step(np.array([0, 1]))
        assert ts.step_type.tolist() == [dm_env.StepType.LAST] * 2
        assert ts.discount.tolist() == [1.0, 1.0]  # truncation keeps the discount
        ts = pool.step(np.array([0, 1]))
        assert ts.step_type.tolist() == [dm_env.StepType.FIRST] * 2
    with envs.make_dm("CartPole-v1", backend=backend, num_envs=1) as pool:
        pool.reset()
        for _ in range(100):
            ts = pool.step(np.array([1]))
            if ts.step_type[0] == dm_env.StepType.LAST:
                break
        assert ts.discount[0] == 0.0  # termination


def test_send_formats_are_equivalent(backend):
    results = []
    for form in ("array", "array+id", "dict"):
        with make(backend, num_envs=3, seed=5) as pool:
            pool.reset()
            a = np.array([1, 0, 1], np.int32)
            if form == "array":
                pool.send(a)
            elif form == "array+id":
                pool.send(a, np.arange(3))
            else:
                pool.send({"action": a, "env_id": np.arange(3, dtype=np.int32)})
            results.append(pool.recv())
    for r in results[1:]:
        np.testing.assert_array_equal(r[0], results[0][0])


def test_sync_determinism(backend):
    def run():
        with make(backend, num_envs=4, seed=3) as pool:
            rng = np.random.default_rng(0)
            out = [pool.reset()[0]]
            for _ in range(60):
                out.append(pool.step(rng.integers(0, 2, 4))[0])
        return np.stack(out)

    np.testing.assert_array_equal(run(), run())


def test_seed_i_is_seed_plus_i():
    with envs.make("CartPole-v1", num_envs=3, seed=10) as a, envs.make("CartPole-v1", num_envs=1, seed=12) as b:
        np.testing.assert_array_equal(a.reset()[0][2], b.reset()[0][0])


def test_native_and_process_agree():
    rng = np.random.default_rng(1)
    actions = rng.integers(0, 2, (80, 4))
    outs = []
    for backend in BACKENDS:
        with make(backend, num_envs=4, seed=9) as pool:
            out = [pool.reset()[0]]
            out += [np.concatenate([r[0], r[1][:, None], r[2][:, None], r[3][:, None]], 1) for r in map(pool.step, actions)]
        outs.append(out)
    for x, y in zip(*outs):
        np.testing.assert_array_equal(x, y)


def test_async_recv_returns_batch_size_tagged_envs(backend):
    with make(backend, num_envs=6, batch_size=2) as pool:
        pool.async_reset()
        seen = []
        for _ in range(3):
            obs, rew, term, trunc, info = pool.recv()
            assert obs.shape == (2, 4) and len(info["env_id"]) == 2
            seen += info["env_id"].tolist()
        assert sorted(seen) == list(range(6))
        # a subset of the ready envs may be sent; recv then returns only envs that were sent
        pool.send(np.array([1, 1]), np.array([seen[4], seen[1]]))
        pool.send(np.array([0]), np.array([seen[0]]))
        obs, rew, term, trunc, info = pool.recv()
        assert set(info["env_id"].tolist()) <= {seen[4], seen[1], seen[0]}
        assert (info["elapsed_step"] == 1).all()


def test_async_send_without_env_id_uses_last_batch(backend):
    with make(backend, num_envs=4, batch_size=2) as pool:
        pool.async_reset()
        ids = pool.recv()[4]["env_id"]
        pool.send(np.array([1, 1]))  # acts on `ids`
        # The next two batches hold the other two envs' resets and `ids`' first steps, in
        # whichever order the workers finish.
        infos = [pool.recv()[4] for _ in range(2)]
        stepped = np.concatenate([i["env_id"][i["elapsed_step"] == 1] for i in infos])
        reset = np.concatenate([i["env_id"][i["elapsed_step"] == 0] for i in infos])
        assert sorted(stepped.tolist()) == sorted(ids.tolist())
        assert sorted(reset.tolist()) == sorted(set(range(4)) - set(ids.tolist()))


def test_async_results_per_env_match_sync(backend):
    assert_async_matches_sync(lambda **kw: make(backend, **kw), np.random.default_rng(3).integers(0, 2, (4, 41)))


def test_reset_subset_returns_those_envs_in_order(backend):
    with make(backend, num_envs=4) as pool:
        pool.reset()
        pool.step(np.ones(4, int))
        obs, info = pool.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 0] and (info["elapsed_step"] == 0).all()
        obs, rew, term, trunc, info = pool.step(np.ones(4, int))
        assert info["elapsed_step"].tolist() == [1, 2, 1, 2]


def test_spec_and_config():
    spec = envs.make_spec("CartPole-v1", num_envs=8, batch_size=4)
    assert spec.config["num_envs"] == 8 and spec.config["batch_size"] == 4
    assert spec.config["seed"] == 42 and spec.config["max_episode_steps"] == 500
    assert spec.observation_space.shape == (4,)
    assert spec.action_spec().num_values == 2
    assert spec.observation_spec().obs.shape == (4,)
    with envs.make("CartPole-v1", num_envs=2) as pool:
        assert pool.config["num_envs"] == 2 and pool.config["batch_size"] == 2
        assert pool.spec.action_space == spec.action_space


def test_list_all_envs():
    ids = envs.list_all_envs()
    for t in ("CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1", "FrozenLake-v1"):
        assert t in ids
    assert len(ids) == len(set(ids))


def test_the_envs_demo_runs_sync_then_async():
    """`python -m experiments.envs_demo`, the README's first look at the pool, briefly."""
    from tests.support.cli import run_experiment

    out = run_experiment("experiments.envs_demo", "--num_envs=8", "--steps=50")
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("CartPole-v1: ") and " sync (num_envs=8, batch_size=8)" in lines[1]
    assert "async (num_envs=8, batch_size=4)" in lines[2] and "env steps/s" in lines[2]
