"""The native Atari backend (envs/atari/native.py): ALE's per-env preprocessing on our threads.

Checked against ALE's own vector env (the vector backend, SEBULBA_NATIVE_KERNEL=0) under the same
seeds and actions: every output equal, bit for bit; then what only the native backend does: steps
and resets of any subset of a sync pool's envs (EnvPool's `test_partial_step`, verbatim in its
logic), async batches in any env order, first in, first out, and the hand-over to ALE's vector env
when `xla()` comes before any env was sent. Real ALE, seeded; no timing."""

import os

import numpy as np
import pytest

import envs

pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")
from envs.atari.build import library, why_unavailable  # noqa: E402
from envs.atari.native import AtariNativeBackend  # noqa: E402

if library() is None:
    pytest.skip(f"the Atari kernel cannot be built here: {why_unavailable()}", allow_module_level=True)


def rollout(monkeypatch, kernel, task, steps, seed=0, **kw):
    """Every output of a sync pool over `steps` seeded random steps, on the native backend (kernel)
    or ALE's vector env."""
    monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "1" if kernel else "0")
    rng = np.random.default_rng(seed)
    with envs.make_gymnasium(task, seed=seed, **kw) as pool:
        assert isinstance(pool._backend, AtariNativeBackend) == kernel
        obs, info = pool.reset()
        out = [(obs, info)]
        for _ in range(steps):
            out.append(pool.step(rng.integers(0, pool.action_space.n, kw["num_envs"])))
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    for t, (x, y) in enumerate(zip(a, b)):
        for u, v in zip(x, y):
            if isinstance(u, dict):
                assert u.keys() == v.keys(), t
                for k in u:
                    if k != "players":
                        np.testing.assert_array_equal(u[k], v[k], err_msg=f"step {t}, info {k}")
            else:
                np.testing.assert_array_equal(u, v, err_msg=f"step {t}")


@pytest.mark.parametrize("task, steps, kw", [
    ("Breakout-v5", 250, dict(num_envs=3)),
    # RGB stacks, episodic_life, clipped rewards, sticky actions and a short frame limit (truncation)
    ("Breakout-v5", 200, dict(num_envs=3, gray_scale=False, episodic_life=True, reward_clip=True,
                              repeat_action_probability=0.25, max_episode_steps=60)),
    ("Pong-v5", 150, dict(num_envs=2, stack_num=2, img_height=64, img_width=48, noop_max=0, full_action_space=True,
                          num_threads=1)),
])  # fmt: skip
def test_every_output_equals_ales_vector_env(monkeypatch, task, steps, kw):
    native = rollout(monkeypatch, True, task, steps, **kw)
    vector = rollout(monkeypatch, False, task, steps, **kw)
    assert_same(native, vector)
    # the episodes did end inside the comparison where the settings make them (a life loss, the limit)
    if kw.get("max_episode_steps"):
        assert any(np.any(s[3]) for s in native[1:]) and any(np.any(s[2]) for s in native[1:])


def test_envpools_partial_step():
    """EnvPool's atari_envpool_test.py::test_partial_step: a sync pool steps half its envs, then all,
    and each env's time limit falls on its own step."""
    num_envs, max_episode_steps = 5, 10
    with envs.make_gymnasium("Defender-v5", num_envs=num_envs, max_episode_steps=max_episode_steps) as env:
        for _ in range(3):
            env.reset()
            partial_ids = [np.arange(num_envs)[::2], np.arange(num_envs)[1::2]]
            obs, *_, info = env.step(np.zeros(len(partial_ids[1]), dtype=int), env_id=partial_ids[1])
            assert info["env_id"].tolist() == [1, 3] and obs.shape[0] == 2
            for _ in range(max_episode_steps - 2):
                _, _, _, truncated, info = env.step(np.zeros(num_envs, dtype=int), env_id=np.arange(num_envs))
                assert np.all(~truncated)
            _, _, _, truncated, info = env.step(np.zeros(num_envs, dtype=int), env_id=np.arange(num_envs))
            env_id = np.array(info["env_id"])
            done_id = np.array(sorted(env_id[truncated]))
            assert np.all(done_id == partial_ids[1])
            _, _, _, truncated, info = env.step(np.zeros(len(partial_ids[0]), dtype=int), env_id=partial_ids[0])
            assert np.all(truncated)


def test_a_subset_follows_the_trajectory_it_has_in_a_full_pool(monkeypatch):
    """Envs stepped alone, in any order, give the frames the same envs give stepped all together
    (a sync pool returns them in env id order, as it returns all its envs)."""
    actions = np.random.default_rng(5).integers(0, 4, (40, 4))
    full = rollout_actions(actions, None)
    odd = rollout_actions(actions, np.array([3, 1]))
    for t in range(len(actions)):
        assert odd[t][1].tolist() == [1, 3]
        np.testing.assert_array_equal(odd[t][0], full[t][0][[1, 3]], err_msg=f"step {t}")


def rollout_actions(actions, ids):
    with envs.make_gymnasium("Breakout-v5", num_envs=4, seed=7) as pool:
        pool.reset()
        out = []
        for a in actions:
            obs, *_, info = pool.step(a if ids is None else a[ids], ids)
            out.append((obs, info["env_id"]))
    return out


def test_resets_of_any_subset_in_sync_and_async_mode():
    with envs.make_gymnasium("Pong-v5", num_envs=3) as pool:
        pool.reset()
        pool.step(np.ones(3, int))
        obs, info = pool.reset(np.array([2, 0]))
        assert info["env_id"].tolist() == [2, 0] and (info["elapsed_step"] == 0).all()
        info = pool.step(np.ones(3, int))[4]
        assert info["elapsed_step"].tolist() == [1, 2, 1]
    with envs.make_gymnasium("Pong-v5", num_envs=4, batch_size=2) as pool:
        pool.async_reset()
        ids = pool.recv()[4]["env_id"]
        obs, info = pool.reset(ids[:1], seed=3)  # a seeded reset of one env of an async pool
        assert info["env_id"].tolist() == ids[:1].tolist() and (info["elapsed_step"] == 0).all()


def test_async_batches_take_any_env_order_first_in_first_out():
    """Sends in any order and any split; each recv returns the envs sent longest ago."""
    rng = np.random.default_rng(0)
    with envs.make_gymnasium("Pong-v5", num_envs=6, batch_size=2, num_threads=2) as pool:
        pool.async_reset()
        queue = list(range(6))  # the order the envs were sent in
        for _ in range(30):
            ids = pool.recv()[4]["env_id"]
            assert sorted(ids.tolist()) == sorted(queue[:2]), (ids, queue)
            queue = queue[2:]
            perm = rng.permutation(2)
            for i in ids[perm]:  # one env a send
                pool.send(np.zeros(1, int), np.array([i]))
            queue += ids.tolist()  # a batch goes back in the order it was returned


def test_num_threads_starts_num_threads_minus_one_workers():
    """The caller steps envs too while it waits: num_threads threads in all."""
    def threads():
        return set(os.listdir("/proc/self/task"))

    for n in (1, 3):
        before = threads()
        with envs.make_gymnasium("Pong-v5", num_envs=4, num_threads=n) as pool:
            assert len(threads() - before) == n - 1
            pool.reset()
            pool.step(np.zeros(4, int))


def test_xla_before_any_send_hands_the_pool_to_ales_vector_env():
    import jax.numpy as jnp

    from envs.atari.backend import AtariBackend

    with envs.make_gymnasium("Pong-v5", num_envs=2) as pool:
        handle, recv, send, step = pool.xla()
        assert isinstance(pool._backend, AtariBackend)  # ALE's XLA step target runs inside the program
        pool.reset()
        handle, (obs, *_) = step(handle, jnp.zeros(2, jnp.int32))
        assert obs.shape == (2, 4, 84, 84)
    with envs.make_gymnasium("Pong-v5", num_envs=2) as pool:
        pool.reset()
        handle, recv, send, step = pool.xla()  # envs sent already: the pool stays native (host callbacks)
        assert isinstance(pool._backend, AtariNativeBackend)
        handle, (obs, _, _, _, info) = step(handle, jnp.zeros(2, jnp.int32))
        assert obs.shape == (2, 4, 84, 84) and info["elapsed_step"].tolist() == [1, 1]


def test_close_with_a_job_in_flight_waits_for_it():
    pool = envs.make_gymnasium("Pong-v5", num_envs=4, batch_size=2)
    pool.async_reset()
    ids = pool.recv()[4]["env_id"]
    pool.send(np.zeros(2, int), ids)
    pool.close()  # must not hang or crash while ALE steps the envs in flight
    with pytest.raises(RuntimeError, match="closed"):
        pool.recv()
