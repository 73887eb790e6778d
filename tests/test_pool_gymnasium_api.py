"""The pool is a `gymnasium.vector.VectorEnv` in full (issue 36): Gymnasium's `reset(seed=...,
options=...)` on every backend (a seed replays a pool made with that seed, a list seeds env by
env, no seed keeps the streams), Gymnasium's partial reset and reset options, Gymnasium's vector
wrappers on `envs.make(...)` pools directly (their numbers checked by hand), and EnvPool's
`spec.config.<key>` and `is_async`."""

from __future__ import annotations

import importlib.util
import json
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers.vector import ClipAction, NormalizeObservation, RecordEpisodeStatistics, TransformObservation

import envs
from tests.support.pool_checks import normalized_beside_raw

pytestmark = pytest.mark.timeout(120)

no_mujoco = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="the mujoco extra is not installed")
no_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None, reason="the atari extra is not installed")
no_gymnax = pytest.mark.skipif(importlib.util.find_spec("gymnax") is None, reason="the gymnax extra is not installed")

# One pool kind per backend (and per path of the native one).
BACKENDS = [
    pytest.param("CartPole-v1", {}, "native", id="native-compiled"),
    pytest.param("SignalCorridor-v0", {}, "native", id="native-numpy-dict"),
    pytest.param("CartPole-v1", {"backend": "process", "num_threads": 1}, "process", id="process"),
    pytest.param("Hopper-v5", {}, "mujoco", id="mujoco", marks=no_mujoco),
    pytest.param("Pong-v5", {"num_threads": 1}, "atari", id="atari-vector", marks=no_ale),
    pytest.param("Pong-v5", {"render_mode": "rgb_array"}, "atari", id="atari-single-ale", marks=no_ale),
    pytest.param("gymnax/CartPole-v1", {}, "jax", id="jax", marks=no_gymnax),
]


def random_actions(space: gym.spaces.Space, n: int, steps: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if isinstance(space, gym.spaces.Discrete):
        return [rng.integers(0, space.n, n) for _ in range(steps)]
    return [rng.uniform(space.low, space.high, (n, *space.shape)).astype(np.float32) for _ in range(steps)]


def rows(obs, sel):
    """Rows sel of a batch of observations (an array, or a dict of arrays)."""
    return {k: v[sel] for k, v in obs.items()} if isinstance(obs, dict) else obs[sel]


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    else:
        np.testing.assert_array_equal(a, b)


def differs(a, b) -> bool:
    if isinstance(a, dict):
        return any(differs(a[k], b[k]) for k in a)
    return not np.array_equal(a, b)


# ---------------------------------------------------------------- reset(seed=...)
@pytest.mark.parametrize("task, kw, backend", BACKENDS)
def test_a_seeded_reset_replays_a_pool_made_with_that_seed(task, kw, backend):
    """reset(seed=9) on a pool already in use gives what a pool made with seed=9 gives (its first
    reset, its steps), reset() then keeps the streams (the fresh pool's next episodes), and a
    list seeds env by env: None keeps that env's stream."""
    n, steps, resets = 3, 25, 5
    with envs.make(task, num_envs=n, seed=1, **kw) as pool, envs.make(task, num_envs=n, seed=9, **kw) as fresh:
        assert pool.config.backend == backend
        actions = random_actions(pool.action_space, n, steps, seed=4)
        want = [fresh.reset()[0] for _ in range(resets)] + [fresh.step(a)[0] for a in actions]
        pool.reset()
        for a in random_actions(pool.action_space, n, 30, seed=5):  # the pool's streams move on
            pool.step(a)
        got = [pool.reset(seed=9)[0]] + [pool.reset()[0] for _ in range(resets - 1)] + [pool.step(a)[0] for a in actions]
        assert pool.np_random_seed == 9  # VectorEnv's own generator, as Gymnasium's reset seeds it
        for g, w in zip(got, want):
            assert_same(g, w)
        before = pool.reset()[0]
        mixed = pool.reset(seed=[9, None, 11])[0]  # env 2 is seeded 11 = 9 + 2, as in the seed-9 pool
        assert_same(rows(mixed, [0, 2]), rows(want[0], [0, 2]))
        if task in ("CartPole-v1", "Hopper-v5"):  # continuous initial states: env 1 went on to a new one
            assert differs(rows(mixed, 1), rows(before, 1)) and differs(rows(mixed, 1), rows(want[0], 1))


def test_a_dm_pool_takes_seeds_too():
    with envs.make_dm("Acrobot-v1", num_envs=2, seed=1) as pool, envs.make_dm("Acrobot-v1", num_envs=2, seed=4) as fresh:
        pool.reset()
        pool.step(np.ones(2, np.int64))
        np.testing.assert_array_equal(pool.reset(seed=4).observation.obs, fresh.reset().observation.obs)


@pytest.mark.parametrize("task", ["CartPole-v1", "SignalCorridor-v0"])
def test_a_refused_seeded_reset_changes_no_stream(task):
    """An env still in flight cannot be reset: reset(env_id, seed) then raises before touching any
    env's random stream, so the pool goes on exactly as a twin that never made the call."""
    n = 4
    with envs.make(task, num_envs=n, batch_size=2, seed=3) as pool, envs.make(task, num_envs=n, batch_size=2, seed=3) as twin:
        for p in (pool, twin):
            p.async_reset()
            ids = p.recv()[4]["env_id"]
            p.send(np.zeros(2, np.int64), ids)
        with pytest.raises(ValueError, match="not ready"):
            pool.reset(np.asarray(ids[:1]), seed=77)
        for p in (pool, twin):  # envs 2, 3 (received by neither), then envs 0, 1
            p.recv()
            p.recv()
        with pytest.raises(ValueError, match="duplicates"):
            pool.reset(np.array([2, 2], np.int32), seed=77)
        for _ in range(3):  # resets of every env draw on each env's stream
            assert_same(pool.reset(np.arange(n, dtype=np.int32))[0], twin.reset(np.arange(n, dtype=np.int32))[0])
        assert_same(pool.reset(np.array([3, 1], np.int32), seed=5)[0], rows(twin.reset(seed=5)[0], [3, 1]))


def test_bad_seeds_are_refused():
    with envs.make("CartPole-v1", num_envs=3) as pool:
        for bad in ("1", 1.5, True, {"s": 1}):
            with pytest.raises(ValueError, match="seed must be an int, a list of ints"):
                pool.reset(seed=bad)
        with pytest.raises(ValueError, match=r"must be >= 0, got -1"):
            pool.reset(seed=-1)
        with pytest.raises(ValueError, match=r"one per env \(num_envs=3\), got 2"):
            pool.reset(seed=[1, 2])
        with pytest.raises(ValueError, match="seeds must be ints or None, got '2'"):
            pool.reset(seed=[1, "2", 3])
        with pytest.raises(ValueError, match="options must be a dict"):
            pool.reset(options=["reset_mask"])
        assert pool.reset(seed=np.int64(2))[0].shape == (3, 4)


@no_ale
def test_ale_seeds_are_int32():
    with envs.make("Pong-v5", num_envs=2, num_threads=1) as pool:
        with pytest.raises(ValueError, match=r"seed 2147483648 is out of range.*\[0, 2147483647\].*seed must be <= 2147483646"):
            pool.reset(seed=2**31 - 1)
        pool.reset(seed=2**31 - 2)


# ---------------------------------------------------------------- reset(options=...)
@pytest.mark.parametrize("kw", [{}, {"backend": "process", "num_threads": 1}], ids=["native", "process"])
def test_reset_mask_resets_those_envs_and_returns_every_env(kw):
    n = 4
    with envs.make("CartPole-v1", num_envs=n, seed=3, **kw) as pool, envs.make("CartPole-v1", num_envs=n, seed=3, **kw) as twin:
        with pytest.raises(ValueError, match="needs a full reset"):
            pool.reset(options={"reset_mask": np.array([True, False, False, False])})
        pool.reset()
        twin.reset()
        done = np.zeros(n, bool)
        while not done.any():
            obs, _, term, trunc, _ = pool.step(np.ones(n, np.int64))
            twin.step(np.ones(n, np.int64))
            done = term | trunc
        mask = done.copy()
        mask[np.flatnonzero(~done)[0]] = True  # and one env mid-episode
        options = {"reset_mask": mask}
        got, info = pool.reset(options=options)
        assert options["reset_mask"] is mask  # not popped: RecordEpisodeStatistics reads it after the env
        ids = np.flatnonzero(mask).astype(np.int32)
        np.testing.assert_array_equal(got[mask], twin.reset(ids)[0])
        np.testing.assert_array_equal(got[~mask], obs[~mask])
        np.testing.assert_array_equal(info["_env_id"], mask)
        np.testing.assert_array_equal(info["env_id"][mask], ids)
        np.testing.assert_array_equal(info["_elapsed_step"], mask)
        step = pool.step(np.zeros(n, np.int64))
        want = twin.step(np.zeros(n, np.int64))
        for a, b in zip(step[:4], want[:4]):
            np.testing.assert_array_equal(a, b)
        # a seed with a mask seeds the masked envs only, with seed + i
        got, _ = pool.reset(seed=20, options={"reset_mask": np.array([False, True, False, True])})
        with envs.make("CartPole-v1", num_envs=n, seed=20, **kw) as fresh:
            np.testing.assert_array_equal(got[[1, 3]], fresh.reset()[0][[1, 3]])
        np.testing.assert_array_equal(got[[0, 2]], step[0][[0, 2]])
        with pytest.raises(ValueError, match="either env_id or options"):
            pool.reset(np.array([0], np.int32), options={"reset_mask": mask})
        with pytest.raises(TypeError, match="dtype=np.bool_"):
            pool.reset(options={"reset_mask": mask.astype(int)})
        with pytest.raises(ValueError, match="at least one True"):
            pool.reset(options={"reset_mask": np.zeros(n, bool)})


def test_reset_mask_needs_a_sync_gymnasium_pool():
    for pool in (envs.make("CartPole-v1", num_envs=4, batch_size=2), envs.make_dm("CartPole-v1", num_envs=4)):
        with pool, pytest.raises(ValueError, match="needs a gym or gymnasium pool in sync mode"):
            pool.reset(options={"reset_mask": np.array([True, False, True, False])})


def test_reset_options_reach_gymnasiums_envs_or_are_refused():
    """CartPole's reset takes `low`/`high` bounds for its initial state: worker processes pass
    them to Gymnasium's env; the built-in CartPole refuses them by name."""
    options = {"low": -0.001, "high": 0.001}
    with envs.make("CartPole-v1", num_envs=3, seed=3, backend="process", num_threads=1) as pool:
        obs, _ = pool.reset(seed=3, options=options)
        for i in range(3):
            np.testing.assert_array_equal(obs[i], gym.make("CartPole-v1").reset(seed=3 + i, options=options)[0])
        assert np.abs(obs).max() <= 0.001
        with pytest.raises(ValueError, match="cannot be pickled"):
            pool.reset(options={"f": lambda: 0})
        assert np.abs(pool.reset()[0]).max() > 0.001  # the next resets take no options
    with envs.make("CartPole-v1", num_envs=2) as pool:
        with pytest.raises(ValueError, match=r"reset options \['high', 'low'\]: CartPole-v1 runs on the native backend"):
            pool.reset(options=options)


# ---------------------------------------------------------------- Gymnasium's vector wrappers
def test_record_episode_statistics_on_a_pool():
    n, steps = 4, 300
    env = RecordEpisodeStatistics(envs.make("CartPole-v1", num_envs=n, seed=2))
    env.reset(seed=2)
    rewards, dones, reported = [], [], []
    for action in random_actions(env.single_action_space, n, steps, seed=1):
        _, reward, term, trunc, info = env.step(action)
        rewards.append(reward)
        dones.append(term | trunc)
        if "episode" in info:
            for i in np.flatnonzero(info["_episode"]):
                reported.append((len(rewards) - 1, i, info["episode"]["r"][i], info["episode"]["l"][i]))
    expected = []  # summed by hand; next-step autoreset: the step after an episode's end is its reset
    for i in range(n):
        ret, length, reset_next = 0.0, 0, False
        for t in range(steps):
            if reset_next:
                assert rewards[t][i] == 0.0
                ret, length, reset_next = 0.0, 0, False
                continue
            ret, length = ret + float(rewards[t][i]), length + 1
            if dones[t][i]:
                expected.append((t, i, ret, length))
                reset_next = True
    assert len(expected) >= 8
    assert sorted(reported) == sorted(expected)
    assert env.episode_count == len(expected)
    env.close()
    assert env.unwrapped.closed


def test_normalize_observation_on_a_pool():
    """The wrapper's running mean is the mean of every raw observation the pool returned (a twin
    pool gives the raw ones), and its output is (raw - mean) / std at each step."""
    n = 4
    env = NormalizeObservation(envs.make("CartPole-v1", num_envs=n, seed=4))
    with envs.make("CartPole-v1", num_envs=n, seed=4) as twin:
        # reset(seed=4): Gymnasium's call that raised TypeError on the pool (issue 36)
        seen, _ = normalized_beside_raw(env, twin, random_actions(twin.action_space, n, 200, seed=5), seed=4)
    everything = np.concatenate(seen)
    np.testing.assert_allclose(env.obs_rms.mean, everything.mean(0), rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(env.obs_rms.var, everything.var(0), rtol=1e-3)
    env.close()


def test_clip_action_on_a_pool():
    """ClipAction's clipped actions are the ones that reach the pool (Pendulum's torque in [-2, 2])."""
    n = 3
    pool = envs.make("Pendulum-v1", num_envs=n, seed=6)
    received = []
    step = pool.step
    pool.step = lambda a: (received.append(np.array(a)), step(a))[1]  # what the wrapper sends
    env = ClipAction(pool)
    with envs.make("Pendulum-v1", num_envs=n, seed=6) as twin:
        np.testing.assert_array_equal(env.reset(seed=6)[0], twin.reset()[0])
        for action in random_actions(gym.spaces.Box(-3, 3, (1,)), n, 50, seed=7):
            clipped = np.clip(action, -2.0, 2.0)
            got, want = env.step(action), twin.step(clipped)
            np.testing.assert_array_equal(received[-1], clipped)
            for a, b in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(a, b)
    assert np.abs(np.concatenate(received)).max() == 2.0 and np.abs(np.concatenate(received)).min() < 2.0
    env.close()


def test_transform_observation_on_a_pool():
    n = 3
    box = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    env = TransformObservation(envs.make("CartPole-v1", num_envs=n, seed=8), lambda o: 2 * o + 1, single_observation_space=box)
    assert env.single_observation_space == box and env.observation_space.shape == (n, 4)
    with envs.make("CartPole-v1", num_envs=n, seed=8) as twin:
        np.testing.assert_array_equal(env.reset()[0], 2 * twin.reset()[0] + 1)
        for action in random_actions(twin.action_space, n, 20, seed=9):
            np.testing.assert_array_equal(env.step(action)[0], 2 * twin.step(action)[0] + 1)
    env.close()
    # Without a space, Gymnasium compares the pool's one-env space (EnvPool's) with a batched one
    with envs.make("CartPole-v1", num_envs=n, seed=8) as pool, pytest.warns(UserWarning, match="don't match"):
        assert TransformObservation(pool, lambda o: -o).reset(seed=8)[0].shape == (n, 4)


def test_wrappers_stack_on_a_worker_process_pool():
    n = 2
    env = RecordEpisodeStatistics(NormalizeObservation(envs.make("FrozenLake-v1", num_envs=n, num_threads=1, seed=0,
                                                                is_slippery=False)))  # fmt: skip
    obs, _ = env.reset(seed=0)
    assert obs.shape == (n,) and obs.dtype == np.float32
    for _ in range(40):
        env.step(np.full(n, 1, np.int64))  # down: the agent falls into the hole at (3, 0)
    assert env.episode_count > 0
    env.close()


# ---------------------------------------------------------------- EnvPool's config and is_async
def test_config_reads_as_attributes_and_as_a_dict():
    spec = envs.make_spec("CartPole-v1", num_envs=8, batch_size=4)
    assert spec.config.num_envs == 8 and spec.config.batch_size == 4 and spec.config.seed == 42
    assert spec.config["max_episode_steps"] == spec.config.max_episode_steps == 500
    with pytest.raises(AttributeError, match="no key 'mode'; its keys are"):
        spec.config.mode
    assert "num_envs" in dir(spec.config)
    with envs.make("FrozenLake-v1", num_envs=2, num_threads=1, is_slippery=False, max_episode_steps=7) as pool:
        cfg = pool.config
        assert cfg.is_slippery is False and cfg.max_episode_steps == 7 and cfg.backend == "process"
        assert json.loads(json.dumps(cfg)) == dict(cfg) and pickle.loads(pickle.dumps(cfg)) == cfg
        assert isinstance(cfg, dict)


@no_ale
def test_atari_config_attributes():
    assert envs.make_spec("Breakout-v5", mode=4).config.mode == 4


def test_is_async_and_gymnasium_attributes():
    with envs.make("CartPole-v1", num_envs=4, batch_size=2) as a, envs.make("CartPole-v1", num_envs=4) as s:
        assert a.is_async and not s.is_async
        assert s.num_envs == 4 and s.render_mode is None and s.spec.id == "CartPole-v1"
        assert s.metadata["render_fps"] == gym.make("CartPole-v1").metadata["render_fps"]
        assert s.metadata["autoreset_mode"] is gym.vector.AutoresetMode.NEXT_STEP
        s.close(terminate=True)  # Gymnasium's VectorEnv.close takes kwargs
        assert s.closed
    with envs.make_dm("CartPole-v1", num_envs=4, batch_size=1) as dm:
        assert dm.is_async
    with envs.make("FrozenLake-v1", num_envs=1, num_threads=1) as p:
        assert p.metadata["render_modes"] == []
