"""The pool over JAX-native envs (`envs.make("gymnax/CartPole-v1", ...)`, envs/jax/backend.py):
EnvPool's contract and API, as the other backends keep it (tests/test_pool_contract.py; its
`xla()` runs EnvPool's examples in tests/test_xla.py, its seeded resets in
tests/test_pool_gymnasium_api.py)."""

import pickle

import dm_env
import gymnasium as gym
import jax
import numpy as np
import pytest

import envs
from tests.support.pool_checks import assert_async_matches_sync

pytest.importorskip("gymnax")
ID = "gymnax/CartPole-v1"


N = 4  # every pool here has 4 envs and the default limit or 3 steps: few programs to compile


def test_gym_outputs_and_the_auto_reset_table():
    """Five steps with max_episode_steps=3, as seed 001's table (test_pool_contract)."""
    with envs.make(ID, num_envs=N, max_episode_steps=3, seed=5) as pool:
        assert pool.config["backend"] == "jax" and pool.config["max_episode_steps"] == 3
        assert pool.observation_space.shape == (4,) and pool.action_space.n == 2
        calls = [pool.step(np.array([1, 0, 1, 0])) for _ in range(5)]
    obs, rew, term, trunc, info = calls[0]
    assert obs.shape == (N, 4) and obs.dtype == np.float32 and obs.flags.writeable
    assert rew.dtype == np.float32 and term.dtype == bool and info["env_id"].tolist() == [0, 1, 2, 3]
    assert [c[4]["elapsed_step"].tolist() for c in calls] == [[0] * N, [1] * N, [2] * N, [3] * N, [0] * N]
    assert calls[0][1].tolist() == [0] * N and not calls[0][2].any() and not calls[0][3].any()
    assert calls[3][3].tolist() == [True] * N and not calls[3][2].any()  # the limit truncates
    assert calls[4][1].tolist() == [0] * N and not calls[4][3].any()
    with envs.make(ID, num_envs=N, seed=5) as fresh:
        np.testing.assert_array_equal(fresh.reset()[0], calls[0][0])  # the first step resets


def test_streams_are_the_jax_envs_keyed_by_seed_plus_index():
    """Env i of a pool with seed s is JaxEnv.reset(pool_key(), n, first_index=s)'s env i
    (`reset_as_pool(s, n)`, what the Anakin loop starts from), so a pool with seed s + 1 holds the
    same envs shifted by one, and reset(seed=s) replays seed s."""
    from envs.jax.core import pool_key
    from envs.jax.registry import make_jax_env

    env = make_jax_env(ID)
    _, step = jax.jit(env.reset, static_argnums=(1, 2))(pool_key(), N, 7)
    _, as_pool = jax.jit(env.reset_as_pool, static_argnums=(0, 1))(7, N)
    np.testing.assert_array_equal(np.asarray(as_pool.obs), np.asarray(step.obs))
    with envs.make(ID, num_envs=N, seed=7) as pool, envs.make(ID, num_envs=N, seed=8) as shifted:
        obs, _ = pool.reset()
        np.testing.assert_array_equal(obs, np.asarray(step.obs))
        np.testing.assert_array_equal(shifted.reset()[0][:-1], obs[1:])
        pool.step(np.ones(N, int))
        np.testing.assert_array_equal(pool.reset(seed=7)[0], obs)
        np.testing.assert_array_equal(pool.reset(seed=[None, 8, None, None], env_id=np.array([1]))[0], obs[1:2])


def test_dm_timesteps():
    with envs.make_dm(ID, num_envs=N, max_episode_steps=3) as pool:
        ts = pool.reset()
        assert isinstance(ts, dm_env.TimeStep) and ts.step_type.tolist() == [dm_env.StepType.FIRST] * N
        assert ts.observation.obs.shape == (N, 4) and ts.observation.env_id.tolist() == [0, 1, 2, 3]
        for _ in range(3):
            ts = pool.step(np.array([0, 1, 0, 1]))
        assert ts.step_type.tolist() == [dm_env.StepType.LAST] * N and ts.discount.tolist() == [1.0] * N


def test_async_matches_sync_and_single_env_resets():
    actions = np.random.default_rng(0).integers(0, 2, (N, 12))
    assert_async_matches_sync(lambda **kw: envs.make(ID, **kw), actions, batch_size=2, shuffle=np.random.default_rng(1))
    with envs.make(ID, num_envs=N, seed=2) as pool:
        first, _ = pool.reset()
        pool.step(np.ones(N, int))
        obs, info = pool.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 0] and info["elapsed_step"].tolist() == [0, 0]
        assert not np.array_equal(obs, first[[2, 0]])  # their second episodes
        np.testing.assert_array_equal(pool.reset(seed=2)[0], first)  # reseeded: the first ones again
        pool.step(np.ones(N, int))
        pool.reset(np.array([2, 0]))
        obs, _, _, _, info = pool.step(np.ones(N, int))
        assert info["elapsed_step"].tolist() == [1, 2, 1, 2]


def test_snapshot_restore_and_vector_env():
    with envs.make(ID, num_envs=N, seed=4) as pool:
        assert isinstance(pool, gym.vector.VectorEnv)
        pool.reset()
        snap = pool.snapshot()
        want = [pool.step(np.array([1, 0, 1, 1]))[0] for _ in range(3)]
        pool.restore(pickle.loads(pickle.dumps(snap)))
        got = [pool.step(np.array([1, 0, 1, 1]))[0] for _ in range(3)]
        np.testing.assert_array_equal(np.stack(got), np.stack(want))
    stats = gym.wrappers.vector.RecordEpisodeStatistics(envs.make(ID, num_envs=N, max_episode_steps=3))
    stats.reset(seed=0)
    infos = [stats.step(np.zeros(N, int))[-1] for _ in range(3)]
    assert "episode" not in infos[1] and infos[2]["episode"]["l"].tolist() == [3] * N
    stats.close()


def test_minatar_images_channel_first_and_jumanji_dict_observations():
    spec = envs.make_spec(ID.replace("CartPole-v1", "Breakout-MinAtar"), num_envs=N)
    assert spec.observation_space.shape == (4, 10, 10) and spec.observation_spec().obs.shape == (4, 10, 10)
    pytest.importorskip("jumanji")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = envs.make_spec("jumanji/Tetris-v0", num_envs=2)
        assert isinstance(spec.observation_space, gym.spaces.Dict)
        assert isinstance(spec.action_space, gym.spaces.MultiDiscrete)
        assert set(spec.observation_spec().obs) == set(spec.observation_space.spaces)


def test_errors_are_one_line():
    cases = [
        (lambda: envs.make("gymnax/CartPol-v1"), ValueError, r"did you mean gymnax/CartPole-v1"),
        (lambda: envs.make("gymanx/CartPole-v1"), ValueError, r"did you mean gymnax/CartPole-v1\?"),
        (lambda: envs.make(ID, backend="process"), ValueError, r"JAX-native env: it runs on backend='jax' only"),
        (lambda: envs.make("CartPole-v1", backend="jax"), ValueError, r"backend='jax' runs JAX-native envs"),
        (lambda: envs.make(ID, gravty=1.0), ValueError, r"unknown kwarg\(s\) \['gravty'\]"),
        (lambda: envs.make(ID, render_mode="rgb_array"), ValueError, r"gymnax/CartPole-v1 draws no frames in the pool"),
        (lambda: envs.make(ID, num_envs=N, seed=2**31 - 3), ValueError, r"seed=.* is out of range"),
    ]
    for build, error, pattern in cases:
        with pytest.raises(error, match=pattern) as e:
            build()
        assert "\n" not in str(e.value)


@pytest.mark.slow(seconds=10)
def test_the_sebulba_loop_runs_on_a_jax_env():
    """The Sebulba loop builds its pools with envs.make, so a JAX id trains as any env: two
    inferencer threads, each with its own pool of the same jitted programs."""
    import sebulba
    from sebulba.agents import RandomAgent

    cfg = sebulba.LoopConfig(env_id=ID, num_envs=N, steps_per_cycle=8, log_every_s=1000.0)
    with sebulba.GymnasiumLoop(RandomAgent(envs.make_spec(ID)), cfg) as loop:
        ctx = loop.run(max_cycles=6)
        assert ctx.env_steps == 6 * N * 8 and loop.reports[-1]["episodes"] > 0
