"""Seeds a backend cannot take are refused at make (and make_spec) with a ValueError naming the
range, not later inside an env's reset. Env i is seeded seed + i. (Atari: tests/test_atari.py.)"""

import gymnasium as gym
import numpy as np
import pytest

import envs


class Int32SeedEnv(gym.Env):
    """Like an env over a C++ simulator: its reset takes seeds that fit 32 bits only."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        if seed is not None and seed > 2**32 - 1:
            raise OverflowError(f"seed {seed} does not fit uint32")
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


class BrokenResetEnv(Int32SeedEnv):
    """Its reset fails whatever the seed: not a seed problem."""

    def reset(self, *, seed=None, options=None):
        raise RuntimeError("this env never resets")


@pytest.fixture(scope="module", autouse=True)
def toy_ids():
    ids = {"SeedRange/Int32Seed-v0": Int32SeedEnv, "SeedRange/BrokenReset-v0": BrokenResetEnv}
    for task_id, cls in ids.items():
        gym.register(task_id, entry_point=cls, max_episode_steps=10)
    yield
    for task_id in ids:
        gym.registry.pop(task_id, None)


def test_native_seeds_have_no_upper_limit():
    """default_rng takes any int >= 0: env i's first state is Gymnasium's reset(seed=seed + i)."""
    seed = 2**70
    with envs.make("CartPole-v1", num_envs=3, seed=seed) as pool:
        obs, _ = pool.reset()
    for i in range(3):
        ref, _ = gym.make("CartPole-v1").reset(seed=seed + i)
        np.testing.assert_array_equal(obs[i], ref)


def test_process_backend_takes_large_seeds_its_envs_take():
    """Gymnasium's numpy envs take any int >= 0; the workers seed env i with seed + i."""
    seed = 2**64 + 5
    with envs.make("CartPole-v1", backend="process", num_envs=2, num_threads=1, seed=seed) as pool:
        obs, _ = pool.reset()
    for i in range(2):
        np.testing.assert_array_equal(obs[i], gym.make("CartPole-v1").reset(seed=seed + i)[0])


@pytest.mark.parametrize("make", [envs.make_spec, envs.make])
def test_a_seed_the_env_rejects_is_refused_at_make(make):
    """seed + num_envs - 1 beyond int32 is tried on the probe env: 2**32 - 2 + 1 fits uint32, + 2 does not."""
    built = make("SeedRange/Int32Seed-v0", num_envs=2, num_threads=1, seed=2**32 - 2)
    if isinstance(built, envs.EnvPool):
        with built:
            assert built.reset()[0].shape == (2, 1)
    with pytest.raises(ValueError, match=r"seed=4294967295 is out of range for 'SeedRange/Int32Seed-v0'.*"
                                         r"seed \+ 1 = 4294967296, which its reset rejects \(OverflowError.*"
                                         r"\[0, 2147483647\] \(int32\)"):
        make("SeedRange/Int32Seed-v0", num_envs=2, num_threads=1, seed=2**32 - 1)


def test_gymnasium_jax_envs_take_int64_seeds():
    """Gymnasium's functional JAX envs (phys2d/*, tabular/*) seed jax.random with an int64."""
    assert envs.make_spec("phys2d/CartPole-v1", seed=2**63 - 1).config["seed"] == 2**63 - 1
    with pytest.raises(ValueError, match=r"seed=9223372036854775807 is out of range.*2 = 9223372036854775809"):
        envs.make_spec("phys2d/CartPole-v1", num_envs=3, seed=2**63 - 1)


def test_a_reset_that_always_fails_is_not_called_a_seed_problem():
    spec = envs.make_spec("SeedRange/BrokenReset-v0", seed=2**40)
    assert spec.config["seed"] == 2**40


@pytest.mark.parametrize("task", ["CartPole-v1", "FrozenLake-v1"])
def test_negative_seeds_are_refused_for_every_backend(task):
    with pytest.raises(ValueError, match="seed must be >= 0, got -1"):
        envs.make_spec(task, seed=-1)
