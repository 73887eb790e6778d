"""The built-in tasks' stateless compiled JAX env (envs/native/stateless.py): bit for bit the
compiled pool's streams (which equal Gymnasium's), resets and time limits included; one batched
custom call per step with no effect, so it runs under jit, scan, vmap, donation and shard_map
over 4 (faked CPU) devices with the same streams as on one; bad actions refused in one line."""

import warnings

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, PartitionSpec as P

import envs
from envs.jax.registry import is_jax_id, make_jax_env
from envs.native import stateless
from envs.native.kernel_pool import CompiledEnvPool
from envs.native.tasks import TASK_CODES
from envs.native.stateless import seeded_reset

TASKS = sorted(TASK_CODES)


def actions_for(env, rng, steps, n):
    space = env.action_space
    if hasattr(space, "n"):
        return rng.integers(0, space.n, (steps, n)).astype(np.int32)
    return rng.uniform(-3.0, 3.0, (steps, n, *space.shape)).astype(np.float32)  # beyond the bounds: clipped


def rollout(env, lanes, actions):
    """(final lanes, stacked Steps, stacked elapsed) of env.step over actions [T, B, ...]."""

    def body(lanes, action):
        lanes, step = env.step(lanes, action)
        return lanes, (step, lanes.elapsed)

    return jax.lax.scan(body, lanes, actions)


@pytest.mark.parametrize("task", TASKS)
def test_steps_equal_the_pool(task, monkeypatch):
    monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "1")
    n, seed, limit, steps = 5, 11, 60, 300
    env = make_jax_env(task, max_episode_steps=limit)
    acts = actions_for(env, np.random.default_rng(0), steps, n)
    lanes, first = seeded_reset(env, seed, n)
    _, (got, elapsed) = jax.jit(rollout, static_argnums=0)(env, lanes, acts)
    with envs.make(task, num_envs=n, seed=seed, max_episode_steps=limit) as pool:
        assert isinstance(pool, CompiledEnvPool)
        obs, _ = pool.reset()
        np.testing.assert_array_equal(first.obs, obs)
        assert first.first.all()
        ends = 0
        for t in range(steps):
            obs, reward, terminated, truncated, info = pool.step(acts[t])
            where = f"{task} step {t}"
            np.testing.assert_array_equal(got.obs[t], obs, err_msg=where)
            np.testing.assert_array_equal(got.reward[t], reward, err_msg=where)
            np.testing.assert_array_equal(got.terminated[t], terminated, err_msg=where)
            np.testing.assert_array_equal(got.truncated[t], truncated, err_msg=where)
            np.testing.assert_array_equal(got.first[t], info["elapsed_step"] == 0, err_msg=where)
            np.testing.assert_array_equal(elapsed[t], info["elapsed_step"], err_msg=where)
            ends += int((terminated | truncated).sum())
    assert ends >= n * 4  # several episodes per env, each followed by its reset


@pytest.mark.parametrize("seed", [7, 2**32 + 5])
def test_a_key_is_a_gymnasium_seed(seed):
    """reset(key) is Gymnasium's reset(seed=s), s = the key's data as one 64-bit integer."""
    env = make_jax_env("Acrobot-v1").raw
    key = jax.random.wrap_key_data(jnp.array(divmod(seed, 2**32), jnp.uint32))
    state, obs = jax.jit(env.reset)(key)
    ref = gymnasium.make("Acrobot-v1")
    want, _ = ref.reset(seed=seed)
    np.testing.assert_array_equal(obs, want)
    np.testing.assert_array_equal(stateless.variables_of(state), ref.unwrapped.state)
    if seed < 2**32:  # jax.random.key(s) holds s itself
        np.testing.assert_array_equal(jax.jit(env.reset)(jax.random.key(seed))[1], want)


def test_one_pure_custom_call_per_step():
    env = make_jax_env("CartPole-v1")
    lanes, _ = env.reset(jax.random.key(0), 64)
    action = jnp.zeros(64, jnp.int32)
    jaxpr = jax.make_jaxpr(env.step)(lanes, action)
    assert not jaxpr.effects
    hlo = jax.jit(env.step).lower(lanes, action).as_text()
    assert hlo.count("envs_stateless_step") == 1  # the whole batch in one call, not 64
    assert hlo.count("envs_stateless_reset") == 1  # the auto-reset, inside its cond
    assert "token" not in hlo


def test_shard_map_over_4_devices_gives_the_streams_of_one():
    devices = jax.devices()
    assert len(devices) == 4, "tests/conftest.py fakes 4 CPU devices"
    env = make_jax_env("CartPole-v1", max_episode_steps=30)
    n, per = 8, 2
    acts = jnp.asarray(actions_for(env, np.random.default_rng(3), 80, n))

    def run(first_index, acts, num_envs):
        lanes, _ = seeded_reset(env, 5, num_envs, first_index)
        return rollout(env, lanes, acts)

    one = jax.jit(lambda a: run(0, a, n))(acts)
    mesh = Mesh(np.array(devices), ("d",))
    sharded = jax.jit(
        jax.shard_map(lambda a: run(jax.lax.axis_index("d") * per, a, per), mesh=mesh, in_specs=P(None, "d"),
                      out_specs=(P("d"), (P(None, "d"), P(None, "d"))))  # fmt: skip
    )
    assert not jax.make_jaxpr(sharded)(acts).effects
    four = sharded(acts)
    jax.tree.map(np.testing.assert_array_equal, one, four)
    assert bool(np.asarray(one[1][0].first[1:]).any())  # resets happened


def test_nested_vmap_and_donation():
    """Replicas (a vmap over seeds around the batch's vmap) are the separate runs, here stepped
    one jitted call at a time with the carry donated: consumed, reused, no warning."""
    env = make_jax_env("Pendulum-v1", max_episode_steps=25)
    steps, seeds = 40, jnp.array([1, 9], jnp.uint32)
    acts = jnp.asarray(actions_for(env, np.random.default_rng(4), steps, 3))
    lanes = jax.vmap(lambda s: seeded_reset(env, s, 3)[0])(seeds)
    both = jax.jit(jax.vmap(lambda l: rollout(env, l, acts)[1][0]))(lanes)
    step = jax.jit(env.step, donate_argnums=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "donated buffers were not usable" would fail here
        for r in range(2):
            lanes, _ = seeded_reset(env, seeds[r], 3)
            for t in range(steps):
                old = lanes
                lanes, out = step(lanes, acts[t])
                assert old.state.variables.is_deleted()
                jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[r, t], b), both, out)
    assert bool(np.asarray(both.first[:, 1:]).any())  # resets happened


def test_bad_actions_are_refused_in_one_line():
    cartpole, pendulum = make_jax_env("CartPole-v1"), make_jax_env("Pendulum-v1")
    lanes, _ = cartpole.reset(jax.random.key(0), 4)
    with pytest.raises(ValueError, match=r"CartPole-v1: an env's action must be one integer \(Discrete\(2\)\), got int32\[2\]"):
        cartpole.step(lanes, jnp.zeros((4, 2), jnp.int32))
    with pytest.raises(ValueError, match=r"must be one integer .* got float32\[\]"):
        cartpole.step(lanes, jnp.zeros(4, jnp.float32))
    with pytest.raises(Exception, match=r"action out of range for Discrete\(2\): \[2\]"):
        jax.block_until_ready(jax.jit(cartpole.step)(lanes, jnp.full(4, 2, jnp.int32)))
    plan, _ = pendulum.reset(jax.random.key(0), 4)
    with pytest.raises(ValueError, match=r"Pendulum-v1: an env's action must be float of shape \(1,\) .* got bool\[1\]"):
        pendulum.step(plan, jnp.zeros((4, 1), bool))
    with pytest.raises(ValueError, match=r"got float32\[\]"):
        pendulum.step(plan, jnp.zeros(4, jnp.float32))


def test_ids_and_unavailable_kernel(monkeypatch):
    assert not is_jax_id("CartPole-v1")  # built-in ids run on the host pool unless Anakin is asked for
    assert make_jax_env("MountainCar-v0").max_episode_steps == 200
    with pytest.raises(ValueError, match="takes no env parameters"):
        make_jax_env("CartPole-v1", gravity=3.0)
    with pytest.raises(ValueError, match="not a JAX-native env id"):
        make_jax_env("SignalCorridor-v0")  # Dict observations: the numpy path only
    monkeypatch.setattr(stateless, "_register", stateless._register.__wrapped__)  # uncached
    monkeypatch.setattr(stateless.build, "_load_once", lambda: (None, "no compiler ('c++' is not on PATH)"))
    with pytest.raises(stateless.KernelUnavailable, match=r"^the stateless built-in tasks need the compiled kernel, "
                       r"which is unavailable here \(no compiler \('c\+\+' is not on PATH\)\)$"):  # fmt: skip
        make_jax_env("CartPole-v1")
    monkeypatch.setenv("SEBULBA_NATIVE_KERNEL", "0")
    with pytest.raises(stateless.KernelUnavailable, match="SEBULBA_NATIVE_KERNEL=0"):
        make_jax_env("CartPole-v1")
