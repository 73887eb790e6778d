"""The compiled native pool (envs/native/kernel) against the numpy path, bit for bit: every
built-in task, sync and async, auto-resets, truncation, explicit resets, snapshots across the
two paths, and the fallback when the library cannot be built. The numpy path is itself tested
against Gymnasium (tests/test_native_tasks.py), so equality here carries that over."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import envs
from envs.native.kernel_pool import CompiledEnvPool
from envs.native.tasks import TASK_CODES

TASKS = sorted(TASK_CODES)  # the tasks with a compiled step (not SignalCorridor's Dict observations)


def make(compiled: bool, task: str, monkeypatch, **kw):
    monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "1" if compiled else "0")
    pool = envs.make(task, **kw)
    assert isinstance(pool, CompiledEnvPool) == compiled
    return pool


def actions(pool, rng, n):
    space = pool.action_space
    if hasattr(space, "n"):
        return rng.integers(0, space.n, n)
    return rng.uniform(-3.0, 3.0, (n, *space.shape)).astype(np.float32)  # beyond the bounds: clipped


def assert_same(a, b, where):
    for x, y in zip(a[:4], b[:4]):
        np.testing.assert_array_equal(x, y, err_msg=where)
        assert x.dtype == y.dtype, where
    for k in ("env_id", "elapsed_step"):
        np.testing.assert_array_equal(a[4][k], b[4][k], err_msg=f"{where}: {k}")


@pytest.mark.parametrize("task", TASKS)
def test_sync_steps_equal_the_numpy_path(task, monkeypatch):
    kw = dict(num_envs=5, seed=11, max_episode_steps=60)
    with make(True, task, monkeypatch, **kw) as fast, make(False, task, monkeypatch, **kw) as ref:
        a, b = fast.reset(), ref.reset()
        np.testing.assert_array_equal(a[0], b[0])
        rng = np.random.default_rng(0)
        ends = 0
        for t in range(400):
            act = actions(fast, rng, 5)
            a, b = fast.step(act), ref.step(act)
            assert_same(a, b, f"{task} step {t}")
            ends += int((a[2] | a[3]).sum())
        assert ends >= 5  # auto-resets happened along the way


@pytest.mark.parametrize("task", ["CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0"])
def test_async_batches_equal_the_numpy_path(task, monkeypatch):
    kw = dict(num_envs=6, batch_size=3, seed=2, max_episode_steps=40)
    with make(True, task, monkeypatch, **kw) as fast, make(False, task, monkeypatch, **kw) as ref:
        fast.async_reset(), ref.async_reset()
        rng = np.random.default_rng(1)
        for t in range(300):
            a, b = fast.recv(), ref.recv()
            assert_same(a, b, f"{task} batch {t}")
            act = actions(fast, rng, 3)
            if t % 7 == 3:  # split a send in two, with explicit ids
                ids = a[4]["env_id"]
                for pool in (fast, ref):
                    pool.send(act[:1], ids[:1])
                    pool.send({"action": act[1:], "env_id": ids[1:]})
            else:
                fast.send(act), ref.send(act)


def test_explicit_resets_of_some_envs(monkeypatch):
    kw = dict(num_envs=4, seed=9)
    with make(True, "Acrobot-v1", monkeypatch, **kw) as fast, make(False, "Acrobot-v1", monkeypatch, **kw) as ref:
        fast.reset(), ref.reset()
        rng = np.random.default_rng(3)
        for t in range(60):
            if t % 10 == 5:
                ids = np.array([3, 1])
                a, b = fast.reset(ids), ref.reset(ids)
                np.testing.assert_array_equal(a[0], b[0])
                assert a[1]["env_id"].tolist() == [3, 1] and a[1]["elapsed_step"].tolist() == [0, 0]
            act = actions(fast, rng, 4)
            assert_same(fast.step(act), ref.step(act), f"step {t}")


@pytest.mark.parametrize("direction", ["compiled->numpy", "numpy->compiled"])
@pytest.mark.parametrize("task", ["CartPole-v1", "MountainCarContinuous-v0"])
def test_snapshots_restore_across_the_two_paths(task, direction, monkeypatch):
    """A snapshot of either path restores into the other and both continue identically (the
    numpy path draws reset noise ahead in blocks; the compiled one rewinds past them)."""
    src_compiled = direction.startswith("compiled")
    kw = dict(num_envs=3, seed=4, max_episode_steps=30)
    rng = np.random.default_rng(5)
    with make(src_compiled, task, monkeypatch, **kw) as src:
        src.reset()
        for _ in range(75):
            src.step(actions(src, rng, 3))
        blob = src.snapshot()
        tail_actions = [actions(src, rng, 3) for _ in range(80)]
        want = [src.step(a) for a in tail_actions]
    with make(not src_compiled, task, monkeypatch, **kw) as dst:
        dst.restore(blob)
        for t, (a, w) in enumerate(zip(tail_actions, want)):
            assert_same(dst.step(a), w, f"after restore, step {t}")


def test_fallback_without_a_compiler_warns_once_and_runs_the_numpy_path(tmp_path):
    code = textwrap.dedent(
        """
        import warnings, numpy as np, envs
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pools = [envs.make("CartPole-v1", num_envs=2, seed=0) for _ in range(3)]
        notes = [str(w.message) for w in caught if "compiled native pool" in str(w.message)]
        assert len(notes) == 1, notes
        assert "no compiler" in notes[0], notes
        assert type(pools[0]).__name__ == "GymnasiumEnvPool", type(pools[0])
        pools[0].reset()
        print(pools[0].step(np.zeros(2, int))[0].shape)
        """
    )
    env = {**os.environ, "CXX": "no-such-compiler", "SEBULBA_CACHE_DIR": str(tmp_path), "SEBULBA_NATIVE_KERNEL": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(2, 4)"


def _policy(obs, space):
    import jax.numpy as jnp

    s = obs.sum(axis=1) * 7.0
    if hasattr(space, "n"):
        return (jnp.floor(jnp.abs(s)).astype(jnp.int32)) % space.n
    return jnp.sin(s)[:, None] * 2.5  # beyond the bounds at times: clipped by the task


@pytest.mark.parametrize("task", TASKS)
def test_xla_scan_equals_the_python_api_for_every_task(task):
    """The compiled targets inside lax.scan (dm TimeSteps) give the Python API's results."""
    import jax
    from jax import lax

    kw = dict(num_envs=3, seed=7, max_episode_steps=25, env_type="dm")
    with envs.make(task, **kw) as pool, envs.make(task, **kw) as ref:
        assert isinstance(pool, CompiledEnvPool)
        handle, _, _, step = pool.xla()
        space = pool.action_space

        def body(carry, _):
            h, obs = carry
            h, ts = step(h, _policy(obs, space))
            return (h, ts.observation.obs), ts

        first = pool.reset()
        _, got = jax.block_until_ready(jax.jit(lambda h, o: lax.scan(body, (h, o), length=60))(handle, first.observation.obs))
        obs = ref.reset().observation.obs
        for t in range(60):
            want = ref.step(np.asarray(_policy(jax.numpy.asarray(obs), space)))
            obs = want.observation.obs
            for g, w in zip(jax.tree.leaves(jax.tree.map(lambda x: x[t], got)), jax.tree.leaves(want)):
                np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"{task} step {t}")


def test_xla_of_a_compiled_pool_has_no_host_callback():
    import jax

    with envs.make("CartPole-v1", num_envs=2) as pool:
        handle, recv, send, step = pool.xla()
        hlo = jax.jit(step).lower(handle, jax.numpy.zeros(2, "int32")).as_text()
    assert "envs_native_step" in hlo
    assert "callback" not in hlo.lower(), "the compiled pool's xla() must not call back into Python"


def test_compiled_pendulum_keeps_the_float32_pow_of_the_reference():
    """At rest and upright the cost is 0.001 * u**2 alone; Gymnasium's np.float32 `u**2` is powf,
    which differs from u * u in the last bit for some u. The compiled pool calls powf (the numpy
    path can only where NumPy's array power is powf: see tests/test_native_tasks.py)."""
    import pickle

    import gymnasium as gym

    rng = np.random.default_rng(5)
    u = rng.uniform(-2, 2, 20000).astype(np.float32)
    powf = np.array([np.float32(v) ** 2 for v in u], np.float32)
    u = np.concatenate([u[powf != u * u][:6], u[:2]])
    assert len(u) == 8
    with envs.make("Pendulum-v1", num_envs=8, seed=0) as pool:
        assert isinstance(pool, CompiledEnvPool)
        pool.reset()
        pool.step(np.zeros((8, 1), np.float32))
        (task, book), last = pickle.loads(pool.snapshot())
        task.state[:] = 0.0  # every env upright, at rest
        pool.restore(pickle.dumps(((task, book), last)))
        reward = pool.step(u[:, None])[1]
    ref = gym.make("Pendulum-v1").unwrapped
    ref.reset(seed=0)
    for i in range(8):
        ref.state = np.zeros(2)
        assert reward[i] == np.float32(ref.step(u[i : i + 1])[1]), i
