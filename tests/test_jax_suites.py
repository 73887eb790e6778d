"""The JAX suites outside CI's dev install (Craftax, Navix, Brax, Playground) and XLand-MiniGrid
(in it): each adapter against its suite's own API step for step, and the suite's time limit as
truncation. Each test skips where its suite is not installed (pip install -e ".[craftax]", ...)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.jax.registry import make_jax_env
from tests.support.jax_envs import compare, reference, run


@pytest.mark.slow(seconds=15)  # measured under load with its suite installed; skipped without it
def test_xminigrid_equals_its_own_api_and_truncates_at_its_max_steps():
    """MiniGrid-Empty-5x5 with max_steps 4: turning in place never reaches the goal, so every
    episode ends at xminigrid's own limit (LAST, discount 1: truncated); walking forward and
    turning reaches it (LAST, discount 0: terminated). Its [H, W, 2] views come channel-first."""
    xminigrid = pytest.importorskip("xminigrid")
    env, params = xminigrid.make("MiniGrid-Empty-5x5")
    params = params.replace(max_steps=4)
    reset, step = jax.jit(env.reset), jax.jit(env.step)

    def own_step(ts, a):
        ts = step(params, ts, jnp.asarray(a, jnp.int32))
        last = bool(ts.step_type == 2)
        return ts, ts.observation, ts.reward, last and ts.discount == 0, last and ts.discount > 0

    key, actions = jax.random.key(2), [1] * 6 + [0, 0, 1, 0, 0] * 3  # 0 forward, 1 turn right
    ours = run(make_jax_env("xminigrid/MiniGrid-Empty-5x5", max_steps=4), key, actions)
    ref = reference(lambda now: (ts := reset(params, jax.random.key_data(now)), ts.observation), own_step, key, actions)
    assert ours[0].obs.shape == (2, 7, 7) and ref[0][0].shape == (7, 7, 2)
    compare(ours, ref, obs=lambda o: np.moveaxis(np.asarray(o), -1, 0))
    assert any(s.truncated for s in ours)


@pytest.mark.slow(seconds=80)  # Craftax's world generation compiles for a minute on 2 cores
def test_craftax_equals_its_own_api_with_its_step_limit_as_truncation():
    """Craftax-Classic with max_timesteps=5: its own done says True at step 5 (game over); ours
    truncates there, and the streams are equal otherwise."""
    pytest.importorskip("craftax")
    from craftax.craftax_env import make_craftax_env_from_name

    env = make_craftax_env_from_name("Craftax-Classic-Symbolic-v1", auto_reset=False)
    params = env.default_params.replace(max_timesteps=5)

    @jax.jit
    def new_episode(now):
        k, r = jax.random.split(now)
        obs, state = env.reset_env(r, params)
        return (state, k), obs

    @jax.jit
    def own_step(state, a):
        state, k = state
        k, now = jax.random.split(k)
        obs, state, reward, done, _ = env.step_env(now, state, a, params)
        at_limit = state.timestep >= params.max_timesteps
        return (state, k), obs, reward, done & ~at_limit, at_limit

    key, actions = jax.random.key(4), list(np.arange(12) % 17)
    ours = run(make_jax_env("craftax/Craftax-Classic-Symbolic-v1", max_timesteps=5), key, actions)
    compare(ours, reference(new_episode, own_step, key, actions))
    assert [t for t, s in enumerate(ours) if s.truncated] == [5, 11]


@pytest.mark.slow(seconds=45)
def test_brax_equals_its_own_api():
    pytest.importorskip("brax")
    from brax import envs as brax_envs

    env = brax_envs.get_environment("inverted_pendulum")
    reset, step = jax.jit(env.reset), jax.jit(env.step)

    def own_step(state, a):
        state = step(state, jnp.asarray(a, jnp.float32))
        return state, state.obs, state.reward, state.done > 0, False

    key, actions = jax.random.key(5), [np.array([1.0], np.float32)] * 40
    ours = run(make_jax_env("brax/inverted_pendulum", max_episode_steps=1000), key, actions)
    compare(ours, reference(lambda now: (s := reset(jax.random.key_data(now)), s.obs), own_step, key, actions))
    assert any(s.terminated for s in ours)  # pushed one way, the pole falls


@pytest.mark.slow(seconds=15)
def test_navix_equals_its_own_api():
    """Navix-Empty-5x5 with max_steps 3: its step type 1 (truncation) and 2 (termination, at the
    goal) map to truncated and terminated. Its symbolic [H, W, 3] views come channel-first."""
    navix = pytest.importorskip("navix")
    env = navix.make("Navix-Empty-5x5-v0", max_steps=6)
    reset, step = jax.jit(env.reset), jax.jit(env._step)

    def own_step(ts, a):
        ts = step(ts, jnp.asarray(a, jnp.int32))
        return ts, ts.observation, ts.reward, ts.step_type == 2, ts.step_type == 1

    key, actions = jax.random.key(6), [0] * 8 + [2, 2, 1, 2, 2] * 3  # 0 turn left, 1 turn right, 2 forward
    ours = run(make_jax_env("navix/Navix-Empty-5x5-v0", max_steps=6), key, actions)
    ref = reference(lambda now: (ts := reset(jax.random.key_data(now)), ts.observation), own_step, key, actions)
    assert ours[0].obs.shape == (3, 5, 5) and ref[0][0].shape == (5, 5, 3)
    compare(ours, ref, obs=lambda o: np.moveaxis(np.asarray(o), -1, 0))
    assert any(s.truncated for s in ours)
    space = make_jax_env("navix/Navix-Empty-5x5-v0").observation_space
    assert all(space.contains(np.asarray(s.obs)) for s in ours) and max(int(s.obs.max()) for s in ours) == 10


@pytest.mark.slow(seconds=30)
def test_playground_equals_its_own_api():
    """CartpoleBalance (MJX, or MuJoCo Warp on this install): the stream equals Playground's own
    reset/step, and its episode_length is our time limit."""
    pytest.importorskip("mujoco_playground")
    from mujoco_playground import registry

    env = registry.load("CartpoleBalance", config_overrides={"episode_length": 5})
    reset, step = jax.jit(env.reset), jax.jit(env.step)

    def own_step(state, a):
        state = step(state, jnp.asarray(a, jnp.float32))
        return state, state.obs, state.reward, state.done > 0, False

    def new_episode(now):
        state = reset(jax.random.key_data(now))
        return state, state.obs

    key, actions = jax.random.key(8), [np.array([0.5], np.float32)] * 7
    ours = run(make_jax_env("playground/CartpoleBalance", episode_length=5), key, actions)
    ref = reference(new_episode, own_step, key, actions)
    assert [t for t, s in enumerate(ours) if s.truncated] == [5]  # the reference has no time limit
    compare(ours[:5], ref[:5])
    np.testing.assert_allclose(ours[5].obs, ref[5][0], rtol=1e-6, atol=1e-6)
