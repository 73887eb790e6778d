"""The process backend passes every info key a Gymnasium env returns to the caller, batched as
Gymnasium's vector envs batch info (envs/info.py): on reset and step, with masks, object
arrays, nested dicts, in async batches, in dm output, through a worker's respawn, and in the
XLA interface's fixed state. The batching rule itself is checked against gymnasium.vector."""

import os
import signal
import warnings

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import envs
from envs.info import batch_infos, concat_infos, dm_field_names, take_info, unbatch_info
from envs.process.backend import WorkerError
from envs.xla import _Fitter
from tests.support import toy_envs

toy_envs.register_info_envs()
pytestmark = pytest.mark.timeout(120)


def toy(num_envs=4, **kw):
    kw.setdefault("num_threads", 2)
    kw.setdefault("seed", 100)
    return envs.make("ToyInfo-v0", num_envs=num_envs, **kw)


# ---------------------------------------------------------------- the batching rule (pure)
class _GymVector(gym.vector.VectorEnv):
    def __init__(self, n):
        self.num_envs = n


def gymnasium_batch(infos):
    """What Gymnasium's vector envs make of these per-env infos."""
    vec, out = _GymVector(len(infos)), {}
    for i, info in enumerate(infos):
        out = vec._add_info(out, info, i)
    return out


def assert_like_gymnasium(ours, theirs):
    """Equal values; Gymnasium's masks kept only where some env lacks the key (our rule)."""
    for k, v in theirs.items():
        if isinstance(k, str) and k.startswith("_"):
            continue
        mask = theirs[f"_{k}"]
        assert (f"_{k}" in ours) == (not mask.all()), k
        if not mask.all():
            np.testing.assert_array_equal(ours[f"_{k}"], mask)
        if isinstance(v, dict):
            assert_like_gymnasium(ours[k], v)
        else:
            assert ours[k].dtype == v.dtype and ours[k].shape == v.shape, k
            np.testing.assert_array_equal(ours[k], v)
    assert {k for k in ours if not str(k).startswith("_")} == {k for k in theirs if not str(k).startswith("_")}


GYMNASIUM_CASES = {
    "ints everywhere": [{"a": 1}, {"a": 2}, {"a": 3}],
    "floats on some envs": [{"a": 1.5}, {}, {"a": 2.5}],
    "bools and numpy scalars": [
        {"b": True, "f": np.float32(0.5), "i": np.int16(3)},
        {"b": False, "f": np.float32(1), "i": np.int16(-1)},
    ],
    "arrays of one shape": [{"x": np.arange(3.0)}, {}, {"x": np.ones(3)}],
    "strings and None": [{"s": "a", "n": None}, {"s": "bc"}, {}],
    "lists are objects": [{"l": [1, 2]}, {"l": [3]}],
    "nested dicts": [{"episode": {"r": 1.0, "l": 3}}, {}, {"episode": {"r": 2.0, "l": 5}, "x": 1}],
    "no info at all": [{}, {}],
}


@pytest.mark.parametrize("case", list(GYMNASIUM_CASES))
def test_batching_equals_gymnasium_vector_envs(case):
    infos = GYMNASIUM_CASES[case]
    assert_like_gymnasium(batch_infos(infos), gymnasium_batch(infos))


def test_batching_where_it_departs_from_gymnasium():
    mixed = batch_infos([{"a": 1}, {"a": 0.5}, {"a": True}])  # Gymnasium: int64, 0.5 becomes 0
    assert mixed["a"].dtype == np.float64 and mixed["a"].tolist() == [1.0, 0.5, 1.0]
    ragged = batch_infos([{"r": np.arange(2)}, {"r": np.arange(3)}])["r"]  # Gymnasium raises
    assert ragged.dtype == object and [len(x) for x in ragged] == [2, 3]
    assert batch_infos([{"b": np.bool_(True)}, {"b": np.bool_(False)}])["b"].dtype == bool  # Gymnasium: object
    assert batch_infos([{"n": 2**70}, {"n": 1}])["n"].dtype == object  # beyond int64: kept, as objects
    assert batch_infos([{"u": np.array(["a"])}, {"u": np.array([1])}])["u"].dtype == object  # never "1" from 1
    renamed = batch_infos([{"env_id": 7}, {}], reserved=("env_id",))
    assert list(renamed) == ["info_env_id", "_info_env_id"] and renamed["info_env_id"].tolist() == [7, 0]


def test_take_and_concat_keep_the_rule_per_batch():
    infos = [{"p": 1, "q": {"r": 2}}, {"q": {"r": 3, "z": "a"}}, {"p": 2}, {"p": 3, "s": "x"}]
    whole = batch_infos(infos)
    for sel in ([0, 2], [1], [3, 0, 1], slice(1, 3)):
        rows = infos[sel] if isinstance(sel, slice) else [infos[i] for i in sel]
        assert_same(take_info(whole, np.arange(4)[sel]), batch_infos(rows))
    joined = concat_infos([take_info(whole, [0, 1]), None, take_info(whole, [3])], [2, 1, 1])
    assert_same(joined, batch_infos(infos[:2] + [{}] + infos[3:]))
    assert concat_infos([None, None], [1, 2]) is None
    fixed = concat_infos([{"lives": np.array([3, 2])}, {"lives": np.array([1])}], [2, 1])  # Atari's extra
    assert fixed["lives"].tolist() == [3, 2, 1] and list(fixed) == ["lives"]
    assert [sorted(r) for r in unbatch_info(whole, 4)] == [sorted(i) for i in infos]


def assert_same(a, b):
    assert set(a) == set(b)  # key order follows the envs that returned them first
    for k in a:
        if isinstance(a[k], dict):
            assert_same(a[k], b[k])
        else:
            assert a[k].dtype == b[k].dtype
            np.testing.assert_array_equal(a[k], b[k])


def test_dm_field_name_rule():
    keys = ["prob", "_prob", "obs", "_obs", "x-y", "class", "3d", "info_obs", "lives", 5]
    assert dm_field_names(keys) == (
        "prob", "prob_mask", "info_obs", "obs_mask", "info_x_y", "info_class", "info_3d", "info_obs_", "lives", "info_5",
    )


# ---------------------------------------------------------------- through worker processes
def test_cliffwalking_prob_equals_gymnasium_on_reset_and_step():
    n, seed, steps = 4, 7, 25
    actions = np.random.default_rng(0).integers(0, 4, (steps, n))
    refs = [gym.make("CliffWalking-v1", is_slippery=True) for _ in range(n)]
    with envs.make("CliffWalking-v1", num_envs=n, num_threads=2, seed=seed, is_slippery=True) as pool:
        obs, info = pool.reset()
        want = [r.reset(seed=seed + i) for i, r in enumerate(refs)]
        vec_info = gym.make_vec("CliffWalking-v1", n, vectorization_mode="sync", is_slippery=True).reset(seed=seed)[1]
        assert obs.tolist() == [o for o, _ in want]
        assert info["prob"].dtype == vec_info["prob"].dtype
        assert info["prob"].tolist() == vec_info["prob"].tolist() == [1] * n
        assert set(info) == {"env_id", "elapsed_step", "players", "prob"}  # every env returned prob: no mask
        done = [False] * n
        for a in actions:
            obs, rew, term, trunc, info = pool.step(a)
            for i, r in enumerate(refs):  # the pool's auto-reset step returns the reset's obs and info
                if done[i]:
                    (o, inf), te, tr = r.reset(), False, False
                else:
                    o, _, te, tr, inf = r.step(int(a[i]))
                done[i] = te or tr
                assert obs[i] == o and term[i] == te and info["prob"][i] == inf["prob"], (i, a)
        assert (info["prob"] == 1 / 3).any()


def test_key_on_some_envs_gets_a_mask_and_all_envs_none():
    with toy(4) as pool:
        _, info = pool.reset()
        assert info["resets"].tolist() == [1, 1, 1, 1] and info["who"].tolist() == [100, 101, 102, 103]
        *_, info = pool.step(np.array([0, 1, 0, 1]))
        assert info["hit"].tolist() == [0, 1, 0, 1] and info["_hit"].tolist() == [False, True, False, True]
        *_, info = pool.step(np.array([1, 1, 1, 1]))
        assert info["hit"].tolist() == [2, 2, 2, 2] and "_hit" not in info
        *_, info = pool.step(np.array([0, 0, 0, 0]))
        assert set(info) == {"env_id", "elapsed_step", "players"}  # nothing stale from the step before


def test_strings_objects_ragged_and_nested_infos():
    with toy(3) as pool:
        pool.reset()
        pool.step(np.array([0, 0, 0]))
        pool.step(np.array([0, 0, 0]))
        pool.reset(np.array([1]))
        *_, info = pool.step(np.array([2, 2, 2]))  # t = 3, 1, 3
        assert info["ragged"].dtype == object and [len(r) for r in info["ragged"]] == [3, 1, 3]
        assert info["name"].dtype == object and info["name"].tolist() == ["t3", "t1", "t3"]
        assert info["episode"]["l"].tolist() == [3, 1, 3] and "_episode" not in info
        *_, info = pool.step(np.array([2, 0, 2]))  # t = 4, 2, 4
        assert info["name"].tolist() == ["t4", None, "t4"] and info["_name"].tolist() == [True, False, True]
        assert info["tag"].dtype == object and info["tag"].tolist() == [None, None, None]
        assert info["_tag"].tolist() == [True, False, True]
        assert info["ragged"].shape == (3, 4) and info["ragged"][[0, 2]].tolist() == [[0, 1, 2, 3]] * 2
        ep = info["episode"]
        assert info["_episode"].tolist() == [True, False, True]
        assert ep["r"].tolist() == [6.0, 0.0, 6.0] and ep["l"].tolist() == [4, 0, 4]
        assert ep["_r"].tolist() == [True, False, True]


def test_auto_reset_step_returns_the_reset_info():
    with toy(2, length=2) as pool:
        pool.reset()
        pool.step(np.array([1, 1]))
        *_, term, _, info = pool.step(np.array([1, 1]))
        assert term.all() and info["hit"].tolist() == [2, 2]
        *_, info = pool.step(np.array([1, 1]))  # the reset step: the action is discarded
        assert info["elapsed_step"].tolist() == [0, 0] and info["resets"].tolist() == [2, 2] and "hit" not in info


def test_async_batches_carry_the_info_of_their_own_envs():
    """Two workers, batches of 3 out of 6 envs: each row of each batch's info is its env's."""
    rng = np.random.default_rng(1)
    last_action = np.zeros(6, int)
    with toy(6, batch_size=3, always=True, seed=50) as pool:
        pool.async_reset()
        for _ in range(40):
            *_, info = pool.recv()
            ids, elapsed = info["env_id"], info["elapsed_step"]
            assert info["who"].tolist() == (50 + ids).tolist() and info["t"].tolist() == elapsed.tolist()
            hit = info.get("_hit", np.full(3, "hit" in info))
            assert hit.tolist() == ((last_action[ids] == 1) & (elapsed > 0)).tolist()
            if "hit" in info:
                assert info["hit"][hit].tolist() == elapsed[hit].tolist()
            action = rng.integers(0, 2, 3)
            last_action[ids] = action
            pool.send(action, ids)


def test_pool_keys_win_and_odd_keys_in_gym_and_dm_output():
    with toy(2, seed=0) as gym_pool, toy(2, seed=0, env_type="dm") as dm_pool:
        gym_pool.reset(), dm_pool.reset()
        *_, info = gym_pool.step(np.array([3, 3]))
        ts = dm_pool.step(np.array([3, 3]))
    assert info["env_id"].tolist() == [0, 1] and info["elapsed_step"].tolist() == [1, 1]
    assert info["info_env_id"].tolist() == [99, 99] and info["info_elapsed_step"].tolist() == [-1, -1]
    assert info["info_players"].tolist() == [5, 5] and info["players"]["env_id"].tolist() == [0, 1]
    assert info["obs"].tolist() == [7, 7] and info["x-y"].tolist() == [0.5, 0.5]
    assert info["_hit"].tolist() == [True, True]
    o = ts.observation
    assert o._fields == (
        "obs", "env_id", "elapsed_step", "info_env_id", "info_elapsed_step", "info_players", "info_obs", "info_x_y", "info_class",
        "hit_mask", "players",
    )
    assert o.info_players.tolist() == [5, 5] and o.players.env_id.tolist() == [0, 1]
    assert o.env_id.tolist() == [0, 1] and o.info_env_id.tolist() == [99, 99] and o.info_obs.tolist() == [7, 7]
    assert o.obs.tolist() == [[1.0], [1.0]] and o.hit_mask.tolist() == [True, True]
    assert o.info_class.tolist() == ["c", "c"]


def test_dm_masks_are_named_key_mask_and_nested_dicts_are_namedtuples():
    with toy(2, env_type="dm") as pool:
        assert pool.reset().observation.resets.tolist() == [1, 1]
        o = pool.step(np.array([1, 0])).observation
        assert o.hit.tolist() == [1, 0] and o.hit_mask.tolist() == [True, False]
        o = pool.step(np.array([2, 0])).observation
    assert o.episode.l.tolist() == [2, 0] and o.episode.r.tolist() == [3.0, 0.0] and o.episode_mask.tolist() == [True, False] and o.name_mask[0]


def test_unpicklable_info_value_is_named():
    with toy(2, max_retry=0) as pool:
        pool.reset()
        with pytest.raises(WorkerError, match=r"info key 'fn' of env 1 \(a function\) cannot be pickled"):
            pool.step(np.array([0, 4]))


def test_respawned_worker_answers_with_empty_info_then_the_reset_info():
    with toy(4, seed=10) as pool:
        pool.reset()
        pool.step(np.ones(4, int))
        os.kill(pool._backend._workers[1].pid, signal.SIGKILL)  # envs 2 and 3
        with pytest.warns(RuntimeWarning, match="respawning"):
            *_, trunc, info = pool.step(np.ones(4, int))
        assert trunc.tolist() == [False, False, True, True]
        assert info["hit"].tolist() == [2, 2, 0, 0] and info["_hit"].tolist() == [True, True, False, False]
        *_, info = pool.step(np.ones(4, int))  # envs 2, 3: the fresh envs' reset step
        assert info["_resets"].tolist() == [False, False, True, True] and info["resets"][2:].tolist() == [1, 1]
        assert info["who"][2:].tolist() == [10 + 4 + 2, 10 + 4 + 3]  # reseeded: seed + num_envs + env id
        *_, info = pool.step(np.ones(4, int))
        assert info["hit"].tolist() == [4, 4, 1, 1] and "_hit" not in info


# ---------------------------------------------------------------- XLA interface
def scan_states(pool, actions):
    handle, _, _, step = pool.xla()
    pool.reset()

    def body(h, a):
        return step(h, a)

    return jax.block_until_ready(jax.jit(lambda h: lax.scan(body, h, jnp.asarray(actions)))(handle))[1]


@pytest.mark.parametrize("env_type", ["gymnasium", "dm"])
def test_xla_state_carries_prob_and_equals_the_python_api(env_type):
    actions = np.random.default_rng(2).integers(0, 4, (6, 3))
    kw = dict(num_envs=3, num_threads=2, seed=4, is_slippery=True, env_type=env_type)
    with envs.make("CliffWalking-v1", **kw) as pool:
        states = scan_states(pool, actions)
    with envs.make("CliffWalking-v1", **kw) as pool:
        pool.reset()
        want = [pool.step(a) for a in actions]
    if env_type == "dm":
        got_prob, want_prob = states.observation.prob, [w.observation.prob for w in want]
        assert states.observation._fields[-2:] == ("prob", "players")
    else:
        got_prob, want_prob = states[-1]["prob"], [w[-1]["prob"] for w in want]
        assert set(states[-1]) == {"env_id", "elapsed_step", "prob", "players"}
    np.testing.assert_allclose(np.asarray(got_prob), np.stack(want_prob), rtol=1e-6)
    assert np.asarray(got_prob).dtype == np.float32 and (np.asarray(got_prob) < 1).any()


def test_xla_state_of_an_env_with_varying_keys_is_fixed_at_xla():
    """ToyInfo's probe (reset, one step with a seeded random action) fixes the state's keys;
    keys outside them are dropped with one warning, a fixed key an env lacks reads 0."""
    with toy(2, num_threads=1, seed=0) as pool:
        fixed = pool._backend.info_dtypes
        handle, _, _, step = pool.xla()
        pool.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _, state = jax.block_until_ready(jax.jit(step)(handle, jnp.array([2, 0])))
    assert set(fixed) >= {"resets", "who"}
    assert set(state[-1]) == {"env_id", "elapsed_step", "players", *fixed}
    assert np.asarray(state[-1]["resets"]).tolist() == [0, 0]  # only reset infos hold it
    dropped = [w for w in caught if "not in the XLA state" in str(w.message)]
    assert len(dropped) == 1 and "'name'" in str(dropped[0].message)


def test_xla_cartpole_process_pool_without_info():
    with envs.make("CartPole-v1", backend="process", num_envs=2, num_threads=1, seed=1) as pool:
        states = scan_states(pool, np.zeros((3, 2), np.int32))
    assert set(states[-1]) == {"env_id", "elapsed_step", "players"}
    assert np.asarray(states[-1]["elapsed_step"])[-1].tolist() == [3, 3]
    assert np.asarray(states[-1]["players"]["env_id"])[-1].tolist() == [0, 1]


def test_xla_fitting_of_a_batch_to_the_fixed_keys():
    leaf = lambda dt: jax.ShapeDtypeStruct((2,), dt)  # noqa: E731
    info = {"env_id": leaf(np.int32), "prob": leaf(np.float32)}
    template = (leaf(np.float32), leaf(np.float32), leaf(bool), leaf(bool), info)
    fit = _Fitter(template, "T")
    step = (np.zeros(2), np.zeros(2), np.zeros(2, bool), np.zeros(2, bool))
    with pytest.warns(RuntimeWarning, match=r"T: info keys \['name'\] are not in the XLA state"):
        fitted = fit((*step, {"env_id": np.arange(2), "name": np.array(["a", "b"], object)}))[-1]
    assert set(fitted) == {"env_id", "prob"} and fitted["prob"].tolist() == [0.0, 0.0]
    bad_type = r"T: info key 'prob' \(object array of shape \(2,\)\) does not fit the XLA state's float32"
    with pytest.raises(ValueError, match=bad_type):
        fit((*step, {"env_id": np.arange(2), "prob": np.array(["x", None], object)}))
    with pytest.raises(ValueError, match=r"T: info key 'prob' has shape \(2, 3\); the XLA state's is \(2,\)"):
        fit((*step, {"env_id": np.arange(2), "prob": np.zeros((2, 3))}))
