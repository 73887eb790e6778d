"""Atari xla(): step on ALE's compiled XLA target equals the Python API step for step (sync and
async, gym and dm, RGB, reward clipping, episodic life, truncation, single frames); the hand-over
from the Python API and every misuse raise clearly (envs/atari/xla.py)."""

import dm_env
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import envs
from envs.xla import state_template

pytest.importorskip("ale_py", reason="the atari extra is not installed: pip install -e '.[atari]'")


def make(task="Pong-v5", **kw):
    kw.setdefault("num_threads", 2)
    return envs.make(task, **kw)


def policy(obs, n=6):
    """A deterministic policy of the observation (integer arithmetic: identical on both paths)."""
    return (obs.reshape(obs.shape[0], -1).astype(jnp.int32).sum(axis=1) * 7) % n


def obs_of(state):
    return state.observation.obs if isinstance(state, dm_env.TimeStep) else state[0]


def python_steps(steps, task="Pong-v5", **kw):
    """Every step's output of the Python API loop, stacked, and the actions it took."""
    with make(task, **kw) as pool:
        obs = pool.reset()
        obs = obs.observation.obs if isinstance(obs, dm_env.TimeStep) else obs[0]
        outs = []
        for _ in range(steps):
            out = pool.step(np.asarray(policy(jnp.asarray(obs), pool.action_space.n)))
            outs.append(out)
            obs = obs_of(out)
    return jax.tree.map(lambda *x: np.stack(x), *outs)


def xla_steps(steps, task="Pong-v5", **kw):
    """The same loop as one jitted lax.scan over xla()'s step."""
    with make(task, **kw) as pool:
        handle, _, _, step = pool.xla()
        n = pool.action_space.n

        def body(carry, _):
            h, obs = carry
            h, state = step(h, policy(obs, n))
            return (h, obs_of(state)), state

        first = pool.reset()
        obs = first.observation.obs if isinstance(first, dm_env.TimeStep) else first[0]
        _, states = jax.block_until_ready(jax.jit(lambda h, o: lax.scan(body, (h, o), length=steps))(handle, obs))
    return states


def assert_trees_equal(got, want):
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), w)
        assert np.asarray(g).dtype == w.dtype


def test_sync_scan_equals_python_api_with_truncation_and_resets():
    kw = dict(num_envs=3, seed=7, max_episode_steps=9)
    got, want = xla_steps(25, **kw), python_steps(25, **kw)
    assert_trees_equal(got, want)
    info = want[4]
    assert want[3].any() and (info["elapsed_step"] == 0).any()  # truncated at 9, then the reset step
    assert info["elapsed_step"].max() == 9 and not (want[2] & want[3]).any()


def test_dm_timesteps_equal_python_api():
    kw = dict(env_type="dm", num_envs=2, seed=3, max_episode_steps=6)
    got, want = xla_steps(14, **kw), python_steps(14, **kw)
    assert isinstance(got, dm_env.TimeStep) and got.observation._fields == want.observation._fields
    assert_trees_equal(got, want)
    assert set(want.step_type.ravel().tolist()) == {0, 1, 2}


@pytest.mark.slow(seconds=3)
def test_rgb_and_episodic_life_equal_python_api():
    """Breakout: RGB stacks channel-first, and a life loss ending the episode (terminated, then
    elapsed 0 in the same game)."""
    kw = dict(num_envs=2, seed=0, gray_scale=False, img_height=42, img_width=42, stack_num=2, episodic_life=True)
    got, want = xla_steps(70, "Breakout-v5", **kw), python_steps(70, "Breakout-v5", **kw)
    assert_trees_equal(got, want)
    obs, _, term, _, info = want
    assert obs.shape[2:] == (6, 42, 42)
    assert term.any() and (np.diff(info["lives"], axis=0) < 0).any()  # a life lost ended an episode
    assert (info["lives"][1:][term[:-1]] > 0).all()  # ... and the game went on


@pytest.mark.slow(seconds=3)
def test_clipped_rewards_keep_the_raw_reward_in_info():
    kw = dict(num_envs=2, seed=0, img_height=42, img_width=42, reward_clip=True)
    got, want = xla_steps(46, "SpaceInvaders-v5", **kw), python_steps(46, "SpaceInvaders-v5", **kw)
    assert_trees_equal(got, want)
    _, rew, _, _, info = want
    assert (info["reward"] > 1).any() and np.array_equal(rew, np.sign(info["reward"]))


@pytest.mark.slow(seconds=3)
def test_a_game_over_equals_python_api():
    """Breakout's game ends at step 118 for env 0: ALE stops mid-frameskip there (2 frames of 4),
    which the handle's frame check accepts."""
    kw = dict(num_envs=2, seed=0, img_height=42, img_width=42, stack_num=1)
    got, want = xla_steps(122, "Breakout-v5", **kw), python_steps(122, "Breakout-v5", **kw)
    assert_trees_equal(got, want)
    _, _, term, _, info = want
    assert term[118, 0] and info["lives"][118, 0] == 0 and info["elapsed_step"][119, 0] == 0


@pytest.mark.slow(seconds=2)
def test_single_frames_for_stack_on_device():
    kw = dict(num_envs=2, seed=1, stack_num=1, max_episode_steps=5)
    got, want = xla_steps(12, **kw), python_steps(12, **kw)
    assert got[0].shape == (12, 2, 1, 84, 84)
    assert_trees_equal(got, want)


@pytest.mark.slow(seconds=3)
def test_step_after_a_partial_reset_equals_python_api():
    def run(use_xla):
        with make(num_envs=3, seed=2) as pool:
            pool.reset()
            pool.step(np.array([1, 2, 3]))
            pool.reset(np.array([2, 0]))  # the last batch: envs 2 and 0 only
            actions = [np.array([a, 3 - a, 2]) for a in range(3)]
            if not use_xla:
                return [pool.step(a) for a in actions]
            handle, _, _, step = pool.xla()

            @jax.jit
            def run_steps(h):
                states = []
                for a in actions:
                    h, state = step(h, jnp.asarray(a))
                    states.append(state)
                return states

            return jax.block_until_ready(run_steps(handle))

    got, want = run(True), run(False)
    assert_trees_equal(got, want)
    assert want[0][4]["elapsed_step"].tolist() == [1, 2, 1]


def test_state_structure_is_the_python_apis():
    with make(num_envs=2) as pool:
        handle, _, _, step = pool.xla()
        pool.reset()
        _, state = jax.block_until_ready(jax.jit(step)(handle, jnp.ones(2, jnp.int32)))
        template = state_template(pool, 2)
    assert jax.tree.structure(state) == jax.tree.structure(template)
    assert [(x.shape, x.dtype) for x in jax.tree.leaves(state)] == [(x.shape, x.dtype) for x in jax.tree.leaves(template)]
    assert set(state[4]) == {"env_id", "elapsed_step", "lives", "reward", "terminated", "players"}


def test_a_step_is_one_ale_call_and_calls_the_host_only_on_hand_over_or_misuse():
    """The hot path is ALE's step target plus jnp: host callbacks sit only inside lax.cond
    branches (taking the counters over from a fresh handle; raising on misuse)."""
    with make(num_envs=2) as pool:
        handle, _, _, step = pool.xla()
        eqns = jax.make_jaxpr(step)(handle, jnp.zeros(2, jnp.int32)).jaxpr.eqns
    names = [e.primitive.name for e in eqns]
    assert names.count("ffi_call") == 1 and names.count("cond") == 3
    assert not {"io_callback", "pure_callback", "debug_callback"} & set(names)
    for e in eqns:
        if e.primitive.name == "cond":
            inner = {q.primitive.name for b in e.params["branches"] for q in b.jaxpr.eqns}
            assert "ffi_call" not in inner and inner & {"io_callback"}


def sync_trajectories(steps, **kw):
    """Per env: (obs, elapsed_step, truncated) of its reset and each of its steps, from a sync pool."""
    with make(**kw) as pool:
        obs, info = pool.reset()
        out = [[(o, 0, False)] for o in obs]
        for _ in range(steps):
            obs, _, _, trunc, info = pool.step(np.asarray(policy(jnp.asarray(obs))))
            for i, row in enumerate(zip(obs, info["elapsed_step"].tolist(), trunc.tolist())):
                out[i].append(row)
    return out


@pytest.mark.slow(seconds=5)
def test_async_step_with_permuted_env_ids_follows_each_envs_own_trajectory():
    """Async pools: step sends for the last batch (env ids in any order, here reversed) and
    receives the next. Which envs come back together is up to ALE's threads, never an env's own
    trajectory: each env's results continue its trajectory in a sync pool with the same seed."""
    kw = dict(num_envs=4, seed=4, max_episode_steps=7)
    with make(batch_size=2, **kw) as pool:
        handle, _, _, step = pool.xla()
        pool.async_reset()
        first, _, _, _, first_info = pool.recv()

        def body(carry, _):
            h, obs, ids = carry
            h, s = step(h, policy(obs)[::-1], ids[::-1])
            return (h, s[0], s[4]["env_id"]), (s[0], s[4]["env_id"], s[4]["elapsed_step"], s[3])

        run = jax.jit(lambda *c: lax.scan(body, c, length=30)[1])
        rows = jax.block_until_ready(run(handle, jnp.asarray(first), jnp.asarray(first_info["env_id"])))
    got = {i: [] for i in range(4)}
    for o, i, e, t in zip(*(np.asarray(r).reshape(-1, *np.shape(r)[2:]) for r in rows)):
        got[int(i)].append((o, int(e), bool(t)))
    want = sync_trajectories(31, **kw)
    for i in range(4):
        start = 1 if i in first_info["env_id"] else 0  # the first batch's resets came before the loop
        ref = want[i][start:start + len(got[i])]
        np.testing.assert_array_equal(np.stack([g[0] for g in got[i]]), np.stack([r[0] for r in ref]))
        assert [g[1:] for g in got[i]] == [r[1:] for r in ref]
    lengths = sorted(len(g) for g in got.values())
    assert sum(lengths) == 60 and lengths[-2] >= 8, lengths  # ALE's threads may hold an env back a while
    assert any(t for g in got.values() for _, _, t in g)  # truncation at 7 reached


def test_step_takes_over_after_xla_recv_and_send():
    """recv/send (the generic callbacks, sharing the pool's state) then step: the step's first call
    takes the counters over from the pool."""
    with make(env_type="dm", num_envs=4, batch_size=2, seed=2) as pool:
        handle, recv, send, step = pool.xla()
        pool.async_reset()
        handle, ts = recv(handle)
        seen = dict(zip(ts.observation.env_id.tolist(), ts.observation.elapsed_step.tolist()))
        handle = send(handle, policy(ts.observation.obs), ts.observation.env_id)
        handle, ts = recv(handle)
        seen.update(zip(ts.observation.env_id.tolist(), ts.observation.elapsed_step.tolist()))
        handle, ts2 = jax.jit(step)(handle, policy(ts.observation.obs), ts.observation.env_id)
        for i, e in zip(np.asarray(ts2.observation.env_id), np.asarray(ts2.observation.elapsed_step)):
            assert e == (seen[int(i)] + 1 if int(i) in seen else 0)  # one more step, or its first result
        jax.block_until_ready(handle)


def test_steps_whose_results_are_dropped_still_run_in_order():
    with make(num_envs=2, seed=5) as pool:
        handle, _, _, step = pool.xla()
        pool.reset()

        @jax.jit
        def two_then_one(h):
            h, _ = step(h, jnp.array([1, 2], jnp.int32))
            h, _ = step(h, jnp.array([3, 4], jnp.int32))
            return step(h, jnp.array([5, 0], jnp.int32))[1]

        got = jax.block_until_ready(two_then_one(handle))
    with make(num_envs=2, seed=5) as pool:
        pool.reset()
        for a in ([1, 2], [3, 4]):
            pool.step(np.array(a))
        want = pool.step(np.array([5, 0]))
    assert_trees_equal(got, want)


LOCKED = {
    "Python step": lambda pool, xla, h: pool.step(np.zeros(2, int)),
    "Python reset": lambda pool, xla, h: pool.reset(),
    "xla send": lambda pool, xla, h: jax.block_until_ready(xla[2](h, jnp.zeros(2, jnp.int32))),
    "xla()'s handle again": lambda pool, xla, h: jax.block_until_ready(jax.jit(xla[3])(xla[0], jnp.zeros(2, jnp.int32))),
    "a second xla()": lambda pool, xla, h: LOCKED["xla()'s handle again"](pool, pool.xla(), h),
}


@pytest.mark.parametrize("call", list(LOCKED))
def test_after_step_only_its_handles_step_the_pool(call):
    with make(num_envs=2) as pool:
        xla = pool.xla()
        pool.reset()
        h1, _ = jax.block_until_ready(jax.jit(xla[3])(xla[0], jnp.zeros(2, jnp.int32)))
        with pytest.raises(Exception, match="stepped through the handles its xla"):
            LOCKED[call](pool, xla, h1)
        jax.block_until_ready(jax.jit(xla[3])(h1, jnp.zeros(2, jnp.int32)))  # the handles step returned go on


def test_a_stale_handle_raises():
    with make(num_envs=2) as pool:
        handle, _, _, step = pool.xla()
        pool.reset()
        run = jax.jit(lambda h: step(h, jnp.zeros(2, jnp.int32))[0])
        h1 = run(handle)
        jax.block_until_ready(run(h1))
        with pytest.raises(Exception, match="older than the pool's state"):
            jax.block_until_ready(run(h1))


def test_misuse_raises_clear_errors():
    with make(num_envs=2) as pool, make(num_envs=2) as other:
        handle, _, _, step = pool.xla()
        with pytest.raises(Exception, match=r"call reset\(\) first"):
            jax.block_until_ready(jax.jit(step)(handle, jnp.zeros(2, jnp.int32)))
        pool.reset()
        with pytest.raises(ValueError, match="expects integer actions"):
            step(handle, jnp.zeros(2, jnp.float32))
        with pytest.raises(ValueError, match="must have shape"):
            step(handle, jnp.zeros(3, jnp.int32))
        other_handle = other.xla()[0]
        with pytest.raises(Exception, match="does not belong"):
            jax.block_until_ready(jax.jit(step)(other_handle, jnp.zeros(2, jnp.int32)))
        h, _ = jax.jit(step)(handle, jnp.zeros(2, jnp.int32))
        other.reset()
        other_handle, _, _, other_step = other.xla()
        oh, _ = jax.jit(other_step)(other_handle, jnp.zeros(2, jnp.int32))
        with pytest.raises(Exception, match="does not belong"):  # a stepped handle of another pool
            jax.block_until_ready(jax.jit(step)(oh, jnp.zeros(2, jnp.int32)))
        with pytest.raises(Exception, match=r"action out of range for Discrete\(6\): \[6\]"):
            jax.block_until_ready(jax.jit(step)(h, jnp.array([0, 6], jnp.int32)))
        with pytest.raises(Exception, match="steps exactly the envs of the last batch"):
            jax.block_until_ready(jax.jit(step)(h, jnp.zeros(2, jnp.int32), jnp.array([0, 0], jnp.int32)))
        jax.block_until_ready(h)
    with pytest.raises(RuntimeError, match="closed EnvPool"):
        step(h, jnp.zeros(2, jnp.int32))
    with pytest.raises(RuntimeError, match="closed EnvPool"):
        jax.jit(lambda h: step(h, jnp.ones(2, jnp.int32)))(h)


def test_async_env_ids_must_be_the_last_batch():
    with make(num_envs=4, batch_size=2) as pool:
        handle, _, _, step = pool.xla()
        pool.async_reset()
        ids = pool.recv()[4]["env_id"]
        other = np.setdiff1d(np.arange(4), ids)
        with pytest.raises(Exception, match=r"send actions for env_id \[" + ", ".join(map(str, sorted(ids))) + r"\]"):
            jax.block_until_ready(jax.jit(step)(handle, jnp.zeros(2, jnp.int32), jnp.asarray(other, jnp.int32)))
