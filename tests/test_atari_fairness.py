"""Async Atari pools are fair (issue 26): `recv` returns envs in the order they were sent, so no
env waits behind envs sent after it, whatever ALE's threads do (ALE's own async vector env can hold
an env back for many recvs: Farama-Foundation/Arcade-Learning-Environment#641). The backend runs
groups of envs on ALE's vector env in sync mode and queues the groups itself (envs/atari/backend.py);
the native backend (envs/atari/native.py) queues its jobs first in, first out, each batch's envs in
the order they were returned.
Real ALE, seeded; no timing is asserted, only which envs come back when."""

import math

import numpy as np
import pytest

import envs
from tests.support.pool_checks import assert_async_matches_sync
from tests.support.job import assert_trees_equal

pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")


def make(**kw):
    kw.setdefault("num_threads", 2)
    return envs.make("Pong-v5", **kw)


def waits(num_envs, batch_size, recvs, num_threads=2, permute=True, seed=0):
    """Runs `recvs` recv/send rounds (sends in a random order of the batch when `permute`) and
    returns, per env, its waits: the recvs from sending an env's action (or the reset) to
    receiving its result, counting the receiving recv."""
    rng = np.random.default_rng(seed)
    sent_at = np.zeros(num_envs, int)  # async_reset sends every env before the first recv
    out = [[] for _ in range(num_envs)]
    with make(num_envs=num_envs, batch_size=batch_size, num_threads=num_threads, seed=seed) as pool:
        pool.async_reset()
        for k in range(1, recvs + 1):
            *_, info = pool.recv()
            ids = info["env_id"]
            assert len(ids) == batch_size and len(set(ids.tolist())) == batch_size
            for i in ids:
                out[i].append(k - sent_at[i])
            sent_at[ids] = k
            order = rng.permutation(batch_size) if permute else np.arange(batch_size)
            pool.send(rng.integers(0, 6, batch_size)[order], ids[order])
    return out


@pytest.mark.slow(seconds=3)
def test_8_envs_batch_2_every_env_returns_in_its_turn():
    """1,000 recvs: every env returns, none waits more than num_envs / batch_size + 1 recvs
    (first in, first out: exactly 4 here), and all take turns equally."""
    got = waits(8, 2, 1000)
    assert all(got), "an env never returned"
    assert max(max(w) for w in got) <= 8 / 2 + 1
    assert {w for ws in got for w in ws[1:]} == {4}  # [0]: the reset, all sent at once
    assert sorted(len(w) for w in got) == [250] * 8


@pytest.mark.slow(seconds=3)
def test_4_envs_batch_2_two_threads_the_issues_case():
    """ALE #641's setting: 4 Pongs, batch 2, 2 threads. Every env is back after 2 recvs, every time."""
    for seed in range(2):
        got = waits(4, 2, 200, seed=seed)
        assert {w for ws in got for w in ws[1:]} == {2}, seed
        assert sorted(len(w) for w in got) == [100] * 4


@pytest.mark.parametrize("num_envs, batch_size", [(5, 2), (6, 4), (7, 3)])
def test_batch_size_not_dividing_num_envs(num_envs, batch_size):
    """Groups of gcd(num_envs, batch_size) envs; a batch takes the groups sent longest ago."""
    got = waits(num_envs, batch_size, 200, permute=True)
    assert all(got)
    assert max(max(w) for w in got) <= math.ceil(num_envs / batch_size)
    counts = [len(w) for w in got]
    assert max(counts) - min(counts) <= 1


@pytest.mark.slow(seconds=8)
def test_sends_in_any_order_follow_each_envs_own_trajectory():
    """A send may name the received batch in any order: each env still gets its own action, so
    its observations are the sync pool's for the same per-env actions."""
    actions = np.random.default_rng(1).integers(0, 6, (6, 21))
    for batch_size in (2, 4):
        assert_async_matches_sync(make, actions, batch_size, shuffle=np.random.default_rng(2))


@pytest.mark.slow(seconds=3)
def test_async_results_per_env_match_sync_with_groups_waiting_for_a_thread():
    """One thread, 3 groups: a sent group may wait in the backend's queue for ALE; results are unchanged."""
    assert_async_matches_sync(lambda **kw: make(num_threads=1, **kw), np.random.default_rng(4).integers(0, 6, (6, 20)))


def test_the_raw_ale_seeds_and_rewards_are_the_sync_pools():
    """Env i is seeded seed + i in every group: rewards, terminations, truncations, lives and
    elapsed steps per env equal the sync pool's (short episodes, so resets are crossed)."""
    n, steps = 4, 40
    actions = np.random.default_rng(6).integers(0, 6, (n, steps + 1))
    kw = dict(num_envs=n, seed=11, max_episode_steps=9, reward_clip=True)

    def rows(out):
        _, rew, term, trunc, info = out
        return np.stack([rew, term, trunc, info["lives"], info["reward"], info["elapsed_step"]], 1)

    with make(**kw) as pool:
        pool.reset()
        sync = np.stack([rows(pool.step(actions[:, t])) for t in range(steps)], 1)  # env, time, field
    with make(batch_size=2, **kw) as pool:
        pool.async_reset()
        t = np.zeros(n, int)
        got = [[] for _ in range(n)]
        while min(len(x) for x in got) < steps + 1:
            out = pool.recv()
            ids = out[4]["env_id"]
            for i, r in zip(ids, rows(out)):
                got[i].append(r)
            pool.send(actions[ids, np.minimum(t[ids], steps)], ids)
            t[ids] += 1
    for i in range(n):
        np.testing.assert_array_equal(np.stack(got[i][1: steps + 1]), sync[i])  # [0]: the reset
    assert sync[:, :, 2].any()  # truncations crossed


def test_reset_and_close_with_groups_in_flight(monkeypatch):
    monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "0")  # the groups of ALE's vector env (envs/atari/backend.py)
    with make(num_envs=6, batch_size=2, num_threads=1) as pool:
        obs, info = pool.reset()
        assert obs.shape == (2, 4, 84, 84) and info["env_id"].tolist() == [0, 1]
        for _ in range(5):
            pool.send(np.ones(2, int), info["env_id"])
            info = pool.recv()[4]
        # Everything received: a full reset starts over from the first group.
        pool.send(np.ones(2, int), info["env_id"])
        while pool._num_pending:  # receive the envs still in flight
            ids = pool.recv()[4]["env_id"]
        obs, info = pool.reset()
        assert info["env_id"].tolist() == [0, 1] and (info["elapsed_step"] == 0).all()
        assert pool.recv()[4]["elapsed_step"].tolist() == [0, 0]  # the next group's reset
        pool.send(np.ones(2, int), np.array([3, 2]))  # sent, not received: close waits for ALE
        assert ids is not None
    assert pool.closed


# ---------------------------------------------------------------------------- xla()
def python_async(num_envs, batch_size, steps, **kw):
    import jax.numpy as jnp

    from tests.test_atari_xla import policy

    with make(num_envs=num_envs, batch_size=batch_size, **kw) as pool:
        pool.async_reset()
        out = pool.recv()
        obs, ids = out[0], out[4]["env_id"]
        outs = []
        for _ in range(steps):
            a = np.asarray(policy(jnp.asarray(obs)))
            pool.send(a[::-1], ids[::-1])
            out = pool.recv()
            outs.append(out)
            obs, ids = out[0], out[4]["env_id"]
    return outs


def xla_async(num_envs, batch_size, steps, before=0, **kw):
    """The same loop, `before` rounds in Python then a jitted lax.scan of xla()'s step."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    from tests.test_atari_xla import policy

    with make(num_envs=num_envs, batch_size=batch_size, **kw) as pool:
        handle, _, _, step = pool.xla()
        pool.async_reset()
        out = pool.recv()
        outs = []
        for _ in range(before):
            obs, ids = out[0], out[4]["env_id"]
            pool.send(np.asarray(policy(jnp.asarray(obs)))[::-1], ids[::-1])
            out = pool.recv()
            outs.append(out)

        def body(carry, _):
            h, obs, ids = carry
            h, s = step(h, policy(obs)[::-1], ids[::-1])
            return (h, s[0], s[4]["env_id"]), s

        run = jax.jit(lambda *c: lax.scan(body, c, length=steps - before)[1])
        states = jax.block_until_ready(run(handle, jnp.asarray(out[0]), jnp.asarray(out[4]["env_id"])))
    states = jax.tree.map(np.asarray, states)
    return outs + [jax.tree.map(lambda x: x[t], states) for t in range(steps - before)]


@pytest.mark.slow(seconds=5)
@pytest.mark.parametrize("num_envs, batch_size, num_threads, before", [(4, 2, 2, 0), (6, 4, 2, 3), (6, 2, 1, 2)])
def test_xla_step_equals_the_python_loop_batch_for_batch(num_envs, batch_size, num_threads, before):
    """Async xla()'s step steps the same groups in the same order as the Python API, so its
    outputs equal the Python loop's, batch for batch (env ids included), after a hand-over with
    groups queued in the pool, stepping in ALE or waiting for a thread."""
    pytest.importorskip("jax")
    kw = dict(seed=3, max_episode_steps=4, num_threads=num_threads)
    want = python_async(num_envs, batch_size, 16, **kw)
    got = xla_async(num_envs, batch_size, 16, before=before, **kw)
    for t, (g, w) in enumerate(zip(got, want)):
        assert_trees_equal(g, w, f"step {t}")
    assert any(w[3].any() for w in want)  # truncations crossed
