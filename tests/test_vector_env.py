"""The Gymnasium vector-env face of the pool (envs/vector.py, issue 26): its spaces and metadata,
step-for-step equality with the pool and with Gymnasium's own SyncVectorEnv (next-step
auto-reset), seeds and partial resets, info in Gymnasium's masked layout, Gymnasium's vector
wrappers on it unchanged, its registration as the built-in ids' vector_entry_point, a
worker-process id, and the arguments it refuses."""

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space
from gymnasium.wrappers.vector import ClipAction, DictInfoToList, NormalizeObservation, RecordEpisodeStatistics

import envs
from envs.vector import GYMNASIUM_VECTOR_ENTRY_POINTS, VectorEnvPool
from tests.support import toy_envs
from tests.support.pool_checks import normalized_beside_raw

toy_envs.register_info_envs()
pytestmark = pytest.mark.timeout(120)

BUILT_IN_IDS = ["CartPole-v1", "Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1"]


def random_actions(space, n, steps, seed=0):
    """A seeded list of batched actions for `steps` steps (Pendulum: beyond its bounds too)."""
    rng = np.random.default_rng(seed)
    if isinstance(space, gym.spaces.Discrete):
        return [rng.integers(0, space.n, n) for _ in range(steps)]
    return [rng.uniform(-3, 3, (n, *space.shape)).astype(np.float32) for _ in range(steps)]


def assert_masked_layout(info, n):
    """Gymnasium's vector info: every key has its boolean mask `_key` of shape (n,)."""
    for k, v in info.items():
        if k.startswith("_") and k[1:] in info:
            continue
        mask = info[f"_{k}"]
        assert mask.dtype == np.bool_ and mask.shape == (n,), k
        if isinstance(v, dict):
            assert_masked_layout(v, n)
        else:
            assert len(v) == n, k


# ---------------------------------------------------------------- spaces and metadata
@pytest.mark.parametrize("task_id", ["CartPole-v1", "Pendulum-v1"])
def test_spaces_and_metadata(task_id):
    with envs.make_vector_env(task_id, 3, seed=1) as vec, envs.make(task_id, num_envs=3, seed=1) as pool:
        assert isinstance(vec, gym.vector.VectorEnv) and vec.num_envs == 3
        assert vec.single_observation_space == pool.observation_space
        assert vec.single_action_space == pool.action_space
        assert vec.observation_space == batch_space(pool.observation_space, 3)
        assert vec.action_space == batch_space(pool.action_space, 3)
        assert vec.observation_space.shape == (3, *pool.observation_space.shape)
        assert vec.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        reference = gym.make(task_id)
        assert vec.metadata["render_fps"] == reference.metadata["render_fps"]
        assert vec.metadata["render_modes"] == ["rgb_array", "human"]
        reference.close()
        assert vec.render_mode is None
        assert vec.spec.id == task_id and vec.spec.kwargs["num_envs"] == 3 and vec.spec.kwargs["seed"] == 1
        assert vec.spec.kwargs["vectorization_mode"] == "vector_entry_point"
        assert vec.pool.config["batch_size"] == 3 and vec.pool.config["seed"] == 1
        assert repr(vec) == f"VectorEnvPool({task_id}, num_envs=3, backend='native')"
        obs, info = vec.reset()
        assert vec.observation_space.contains(obs)
        assert_masked_layout(info, 3)
    assert vec.closed and vec.pool.closed


def test_close_is_idempotent_and_render():
    vec = envs.make_vector_env("CartPole-v1", 2, render_mode="rgb_array")
    vec.reset(seed=0)
    frames = vec.render()
    assert isinstance(frames, tuple) and len(frames) == 2
    assert all(f.shape == (400, 600, 3) and f.dtype == np.uint8 for f in frames)
    ref = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync", render_mode="rgb_array")
    ref.reset(seed=0)
    np.testing.assert_array_equal(np.stack(frames), np.stack(ref.render()))
    ref.close()
    vec.close()
    vec.close()
    assert vec.closed and vec.pool.closed
    with envs.make_vector_env("CartPole-v1", 2) as plain:
        plain.reset()
        with pytest.warns(UserWarning, match="render_mode"):
            assert plain.render() is None


# ---------------------------------------------------------------- step for step
@pytest.mark.parametrize("task_id,steps", [("CartPole-v1", 400), ("Pendulum-v1", 450)])
def test_step_for_step_equals_the_pool(task_id, steps):
    n = 4
    with envs.make_vector_env(task_id, n, seed=7) as vec, envs.make(task_id, num_envs=n, seed=7) as pool:
        obs, info = vec.reset(seed=7)
        pool_obs, pool_info = pool.reset()
        np.testing.assert_array_equal(obs, pool_obs)
        np.testing.assert_array_equal(info["elapsed_step"], pool_info["elapsed_step"])
        prev_done = np.zeros(n, bool)
        ends = autoresets = 0
        for action in random_actions(pool.action_space, n, steps):
            got = vec.step(action)
            want = pool.step(action)
            for a, b in zip(got[:4], want[:4]):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
            info = got[4]
            assert_masked_layout(info, n)
            np.testing.assert_array_equal(info["env_id"], np.arange(n))
            np.testing.assert_array_equal(info["elapsed_step"], want[4]["elapsed_step"])
            # next-step autoreset: the step after an episode's end is its reset (reward 0, elapsed 0)
            if prev_done.any():
                np.testing.assert_array_equal(info["elapsed_step"][prev_done], 0)
                np.testing.assert_array_equal(got[1][prev_done], 0)
                autoresets += prev_done.sum()
            prev_done = got[2] | got[3]
            ends += prev_done.sum()
        assert autoresets >= 4 and ends >= 4


@pytest.mark.parametrize("task_id", ["CartPole-v1", "Pendulum-v1"])
def test_matches_gymnasiums_sync_vector_env(task_id):
    """The same seed and actions give Gymnasium's own numbers, auto-resets included."""
    n = 3
    with envs.make_vector_env(task_id, n) as vec:
        ref = gym.make_vec(task_id, n, vectorization_mode="sync")
        np.testing.assert_allclose(vec.reset(seed=11)[0], ref.reset(seed=11)[0], atol=1e-6)
        dones = 0
        for action in random_actions(vec.single_action_space, n, 450, seed=3):
            got, want = vec.step(action), ref.step(action)
            np.testing.assert_allclose(got[0], want[0], atol=1e-4)
            np.testing.assert_allclose(got[1], want[1], atol=1e-4)
            np.testing.assert_array_equal(got[2], want[2])
            np.testing.assert_array_equal(got[3], want[3])
            dones += (got[2] | got[3]).sum()
        assert dones >= 3
        ref.close()


# ---------------------------------------------------------------- seeds and partial resets
def test_seeded_reset_reseeds_the_pool_in_place():
    n = 3
    with envs.make_vector_env("CartPole-v1", n, seed=5) as vec:
        pool = vec.pool
        obs5, _ = vec.reset(seed=5)
        with envs.make("CartPole-v1", num_envs=n, seed=5) as fresh:
            np.testing.assert_array_equal(obs5, fresh.reset()[0])
        for _ in range(30):
            vec.step(np.ones(n, np.int64))
        again, _ = vec.reset(seed=5)  # same seed after use: the same episodes, from the same pool
        assert vec.pool is pool and not pool.closed
        np.testing.assert_array_equal(again, obs5)
        np.testing.assert_array_equal(vec.reset(seed=[5, 6, 7])[0], obs5)
        before = vec.reset()[0]
        mixed = vec.reset(seed=[5, None, 7])[0]  # env 1 keeps its stream
        np.testing.assert_array_equal(mixed[[0, 2]], obs5[[0, 2]])
        assert not np.array_equal(mixed[1], obs5[1]) and not np.array_equal(mixed[1], before[1])
        obs9, _ = vec.reset(seed=9)
        with envs.make("CartPole-v1", num_envs=n, seed=9) as fresh:
            np.testing.assert_array_equal(obs9, fresh.reset()[0])
        assert vec.np_random_seed == 9
        assert not np.array_equal(vec.reset()[0], obs9)  # no seed: the episodes go on
        assert vec.reset(seed=[None] * n)[0].shape == (n, 4)


def test_reset_mask_resets_only_those_envs():
    n = 4
    with envs.make_vector_env("CartPole-v1", n, seed=3) as vec, envs.make("CartPole-v1", num_envs=n, seed=3) as pool:
        vec.reset()
        pool.reset()
        done = np.zeros(n, bool)
        while not done.any():  # step until an env's episode ends
            obs, _, term, trunc, _ = vec.step(np.ones(n, np.int64))
            pool.step(np.ones(n, np.int64))
            done = term | trunc
        mask = done.copy()
        mask[np.flatnonzero(~done)[0]] = True  # and one env mid-episode
        options = {"reset_mask": mask}
        reset_obs, info = vec.reset(options=options)
        assert "reset_mask" in options  # not popped: wrappers read it after the env
        ids = np.flatnonzero(mask).astype(np.int32)
        pool_obs, pool_info = pool.reset(ids)
        np.testing.assert_array_equal(reset_obs[mask], pool_obs)
        np.testing.assert_array_equal(reset_obs[~mask], obs[~mask])
        assert_masked_layout(info, n)
        np.testing.assert_array_equal(info["_elapsed_step"], mask)
        np.testing.assert_array_equal(info["env_id"][mask], ids)
        got = vec.step(np.zeros(n, np.int64))
        want = pool.step(np.zeros(n, np.int64))
        for a, b in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(a, b)
        # a reset env steps (no auto-reset pending), the others go on
        np.testing.assert_array_equal(got[4]["elapsed_step"][mask], 1)
        np.testing.assert_array_equal(got[1][mask], 1.0)
        vec.reset(options={"reset_mask": np.ones(n, bool)})  # all True: a full reset


# ---------------------------------------------------------------- Gymnasium's vector wrappers
@pytest.mark.parametrize("task_id,steps", [("CartPole-v1", 300), ("Pendulum-v1", 450)])
def test_record_episode_statistics(task_id, steps):
    n = 4
    env = RecordEpisodeStatistics(envs.make_vector_env(task_id, n, seed=2))
    env.reset(seed=2)
    rewards, dones, reported = [], [], []
    for action in random_actions(env.single_action_space, n, steps, seed=1):
        _, reward, term, trunc, info = env.step(action)
        rewards.append(reward)
        dones.append(term | trunc)
        if "episode" in info:
            np.testing.assert_array_equal(info["_episode"], term | trunc)
            for i in np.flatnonzero(info["_episode"]):
                reported.append((len(rewards) - 1, i, info["episode"]["r"][i], info["episode"]["l"][i]))
    # by hand, next-step autoreset: the step after an episode's end is its reset and counts for neither
    expected = []
    for i in range(n):
        ret, length, reset_next = 0.0, 0, False
        for t in range(steps):
            if reset_next:
                assert rewards[t][i] == 0.0
                ret, length, reset_next = 0.0, 0, False
                continue
            ret += float(rewards[t][i])
            length += 1
            if dones[t][i]:
                expected.append((t, i, ret, length))
                reset_next = True
    assert len(expected) >= 4
    reported, expected = sorted(reported), sorted(expected)
    assert [(t, i, l) for t, i, _, l in reported] == [(t, i, l) for t, i, _, l in expected]
    np.testing.assert_allclose([r for _, _, r, _ in reported], [r for _, _, r, _ in expected], rtol=1e-12)
    assert env.episode_count == len(expected)
    env.close()


def test_normalize_observation():
    n = 4
    env = NormalizeObservation(envs.make_vector_env("CartPole-v1", n, seed=4))
    with envs.make("CartPole-v1", num_envs=n, seed=4) as pool:
        _, seen = normalized_beside_raw(env, pool, random_actions(pool.action_space, n, 200, seed=5))
    assert env.obs_rms.count == pytest.approx(1e-4 + n * 201)
    late = np.concatenate(seen[100:])
    assert np.abs(late.mean(0)).max() < 0.5 and np.all((late.std(0) > 0.5) & (late.std(0) < 2))
    env.close()


def test_clip_action_reaches_the_env_clipped(monkeypatch):
    n = 3
    face = envs.make_vector_env("Pendulum-v1", n, seed=6)
    received = []
    step = face.step
    monkeypatch.setattr(face, "step", lambda a: (received.append(np.array(a)), step(a))[1])
    env = ClipAction(face)
    with envs.make("Pendulum-v1", num_envs=n, seed=6) as pool:
        np.testing.assert_array_equal(env.reset()[0], pool.reset()[0])
        for action in random_actions(gym.spaces.Box(-3, 3, (1,)), n, 50, seed=7):  # beyond [-2, 2]
            clipped = np.clip(action, -2.0, 2.0)
            got, want = env.step(action), pool.step(clipped)
            np.testing.assert_array_equal(received[-1], clipped)
            for a, b in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(a, b)
    assert np.abs(np.concatenate(received)).max() == 2.0
    env.close()


def test_dict_info_to_list():
    with envs.make_vector_env("CartPole-v1", 2) as vec:
        env = DictInfoToList(vec)
        _, infos = env.reset(seed=0)
        assert infos == [{"env_id": 0, "elapsed_step": 0, "players": {"env_id": 0}},
                         {"env_id": 1, "elapsed_step": 0, "players": {"env_id": 1}}]


# ---------------------------------------------------------------- registration
def test_make_vec_vector_entry_point():
    for task_id in BUILT_IN_IDS:
        assert gym.spec(task_id).vector_entry_point == "envs.vector:vector_entry_point_" + task_id.replace("-", "_")
        vec = gym.make_vec(task_id, num_envs=2, vectorization_mode="vector_entry_point")
        assert isinstance(vec, VectorEnvPool) and vec.num_envs == 2
        assert vec.pool.config["max_episode_steps"] == gym.spec(task_id).max_episode_steps
        assert vec.spec.id == task_id
        vec.close()
    # make_vec's kwargs reach the pool; make_vec(spec) rebuilds the same vector env
    vec = gym.make_vec("Pendulum-v1", 3, vectorization_mode="vector_entry_point", seed=9, max_episode_steps=50)
    assert vec.pool.config["seed"] == 9 and vec.pool.config["max_episode_steps"] == 50
    again = gym.make_vec(vec.spec)
    assert isinstance(again, VectorEnvPool) and again.num_envs == 3 and again.pool.config["seed"] == 9
    np.testing.assert_array_equal(vec.reset()[0], again.reset()[0])
    vec.close()
    again.close()
    with pytest.raises(gym.error.Error, match="vector_kwargs"):
        gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point", vector_kwargs={"copy": False})
    with pytest.raises(ValueError, match="unknown kwarg"):
        gym.make_vec("CartPole-v1", 2, vectorization_mode="vector_entry_point", sutton_barto_reward=True)


def test_gymnasiums_own_paths_are_untouched():
    assert GYMNASIUM_VECTOR_ENTRY_POINTS["CartPole-v1"] == "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv"
    assert GYMNASIUM_VECTOR_ENTRY_POINTS["Pendulum-v1"] is None
    env = gym.make("CartPole-v1")
    assert type(env.unwrapped).__name__ == "CartPoleEnv"
    env.close()
    sync = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")
    assert isinstance(sync, gym.vector.SyncVectorEnv) and type(sync.envs[0].unwrapped).__name__ == "CartPoleEnv"
    sync.close()
    # forkserver: this test process may hold JAX's threads, which fork must not copy
    async_env = gym.make_vec("Pendulum-v1", 2, vectorization_mode="async", vector_kwargs={"context": "forkserver"})
    assert isinstance(async_env, gym.vector.AsyncVectorEnv)
    async_env.reset(seed=0)
    async_env.close()
    # make_vec's default mode takes a registered vector_entry_point first: ours
    assert isinstance(gym.make_vec("Acrobot-v1", 2), VectorEnvPool)
    # the specs stay JSON-serialisable and picklable (worker processes get them)
    assert "envs.vector:vector_entry_point_CartPole_v1" in gym.spec("CartPole-v1").to_json()
    assert pickle.loads(pickle.dumps(gym.spec("CartPole-v1"))) == gym.spec("CartPole-v1")
    # the pool still runs Gymnasium's own env in worker processes
    with envs.make("CartPole-v1", num_envs=2, backend="process", num_threads=1, seed=0) as pool:
        assert pool.config["backend"] == "process"
        assert pool.step(np.zeros(2, np.int64))[0].shape == (2, 4)


# ---------------------------------------------------------------- worker-process ids
def test_a_process_backend_id():
    """FrozenLake-v1 runs in worker processes: it equals Gymnasium's SyncVectorEnv step for step,
    its own info key included, masks and all (info values promote as numpy does, envs/info.py)."""
    n = 3
    with envs.make_vector_env("FrozenLake-v1", n, num_threads=1, seed=11) as vec:
        assert vec.pool.config["backend"] == "process"
        assert vec.spec is None and vec.metadata["render_modes"] == []
        assert vec.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
        ref = gym.make_vec("FrozenLake-v1", n, vectorization_mode="sync")
        obs, info = vec.reset(seed=11)
        ref_obs, ref_info = ref.reset(seed=11)
        np.testing.assert_array_equal(obs, ref_obs)
        np.testing.assert_array_equal(info["prob"], ref_info["prob"])
        np.testing.assert_array_equal(info["_prob"], ref_info["_prob"])
        ends = 0
        for action in random_actions(vec.single_action_space, n, 200, seed=2):
            got, want = vec.step(action), ref.step(action)
            for a, b in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(a, b)
            for k in want[4]:  # Gymnasium keeps env 0's type (int prob 1 truncates 1/3 to 0): compare in it
                np.testing.assert_array_equal(got[4][k].astype(want[4][k].dtype), want[4][k])
            ends += (got[2] | got[3]).sum()
        assert ends >= 5
        ref.close()


def test_partial_info_keys_keep_their_masks():
    """An env's key only some envs return keeps the pool's mask; keys all envs return get an all-True one."""
    n = 3
    with envs.make_vector_env("ToyInfo-v0", n, num_threads=1, seed=100) as vec:
        ref = gym.make_vec("ToyInfo-v0", n, vectorization_mode="sync")
        _, info = vec.reset()
        _, ref_info = ref.reset(seed=100)
        for k in ref_info:
            np.testing.assert_array_equal(info[k], ref_info[k])
        got, want = vec.step(np.array([1, 0, 1]))[4], ref.step(np.array([1, 0, 1]))[4]
        assert_masked_layout(got, n)
        assert set(got) == set(want) | {"env_id", "_env_id", "elapsed_step", "_elapsed_step", "players", "_players"}
        for k in want:
            np.testing.assert_array_equal(got[k], want[k])
        np.testing.assert_array_equal(got["_hit"], [True, False, True])
        _, info = vec.reset(options={"reset_mask": np.array([False, True, False])})
        np.testing.assert_array_equal(info["_resets"], [False, True, False])
        assert info["resets"][1] == 2
        ref.close()


# ---------------------------------------------------------------- refused arguments
def test_bad_arguments():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="num_envs must be >= 1"):
            envs.make_vector_env("CartPole-v1", bad)
    for bad in (1.5, True, "2"):
        with pytest.raises(ValueError, match="num_envs must be an int"):
            envs.make_vector_env("CartPole-v1", bad)
    with pytest.raises(ValueError, match=r"batch_size=2.*sync pool"):
        envs.make_vector_env("CartPole-v1", 4, batch_size=2)
    envs.make_vector_env("CartPole-v1", 4, batch_size=4).close()
    with pytest.raises(ValueError, match="env_type"):
        envs.make_vector_env("CartPole-v1", 2, env_type="dm")
    with pytest.raises(ValueError, match="wrappers"):
        envs.make_vector_env("CartPole-v1", 2, wrappers=[])
    with envs.make_vector_env("CartPole-v1", 3) as vec:
        with pytest.raises(ValueError, match="reset_mask.*needs a full reset"):
            vec.reset(options={"reset_mask": np.array([True, False, False])})
        with pytest.raises(ValueError, match="one per env"):
            vec.reset(seed=[1, 2])
        with pytest.raises(ValueError, match="must be >= 0"):
            vec.reset(seed=-1)
        for bad in ("1", 1.0, True):
            with pytest.raises(ValueError, match="seed must be an int"):
                vec.reset(seed=bad)
        vec.reset()
        with pytest.raises(TypeError, match="numpy array"):
            vec.reset(options={"reset_mask": [True, False, True]})
        with pytest.raises(TypeError, match="dtype"):
            vec.reset(options={"reset_mask": np.array([1, 0, 1])})
        with pytest.raises(ValueError, match="shape"):
            vec.reset(options={"reset_mask": np.array([True, False])})
        with pytest.raises(ValueError, match="at least one True"):
            vec.reset(options={"reset_mask": np.zeros(3, bool)})
        with pytest.raises(ValueError, match="take no reset options"):
            vec.reset(options={"low": -0.1})
        with pytest.raises(ValueError, match="one batched array"):
            vec.step({"action": np.zeros(3, np.int64), "env_id": np.arange(3)})
        with pytest.raises(ValueError, match="shape"):
            vec.step(np.zeros(2, np.int64))
